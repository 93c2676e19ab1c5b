"""One attempt's candidate (part of the loop layer): ask the proposer, apply the answer, screen it.

``propose_and_apply`` asks for a candidate and applies it to the workspace's
files as text (guards, syntax, hard-coded answers), with one structural retry
in the same thread (DESIGN.md, "The loop"); ``model_failed`` is DESIGN.md's
model error table. Nothing is written to the workspace here (``validation`` does).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, FrozenSet, Optional, Tuple, Union

from repairloop.errors import (
    BudgetExhausted,
    EngineExhausted,
    PatchError,
    ProposerError,
    UnrecoverableModelError,
)
from repairloop.journal import CandidateRejectedEvent, Journal, ProposalErrorEvent, ProposalEvent
from repairloop.loop.inputs import AttemptInput, AttemptSetup
from repairloop.loop.stop import Refusal
from repairloop.patch import AppliedPatch, apply_answer, check_guards, check_syntax
from repairloop.patch.compensate import assertion_names, compensation_flags
from repairloop.patch.dropped import deletion_flags, dropped_input_flags
from repairloop.patch.guards import Screened
from repairloop.patch.overfit import check_hardcoded, overfitting_flags
from repairloop.patch.testliterals import assertion_literals, failing_inputs
from repairloop.redact import redact_context, redact_feedback
from repairloop.types import (
    Budget,
    ChainMove,
    Feedback,
    Flag,
    FlagKind,
    Proposal,
    ProposalRequest,
    RepairContext,
    TestFiles,
    Usage,
)


@dataclass(frozen=True)
class Proposed:
    """The propose-and-apply step: the answer, the applied candidate (None when there is none), and
    costs."""

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
    degraded: str = ""  # the proposer's word that its fault localisation was weak


@dataclass
class _Asked:
    """What the rounds so far cost."""

    usage: Usage = field(default_factory=Usage)
    attempts: int = 0
    candidates: int = 0


def _targeted_run(setup: AttemptSetup, failing: Tuple[str, ...]) -> Tuple[str, ...]:
    """What a proposer's own run of the failing tests runs (``ProposalRequest.targeted_run``)."""
    ids = setup.validation.targeted_ids(failing)
    return ids if set(ids) != set(failing) else ()


def propose_and_apply(setup: AttemptSetup, given: AttemptInput, context: RepairContext) -> Proposed:
    """Ask for a candidate and apply it (guards, syntax); one structural retry in the same
    thread."""
    root = setup.validation.workspace.root
    failing = tuple(dict.fromkeys((*context.failing_tests, *given.failing)))
    screen = _Screen(setup, given, failing, context)
    if given.proposer.engine == "llm":  # secrets stay home: redact what a model is shown
        context = redact_context(context, setup.redact)
    asked = _Asked()
    feedback: Optional[Feedback] = None
    proposal: Optional[Proposal] = None
    for round_ in range(2):  # the answer, and one structural retry in the same thread
        request = ProposalRequest(
            context=context,
            budget=given.budget,
            feedback=feedback,
            iteration=given.number,
            localisation=given.localisation,
            targeted_run=_targeted_run(setup, failing),
        )
        answer = _ask(setup.journal, given, request, round_, asked)
        if not isinstance(answer, Proposal):
            return answer
        proposal = answer
        result = screen(proposal, root, asked)
        if isinstance(result, Proposed):
            return result
        if feedback is not None or proposal.engine != "llm":
            return Proposed(
                proposal,
                None,
                asked.usage,
                asked.attempts,
                asked.candidates,
                f"rejected: {result}",
                degraded=proposal.degraded,
            )
        feedback = redact_feedback(Feedback(answer=proposal.answer, error=result), setup.redact)
    return Proposed(proposal, None, asked.usage, asked.attempts, asked.candidates, "rejected")


def _ask(
    journal: Journal, given: AttemptInput, request: ProposalRequest, round_: int, asked: _Asked
) -> Union[Proposal, Proposed]:
    """One call of the proposer, journalled (an answer before validation, so a resumed run never
    asks again); a model-side error becomes the attempt's ending (``Proposed``)."""
    try:
        proposal = given.proposer.propose(request)
    except ProposerError as err:
        notes = getattr(err, "notes", None)
        _journal_error(journal, given, round_, err, notes)
        move, why, reason, refused = model_failed(given.model, err)
        return Proposed(
            None,
            None,
            asked.usage + err.usage,
            asked.attempts + max(err.attempts, 1),
            asked.candidates + err.candidates,
            reason,
            move=move,
            why=why,
            refused=refused,
            degraded=err.degraded,
        )
    journal.record(
        ProposalEvent(
            iteration=given.number,
            round=round_,
            model=given.model,
            engine=proposal.engine,
            answer=proposal.answer,
            usage=proposal.usage,
            notes=proposal.notes,
            candidates=proposal.candidates,
            degraded=proposal.degraded,
        )
    )
    asked.usage, asked.attempts = (
        asked.usage + proposal.usage,
        asked.attempts + max(proposal.usage.calls, 1),
    )
    asked.candidates += proposal.candidates
    return proposal


