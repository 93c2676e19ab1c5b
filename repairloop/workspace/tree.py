"""The workspace itself: its own repository holding a copy of the user's current state (see
``workspace.start``), its start state, and its life from ``open_workspace`` to removal."""

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
from repairloop.types import copy_ignore, within
from repairloop.workspace.gitcmd import run_git, zsplit
from repairloop.workspace.ignored import IgnoredFiles, ignored_files
from repairloop.workspace.repository import check_repository, ensure_excluded, locate
from repairloop.workspace.start import (
    WorkspaceGit,
    copy_plain_project,
    copy_start_files,
    hashes,
    restore_bundle,
    start_files,
    write_bundle,
)

SCRATCH_NAME = ".repairloop-scratch"  # beside the work tree (named after the project) and "git"


@dataclass(frozen=True)
class StartState:
    """What the user's tree looked like when the run started."""

    head: Optional[str]  # commit sha, None for a non-git project
    files: Dict[str, str]  # POSIX path relative to the project -> sha256 of the bytes


class Workspace:
    """The project's isolated copy. ``root`` is where tests run (a subdirectory of
    the work tree when the project is one of a larger repository)."""

    def __init__(
        self,
        project: Path,
        root: Path,
        baseline: str,
        start: StartState,
        *,
        git: WorkspaceGit,
        relative: bool = False,
    ) -> None:
        self.project = project
        self.root = root
        self.start = start
        self._baseline = baseline  # the workspace commit of the start state
        self._relative = relative  # root is a subdirectory of the work tree
        self._git = git
        # The git-ignored files of the user's repository (workspace.ignored), and its top level.
        self.ignored = IgnoredFiles()
        self.user_top: Optional[Path] = None
        # The run's other temporary directories (test results, the offline engine's copies, the
        # proof run's copy) go here, beside the work tree in the registered directory: a killed
        # run's are removed with its workspace by the next run or `repairloop clean`. Set by
        # open_workspace.
        self.scratch: Optional[Path] = None

    @property
    def base(self) -> str:
        """The workspace's own commit holding the start state (kept in the run's start.bundle)."""
        return self._baseline

    @property
    def top(self) -> Path:
        """The work tree's top directory (``root`` or a parent of it)."""
        return self._git.top

    def _path(self, rel: str) -> Path:
        p = Path(rel)
        if (
            p.is_absolute()
            or ".." in p.parts
            or not p.parts
            or not within(self.root / p, self.root)
        ):
            raise WorkspaceError(
                f"path {rel!r} is not inside the project",
                hint="use a path relative to the project root",
            )
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
        self._git(self.root, "add", "-A")  # so created files show
        relative = "--relative" if self._relative else "--no-relative"
        return self._git(
            self.root,
            "diff",
            "--cached",
            "--no-color",
            "--no-ext-diff",
            "--no-textconv",
            "--no-renames",
            "--unified=3",
            "--src-prefix=a/",
            "--dst-prefix=b/",
            relative,
            self._baseline,
            strip=False,
        )

    def export_start(self, dest: Path) -> Path:
        """Write the start state's files under ``dest`` (nothing else is touched); return the
        project root there.

        A temporary index: ``read-tree`` of the start commit, then ``checkout-index``
        (which, unlike ``git archive``, honours no ``export-ignore``).
        """
        with tempfile.TemporaryDirectory(prefix="repairloop-index-") as tmp:
            index = Path(tmp) / "index"
            self._git(self.root, "read-tree", self._baseline, index=index)
            self._git(
                self.top, "checkout-index", "--all", "--force", f"--prefix={dest}/", index=index
            )
        root = dest / self.root.relative_to(self.top) if self._relative else dest
        root.mkdir(parents=True, exist_ok=True)
        return root

    def diff_of(self, texts: Mapping[str, Optional[str]]) -> str:
        """The unified diff (as ``diff`` gives it) from the start state to it with only ``texts``
        changed: project-relative path -> new text, None for deleted. The work tree and index stay
        as they are."""
        with tempfile.TemporaryDirectory(prefix="repairloop-index-") as tmp:
            index = Path(tmp) / "index"
            self._git(self.root, "read-tree", self._baseline, index=index)
            prefix = self.root.relative_to(self.top).as_posix() + "/" if self._relative else ""
            for rel, text in texts.items():
                path = prefix + rel
                if text is None:
                    self._git(self.top, "update-index", "--force-remove", "--", path, index=index)
                    continue
                blob = Path(tmp) / "blob"
                blob.write_bytes(text.encode("utf-8"))
                sha = self._git(self.top, "hash-object", "-w", "--no-filters", str(blob))
                staged = self._git(self.top, "ls-files", "-s", "--", path, index=index)
                # an executable stays executable
                mode = staged.split(" ", 1)[0] if staged else "100644"
                self._git(
                    self.top,
                    "update-index",
                    "--add",
                    "--cacheinfo",
                    f"{mode},{sha},{path}",
                    index=index,
                )
            relative = "--relative" if self._relative else "--no-relative"
            return self._git(
                self.root,
                "diff",
                "--cached",
                "--no-color",
                "--no-ext-diff",
                "--no-textconv",
                "--no-renames",
                "--unified=3",
                "--src-prefix=a/",
                "--dst-prefix=b/",
                relative,
                self._baseline,
                strip=False,
                index=index,
            )

    def checkpoint(self) -> str:
        """A token (a commit sha in the workspace) for the current state."""
        return self._git.commit_all("repairloop checkpoint")

    def revert_to(self, token: str) -> None:
        """Restore exactly the state ``token`` names, removing files created since."""
        self._git(self.root, "reset", "-q", "--hard", token)
        self._git(self.root, "clean", "-fdq", "--", ":/")

    def source_roots(self) -> List[Path]:
        """Directories to put first on PYTHONPATH: beats an editable install's .pth."""
        src = self.root / "src"
        return [src, self.root] if src.is_dir() else [self.root]

    def copy_to(self, dest: Path) -> Path:
        """Copy the current project root to ``dest/<name>`` (no .git); return that path."""
        target = Path(dest) / self.root.name
        shutil.copytree(self.root, target, symlinks=True, ignore=copy_ignore)
        return target


