"""The isolated workspace: a git worktree (or a temporary copy) of the user's project.

``with open_workspace(project, run_id=..., registry_dir=...) as ws:`` gives a
``Workspace`` whose ``root`` starts from the user's *current* state (staged,
unstaged and untracked non-ignored files) and is removed whatever happens.
The user's working tree, index, stash list, branches and HEAD are never
changed; only ``apply_to_user_tree`` (``--apply``) writes there.

Facts this relies on (measured, TECH-NOTES section 2): ``git stash create``
captures the tracked state without touching anything and without adding to the
stash list, but fails on intent-to-add entries (git 2.39: "Entry 'x' not
uptodate"), so a temporary index is the fallback; a worktree has no untracked
files, so they are copied; GitPython leaks ``cat-file`` processes through its
object model, so only ``Git.execute`` (one subprocess per command) is used.

Known limits: submodule contents are copied so tests can run, but git does not
see files inside a gitlink, so changes there are not in ``diff()`` and are not
restored by ``revert_to``. Ignored files (build outputs, ``.env``) are not in a
git workspace. ``.gitattributes`` eol/filter conversions are not undone:
``diff()`` shows what git stores.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import tempfile
import threading
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Mapping, Optional, Tuple

from repairloop.errors import ProjectError, WorkspaceError

# Every command: raw UTF-8 paths, no user hooks (a post-checkout hook must not
# run on our worktree), no signing prompts.
_BASE_CONFIG = (
    "-c", "core.quotepath=false", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false",
)
# Commands inside the workspace also store bytes as they are, so diff() is byte-exact.
_WS_CONFIG = ("-c", "core.autocrlf=false", "-c", "core.safecrlf=false",
              "-c", "user.name=repairloop", "-c", "user.email=repairloop@localhost")
# Variables that point git at another repository or index. A pre-commit hook runs
# with GIT_INDEX_FILE set: inherited, it would make our commands use the user's index.
_REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY",
             "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_NAMESPACE",
             "GIT_PREFIX", "GIT_IMPLICIT_WORK_TREE", "GIT_QUARANTINE_PATH")
_COPY_IGNORE = shutil.ignore_patterns(".git", ".venv", "venv", "__pycache__", ".repairloop",
                                      ".tox", ".nox", "node_modules", "*.egg-info")
_ENV_LOCK = threading.Lock()
_EXCLUDE_LINE = ".repairloop/"


class GitFailed(WorkspaceError):
    """A git command exited non-zero; ``status`` and ``stderr`` are git's."""

    def __init__(self, args: Tuple[str, ...], status: object, stderr: str) -> None:
        words = [a for i, a in enumerate(args) if a != "-c" and (i == 0 or args[i - 1] != "-c")]
        super().__init__(f"git {' '.join(words[:2])} failed (exit {status}): {stderr}",
                         hint="run the same git command in the project to see why")
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


def _git(cwd: Path, *args: str, env: Optional[Dict[str, str]] = None, strip: bool = True,
         workspace: bool = False) -> str:
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


def _zsplit(out: str) -> List[str]:
    return [p for p in out.split("\0") if p]


def hash_file(path: Path) -> Optional[str]:
    """sha256 (hex) of a file's bytes, of a symlink's target text, or None if absent."""
    if path.is_symlink():
        return hashlib.sha256(b"symlink:" + os.fsencode(os.readlink(path))).hexdigest()
    if not path.is_file():
        return None
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _within(path: Path, parent: Path) -> bool:
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except ValueError:
        return False


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
        if p.is_absolute() or ".." in p.parts or not p.parts or not _within(self.root / p, self.root):
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
        _git(self.root, "add", "-A", workspace=True)  # so created files show
        relative = "--relative" if self._relative else "--no-relative"
        return _git(self.root, "diff", "--cached", "--no-color", "--no-ext-diff", "--no-textconv",
                    "--no-renames", "--unified=3", "--src-prefix=a/", "--dst-prefix=b/", relative,
                    self._baseline, strip=False, workspace=True)

    def checkpoint(self) -> str:
        """A token (a commit sha in the workspace) for the current state."""
        return _commit_all(self.root, "repairloop checkpoint")

    def revert_to(self, token: str) -> None:
        """Restore exactly the state ``token`` names, removing files created since."""
        _git(self.root, "reset", "-q", "--hard", token, workspace=True)
        _git(self.root, "clean", "-fdq", "--", ":/", workspace=True)

    def source_roots(self) -> List[Path]:
        """Directories to put first on PYTHONPATH: beats an editable install's .pth."""
        src = self.root / "src"
        return [src, self.root] if src.is_dir() else [self.root]

    def copy_to(self, dest: Path) -> Path:
        """Copy the current project root to ``dest/<name>`` (no .git); return that path."""
        target = Path(dest) / self.root.name
        shutil.copytree(self.root, target, symlinks=True, ignore=_COPY_IGNORE)
        return target


