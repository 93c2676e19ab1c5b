"""The offline engine's workers: scratch copies of the project, each with its own warm test process.

A candidate is validated by writing its changed files into a free copy,
running the failing tests, then (when some pass) the whole suite, and writing
the original text back. The failing tests run in the copy's warm test process
when the loop gives one (``OpenWarm``; ``runner/warm.py``): a fork of a
process that imported and collected the suite once, so a candidate costs the
failing tests' own time, not a pytest start-up. The whole suite always runs in
a fresh process, and the warm answer only filters: a candidate the warm run
calls plausible is still run fresh by the suite stage here and by the loop's
own validation before anything is kept. When the warm path cannot be trusted
for a candidate it says why and the tests run fresh; the reasons are counted
(``WarmCounts``) and go into the engine's notes, hence the journal.
"""

from __future__ import annotations

import queue
import shutil
import tempfile
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, List, Optional, Protocol, Sequence, Tuple

from repairloop.propose.builtin.scratch import (
    RunTests,
    ValidationPlan,
    Verdict,
    copy_project,
    judge_suite,
    judge_targets,
)
from repairloop.types import TestReport, write_inside

MAX_REASONS = 20  # distinct fallback reasons kept in the notes (each with its count)


class WarmTests(Protocol):
    """A warm test process for one copy of the project (``runner.warm.WarmProcess`` through the
    loop).

    ``ready`` starts it (importing the copy as it is: call it before writing a
    candidate) and says whether it runs; ``run`` answers the report of
    ``test_ids`` with the copy as it is now, ``changed`` (project-relative
    paths) being the candidate's files, within ``timeout`` seconds; or None
    when the tests must run fresh, with the reason in ``why``.
    """

    @property
    def why(self) -> str: ...

    def ready(self) -> bool: ...

    def run(
        self, test_ids: Sequence[str], changed: Sequence[str], timeout: float
    ) -> Optional[TestReport]: ...

    def close(self) -> None: ...


OpenWarm = Callable[[Path], WarmTests]


@dataclass
class WarmCounts:
    """How the failing-test runs went: ``warm`` ones, ``fresh`` fallbacks and their reasons
    (counted)."""

    warm: int = 0
    fresh: int = 0
    reasons: Dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def count(self, why: Optional[str]) -> None:
        """One run: warm when ``why`` is None, else a fresh fallback for that reason."""
        with self._lock:
            if why is None:
                self.warm += 1
                return
            self.fresh += 1
            if why in self.reasons or len(self.reasons) < MAX_REASONS:
                self.reasons[why] = self.reasons.get(why, 0) + 1

    def to_json(self) -> Dict[str, object]:
        with self._lock:
            top = sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0]))
            return {"warm_runs": self.warm, "fresh_runs": self.fresh, "fallbacks": dict(top)}


class WorkerPool:
    """``workers`` copies of the project in a scratch directory, removed on exit.

    Use as a context manager; ``validate`` may be called from several threads
    at once (each call holds one copy, and that copy's warm process, for its
    duration). ``open_warm`` makes a copy's warm process (None: always fresh);
    ``counts`` says how the failing-test runs went.
    """

    def __init__(
        self,
        project_root: Path,
        workers: int,
        scratch_dir: Optional[Path],
        open_warm: Optional[OpenWarm] = None,
        counts: Optional[WarmCounts] = None,
    ) -> None:
        self.project_root = project_root
        self.workers = max(1, workers)
        self.scratch_dir = scratch_dir
        self.base: Optional[Path] = None
        self.open_warm = open_warm
        self.counts = counts if counts is not None else WarmCounts()
        self._free: "queue.Queue[Tuple[Path, Optional[WarmTests]]]" = queue.Queue()
        self._warm: List[WarmTests] = []

    def __enter__(self) -> "WorkerPool":
        if self.scratch_dir is not None:
            self.scratch_dir.mkdir(parents=True, exist_ok=True)
        self.base = Path(tempfile.mkdtemp(prefix="repairloop-builtin-", dir=self.scratch_dir))
        try:
            for i in range(self.workers):
                copy = copy_project(self.project_root, self.base / f"worker-{i}")
                warm = self.open_warm(copy) if self.open_warm is not None else None
                if warm is not None:
                    self._warm.append(warm)
                self._free.put((copy, warm))
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: object) -> None:
        for warm in self._warm:
            warm.close()
        self._warm.clear()
        if self.base is not None:
            shutil.rmtree(self.base, ignore_errors=True)

    def validate(
        self,
        changed: Dict[str, str],
        originals: Dict[str, str],
        run_tests: RunTests,
        plan: ValidationPlan,
        clock: Callable[[], float],
        time_left: Callable[[], Optional[float]],
    ) -> Verdict:
        """Write ``changed`` files into a free copy, run targets then suite, restore. Raises
        nothing."""
        root, warm = self._free.get()
        started = clock()
        try:
            if warm is not None:
                # started (or restarted) before the candidate is written: it imports the original
                warm.ready()
            _write(root, changed)
            stages = _Stages(root, run_tests, warm, tuple(sorted(changed)), self.counts)
            verdict = stages.run(plan, time_left)
        except Exception as exc:  # a runner failure on one candidate must not end the search
            verdict = Verdict("error", f"validation failed: {type(exc).__name__}: {exc}")
        finally:
            try:
                _write(root, {p: originals[p] for p in changed})
            except (
                OSError,
                ValueError,
            ):  # the tests put a link (or worse) where a source was: copy again
                shutil.rmtree(root, ignore_errors=True)  # rmtree never follows a link
                copy_project(self.project_root, root)
            self._free.put((root, warm))
        return replace(verdict, seconds=clock() - started)


def _write(root: Path, files: Dict[str, str]) -> None:
    """Write each file without following a link (``scratch.write_inside``: the copy is one tests can
    write). A stale .pyc of it does not matter: every test run removes bytecode first."""
    for path, text in files.items():
        write_inside(root, path, text)


def _bounded(timeout: float, time_left: Callable[[], Optional[float]]) -> float:
    left = time_left()
    return timeout if left is None else max(1.0, min(timeout, left))


@dataclass
class _Stages:
    """One candidate's validation in one copy: probe, failing tests (warm when it can), whole suite
    (fresh)."""

    root: Path
    run_tests: RunTests
    warm: Optional[WarmTests]
    changed: Tuple[str, ...]
    counts: WarmCounts

    def failing_tests(self, ids: Sequence[str], timeout: float) -> TestReport:
        if self.warm is not None:
            report = self.warm.run(ids, self.changed, timeout)
            self.counts.count(None if report is not None else self.warm.why)
            if report is not None:
                return report
        return self.run_tests(self.root, ids, timeout, False)

    def run(self, plan: ValidationPlan, time_left: Callable[[], Optional[float]]) -> Verdict:
        if plan.probe:
            # Most candidates fail every target: one cheap target rejects them without paying
            # for the others (a hang costs a per-test timeout per test). The plan has a probe
            # only when every target shares one root cause, so a real fix passes it too.
            timeout = _bounded(plan.probe_timeout, time_left)
            probe = judge_targets(self.failing_tests(plan.probe, timeout), plan.probe, timeout)
            if probe.status != "passed":
                return replace(probe, status="failing") if probe.status == "partial" else probe
        timeout = _bounded(plan.target_timeout, time_left)
        first = judge_targets(self.failing_tests(plan.target_run, timeout), plan.targets, timeout)
        if first.status not in ("passed", "partial"):
            return first
        timeout = _bounded(plan.suite_timeout, time_left)
        return judge_suite(self.run_tests(self.root, (), timeout, False), plan, timeout)
