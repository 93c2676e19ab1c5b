"""``repairloop bench``: run the loop over a directory of repair cases and measure it.

A case is a directory holding a project and a ``case.toml`` with optional
``test_cmd``, ``timeout`` (seconds), ``description``, ``family`` and
``single_mutation`` (true when one mutation can fix it). Each case runs in its
own temporary copy, so the cases directory is never changed.
"""

from __future__ import annotations

import shutil
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence

from repairloop.errors import ConfigError, RepairloopError
from repairloop.loop import repair
from repairloop.settings import Settings, load_settings
from repairloop.types import Outcome, RunResult

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASE_FILE = "case.toml"
_CASE_KEYS = {"test_cmd", "timeout", "description", "family", "single_mutation"}
_IGNORE = shutil.ignore_patterns("__pycache__", ".pytest_cache", ".repairloop", CASE_FILE)


@dataclass(frozen=True)
class CaseResult:
    """One case's figures: units are tokens, USD and seconds."""

    name: str
    family: str
    single_mutation: bool
    outcome: str
    stop_reason: str
    iterations: int
    candidates: int
    tokens: int
    cost_usd: Optional[float]
    seconds: float
    edits_tests: bool
    detail: str = ""

    def to_json(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def find_cases(cases_dir: Path) -> List[Path]:
    """Case directories (those holding a case.toml), sorted by name. Raises ConfigError if none."""
    if not cases_dir.is_dir():
        raise ConfigError(f"{cases_dir} is not a directory", hint="pass a directory of cases, e.g. fixtures/bench")
    cases = sorted(p.parent for p in cases_dir.glob(f"*/{CASE_FILE}"))
    if not cases:
        raise ConfigError(f"no cases in {cases_dir}", hint=f"each case is a directory with a {CASE_FILE}")
    return cases


def read_case(case: Path) -> Dict[str, Any]:
    try:
        data = tomllib.loads((case / CASE_FILE).read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"cannot read {case / CASE_FILE}: {err}", hint="fix the TOML syntax") from None
    unknown = set(data) - _CASE_KEYS
    if unknown:
        raise ConfigError(f"unknown key '{sorted(unknown)[0]}' in {case / CASE_FILE}",
                          hint=f"known keys: {', '.join(sorted(_CASE_KEYS))}")
    return dict(data)


def run_case(case: Path, flags: Dict[str, Any], default_timeout: Optional[float]) -> CaseResult:
    """Copy the case to a temporary directory and repair it; never raises for a case's own errors."""
    meta = read_case(case)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="repairloop-bench-") as tmp:
        project = Path(tmp) / case.name
        shutil.copytree(case, project, ignore=_IGNORE)
        case_flags = dict(flags)
        case_flags.setdefault("test_cmd", meta.get("test_cmd"))
        timeout = meta.get("timeout", default_timeout)
        if timeout is not None:
            case_flags["timeout"] = min(float(timeout), float(default_timeout or timeout))
        try:
            settings = load_settings(project, case_flags, environ={})
            result = repair(settings, project)
        except RepairloopError as err:
            return _errored(case, meta, err, time.monotonic() - started)
    return _case_result(case, meta, result, time.monotonic() - started)


def _case_result(case: Path, meta: Dict[str, Any], result: RunResult, seconds: float) -> CaseResult:
    totals = result.totals
    candidates = sum(it.candidates for it in result.iterations)
    patch = result.patch or ""
    return CaseResult(
        name=case.name,
        family=str(meta.get("family", "")),
        single_mutation=bool(meta.get("single_mutation", True)),
        outcome=result.outcome.value,
        stop_reason=result.stop_reason.value,
        iterations=totals["iterations"],
        candidates=candidates,
        tokens=totals["prompt_tokens"] + totals["completion_tokens"],
        cost_usd=totals["cost_usd"],
        seconds=round(seconds, 2),
        edits_tests=any(line.startswith(("+++ b/tests/", "--- a/tests/")) for line in patch.splitlines()),
        detail=result.stop_detail,
    )


def _errored(case: Path, meta: Dict[str, Any], err: RepairloopError, seconds: float) -> CaseResult:
    return CaseResult(case.name, str(meta.get("family", "")), bool(meta.get("single_mutation", True)),
                      "error", "error", 0, 0, 0, 0.0, round(seconds, 2), False, err.message)


def run_bench(
    cases_dir: Path,
    flags: Dict[str, Any],
    *,
    timeout: Optional[float] = None,
    on_case: Optional[Callable[[CaseResult], None]] = None,
) -> List[CaseResult]:
    """Run every case in ``cases_dir`` one after another (each case may use parallel workers)."""
    results = []
    for case in find_cases(cases_dir):
        result = run_case(case, flags, timeout)
        results.append(result)
        if on_case:
            on_case(result)
    return results


def totals(results: Sequence[CaseResult]) -> Dict[str, Any]:
    """Repair rate (fixed / cases), medians and sums over a bench run."""
    fixed = [r for r in results if r.outcome == Outcome.FIXED.value]
    single = [r for r in results if r.single_mutation]
    return {
        "cases": len(results),
        "fixed": len(fixed),
        "repair_rate": round(len(fixed) / len(results), 3) if results else 0.0,
        "single_mutation_cases": len(single),
        "single_mutation_fixed": sum(r.outcome == Outcome.FIXED.value for r in single),
        "median_seconds": round(statistics.median(r.seconds for r in results), 2) if results else 0.0,
        "tokens": sum(r.tokens for r in results),
        "cost_usd": round(sum(r.cost_usd or 0.0 for r in results), 6),
        "patches_editing_tests": sum(r.edits_tests for r in results),
    }


def markdown_table(results: Sequence[CaseResult]) -> str:
    """The bench run as a Markdown table plus a totals line."""
    rows = ["| case | family | outcome | stop reason | iterations | candidates | tokens | cost (USD) | seconds |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        cost = "unknown" if r.cost_usd is None else f"{r.cost_usd:.4f}"
        rows.append(f"| {r.name} | {r.family} | {r.outcome} | {r.stop_reason} | {r.iterations} | "
                    f"{r.candidates} | {r.tokens} | {cost} | {r.seconds:.1f} |")
    t = totals(results)
    rows.append("")
    rows.append(f"Repair rate: {t['fixed']}/{t['cases']} ({t['repair_rate']:.0%}); single-mutation cases fixed: "
                f"{t['single_mutation_fixed']}/{t['single_mutation_cases']}; median {t['median_seconds']} s per case; "
                f"patches editing tests: {t['patches_editing_tests']}.")
    return "\n".join(rows)


def settings_for_bench(flags: Dict[str, Any]) -> Settings:
    """Validate the shared flags once, before any case runs (raises ConfigError)."""
    return Settings(**{k: v for k, v in flags.items() if v is not None})
