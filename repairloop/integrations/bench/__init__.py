"""``repairloop bench``: run the loop over a directory of repair cases, keep the evidence, measure
it.

``cases`` (a case on disk, the shard a machine runs), ``execute`` (a bench
run: each case repaired in a temporary copy, judged, kept), ``correct``
(plausible against correct: the reference fix and the hidden tests),
``results`` (rows, totals, the JSON document and the Markdown table) and
``merge`` (the shards of one bench as one result). Public API::

    run = run_bench(Path("fixtures/bench"), BenchOptions(flags={}, keep=Path("out"),
    shard=parse_shard("1/2"))) print(markdown_table(run.cases)); json.dumps(run.to_json()) whole =
    merge([Path("out-1"), Path("out-2")])
"""

from __future__ import annotations

from typing import Any, Dict

from repairloop.integrations.bench.cases import (
    Case,
    Shard,
    find_cases,
    parse_shard,
    read_case,
    select_shard,
)
from repairloop.integrations.bench.correct import Judgement, judge, normalise, same_code
from repairloop.integrations.bench.execute import (
    BENCH_JSON,
    BENCH_MD,
    BenchOptions,
    prepare,
    run_bench,
    run_case,
)
from repairloop.integrations.bench.merge import load_shard, merge
from repairloop.integrations.bench.scores import BenchRun, CaseResult, markdown_table, totals
from repairloop.settings import Settings

__all__ = [
    "BENCH_JSON",
    "BENCH_MD",
    "BenchOptions",
    "BenchRun",
    "Case",
    "CaseResult",
    "Judgement",
    "Shard",
    "find_cases",
    "judge",
    "load_shard",
    "markdown_table",
    "merge",
    "normalise",
    "parse_shard",
    "prepare",
    "read_case",
    "run_bench",
    "run_case",
    "same_code",
    "select_shard",
    "settings_for_bench",
    "totals",
]


def settings_for_bench(flags: Dict[str, Any]) -> Settings:
    """Validate the shared flags once, before any case runs (raises ConfigError)."""
    return Settings(**{k: v for k, v in flags.items() if v is not None})
