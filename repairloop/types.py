"""Frozen records and enums shared by every module, and the Proposer protocol.

Nothing here imports from the rest of the package: this module is the bottom of
the import graph (see STYLE.md, "Who may import whom"). Every record is a frozen
dataclass so that loop state is a growing tuple of values, never mutated.
"""

from __future__ import annotations

import enum
import os
import posixpath
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import PurePath
from typing import Any, Dict, FrozenSet, Iterable, Optional, Protocol, Sequence, Tuple

# Files that are tests, read-only to candidates (settings' ``test_globs`` default).
DEFAULT_TEST_GLOBS: Tuple[str, ...] = (
    "tests/**", "test/**", "test_*.py", "**/test_*.py", "*_test.py", "**/*_test.py",
    "conftest.py", "**/conftest.py",
)

# Test configuration, CI configuration and dependency pins: never edited by a candidate,
# even with allow_test_edits (settings' ``protected_globs`` default).
DEFAULT_PROTECTED_GLOBS: Tuple[str, ...] = (
    "pytest.ini", "**/pytest.ini", "tox.ini", "**/tox.ini", "noxfile.py", ".coveragerc",
    ".github/**", ".gitlab-ci.yml", ".gitlab/**", ".circleci/**", ".travis.yml",
    "azure-pipelines.yml", ".azure-pipelines/**", "Jenkinsfile", ".buildkite/**",
    "bitbucket-pipelines.yml", ".drone.yml", ".woodpecker.yml", ".woodpecker/**", ".ci/**",
    ".pre-commit-config.yaml", "requirements*.txt", "**/requirements*.txt", "requirements/**",
    "constraints*.txt", "**/constraints*.txt", "Pipfile", "Pipfile.lock", "poetry.lock",
    "pdm.lock", "uv.lock", "setup.py", "environment.yml", "environment.yaml",
)


class FailureKind(str, enum.Enum):
    """Why a test failed, as DESIGN.md's "Failure kinds" table defines it."""

    SYNTAX = "syntax"
    DEPENDENCY = "dependency"
    LOGIC = "logic"
    FLAKY = "flaky"
    TIMEOUT = "timeout"
    TEST_CONFIG = "test_config"
    ENVIRONMENT = "environment"


class TestOutcome(str, enum.Enum):
    """Outcome of one test id, pytest's vocabulary (collection errors are ``error``)."""

    __test__ = False  # keep pytest from collecting this enum

    PASSED = "passed"
    FAILED = "failed"
    ERROR = "error"
    SKIPPED = "skipped"
    XFAILED = "xfailed"
    XPASSED = "xpassed"


class Outcome(str, enum.Enum):
    """How a run ended, the ``outcome`` field of ``run --json``."""

    FIXED = "fixed"
    PARTIALLY_FIXED = "partially_fixed"
    NOT_FIXED = "not_fixed"
    NOTHING_TO_FIX = "nothing_to_fix"
    UNRECOVERABLE = "unrecoverable"


class StopReason(str, enum.Enum):
    """Why the loop stopped; the first match of DESIGN.md's stop policy wins."""

    SUCCESS = "success"
    NOTHING_TO_FIX = "nothing_to_fix"
    UNRECOVERABLE = "unrecoverable"
    NO_MODEL_LEFT = "no_model_left"
    BUDGET_ITERATIONS = "budget_iterations"
    BUDGET_TOKENS = "budget_tokens"
    BUDGET_COST = "budget_cost"
    BUDGET_TIME = "budget_time"
    STAGNATION = "stagnation"
    NO_PROGRESS = "no_progress"
    INTERRUPTED = "interrupted"


class Budget(str, enum.Enum):
    """The run's budgets (DESIGN.md stop policy, rule 3): what a budget gate or the stop policy counts."""

    ITERATIONS = "iterations"
    TOKENS = "tokens"
    COST = "cost"  # USD
    SECONDS = "seconds"  # wall clock


class ChainMove(str, enum.Enum):
    """What the model chain does after an iteration (DESIGN.md, "Errors from the model side")."""

    STAY = "stay"  # keep asking the current link
    NEXT = "next"  # go on with the next link (model error, transient failure, engine exhausted)
    DROP = "drop"  # the current link is unusable for the rest of the run (authentication, unknown model)


class Decision(str, enum.Enum):
    """What the loop did with one iteration's candidate patch."""

    KEPT = "kept"  # fixed at least one test and broke none: stays in the workspace
    REVERTED = "reverted"  # applied and tested, fixed nothing or broke something
    REJECTED = "rejected"  # never tested: no patch, did not apply, guard, syntax
    DUPLICATE = "duplicate"  # equal to an earlier candidate: never re-tested
    STAGNANT = "stagnant"  # too similar to an earlier candidate
    NO_CANDIDATE = "no_candidate"  # the proposer had nothing (model error, engine exhausted)