def _locate(project: Path) -> Optional[Tuple[Path, str]]:
    """(repository top level, project's prefix inside it) or None for a non-git dir."""
    try:
        bare, inside = _git(project, "rev-parse", "--is-bare-repository",
                            "--is-inside-work-tree").split("\n")[:2]
    except GitFailed as exc:
        if "not a git repository" in exc.stderr:
            return None
        raise ProjectError(f"git cannot read {project}: {exc.stderr}",
                           hint="fix the repository (for 'dubious ownership': "
                                "git config --global --add safe.directory <path>)") from exc
    if bare == "true" or inside != "true":
        raise ProjectError(f"{project} is a bare repository or a .git directory, not a working tree",
                           hint="run repairloop in a checkout (git clone <repo> <dir>)")
    top, prefix = (_git(project, "rev-parse", "--show-toplevel", "--show-prefix", strip=False)
                   .split("\n")[:2])
    return Path(top), prefix.rstrip("/")


_IN_PROGRESS = (("MERGE_HEAD", "a merge"), ("rebase-merge", "a rebase"),
                ("rebase-apply", "a rebase or git am"), ("CHERRY_PICK_HEAD", "a cherry-pick"),
                ("REVERT_HEAD", "a revert"))


def _check_git_state(project: Path) -> None:
    try:
        _git(project, "rev-parse", "-q", "--verify", "HEAD^{commit}")
    except GitFailed as exc:
        raise ProjectError(f"the git repository at {project} has no commits yet",
                           hint="commit once first (git add -A && git commit -m initial)") from exc
    names = [arg for name, _ in _IN_PROGRESS for arg in ("--git-path", name)]
    for (_, label), rel in zip(_IN_PROGRESS, _git(project, "rev-parse", *names).split("\n")):
        if (project / rel).exists():
            raise ProjectError(f"{label} is in progress in {project}",
                               hint="finish it or abort it (git status says how), then run again")
    if _git(project, "ls-files", "-u"):
        raise ProjectError(f"{project} has unresolved merge conflicts",
                           hint="resolve them (git status lists them), then run again")


def check_repository(project: Path) -> None:
    """Raise ProjectError (exit 2) when the project cannot be worked on.

    Refused: not a directory; a git repo without commits; a merge, rebase,
    cherry-pick or revert in progress (or unmerged paths); a bare repository;
    a directory where ``.repairloop/`` cannot be written. A non-git directory is
    fine (the workspace is then a temporary copy).
    """
    project = Path(project)
    if not project.is_dir():
        raise ProjectError(f"{project} is not a directory", hint="pass the project's root directory")
    if _locate(project) is not None:
        _check_git_state(project)
    # os.access is no test as root; creating something is (and we need the dir anyway).
    try:
        state = project / ".repairloop"
        state.mkdir(exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=state, prefix=".probe-")
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ProjectError(f"cannot write to {project} ({exc.strerror}); repairloop keeps its runs "
                           "in .repairloop/ there",
                           hint="make the directory writable, or run on a writable clone") from exc


