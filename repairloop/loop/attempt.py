"""One iteration of the loop (part of the loop layer): propose, guard, apply, test, decide.

``run_attempt`` is a function of values: what every attempt of a run uses
(``AttemptSetup``), what this one starts from (``AttemptInput``), and it
returns an ``AttemptOutcome`` that the session applies to its state. The
iteration is stateless towards the model: the context is rebuilt from the
current workspace, the latest failure and the last candidate. Within the
iteration a structural error (no patch, does not apply, guard, syntax) goes
back once to the same model with the concrete error (DESIGN.md, "The loop").
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Dict, FrozenSet, Mapping, Optional, Tuple

from repairloop.context import build_context, group_failures
from repairloop.errors import BudgetExhausted, PatchError, ProposerError, UnrecoverableModelError
from repairloop.journal import CandidateRejectedEvent, IterationEvent, Journal, ProposalErrorEvent, ProposalEvent, Shown
from repairloop.loop import stop
from repairloop.loop.describe import report_summary
from repairloop.loop.stop import Refusal
from repairloop.loop.validation import Checked, ValidationSetup, validate
from repairloop.patch import AppliedPatch, apply_answer, change_signature, check_guards, check_syntax
from repairloop.patch.compensate import assertion_names, compensation_flags
from repairloop.patch.guards import Screened
from repairloop.patch.overfit import check_hardcoded, overfitting_flags
from repairloop.patch.testliterals import assertion_literals, failing_inputs
from repairloop.propose.prompts import render_context
from repairloop.redact import redact_context, redact_feedback
from repairloop.types import (
    BudgetLeft,
    ChainMove,
    Decision,
    Failure,
    Feedback,
    Flag,
    FlagKind,
    Iteration,
    LastAttempt,
    Proposal,
    ProposalRequest,
    Proposer,
    RepairContext,
    TestFiles,
    TestReport,
    TestResult,
    Usage,
)


@dataclass(frozen=True)
class AttemptSetup:
    """What every attempt of a run uses, built once by the session.

    ``redact`` masks secrets in what a model is shown; ``count_tokens`` counts
    prompt tokens.
    """

    validation: ValidationSetup
    fuzzy_threshold: float  # 0..1
    similarity_threshold: float  # 0..1
    context_tokens: int
    count_tokens: Callable[[str], int]
    redact: Callable[[str], str]

    @property
    def journal(self) -> Journal:
        return self.validation.journal


@dataclass(frozen=True)
class AttemptInput:
    """Where this attempt starts: the session's state, as values.

    ``failures`` are the classified failures of the tests failing now;
    ``earlier`` the change signatures of every earlier candidate; ``budget``
    what the run may still spend.
    """

    number: int
    model: str
    proposer: Proposer
    failing: Tuple[str, ...]
    failures: Tuple[Failure, ...]
    results: Mapping[str, TestResult]
    flaky: Tuple[str, ...]
    last_attempt: Optional[LastAttempt]
    earlier: Tuple[str, ...]
    budget: BudgetLeft


@dataclass(frozen=True)
class AttemptOutcome:
    """What the attempt did, for the session to apply to its state.

    ``checked`` is set when the candidate was tested (kept or reverted);
    ``last_attempt`` is the candidate to show in the next prompt (None:
    unchanged); ``signature`` is the candidate's change signature (None when
    nothing applied); ``move`` and ``why`` say what the chain does next;
    ``refused`` is a budget gate that refused the call.
    """

    iteration: Iteration
    checked: Optional[Checked] = None
    applied: Optional[AppliedPatch] = None  # the candidate as the guards approved it, when it was tested
    last_attempt: Optional[LastAttempt] = None
    signature: Optional[str] = None
    move: ChainMove = ChainMove.STAY
    why: str = ""
    refused: Optional[Refusal] = None
    degraded: str = ""  # why the offline engine's fault localisation was weak ("" when it was not)


@dataclass(frozen=True)
class _Proposed:
    """The propose-and-apply step: the answer, the applied candidate (None when there is none), and costs."""

    proposal: Optional[Proposal]
    applied: Optional[AppliedPatch]
    usage: Usage
    attempts: int
    candidates: int
    error: str = ""
    flags: Tuple[Flag, ...] = ()
    move: ChainMove = ChainMove.STAY
    why: str = ""
    refused: Optional[Refusal] = None
    notes: Optional[Mapping[str, Any]] = None  # the proposer's notes (of its answer or of its error)

    @property
    def degraded(self) -> str:
        """The offline engine's note when its fault localisation fell back to the traceback, else ""."""
        notes = self.notes or {}
        return str(notes.get("localisation_note") or "") if notes.get("localisation_method") == "traceback" else ""


