"""Running a bench: every case (or one shard's) repaired in its own temporary copy, judged, kept on
request.

Each case's project is copied without its bench files (``cases.copy_project``)
and repaired with ``loop.repair``; the cases directory is never changed. A
plausible patch is then judged by the case's reference fix and hidden tests
(``correct.judge``). With ``keep``, each case's run directory (journal,
``fix.patch``, ``summary.json``) is copied to ``keep/<case>/``, where
``repairloop report keep/<case>`` renders it, and ``keep/bench.json`` (the
document, rewritten after every case, ``complete`` once the last one is done)
and ``keep/bench.md`` (the table) are written beside them.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Tuple

from repairloop.errors import ConfigError, RepairloopError
from repairloop.integrations.bench.cases import Case, Shard, copy_project, find_cases, select_shard
from repairloop.integrations.bench.correct import Judgement, check_reference, judge
from repairloop.integrations.bench.scores import ERROR, BenchRun, CaseResult, markdown_table
from repairloop.journal import list_runs
from repairloop.loop.driver import repair
from repairloop.reports import load_run
from repairloop.settings import Settings, load_settings
from repairloop.types import Outcome, RunResult, TestFiles

BENCH_JSON = "bench.json"
BENCH_MD = "bench.md"


@dataclass(frozen=True)
class BenchOptions:
    """How to run a bench: the settings flags every case shares (``models``, ``workers``,
    ``api_base``), the seconds per case (a case.toml ``timeout`` may lower it), the directory to
    keep runs in, the
    shard."""

    flags: Dict[str, Any]
    timeout: Optional[float] = None
    keep: Optional[Path] = None
    shard: Optional[Shard] = None


def describe_bench(cases_dir: Path, cases: List[Case], options: BenchOptions) -> Dict[str, Any]:
    """What was run, the same on every shard of one bench: ``bench merge`` refuses shards that
    differ in it."""
    return {
        "cases_dir": cases_dir.resolve().name,
        "cases": [c.name for c in cases],
        "models": list(options.flags.get("models") or []),
        "timeout": options.timeout,
        "workers": options.flags.get("workers"),
        "warm": options.flags.get("warm"),
    }


def prepare(cases_dir: Path, options: BenchOptions) -> Tuple[Dict[str, Any], List[Case]]:
    """(what the bench is, the cases this run takes), checked before any case runs.

    Raises ConfigError for a bad cases directory or case, a reference fix that
    does not apply, or a ``keep`` directory that is not empty.
    """
    cases = find_cases(cases_dir)
    chosen = select_shard(cases, options.shard)
    with tempfile.TemporaryDirectory(prefix="repairloop-bench-check-") as tmp:
        for case in chosen:
            check_reference(case, Path(tmp))
    keep = options.keep
    if keep is not None:
        if keep.exists() and (not keep.is_dir() or any(keep.iterdir())):
            raise ConfigError(
                f"--keep {keep} is not an empty directory",
                hint="give a new directory (it is created), or remove the old one",
            )
        keep.mkdir(parents=True, exist_ok=True)
    return describe_bench(cases_dir, cases, options), chosen


def run_bench(
    cases_dir: Path,
    options: BenchOptions,
    *,
    on_start: Optional[Callable[[List[Case]], None]] = None,
    on_case: Optional[Callable[[CaseResult], None]] = None,
) -> BenchRun:
    """Run the cases of ``cases_dir`` (one shard's with ``options.shard``) one after another; the
    whole bench.

    ``on_start`` gets the cases about to run, ``on_case`` each row as it is
    done. Raises ConfigError before the first case (``prepare``); a case's
    own errors become its row (outcome ``error``).
    """
    bench, chosen = prepare(cases_dir, options)
    if on_start is not None:
        on_start(chosen)
    rows: List[CaseResult] = []
    for case in chosen:
        rows.append(run_case(case, options.flags, options.timeout, options.keep))
        if on_case is not None:
            on_case(rows[-1])
        if options.keep is not None:
            save(options.keep, BenchRun(bench, tuple(rows), options.shard, complete=False))
    done = BenchRun(bench, tuple(rows), options.shard)
    if options.keep is not None:
        save(options.keep, done)
    return done


def save(keep: Path, run: BenchRun) -> None:
    """Write ``keep/bench.json`` (atomically) and ``keep/bench.md``."""
    for name, text in (
        (BENCH_JSON, json.dumps(run.to_json(), indent=2) + "\n"),
        (BENCH_MD, markdown_table(run.cases) + "\n"),
    ):
        part = keep / f".{name}.part"
        part.write_text(text, encoding="utf-8")
        os.replace(part, keep / name)


def _case_flags(
    case: Case, flags: Dict[str, Any], default_timeout: Optional[float]
) -> Dict[str, Any]:
    case_flags = dict(flags)
    if case.meta.get("test_cmd") is not None:
        case_flags.setdefault("test_cmd", case.meta["test_cmd"])
    timeout = case.meta.get("timeout", default_timeout)
    if timeout is not None:
        case_flags["timeout"] = min(float(timeout), float(default_timeout or timeout))
    return case_flags


def run_case(
    case: Case, flags: Dict[str, Any], default_timeout: Optional[float], keep: Optional[Path]
) -> CaseResult:
    """Repair a copy of ``case``, judge a plausible patch, keep the run under ``keep/<case>``; never
    raises for the case's errors."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="repairloop-bench-") as tmp:
        project = copy_project(case, Path(tmp) / case.name)
        try:
            settings = load_settings(project, _case_flags(case, flags, default_timeout), environ={})
            result = repair(settings, project)
        except RepairloopError as err:
            kept = _keep_latest(project, keep, case.name)
            return CaseResult(
                case.name,
                case.family,
                case.single_mutation,
                ERROR,
                ERROR,
                seconds=round(time.monotonic() - started, 2),
                detail=err.message,
                run_dir=kept,
            )
        seconds = time.monotonic() - started
        kept = _keep(Path(result.run_dir), keep, case.name)
        plausible = result.outcome is Outcome.FIXED and bool(result.patch)
        judgement = (
            judge(case, result.patch or "", settings, Path(tmp) / "judge")
            if plausible
            else Judgement()
        )
        test_files = _test_files(Path(result.run_dir), settings)
    return case_result(case, result, seconds, kept, judgement, test_files)


def _keep(run_dir: Path, keep: Optional[Path], name: str) -> Optional[str]:
    if keep is None or not run_dir.is_dir():
        return None
    shutil.copytree(run_dir, keep / name)
    return str(keep / name)


def _keep_latest(project: Path, keep: Optional[Path], name: str) -> Optional[str]:
    """Keep the newest run directory of a run that ended in an error, if it got that far."""
    runs = list_runs(project)
    return _keep(runs[0], keep, name) if runs else None


def _test_files(run_dir: Path, settings: Settings) -> TestFiles:
    """The run's own test-file rule as its journal has it; the settings' globs if the journal cannot
    say."""
    try:
        from_journal = load_run(run_dir).test_files
    except RepairloopError:
        from_journal = None
    return from_journal or TestFiles(tuple(settings.test_globs))


def patch_paths(patch: str) -> List[str]:
    """The project-relative paths a git-format patch names (old and new side), each once."""
    paths: List[str] = []
    for line in patch.splitlines():
        if line.startswith(("--- ", "+++ ")):
            name = line[4:].split("\t", 1)[0].strip().strip('"')
            if name != "/dev/null":
                name = name[2:] if name.startswith(("a/", "b/")) else name
                if name not in paths:
                    paths.append(name)
    return paths


def case_result(
    case: Case,
    result: RunResult,
    seconds: float,
    kept: Optional[str],
    judgement: Judgement,
    test_files: TestFiles,
) -> CaseResult:
    """The row of a case whose run ended (``seconds``: the repair's wall clock)."""
    totals, proof = result.totals, result.evidence.proof
    plausible = result.outcome is Outcome.FIXED and bool(result.patch)
    return CaseResult(
        name=case.name,
        family=case.family,
        single_mutation=case.single_mutation,
        outcome=result.outcome.value,
        stop_reason=result.stop_reason.value,
        iterations=totals["iterations"],
        candidates=sum(it.candidates for it in result.iterations),
        tokens=totals["prompt_tokens"] + totals["completion_tokens"],
        cost_usd=totals["cost_usd"],
        seconds=round(seconds, 2),
        edits_tests=any(test_files.is_test(p) for p in patch_paths(result.patch or "")),
        detail=result.stop_detail,
        run_id=result.run_id,
        run_dir=kept,
        patch=result.patch,
        model_calls=totals["model_calls"],
        plausible=plausible,
        proof=proof.passed if proof is not None else None,
        matches_reference=judgement.matches_reference,
        passes_hidden_tests=judgement.passes_hidden_tests,
        hidden_tests=judgement.hidden_tests,
        correct=judgement.correct if plausible else None,
        judge_detail=judgement.detail,
    )
