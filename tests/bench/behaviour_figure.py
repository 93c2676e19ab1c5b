"""Figure 17: the behaviour check and the deletion flags on right fixes and on
plausible-but-wrong patches.

The behaviour check (``repairloop/loop/behaviour.py``; README "The behaviour check") flags a
proven patch ``changes_passing_behaviour`` when a test that passed at the baseline and with the
patch, and never ran the suspicious code, takes other lines through the changed files. Here each
patch is answered by the scripted model (``tests/scripted_server.py`` on 127.0.0.1, a unified
diff in a fenced block) to ``python -m repairloop run PROJECT --model openai/scripted --api-base
URL --no-builtin --max-iterations 1 --json`` on a fresh git copy (the model named
``scripted.MODEL``, so litellm can price it), and the run's
``evidence.proof.flags`` say whether it was flagged. The deletion flags (``repairloop/patch/
dropped.py``) mark a candidate whose changed function no longer reads an input (``drops_input``)
or that only removes code (``deletes_code``); the run's ``evidence.flags`` hold them. A patch
counts as flagged by either kind of check. Five sets:

- **a. bench, right**: every ``fixtures/bench`` case's ``reference.patch``;
- **b. real bugs, right**: the reference fix (``context_check.reference_diff`` from the buggy to
  the fixed materialisation) of ``REAL_CASES`` of figure 14's bugs
  (``fidelity_figure.FIDELITY_CASES``, taken one library at a time so every library is in),
  each materialised as its repository has it (``fidelity_figure.as_in_its_repository``);
- **c. bench, wrong**: the offline engine's plausible patches that the hidden tests reject,
  harvested by ``harvest_wrong_patches.py`` into ``fixtures/behaviour/bench/``;
- **d. shop**: ``fixtures/behaviour/shop`` with three known overfitting answers (a guard on the
  failing input, a lookup table keyed by it, a branch-free correction), which change no passing
  test's path and read every input, and so are expected NOT flagged, and its right fix;
- **e. real bugs, wrong**: the offline engine's plausible patches on real bugs that figure 16's
  whole-suite judge found wrong (``fixtures/behaviour/realbugs/CASE.patch``, from its rows'
  ``wrong_patch``), each on its buggy project with the case's own test command.

``static_sweep`` also computes the deletion flags with no run on every reference fix there is
(both real-bug corpora and fixtures/bench): a wider look at its false flags.

Only runs that end ``fixed`` count (the check runs on a proven patch); the others are listed.
Targets (issue 28): right fixes flagged at most 1 in 20; wrong patches (sets c and e) flagged
more than half. ``make bench`` measures it only with ``BENCH_BEHAVIOUR=1`` or ``--only 17``.

    python tests/bench/behaviour_figure.py [--rows FILE] [SET ...]   # SET: a b c d e
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

sys.path[:0] = [str(Path(__file__).resolve().parent.parent)]  # tests/: scripted_server, run alone

import context_check  # noqa: E402
import fidelity_figure  # noqa: E402
import realbugs  # noqa: E402
import scripted  # noqa: E402
from context_figure import _sources, cli_json, loop_test_cmd, why_not_fixed  # noqa: E402
from figure import Check, Figure  # noqa: E402
from projects import REPO, commit_all  # noqa: E402
from scripted_server import ScriptedServer  # noqa: E402

from repairloop.integrations.bench import find_cases  # noqa: E402
from repairloop.integrations.bench.cases import copy_project  # noqa: E402

BENCH = REPO / "fixtures" / "bench"
BEHAVIOUR = REPO / "fixtures" / "behaviour"
WORKERS = 2
RUN_TIMEOUT = 300.0  # seconds: each run's --timeout
REAL_CASES = 20  # of figure 14's 32 real bugs, one library at a time
FLAG = "changes_passing_behaviour"
SETS = {
    "a": "a. bench reference fixes",
    "b": "b. real-bug reference fixes",
    "c": "c. bench wrong patches",
    "d": "d. shop",
    "e": "e. real-bug wrong patches",
}
DELETION_FLAGS = ("drops_input", "deletes_code")


@dataclass(frozen=True)
class Row:
    """One patch's run: its set, case, whether it is a right fix, how the run ended, the flag."""

    set: str
    case: str
    right: bool
    outcome: str
    flagged: bool  # changes_passing_behaviour, by the proof's behaviour check
    detail: str  # the flag's text when flagged, why not fixed when not fixed
    seconds: float
    dropped: bool = False  # a deletion flag on the candidate (rows of older files lack it)

    @property
    def either(self) -> bool:
        return self.flagged or self.dropped

    @property
    def counted(self) -> bool:
        return self.outcome == "fixed"


