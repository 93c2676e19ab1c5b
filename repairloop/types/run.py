"""A run as it goes and as it ends: iterations, the RunResult, the events the loop yields."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

from repairloop.types.confinement_status import SandboxStatus
from repairloop.types.kinds import Decision, FlagKind, Outcome, StopReason
from repairloop.types.proposals import Usage
from repairloop.types.reports import Failure


@dataclass(frozen=True)
class Flag:
    """A note on an accepted candidate that the user must see; reads as ``kind: detail``."""

    kind: FlagKind
    detail: str

    def __str__(self) -> str:
        return f"{self.kind.value}: {self.detail}"

    @classmethod
    def parse(cls, text: str) -> "Flag":
        """The Flag ``str(flag)`` wrote (journals, reports). Raises ValueError for an unknown
        kind."""
        kind, _, detail = text.partition(": ")
        return cls(FlagKind(kind), detail)


@dataclass(frozen=True)
class Iteration:
    """One turn of the loop, as journalled and as ``run --json`` reports it.

    Seconds are kept to the millisecond, as ``to_json`` writes them, so the
    record ``from_json`` reads back from a journal is the one the loop made.
    The usage's calls are not journalled: read back, a model's attempts count
    as its calls (they differ only for a call a budget gate refused unsent).
    """

    number: int
    engine: str
    model: str
    usage: Usage
    decision: Decision
    reason: str
    diff: str = ""
    similarity_to_previous: Optional[float] = None  # 0..1
    similarity_max: Optional[float] = None  # 0..1, against every earlier candidate
    tests_failed: Optional[int] = None
    fixed: Tuple[str, ...] = ()
    broke: Tuple[str, ...] = ()
    seconds_model: float = 0.0
    seconds_tests: float = 0.0
    seconds_total: float = 0.0
    attempts: int = 1
    candidates: int = (
        1  # candidate patches tried: 1 per model answer; the offline engine tries many
    )
    flags: Tuple[Flag, ...] = ()  # notes on an accepted candidate (patch.guards / patch.overfit)

    def __post_init__(self) -> None:
        for name in ("seconds_model", "seconds_tests", "seconds_total"):
            object.__setattr__(self, name, round(getattr(self, name), 3))  # frozen: set once, here

    def to_json(self) -> Dict[str, Any]:
        return {
            "number": self.number,
            "engine": self.engine,
            "model": self.model,
            "prompt_tokens": self.usage.prompt_tokens,
            "completion_tokens": self.usage.completion_tokens,
            "cost_usd": self.usage.cost_usd,
            "similarity_to_previous": self.similarity_to_previous,
            "similarity_max": self.similarity_max,
            "tests_failed": self.tests_failed,
            "fixed": list(self.fixed),
            "broke": list(self.broke),
            "decision": self.decision.value,
            "reason": self.reason,
            "attempts": self.attempts,
            "candidates": self.candidates,
            "flags": [str(flag) for flag in self.flags],
            "seconds": self._seconds(),
            "diff": self.diff,
        }

    def _seconds(self) -> Dict[str, float]:
        """``model``, ``tests``, ``total``; the offline engine's search (its own test runs included)
        is ``engine`` time, not a model's."""
        proposing = round(self.seconds_model, 3)
        own = (
            {"model": 0.0, "engine": proposing}
            if self.engine == "builtin"
            else {"model": proposing}
        )
        return {**own, "tests": round(self.seconds_tests, 3), "total": round(self.seconds_total, 3)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Iteration":
        """The Iteration ``to_json`` wrote; keys an older journal lacks read as their defaults.

        Raises ValueError for an unknown decision or flag kind, KeyError when
        there is no decision, TypeError for values of the wrong type.
        """
        seconds = data.get("seconds") or {}
        engine, attempts = str(data.get("engine") or ""), int(data.get("attempts") or 1)
        cost = data.get("cost_usd")
        usage = Usage(
            int(data.get("prompt_tokens") or 0),
            int(data.get("completion_tokens") or 0),
            None if cost is None else float(cost),
            float(seconds.get("model") or seconds.get("engine") or 0.0),
            attempts if engine == "llm" else 0,
        )
        return cls(
            number=int(data.get("number") or 0),
            engine=engine,
            model=str(data.get("model") or ""),
            usage=usage,
            decision=Decision(data["decision"]),
            reason=str(data.get("reason") or ""),
            diff=str(data.get("diff") or ""),
            similarity_to_previous=_number(data.get("similarity_to_previous")),
            similarity_max=_number(data.get("similarity_max")),
            tests_failed=None if data.get("tests_failed") is None else int(data["tests_failed"]),
            fixed=tuple(data.get("fixed") or ()),
            broke=tuple(data.get("broke") or ()),
            seconds_model=usage.seconds,
            seconds_tests=float(seconds.get("tests") or 0.0),
            seconds_total=float(seconds.get("total") or 0.0),
            attempts=attempts,
            candidates=int(data.get("candidates") or 1),
            flags=tuple(Flag.parse(f) for f in data.get("flags") or ()),
        )


def _number(value: Any) -> Optional[float]:
    return None if value is None else float(value)


@dataclass(frozen=True)
class Proof:
    """What the proof run of a reported patch showed (``proof.prove``): ``held`` of ``required``
    full-suite runs held on a fresh copy of the start state, ``guards`` passed on the whole patch,
    ``detail`` why not; ``seconds`` of test time; ``flags`` what the behaviour check on its extra
    run found (``loop.behaviour``: ``changes_passing_behaviour: ...``) and ``other_paths`` the
    passing tests that ran the suspicious code and took other paths (recorded, not flagged)."""

    passed: bool
    held: int
    required: int
    guards: bool = True
    detail: str = ""
    seconds: float = 0.0
    flags: Tuple[str, ...] = ()
    other_paths: Tuple[str, ...] = ()

    def to_json(self) -> Dict[str, Any]:
        return {
            "passed": self.passed,
            "held": self.held,
            "required": self.required,
            "guards": self.guards,
            "detail": self.detail,
            "seconds": round(self.seconds, 3),
            "flags": list(self.flags),
            "other_paths": list(self.other_paths),
        }

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Proof":
        return cls(
            bool(data.get("passed")),
            int(data.get("held") or 0),
            int(data.get("required") or 0),
            bool(data.get("guards", True)),
            str(data.get("detail") or ""),
            float(data.get("seconds") or 0.0),
            tuple(str(f) for f in data.get("flags") or ()),
            tuple(str(t) for t in data.get("other_paths") or ()),
        )


@dataclass(frozen=True)
class Evidence:
    """How strong the evidence for a reported patch is (DESIGN.md "The verdict"; README "How a run
    stops").

    ``plausible``: the failing tests passed with the patch in the loop's
    workspace; ``proof``: what its proof run on a fresh copy showed (None:
    nothing to prove); ``flags``: the notes raised on kept candidates.
    ``partial``: the patch is a partial fix (some failing tests still fail), so
    its summary never says the tests or the full suite pass; ``shared_function``
    (``path::function``, "" when none is known) is the most suspicious function the tests a
    partial fix leaves failing all run (``loop.partials``): where their fault most likely is.
    """

    plausible: bool = False
    proof: Optional[Proof] = None
    flags: Tuple[str, ...] = ()
    partial: bool = False
    shared_function: str = ""

    def summary(self) -> str:
        """One line for people: what was checked and what it showed."""
        if not self.plausible:
            return "no patch passes the tests"
        if self.partial:
            return self._partial_summary()
        if self.proof is None:
            return "plausible (the tests pass with the patch); not proven"
        if not self.proof.passed:
            return f"plausible in the workspace, but the proof run failed: {self.proof.detail}"
        flags = (
            f"; {len(self.flags)} flag(s) raised, read them" if self.flags else "; no flags raised"
        )
        return (
            f"plausible and proven: the full suite passed {self.proof.held} of "
            f"{self.proof.required} time(s) "
            f"on a fresh copy with only this patch, guards passed on the whole patch{flags}. "
            "Tests passing is not proof of correctness: review it"
        )

    def _partial_summary(self) -> str:
        what = (
            "a partial fix: some failing tests pass with it, others still fail, none that "
            "passed breaks"
        )
        if self.shared_function:
            what += f" (the tests it leaves failing all run {self.shared_function})"
        if self.proof is None:
            return what + "; not proven"
        if not self.proof.passed:
            return f"{what} in the workspace, but the proof run failed: {self.proof.detail}"
        flags = (
            f"; {len(self.flags)} flag(s) raised, read them" if self.flags else "; no flags raised"
        )
        return (
            f"{what}; proven: {self.proof.held} of {self.proof.required} full-suite run(s) on a "
            f"fresh copy with "
            f"only this patch showed the same, guards passed on the whole patch{flags}. Review it"
        )

    def to_json(self) -> Dict[str, Any]:
        return {
            "plausible": self.plausible,
            "proof": self.proof.to_json() if self.proof else None,
            "flags": list(self.flags),
            "partial": self.partial,
            "shared_function": self.shared_function,
        }

    @classmethod
    def from_json(cls, data: Dict[str, Any]) -> "Evidence":
        proof = data.get("proof")
        return cls(
            bool(data.get("plausible")),
            Proof.from_json(proof) if isinstance(proof, dict) else None,
            tuple(str(f) for f in data.get("flags") or ()),
            bool(data.get("partial")),
            str(data.get("shared_function") or ""),
        )


@dataclass(frozen=True)
class RunResult:
    """The whole run: DESIGN.md's ``run --json`` document is ``to_json()``."""

    run_id: str
    outcome: Outcome
    stop_reason: StopReason
    stop_detail: str
    failure_kinds: Dict[str, int]
    failures: Tuple[Failure, ...]
    iterations: Tuple[Iteration, ...]
    patch: Optional[str]
    run_dir: str
    fixed_tests: Tuple[str, ...] = ()
    still_failing: Tuple[str, ...] = ()
    flaky_tests: Tuple[str, ...] = ()
    applied: bool = False
    notes: Tuple[str, ...] = ()
    seconds: float = 0.0  # wall clock, to the millisecond
    sandbox: Optional[SandboxStatus] = None  # None: a result from before sandboxes existed
    evidence: Evidence = field(default_factory=Evidence)

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", round(self.seconds, 3))  # as the journal keeps it

    @property
    def shared_fault(self) -> str:
        """Where the fault of the tests still failing most likely is ("they all run
        path::function: the fault is likely there"), "" when ``evidence.shared_function`` names
        none; the console and the hook say it alike."""
        shared = self.evidence.shared_function
        if not shared or not self.still_failing:
            return ""
        they = "it runs" if len(self.still_failing) == 1 else "they all run"
        return f"{they} {shared}: the fault is likely there"

    @property
    def totals(self) -> Dict[str, Any]:
        usage = Usage()
        for it in self.iterations:
            usage = usage + it.usage
        engine = [
            i for i in self.iterations if i.engine == "builtin"
        ]  # its time is "engine", present when it ran
        return {
            "iterations": len(self.iterations),
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost_usd": usage.cost_usd,
            "model_calls": usage.calls,
            "seconds": {
                "model": round(
                    sum(i.seconds_model for i in self.iterations if i.engine != "builtin"), 3
                ),
                **({"engine": round(sum(i.seconds_model for i in engine), 3)} if engine else {}),
                "tests": round(sum(i.seconds_tests for i in self.iterations), 3),
                "total": round(self.seconds, 3),
            },
        }

    def to_json(self) -> Dict[str, Any]:
        return {
            "run_id": self.run_id,
            "outcome": self.outcome.value,
            "stop_reason": self.stop_reason.value,
            "stop_detail": self.stop_detail,
            "failure_kinds": dict(self.failure_kinds),
            "failures": [f.to_json() for f in self.failures],
            "iterations": [i.to_json() for i in self.iterations],
            "totals": self.totals,
            "patch": self.patch,
            "fixed_tests": list(self.fixed_tests),
            "still_failing": list(self.still_failing),
            "flaky_tests": list(self.flaky_tests),
            "applied": self.applied,
            "notes": list(self.notes),
            "evidence": self.evidence.to_json(),
            "run_dir": self.run_dir,
            "sandbox": self.sandbox.to_json() if self.sandbox is not None else None,
        }