def ensure_excluded(project: Path) -> bool:
    """Add ``.repairloop/`` to the repository's ``info/exclude`` (never .gitignore).

    Returns True when the line was added; False when present or not a git project.
    """
    if _locate(Path(project)) is None:
        return False
    exclude = Path(project) / _git(Path(project), "rev-parse", "--git-path", "info/exclude")
    text = exclude.read_text(encoding="utf-8", errors="replace") if exclude.exists() else ""
    if any(line.strip() in (_EXCLUDE_LINE, "/" + _EXCLUDE_LINE) for line in text.splitlines()):
        return False
    exclude.parent.mkdir(parents=True, exist_ok=True)
    with open(exclude, "a", encoding="utf-8") as fh:
        fh.write(("" if not text or text.endswith("\n") else "\n") + _EXCLUDE_LINE + "\n")
    return True


_IDENTITY = ("-c", "user.name=repairloop", "-c", "user.email=repairloop@localhost")


def _commit_all(root: Path, message: str) -> str:
    _git(root, "add", "-A", workspace=True)
    _git(root, "commit", "--no-verify", "-q", "--allow-empty", "-m", message, workspace=True)
    return _git(root, "rev-parse", "HEAD", workspace=True)


def _start_commit(project: Path) -> str:
    """A commit whose tree is the working-tree state of the user's tracked files.

    ``git stash create`` makes it without touching anything (its commit's tree is
    the working tree); it prints "" when clean, and fails on intent-to-add
    entries, where a copy of the index in a temporary file does the same job.
    """
    try:
        sha = _git(project, *_IDENTITY, "stash", "create")
    except GitFailed:
        index = project / _git(project, "rev-parse", "--git-path", "index")
        with tempfile.TemporaryDirectory(prefix="repairloop-index-") as tmp:
            env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
            if index.exists():
                shutil.copyfile(index, env["GIT_INDEX_FILE"])
            _git(project, "add", "-u", env=env)
            tree = _git(project, "write-tree", env=env)
            sha = _git(project, *_IDENTITY, "commit-tree", tree, "-p", "HEAD", "-m", "start", env=env)
    return sha or _git(project, "rev-parse", "HEAD")


def _copy_untracked(project: Path, root: Path) -> None:
    """Copy the untracked, non-ignored files (and submodule contents) into ``root``."""
    others = _zsplit(_git(project, "ls-files", "--others", "--exclude-standard", "-z", strip=False))
    gitlinks = [line.split("\t", 1)[1] + "/" for line in
                _zsplit(_git(project, "ls-files", "-s", "-z", strip=False))
                if line.startswith("160000 ")]
    for rel in others + gitlinks:
        if rel.split("/")[0] == ".repairloop":
            continue
        src, dst = project / rel, root / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        if rel.endswith("/"):  # a nested repository or a submodule: its files, not its .git
            if src.is_dir():
                shutil.copytree(src, dst, symlinks=True, ignore=_COPY_IGNORE, dirs_exist_ok=True)
        elif src.is_symlink():
            os.symlink(os.readlink(src), dst)
        elif src.is_file():
            shutil.copy2(src, dst)


def _with_baseline(project: Path, root: Path, head: Optional[str], relative: bool) -> Workspace:
    baseline = _commit_all(root, "repairloop start state")
    files: Dict[str, str] = {}
    for line in _zsplit(_git(root, "ls-files", "-s", "-z", strip=False, workspace=True)):
        meta, rel = line.split("\t", 1)
        digest = None if meta.startswith("160000 ") else hash_file(project / rel)
        if digest is not None:
            files[rel] = digest
    return Workspace(project, root, baseline, StartState(head, files), relative=relative)


def _create_worktree(project: Path, prefix: str, tree: Path) -> Workspace:
    head = _git(project, "rev-parse", "HEAD")
    _git(project, "worktree", "add", "--detach", "--quiet", str(tree), _start_commit(project))
    root = tree / prefix if prefix else tree
    _copy_untracked(project, root)
    return _with_baseline(project, root, head, relative=bool(prefix))


def _recreate_worktree(project: Path, prefix: str, tree: Path, base: str, start: StartState) -> Workspace:
    """A worktree at a recorded start-state commit (resume): the user's current files play no part."""
    try:
        _git(project, "cat-file", "-e", f"{base}^{{commit}}")
    except GitFailed as exc:
        raise WorkspaceError(f"the run's start state {base[:12]} is no longer in the repository",
                             hint="it was garbage-collected; start a new run instead of resuming") from exc
    _git(project, "worktree", "add", "--detach", "--quiet", str(tree), base)
    root = tree / prefix if prefix else tree
    return Workspace(project, root, base, start, relative=bool(prefix))


