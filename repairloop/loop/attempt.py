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
from typing import Callable, Iterable, Optional, Sequence, Tuple, Union

from repairloop.context import build_context, group_failures
from repairloop.journal import IterationEvent, Shown
from repairloop.loop import stop
from repairloop.loop.candidate import Proposed, propose_and_apply
from repairloop.loop.describe import report_summary
from repairloop.loop.inputs import AttemptInput, AttemptSetup
from repairloop.loop.stop import Refusal
from repairloop.loop.validation import Checked, validate
from repairloop.patch import AppliedPatch, change_signature
from repairloop.propose.prompts import render_context
from repairloop.types import (
    ChainMove,
    Decision,
    Failure,
    FailureSnapshot,
    Iteration,
    LastAttempt,
    Proposal,
    RepairContext,
    TestReport,
    TestResult,
    is_project_path,
)


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
    applied: Optional[AppliedPatch] = (
        None  # the candidate as the guards approved it, when it was tested
    )
    last_attempt: Optional[LastAttempt] = None
    signature: Optional[str] = None
    move: ChainMove = ChainMove.STAY
    why: str = ""
    refused: Optional[Refusal] = None
    degraded: str = ""  # why the offline engine's fault localisation was weak ("" when it was not)


def run_attempt(
    setup: AttemptSetup, given: AttemptInput, clock: Callable[[], float]
) -> AttemptOutcome:
    """One iteration: build the context, ask the proposer, guard and apply, test, keep or revert.

    ``clock`` gives monotonic seconds. Never raises for model-side or patch
    errors: they become the iteration's decision and reason.
    """
    began = clock()
    context = attempt_context(setup, given)
    proposed = propose_and_apply(setup, given, context)
    base = Iteration(
        given.number,
        given.proposer.engine,
        given.model,
        proposed.usage,
        Decision.NO_CANDIDATE,
        "",
        attempts=proposed.attempts,
        flags=proposed.flags,
        candidates=proposed.candidates,
        seconds_model=proposed.usage.seconds,
        tests_failed=len(given.failing),
    )
    ended = _Ended(setup, context, proposed, clock, began)
    if proposed.applied is None:
        decision = Decision.NO_CANDIDATE if proposed.proposal is None else Decision.REJECTED
        it = ended.record(replace(base, decision=decision, reason=proposed.error))
        return AttemptOutcome(
            it,
            move=proposed.move,
            why=proposed.why,
            refused=proposed.refused,
            degraded=proposed.degraded,
        )
    diff = proposed.applied.diff()
    signature = change_signature(diff)
    likeness = stop.judge_candidate(signature, given.earlier, setup.similarity_threshold)
    if likeness.label is Decision.DUPLICATE:
        it = ended.record(
            replace(
                base,
                decision=Decision.DUPLICATE,
                diff=diff,
                similarity_max=1.0,
                reason="the same patch as an earlier candidate; not re-tested",
                similarity_to_previous=likeness.previous,
            )
        )
        return AttemptOutcome(it, signature=signature, degraded=proposed.degraded)
    return _tested(ended, given, base, diff, signature, likeness)


def _tested(
    ended: _Ended,
    given: AttemptInput,
    base: Iteration,
    diff: str,
    signature: str,
    likeness: stop.Likeness,
) -> AttemptOutcome:
    """Validate the applied candidate and record the iteration with the verdict."""
    proposed = ended.proposed
    assert proposed.applied is not None  # only an applied candidate is tested
    checked = validate(
        ended.setup.validation,
        proposed.applied,
        given.failing,
        given.flaky,
        prefilter=not (proposed.proposal is not None and proposed.proposal.validated),
        localisation=given.localisation,
    )
    stagnant = (
        checked.decision is Decision.REVERTED
        and not checked.fixed
        and likeness.label is Decision.STAGNANT
    )
    it = ended.record(
        replace(
            base,
            decision=Decision.STAGNANT if stagnant else checked.decision,
            reason=checked.reason,
            diff=diff,
            similarity_to_previous=likeness.previous,
            similarity_max=likeness.highest,
            tests_failed=len(checked.failing),
            fixed=checked.fixed,
            broke=checked.broke,
            seconds_tests=checked.seconds,
        ),
        checked.report,
    )
    group = ended.context.failing_tests
    last = LastAttempt(
        diff=diff,
        decision=checked.decision,
        reason=checked.reason,
        fixed=checked.fixed,
        broke=checked.broke,
        before=snapshots(group, given.failures),
        after=snapshots(group, checked.report.failing if checked.report else ()),
    )
    return AttemptOutcome(
        it,
        checked=checked,
        applied=proposed.applied,
        last_attempt=last,
        signature=signature,
        degraded=proposed.degraded,
    )


def snapshots(
    test_ids: Sequence[str], failed: Iterable[Union[Failure, TestResult]]
) -> Tuple[FailureSnapshot, ...]:
    """The failures of ``test_ids`` among ``failed`` (classified failures, or a run's failing
    results), in brief."""
    wanted = set(test_ids)
    out = []
    for item in failed:
        if item.test_id in wanted:
            message = (
                (item.message or "").strip().splitlines()[0][:300]
                if (item.message or "").strip()
                else ""
            )
            frames = tuple(
                f"{f.path}:{f.line} in {f.function or '?'}"
                for f in item.frames
                if is_project_path(f.path)
            )
            out.append(FailureSnapshot(item.test_id, item.exc_type or "", message, frames[-4:]))
    return tuple(out)


@dataclass(frozen=True)
class _Ended:
    """How an attempt ends, whichever way: its seconds counted and its iteration journalled."""

    setup: AttemptSetup
    context: RepairContext
    proposed: Proposed
    clock: Callable[[], float]
    began: float

    def record(self, it: Iteration, report: Optional[TestReport] = None) -> Iteration:
        it = replace(it, seconds_total=self.clock() - self.began)
        applied = self.proposed.applied
        located = (applied.located, applied.set_aside) if applied else ((), ())
        _record(self.setup, it, self.context, self.proposed.proposal, report, *located)
        return it


def attempt_context(setup: AttemptSetup, given: AttemptInput) -> RepairContext:
    """The prompt's material: the largest group of failures with one root cause, and the rest by
    name."""
    test_files = setup.validation.test_files
    current = [f for f in given.failures if f.test_id in given.failing]
    groups = group_failures(current, test_files, given.localisation) if current else []
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
        localisation=given.localisation,
    )


def _record(
    setup: AttemptSetup,
    it: Iteration,
    context: RepairContext,
    proposal: Optional[Proposal],
    report: Optional[TestReport],
    located: Tuple[str, ...] = (),
    set_aside: Tuple[str, ...] = (),
) -> None:
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
    setup.journal.record(
        IterationEvent(
            iteration=it,
            shown=shown,
            answer=proposal.answer if proposal else None,
            engine_notes=proposal.notes if proposal else None,
            tests=tests,
            located=located,
            set_aside=set_aside,
        )
    )