def _create_git(
    project: Path, top_src: Path, prefix: str, tmp: Path, top: Path, bundle: Optional[Path]
) -> Workspace:
    git = WorkspaceGit(tmp / "git", top)
    head = run_git(project, "rev-parse", "HEAD")
    top.mkdir()
    git.init(Path(top_src) / run_git(top_src, "rev-parse", "--git-path", "info/exclude"))
    paths = start_files(top_src)
    ignored = ignored_files(top_src, paths)
    copied = copy_start_files(top_src, top, paths + list(ignored.brought))
    baseline = git.commit_paths(copied, "repairloop start state")
    if bundle is not None:
        write_bundle(git, bundle)
    root = top / prefix if prefix else top
    root.mkdir(parents=True, exist_ok=True)
    ws = Workspace(
        project,
        root,
        baseline,
        StartState(head, _start_hashes(git, root)),
        git=git,
        relative=bool(prefix),
    )
    ws.ignored, ws.user_top = ignored, Path(top_src)
    return ws


def _start_hashes(git: WorkspaceGit, root: Path) -> Dict[str, str]:
    """sha256 of every file of the start state below ``root`` (paths relative to it)."""
    listed = zsplit(git(root, "ls-files", "-s", "-z", strip=False))
    rels = [line.split("\t", 1)[1] for line in listed if not line.startswith("160000 ")]
    return hashes(root, rels)


def _recreate_git(
    project: Path,
    prefix: str,
    tmp: Path,
    top: Path,
    base: str,
    start: StartState,
    bundle: Optional[Path],
) -> Workspace:
    """A workspace at a recorded start state (resume): the user's current files play no part."""
    git = WorkspaceGit(tmp / "git", top)
    top.mkdir()
    git.init(None)
    restore_bundle(git, bundle if bundle is not None else tmp / "missing.bundle", base)
    root = top / prefix if prefix else top
    return Workspace(project, root, base, start, git=git, relative=bool(prefix))


