"""The workspace's own repository: built from the user's files, never from their repository.

The user's repository is only read (``git ls-files``, which writes nothing, not
even the index) to learn which files make the start state: tracked ones as they
are in the working tree (staged and unstaged edits included, deleted ones left
out) and untracked non-ignored ones. Those files are copied into a fresh work
tree whose git directory is a sibling directory, not a ``.git`` inside the tree:

    repairloop-ws-XXXX/
        git/        the workspace's repository (its own refs, index and objects)
        <name>/     the work tree, the only part a sandboxed test run sees

So no git command run in the work tree (by our code or by candidate code) can
reach the user's refs, index, stash or objects, nothing is written into the
user's object store (``git stash create`` would write a commit there), and a
test that deletes files in the tree cannot delete the repository: our own
commands name ``--git-dir`` and ``--work-tree`` and never search upwards, and
``GIT_CEILING_DIRECTORIES`` stops a search started from inside the tree at the
workspace directory (git's documentation of that variable).

For resume, the start state is kept as a git bundle (``git bundle create``) in
the run directory, and a re-created workspace is fetched from it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, List, Optional

from repairloop.errors import WorkspaceError
from repairloop.types import copy_ignore
from repairloop.workspace.gitcmd import GitFailed, hash_file, run_git, zsplit


class WorkspaceGit:
    """git commands for one workspace: explicit ``--git-dir``/``--work-tree``, no upward search."""

    def __init__(self, git_dir: Path, top: Path) -> None:
        self.git_dir = git_dir
        self.top = top

    def __call__(
        self, cwd: Path, *args: str, strip: bool = True, index: Optional[Path] = None
    ) -> str:
        """Run ``git args`` with ``cwd`` (inside the work tree) as the current directory; ``index``
        is a temporary index file to use instead of the repository's (the work tree stays
        untouched)."""
        env = {"GIT_CEILING_DIRECTORIES": str(self.top.parent)}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        return run_git(
            cwd,
            f"--git-dir={self.git_dir}",
            f"--work-tree={self.top}",
            *args,
            env=env,
            strip=strip,
            workspace=True,
        )

    def init(self, exclude_from: Optional[Path]) -> None:
        """Create the repository; copy the user's ``info/exclude`` lines so ignoring is the same.

        Python files get git's built-in ``python`` diff driver: a hunk's heading is then the
        nearest ``def``/``class`` (a method, not only its class), which ``stats`` groups repairs by.
        """
        self(self.top, "init", "-q")
        (self.git_dir / "info").mkdir(parents=True, exist_ok=True)
        (self.git_dir / "info" / "attributes").write_text("*.py diff=python\n", encoding="utf-8")
        if exclude_from is not None and exclude_from.is_file():
            target = self.git_dir / "info" / "exclude"
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(exclude_from, target)

    def commit_all(self, message: str) -> str:
        """Stage everything (``add -A``), commit (empty allowed), return the commit sha."""
        self(self.top, "add", "-A")
        self(self.top, "commit", "--no-verify", "-q", "--allow-empty", "-m", message)
        return self(self.top, "rev-parse", "HEAD")

    def commit_paths(self, paths: List[str], message: str) -> str:
        """Stage exactly ``paths`` (forced: a tracked file may match .gitignore) and commit."""
        listing = self.git_dir / "start-paths"
        listing.write_bytes(b"".join(os.fsencode(p) + b"\0" for p in paths))
        self(
            self.top,
            "--literal-pathspecs",
            "add",
            "--force",
            "--pathspec-from-file",
            str(listing),
            "--pathspec-file-nul",
        )
        listing.unlink()
        return self.commit_all(message)


def start_files(top: Path) -> List[str]:
    """Paths (relative to ``top``) of the start state: tracked files present in the working tree,
    untracked non-ignored files, and directories (``/``-ended) of submodules and nested repos."""
    out = run_git(top, "ls-files", "-z", "--cached", "--others", "--exclude-standard", strip=False)
    gitlinks = [
        line.split("\t", 1)[1] + "/"
        for line in zsplit(run_git(top, "ls-files", "-s", "-z", strip=False))
        if line.startswith("160000 ")
    ]
    links = {g.rstrip("/") for g in gitlinks}
    paths = [p for p in dict.fromkeys(zsplit(out)) if p not in links] + gitlinks
    return [p for p in paths if p.split("/")[0] != ".repairloop"]


def copy_start_files(src_top: Path, dst_top: Path, paths: List[str]) -> List[str]:
    """Copy ``paths`` from the user's tree (files, modes, symlinks as links; directories without
    their ``.git``); return the file paths copied (directories expanded)."""
    copied: List[str] = []
    for rel in paths:
        src, dst = src_top / rel, dst_top / rel
        if rel.endswith("/"):
            if src.is_dir() and not src.is_symlink():
                shutil.copytree(src, dst, symlinks=True, ignore=copy_ignore, dirs_exist_ok=True)
                copied.extend(
                    p.relative_to(dst_top).as_posix()
                    for p in dst.rglob("*")
                    if p.is_file() or p.is_symlink()
                )
            continue
        if not (src.is_symlink() or src.is_file()):
            continue  # deleted in the working tree, or a directory where the index has a file
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            os.symlink(os.readlink(src), dst)
        else:
            shutil.copy2(src, dst)
        copied.append(rel)
    return copied


def hashes(root: Path, rels: List[str]) -> Dict[str, str]:
    """sha256 of each existing file under ``root``, by path."""
    out: Dict[str, str] = {}
    for rel in rels:
        digest = hash_file(root / rel)
        if digest is not None:
            out[rel] = digest
    return out


def write_bundle(git: WorkspaceGit, bundle: Path) -> None:
    """Keep the start state (the workspace's HEAD) as a bundle file for resume."""
    bundle.parent.mkdir(parents=True, exist_ok=True)
    git(git.top, "bundle", "create", "-q", str(bundle), "HEAD")


def restore_bundle(git: WorkspaceGit, bundle: Path, base: str) -> None:
    """Fill a fresh workspace with commit ``base`` from ``bundle``; WorkspaceError when it is
    gone."""
    if not bundle.is_file():
        raise WorkspaceError(
            f"the run's start state ({bundle.name}) is missing from its run directory",
            hint="start a new run instead of resuming",
        )
    try:
        git(git.top, "fetch", "-q", str(bundle), "HEAD")
        git(git.top, "reset", "-q", "--hard", base)
    except GitFailed as exc:
        raise WorkspaceError(
            f"cannot restore the run's start state {base[:12]}: {exc.stderr}",
            hint="start a new run instead of resuming",
        ) from exc


def copy_plain_project(project: Path, top: Path) -> None:
    """A non-git project: its files minus virtualenvs, caches and VCS directories."""
    shutil.copytree(project, top, symlinks=True, ignore=copy_ignore)
