"""Git plumbing for the CI job: a fix commit made without a checkout, and a careful push.

Plain ``git`` subprocesses, not GitPython: STYLE.md keeps GitPython in
``workspace/``, and the few commands here need nothing from it. The user's
checkout (the CI workspace) is never switched and its index never written:
the commit is built in a temporary index file (``read-tree``, ``apply
--cached``, ``write-tree``, ``commit-tree``), with the failing commit's date
so that the same patch on the same commit always gives the same commit id.
Variables that point git at another repository or index (a hook sets
``GIT_INDEX_FILE``) are removed from every call's environment.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from repairloop.errors import ProjectError
from repairloop.textutil import numstat_paths

TRAILER = "Repairloop-Fingerprint"  # marks repairloop's own commits
BRANCH_PREFIX = "repairloop/"
_REPO_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
)
# No hooks, no file-system monitor command, no signing (workspace.gitcmd's reasons).
_CONFIG = (
    "-c",
    "core.quotepath=false",
    "-c",
    "commit.gpgsign=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
)
GIT_TIMEOUT = 120.0  # seconds for one git command (a push over a slow network included)


class GitCommandError(ProjectError):
    """A git command failed; ``stderr`` is git's own explanation."""

    def __init__(self, args: Sequence[str], status: object, stderr: str) -> None:
        super().__init__(
            f"git {' '.join(args[:2])} failed (exit {status}): {stderr.strip()}",
            hint="run the same git command in the repository to see why",
        )
        self.stderr = stderr


def run_git(
    cwd: Path, *args: str, env: Optional[Mapping[str, str]] = None, input_text: Optional[str] = None
) -> str:
    """Run ``git args`` in ``cwd``; stdout without the final newline.

    Raises GitCommandError on a non-zero exit or a timeout, ProjectError when git is missing.
    """
    child = {k: v for k, v in os.environ.items() if k not in _REPO_ENV}
    child.update(env or {})
    child["GIT_TERMINAL_PROMPT"] = "0"  # a push without credentials fails instead of waiting
    try:
        done = subprocess.run(
            ["git", *_CONFIG, *args],
            cwd=cwd,
            env=child,
            input=input_text,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT,
        )
    except FileNotFoundError as exc:
        raise ProjectError("git was not found", hint="install git and put it on PATH") from exc
    except subprocess.TimeoutExpired as exc:
        raise GitCommandError(args, "timeout", f"no answer in {GIT_TIMEOUT:.0f} s") from exc
    if done.returncode != 0:
        raise GitCommandError(args, done.returncode, done.stderr)
    return done.stdout.rstrip("\n")


@dataclass(frozen=True)
class Repo:
    """Where the project sits: the repository's top level and the project's prefix in it."""

    top: Path
    prefix: str  # "" or "sub/dir" (POSIX, no trailing slash)

    def path_in_repo(self, rel: str) -> str:
        """A project-relative path as the repository sees it."""
        return f"{self.prefix}/{rel}" if self.prefix else rel


@dataclass(frozen=True)
class CommitInfo:
    """Who made a commit, when (git's raw date: seconds and zone) and its message."""

    sha: str
    author_name: str
    author_email: str
    committer_name: str
    committer_email: str
    date: str
    message: str


def locate(project: Path) -> Repo:
    """The repository holding ``project``. Raises ProjectError outside a git checkout."""
    try:
        lines = run_git(project, "rev-parse", "--show-toplevel", "--show-prefix").split("\n")
    except GitCommandError as exc:
        raise ProjectError(
            f"{project} is not inside a git checkout: {exc.stderr.strip()}",
            hint="the CI job works on a clone of the repository",
        ) from exc
    prefix = lines[1] if len(lines) > 1 else ""  # git prints an empty prefix at the top level
    return Repo(Path(lines[0]), prefix.strip().rstrip("/"))


def commit_info(repo: Repo, rev: str = "HEAD") -> CommitInfo:
    """Author, committer, raw committer date and message of ``rev``."""
    fmt = "%H%x00%an%x00%ae%x00%cn%x00%ce%x00%cd%x00%B"
    fields = run_git(repo.top, "show", "-s", "--date=raw", f"--format={fmt}", rev).split("\0", 6)
    return CommitInfo(*fields)