class _Screen:
    """Applies an answer to the workspace's files as text and screens it: guards, syntax, hard-coded
    answers."""

    def __init__(
        self,
        setup: AttemptSetup,
        given: AttemptInput,
        failing: Tuple[str, ...],
        context: RepairContext,
    ) -> None:
        root = setup.validation.workspace.root
        self.setup, self.given, self.failing, self.shown = setup, given, failing, context.slices
        self.literals, self.compared = (
            assertion_literals(root, failing),
            assertion_names(root, context.failing_tests),
        )

    def __call__(self, proposal: Proposal, root: Path, asked: _Asked) -> Union[Proposed, str]:
        """The candidate as the guards approved it (``Proposed``), or the structural error (a
        string)."""
        setup = self.setup
        try:
            if proposal.cut_off:
                raise PatchError(
                    "the answer was cut off at the model's output limit (finish_reason "
                    f"{proposal.notes.get('finish_reason')!r}), so nothing of it was applied",
                    hint="answer again with a shorter edit: only the lines that change, as "
                    "SEARCH/REPLACE blocks or a unified diff, with no explanation",
                )
            applied = apply_answer(
                proposal.answer,
                root,
                fuzzy_threshold=setup.fuzzy_threshold,
                shown=self.shown,
                is_test=setup.validation.test_files.is_test,
            )
            screened = check_guards(applied, root, setup.validation.policy)
            check_syntax(screened.applied)  # scratch files dropped
            check_hardcoded(
                screened.applied,
                self.literals,
                setup.validation.test_files,
                failing_inputs(self.failing),
            )
        except PatchError as err:
            error = err.message + (f" ({err.hint})" if err.hint else "")
            setup.journal.record(
                CandidateRejectedEvent(
                    iteration=self.given.number,
                    model=self.given.model,
                    answer=proposal.answer,
                    error=error,
                )
            )
            return error
        flags = _guard_flags(screened, self.literals, setup.validation.test_files, self.compared)
        return Proposed(
            proposal,
            screened.applied,
            asked.usage,
            asked.attempts,
            asked.candidates,
            flags=flags,
            degraded=proposal.degraded,
        )


def model_failed(model: str, err: ProposerError) -> Tuple[ChainMove, str, str, Optional[Refusal]]:
    """DESIGN.md's model error table for one error: (chain move, why, the iteration's reason, budget
    refusal).

    A refused budget gate stops the run (the stop policy turns the refusal
    into its budget reason), and so does the offline engine's search stopped
    by the run's time budget; an unrecoverable error drops the model for the
    run; anything else (model error, transient failure after retries, the
    offline engine exhausted) moves on to the next link.
    """
    if isinstance(err, BudgetExhausted):
        return ChainMove.STAY, "", f"not sent: {err.message}", Refusal(err.budget, err.message)
    if isinstance(err, EngineExhausted) and err.out_of_time:
        spent = "the run's time budget (--timeout) ran out during the offline engine's search"
        return ChainMove.STAY, "", f"{model} failed: {err.message}", Refusal(Budget.SECONDS, spent)
    if isinstance(err, UnrecoverableModelError):
        # the hint names the fix (a key, a name)
        why = f"{err.message} ({err.hint})" if err.hint else err.message
        return ChainMove.DROP, why, f"{model} dropped: {why}", None
    return ChainMove.NEXT, err.message, f"{model} failed: {err.message}", None


def _guard_flags(
    screened: Screened, literals: FrozenSet[str], test_files: TestFiles, compared: FrozenSet[str]
) -> Tuple[Flag, ...]:
    """Flags of an accepted candidate: test edits (allowed), dropped scratch files, capabilities
    on changed lines, compensation, inputs no longer read, code only removed, overfitting."""
    flags = [Flag(FlagKind.TEST_EDIT, path) for path in screened.test_edits]
    flags += [Flag(FlagKind.DROPPED_SCRATCH, path) for path in screened.dropped]
    flags += [Flag(FlagKind.CAPABILITY, str(found)) for found in screened.capabilities]
    flags += compensation_flags(screened.applied, compared, test_files)
    flags += dropped_input_flags(screened.applied, test_files)
    flags += deletion_flags(screened.applied, test_files)
    return (*flags, *overfitting_flags(screened.applied, literals, test_files))


def _journal_error(
    journal: Journal,
    given: AttemptInput,
    round_: int,
    err: ProposerError,
    notes: Optional[Dict[str, Any]],
) -> None:
    journal.record(
        ProposalErrorEvent(
            iteration=given.number,
            round=round_,
            model=given.model,
            error_class=type(err).__name__,
            message=err.message,
            usage=err.usage,
            attempts=err.attempts,
            budget=getattr(err, "budget", None),
            notes=notes,
            candidates=err.candidates,
            degraded=err.degraded,
        )
    )
