"""One iteration of the loop (part of the loop layer): propose, guard, apply, test, decide.

The iteration is stateless towards the model: the context is rebuilt from the
current workspace, the latest failure and the last candidate. Within the
iteration a structural error (no patch, does not apply, guard, syntax) goes
back once to the same model with the concrete error (DESIGN.md, "The loop").
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Dict, FrozenSet, Optional, Sequence, Tuple

from repairloop import stop
from repairloop.classify import classify_report
from repairloop.context import build_context, group_failures
from repairloop.errors import (
    BudgetExhausted,
    EngineExhausted,
    ModelError,
    PatchError,
    ProposerError,
    TransientModelError,
    UnrecoverableModelError,
)
from repairloop.patch import AppliedPatch, GuardPolicy, apply_answer, change_signature, check_guards, check_syntax
from repairloop.patch.guards import Screened
from repairloop.patch.overfit import assertion_literals, overfitting_flags
from repairloop.propose.prompts import render_context
from repairloop.redact import redact_context, redact_feedback
from repairloop.runner import is_pytest_command
from repairloop.types import (
    BudgetLeft,
    Decision,
    Feedback,
    Iteration,
    LastAttempt,
    Proposal,
    ProposalRequest,
    RepairContext,
    StopReason,
    TestReport,
    Usage,
)

if TYPE_CHECKING:  # pragma: no cover
    from repairloop.session import Session

_BUDGET_REASONS = {
    "tokens": StopReason.BUDGET_TOKENS,
    "cost": StopReason.BUDGET_COST,
    "seconds": StopReason.BUDGET_TIME,
}


@dataclass(frozen=True)
class Verdict:
    """What the tests said about one applied candidate."""

    decision: Decision
    reason: str
    fixed: Tuple[str, ...] = ()
    broke: Tuple[str, ...] = ()
    failing: Tuple[str, ...] = ()
    report: Optional[TestReport] = None
    seconds: float = 0.0


class AttemptRunner:
    """Runs iterations for a loop session (``session.Session``)."""

    def __init__(self, session: "Session") -> None:
        self.s = session
        settings = session.settings
        self.policy = GuardPolicy(
            test_files=session.test_files,
            allow_test_edits=settings.allow_test_edits,
            protected_globs=tuple(settings.protected_globs),
            source_dirs=tuple(settings.source_dirs),
            max_files=settings.max_files,
            max_changed_lines=settings.max_changed_lines,
        )
        self.targeted = is_pytest_command(session.suite.command)
        self.flags: Tuple[str, ...] = ()  # guard flags of the current iteration's candidate
        self.literals: FrozenSet[str] = frozenset()  # the failing tests' assertion literals (overfitting)

    # -- one iteration --------------------------------------------------------

    def run(self, number: int) -> Iteration:
        s = self.s
        began = s.clock()
        model, proposer = s.current_model, s.proposer()
        context = self.context()
        self.literals = assertion_literals(s.ws.root, context.failing_tests)
        if getattr(proposer, "engine", "llm") == "llm":  # secrets stay home: redact what a model is shown
            context = redact_context(context, s.redact)
        outcome = self.propose_and_apply(proposer, context, number)
        proposal, applied, usage, attempts, error = outcome
        model_seconds = usage.seconds
        base: Dict[str, Any] = {"number": number, "engine": getattr(proposer, "engine", "llm"), "model": model, "usage": usage,
                    "attempts": attempts, "flags": self.flags, "candidates": self.tried}
        if applied is None:
            decision = Decision.NO_CANDIDATE if proposal is None else Decision.REJECTED
            it = Iteration(decision=decision, reason=error, seconds_model=model_seconds,
                           seconds_total=s.clock() - began, tests_failed=len(s.state.failing), **base)
            self.record(it, context, proposal, None)
            return it
        diff = applied.diff()
        signature = change_signature(diff)
        earlier = [change_signature(it.diff) for it in s.state.history if it.diff]
        sim_prev, sim_max = stop.similarities(signature, earlier)
        if stop.is_repeat(signature, earlier):
            it = Iteration(decision=Decision.DUPLICATE, reason="the same patch as an earlier candidate; not re-tested",
                           diff=diff, similarity_to_previous=sim_prev, similarity_max=1.0,
                           seconds_model=model_seconds, seconds_total=s.clock() - began,
                           tests_failed=len(s.state.failing), **base)
            self.record(it, context, proposal, None)
            return it
        verdict = self.validate(applied)
        decision = verdict.decision
        if decision is Decision.REVERTED and not verdict.fixed and (sim_max or 0.0) >= s.limits.similarity_threshold:
            decision = Decision.STAGNANT
        it = Iteration(decision=decision, reason=verdict.reason, diff=diff, similarity_to_previous=sim_prev,
                       similarity_max=sim_max, tests_failed=len(verdict.failing), fixed=verdict.fixed,
                       broke=verdict.broke, seconds_model=model_seconds, seconds_tests=verdict.seconds,
                       seconds_total=s.clock() - began, **base)
        self.record(it, context, proposal, verdict.report)
        return it

    def context(self) -> RepairContext:
        s = self.s
        current = [f for f in s.state.current_failures if f.test_id in s.state.failing]
        groups = group_failures(current, s.test_files) if current else []
        group = groups[0] if groups else tuple(current)
        others = [t for t in s.state.failing if t not in {f.test_id for f in group}]
        return build_context(
            s.ws.root,
            group,
            s.state.results,
            test_files=s.test_files,
            other_failing=others,
            last_attempt=s.state.last_attempt,
            token_budget=s.settings.context_tokens,
            count_tokens=s.count_tokens,
            render=render_context,
        )

    def budget(self) -> BudgetLeft:
        s = self.s
        spent = stop.total_usage(s.state.history)
        return BudgetLeft(
            tokens=max(s.settings.max_tokens - spent.tokens, 0),
            cost_usd=max(s.settings.max_cost - stop.known_cost(s.state.history), 0.0),
            seconds=max(s.seconds_left(), 0.0),
        )

    def propose_and_apply(
        self, proposer: Any, context: RepairContext, number: int
    ) -> Tuple[Optional[Proposal], Optional[AppliedPatch], Usage, int, str]:
        """(proposal, applied patch or None, usage of every attempt, attempts, error text)."""
        s = self.s
        usage, attempts, feedback = Usage(), 0, None
        self.tried = 0
        proposal: Optional[Proposal] = None
        self.flags = ()
        for round_ in range(2):  # the answer, and one structural retry in the same thread
            request = ProposalRequest(context=context, budget=self.budget(), feedback=feedback, iteration=number)
            try:
                proposal = proposer.propose(request)
            except ProposerError as err:
                self.tried += _candidates_in(getattr(err, "notes", None), default=0)
                self.journal_error(number, round_, err)
                usage, attempts = usage + err.usage, attempts + max(err.attempts, 1)
                return proposal, None, usage, attempts, self.model_failed(err)
            # Journalled before validation, so a resumed run never asks for this answer again.
            s.journal.append("proposal", iteration=number, round=round_, model=s.current_model,
                             engine=proposal.engine, answer=proposal.answer, usage=proposal.usage,
                             notes=proposal.notes)
            usage, attempts = usage + proposal.usage, attempts + max(proposal.usage.calls, 1)
            self.tried += _candidates_in(proposal.notes, default=1)
            try:
                applied = apply_answer(proposal.answer, s.ws.root, fuzzy_threshold=s.settings.fuzzy_threshold)
                screened = check_guards(applied, s.ws.root, self.policy)
                applied = screened.applied  # scratch files dropped
                check_syntax(applied)
                self.flags = self.guard_flags(screened)
                return proposal, applied, usage, attempts, ""
            except PatchError as err:
                error = f"{err.message}" + (f" ({err.hint})" if err.hint else "")
                s.journal.append("candidate_rejected", iteration=number, model=s.current_model,
                                 answer=proposal.answer, error=error)
                if feedback is not None or proposal.engine != "llm":
                    return proposal, None, usage, attempts, f"rejected: {error}"
                feedback = redact_feedback(Feedback(answer=proposal.answer, error=error), s.redact)
        return proposal, None, usage, attempts, "rejected"

    def journal_error(self, number: int, round_: int, err: ProposerError) -> None:
        self.s.journal.append("proposal_error", iteration=number, round=round_, model=self.s.current_model,
                              error_class=type(err).__name__, message=err.message, usage=err.usage,
                              attempts=err.attempts, budget=getattr(err, "budget", None),
                              notes=getattr(err, "notes", None))

    def guard_flags(self, screened: Screened) -> Tuple[str, ...]:
        """Flags of an accepted candidate: test edits (allowed), dropped scratch files, overfitting."""
        flags = [f"test_edit: {path}" for path in screened.test_edits]
        flags += [f"dropped_scratch: {path}" for path in screened.dropped]
        flags += overfitting_flags(screened.applied, self.literals, self.s.test_files)
        return tuple(flags)

    def model_failed(self, err: ProposerError) -> str:
        """Follow DESIGN.md's model error table; returns the iteration's reason."""
        s = self.s
        name = s.current_model
        if isinstance(err, BudgetExhausted):
            s.forced_stop = (_BUDGET_REASONS.get(err.budget, StopReason.BUDGET_TOKENS), err.message)
            return f"not sent: {err.message}"
        if isinstance(err, UnrecoverableModelError):
            why = f"{err.message} ({err.hint})" if err.hint else err.message  # the hint names the fix (a key, a name)
            s.drop_current(why)
            return f"{name} dropped: {why}"
        if isinstance(err, (ModelError, TransientModelError, EngineExhausted)):
            s.next_model(err.message)
            return f"{name} failed: {err.message}"
        s.next_model(err.message)
        return f"{name} failed: {err.message}"

    # -- validation -----------------------------------------------------------

    def validate(self, applied: AppliedPatch) -> Verdict:
        """Apply in the workspace, run the failing tests, then the full suite; keep or revert."""
        s = self.s
        token = s.ws.checkpoint()
        s.ws.write_files({c.path: c.new_text for c in applied.changes})
        verdict = self.judge()
        if verdict.decision is Decision.KEPT:
            s.state.failing = verdict.failing
            s.state.last_attempt = None
            if verdict.report is not None:
                s.state.results.update({r.test_id: r for r in verdict.report.failing})
                s.state.current_failures = classify_report(verdict.report, s.ws.root, python=s.python)
        else:
            s.ws.revert_to(token)
        s.state.last_attempt = LastAttempt(
            diff=applied.diff(), decision=verdict.decision, reason=verdict.reason,
            fixed=verdict.fixed, broke=verdict.broke,
        )
        return verdict

    def judge(self) -> Verdict:
        s = self.s
        failing = s.state.failing
        seconds = 0.0
        if self.targeted:
            first = s.suite.run(s.ws.root, failing)
            seconds += first.seconds
            if first.timed_out:
                return Verdict(Decision.REVERTED, "the failing tests timed out with this candidate", failing=failing, seconds=seconds)
            if not _fixed(failing, first):
                return Verdict(Decision.REVERTED, f"fixed none of the {len(failing)} failing test(s): "
                               + _first_message(first), failing=failing, report=first, seconds=seconds)
        full = s.suite.run(s.ws.root)
        seconds += full.seconds
        if full.timed_out:
            return Verdict(Decision.REVERTED, "the test suite timed out with this candidate", failing=failing, seconds=seconds)
        now_failing = _failing_after(failing, full, s.state.flaky)
        fixed = tuple(t for t in failing if t not in now_failing)
        broke = tuple(t for t in now_failing if t not in failing)
        if fixed and not broke:
            if not now_failing:  # a fix: the final full-suite run must hold up `final_runs` times
                flaky_run, extra = self.repeat_full_suite()
                seconds += extra
                if flaky_run:
                    return Verdict(Decision.REVERTED, f"passed once, then failed on full-suite run {flaky_run} "
                                   f"of {s.settings.final_runs} (a flaky fix)", failing=failing, seconds=seconds)
            reason = f"fixed {len(fixed)} test(s), broke none; {len(now_failing)} still failing"
            return Verdict(Decision.KEPT, reason, fixed, broke, now_failing, full, seconds)
        if broke:
            reason = f"fixed {len(fixed)} but broke {len(broke)}: {', '.join(broke[:5])}"
        else:
            reason = f"fixed none of the {len(failing)} failing test(s): " + _first_message(full)
        return Verdict(Decision.REVERTED, reason, fixed, broke, now_failing, full, seconds)

    def repeat_full_suite(self) -> Tuple[int, float]:
        """Run the full suite ``final_runs - 1`` more times: (first failing run number or 0, seconds)."""
        s = self.s
        seconds = 0.0
        for number in range(2, s.settings.final_runs + 1):
            again = s.suite.run(s.ws.root)
            seconds += again.seconds
            if not again.green:
                return number, seconds
        return 0, seconds

    # -- journal --------------------------------------------------------------

    def record(self, it: Iteration, context: RepairContext, proposal: Optional[Proposal], report: Optional[TestReport]) -> None:
        self.s.journal.append(
            "iteration",
            iteration=it.to_json(),
            shown={
                "failing_tests": list(context.failing_tests),
                "message": context.message[:4000],
                "traceback": context.traceback[:4000],
                "slices": [f"{c.path}:{c.start_line}-{c.end_line} {c.name}" for c in context.slices],
                "tokens": context.tokens,
                "trimmed": list(context.trimmed),
                "last_attempt": context.last_attempt.reason if context.last_attempt else None,
            },
            answer=proposal.answer if proposal else None,
            engine_notes=proposal.notes if proposal else None,
            tests=_summary(report),
        )


def guard_notes(allow_test_edits: bool, history: Sequence[Iteration]) -> Tuple[str, ...]:
    """RunResult notes that must stand out: test edits allowed, and flags of kept candidates."""
    kept = [it for it in history if it.decision is Decision.KEPT]
    notes = []
    if allow_test_edits:
        edited = sorted({f.split(": ", 1)[1] for it in kept for f in it.flags if f.startswith("test_edit: ")})
        notes.append("WARNING: test edits were allowed (--allow-test-edits): a passing suite proves less; "
                     + (f"the patch changes tests: {', '.join(edited)}" if edited else "the patch changes no test"))
    for it in kept:
        notes += [f"WARNING: iteration {it.number}: {f}" for f in it.flags if f.startswith("suspected_overfitting")]
    return tuple(notes)


def _candidates_in(notes: Optional[Dict[str, Any]], default: int) -> int:
    """Candidates behind one answer: the offline engine reports how many it tried."""
    counts = (notes or {}).get("counts") or {}
    return int(counts.get("tried", default))


def _fixed(failing: Sequence[str], report: TestReport) -> bool:
    if report.source == "exit_code":
        return report.green
    if report.exit_code not in (0, 1):
        return False
    return any(t not in report.failing_ids for t in failing)


def _failing_after(failing: Sequence[str], report: TestReport, flaky: Sequence[str]) -> Tuple[str, ...]:
    if report.source == "exit_code":
        return () if report.green else tuple(failing)
    return tuple(t for t in report.failing_ids if t not in flaky)


def _first_message(report: TestReport) -> str:
    for result in report.failing:
        text = f"{result.exc_type or 'failure'}: {result.message}".strip()
        return text.splitlines()[0][:300] if text else ""
    return report.output[-300:].strip()


def _summary(report: Optional[TestReport]) -> Optional[Dict[str, Any]]:
    if report is None:
        return None
    return {
        "exit_code": report.exit_code,
        "failing": list(report.failing_ids),
        "passed": len(report.passed_ids),
        "seconds": round(report.seconds, 3),
        "timed_out": report.timed_out,
    }
