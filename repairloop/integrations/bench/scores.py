"""A bench's results: one row per case, the totals, the JSON document and the Markdown table.

The document (``BenchRun.to_json``) is what ``bench --json`` prints, what
``--keep DIR`` writes to ``DIR/bench.json`` and what ``bench merge`` reads
back (``BenchRun.from_json``); totals are always computed from the rows, so
merged shards give the totals one run over every case gives.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from repairloop.errors import ConfigError
from repairloop.integrations.bench.cases import Shard
from repairloop.types import Outcome

ERROR = "error"  # a case's outcome and stop reason when it could not run (its detail says why)


@dataclass(frozen=True)
class CaseResult:
    """One case's row: what the run ended with, its evidence and its figures (tokens, USD, seconds).

    ``patch`` is the final patch (git diff text, None without one); ``run_id``
    and ``run_dir`` say where its journal is (``run_dir`` is None unless the
    bench kept it with ``--keep``). ``plausible``: the patch made every
    failing test pass and held on a fresh copy (outcome ``fixed``); ``proof``:
    whether the patch's proof run on a fresh copy passed (None: none ran).
    ``matches_reference``, ``passes_hidden_tests`` and ``correct`` judge a
    plausible patch (``correct.judge``); None where there was nothing to judge
    or no judge. ``edits_tests``: the patch changes a file the run's own
    test-file rule calls a test. ``seconds`` is the repair's wall clock, the
    judging after it not included.
    """

    name: str
    family: str
    single_mutation: bool
    outcome: str
    stop_reason: str
    iterations: int = 0
    candidates: int = 0
    tokens: int = 0
    cost_usd: Optional[float] = 0.0
    seconds: float = 0.0
    edits_tests: bool = False
    detail: str = ""
    run_id: Optional[str] = None
    run_dir: Optional[str] = None
    patch: Optional[str] = None
    model_calls: int = 0
    plausible: bool = False
    proof: Optional[bool] = None
    matches_reference: Optional[bool] = None
    passes_hidden_tests: Optional[bool] = None
    hidden_tests: int = 0
    correct: Optional[bool] = None
    judge_detail: str = ""

    def to_json(self) -> Dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CaseResult":
        """The row ``to_json`` wrote; keys it does not know are ignored. Raises ConfigError for a
        row that is not one."""
        known = {f.name for f in fields(cls)}
        try:
            return cls(**{k: v for k, v in data.items() if k in known})
        except TypeError as err:
            raise ConfigError(
                f"a case row is not one of a bench result: {err}",
                hint="pass what `repairloop bench --json` or `--keep` wrote",
            ) from None


def _share(part: int, whole: int) -> Optional[float]:
    return round(part / whole, 3) if whole else None


def totals(results: Sequence[CaseResult]) -> Dict[str, Any]:
    """Repair rate (fixed / cases), plausible and correct counts, medians and sums over a bench.

    ``correct_share`` is correct / judged: of the plausible patches that a
    reference fix or hidden tests could judge, the share that is correct
    (None when none could be judged), the number that shows overfitting.
    """
    fixed = [r for r in results if r.outcome == Outcome.FIXED.value]
    single = [r for r in results if r.single_mutation]
    judged = [r for r in results if r.plausible and r.correct is not None]
    correct = sum(bool(r.correct) for r in judged)
    return {
        "cases": len(results),
        "fixed": len(fixed),
        "repair_rate": round(len(fixed) / len(results), 3) if results else 0.0,
        "single_mutation_cases": len(single),
        "single_mutation_fixed": sum(r.outcome == Outcome.FIXED.value for r in single),
        "plausible": sum(r.plausible for r in results),
        "judged": len(judged),
        "matches_reference": sum(r.matches_reference is True for r in results),
        "passes_hidden_tests": sum(r.passes_hidden_tests is True for r in results),
        "correct": correct,
        "correct_share": _share(correct, len(judged)),
        "errors": sum(r.outcome == ERROR for r in results),
        "median_seconds": round(statistics.median(r.seconds for r in results), 2)
        if results
        else 0.0,
        "tokens": sum(r.tokens for r in results),
        "cost_usd": round(sum(r.cost_usd or 0.0 for r in results), 6),
        "patches_editing_tests": sum(r.edits_tests for r in results),
    }


@dataclass(frozen=True)
class BenchRun:
    """A bench over a cases directory, or one shard of it.

    ``bench`` says what was run, the same on every shard: ``cases_dir`` (its
    name), ``cases`` (every case name in it, sorted), ``models``, ``timeout``,
    ``workers``; ``shard`` is None for a whole bench or a merge. ``complete``
    is False while a kept bench is still running (or was stopped).
    """

    bench: Dict[str, Any]
    cases: Tuple[CaseResult, ...]
    shard: Optional[Shard] = None
    complete: bool = True
    merged_from: Tuple[str, ...] = field(default=())

    def to_json(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {
            "bench": dict(self.bench),
            "shard": self.shard.to_json() if self.shard else None,
            "complete": self.complete,
        }
        if self.merged_from:
            data["merged_from"] = list(self.merged_from)
        data.update(cases=[r.to_json() for r in self.cases], totals=totals(self.cases))
        return data

    @classmethod
    def from_json(cls, data: Any, source: str) -> "BenchRun":
        """The document ``to_json`` wrote, read from ``source`` (named in errors). Raises
        ConfigError."""
        hint = (
            "pass the --keep directory of a bench (its bench.json) or the file `bench --json` wrote"
        )
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("bench"), dict)
            or not isinstance(data.get("cases"), list)
        ):
            raise ConfigError(f"{source} is not a bench result", hint=hint)
        shard = data.get("shard")
        try:
            parsed = Shard(int(shard["index"]), int(shard["count"])) if shard else None
        except (TypeError, KeyError, ValueError):
            raise ConfigError(f"{source} has a malformed shard: {shard!r}", hint=hint) from None
        rows = tuple(
            CaseResult.from_json(r) if isinstance(r, dict) else _not_a_row(source)
            for r in data["cases"]
        )
        return cls(
            dict(data["bench"]),
            rows,
            parsed,
            bool(data.get("complete", True)),
            tuple(data.get("merged_from") or ()),
        )


def _not_a_row(source: str) -> CaseResult:
    raise ConfigError(
        f"{source} holds a case row that is not an object",
        hint="pass what `repairloop bench` wrote",
    )


def _mark(value: Optional[bool], yes: str, no: str) -> str:
    return "-" if value is None else yes if value else no


def markdown_table(results: Sequence[CaseResult]) -> str:
    """The bench as a Markdown table plus a totals paragraph (the same for one run and for merged
    shards)."""
    rows = [
        "| case | family | outcome | stop reason | plausible | reference | hidden tests | correct "
        "| iterations | candidates | tokens | cost (USD) | seconds |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in results:
        cost = "unknown" if r.cost_usd is None else f"{r.cost_usd:.4f}"
        hidden = _mark(
            r.passes_hidden_tests, f"passed ({r.hidden_tests})", f"failed ({r.hidden_tests})"
        )
        rows.append(
            f"| {r.name} | {r.family} | {r.outcome} | {r.stop_reason} | "
            f"{_mark(r.plausible, 'yes', 'no')} | "
            f"{_mark(r.matches_reference, 'same', 'differs')} | {hidden} | "
            f"{_mark(r.correct, 'yes', 'no')} | "
            f"{r.iterations} | {r.candidates} | {r.tokens} | {cost} | {r.seconds:.1f} |"
        )
    t = totals(results)
    share = (
        "no plausible patch could be judged"
        if t["correct_share"] is None
        else f"{t['correct_share']:.0%}"
    )
    rows += [
        "",
        f"Repair rate: {t['fixed']}/{t['cases']} ({t['repair_rate']:.0%}); single-mutation cases "
        f"fixed: "
        f"{t['single_mutation_fixed']}/{t['single_mutation_cases']}; median {t['median_seconds']} "
        f"s per case; "
        f"patches editing tests: {t['patches_editing_tests']}; cases that could not run: "
        f"{t['errors']}.",
        "",
        f"Plausible patches: {t['plausible']}; correct: {t['correct']} of the {t['judged']} a "
        f"reference fix or "
        f"hidden tests could judge ({share}); same as the reference: {t['matches_reference']}; "
        f"passing the hidden tests: {t['passes_hidden_tests']}.",
    ]
    return "\n".join(rows)


def merged_rows(runs: Sequence[BenchRun]) -> List[CaseResult]:
    """Every row of ``runs``, sorted by case name (the order one run over every case gives)."""
    return sorted((r for run in runs for r in run.cases), key=lambda r: r.name)
