"""Who may set which key: the user's layers, or also the project under repair.

The project's files (``repairloop.toml``, ``[tool.repairloop]``, a journal left
under ``.repairloop/``) are data, not the user's decisions: in CI they come from
whoever opened the pull request, and locally from whoever published the
repository. So each key has a trust class:

- ``user``: decides how candidate code is confined, where secrets or requests go,
  or what runs or is written on the host. Read from the user's layers only
  (flags, ``REPAIRLOOP_*`` variables, the user configuration file, a workflow's
  inputs), always.
- ``spend``: decides what a run may spend (models, money, tokens, time, the
  machine). The project may set it, except on a pull-request event in CI, where
  the pull request's author is not the one who pays.
- ``project``: shapes the work inside the sandbox (the test command, globs,
  guards' limits, timeouts within the user's budget): the project may set it.

A project file that sets a key it may not is not an error: the key is ignored
with a one-line notice naming it and how the user sets it. The table is
checked complete by ``tests/test_settings.py`` (a new key without a class fails).
"""

from __future__ import annotations

import os
from enum import Enum
from pathlib import Path
from typing import Dict, Mapping, Optional

from repairloop.settings.schema import ENV_PREFIX


class Trust(str, Enum):
    """Which layers may set a key (see the module docstring)."""

    USER = "user"
    SPEND = "spend"
    PROJECT = "project"


_USER = (
    "junit_xml",  # a file repairloop deletes, creates and binds writable into the sandbox
    "api_base",
    "api_key_env",  # where requests, and the key with them, go
    "sandbox",
    "sandbox_bwrap",
    "sandbox_network",
    "sandbox_env_allow",
    "sandbox_memory_mb",
    "sandbox_disk_mb",
    "allow_unconfined_pr",
    # A capability lets a candidate's code reach what could forge the verdict: the pull request
    # under repair would choose which forgeries count.
    "allow_capabilities",
)
_SPEND = (
    "models",
    "max_cost",
    "max_tokens",
    "model_prices",
    "max_iterations",
    "timeout",
    "max_completion_tokens",
    "context_tokens",
    "downgrade_at",
    "model_timeout",
    "model_retries",
    "model_backoff",
    "workers",
    "final_runs",  # the proof runs past the run's deadline: each one is a whole suite
)
_PROJECT = (
    "test_cmd",
    "test_timeout",
    "per_test_timeout",
    "confirm_runs",
    "fallback_to_builtin",
    "localise",
    "edit_format",
    "model_edit_formats",
    "similarity_threshold",
    "patience",
    "retry_kinds",
    "allow_test_edits",
    "test_globs",
    "protected_globs",
    "source_dirs",
    "max_files",
    "max_changed_lines",
    "fuzzy_threshold",
    "warm",
    "builtin_candidates",
    "builtin_candidate_timeout",
    "builtin_extra_search",
)
TRUST: Dict[str, Trust] = {
    **dict.fromkeys(_USER, Trust.USER),
    **dict.fromkeys(_SPEND, Trust.SPEND),
    **dict.fromkeys(_PROJECT, Trust.PROJECT),
}

# Why a project may not set a key of each class, for the notice.
_WHY = {
    Trust.USER: "the project under repair never chooses how it is confined, where requests go or "
    "what runs on the host",
    Trust.SPEND: "on a pull-request event the pull request does not choose what the run spends",
}


def pull_request_event(environ: Mapping[str, str]) -> str:
    """The event's name when a CI run was triggered by a pull (merge) request, else "".

    GitHub sets ``GITHUB_EVENT_NAME`` (``pull_request``, ``pull_request_target``);
    GitLab sets ``CI_PIPELINE_SOURCE=merge_request_event`` (both documented variables).
    """
    github = environ.get("GITHUB_EVENT_NAME", "")
    if github.startswith("pull_request"):
        return github
    if environ.get("CI_PIPELINE_SOURCE") == "merge_request_event":
        return "merge_request_event"
    return ""


def project_may_set(key: str, pull_request: bool) -> bool:
    """Whether a project file may set ``key`` (an unknown key is left to the validation's error)."""
    trust = TRUST.get(key, Trust.PROJECT)
    return trust is Trust.PROJECT or (trust is Trust.SPEND and not pull_request)


def ignored_notice(key: str, origin: str, user_file: Path) -> str:
    """The one line that says a project file's ``key`` was ignored, why, and how the user sets
    it."""
    return (
        f"repairloop: notice: '{key}' in {origin} is ignored: {_WHY[TRUST[key]]}; set it with "
        f"{ENV_PREFIX}{key.upper()}, a flag where `repairloop run --help` has one, or in "
        f"{user_file}"
    )


def user_config_file(environ: Mapping[str, str]) -> Optional[Path]:
    """The user's configuration file: ``$XDG_CONFIG_HOME/repairloop/config.toml``, by default
    ``~/.config/repairloop/config.toml`` (the XDG base directory convention); None with no home."""
    base = environ.get("XDG_CONFIG_HOME", "").strip()
    if not base or not os.path.isabs(base):
        home = environ.get("HOME", "").strip()
        if not home:
            return None
        base = os.path.join(home, ".config")
    return Path(base) / "repairloop" / "config.toml"
