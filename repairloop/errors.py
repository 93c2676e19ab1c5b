"""A small exception family. Each error carries a message, a hint and an exit code.

Expected endings (success, stagnation, budget) are ``StopReason`` values, not
exceptions. Only ``cli/`` turns these into process exit codes.
"""

from __future__ import annotations

from typing import Any, Dict, Optional

from repairloop.types import Budget, ExitCode, Usage


class RepairloopError(Exception):
    """Base class: ``message`` names the cause, ``hint`` the fix."""

    exit_code: ExitCode = ExitCode.USAGE

    def __init__(self, message: str, hint: str = "", exit_code: Optional[ExitCode] = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        if exit_code is not None:
            self.exit_code = exit_code

    def __str__(self) -> str:
        return f"{self.message}\nhint: {self.hint}" if self.hint else self.message


class ConfigError(RepairloopError):
    """Bad configuration or flags: unknown key, wrong type, impossible value (exit 2)."""


class ProjectError(RepairloopError):
    """The project cannot be worked on: not a directory, no test command, odd git state (exit 2)."""


class LockedError(ProjectError):
    """Another live repairloop run holds the project's lock (exit 2)."""


class WorkspaceError(RepairloopError):
    """Creating, changing or removing the isolated workspace failed (exit 2)."""


class PatchError(RepairloopError):
    """A candidate patch is structurally wrong: no patch, does not apply, guard, syntax.

    These are the *structural* errors of DESIGN.md: the message goes back to
    the model once, in the same thread.
    """

    exit_code = ExitCode.NOT_FIXED


class GuardError(PatchError):
    """A candidate touches what it may not (tests, paths outside the project, sizes)."""


class ProposerError(RepairloopError):
    """A model-side failure after our own retries. ``usage`` is what the attempts cost."""

    exit_code = ExitCode.NOT_FIXED

    def __init__(
        self,
        message: str,
        hint: str = "",
        usage: Optional[Usage] = None,
        attempts: int = 1,
        candidates: int = 0,
        degraded: str = "",
    ):
        super().__init__(message, hint)
        self.usage = usage or Usage()
        self.attempts = attempts
        self.candidates = (
            candidates  # candidate edits tried before giving up (the offline engine's)
        )
        self.degraded = (
            degraded  # why the proposer's fault localisation was weak ("" when it was not)
        )


class TransientModelError(ProposerError):
    """Rate limit, timeout, connection error or 5xx that outlasted the bounded retries."""


class ModelError(ProposerError):
    """Refusal, content filter, context window, repeated structural errors: try the next model."""


class UnrecoverableModelError(ProposerError):
    """Authentication or unknown model: drop that model from the chain for the run."""


class BudgetExhausted(ProposerError):
    """The next call would not fit what is left of the run's budget (it was not sent)."""

    def __init__(self, message: str, budget: Budget, usage: Optional[Usage] = None):
        super().__init__(message, usage=usage, attempts=0)
        self.budget = budget


class EngineExhausted(ProposerError):
    """The offline engine ran out of candidates (or of time) without a plausible patch.

    ``notes`` carries the engine's journal material (localisation, candidates tried);
    ``out_of_time`` is True when its search stopped on the run's time budget (the
    request's ``budget.seconds``), not for want of candidates.
    """

    notes: Dict[str, Any]

    def __init__(
        self,
        message: str,
        hint: str = "",
        usage: Optional[Usage] = None,
        attempts: int = 1,
        notes: Optional[Dict[str, Any]] = None,
        candidates: int = 0,
        degraded: str = "",
        out_of_time: bool = False,
    ):
        super().__init__(
            message, hint, usage=usage, attempts=attempts, candidates=candidates, degraded=degraded
        )
        self.notes = dict(notes or {})
        self.out_of_time = out_of_time
