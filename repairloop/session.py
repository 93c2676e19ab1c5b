"""One run inside its workspace: the baseline, the flaky check, the iterations and the finish.

``Session.run`` is the generator ``loop.drive`` yields from; the iteration
itself is ``attempt.AttemptRunner``. The state that grows over a run is
``RunState``.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from repairloop import stop
from repairloop.attempt import AttemptRunner, guard_notes
from repairloop.chain import ReplayProposer, build_proposer, token_counter
from repairloop.classify import SESSION_ID, blocking_kind, classify_report
from repairloop.errors import ProjectError
from repairloop.journal import Journal
from repairloop.redact import redact_record
from repairloop.runner import project_python
from repairloop.settings import Settings
from repairloop.suite import TestSuite
from repairloop.types import (
    Decision,
    Failure,
    FailureKind,
    Iteration,
    LastAttempt,
    LoopEvent,
    Outcome,
    Proposer,
    RunResult,
    StopReason,
    TestFiles,
    TestReport,
    TestResult,
)
from repairloop.workspace import Workspace, apply_to_user_tree

Confirm = Callable[[str], bool]  # shown the final diff, answers whether to apply it


@dataclass
class RunState:
    """The growing state of one run (iterations are frozen records)."""

    baseline_failing: Tuple[str, ...] = ()
    baseline_passing: Tuple[str, ...] = ()
    failing: Tuple[str, ...] = ()
    results: Dict[str, TestResult] = field(default_factory=dict)
    failures: Tuple[Failure, ...] = ()  # at the baseline
    current_failures: Tuple[Failure, ...] = ()  # of the tests failing now
    flaky: Tuple[str, ...] = ()
    history: Tuple[Iteration, ...] = ()
    chain: List[str] = field(default_factory=list)
    dropped: List[str] = field(default_factory=list)
    model_index: int = 0
    last_attempt: Optional[LastAttempt] = None


class Session:
    """One run inside its workspace; methods are the loop's steps."""

    def __init__(
        self,
        settings: Settings,
        project: Path,
        ws: Workspace,
        journal: Journal,
        environ: Dict[str, str],
        chain: List[str],
        clock: Callable[[], float],
        started: float,
        run_id: str,
    ) -> None:
        self.settings, self.project, self.ws, self.journal = settings, project, ws, journal
        self.redact = journal.redact  # the run's secret redactor, also for what a model is shown
        self.clock, self.started, self.run_id = clock, started, run_id
        self.suite = TestSuite.for_project(settings, project, environ, self.seconds_left)
        self.state = RunState(chain=list(chain))
        # Which files are tests: the globs now, the files the baseline collected tests from added after it.
        self.test_files = TestFiles(tuple(settings.test_globs))
        self.limits = stop.Limits(
            max_iterations=settings.max_iterations,
            max_tokens=settings.max_tokens,
            max_cost=settings.max_cost,
            timeout=settings.timeout,
            similarity_threshold=settings.similarity_threshold,
            patience=settings.patience,
        )
        self.python = project_python(project)
        self.proposers: Dict[str, object] = {}
        self.count_tokens = token_counter(chain)
        self.forced_stop: Optional[Tuple[StopReason, str]] = None  # a budget gate refused a call
        self.result: Optional[RunResult] = None
        self.downgraded = False
        self.replay: Dict[Tuple[int, int], Dict[str, object]] = {}  # recorded answers (resume)
        self.given: Dict[str, Proposer] = {}
        self.raw_patch: Optional[str] = None  # the final patch before redaction, for --apply

    def seconds_left(self) -> float:
        return self.settings.timeout - (self.clock() - self.started)

    # -- phases -------------------------------------------------------------

    def run(self, *, apply: bool, confirm: Optional[Confirm]) -> Iterator[LoopEvent]:
        yield LoopEvent("phase", "running the test suite (baseline)", {"command": str(self.suite.command)})
        baseline = self.suite.run(self.ws.root)
        self.journal.append("baseline", report=_report_summary(baseline))
        yield LoopEvent("note", _describe(baseline), {"failing": len(baseline.failing_ids)})
        if baseline.timed_out and self.seconds_left() <= 1.0:  # the run's --timeout, not the suite, ran out
            detail = "the run's time budget (--timeout) ran out during the baseline test run"
            yield self._finish(StopReason.BUDGET_TIME, detail, Outcome.NOT_FIXED)
            return
        if baseline.green:
            yield self._finish(StopReason.NOTHING_TO_FIX, "the test suite passes", Outcome.NOTHING_TO_FIX)
            return
        failures = classify_report(baseline, self.ws.root, python=self.python)
        self.state.failures = failures
        self.state.current_failures = failures
        self.journal.append("classified", failures=[f.to_json() for f in failures])
        blocking = blocking_kind(failures, self.settings.retry_kinds)
        if blocking is not None:
            detail = _blocking_detail(blocking, failures)
            yield self._finish(StopReason.UNRECOVERABLE, detail, Outcome.UNRECOVERABLE)
            return
        self._set_baseline(baseline)
        if self.settings.confirm_runs:
            yield LoopEvent("phase", f"re-running {len(self.state.failing)} failing test(s) to spot flaky ones")
            yield from self._confirm_failures()
        if not self.state.failing:
            detail = f"every failing test is flaky: {', '.join(self.state.flaky)}"
            yield self._finish(StopReason.UNRECOVERABLE, detail, Outcome.UNRECOVERABLE)
            return
        yield from self._loop()
        yield from self._maybe_apply(apply, confirm)

    def _set_baseline(self, baseline: TestReport) -> None:
        failing = baseline.failing_ids
        if not failing:  # only an exit code is known (no plugin, no JUnit XML): the suite is the unit
            failing = tuple(f.test_id for f in self.state.failures) or (SESSION_ID,)
        self.state.baseline_failing = failing
        self.state.baseline_passing = baseline.passed_ids
        self.state.failing = failing
        self.state.results = {r.test_id: r for r in baseline.failing}
        # Files the runner collected tests from are tests whatever test_globs say (types.TestFiles).
        self.test_files = self.test_files.with_collected(baseline)
        if self.test_files.beyond_globs:
            self.journal.append("test_files", added=list(self.test_files.beyond_globs))

    def _confirm_failures(self) -> Iterator[LoopEvent]:
        flaky: Set[str] = set()
        for _ in range(self.settings.confirm_runs):
            again = self.suite.run(self.ws.root, self.state.failing)
            if again.timed_out or again.source == "exit_code":
                break
            flaky |= {t for t in self.state.failing if t in again.passed_ids}
        if flaky:
            self.state.flaky = tuple(sorted(flaky))
            self.state.failing = tuple(t for t in self.state.failing if t not in flaky)
            self.journal.append("flaky", tests=self.state.flaky)
            yield LoopEvent("note", f"flaky, left alone: {', '.join(self.state.flaky)}")

    def _loop(self) -> Iterator[LoopEvent]:
        attempt = AttemptRunner(self)
        while True:
            verdict = self._should_stop()
            if verdict is not None:
                reason, detail = verdict
                if reason is StopReason.STAGNATION and self._escalate("stagnation"):
                    yield LoopEvent("note", f"{detail}; escalating to {self.current_model}")
                    continue
                yield self._finish(reason, detail, self._outcome(reason))
                return
            if self.state.model_index >= len(self.state.chain):
                yield self._finish(*self._chain_exhausted())
                return
            if self._should_downgrade():
                self._escalate("downgrade")
                self.downgraded = True
                yield LoopEvent("note", f"{self.settings.downgrade_at:.0%} of the budget spent; stepping down to {self.current_model}")
            number = len(self.state.history) + 1
            yield LoopEvent("phase", f"iteration {number}: asking {self.current_model}", {"iteration": number})
            iteration = attempt.run(number)
            self.state.history += (iteration,)
            yield LoopEvent("iteration", iteration.reason, iteration=iteration)

    def _should_stop(self) -> Optional[Tuple[StopReason, str]]:
        if self.state.failing and self.forced_stop is not None:
            return self.forced_stop
        return stop.check(
            self.state.history,
            limits=self.limits,
            remaining_failing=len(self.state.failing),
            baseline_failing=len(self.state.baseline_failing),
            elapsed=self.clock() - self.started,
        )

    # -- chain --------------------------------------------------------------

    def _should_downgrade(self) -> bool:
        """True once the spent share of the token or cost budget reaches ``downgrade_at``.

        Steps down only to a next *model*; the offline engine stays the last resort.
        """
        chain, index = self.state.chain, self.state.model_index
        if self.downgraded or index + 1 >= len(chain) or chain[index + 1] == "builtin":
            return False
        spent = stop.total_usage(self.state.history)
        share = max(spent.tokens / self.settings.max_tokens,
                    stop.known_cost(self.state.history) / self.settings.max_cost if self.settings.max_cost else 0.0)
        return share >= self.settings.downgrade_at

    @property
    def current_model(self) -> str:
        chain = self.state.chain
        return chain[self.state.model_index] if self.state.model_index < len(chain) else "(none)"

    def proposer(self) -> object:
        name = self.current_model
        if name not in self.proposers:
            def build() -> Proposer:
                if name in self.given:
                    return self.given[name]
                return build_proposer(name, self.settings, self.ws.root, self.suite, self.journal,
                                      self.test_files)

            self.proposers[name] = ReplayProposer(name, self.replay, build)
        return self.proposers[name]

    def _escalate(self, why: str) -> bool:
        """Move to the next model of the chain; False when there is none."""
        if self.state.model_index + 1 >= len(self.state.chain):
            return False
        self.journal.append("escalate", frm=self.current_model, why=why)
        self.state.model_index += 1
        return True

    def drop_current(self, why: str) -> None:
        """Leave the current model for good (unrecoverable for it) and go on with the next."""
        self.state.dropped.append(f"{self.current_model}: {why}")
        self.journal.append("model_dropped", model=self.current_model, why=why)
        self.state.model_index += 1

    def next_model(self, why: str) -> None:
        self.journal.append("escalate", frm=self.current_model, why=why)
        self.state.model_index += 1

    def _chain_exhausted(self) -> Tuple[StopReason, str, Outcome]:
        detail = "no usable model left in the chain"
        last = self.state.history[-1] if self.state.history else None
        if self.state.dropped:
            detail += " (" + "; ".join(self.state.dropped) + ")"
        elif last is not None and last.decision is Decision.NO_CANDIDATE and self.state.chain[-1:] == ["builtin"] \
                and last.reason.startswith("builtin failed: "):
            detail = "nothing left to try: " + last.reason[len("builtin failed: "):]  # the offline engine is done
        elif last is not None and last.decision is Decision.NO_CANDIDATE:
            detail += f"; last: {last.reason}"
        tried = [it for it in self.state.history if it.decision is not Decision.NO_CANDIDATE]
        if self.state.dropped and not tried and len(self.state.dropped) == len(self.state.chain):
            return StopReason.NO_MODEL_LEFT, detail, Outcome.UNRECOVERABLE
        return StopReason.NO_MODEL_LEFT, detail, self._outcome(StopReason.NO_MODEL_LEFT)

    # -- ending -------------------------------------------------------------

    def _outcome(self, reason: StopReason) -> Outcome:
        if not self.state.failing:
            return Outcome.FIXED
        if len(self.state.failing) < len(self.state.baseline_failing) - len(self.state.flaky):
            return Outcome.PARTIALLY_FIXED
        return Outcome.NOT_FIXED

    def _finish(self, reason: StopReason, detail: str, outcome: Outcome) -> LoopEvent:
        patch = self.ws.diff() or None
        fixed = tuple(t for t in self.state.baseline_failing if t not in self.state.failing and t not in self.state.flaky)
        kinds: Dict[str, int] = {}
        for failure in self.state.failures:
            kinds[failure.kind.value] = kinds.get(failure.kind.value, 0) + 1
        for _ in self.state.flaky:
            kinds[FailureKind.FLAKY.value] = kinds.get(FailureKind.FLAKY.value, 0) + 1
            kinds[FailureKind.LOGIC.value] = max(kinds.get(FailureKind.LOGIC.value, 1) - 1, 0)
        notes = guard_notes(self.settings.allow_test_edits, self.state.history)
        notes += tuple(f"dropped {d}" for d in self.state.dropped)
        result = RunResult(
            run_id=self.run_id,
            outcome=outcome,
            stop_reason=reason,
            stop_detail=detail,
            failure_kinds={k: v for k, v in kinds.items() if v},
            failures=self.state.failures,
            iterations=self.state.history,
            patch=patch,
            run_dir=str(self.journal.run_dir),
            fixed_tests=fixed,
            still_failing=self.state.failing,
            flaky_tests=self.state.flaky,
            notes=notes,
            seconds=self.clock() - self.started,
        )
        # What leaves the run (screen, --json, CI summary, pull request body) is redacted like
        # the journal; --apply writes the patch as the workspace made it.
        self.raw_patch = patch
        result = redact_record(result, self.redact)
        if patch:
            self.journal.write_text("fix.patch", patch)
        self.journal.write_json("summary.json", result.to_json())
        self.journal.append("stopped", outcome=outcome.value, stop_reason=reason.value, detail=detail)
        self.result = result
        return LoopEvent("stopped", detail, result=result)

    def _maybe_apply(self, apply: bool, confirm: Optional[Confirm]) -> Iterator[LoopEvent]:
        result = self.result
        if result is None or not apply or not result.patch or result.outcome not in (Outcome.FIXED, Outcome.PARTIALLY_FIXED):
            return
        if confirm is not None and not confirm(result.patch):
            yield LoopEvent("note", "not applied: declined; the patch is in " + str(Path(result.run_dir) / "fix.patch"))
            return
        key = f"{self.run_id}:apply"
        patch = self.raw_patch or result.patch
        self.journal.intent("apply", key, files=_patch_files(patch))
        try:
            written = apply_to_user_tree(self.project, patch, self.ws.start)
        except ProjectError as err:  # a touched file changed during the run: nothing was written
            saved = Path(result.run_dir) / "fix.patch"
            raise ProjectError(f"{err.message} (run {self.run_id}, outcome {result.outcome.value})",
                               hint=f"the patch is kept as {saved}; review it, then `git apply {saved}`") from err
        self.journal.done("apply", key, files=written)
        applied = replace(result, applied=True)
        self.journal.write_json("summary.json", applied.to_json())
        yield LoopEvent("stopped", f"applied to {', '.join(written)}", result=applied)


def _patch_files(patch: str) -> List[str]:
    return [line[6:] for line in patch.splitlines() if line.startswith("+++ b/")]


def _report_summary(report: TestReport) -> Dict[str, object]:
    return {
        "exit_code": report.exit_code,
        "source": report.source,
        "timed_out": report.timed_out,
        "seconds": round(report.seconds, 3),
        "failing": list(report.failing_ids),
        "passed": len(report.passed_ids),
        "output_tail": report.output[-2000:],
    }


def _describe(report: TestReport) -> str:
    if report.timed_out:
        return f"the test run was killed after {report.seconds:.0f} s"
    return f"{len(report.passed_ids)} passed, {len(report.failing_ids)} failing (exit {report.exit_code})"


def _blocking_detail(kind: FailureKind, failures: Sequence[Failure]) -> str:
    first = next(f for f in failures if f.kind is kind)
    where = f" at {first.location}" if first.location else ""
    hint = f"; {first.hint}" if first.hint else ""
    return f"{kind.value} failure{where}: {first.message}{hint}"

