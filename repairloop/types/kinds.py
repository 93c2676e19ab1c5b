"""The enums of repairloop: failure kinds, test outcomes, run outcomes, stop reasons, budgets,
decisions, exit codes."""

from __future__ import annotations

import enum


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
    PROOF_FAILED = (
        "proof_failed"  # the reported patch did not hold up on a fresh copy of the start state
    )


class Budget(str, enum.Enum):
    """The run's budgets (DESIGN.md stop policy, rule 3): what a budget gate or the stop policy
    counts."""

    ITERATIONS = "iterations"
    TOKENS = "tokens"
    COST = "cost"  # USD
    SECONDS = "seconds"  # wall clock


class ChainMove(str, enum.Enum):
    """What the model chain does after an iteration (DESIGN.md, "Errors from the model side")."""

    STAY = "stay"  # keep asking the current link
    NEXT = "next"  # go on with the next link (model error, transient failure, engine exhausted)
    # the current link is unusable for the rest of the run (authentication, unknown model)
    DROP = "drop"


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


class ResultSource(str, enum.Enum):
    """Where a TestReport's per-test results came from, most trusted first."""

    PLUGIN = "plugin"  # repairloop's pytest plugin (JSON lines)
    JUNIT = "junit"  # a JUnit XML file the test command wrote
    EXIT_CODE = "exit_code"  # nothing structured: only the exit code and the output


class FlagKind(str, enum.Enum):
    """Why an accepted candidate is flagged for the user (DESIGN.md "The verdict"; README
    "Guards")."""

    TEST_EDIT = "test_edit"  # it edits a test file, allowed by --allow-test-edits
    DROPPED_SCRATCH = "dropped_scratch"  # a scratch file it created was left out
    SUSPECTED_OVERFITTING = (
        "suspected_overfitting"  # a branch compares with the failing test's literals
    )
    CAPABILITY = "capability"  # it uses a capability on a changed line (patch/capabilities.py)
    COMPENSATES = (
        "compensates"  # it changes data the failing assertion compares, not the code computing it
    )
    # passing tests that never run the suspicious code take other paths (loop/behaviour.py)
    CHANGES_PASSING_BEHAVIOUR = "changes_passing_behaviour"
    # a changed function no longer reads a parameter or local it read before (patch/dropped.py)
    DROPS_INPUT = "drops_input"
    DELETES_CODE = "deletes_code"  # every change only removes code (patch/dropped.py)


class JournalKind(str, enum.Enum):
    """The ``event`` of a journal line: one record class each (``journal.events``,
    ``types.model_events``).

    A journal line is ``{"event": <kind>, "ts": <ISO UTC>, ...fields}``; a kind
    not listed here (a newer repairloop's) is read back as an unknown event.
    """

    # the run's frame (loop.py)
    START = "start"
    RESUMED = "resumed"
    WORKSPACE = "workspace"
    INTERRUPTED = "interrupted"
    ERROR = "error"
    CRASHED = "crashed"
    # the session (session.py)
    SANDBOX = "sandbox"
    BASELINE = "baseline"
    CLASSIFIED = "classified"
    TEST_FILES = "test_files"
    FLAKY = "flaky"
    ESCALATE = "escalate"
    MODEL_DROPPED = "model_dropped"
    # one iteration (attempt.py)
    PROPOSAL = "proposal"
    PROPOSAL_ERROR = "proposal_error"
    CANDIDATE_REJECTED = "candidate_rejected"
    ITERATION = "iteration"
    # warm test processes of candidate validation (warm.py): started, refused, a run that went fresh
    WARM = "warm"
    # a model proposer as it goes (propose/llm.py, through chain.py's callback)
    MODEL_RETRY = "model_retry"
    MODEL_ERROR = "model_error"
    MODEL_ANSWER_TRUNCATED = "model_answer_truncated"
    EDIT_FORMAT_SWITCHED = "edit_format_switched"
    MODEL_PARAM_DROPPED = "model_param_dropped"
    # the proof run of the reported patch (session.py, proof.py)
    PROOF = "proof"
    # the end (ending.py) and effects outside the workspace (ending.py, intents.py, integrations)
    STOPPED = "stopped"
    INTENT = "intent"
    DONE = "done"
    NOTE = "note"
    PUSH_REFUSED = "push_refused"