class ExitCode(enum.IntEnum):
    """Process exit codes, DESIGN.md's command-line contract."""

    OK = 0  # fixed, or nothing to fix
    NOT_FIXED = 1  # not fixed, or only partly
    USAGE = 2  # usage or configuration error, repository in a state we cannot work in
    UNRECOVERABLE = 3  # a blocking failure kind was found and reported
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)


@dataclass(frozen=True)
class Frame:
    """One traceback frame. ``path`` is relative to the project root when inside it."""

    path: str
    line: int
    function: str = ""


@dataclass(frozen=True)
class TestResult:
    """One test id's result from one test-suite run.

    ``phase`` is where it ended: ``setup``, ``call``, ``teardown`` or ``collect``
    (a collection error, whose ``test_id`` is the module's node id). ``frames``
    run outermost first; ``output`` is the tail of captured stdout/stderr.
    """

    __test__ = False

    test_id: str
    outcome: TestOutcome
    duration: float = 0.0  # seconds
    phase: str = "call"
    exc_type: Optional[str] = None
    message: str = ""
    frames: Tuple[Frame, ...] = ()
    output: str = ""
    longrepr: str = ""

    @property
    def failed(self) -> bool:
        return self.outcome in (TestOutcome.FAILED, TestOutcome.ERROR)


@dataclass(frozen=True)
class TestReport:
    """The structured result of one run of the test command.

    ``exit_code`` is None when the run was killed (timeout or signal).
    ``source`` says where per-test results came from: ``plugin`` (our pytest
    plugin), ``junit`` (a JUnit XML file) or ``exit_code`` (nothing structured;
    only the exit code and the output are known). ``output`` is the combined,
    capped output (head and tail kept). ``coverage_file`` is a coverage.py data
    file with one dynamic context per test, when coverage was requested.
    """

    __test__ = False

    command: Tuple[str, ...]
    exit_code: Optional[int]
    results: Tuple[TestResult, ...] = ()
    output: str = ""
    seconds: float = 0.0
    timed_out: bool = False
    source: str = "exit_code"
    collected: Optional[int] = None
    coverage_file: Optional[str] = None
    signal: Optional[int] = None

    @property
    def failing(self) -> Tuple[TestResult, ...]:
        return tuple(r for r in self.results if r.failed)

    @property
    def failing_ids(self) -> Tuple[str, ...]:
        return tuple(sorted({r.test_id for r in self.failing}))

    @property
    def passed_ids(self) -> Tuple[str, ...]:
        failing = set(self.failing_ids)
        return tuple(
            sorted(
                {
                    r.test_id
                    for r in self.results
                    if r.outcome in (TestOutcome.PASSED, TestOutcome.XPASSED)
                    and r.test_id not in failing
                }
            )
        )

    @property
    def green(self) -> bool:
        """True only when the run passed by its structured results and exit code.

        A suite that collected nothing (pytest exit 5), a command that was not
        found (127), a killed run, or any failing result is never green; what
        the tests print is never read for this verdict.
        """
        if self.timed_out or self.exit_code != 0 or self.failing:
            return False
        if self.source == "exit_code":
            return True
        return bool(self.passed_ids) or (self.collected or 0) > 0


# Directories whose files are not the project's own code: installed packages, virtual environments.
NOT_PROJECT_DIRS = frozenset({"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox"})


def is_project_path(path: str) -> bool:
    """True for a project-relative path outside virtual environments and site-packages.

    DESIGN.md's "project code": inside the project root, not in an environment.
    An absolute path, one that leaves the root (``..``) and a pseudo-file
    (``<string>``, ``<frozen importlib._bootstrap>``) are not project paths.
    """
    if not path or os.path.isabs(path) or path.startswith(("..", "<")):
        return False
    return not set(PurePath(path).parts) & NOT_PROJECT_DIRS


def _glob_forms(glob: str) -> Tuple[str, ...]:
    """``glob`` and each form of it where one or more ``**/`` stand for no directory."""
    forms = [glob]
    for form in forms:  # grows while it is walked: every ``**/`` of every form is dropped once
        for k in range(len(form)):
            if form.startswith("**/", k) and (k == 0 or form[k - 1] == "/"):
                shorter = form[:k] + form[k + 3:]
                if shorter not in forms:
                    forms.append(shorter)
    return tuple(forms)


