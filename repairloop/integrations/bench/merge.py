"""``repairloop bench merge DIR...``: the shards of one bench, run on several machines, as one
result.

Each DIR is a shard's ``--keep`` directory (its ``bench.json``) or the file
``bench --json`` wrote. The shards must describe the same bench (cases,
models, timeout, workers, warm), be finished, and together hold every shard of
``--shard I/N`` exactly once; the merged rows are sorted by case name and the
totals are computed from them, as for one run over every case.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

from repairloop.errors import ConfigError
from repairloop.integrations.bench.execute import BENCH_JSON
from repairloop.integrations.bench.scores import BenchRun, CaseResult, merged_rows
from repairloop.journal import JOURNAL

_HINT = (
    "pass each shard's --keep directory (or the file its `bench --json` wrote), all shards of "
    "one bench"
)


def load_shard(path: Path) -> BenchRun:
    """The bench result in ``path`` (a directory's ``bench.json``, or a JSON file). Raises
    ConfigError."""
    source = path / BENCH_JSON if path.is_dir() else path
    if not source.is_file():
        raise ConfigError(
            f"{path} holds no {BENCH_JSON}" if path.is_dir() else f"{path} does not exist",
            hint=_HINT,
        )
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise ConfigError(f"cannot read {source}: {err}", hint=_HINT) from None
    return BenchRun.from_json(data, str(source))


def _check_same_bench(shards: Sequence[Tuple[Path, BenchRun]]) -> None:
    first_path, first = shards[0]
    for path, run in shards[1:]:
        for key in sorted(set(first.bench) | set(run.bench)):
            if first.bench.get(key) != run.bench.get(key):
                raise ConfigError(
                    f"{path} and {first_path} are not shards of one bench: their {key} differ",
                    hint="merge the shards of one `repairloop bench` command line, run with the "
                    "same cases",
                )


def _check_shards(shards: Sequence[Tuple[Path, BenchRun]]) -> None:
    for path, run in shards:
        if not run.complete:
            raise ConfigError(
                f"{path} is an unfinished bench ({len(run.cases)} case(s) done): its job stopped "
                f"early",
                hint="run that shard again to the end, then merge",
            )
    if len(shards) == 1 and shards[0][1].shard is None:
        return
    unsharded = [str(p) for p, run in shards if run.shard is None]
    if unsharded:
        raise ConfigError(
            f"{unsharded[0]} is a whole bench, not a shard",
            hint="merge only the shards of one bench",
        )
    counts = {run.shard.count for _, run in shards if run.shard is not None}
    if len(counts) != 1:
        raise ConfigError(
            f"the shards split the bench differently (into "
            f"{' and '.join(map(str, sorted(counts)))})",
            hint="merge the shards of one --shard I/N series",
        )
    count = counts.pop()
    seen: Dict[int, Path] = {}
    for path, run in shards:
        assert run.shard is not None
        if run.shard.index in seen:
            raise ConfigError(
                f"shard {run.shard.index}/{count} is given twice: {seen[run.shard.index]} and "
                f"{path}",
                hint="give each shard's directory once",
            )
        seen[run.shard.index] = path
    missing = [f"{i}/{count}" for i in range(1, count + 1) if i not in seen]
    if missing:
        raise ConfigError(f"shard(s) {', '.join(missing)} missing", hint=_HINT)


def _where(path: Path, row: CaseResult) -> CaseResult:
    """The row with ``run_dir`` pointing into ``path`` when the kept run is there (shards move
    between machines)."""
    if row.run_dir is None or not path.is_dir():
        return row
    here = path / Path(row.run_dir).name
    return replace(row, run_dir=str(here)) if (here / JOURNAL).is_file() else row


def merge(paths: Sequence[Path]) -> BenchRun:
    """The shards in ``paths`` as one bench. Raises ConfigError when they are not every shard of one
    finished bench."""
    if not paths:
        raise ConfigError("no shards to merge", hint=_HINT)
    shards = [(p, load_shard(p)) for p in paths]
    _check_same_bench(shards)
    _check_shards(shards)
    rows: List[CaseResult] = merged_rows(
        [replace(run, cases=tuple(_where(p, r) for r in run.cases)) for p, run in shards]
    )
    names = [r.name for r in rows]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ConfigError(f"case {doubled[0]} is in more than one shard", hint=_HINT)
    expected = list(shards[0][1].bench.get("cases") or names)
    missing = sorted(set(expected) - set(names))
    if missing:
        raise ConfigError(f"no shard ran case(s) {', '.join(missing[:5])}", hint=_HINT)
    return BenchRun(shards[0][1].bench, tuple(rows), None, True, tuple(str(p) for p in paths))