def run_attempt(setup: AttemptSetup, given: AttemptInput, clock: Callable[[], float]) -> AttemptOutcome:
    """One iteration: build the context, ask the proposer, guard and apply, test, keep or revert.

    ``clock`` gives monotonic seconds. Never raises for model-side or patch
    errors: they become the iteration's decision and reason.
    """
    began = clock()
    context = attempt_context(setup, given)
    proposed = _propose_and_apply(setup, given, context)
    base = Iteration(given.number, given.proposer.engine, given.model, proposed.usage, Decision.NO_CANDIDATE, "",
                     attempts=proposed.attempts, flags=proposed.flags, candidates=proposed.candidates,
                     seconds_model=proposed.usage.seconds, tests_failed=len(given.failing))
    if proposed.applied is None:
        decision = Decision.NO_CANDIDATE if proposed.proposal is None else Decision.REJECTED
        it = replace(base, decision=decision, reason=proposed.error, seconds_total=clock() - began)
        _record(setup, it, context, proposed.proposal, None)
        return AttemptOutcome(it, move=proposed.move, why=proposed.why, refused=proposed.refused,
                              degraded=proposed.degraded)
    diff = proposed.applied.diff()
    signature = change_signature(diff)
    likeness = stop.judge_candidate(signature, given.earlier, setup.similarity_threshold)
    if likeness.label is Decision.DUPLICATE:
        it = replace(base, decision=Decision.DUPLICATE, reason="the same patch as an earlier candidate; not re-tested",
                     diff=diff, similarity_to_previous=likeness.previous, similarity_max=1.0, seconds_total=clock() - began)
        _record(setup, it, context, proposed.proposal, None)
        return AttemptOutcome(it, signature=signature, degraded=proposed.degraded)
    checked = validate(setup.validation, proposed.applied, given.failing, given.flaky,
                       prefilter=not (proposed.proposal is not None and proposed.proposal.validated))
    decision = checked.decision
    if decision is Decision.REVERTED and not checked.fixed and likeness.label is Decision.STAGNANT:
        decision = Decision.STAGNANT
    it = replace(base, decision=decision, reason=checked.reason, diff=diff, similarity_to_previous=likeness.previous,
                 similarity_max=likeness.highest, tests_failed=len(checked.failing), fixed=checked.fixed,
                 broke=checked.broke, seconds_tests=checked.seconds, seconds_total=clock() - began)
    _record(setup, it, context, proposed.proposal, checked.report)
    last = LastAttempt(diff=diff, decision=checked.decision, reason=checked.reason, fixed=checked.fixed, broke=checked.broke)
    return AttemptOutcome(it, checked=checked, applied=proposed.applied, last_attempt=last, signature=signature,
                          degraded=proposed.degraded)


def attempt_context(setup: AttemptSetup, given: AttemptInput) -> RepairContext:
    """The prompt's material: the largest group of failures with one root cause, and the rest by name."""
    test_files = setup.validation.test_files
    current = [f for f in given.failures if f.test_id in given.failing]
    groups = group_failures(current, test_files) if current else []
    group = groups[0] if groups else tuple(current)
    in_group = {f.test_id for f in group}
    return build_context(
        setup.validation.workspace.root,
        group,
        given.results,
        test_files=test_files,
        other_failing=[t for t in given.failing if t not in in_group],
        last_attempt=given.last_attempt,
        token_budget=setup.context_tokens,
        count_tokens=setup.count_tokens,
        render=render_context,
    )