def project_relative(path: str) -> str:
    """``path`` as relative POSIX: backslashes turned, ``./`` and ``a/../`` folded."""
    path = path.strip().replace("\\", "/")
    if not path:
        return path
    folded = posixpath.normpath(path)
    return folded[2:] if folded.startswith("./") else folded


def matches_globs(path: str, globs: Sequence[str]) -> bool:
    """True when the project-relative ``path`` matches one of ``globs``; the one glob rule of repairloop.

    The semantics of every path glob in the settings (``test_globs``,
    ``protected_globs``):

    - ``path`` is normalised first (``project_relative``); matching is case-sensitive;
    - a glob is matched against the whole path with ``fnmatch`` rules, so ``*``
      (and ``**``) also cross ``/``: ``tests/**`` and ``tests/*`` both take all of
      ``tests/``, at any depth, but only at the project root (a glob with ``/`` is
      anchored there, as in ``.gitignore``: ``pkg/tests/x.py`` is not under ``tests/**``);
    - ``**/`` also matches no directory: ``**/conftest.py`` takes ``conftest.py``,
      ``x/**/c.py`` takes ``x/c.py``;
    - a glob without ``/`` is also matched against the file name, so it counts at
      any depth (``test_*.py`` takes ``pkg/test_a.py``), as pytest's ``python_files`` does.

    Where these rules err, they err towards "matches": a file wrongly taken for a
    test is only read-only to candidates, while a test wrongly taken for code
    could be weakened into a false fix.
    """
    rel = project_relative(path)
    name = rel.rsplit("/", 1)[-1]
    for glob in globs:
        if any(fnmatchcase(rel, form) for form in _glob_forms(glob)):
            return True
        if "/" not in glob and fnmatchcase(name, glob):
            return True
    return False


@dataclass(frozen=True)
class TestFiles:
    """Which project files are tests: the one answer for the guards, the context and the engines.

    ``globs`` are the settings' ``test_globs`` (semantics: ``matches_globs``);
    ``collected`` are project-relative files the runner collected tests from
    (``from_report``), tests whatever the globs say: pytest's ``python_files``
    can put tests where no glob looks (``checks/check_x.py``), and a test file
    taken for code could be weakened into a false fix. Built once per run.
    """

    __test__ = False  # keep pytest from collecting this class

    globs: Tuple[str, ...] = DEFAULT_TEST_GLOBS
    collected: FrozenSet[str] = frozenset()

    def is_test(self, path: str) -> bool:
        """True when project-relative ``path`` is a test file (read-only to candidates)."""
        return project_relative(path) in self.collected or matches_globs(path, self.globs)

    def with_collected(self, report: TestReport) -> "TestFiles":
        """This value plus the ``.py`` files inside the project that ``report``'s test ids name.

        A test id ``path::name`` names its file; ids without ``::`` (JUnit class
        names, the session) and paths outside the project (absolute, ``..``) add nothing.
        """
        files = {project_relative(r.test_id.split("::", 1)[0]) for r in report.results if "::" in r.test_id}
        inside = {f for f in files if f.endswith(".py") and not f.startswith(("/", "../")) and f != ".."}
        return TestFiles(self.globs, self.collected | frozenset(inside))

    @property
    def beyond_globs(self) -> Tuple[str, ...]:
        """The collected files no glob names, sorted (what the collection added)."""
        return tuple(sorted(f for f in self.collected if not matches_globs(f, self.globs)))


@dataclass(frozen=True)
class Failure:
    """A classified failing test: DESIGN.md's ``classify --json`` failure record."""

    test_id: str
    kind: FailureKind
    retryable: bool
    message: str
    location: Optional[str] = None  # "path:line"
    hint: str = ""
    exc_type: Optional[str] = None
    frames: Tuple[Frame, ...] = ()

    def to_json(self) -> Dict[str, Any]:
        return {
            "test_id": self.test_id,
            "kind": self.kind.value,
            "retryable": self.retryable,
            "message": self.message,
            "location": self.location,
            "hint": self.hint,
        }


@dataclass(frozen=True)
class CodeSlice:
    """A piece of source shown to the model: a function or class, 1-based inclusive lines."""

    path: str
    start_line: int
    end_line: int
    name: str
    text: str
    read_only: bool = False  # the failing test itself: shown, never to be edited


@dataclass(frozen=True)
class LastAttempt:
    """The previous candidate and what it did, shown in the next prompt."""

    diff: str
    decision: Decision
    reason: str
    fixed: Tuple[str, ...] = ()
    broke: Tuple[str, ...] = ()