@dataclass(frozen=True)
class Job:
    """A patch to answer: the project is built in the given directory by ``build``."""

    set: str
    case: str
    right: bool
    build: Callable[[Path], Tuple[Path, str, Optional[str]]]  # dir -> (project, answer, test_cmd)


def fenced(patch: str) -> str:
    return "```diff\n" + (patch if patch.endswith("\n") else patch + "\n") + "```\n"


def run_answer(project: Path, answer: str, test_cmd: Optional[str]) -> Tuple[Dict[str, Any], str]:
    """``repairloop run --json`` on ``project`` with the scripted model answering ``answer``."""
    with ScriptedServer(scripted.answering([answer])) as srv:
        flags = ("--max-iterations", "1", "--timeout", str(RUN_TIMEOUT), "--json")
        argv = scripted.cli_argv(project, srv.base_url, *flags)
        argv += ["--test-cmd", test_cmd] if test_cmd else []
        return cli_json(argv, project, fidelity_figure.child_env(), RUN_TIMEOUT)


def flags_of(summary: Dict[str, Any]) -> List[str]:
    proof = (summary.get("evidence") or {}).get("proof") or {}
    return [str(f) for f in proof.get("flags") or [] if str(f).startswith(FLAG)]


def dropped_of(summary: Dict[str, Any]) -> List[str]:
    """The run's deletion flags (its kept candidates', in ``evidence.flags``)."""
    return [
        str(f)
        for f in (summary.get("evidence") or {}).get("flags") or []
        if str(f).startswith(DELETION_FLAGS)
    ]


def measure_job(job: Job, work: Path) -> Row:
    began = time.perf_counter()
    try:
        project, answer, test_cmd = job.build(work)
        summary, err = run_answer(project, answer, test_cmd)
    except Exception as exc:  # a case that cannot be built is a row, not the end of the figure
        summary, err = {}, f"could not build the project: {exc}"
    outcome = str(summary.get("outcome") or "error")
    flags, dropped = flags_of(summary), dropped_of(summary)
    detail = " ".join(flags + dropped)[:600] if flags or dropped else why_not_fixed(summary, err)
    seconds = round(time.perf_counter() - began, 1)
    return Row(job.set, job.case, job.right, outcome, bool(flags), detail, seconds, bool(dropped))


# --- the jobs of each set -----------------------------------------------------------------------


def _bench_job(set_key: str, case: Any, patch: Path, right: bool, name: str) -> Job:
    def build(work: Path) -> Tuple[Path, str, Optional[str]]:
        project = commit_all(copy_project(case, work / "project"))
        return project, fenced(patch.read_text(encoding="utf-8")), case.meta.get("test_cmd")

    return Job(set_key, name, right, build)


def bench_right_jobs() -> List[Job]:
    return [_bench_job("a", c, c.reference, True, c.name) for c in find_cases(BENCH) if c.reference]


def bench_wrong_jobs(corpus: Path = BEHAVIOUR / "bench") -> List[Job]:
    cases = {c.name: c for c in find_cases(BENCH)}
    jobs = []
    for patch in sorted(corpus.glob("*--*.patch")):
        case = cases[patch.stem.split("--", 1)[0]]
        jobs.append(_bench_job("c", case, patch, False, patch.stem))
    return jobs


