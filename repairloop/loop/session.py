"""One run inside its workspace: the baseline, the flaky check, the iterations and the finish.

``Session.run`` is the generator ``loop.drive`` yields from. One iteration is
``attempt.run_attempt``, a function of values whose outcome only this module applies to the run's
state; ``stop`` decides every ending.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, Dict, Generator, Iterator, Mapping, Optional, Sequence, Tuple

from repairloop.classify import blocking_kind
from repairloop.journal import (
    BaselineEvent,
    ClassifiedEvent,
    EscalateEvent,
    FlakyEvent,
    InterruptedEvent,
    Journal,
    ModelDroppedEvent,
    ProofEvent,
    SandboxEvent,
    TestFilesEvent,
)
from repairloop.loop import behaviour, partials, stop
from repairloop.loop.apply_fix import maybe_apply
from repairloop.loop.attempt import run_attempt
from repairloop.loop.chain import (
    ChainState,
    RecordedAnswer,
    ReplayProposer,
    asking,
    build_proposer,
    token_counter,
)
from repairloop.loop.describe import (
    blocking_detail,
    describe_run,
    ignored_files_notes,
    report_summary,
)
from repairloop.loop.fidelity import classify_baseline
from repairloop.loop.flaky import confirm_failures
from repairloop.loop.inputs import AttemptInput, AttemptSetup
from repairloop.loop.localising import localise_now, suspects_note
from repairloop.loop.proof import prove, union
from repairloop.loop.result import build_result, record_result
from repairloop.loop.state import RunState
from repairloop.loop.stop import Ending, Handover
from repairloop.loop.suite import RunnerFactory, TestSuite, per_test_seconds, with_sandbox
from repairloop.loop.validation import ValidationSetup
from repairloop.patch import GuardPolicy
from repairloop.patch.capabilities import allowed_names
from repairloop.runner import is_pytest_command
from repairloop.settings import Settings
from repairloop.types import (
    BudgetLeft,
    ChainMove,
    Decision,
    Evidence,
    IterationEnded,
    LoopEvent,
    Outcome,
    PhaseStarted,
    Proposer,
    RunNote,
    RunResult,
    RunStopped,
    StopReason,
    TestFiles,
    TestReport,
)
from repairloop.workspace import Workspace

ConfirmApply = Callable[[str], bool]  # shown the final diff, answers whether to apply it
Replay = Mapping[
    Tuple[int, int], RecordedAnswer
]  # recorded answers of a resumed run, by (iteration, round)


class Session:
    """One run inside its workspace; methods are the loop's steps."""

    def __init__(
        self,
        settings: Settings,
        project: Path,
        ws: Workspace,
        journal: Journal,
        environ: Dict[str, str],
        chain: Sequence[str],
        clock: Callable[[], float],
        started: float,
        run_id: str,
        *,
        replay: Optional[Replay] = None,
        given: Optional[Mapping[str, Proposer]] = None,
        runner: RunnerFactory = TestSuite.for_project,
    ) -> None:
        self.settings, self.project, self.ws, self.journal = settings, project, ws, journal
        self.clock, self.started, self.run_id = clock, started, run_id
        # gone after a kill too
        self.suite = runner(settings, project, environ, self.seconds_left, ws.scratch)
        # the proof run keeps the whole per-test timeout (candidates get a short one)
        self.proof_suite = self.suite
        self.state = RunState(ChainState(tuple(chain)))
        self.chain = self.state.chain
        # Which files are tests: the globs now, the files the baseline collected tests from added
        # after it.
        self.test_files = TestFiles(tuple(settings.test_globs))
        self.limits = stop.Limits(
            max_iterations=settings.max_iterations,
            max_tokens=settings.max_tokens,
            max_cost=settings.max_cost,
            timeout=settings.timeout,
            similarity_threshold=settings.similarity_threshold,
            patience=settings.patience,
            downgrade_at=settings.downgrade_at,
        )
        self.count_tokens = token_counter(chain)
        self.replay: Replay = replay or {}
        self.given: Mapping[str, Proposer] = given or {}
        self.proposers: Dict[str, Proposer] = {}
        self.result: Optional[RunResult] = None
        self.setup: Optional[AttemptSetup] = None  # built when the loop starts

    def seconds_left(self) -> float:
        return self.settings.timeout - (self.clock() - self.started)

    # -- phases -------------------------------------------------------------

    def run(self, *, apply: bool, confirm: Optional[ConfirmApply]) -> Iterator[LoopEvent]:
        """The whole run: baseline, classification, flaky check, iterations, finish, --apply."""
        try:
            ending = yield from self._prepare()
            if ending is None:
                ending = yield from self._loop()
            ending = yield from self._prove(ending)
        except KeyboardInterrupt:
            self.state.interrupted = True
            self.journal.record(InterruptedEvent(seconds=self.clock() - self.started))
            verdict = stop.check(self._facts(), self.limits)
            assert isinstance(verdict, Ending)  # an interruption always ends the run
            ending = verdict
        yield self._finish(ending)
        if ending.reason is not StopReason.INTERRUPTED and apply and self.result is not None:
            yield from maybe_apply(
                self.result, self.state.raw_patch, self.ws, self.journal, confirm
            )

    def _prepare(self) -> Generator[LoopEvent, None, Optional[Ending]]:
        sandbox = self.suite.sandbox_status
        self.journal.record(SandboxEvent.of(sandbox))
        yield RunNote(sandbox.describe())  # what ran, always
        for note in ignored_files_notes(self.ws.ignored):
            yield from self._note(note)
        chosen = per_test_seconds(self.settings)[1]
        if chosen and is_pytest_command(self.suite.command):
            yield RunNote(chosen)
        yield PhaseStarted("running the test suite (baseline)")
        baseline = self.suite.run(self.ws.root)
        self.journal.record(BaselineEvent(report=report_summary(baseline)))
        yield RunNote(describe_run(baseline))
        # the run's --timeout, not the suite's
        time_gone = baseline.timed_out and self.seconds_left() <= 1.0
        if time_gone or baseline.green:
            return stop.baseline_ending(
                green=baseline.green, time_gone=time_gone, blocking=None, all_flaky=None
            )
        # the user's world passing them: stop
        failures = classify_baseline(self.suite, self.ws.root, baseline, self.ws)
        self.state.set_failures(failures)
        self.journal.record(ClassifiedEvent(failures=failures))
        blocking = blocking_kind(failures, self.settings.retry_kinds)
        if blocking is not None:
            detail = blocking_detail(blocking, failures)
            return stop.baseline_ending(
                green=False, time_gone=False, blocking=detail, all_flaky=None
            )
        self._set_baseline(baseline)
        self.suite, shortened = self.suite.for_candidates(baseline)
        yield from self._note(f"{chosen}; {shortened}" if chosen and shortened else shortened)
        if self.settings.confirm_runs:
            yield PhaseStarted(
                f"re-running {len(self.state.failing)} failing test(s) to spot flaky ones"
            )
            yield from self._confirm_failures(baseline)
        flaky = ", ".join(self.state.flaky) if not self.state.failing else None
        return stop.baseline_ending(green=False, time_gone=False, blocking=None, all_flaky=flaky)

    def _set_baseline(self, baseline: TestReport) -> None:
        self.state.set_baseline(baseline)
        # Files the runner collected tests from are tests whatever test_globs say (types.TestFiles).
        self.test_files = self.test_files.with_collected(baseline)
        if self.test_files.beyond_globs or self.test_files.doctests:
            self.journal.record(
                TestFilesEvent(
                    self.test_files.beyond_globs, tuple(sorted(self.test_files.doctests))
                )
            )

    def _confirm_failures(self, baseline: TestReport) -> Iterator[LoopEvent]:
        found = confirm_failures(
            self.suite, self.ws.root, self.state.failing, baseline, self.settings.confirm_runs
        )
        flaky = frozenset(f.test_id for f in found.flaky)
        if flaky:
            self.state.set_flaky(flaky)
        self.state.needs_earlier = frozenset(found.needs_earlier)
        self.state.runs_alone = frozenset(found.runs_alone)
        if flaky or found.unstable:
            reasons = tuple(f"{f.test_id}: {f.reason}; see: {f.command}" for f in found.flaky)
            self.journal.record(
                FlakyEvent(tests=self.state.flaky, reasons=reasons, unstable=found.unstable)
            )
        for note in found.console_notes():
            yield RunNote(note)

    def _loop(self) -> Generator[LoopEvent, None, Ending]:
        setup = self.setup = self._attempt_setup()
        while True:
            verdict = stop.check(self._facts(), self.limits)
            if isinstance(verdict, Ending):
                return verdict
            if isinstance(verdict, Handover):
                self._move(ChainMove.NEXT, verdict.reason.value)
                yield RunNote(f"{verdict.detail}; escalating to {self.chain.current}")
                continue
            if not self.chain.stepped_down and stop.should_step_down(self._facts(), self.limits):
                self.chain.stepped_down = True
                self._move(ChainMove.NEXT, "downgrade")
                yield RunNote(
                    f"{self.settings.downgrade_at:.0%} of the budget spent; "
                    f"stepping down to {self.chain.current}"
                )
            yield from self._localise()
            number = len(self.state.history) + 1
            doing = asking(self.chain.current, self.replay.get((number, 0)))
            yield PhaseStarted(f"iteration {number}: {doing}", iteration=number)
            outcome = run_attempt(setup, self._attempt_input(number), self.clock)
            self.state.apply(outcome)
            self._move(outcome.move, outcome.why)
            yield IterationEnded(outcome.iteration)
            yield from self._note(
                outcome.degraded and f"fault localisation degraded: {outcome.degraded}"
            )

    def _localise(self) -> Iterator[LoopEvent]:
        """The fault localisation for the code as it is now (``localising``): before the first
        iteration and after a kept candidate changed the code; none with ``localise = false``."""
        st = self.state
        if not self.settings.localise or st.localised_at == len(st.kept_changes):
            return
        yield PhaseStarted("localising the fault: the test suite with per-test line coverage")
        # The candidates' suite: a test that hung at the baseline hangs here too, and its lines
        # up to the short per-test limit are all the ranking needs.
        found = localise_now(self.suite, self.ws.root, st.failing, self.test_files)
        st.set_localisation(found)
        yield RunNote(suspects_note(found))

    def _prove(self, ending: Ending) -> Generator[LoopEvent, None, Ending]:
        """The proof run of a fix or partial fix (``proof.prove``); the stop policy has the last
        word."""
        st = self.state
        patch = union(st.kept_changes)
        flags = tuple(str(f) for it in st.history if it.decision is Decision.KEPT for f in it.flags)
        plausible = bool(patch.changes) and ending.outcome in (
            Outcome.FIXED,
            Outcome.PARTIALLY_FIXED,
        )
        partial = ending.outcome is Outcome.PARTIALLY_FIXED
        shared = partials.shared_by_left(st.localisation, st.failing) if partial else ""
        st.evidence = Evidence(plausible, flags=flags, partial=partial, shared_function=shared)
        st.raw_patch = (
            self.ws.diff_of({c.path: c.new_text for c in patch.changes}) if patch.changes else None
        )
        if not plausible or self.setup is None:
            return ending
        runs = self.settings.final_runs
        yield PhaseStarted(
            f"proving the patch on a fresh copy of the start state ({runs} full-suite run(s))"
        )
        check = behaviour.checker(st.start_localisation, patch, self.test_files)
        validation = replace(self.setup.validation, suite=self.proof_suite)
        proof = prove(validation, patch, st.fixed_tests, st.baseline_failing, check)
        self.journal.record(ProofEvent(proof=proof))
        st.evidence = replace(st.evidence, proof=proof, flags=st.evidence.flags + proof.flags)
        yield RunNote("proof run: " + ("held" if proof.passed else f"failed: {proof.detail}"))
        return stop.proven(ending, proof.passed, proof.detail)

    def _note(
        self, note: str
    ) -> Iterator[LoopEvent]:  # on the console once, and in the result's notes
        if self.state.add_note(note):
            yield RunNote(note)

    # -- state --------------------------------------------------------------

    def _facts(self) -> stop.Facts:
        return self.state.facts(elapsed=self.clock() - self.started)

    def _move(self, move: ChainMove, why: str) -> None:
        if move is ChainMove.DROP:
            self.journal.record(ModelDroppedEvent(model=self.chain.current, why=why))
            self.chain.drop(why, len(self.state.history))
        elif move is ChainMove.NEXT:
            self.journal.record(EscalateEvent(model=self.chain.current, why=why))
            self.chain.advance(len(self.state.history))

    def _attempt_setup(self) -> AttemptSetup:
        settings = self.settings
        policy = GuardPolicy(
            test_files=self.test_files,
            allow_test_edits=settings.allow_test_edits,
            protected_globs=tuple(settings.protected_globs),
            source_dirs=tuple(settings.source_dirs),
            max_files=settings.max_files,
            max_changed_lines=settings.max_changed_lines,
            allowed_capabilities=allowed_names(settings.allow_capabilities),
        )
        validation = ValidationSetup(
            workspace=self.ws,
            suite=self.suite,
            journal=self.journal,
            policy=policy,
            test_files=self.test_files,
            final_runs=settings.final_runs,
            targeted=is_pytest_command(self.suite.command),
            interpreter=self.suite.interpreter,
            guarded=policy.guards_verdict,
            warm=settings.warm,
            **self.state.order_facts(),
        )
        return AttemptSetup(
            validation=validation,
            fuzzy_threshold=settings.fuzzy_threshold,
            similarity_threshold=settings.similarity_threshold,
            context_tokens=settings.context_tokens,
            count_tokens=self.count_tokens,
            redact=self.journal.redact,
        )

    def _attempt_input(self, number: int) -> AttemptInput:
        st, history = self.state, self.state.history
        spent = stop.spent(history)
        budget = BudgetLeft(
            tokens=max(self.settings.max_tokens - spent.tokens, 0),
            cost_usd=max(self.settings.max_cost - stop.known_cost(history), 0.0),
            seconds=max(self.seconds_left(), 0.0),
        )
        return AttemptInput(
            number=number,
            model=self.chain.current,
            proposer=self._proposer(),
            failing=st.failing,
            failures=st.current_failures,
            results=dict(st.results),
            flaky=st.flaky,
            last_attempt=st.last_attempt,
            earlier=st.signatures,
            budget=budget,
            localisation=st.localisation,
        )

    def _proposer(self) -> Proposer:
        name = self.chain.current
        if name not in self.proposers:

            def build() -> Proposer:
                if name in self.given:
                    return self.given[name]
                return build_proposer(
                    name, self.settings, self.ws.root, self.suite, self.journal, self.test_files
                )

            self.proposers[name] = ReplayProposer(name, dict(self.replay), build)
        return self.proposers[name]

    # -- ending -------------------------------------------------------------

    def _finish(self, ending: Ending) -> LoopEvent:
        if self.setup is not None:
            self.setup.validation.close()  # the warm test process of the iterations
        result = build_result(
            ending,
            self.state,
            run_id=self.run_id,
            run_dir=self.journal.run_dir,
            allow_test_edits=self.settings.allow_test_edits,
            seconds=self.clock() - self.started,
        )
        result = with_sandbox(result, self.suite.sandbox_status)
        record_result(self.journal, result)
        self.result = result
        return RunStopped(result, ending.detail)
