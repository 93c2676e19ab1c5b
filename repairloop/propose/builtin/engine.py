"""The offline proposer: fault localisation, source mutations, validation by the tests.

Classic search-based program repair (GenProg's generate-and-validate loop,
with the simple-stupid-bug operators of ManySStuBs4J/PySStuBs): localise
once per run (Ochiai over per-test coverage), mutate the most suspicious
lines, validate candidates in parallel scratch copies, keep searching a while
after the first plausible patch, and answer the best (fixes the repaired group,
then the most failing tests, then fewest changed lines, the most likely by the
ranking, fewest characters). Plausible means what the loop keeps (README, "How a
run stops"): at least one failing test passes and no passing test breaks, so an
unrelated broken test does not block a fix. The loop treats the answer like a
model's: guards, its own validation, stop policy, journal.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

from repairloop.errors import EngineExhausted
from repairloop.propose.builtin.edits import Source, keeps_doctests
from repairloop.propose.builtin.engine_report import (
    EXHAUSTED_HINT,
    exhausted_message,
    localisation_notes,
    result_notes,
)
from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.hints import family_boosts
from repairloop.propose.builtin.pool import OpenWarm, WarmCounts, WorkerPool
from repairloop.propose.builtin.scratch import (
    RunTests,
    ValidationPlan,
    Verdict,
    remove_coverage,
    scratch_copy,
    snapshot,
)
from repairloop.propose.builtin.search import Result, Search, order_candidates
from repairloop.types import (
    Localisation,
    Proposal,
    ProposalRequest,
    TestFiles,
    TestReport,
    Usage,
    read_sources,
)

TIME_SPENT = "time budget spent"  # why the search stopped, when the run's time ran out
PROBE_SECONDS = 2.0  # failing tests slower than this together are probed with the quickest first
# Seconds for a candidate's failing tests when some hung at the baseline: a fix passes them at once.
HUNG_TARGETS_TIMEOUT = 5.0
NO_BUDGET_BASELINE_TIMEOUT = 900.0  # seconds for the localisation run with no time budget
# Ranks suspicious lines from a run that recorded per-test lines: (that run, the copy it ran in, the
# failing tests, the traceback, test files, the sources) -> Localisation. The loop passes
# ``localise.localise`` in.
Localiser = Callable[
    [TestReport, Path, Tuple[str, ...], str, TestFiles, Dict[str, str]], Localisation
]


class BuiltinProposer:
    """The ``builtin`` engine: a Proposer that needs no network and costs no tokens.

    ``project_root`` is the loop's workspace (read, never written);
    ``run_tests(root, test_ids, timeout_seconds, with_coverage)`` runs the tests
    of a copy; ``test_files`` says which files are tests (never mutated).
    ``workers`` candidates are validated at once; ``max_candidates`` bounds the
    candidates tried per run; ``candidate_timeout`` (seconds) is the least
    per-candidate test timeout (at least 3x the baseline duration is used);
    after the first patch that fixes the whole repaired group the search goes on
    for ``extra_search_share`` of the time spent so far or ``extra_candidates``
    more candidates, whichever ends first. A partial fix (it makes some failing
    tests pass, breaks none) does not end the search: it is the answer only when
    the search ends without a whole-group fix (an early partial fix is often an
    overfitting one, ``x // y`` for a missing ``abs``); while every plausible one
    only changes lines none of the tests it leaves failing runs (``maxsize += 1``
    for a cache limit), the search goes on. ``clock`` returns seconds.
    ``open_warm`` gives each worker copy a warm test process for the failing
    tests (``pool.py``; None: every run is a fresh process). The fault
    localisation is the request's (``ProposalRequest.localisation``, the loop's,
    for the code as it is now) when it carries one; otherwise the engine runs the
    suite once with per-test coverage on a copy and ranks with ``localiser``.
    ``distrusted(originals, changed files)`` is True for a plausible patch a
    reader would distrust (the loop passes ``patch.dropped.drops_input``): among
    patches that fix as many tests it is chosen last.
    """

    name = "builtin"
    engine = "builtin"

    def __init__(
        self,
        *,
        project_root: Path,
        run_tests: RunTests,
        test_files: TestFiles,
        localiser: Localiser,
        workers: int = 2,
        max_candidates: int = 2000,
        candidate_timeout: float = 10.0,
        extra_search_share: float = 0.2,
        extra_candidates: int = 30,
        clock: Callable[[], float] = time.monotonic,
        scratch_dir: Optional[Path] = None,
        open_warm: Optional[OpenWarm] = None,
        distrusted: Callable[[Dict[str, str], Dict[str, str]], bool] = lambda old, new: False,
    ) -> None:
        self.project_root = Path(project_root)
        self.distrusted = distrusted
        self.run_tests = run_tests
        self.test_files = test_files
        self.localiser = localiser
        self.workers = max(1, workers)
        self.max_candidates = max_candidates
        self.candidate_timeout = candidate_timeout
        self.extra_search_share = extra_search_share
        self.extra_candidates = extra_candidates
        self.clock = clock
        self.scratch_dir = scratch_dir
        self.open_warm = open_warm
        self.warm_counts = WarmCounts()
        self._started: Optional[float] = None
        self._call_start = 0.0
        self._localisation: Optional[Localisation] = None
        self._baseline: Optional[TestReport] = None  # the localisation run (durations, failures)
        self._first_targets: Tuple[str, ...] = ()
        self._plan: Optional[ValidationPlan] = None
        self._boosts: Dict[str, float] = {}
        self._baseline_seconds = 0.0
        self._search: Optional[Search] = None
        self._search_key: Optional[Tuple[Any, ...]] = (
            None  # sources, targets and group it was made for
        )
        self._returned: Set[str] = set()
        self._stopped_because = ""

    def propose(self, request: ProposalRequest) -> Proposal:
        """Answer the next plausible patch as a unified diff (``a/``, ``b/``, project-relative).

        Targets are ``context.failing_tests`` (the group) then ``context.other_failing``.
        Continues the same search on later calls with the same sources and
        targets, and never answers the same diff twice. Raises EngineExhausted
        (with ``notes``) when no plausible patch is found within
        ``max_candidates`` and ``request.budget.seconds``.
        """
        start = self._call_start = self.clock()  # what this call took is engine time, found or not
        self._started = start if self._started is None else self._started
        seconds = request.budget.seconds
        deadline = None if seconds is None else start + seconds
        group = tuple(dict.fromkeys(request.context.failing_tests))
        targets = tuple(dict.fromkeys(group + request.context.other_failing))
        if not targets:
            raise self._exhausted("no failing tests were given to repair", {})
        sources = read_sources(self.project_root, self.test_files.is_test)
        if self._localisation is None:
            self._localise(request, targets, deadline, sources)
        assert self._baseline is not None
        deadline = self._reserve(deadline, seconds)
        key = (snapshot(sources), targets, group)
        if self._search is None or key != self._search_key:
            # A kept patch or a new group: validate against what fails now, from scratch.
            self._plan = self._make_plan(self._baseline, targets, group, request.targeted_run)
            self._search, self._search_key = self._new_search(sources), key
        best = self._search.plausible(self._returned)
        if not best or (
            all(r.unrelated for r in best) and not self._search.exhausted
        ):  # search on, rather
            self._search_more(self._search, deadline)
            best = self._search.plausible(self._returned)
        if not best:
            raise self._exhausted(self._exhausted_message(self._search), self._notes(None, []))
        chosen = best[0]
        self._returned.add(chosen.diff)
        notes = self._notes(chosen, best[1:])
        usage = Usage(0, 0, 0.0, seconds=self.clock() - start, calls=0)
        return Proposal(
            answer=chosen.diff,
            engine="builtin",
            model="builtin",
            usage=usage,
            notes=notes,
            validated=True,
            candidates=self._search.tried,
            degraded=self._degraded(),
        )

    def _search_more(self, search: Search, deadline: Optional[float]) -> None:
        """Validate further candidates in fresh worker copies until the search policy stops."""
        assert self._plan is not None
        plan = self._plan

        def time_left() -> Optional[float]:
            return None if deadline is None else deadline - self.clock()

        with WorkerPool(
            self.project_root, self.workers, self.scratch_dir, self.open_warm, self.warm_counts
        ) as pool:

            def validate(changed: Dict[str, str]) -> Verdict:
                return pool.validate(
                    changed, search.originals, self.run_tests, plan, self.clock, time_left
                )

            search.run(validate, lambda s: self._keep_going(s, deadline), self.clock)

    # -- localisation -------------------------------------------------------------------

    def _localise(
        self,
        request: ProposalRequest,
        targets: Tuple[str, ...],
        deadline: Optional[float],
        sources: Dict[str, str],
    ) -> None:
        """The loop's localisation when the request has one; else run the suite once with per-test
        coverage on a copy and rank suspicious lines."""
        given = request.localisation
        if given is not None and given.report is not None:
            self._localisation, self._baseline, self._first_targets = given, given.report, targets
            self._boosts = family_boosts(given.report, targets)
            return
        timeout = (
            NO_BUDGET_BASELINE_TIMEOUT if deadline is None else max(1.0, deadline - self.clock())
        )
        with scratch_copy(self.project_root, self.scratch_dir) as root:
            try:
                report = self.run_tests(root, (), timeout, True)
            except Exception as exc:  # the runner's own errors: nothing to localise with
                raise self._exhausted(
                    f"the localisation run of the test suite failed: {exc}", {}
                ) from exc
            try:
                if report.timed_out:
                    self._stopped_because = TIME_SPENT if deadline is not None else ""
                    raise self._exhausted(
                        f"the localisation run did not finish within {timeout:.0f}s", {}
                    )
                context = request.context
                self._localisation = self.localiser(
                    report, root, targets, context.traceback, self.test_files, sources
                )
            finally:
                remove_coverage(report.coverage_file)
        self._baseline, self._first_targets = report, targets
        self._boosts = family_boosts(report, targets)

    def _make_plan(
        self,
        report: TestReport,
        targets: Tuple[str, ...],
        group: Tuple[str, ...] = (),
        targeted_run: Tuple[str, ...] = (),
    ) -> ValidationPlan:
        """Timeouts from ``_timeouts``.

        When the failing tests took over ``PROBE_SECONDS`` together (hangs stopped by a
        per-test timeout, slow tests) and share one root cause (no targets outside
        ``group``), the quickest of them alone is run first, unless they cannot run alone
        (``targeted_run``, the loop's: they run after the earlier tests they need). Baseline
        failures that were never targets (the loop's flaky tests) may fail; tests a kept patch
        fixed may not.
        """
        durations = {r.test_id: r.duration for r in report.results}
        target_seconds = sum(durations.get(t, 0.0) for t in targeted_run or targets)
        self._baseline_seconds = report.seconds
        allowed = frozenset(report.failing_ids) - frozenset(self._first_targets or targets)
        probe: Tuple[str, ...] = ()
        if (
            len(targets) > 1
            and not targeted_run
            and target_seconds > PROBE_SECONDS
            and set(targets) <= set(group or targets)
        ):
            probe = (min(targets, key=lambda t: (durations.get(t, 0.0), t)),)
        target_timeout, probe_timeout = self._timeouts(report, targeted_run or targets, probe)
        return ValidationPlan(
            targets=targets,
            group=group,
            allowed_failing=allowed,
            target_timeout=target_timeout,
            suite_timeout=max(self.candidate_timeout, 3.0 * report.seconds),
            probe=probe,
            targeted_run=targeted_run,
            probe_timeout=probe_timeout,
        )

    def _timeouts(
        self, report: TestReport, run: Tuple[str, ...], probe: Tuple[str, ...]
    ) -> Tuple[float, float]:
        """(seconds for a candidate's failing tests, for its probe; 0.0 without one):
        ``candidate_timeout``, but at least 3x what they took at the baseline. A test that hung
        there (a per-test ``Timeout``) counts as taking no time and the floor drops to
        ``HUNG_TARGETS_TIMEOUT``: a candidate that leaves the hang in is stopped soon, so the
        search still reaches the edit that ends the loop."""
        durations = {r.test_id: r.duration for r in report.results}
        hung = {r.test_id for r in report.results if (r.exc_type or "").endswith("Timeout")}
        floor = self.candidate_timeout
        if hung & (set(run) | set(probe)):
            durations = {t: (0.0 if t in hung else d) for t, d in durations.items()}
            floor = min(floor, HUNG_TARGETS_TIMEOUT)
        need = sum(durations.get(t, 0.0) for t in run)
        probe_need = sum(durations.get(t, 0.0) for t in probe)
        return max(floor, 3.0 * need), (max(floor, 3.0 * probe_need) if probe else 0.0)

    def _reserve(self, deadline: Optional[float], seconds: Optional[float]) -> Optional[float]:
        """Leave the loop time to validate our answer (about one baseline run, at most a
        quarter)."""
        if deadline is None or seconds is None:
            return deadline
        return deadline - min(0.25 * seconds, self._baseline_seconds + 2.0)

    def _new_search(self, sources: Dict[str, str]) -> Search:
        assert self._localisation is not None
        models: Dict[str, FileModel] = {}
        for path in sorted({s.path for s in self._localisation.suspects}):
            if path in sources:
                try:
                    models[path] = FileModel(Source(path, sources[path]))
                except (SyntaxError, ValueError):
                    continue  # a file that does not parse cannot be mutated
        candidates = order_candidates(self._localisation.suspects, models, self._boosts)
        return Search(
            candidates,
            sources,
            self.workers,
            keeps_doctests(self.test_files, sources),
            self._localisation.ran_by,
            self._plan.targets if self._plan is not None else (),
            self.distrusted,
        )

    # -- search policy ------------------------------------------------------------------

    def _keep_going(self, search: Search, deadline: Optional[float]) -> bool:
        now = self.clock()
        if search.tried >= self.max_candidates:
            self._stopped_because = f"max_candidates ({self.max_candidates}) reached"
            return False
        if deadline is not None and now >= deadline:
            self._stopped_because = TIME_SPENT
            return False
        assert self._started is not None
        if search.found_at is not None:
            found_time, found_tried = search.found_at
            extra_time = self.extra_search_share * (found_time - self._started)
            if (
                now >= found_time + extra_time
                or search.tried >= found_tried + self.extra_candidates
            ):
                self._stopped_because = "extra search after the first plausible patch done"
                return False
        self._stopped_because = "all candidates tried"
        return True

    # -- reporting ----------------------------------------------------------------------

    def _notes(self, chosen: Optional[Result], others: List[Result]) -> Dict[str, Any]:
        notes: Dict[str, Any] = {"engine": "builtin"}
        if self._localisation is not None:
            notes.update(localisation_notes(self._localisation, self._search))
        if self._boosts:
            notes["family_boosts"] = dict(sorted(self._boosts.items()))
        if self.open_warm is not None:
            notes["warm"] = self.warm_counts.to_json()
        if self._plan is not None:
            notes["timeouts"] = {
                "failing_tests": self._plan.target_timeout,
                "suite": self._plan.suite_timeout,
            }
        notes["stopped_because"] = self._stopped_because
        notes.update(result_notes(chosen, others))
        return notes

    def _exhausted_message(self, search: Search) -> str:
        assert self._plan is not None
        targets = len(self._plan.targets)
        lines = len(self._localisation.suspects) if self._localisation is not None else -1
        return exhausted_message(
            search, targets, bool(self._returned), self._stopped_because, lines
        )

    def _degraded(self) -> str:
        """Why the localisation was weak (it fell back to the traceback), "" when it was not."""
        loc = self._localisation
        return loc.note if loc is not None and loc.method == "traceback" else ""

    def _exhausted(self, message: str, notes: Dict[str, Any]) -> EngineExhausted:
        usage = Usage(0, 0, 0.0, seconds=self.clock() - self._call_start, calls=0)  # found or not
        return EngineExhausted(
            message,
            EXHAUSTED_HINT,
            usage,
            notes=notes,
            candidates=self._search.tried if self._search is not None else 0,
            degraded=self._degraded(),
            out_of_time=self._stopped_because == TIME_SPENT,
        )
