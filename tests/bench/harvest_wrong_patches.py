"""Harvest plausible-but-wrong patches of ``fixtures/bench`` for figure 17 (the behaviour check).

For each case, the offline engine alone (no model configured) repairs a git-initialised copy of
the case's project (``python -m repairloop run PROJECT --json --max-iterations 1 --timeout 90``).
Its journal's proposals (``ProposalEvent``) carry the engine's notes
(``propose/builtin/engine_report.result_notes``): a plausible answer is ``chosen`` (its diff is
the proposal's answer) and ``alternatives`` holds the other plausible patches' diffs. Each
plausible patch, each once, is judged the way ``repairloop bench`` judges one
(``integrations.bench.correct.judge``: a fresh copy with the patch, the hidden tests laid over
it, the whole suite run through the loop's own test suite): one the hidden tests reject is
wrong, and is written to ``fixtures/behaviour/bench/<case>--<n>.patch``.

    python tests/bench/harvest_wrong_patches.py [--out DIR] [CASE ...]

prints one JSON line per case (plausible patches found, wrong ones kept, seconds); two cases
run at a time.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Sequence

sys.path[:0] = [str(Path(__file__).resolve().parent)]

from context_figure import cli_json  # noqa: E402
from fidelity_figure import child_env  # noqa: E402
from projects import REPO, commit_all  # noqa: E402

from repairloop.errors import RepairloopError  # noqa: E402
from repairloop.integrations.bench import Case, find_cases, judge  # noqa: E402
from repairloop.integrations.bench.cases import copy_project  # noqa: E402
from repairloop.integrations.bench.correct import patched_copy  # noqa: E402
from repairloop.journal import ProposalEvent, read_events  # noqa: E402
from repairloop.loop.suite import TestSuite  # noqa: E402
from repairloop.propose.builtin.engine_report import PLAUSIBLE_NOTE  # noqa: E402
from repairloop.settings import Settings, load_settings  # noqa: E402

BENCH = REPO / "fixtures" / "bench"
OUT = REPO / "fixtures" / "behaviour" / "bench"
WORKERS = 2
TIMEOUT = 90.0  # seconds: each engine run's --timeout


def plausible_patches(run_dir: Path) -> List[str]:
    """Every plausible patch the builtin engine's proposals name in ``run_dir``'s journal, each
    once, in journal order: a chosen one (when the proposal is plausible, not partial), then its
    alternatives."""
    entries, _ = read_events(run_dir)
    found: List[str] = []
    for entry in entries:
        event = entry.event
        if not isinstance(event, ProposalEvent) or event.engine != "builtin":
            continue
        notes = event.notes or {}
        if notes.get("plausible_note") != PLAUSIBLE_NOTE:
            continue  # a partial fix: it leaves failing tests, it is not plausible
        if notes.get("chosen") and event.answer.strip():
            found.append(event.answer)
        found += [str(d) for d in notes.get("alternatives") or [] if str(d).strip()]
    return list(dict.fromkeys(p if p.endswith("\n") else p + "\n" for p in found))


def passes_visible_tests(case: Case, patch: str, settings: Settings, work: Path) -> bool:
    """True when the case's own tests (no hidden ones) all pass with ``patch``: the engine's
    alternatives include partial fixes (plausible for the tests they target, not for all)."""
    try:
        root, _ = patched_copy(case, patch, work)
    except RepairloopError:
        return False
    deadline = time.monotonic() + settings.test_timeout
    suite = TestSuite.for_project(
        settings, root, dict(os.environ), lambda: deadline - time.monotonic()
    )
    return suite.run(root).green


def engine_run(case: Case, work: Path) -> Dict[str, Any]:
    """The engine's run on a git copy of ``case``: its --json document (empty when none)."""
    project = commit_all(copy_project(case, work / "project"))
    argv = [
        sys.executable,
        "-m",
        "repairloop",
        "run",
        str(project),
        "--json",
        "--max-iterations",
        "1",
        "--timeout",
        str(TIMEOUT),
    ]
    if case.meta.get("test_cmd"):
        argv += ["--test-cmd", str(case.meta["test_cmd"])]
    summary, _ = cli_json(argv, project, child_env(), TIMEOUT)
    return summary


def harvest_case(case: Case, work: Path, out: Path) -> Dict[str, Any]:
    """Run the engine on ``case``, judge each plausible patch, write the wrong ones to ``out``."""
    began = time.perf_counter()
    summary = engine_run(case, work)
    run_dir = Path(str(summary.get("run_dir") or work / "none"))
    patches = plausible_patches(run_dir) if run_dir.is_dir() else []
    flags = {"test_cmd": case.meta["test_cmd"]} if case.meta.get("test_cmd") else {}
    settings = load_settings(work / "project", flags, environ={})
    wrong: List[str] = []
    details: List[str] = []
    for n, patch in enumerate(patches, start=1):
        if not passes_visible_tests(case, patch, settings, work / f"visible-{n}"):
            details.append("partial: the case's own tests do not all pass with it")
            continue
        judgement = judge(case, patch, settings, work / f"judge-{n}")
        details.append(judgement.detail)
        if judgement.correct is False:
            wrong.append(patch)
    for old in out.glob(f"{case.name}--*.patch"):
        old.unlink()
    for n, patch in enumerate(wrong, start=1):
        (out / f"{case.name}--{n}.patch").write_text(patch, encoding="utf-8")
    return {
        "case": case.name,
        "outcome": summary.get("outcome") or "error",
        "plausible": len(patches),
        "wrong": len(wrong),
        "details": details,
        "seconds": round(time.perf_counter() - began, 1),
    }


def harvest(cases: Sequence[Case], out: Path) -> List[Dict[str, Any]]:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="harvest-wrong-") as tmp:

        def one(case: Case) -> Dict[str, Any]:
            work = Path(tmp) / case.name
            work.mkdir()
            try:
                row = harvest_case(case, work, out)
            finally:
                shutil.rmtree(work, ignore_errors=True)
            print(json.dumps(row), flush=True)
            return row

        with ThreadPoolExecutor(max_workers=WORKERS) as pool:
            return list(pool.map(one, cases))


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="directory of the wrong patches")
    parser.add_argument("cases", nargs="*", help="case names (default: every case)")
    args = parser.parse_args(argv)
    cases = [c for c in find_cases(BENCH) if not args.cases or c.name in args.cases]
    began = time.perf_counter()
    rows = harvest(cases, args.out)
    print(
        f"{len(rows)} cases, {sum(r['plausible'] for r in rows)} plausible patches, "
        f"{sum(r['wrong'] for r in rows)} wrong, {time.perf_counter() - began:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