def current_branch(repo: Repo) -> Optional[str]:
    """The checked-out branch name, None on a detached HEAD."""
    try:
        return run_git(repo.top, "symbolic-ref", "-q", "--short", "HEAD") or None
    except GitCommandError:
        return None


def changed_paths(repo: Repo, patch: str) -> List[str]:
    """Repository-relative paths a project-relative patch touches (``git apply --numstat``)."""
    args = (
        ["apply", "--numstat", "-z"]
        + ([f"--directory={repo.prefix}"] if repo.prefix else [])
        + ["-"]
    )
    return numstat_paths(run_git(repo.top, *args, input_text=_with_newline(patch)))


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def make_commit(
    repo: Repo, parent: str, patch: str, *, author: Tuple[str, str], date: str, message: str
) -> str:
    """A commit of ``parent`` plus ``patch``, made without touching the checkout or its index.

    ``author`` is (name, email), also used as committer; ``date`` is git's raw
    date (the failing commit's, so the id is reproducible). Raises
    GitCommandError when the patch does not apply to ``parent``.
    """
    with tempfile.TemporaryDirectory(prefix="repairloop-index-") as tmp:
        env: Dict[str, str] = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        run_git(repo.top, "read-tree", parent, env=env)
        directory = [f"--directory={repo.prefix}"] if repo.prefix else []
        run_git(
            repo.top,
            "apply",
            "--cached",
            "--whitespace=nowarn",
            *directory,
            "-",
            env=env,
            input_text=_with_newline(patch),
        )
        tree = run_git(repo.top, "write-tree", env=env)
    who = {
        "GIT_AUTHOR_NAME": author[0],
        "GIT_AUTHOR_EMAIL": author[1],
        "GIT_AUTHOR_DATE": date,
        "GIT_COMMITTER_NAME": author[0],
        "GIT_COMMITTER_EMAIL": author[1],
        "GIT_COMMITTER_DATE": date,
    }
    return run_git(
        repo.top, "commit-tree", tree, "-p", parent, "-F", "-", env=who, input_text=message
    )


def remote_sha(repo: Repo, remote: str, branch: str) -> Optional[str]:
    """The commit ``refs/heads/<branch>`` points at on ``remote``; None when it does not exist."""
    out = run_git(repo.top, "ls-remote", "--heads", remote, f"refs/heads/{branch}")
    for line in out.splitlines():
        sha, _, ref = line.partition("\t")
        if ref == f"refs/heads/{branch}":
            return sha
    return None


def remote_message(repo: Repo, remote: str, branch: str, sha: str) -> str:
    """The message of the remote branch's tip ``sha``, fetched without writing any ref or
    FETCH_HEAD."""
    run_git(
        repo.top,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        remote,
        f"refs/heads/{branch}",
    )
    return run_git(repo.top, "show", "-s", "--format=%B", sha)


def push(repo: Repo, remote: str, commit: str, branch: str, expect: Optional[str]) -> None:
    """Push ``commit`` to ``refs/heads/<branch>`` only if the remote still has ``expect`` there.

    ``expect`` None means the branch must not exist yet (``--force-with-lease``
    with an empty value): a branch that moved meanwhile is never overwritten.
    Raises GitCommandError when the push is rejected or fails.
    """
    ref = f"refs/heads/{branch}"
    run_git(
        repo.top,
        "push",
        "--quiet",
        "--no-verify",
        f"--force-with-lease={ref}:{expect or ''}",
        remote,
        f"{commit}:{ref}",
    )


def add_worktree(repo: Repo, path: Path, commit: str) -> None:
    """Check ``commit`` out into a new detached worktree at ``path`` (the checkout is not
    touched)."""
    run_git(repo.top, "worktree", "add", "--detach", "--quiet", str(path), commit)


def remove_worktree(repo: Repo, path: Path) -> None:
    """Remove a worktree made by :func:`add_worktree`, untracked files and all."""
    try:
        run_git(repo.top, "worktree", "remove", "--force", str(path))
    except GitCommandError:
        run_git(repo.top, "worktree", "prune")
