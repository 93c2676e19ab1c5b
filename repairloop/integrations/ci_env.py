"""Which CI system runs us, what it tells about the run, and who made the triggering commit.

Detection by the systems' documented variables: GitHub Actions sets
``GITHUB_ACTIONS=true``, GitLab CI sets ``GITLAB_CI=true``; anything else is
plain. Every value comes from the ``environ`` mapping passed in, never from
``os.environ`` directly, so tests set them per run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from repairloop.errors import ConfigError
from repairloop.integrations.branch import BRANCH_PREFIX, TRAILER, CommitInfo
from repairloop.integrations.forge import GitHub, GitLab

GITHUB, GITLAB, PLAIN = "github", "gitlab", "plain"
# GitLab project and group access tokens act as users named project_<id>_bot_<hash> /
# group_<id>_bot_<hash>.
_GITLAB_BOT = re.compile(r"^(project|group)_\d+_bot")


@dataclass(frozen=True)
class CIContext:
    """What the CI system says about this run; empty strings when it says nothing."""

    system: str  # github | gitlab | plain
    repository: str  # "owner/name" (GitHub), "group/name" (GitLab), else ""
    ref: str  # the branch the failing commit is on ("" when unknown)
    actor: str
    output_file: str  # $GITHUB_OUTPUT
    summary_file: str  # $GITHUB_STEP_SUMMARY
    temp_dir: str  # $RUNNER_TEMP


def detect_system(environ: Mapping[str, str]) -> str:
    """``github``, ``gitlab`` or ``plain``, from GITHUB_ACTIONS / GITLAB_CI."""
    if environ.get("GITHUB_ACTIONS") == "true":
        return GITHUB
    if environ.get("GITLAB_CI") == "true":
        return GITLAB
    return PLAIN


def _github_ref(environ: Mapping[str, str]) -> str:
    # On pull_request events GITHUB_HEAD_REF is the PR's branch; on pushes GITHUB_REF is
    # refs/heads/<b>.
    if environ.get("GITHUB_HEAD_REF"):
        return environ["GITHUB_HEAD_REF"]
    ref = environ.get("GITHUB_REF", "")
    return ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ""


def read_context(environ: Mapping[str, str]) -> CIContext:
    """The run's CIContext from the environment."""
    system = detect_system(environ)
    if system == GITHUB:
        return CIContext(
            system,
            environ.get("GITHUB_REPOSITORY", ""),
            _github_ref(environ),
            environ.get("GITHUB_ACTOR", ""),
            environ.get("GITHUB_OUTPUT", ""),
            environ.get("GITHUB_STEP_SUMMARY", ""),
            environ.get("RUNNER_TEMP", ""),
        )
    if system == GITLAB:
        ref = environ.get("CI_MERGE_REQUEST_SOURCE_BRANCH_NAME") or environ.get(
            "CI_COMMIT_BRANCH", ""
        )
        return CIContext(
            system,
            environ.get("CI_PROJECT_PATH", ""),
            ref,
            environ.get("GITLAB_USER_LOGIN", ""),
            "",
            "",
            "",
        )
    return CIContext(system, environ.get("GITHUB_REPOSITORY", ""), "", "", "", "", "")


def bot_reason(commit: CommitInfo, ctx: CIContext, own_email: str) -> Optional[str]:
    """Why repairloop must not act on this commit (made by repairloop or a bot), else None.

    Acting on a bot's commit could start a loop of fixes of fixes; so the
    commit's trailer and identities, the CI actor and the branch name are checked.
    """
    if f"{TRAILER}:" in commit.message:
        return f"the triggering commit {commit.sha[:12]} was made by repairloop"
    if ctx.ref.startswith(BRANCH_PREFIX):
        return f"the branch {ctx.ref} is one of repairloop's"
    for name, email in (
        (commit.author_name, commit.author_email),
        (commit.committer_name, commit.committer_email),
    ):
        if name.endswith("[bot]") or "[bot]@" in email or email.lower() == own_email.lower():
            return f"the triggering commit {commit.sha[:12]} was made by a bot ({name} <{email}>)"
    if ctx.actor.endswith("[bot]") or _GITLAB_BOT.match(ctx.actor):
        return f"the run was triggered by a bot ({ctx.actor})"
    return None


def make_forge(ctx: CIContext, environ: Mapping[str, str], timeout: float) -> Any:
    """The GitHub or GitLab client for opening pull requests. Raises ConfigError when unset."""
    if ctx.system == GITLAB or (ctx.system == PLAIN and environ.get("CI_PROJECT_ID")):
        token = environ.get("GITLAB_TOKEN", "")
        project = environ.get("CI_PROJECT_ID") or ctx.repository
        if not token or not project or not environ.get("CI_API_V4_URL"):
            raise ConfigError(
                "--open-pr on GitLab needs CI_API_V4_URL, CI_PROJECT_ID and GITLAB_TOKEN",
                hint="store a project access token (scope api) as the CI/CD variable GITLAB_TOKEN",
            )
        return GitLab(environ["CI_API_V4_URL"], project, token, timeout)
    token = environ.get("GITHUB_TOKEN") or environ.get("GH_TOKEN", "")
    if not token or "/" not in ctx.repository:
        raise ConfigError(
            "--open-pr needs GITHUB_REPOSITORY (owner/name) and GITHUB_TOKEN",
            hint="in a workflow: env: GITHUB_TOKEN: ${{ github.token }} with "
            "permissions contents: write and pull-requests: write",
        )
    return GitHub(
        environ.get("GITHUB_API_URL") or "https://api.github.com", ctx.repository, token, timeout
    )