def _create_copy(project: Path, tmp: Path, top: Path) -> Workspace:
    copy_plain_project(project, top)
    git = WorkspaceGit(tmp / "git", top)
    git.init(None)
    baseline = git.commit_all("repairloop start state")
    return Workspace(project, top, baseline, StartState(None, _start_hashes(git, top)), git=git)


def remove_workspace(repo_dir: Optional[Path], tmp: Path, worktree: Optional[Path]) -> None:
    """Remove a workspace directory. ``repo_dir`` and ``worktree`` are for registry entries left
    by versions whose workspace was a ``git worktree``: its registration is removed too.

    Raises nothing: git failures are ignored, the directory goes whatever happens."""
    if repo_dir is not None and worktree is not None:
        with contextlib.suppress(WorkspaceError, ProjectError):
            run_git(repo_dir, "worktree", "remove", "--force", str(worktree))
    shutil.rmtree(tmp, ignore_errors=True)
    if repo_dir is not None and worktree is not None:
        with contextlib.suppress(WorkspaceError, ProjectError):
            run_git(repo_dir, "worktree", "prune")


def _register(entry: Path, data: Dict[str, object]) -> None:
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        tmp = entry.with_name(entry.name + ".tmp")
        tmp.write_text(json.dumps(data), encoding="utf-8")
        os.replace(tmp, entry)
    except OSError as exc:
        raise WorkspaceError(
            f"cannot write the workspace registry {entry}: {exc}",
            hint="check that .repairloop/ in the project is writable",
        ) from exc


@contextlib.contextmanager
def open_workspace(
    project: Path,
    *,
    run_id: str,
    registry_dir: Path,
    base: Optional[str] = None,
    start: Optional[StartState] = None,
    bundle: Optional[Path] = None,
) -> Iterator[Workspace]:
    """Yield a Workspace starting from the user's current state; always removed after.

    The workspace is its own repository in a new temporary directory (never a
    ``git worktree`` of the user's; see ``workspace.start``). With ``bundle`` a
    git project's start state is also written there (``git bundle``); with
    ``base`` and ``start`` (recorded by an earlier run, for resume) the
    workspace is re-created from that bundle at commit ``base`` instead. A
    non-git project has no such commit and is copied from its current files.

    ``registry_dir`` (``<project>/.repairloop/worktrees``) gets ``<run_id>.json``
    (pid, paths) while the workspace lives, for ``clean_stale_workspaces``; the
    run's other temporary directories belong in ``Workspace.scratch``, removed with it.
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
    if within(tmp, project):
        shutil.rmtree(tmp, ignore_errors=True)
        raise WorkspaceError(
            f"the temporary directory {tmp.parent} is inside the project",
            hint="point TMPDIR somewhere outside the project",
        )
    top = tmp / ((loc[0].name if loc else project.name) or "project")
    entry = Path(registry_dir) / f"{run_id}.json"
    try:
        _register(
            entry,
            {
                "run_id": run_id,
                "pid": os.getpid(),
                "workspace": str(tmp),
                "worktree": None,
                "project": str(project),
                "created": datetime.now(timezone.utc).isoformat(),
            },
        )
        try:
            if loc and base and start is not None:
                ws = _recreate_git(project, loc[1], tmp, top, base, start, bundle)
            elif loc:
                ws = _create_git(project, loc[0], loc[1], tmp, top, bundle)
            else:
                ws = _create_copy(project, tmp, top)
            ws.scratch = tmp / SCRATCH_NAME
            ws.scratch.mkdir()
        except OSError as exc:  # shutil.Error is one too
            raise WorkspaceError(
                f"cannot create the workspace in {tmp}: {exc}",
                hint="check free space and permissions there (TMPDIR)",
            ) from exc
        yield ws
    finally:
        remove_workspace(None, tmp, None)
        with contextlib.suppress(OSError):
            entry.unlink()