@dataclass(frozen=True)
class RepairContext:
    """Everything a proposer is shown for one iteration (built by ``context.py``).

    ``failing_tests`` is the group being repaired (same root cause), largest
    group first; ``other_failing`` are the rest. ``tokens`` is the size of the
    rendered material counted with litellm's offline counter; ``trimmed`` names
    what the token budget removed, in order.
    """

    failing_tests: Tuple[str, ...]
    message: str
    traceback: str
    slices: Tuple[CodeSlice, ...]
    last_attempt: Optional[LastAttempt] = None
    other_failing: Tuple[str, ...] = ()
    tokens: int = 0
    trimmed: Tuple[str, ...] = ()
    notes: Tuple[str, ...] = ()


@dataclass(frozen=True)
class Usage:
    """What proposing cost: tokens, USD (None when the model is not priced), seconds, calls."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: Optional[float] = 0.0
    seconds: float = 0.0
    calls: int = 0

    def __add__(self, other: "Usage") -> "Usage":
        # An unpriced call makes the sum unknown: never report a partial cost as the total.
        cost = None if self.cost_usd is None or other.cost_usd is None else self.cost_usd + other.cost_usd
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            cost,
            self.seconds + other.seconds,
            self.calls + other.calls,
        )

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @classmethod
    def total(cls, usages: Iterable["Usage"]) -> "Usage":
        """The sum of ``usages`` (cost None when any of them is unpriced)."""
        return sum(usages, cls())


@dataclass(frozen=True)
class Feedback:
    """A structural error about the previous answer, sent back once in the same thread."""

    answer: str
    error: str


@dataclass(frozen=True)
class BudgetLeft:
    """What the run may still spend; None means unlimited. Units: tokens, USD, seconds."""

    tokens: Optional[int] = None
    cost_usd: Optional[float] = None
    seconds: Optional[float] = None


@dataclass(frozen=True)
class ProposalRequest:
    """What the loop hands a proposer for one attempt."""

    context: RepairContext
    budget: BudgetLeft = field(default_factory=BudgetLeft)
    feedback: Optional[Feedback] = None
    iteration: int = 1


@dataclass(frozen=True)
class Proposal:
    """A proposer's answer: raw text (a diff or SEARCH/REPLACE blocks) and its cost.

    ``answer`` is what the model said, verbatim; for the offline engine it is a
    unified diff. ``notes`` carries engine details for the journal (the offline
    engine's localisation and the candidates it tried).
    """

    answer: str
    engine: str  # "llm" or "builtin"
    model: str
    usage: Usage = field(default_factory=Usage)
    prompt: Tuple[Dict[str, str], ...] = ()
    notes: Dict[str, Any] = field(default_factory=dict)


class Proposer(Protocol):
    """Context in, candidate out. Implemented by ``propose.llm`` and ``propose.builtin``.

    ``propose`` raises ``repairloop.errors.ProposerError`` subclasses for the
    model-side error classes of DESIGN.md (transient after retries, model
    error, unrecoverable); every attempt's usage rides on the exception.
    """

    name: str
    engine: str

    def propose(self, request: ProposalRequest) -> Proposal: ...


@dataclass(frozen=True)
class Iteration:
    """One turn of the loop, as journalled and as ``run --json`` reports it."""

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
    candidates: int = 1  # candidate patches tried: 1 per model answer; the offline engine tries many
    # Guard notes on an accepted candidate: "suspected_overfitting: ...", "test_edit: path",
    # "dropped_scratch: path" (patch.guards / patch.overfit).
    flags: Tuple[str, ...] = ()

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
            "flags": list(self.flags),
            "seconds": {
                "model": round(self.seconds_model, 3),
                "tests": round(self.seconds_tests, 3),
                "total": round(self.seconds_total, 3),
            },
            "diff": self.diff,
        }


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
    seconds: float = 0.0

    @property
    def totals(self) -> Dict[str, Any]:
        usage = Usage()
        for it in self.iterations:
            usage = usage + it.usage
        return {
            "iterations": len(self.iterations),
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "cost_usd": usage.cost_usd,
            "model_calls": usage.calls,
            "seconds": {
                "model": round(sum(i.seconds_model for i in self.iterations), 3),
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
            "run_dir": self.run_dir,
        }


@dataclass(frozen=True)
class LoopEvent:
    """What the loop yields for the console and journal to show.

    ``kind`` is one of: ``phase`` (a step starts: baseline, classify, confirm,
    propose, test), ``note`` (something worth telling the user), ``iteration``
    (``iteration`` set), ``stopped`` (``result`` set; always the last event).
    """

    kind: str
    message: str = ""
    data: Dict[str, Any] = field(default_factory=dict)
    iteration: Optional[Iteration] = None
    result: Optional[RunResult] = None
