"""Can the project be worked on? Where is its repository, and is ``.repairloop/`` excluded there."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional, Tuple

from repairloop.errors import ProjectError
from repairloop.workspace.gitcmd import EXCLUDE_LINE, GitFailed, run_git


def locate(project: Path) -> Optional[Tuple[Path, str]]:
    """(repository top level, project's prefix inside it) or None for a non-git dir."""
    try:
        bare, inside = run_git(
            project, "rev-parse", "--is-bare-repository", "--is-inside-work-tree"
        ).split("\n")[:2]
    except GitFailed as exc:
        if "not a git repository" in exc.stderr:
            return None
        raise ProjectError(
            f"git cannot read {project}: {exc.stderr}",
            hint="fix the repository (for 'dubious ownership': "
            "git config --global --add safe.directory <path>)",
        ) from exc
    if bare == "true" or inside != "true":
        raise ProjectError(
            f"{project} is a bare repository or a .git directory, not a working tree",
            hint="run repairloop in a checkout (git clone <repo> <dir>)",
        )
    top, prefix = run_git(
        project, "rev-parse", "--show-toplevel", "--show-prefix", strip=False
    ).split("\n")[:2]
    return Path(top), prefix.rstrip("/")


_IN_PROGRESS = (
    ("MERGE_HEAD", "a merge"),
    ("rebase-merge", "a rebase"),
    ("rebase-apply", "a rebase or git am"),
    ("CHERRY_PICK_HEAD", "a cherry-pick"),
    ("REVERT_HEAD", "a revert"),
)


def _check_git_state(project: Path) -> None:
    try:
        run_git(project, "rev-parse", "-q", "--verify", "HEAD^{commit}")
    except GitFailed as exc:
        raise ProjectError(
            f"the git repository at {project} has no commits yet",
            hint="commit once first (git add -A && git commit -m initial)",
        ) from exc
    names = [arg for name, _ in _IN_PROGRESS for arg in ("--git-path", name)]
    for (_, label), rel in zip(_IN_PROGRESS, run_git(project, "rev-parse", *names).split("\n")):
        if (project / rel).exists():
            raise ProjectError(
                f"{label} is in progress in {project}",
                hint="finish it or abort it (git status says how), then run again",
            )
    if run_git(project, "ls-files", "-u"):
        raise ProjectError(
            f"{project} has unresolved merge conflicts",
            hint="resolve them (git status lists them), then run again",
        )


def check_repository(project: Path) -> None:
    """Raise ProjectError (exit 2) when the project cannot be worked on.

    Refused: not a directory; a git repo without commits; a merge, rebase,
    cherry-pick or revert in progress (or unmerged paths); a bare repository;
    a directory where ``.repairloop/`` cannot be written; a ``.repairloop/`` the
    repository tracks, or one that is (or holds) a symbolic link: it would be the
    project's files taken for repairloop's own, or its writes sent outside the
    project. A non-git directory is fine (the workspace is then a temporary copy).
    """
    project = Path(project)
    if not project.is_dir():
        raise ProjectError(
            f"{project} is not a directory", hint="pass the project's root directory"
        )
    if locate(project) is not None:
        _check_git_state(project)
        _check_state_untracked(project)
    _check_state_links(project)
    # os.access is no test as root; creating something is (and we need the dir anyway).
    try:
        state = project / ".repairloop"
        state.mkdir(exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=state, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ProjectError(
            f"cannot write to {project} ({exc.strerror}); repairloop keeps its runs "
            "in .repairloop/ there",
            hint="make the directory writable, or run on a writable clone",
        ) from exc


def _check_state_untracked(project: Path) -> None:
    tracked = run_git(project, "ls-files", "-z", "--", EXCLUDE_LINE)
    if tracked:
        raise ProjectError(
            f"the repository at {project} tracks files under .repairloop/ "
            f"({tracked.split(chr(0))[0]}...): repairloop keeps its own runs there and would take "
            "these for its own",
            hint="remove them from the repository (git rm -r --cached .repairloop)",
        )


def _check_state_links(project: Path) -> None:
    state = project / ".repairloop"
    linked = [
        p for p in (state, state / "runs", state / "worktrees", state / "lock") if p.is_symlink()
    ]
    if state.is_dir() and not state.is_symlink() and (state / "runs").is_dir():
        linked += [p for p in (state / "runs").iterdir() if p.is_symlink()]
    if linked:
        raise ProjectError(
            f"{linked[0]} is a symbolic link: repairloop writes its runs, lock and workspaces "
            "there, and never through a link out of the project",
            hint=f"remove the link (rm {linked[0]}), then run again",
        )


def ensure_excluded(project: Path) -> bool:
    """Add ``.repairloop/`` to the repository's ``info/exclude`` (never .gitignore).

    Returns True when the line was added; False when present or not a git project.
    """
    if locate(Path(project)) is None:
        return False
    exclude = Path(project) / run_git(Path(project), "rev-parse", "--git-path", "info/exclude")
    text = exclude.read_text(encoding="utf-8", errors="replace") if exclude.exists() else ""
    if any(line.strip() in (EXCLUDE_LINE, "/" + EXCLUDE_LINE) for line in text.splitlines()):
        return False
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with open(exclude, "a", encoding="utf-8") as fh:
        fh.write(("" if not text or text.endswith("\n") else "\n") + EXCLUDE_LINE + "\n")
    return True
