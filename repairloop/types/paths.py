"""Which project files are tests or protected: the default globs, the one glob rule,
``TestFiles``."""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path, PurePath, PurePosixPath
from typing import Callable, Dict, FrozenSet, Iterator, Optional, Sequence, Set, Tuple

from repairloop.types.reports import TestReport

# Files that are tests, read-only to candidates (settings' ``test_globs`` default).
DEFAULT_TEST_GLOBS: Tuple[str, ...] = (
    "tests/**",
    "test/**",
    "test_*.py",
    "**/test_*.py",
    "*_test.py",
    "**/*_test.py",
    "conftest.py",
    "**/conftest.py",
)

# Test configuration, CI configuration and dependency pins: never edited by a candidate,
# even with allow_test_edits (settings' ``protected_globs`` default).
DEFAULT_PROTECTED_GLOBS: Tuple[str, ...] = (
    "pytest.ini",
    "**/pytest.ini",
    "tox.ini",
    "**/tox.ini",
    "noxfile.py",
    ".coveragerc",
    ".github/**",
    ".gitlab-ci.yml",
    ".gitlab/**",
    ".circleci/**",
    ".travis.yml",
    "azure-pipelines.yml",
    ".azure-pipelines/**",
    "Jenkinsfile",
    ".buildkite/**",
    "bitbucket-pipelines.yml",
    ".drone.yml",
    ".woodpecker.yml",
    ".woodpecker/**",
    ".ci/**",
    ".pre-commit-config.yaml",
    "requirements*.txt",
    "**/requirements*.txt",
    "requirements/**",
    "constraints*.txt",
    "**/constraints*.txt",
    "Pipfile",
    "Pipfile.lock",
    "poetry.lock",
    "pdm.lock",
    "uv.lock",
    "setup.py",
    "environment.yml",
    "environment.yaml",
    # Every other file pytest reads configuration or code from before any test runs (pytest 9 reads
    # pytest.toml and .pytest.toml), and what the interpreter runs at every start.
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "conftest.py",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
)


# Directories whose files are not the project's own code: installed packages, virtual environments.
NOT_PROJECT_DIRS = frozenset({"site-packages", "dist-packages", ".venv", "venv", ".tox", ".nox"})
# What a copy of the project leaves out (the workspace of a non-git project, the offline engine's
# copies): repositories' and runs' data, environments, caches, bytecode, build metadata
# (*.egg-info).
NOT_COPIED = NOT_PROJECT_DIRS | {
    ".git",
    ".repairloop",
    "__pycache__",
    ".pytest_cache",
    ".mypy_cache",
    ".hypothesis",
    "node_modules",
}


def copy_ignore(directory: str, names: Sequence[str]) -> Set[str]:
    """The ``ignore`` callable of ``shutil.copytree`` for a copy of the project (``NOT_COPIED``)."""
    return {n for n in names if n in NOT_COPIED or n.endswith(".egg-info")}


def within(path: Path, parent: Path) -> bool:
    """True when ``path`` resolves to ``parent`` or somewhere below it (symbolic links followed)."""
    try:
        path.resolve().relative_to(parent.resolve())
        return True
    except (ValueError, OSError):
        return False


# A project file larger than this is not read: a link to /dev/zero, or a data blob, is no source.
MAX_SOURCE_BYTES = 2_000_000


def _open_inside(root: Path, rel: str, flags: int, mode: int = 0o644) -> int:
    """A file descriptor of ``root/rel`` opened without following a symbolic link at any step: the
    copies and the workspace are trees the project's tests can write, and a link there may lead
    anywhere on the host. Raises OSError (ELOOP, ENOTDIR) for a link, and ValueError for a path that
    leaves ``root``."""
    parts = PurePosixPath(rel).parts
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise ValueError(f"{rel!r} is not a path inside the project")
    directory = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for part in parts[:-1]:
            inner = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=directory)
            os.close(directory)
            directory = inner
        return os.open(parts[-1], flags | os.O_NOFOLLOW, mode, dir_fd=directory)
    finally:
        os.close(directory)


