"""The workspace itself: a worktree at a commit of the user's current state (or a copy),
its start state, and its life from ``open_workspace`` to removal."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Dict, Iterator, List, Mapping, Optional

from repairloop.errors import ProjectError, WorkspaceError
from repairloop.workspace.gitcmd import COPY_IGNORE, GitFailed, hash_file, run_git, within, zsplit
from repairloop.workspace.repository import check_repository, ensure_excluded, locate


@dataclass(frozen=True)
class StartState:
    """What the user's tree looked like when the run started."""

    head: Optional[str]  # commit sha, None for a non-git project
    files: Dict[str, str]  # POSIX path relative to the project -> sha256 of the bytes


class Workspace:
    """The project's isolated copy. ``root`` is where tests run (a subdirectory of
    the worktree when the project is one of a larger repository)."""

    def __init__(self, project: Path, root: Path, baseline: str, start: StartState, *,
                 relative: bool = False) -> None:
        self.project = project
        self.root = root
        self.start = start
        self._baseline = baseline  # the workspace commit of the start state
        self._relative = relative  # root is a subdirectory of the worktree

    @property
    def base(self) -> str:
        """The commit (in the user's object store for a git project) holding the start state."""
        return self._baseline

    @property
    def is_worktree(self) -> bool:
        """True for a git worktree; False for a temporary copy (a non-git project)."""
        return self.start.head is not None

    def _path(self, rel: str) -> Path:
        p = Path(rel)
        if p.is_absolute() or ".." in p.parts or not p.parts or not within(self.root / p, self.root):
            raise WorkspaceError(f"path {rel!r} is not inside the project",
                                 hint="use a path relative to the project root")
        return self.root / p

    def read_text(self, rel: str) -> str:
        """The file's text, undecoded line endings kept (``newline=""``)."""
        with open(self._path(rel), encoding="utf-8", newline="") as fh:
            return fh.read()

    def write_files(self, changes: Mapping[str, Optional[str]]) -> None:
        """Write each ``rel -> text`` exactly as given (UTF-8); ``None`` deletes."""
        for rel, text in changes.items():
            path = self._path(rel)
            if text is None:
                if path.is_symlink() or path.exists():
                    path.unlink()
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "w", encoding="utf-8", newline="") as fh:
                fh.write(text)

    def diff(self) -> str:
        """Unified diff (``a/``, ``b/``, paths relative to ``root``) from the start state,
        created and deleted files included; "" when nothing changed."""
        run_git(self.root, "add", "-A", workspace=True)  # so created files show
        relative = "--relative" if self._relative else "--no-relative"
        return run_git(self.root, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv",
                    "--no-renames", "--unified=3", "--src-prefix=a/", "--dst-prefix=b/", relative,
                    self._baseline, strip=False, workspace=True)

    def checkpoint(self) -> str:
        """A token (a commit sha in the workspace) for the current state."""
        return _commit_all(self.root, "repairloop checkpoint")

    def revert_to(self, token: str) -> None:
        """Restore exactly the state ``token`` names, removing files created since."""
        run_git(self.root, "reset", "-q", "--hard", token, workspace=True)
        run_git(self.root, "clean", "-fdq", "--", ":/", workspace=True)

    def source_roots(self) -> List[Path]:
        """Directories to put first on PYTHONPATH: beats an editable install's .pth."""
        src = self.root / "src"
        return [src, self.root] if src.is_dir() else [self.root]

    def copy_to(self, dest: Path) -> Path:
        """Copy the current project root to ``dest/<name>`` (no .git); return that path."""
        target = Path(dest) / self.root.name
        shutil.copytree(self.root, target, symlinks=True, ignore=COPY_IGNORE)
        return target


_IDENTITY = ("-c", "user.name=repairloop", "-c", "user.email=repairloop@localhost")


def _commit_all(root: Path, message: str) -> str:
    run_git(root, "add", "-A", workspace=True)
    run_git(root, "commit", "--no-verify", "-q", "--allow-empty", "-m", message, workspace=True)
    return run_git(root, "rev-parse", "HEAD", workspace=True)


def _start_commit(project: Path) -> str:
    """A commit whose tree is the working-tree state of the user's tracked files.

    ``git stash create`` makes it without touching anything (its commit's tree is
    the working tree); it prints "" when clean, and fails on intent-to-add
    entries, where a copy of the index in a temporary file does the same job.
    """
    try:
        sha = run_git(project, *_IDENTITY, "stash", "create")
    except GitFailed:
        index = project / run_git(project, "rev-parse", "--git-path", "index")
        with tempfile.TemporaryDirectory(prefix="repairloop-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if index.exists():
                shutil.copyfile(index, env["GIT_INDEX_FILE"])
            run_git(project, "add", "-u", env=env)
            tree = run_git(project, "write-tree", env=env)
            sha = run_git(project, *_IDENTITY, "commit-tree", tree, "-p", "HEAD", "-m", "start", env=env)
    return sha or run_git(project, "rev-parse", "HEAD")


def _copy_untracked(project: Path, root: Path) -> None:
    """Copy the untracked, non-ignored files (and submodule contents) into ``root``."""
    others = zsplit(run_git(project, "ls-files", "--others", "--exclude-standard", "-z", strip=False))
    gitlinks = [line.split("\t", 1)[1] + "/" for line in
                zsplit(run_git(project, "ls-files", "-s", "-z", strip=False))
                if line.startswith("160000 ")]
    for rel in others + gitlinks:
        if rel.split("/")[0] == ".repairloop":
            continue
        src, dst = project / rel, root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):  # a nested repository or a submodule: its files, not its .git
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True, ignore=COPY_IGNORE, dirs_exist_ok=True)
        elif src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif src.is_file():
            shutil.copy2(src, dst)