def _create_copy(project: Path, root: Path) -> Workspace:
    shutil.copytree(project, root, symlinks=True, ignore=_COPY_IGNORE)
    _git(root, "init", "-q", workspace=True)
    return _with_baseline(project, root, None, relative=False)


def _remove(repo_dir: Optional[Path], tmp: Path, worktree: Optional[Path]) -> None:
    """Remove a workspace directory and, for a worktree, git's registration of it."""
    if repo_dir is not None and worktree is not None:
        with contextlib.suppress(WorkspaceError, ProjectError):
            _git(repo_dir, "worktree", "remove", "--force", str(worktree))
    shutil.rmtree(tmp, ignore_errors=True)
    if repo_dir is not None:
        with contextlib.suppress(WorkspaceError, ProjectError):
            _git(repo_dir, "worktree", "prune")


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
    loc = _locate(project)
    if loc is not None:
        ensure_excluded(project)
        if not _git(project, "ls-files", "-z", "--", "."):
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
        _remove(project if loc else None, tmp, worktree)
        with contextlib.suppress(OSError):
            entry.unlink()


def _kill_processes_in(directory: Path) -> None:
    """Kill the process groups of processes still working in ``directory`` (Linux /proc).

    A run killed with SIGKILL cannot stop the test command it started in its
    own session; such an orphan keeps running in the dead run's workspace.
    Only processes whose working directory is inside that directory are hit.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if _within(cwd, directory):
            with contextlib.suppress(OSError):
                os.killpg(os.getpgid(int(entry.name)), signal.SIGKILL)


def clean_stale_workspaces(project: Path, registry_dir: Path, *,
                           is_alive: Callable[[int], bool]) -> List[str]:
    """Remove the workspaces of runs whose pid is dead; return their directories.

    Only directories named ``repairloop-ws-*`` that do not contain the project
    are removed, so the user's files are never touched.
    """
    removed: List[str] = []
    for entry in sorted(Path(registry_dir).glob("*.json")) if Path(registry_dir).is_dir() else []:
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
            pid, tmp = int(data["pid"]), Path(data["workspace"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if is_alive(pid) or not tmp.name.startswith("repairloop-ws-") or _within(Path(project), tmp):
            continue
        worktree = Path(data["worktree"]) if data.get("worktree") else None
        _kill_processes_in(tmp)
        _remove(Path(project) if worktree else None, tmp, worktree)
        with contextlib.suppress(OSError):
            entry.unlink()
        removed.append(str(tmp))
    return removed


# (bytes or symlink target, mode, is_symlink); None = the file does not exist.
_Content = Optional[Tuple[bytes, int, bool]]


def _read_content(path: Path) -> _Content:
    if path.is_symlink():
        return os.fsencode(os.readlink(path)), 0, True
    if path.is_file():
        return path.read_bytes(), path.stat().st_mode & 0o7777, False
    return None


def _put(path: Path, content: _Content) -> None:
    """Write (tmp file + os.replace, so a failed write leaves the old file) or delete."""
    if content is None:
        if path.is_symlink() or path.exists():
            path.unlink()
        return
    data, mode, is_link = content
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.repairloop-tmp")
    try:
        if is_link:
            os.symlink(os.fsdecode(data), tmp)
        else:
            tmp.write_bytes(data)
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()


def _patch_paths(scratch: Path, patch_file: Path) -> List[str]:
    """The project-relative paths a patch touches (``git apply --numstat -z``)."""
    try:
        items = _git(scratch, "apply", "--numstat", "-z", str(patch_file), strip=False).split("\0")
    except GitFailed as exc:
        raise ProjectError(f"the patch cannot be read: {exc.stderr}",
                           hint="check the patch file (it is kept in the run dir as fix.patch)") from exc
    paths: List[str] = []
    i = 0
    while i < len(items):
        fields = items[i].split("\t", 2)
        i += 1
        if len(fields) == 3 and fields[2]:
            paths.append(fields[2])
        elif len(fields) == 3:  # a rename: old and new name follow
            paths.extend(items[i:i + 2])
            i += 2
    return sorted(set(paths))


def _new_contents(project: Path, scratch: Path, patch_file: Path, paths: List[str]) -> Dict[str, _Content]:
    """Apply the patch to copies of the touched files; their new contents by path."""
    for rel in paths:
        old = _read_content(project / rel)
        if old is not None:
            _put(scratch / rel, old)
    try:
        _git(scratch, "apply", "--whitespace=nowarn", str(patch_file), workspace=True)
    except GitFailed as exc:
        raise ProjectError(f"the patch does not apply to the project: {exc.stderr}",
                           hint="the patch is kept in the run dir as fix.patch") from exc
    return {rel: _read_content(scratch / rel) for rel in paths}


def apply_to_user_tree(project: Path, patch: str, start: StartState) -> List[str]:
    """Write ``patch`` (paths relative to the project) into the user's tree; all or nothing.

    Refuses with ProjectError, writing nothing, when a touched file differs from
    ``start`` (sha256) or the patch does not apply. New contents are computed
    first by ``git apply`` on copies outside any repository (byte-exact: CRLF and
    missing final newlines kept, no user whitespace or eol settings); if a write
    then fails, what was written is restored and WorkspaceError is raised.
    Never stages or commits. Returns the paths written (created, changed, deleted).
    """
    project = Path(project).absolute()
    with tempfile.TemporaryDirectory(prefix="repairloop-apply-") as tmp:
        scratch, patch_file = Path(tmp) / "tree", Path(tmp) / "fix.patch"
        scratch.mkdir()
        data = patch.encode("utf-8", "surrogateescape")
        patch_file.write_bytes(data if data.endswith(b"\n") else data + b"\n")
        paths = _patch_paths(scratch, patch_file)
        outside = [p for p in paths if ".." in p.split("/") or not _within(project / p, project)]
        changed = [p for p in paths if hash_file(project / p) != start.files.get(p)]
        if outside or changed:
            raise ProjectError(
                f"not applied: {'outside the project' if outside else 'changed since the run started'}"
                f": {', '.join(outside or changed)}",
                hint="the patch is kept in the run dir as fix.patch; review it and apply it by hand")
        new = _new_contents(project, scratch, patch_file, paths)
    _write_all(project, new)
    return sorted(new)


def _write_all(project: Path, new: Dict[str, _Content]) -> None:
    backups = {rel: _read_content(project / rel) for rel in new}
    written: List[str] = []
    for rel in sorted(new):
        try:
            _put(project / rel, new[rel])
        except OSError as exc:
            for done in reversed(written):
                with contextlib.suppress(OSError):
                    _put(project / done, backups[done])
            raise WorkspaceError(f"could not write {rel} ({exc}); nothing was changed",
                                 hint="fix the cause; the patch is kept in the run dir as fix.patch") from exc
        written.append(rel)


def patch_state(project: Path, patch: str) -> str:
    """Is ``patch`` in the user's files? ``applied``, ``not_applied`` or ``unknown``.

    Checked on copies of the touched files outside any repository: the patch
    reverses cleanly (applied), or applies cleanly (not applied), or neither
    (the files were changed otherwise: a person must look). Used on resume for
    an apply intent without its done record (DESIGN.md, side effects).
    """
    project = Path(project).absolute()
    with tempfile.TemporaryDirectory(prefix="repairloop-check-") as tmp:
        scratch, patch_file = Path(tmp) / "tree", Path(tmp) / "fix.patch"
        scratch.mkdir()
        data = patch.encode("utf-8", "surrogateescape")
        patch_file.write_bytes(data if data.endswith(b"\n") else data + b"\n")
        for rel in _patch_paths(scratch, patch_file):
            old = _read_content(project / rel)
            if old is not None:
                _put(scratch / rel, old)
        for state, extra in (("applied", ("--reverse",)), ("not_applied", ())):
            try:
                _git(scratch, "apply", "--check", *extra, str(patch_file), workspace=True)
                return state
            except GitFailed:
                continue
    return "unknown"