def real_cases(count: int = REAL_CASES) -> List[realbugs.RealBug]:
    """``count`` of figure 14's bugs, one library at a time in ``FIDELITY_CASES`` order."""
    by_library: Dict[str, List[realbugs.RealBug]] = {}
    for case in fidelity_figure.all_cases():
        by_library.setdefault(case.library, []).append(case)
    picked: List[realbugs.RealBug] = []
    while len(picked) < count and any(by_library.values()):
        for cases in by_library.values():
            if cases and len(picked) < count:
                picked.append(cases.pop(0))
    return picked


def real_right_jobs(count: int = REAL_CASES) -> List[Job]:
    def job(case: realbugs.RealBug) -> Job:
        def build(work: Path) -> Tuple[Path, str, Optional[str]]:
            fixed = realbugs.materialise(case, work / "fixed", fixed=True)
            project = realbugs.materialise(case, work / "buggy")
            fidelity_figure.as_in_its_repository(project)
            answer = context_check.reference_diff(_sources(case, fixed), _sources(case, project))
            return project, answer, loop_test_cmd(case.test_cmd)

        return Job("b", case.name, True, build)

    return [job(c) for c in real_cases(count)]


def shop_jobs(
    shop: Path = BEHAVIOUR / "shop", answers: Path = BEHAVIOUR / "shop-answers"
) -> List[Job]:
    def job(patch: Path) -> Job:
        def build(work: Path) -> Tuple[Path, str, Optional[str]]:
            project = Path(shutil.copytree(shop, work / "project"))
            return commit_all(project), fenced(patch.read_text(encoding="utf-8")), None

        return Job("d", f"shop: {patch.stem}", patch.stem == "right", build)

    return [job(p) for p in sorted(answers.glob("*.patch"))]


def real_wrong_jobs(corpus: Path = BEHAVIOUR / "realbugs") -> List[Job]:
    """The offline engine's plausible patches on real bugs that figure 16's whole-suite judge
    found wrong (``fixtures/behaviour/realbugs/CASE.patch``), each on its buggy project."""
    corpora = realbugs.load_cases() + realbugs.load_cases(fidelity_figure.HELDOUT)
    known = {c.name: c for c in corpora}

    def job(patch: Path) -> Job:
        case = known[patch.stem]

        def build(work: Path) -> Tuple[Path, str, Optional[str]]:
            project = realbugs.materialise(case, work / "buggy")
            fidelity_figure.as_in_its_repository(project)
            answer = fenced(patch.read_text(encoding="utf-8"))
            return project, answer, loop_test_cmd(case.test_cmd)

        return Job("e", case.name, False, build)

    return [job(p) for p in sorted(corpus.glob("*.patch"))]


def jobs_of(sets: Sequence[str]) -> List[Job]:
    makers = {
        "a": bench_right_jobs,
        "b": real_right_jobs,
        "c": bench_wrong_jobs,
        "d": shop_jobs,
        "e": real_wrong_jobs,
    }
    return [job for key in sets for job in makers[key]()]


def measure(jobs: Sequence[Job], work: Path, rows_file: Optional[Path] = None) -> List[Row]:
    """Every job, ``WORKERS`` at a time, each in its own directory; each row appended to
    ``rows_file`` (JSON lines) as it is measured."""

    def one(numbered: Tuple[int, Job]) -> Row:
        n, job = numbered
        where = work / f"{n:03d}"
        where.mkdir(parents=True)
        row = measure_job(job, where)
        print(json.dumps(asdict(row)), file=sys.stderr, flush=True)
        if rows_file is not None:
            with open(rows_file, "a", encoding="utf-8") as fh:
                fh.write(json.dumps(asdict(row)) + "\n")
        return row

    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return list(pool.map(one, enumerate(jobs)))


def read_rows(path: Path) -> List[Row]:
    return [Row(**json.loads(line)) for line in path.read_text().splitlines() if line.strip()]


# --- the figure ---------------------------------------------------------------------------------


def _share(hits: int, total: int) -> str:
    return f"{hits} of {total} ({100.0 * hits / total:.1f}%)" if total else "none"