def _propose_and_apply(setup: AttemptSetup, given: AttemptInput, context: RepairContext) -> _Proposed:
    """Ask for a candidate and apply it (guards, syntax); one structural retry in the same thread."""
    journal, root = setup.journal, setup.validation.workspace.root
    failing = tuple(dict.fromkeys((*context.failing_tests, *given.failing)))
    literals, compared = assertion_literals(root, failing), assertion_names(root, context.failing_tests)
    if given.proposer.engine == "llm":  # secrets stay home: redact what a model is shown
        context = redact_context(context, setup.redact)
    usage, attempts, candidates = Usage(), 0, 0
    feedback: Optional[Feedback] = None
    proposal: Optional[Proposal] = None
    for round_ in range(2):  # the answer, and one structural retry in the same thread
        request = ProposalRequest(context=context, budget=given.budget, feedback=feedback, iteration=given.number)
        try:
            proposal = given.proposer.propose(request)
        except ProposerError as err:
            notes = getattr(err, "notes", None)
            _journal_error(journal, given, round_, err, notes)
            move, why, reason, refused = model_failed(given.model, err)
            return _Proposed(proposal, None, usage + err.usage, attempts + max(err.attempts, 1),
                             candidates + _candidates_in(notes, default=0), reason, move=move, why=why, refused=refused,
                             notes=notes)
        # Journalled before validation, so a resumed run never asks for this answer again.
        journal.record(ProposalEvent(iteration=given.number, round=round_, model=given.model, engine=proposal.engine,
                                     answer=proposal.answer, usage=proposal.usage, notes=proposal.notes))
        usage, attempts = usage + proposal.usage, attempts + max(proposal.usage.calls, 1)
        candidates += _candidates_in(proposal.notes, default=1)
        try:
            applied = apply_answer(proposal.answer, root, fuzzy_threshold=setup.fuzzy_threshold, shown=context.slices)
            screened = check_guards(applied, root, setup.validation.policy)
            check_syntax(screened.applied)  # scratch files dropped
            check_hardcoded(screened.applied, literals, setup.validation.test_files, failing_inputs(failing))
        except PatchError as err:
            error = err.message + (f" ({err.hint})" if err.hint else "")
            journal.record(CandidateRejectedEvent(iteration=given.number, model=given.model, answer=proposal.answer,
                                                  error=error))
            if feedback is not None or proposal.engine != "llm":
                return _Proposed(proposal, None, usage, attempts, candidates, f"rejected: {error}", notes=proposal.notes)
            feedback = redact_feedback(Feedback(answer=proposal.answer, error=error), setup.redact)
            continue
        flags = _guard_flags(screened, literals, setup.validation.test_files, compared)
        return _Proposed(proposal, screened.applied, usage, attempts, candidates, flags=flags, notes=proposal.notes)
    return _Proposed(proposal, None, usage, attempts, candidates, "rejected")


def model_failed(model: str, err: ProposerError) -> Tuple[ChainMove, str, str, Optional[Refusal]]:
    """DESIGN.md's model error table for one error: (chain move, why, the iteration's reason, budget refusal).

    A refused budget gate stops the run (the stop policy turns the refusal
    into its budget reason); an unrecoverable error drops the model for the
    run; anything else (model error, transient failure after retries, the
    offline engine exhausted) moves on to the next link.
    """
    if isinstance(err, BudgetExhausted):
        return ChainMove.STAY, "", f"not sent: {err.message}", Refusal(err.budget, err.message)
    if isinstance(err, UnrecoverableModelError):
        why = f"{err.message} ({err.hint})" if err.hint else err.message  # the hint names the fix (a key, a name)
        return ChainMove.DROP, why, f"{model} dropped: {why}", None
    return ChainMove.NEXT, err.message, f"{model} failed: {err.message}", None


def _guard_flags(screened: Screened, literals: FrozenSet[str], test_files: TestFiles,
                 compared: FrozenSet[str]) -> Tuple[Flag, ...]:
    """Flags of an accepted candidate: test edits (allowed), dropped scratch files, overfitting, compensation."""
    flags = [Flag(FlagKind.TEST_EDIT, path) for path in screened.test_edits]
    flags += [Flag(FlagKind.DROPPED_SCRATCH, path) for path in screened.dropped]
    flags += compensation_flags(screened.applied, compared, test_files)
    return (*flags, *overfitting_flags(screened.applied, literals, test_files))


def _journal_error(journal: Journal, given: AttemptInput, round_: int, err: ProposerError,
                   notes: Optional[Dict[str, Any]]) -> None:
    journal.record(ProposalErrorEvent(iteration=given.number, round=round_, model=given.model,
                                      error_class=type(err).__name__, message=err.message, usage=err.usage,
                                      attempts=err.attempts, budget=getattr(err, "budget", None), notes=notes))


def _candidates_in(notes: Optional[Dict[str, Any]], default: int) -> int:
    """Candidates behind one answer: the offline engine reports how many it tried."""
    counts = (notes or {}).get("counts") or {}
    return int(counts.get("tried", default))


def _record(setup: AttemptSetup, it: Iteration, context: RepairContext, proposal: Optional[Proposal],
            report: Optional[TestReport]) -> None:
    shown = Shown(
        failing_tests=context.failing_tests,
        message=context.message[:4000],
        traceback=context.traceback[:4000],
        slices=tuple(f"{c.path}:{c.start_line}-{c.end_line} {c.name}" for c in context.slices),
        tokens=context.tokens,
        trimmed=context.trimmed,
        last_attempt=context.last_attempt.reason if context.last_attempt else None,
    )
    tests = None if report is None else report_summary(report)
    setup.journal.record(IterationEvent(iteration=it, shown=shown, answer=proposal.answer if proposal else None,
                                        engine_notes=proposal.notes if proposal else None, tests=tests))
