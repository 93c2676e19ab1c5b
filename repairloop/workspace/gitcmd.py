"""git commands for the workspace: one subprocess per command through GitPython, with the
repository-locating environment lifted and the user's hooks and signing turned off."""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

from repairloop.errors import ProjectError, WorkspaceError

# Every command: raw UTF-8 paths, no hooks (a post-checkout hook must not run on our worktree), no
# file-system monitor (``core.fsmonitor`` names a command git runs on every status or ls-files: in a
# repository's own config it is the repository's choice, not the user's), no signing prompts.
_BASE_CONFIG = (
    "-c",
    "core.quotepath=false",
    "-c",
    "core.hooksPath=/dev/null",
    "-c",
    "core.fsmonitor=false",
    "-c",
    "commit.gpgsign=false",
)
# Commands inside the workspace also store bytes as they are, so diff() is byte-exact.
_WS_CONFIG = (
    "-c",
    "core.autocrlf=false",
    "-c",
    "core.safecrlf=false",
    "-c",
    "user.name=repairloop",
    "-c",
    "user.email=repairloop@localhost",
)
# Variables that point git at another repository or index. A pre-commit hook runs
# with GIT_INDEX_FILE set: inherited, it would make our commands use the user's index.
_REPO_ENV = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_IMPLICIT_WORK_TREE",
    "GIT_QUARANTINE_PATH",
)
_ENV_LOCK = threading.Lock()
EXCLUDE_LINE = ".repairloop/"


class GitFailed(WorkspaceError):
    """A git command exited non-zero; ``status`` and ``stderr`` are git's."""

    def __init__(self, args: Tuple[str, ...], status: object, stderr: str) -> None:
        words = [a for i, a in enumerate(args) if a != "-c" and (i == 0 or args[i - 1] != "-c")]
        super().__init__(
            f"git {' '.join(words[:2])} failed (exit {status}): {stderr}",
            hint="run the same git command in the project to see why",
        )
        self.status = status
        self.stderr = stderr


@contextlib.contextmanager
def _repo_env_scrubbed() -> Iterator[None]:
    # GitPython builds the child environment from os.environ and can add but not
    # remove variables, so the repository-locating ones are lifted for the call.
    with _ENV_LOCK:
        saved = {k: os.environ.pop(k) for k in _REPO_ENV if k in os.environ}
        try:
            yield
        finally:
            os.environ.update(saved)


def run_git(
    cwd: Path,
    *args: str,
    env: Optional[Dict[str, str]] = None,
    strip: bool = True,
    workspace: bool = False,
) -> str:
    """Run ``git args`` in ``cwd`` through GitPython; stdout as text (surrogateescape).

    Raises GitFailed on a non-zero exit, ProjectError when git is not installed.
    """
    os.environ.setdefault("GIT_PYTHON_REFRESH", "quiet")  # no ImportError without git
    import git  # GitPython stays in this module (STYLE.md); imported when first needed

    cmd = ["git", *_BASE_CONFIG, *(_WS_CONFIG if workspace else ()), *args]
    try:
        with _repo_env_scrubbed():
            out = git.Git(str(cwd)).execute(cmd, env=env, strip_newline_in_stdout=strip)
    except git.GitCommandNotFound as exc:
        raise ProjectError("git was not found", hint="install git and put it on PATH") from exc
    except git.GitCommandError as exc:
        stderr = str(exc.stderr).strip().removeprefix("stderr: '").removesuffix("'").strip()
        raise GitFailed(args, exc.status, stderr) from exc
    return str(out)


def zsplit(out: str) -> List[str]:
    """The non-empty fields of NUL-separated git output (``-z``)."""
    return [p for p in out.split("\0") if p]


def hash_file(path: Path) -> Optional[str]:
    """sha256 (hex) of a file's bytes, of a symlink's target text, or None if absent."""
    if path.is_symlink():
        return hashlib.sha256(b"symlink:" + os.fsencode(os.readlink(path))).hexdigest()
    if not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()