def _with_baseline(project: Path, root: Path, head: Optional[str], relative: bool) -> Workspace:
    baseline = _commit_all(root, "repairloop start state")
    files: Dict[str, str] = {}
    for line in zsplit(run_git(root, "ls-files", "-s", "-z", strip=False, workspace=True)):
        meta, rel = line.split("\t", 1)
        digest = None if meta.startswith("160000 ") else hash_file(project / rel)
        if digest is not None:
            files[rel] = digest
    return Workspace(project, root, baseline, StartState(head, files), relative=relative)


def _create_worktree(project: Path, prefix: str, tree: Path) -> Workspace:
    head = run_git(project, "rev-parse", "HEAD")
    run_git(project, "worktree", "add", "--detach", "--quiet", str(tree), _start_commit(project))
    root = tree / prefix if prefix else tree
    _copy_untracked(project, root)
    return _with_baseline(project, root, head, relative=bool(prefix))


def _recreate_worktree(project: Path, prefix: str, tree: Path, base: str, start: StartState) -> Workspace:
    """A worktree at a recorded start-state commit (resume): the user's current files play no part."""
    try:
        run_git(project, "cat-file", "-e", f"{base}^{{commit}}")
    except GitFailed as exc:
        raise WorkspaceError(f"the run's start state {base[:12]} is no longer in the repository",
                             hint="it was garbage-collected; start a new run instead of resuming") from exc
    run_git(project, "worktree", "add", "--detach", "--quiet", str(tree), base)
    root = tree / prefix if prefix else tree
    return Workspace(project, root, base, start, relative=bool(prefix))


def _create_copy(project: Path, root: Path) -> Workspace:
    shutil.copytree(project, root, symlinks=True, ignore=COPY_IGNORE)
    run_git(root, "init", "-q", workspace=True)
    return _with_baseline(project, root, None, relative=False)


def remove_workspace(repo_dir: Optional[Path], tmp: Path, worktree: Optional[Path]) -> None:
    """Remove a workspace directory and, for a worktree, git's registration of it in ``repo_dir``.

    Raises nothing: git failures are ignored, the directory goes whatever happens."""
    if repo_dir is not None and worktree is not None:
        with contextlib.suppress(WorkspaceError, ProjectError):
            run_git(repo_dir, "worktree", "remove", "--force", str(worktree))
    shutil.rmtree(tmp, ignore_errors=True)
    if repo_dir is not None:
        with contextlib.suppress(WorkspaceError, ProjectError):
            run_git(repo_dir, "worktree", "prune")


def _register(entry: Path, data: Dict[str, object]) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_name(entry.name + ".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, entry)
    except OSError as exc:
        raise WorkspaceError(f"cannot write the workspace registry {entry}: {exc}",
                             hint="check that .repairloop/ in the project is writable") from exc


@contextlib.contextmanager
def open_workspace(project: Path, *, run_id: str, registry_dir: Path,
                   base: Optional[str] = None, start: Optional[StartState] = None) -> Iterator[Workspace]:
    """Yield a Workspace starting from the user's current state; always removed after.

    With ``base`` and ``start`` (recorded by an earlier run, for resume) a git
    project's workspace is re-created at that commit instead; a non-git
    project has no such commit and is copied from its current files.

    ``registry_dir`` (``<project>/.repairloop/worktrees``) gets ``<run_id>.json``
    (pid, paths) while the workspace lives, for ``clean_stale_workspaces``.
    Raises ProjectError (see ``check_repository``) or WorkspaceError.
    """
    project = Path(project).absolute()
    check_repository(project)
    loc = locate(project)
    if loc is not None:
        ensure_excluded(project)
        if not run_git(project, "ls-files", "-z", "--", "."):
            loc = None  # nothing tracked here (say, under a home-directory repo): copy instead
    tmp = Path(tempfile.mkdtemp(prefix="repairloop-ws-"))
    tree = tmp / ((loc[0].name if loc else project.name) or "project")
    worktree = tree if loc else None
    entry = Path(registry_dir) / f"{run_id}.json"
    try:
        _register(entry, {"run_id": run_id, "pid": os.getpid(), "workspace": str(tmp),
                          "worktree": str(worktree) if worktree else None, "project": str(project),
                          "created": datetime.now(timezone.utc).isoformat()})
        try:
            if loc and base and start is not None:
                ws = _recreate_worktree(project, loc[1], tree, base, start)
            else:
                ws = _create_worktree(project, loc[1], tree) if loc else _create_copy(project, tree)
        except OSError as exc:  # shutil.Error is one too
            raise WorkspaceError(f"cannot create the workspace in {tmp}: {exc}",
                                 hint="check free space and permissions there (TMPDIR)") from exc
        yield ws
    finally:
        remove_workspace(project if loc else None, tmp, worktree)
        with contextlib.suppress(OSError):
            entry.unlink()