def read_inside(root: Path, rel: str, limit: int = MAX_SOURCE_BYTES) -> Optional[str]:
    """The text of the regular file ``root/rel`` (no link followed, at most ``limit`` bytes); None
    otherwise."""
    try:
        fd = _open_inside(root, rel, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_size > limit:
            return None
        data = handle.read(limit + 1)
    try:
        return data.decode("utf-8") if len(data) <= limit else None
    except UnicodeDecodeError:
        return None


def write_inside(root: Path, rel: str, text: str) -> None:
    """Write ``text`` to the regular file ``root/rel`` (created if missing) without following a link
    at any step.

    Raises OSError when a link or anything but a regular file stands in the way (a copy is then not
    to be trusted: the offline engine makes it again), ValueError for a path that leaves ``root``.
    """
    fd = _open_inside(root, rel, os.O_WRONLY | os.O_CREAT | os.O_NONBLOCK)
    with os.fdopen(fd, "wb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise OSError(f"{rel} is not a regular file")
        handle.truncate(0)
        handle.write(text.encode("utf-8"))


def is_bytecode(path: str) -> bool:
    """True for a compiled Python file (``.pyc``, ``.pyo``): code that runs in place of its
    source."""
    return path.endswith((".pyc", ".pyo"))


def is_project_path(path: str) -> bool:
    """True for a project-relative path outside virtual environments and site-packages.

    DESIGN.md's "project code": inside the project root, not in an environment.
    An absolute path, one that leaves the root (``..``) and a pseudo-file
    (``<string>``, ``<frozen importlib._bootstrap>``) are not project paths.
    """
    if not path or os.path.isabs(path) or path.startswith(("..", "<")):
        return False
    return not set(PurePath(path).parts) & NOT_PROJECT_DIRS


def _glob_forms(glob: str) -> Tuple[str, ...]:
    """``glob`` and each form of it where one or more ``**/`` stand for no directory."""
    forms = [glob]
    for form in forms:  # grows while it is walked: every ``**/`` of every form is dropped once
        for k in range(len(form)):
            if form.startswith("**/", k) and (k == 0 or form[k - 1] == "/"):
                shorter = form[:k] + form[k + 3 :]
                if shorter not in forms:
                    forms.append(shorter)
    return tuple(forms)


def relative_to(path: str, roots: Sequence[str]) -> Optional[str]:
    """``path`` relative (POSIX) to the first of ``roots`` that holds it; a relative path as it is
    (POSIX); None for an absolute path outside every root. The one rule for making paths
    project-relative: give the root as given and resolved (``root_forms``), as pytest and the
    tracers may report either."""
    if not os.path.isabs(path):
        return path.replace(os.sep, "/")
    for root in roots:
        if path == root or path.startswith(root.rstrip(os.sep) + os.sep):
            return Path(os.path.relpath(path, root)).as_posix()
    return None


def resolved(path: str) -> str:
    """An absolute ``path`` with its symbolic links resolved (the tracers report real paths); a
    relative one as it is."""
    return os.path.realpath(path) if os.path.isabs(path) else path


def root_forms(root: Path) -> Tuple[str, ...]:
    """``root`` absolute as given, and resolved (no duplicate): the forms a reported path may start
    with."""
    return tuple(dict.fromkeys([str(Path(root).absolute()), str(Path(root).resolve())]))


def project_relative(path: str) -> str:
    """``path`` as relative POSIX: backslashes turned, ``./`` and ``a/../`` folded."""
    path = path.strip().replace("\\", "/")
    if not path:
        return path
    folded = posixpath.normpath(path)
    return folded[2:] if folded.startswith("./") else folded


def matches_globs(path: str, globs: Sequence[str]) -> bool:
    """True when the project-relative ``path`` matches one of ``globs``; the one glob rule of
    repairloop.

    The semantics of every path glob in the settings (``test_globs``,
    ``protected_globs``):

    - ``path`` is normalised first (``project_relative``); matching is case-sensitive;
    - a glob is matched against the whole path with ``fnmatch`` rules, so ``*``
      (and ``**``) also cross ``/``: ``tests/**`` and ``tests/*`` both take all of
      ``tests/``, at any depth, but only at the project root (a glob with ``/`` is
      anchored there, as in ``.gitignore``: ``pkg/tests/x.py`` is not under ``tests/**``);
    - ``**/`` also matches no directory: ``**/conftest.py`` takes ``conftest.py``,
      ``x/**/c.py`` takes ``x/c.py``;
    - a glob without ``/`` is also matched against the file name, so it counts at
      any depth (``test_*.py`` takes ``pkg/test_a.py``), as pytest's ``python_files`` does.

    Where these rules err, they err towards "matches": a file wrongly taken for a
    test is only read-only to candidates, while a test wrongly taken for code
    could be weakened into a false fix.
    """
    rel = project_relative(path)
    name = rel.rsplit("/", 1)[-1]
    for glob in globs:
        if any(fnmatchcase(rel, form) for form in _glob_forms(glob)):
            return True
        if "/" not in glob and fnmatchcase(name, glob):
            return True
    return False


@dataclass(frozen=True)
class TestFiles:
    """Which project files are tests: the one answer for the guards, the context and the engines.

    ``globs`` are the settings' ``test_globs`` (semantics: ``matches_globs``);
    ``collected`` are project-relative files the runner collected tests from
    (``from_report``), tests whatever the globs say: pytest's ``python_files``
    can put tests where no glob looks (``checks/check_x.py``), a text file
    holds doctests (``README.rst`` with ``--doctest-glob``), and a test file
    taken for code could be weakened into a false fix. ``doctests`` are Python
    modules collected only for the doctests in their docstrings
    (``--doctest-modules``): source code, not tests, whose doctest examples are
    test content (``patch.testedits.doctest_edits``). Built once per run.
    """

    __test__ = False  # keep pytest from collecting this class

    globs: Tuple[str, ...] = DEFAULT_TEST_GLOBS
    collected: FrozenSet[str] = frozenset()
    doctests: FrozenSet[str] = frozenset()

    def is_test(self, path: str) -> bool:
        """True when project-relative ``path`` is a test file (read-only to candidates)."""
        return project_relative(path) in self.collected or matches_globs(path, self.globs)

    def has_doctests(self, path: str) -> bool:
        """True for a source module (not a test file) whose docstrings' examples the runner
        collected."""
        return project_relative(path) in self.doctests and not self.is_test(path)

    def with_collected(self, report: TestReport) -> "TestFiles":
        """This value plus the files inside the project that ``report``'s test ids name.

        A test id ``path::name`` names its file; ids without ``::`` (JUnit class
        names, the session) and paths outside the project (absolute, ``..``) add
        nothing, and so do other files than ``.py`` ones and doctest text files. A
        ``.py`` file whose every test is a doctest of its own docstrings
        (``TestResult.doctest == "module"``) goes to ``doctests``; any other named
        file (a test module, a doctest text file) to ``collected``.
        """
        kinds: Dict[str, Set[str]] = {}
        for result in report.results:
            if "::" not in result.test_id:
                continue
            path = project_relative(result.test_id.split("::", 1)[0])
            # not a JUnit class name (pkg.mod.Test)
            named = path.endswith(".py") or result.doctest == "text"
            if named and not path.startswith(("/", "../")) and path != "..":
                kinds.setdefault(path, set()).add(result.doctest or "test")
        modules = {f for f, k in kinds.items() if k == {"module"} and f.endswith(".py")}
        return TestFiles(
            self.globs,
            self.collected | frozenset(set(kinds) - modules),
            self.doctests | frozenset(modules),
        )

    @property
    def beyond_globs(self) -> Tuple[str, ...]:
        """The collected files no glob names, sorted (what the collection added)."""
        return tuple(sorted(f for f in self.collected if not matches_globs(f, self.globs)))


def iter_python_files(root: Path) -> Iterator[str]:
    """Project-relative ``/`` paths of the ``.py`` files under ``root``, sorted, ignored dirs
    pruned."""
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(
            d
            for d in dirs
            if not copy_ignore(folder, [d])
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))  # any virtualenv
        )
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder, name).relative_to(root).as_posix()


def read_sources(root: Path, is_test: Callable[[str], bool]) -> Dict[str, str]:
    """Text of every non-test ``.py`` file under ``root``: ``{relative path: text}``; links, files
    that are not regular, undecodable or too big are skipped (``types.read_inside``)."""
    sources: Dict[str, str] = {}
    for path in iter_python_files(root):
        if is_test(path):
            continue
        text = read_inside(root, path)
        if text is not None:
            sources[path] = text
    return sources