def _tally(rows: Sequence[Row], by: Callable[[Row], bool] = lambda r: r.either) -> Tuple[int, int]:
    """(flagged ``by``, ended fixed) of ``rows``; ``by`` defaults to either check."""
    counted = [r for r in rows if r.counted]
    return sum(by(r) for r in counted), len(counted)


def set_lines(rows: Sequence[Row]) -> List[str]:
    """Per set and kind: patches, runs that ended fixed, flagged among those (by each check)."""
    out = []
    for key, label in SETS.items():
        for right in (True, False):
            group = [r for r in rows if r.set == key and r.right is right]
            if group:
                flagged, fixed = _tally(group)
                behaviour, _ = _tally(group, lambda r: r.flagged)
                dropped, _ = _tally(group, lambda r: r.dropped)
                out.append(
                    f"{label}, {'right' if right else 'wrong'}: {len(group)} patch(es), "
                    f"{fixed} ended fixed, flagged {_share(flagged, fixed)} (behaviour check "
                    f"{behaviour}, deletion flags {dropped})"
                )
    return out


def _case_row(r: Row) -> List[str]:
    def cell(flagged: bool) -> str:
        return ("**flagged**" if flagged else "not flagged") if r.counted else "- (not counted)"

    kind = "right" if r.right else "wrong"
    return [SETS[r.set], r.case, kind, r.outcome, cell(r.flagged), cell(r.dropped)]


def static_sweep() -> Tuple[int, int, List[str]]:
    """The deletion flags on every real bug's reference fix (both corpora) and every fixtures/bench
    reference, computed from the texts with no run: (flagged, patches, the flagged ones' names).
    A right fix flagged here is a false flag the runs above may not sample."""
    from repairloop.patch import AppliedPatch, FileChange
    from repairloop.patch.dropped import deletion_flags, dropped_input_flags
    from repairloop.types import TestFiles

    def flagged(old: Dict[str, str], new: Dict[str, str]) -> bool:
        changes = tuple(FileChange(p, old[p], new.get(p), "exact", 1.0) for p in old)
        patch = AppliedPatch(changes, "reference")
        return bool(dropped_input_flags(patch, TestFiles()) + deletion_flags(patch, TestFiles()))

    names: List[str] = []
    total = 0
    with tempfile.TemporaryDirectory(prefix="behaviour-static-") as tmp:
        for case in realbugs.load_cases() + realbugs.load_cases(fidelity_figure.HELDOUT):
            where = Path(tmp) / case.name
            fixed = realbugs.materialise(case, where / "fixed", fixed=True)
            buggy = realbugs.materialise(case, where / "buggy")
            paths = [d.path for d in realbugs.parse_unified_diff(case.bug_patch.read_text())]
            py = [p for p in paths if p.endswith(".py") and not realbugs.is_test_path(p)]
            total += 1
            old = {p: (buggy / p).read_text(encoding="utf-8") for p in py}
            if flagged(old, {p: (fixed / p).read_text(encoding="utf-8") for p in py}):
                names.append(case.name)
            shutil.rmtree(where)
        for bench in find_cases(BENCH):
            if not bench.reference:
                continue
            project = commit_all(copy_project(bench, Path(tmp) / bench.name))
            diff = bench.reference.read_text(encoding="utf-8")
            paths = [d.path for d in realbugs.parse_unified_diff(diff)]
            old = {p: (project / p).read_text(encoding="utf-8") for p in paths if p.endswith(".py")}
            subprocess.run(["git", "apply", str(bench.reference)], cwd=project, check=True)
            total += 1
            if flagged(old, {p: (project / p).read_text(encoding="utf-8") for p in old}):
                names.append(bench.name)
    return len(names), total, names


def behaviour_figure(
    rows: Sequence[Row], seconds: float, sweep: Optional[Tuple[int, int, List[str]]] = None
) -> Figure:
    """Figure 17 from measured ``rows``: per set, flagged among the runs that ended fixed, by
    either check (the behaviour check, the deletion flags); ``sweep`` is ``static_sweep()``."""
    right_flagged, right_fixed = _tally([r for r in rows if r.right])
    wrong = [r for r in rows if r.set in ("c", "e")]
    wrong_flagged, wrong_fixed = _tally(wrong)
    all_wrong_flagged, all_wrong_fixed = _tally([r for r in rows if not r.right])
    # No proven patch of a kind: nothing to judge (None), not a target met or missed.
    checks = [
        Check("right fixes flagged: at most 1 in 20", _share(right_flagged, right_fixed),
              right_flagged * 20 <= right_fixed if right_fixed else None),
        Check("wrong patches (the engine's, on fixtures/bench and real bugs) flagged: more "
              "than half", _share(wrong_flagged, wrong_fixed),
              wrong_flagged * 2 > wrong_fixed if wrong_fixed else None),
    ]  # fmt: skip
    if sweep is not None:
        hits, total, names = sweep
        checks.append(
            Check("deletion flags on every reference fix, no run: at most 1 in 20",
                  _share(hits, total) + (f" ({', '.join(names)})" if names else ""),
                  hits * 20 <= total if total else None)
        )  # fmt: skip
    shop = [r for r in rows if r.set == "d" and not r.right]
    shop_flagged = [r.case for r in shop if r.counted and r.either]
    others = [f"{SETS[r.set]}: {r.case}: {r.outcome}: {r.detail}" for r in rows if not r.counted]
    flagged_tests = [
        f"{r.case}: {r.detail.split('; it changes')[0].split(': a plausible')[0]}"
        for r in rows
        if r.counted and r.either
    ]
    notes = set_lines(rows) + [
        f"Every wrong patch, the shop's included: {_share(all_wrong_flagged, all_wrong_fixed)} "
        "flagged.",
        f"The shop's {len(shop)} overfitting answers are expected NOT flagged (a condition on the "
        "failing test's inputs, a table keyed by them and a branch-free correction change no "
        "passing test's path, every shop test runs `price`, the suspicious code, and each reads "
        "every input): "
        + (f"flagged: {', '.join(shop_flagged)}." if shop_flagged else "none flagged."),
        "A flag is counted only on a run that ended `fixed` (the check runs on a proven "
        "patch); runs that did not: " + ("; ".join(others) if others else "none") + ".",
        "What each flag named: " + ("; ".join(flagged_tests) if flagged_tests else "none") + ".",
        f"{len(rows)} runs, {WORKERS} at a time: {seconds / 60:.0f} minutes.",
    ]
    table = [["set", "case", "patch", "outcome", "behaviour check", "deletion flags"]]
    table += [_case_row(r) for r in rows]
    return Figure(
        17,
        "The behaviour check and the deletion flags: right fixes against plausible-but-wrong "
        "patches",
        "each patch answered by a scripted model as a diff, one iteration with repairloop's "
        "defaults (the proof and its behaviour check), and whether the run flagged it "
        "`changes_passing_behaviour` (the proof) or `drops_input` or `deletes_code` (the "
        "candidate): right fixes "
        "(fixtures/bench reference fixes, real bugs' own fixes) against the offline engine's "
        "plausible patches that fixtures/bench's hidden tests or a real project's whole suite "
        "reject, and a shop project's known overfitting answers",
        table,
        checks,
        notes,
        seconds,
    )


def figure_behaviour(work: Path) -> Figure:
    """Figure 17 for ``make bench`` (``BENCH_BEHAVIOUR=1``): every set."""
    began = time.perf_counter()
    rows = measure(jobs_of("decab"), work)
    return behaviour_figure(rows, time.perf_counter() - began, static_sweep())


def main(argv: Sequence[str]) -> int:
    from run import machine

    args = list(argv)
    rows_file = None
    if args[:1] == ["--rows"]:
        rows_file, args = Path(args[1]), args[2:]
    sets = "".join(args) or "decab"
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="behaviour-figure-") as tmp:
        rows = measure(jobs_of(sets), Path(tmp), rows_file)
    figure = behaviour_figure(rows, time.perf_counter() - began, static_sweep())
    print(figure.markdown(machine()))
    return 0 if all(c.met for c in figure.checks) else 1


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
