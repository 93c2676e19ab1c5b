"""Which test command a project uses, which Python runs it, and whether it is pytest.

The project's own interpreter is used, never resolved through its symlink:
``.venv/bin/python`` resolved is the base interpreter, which lacks the venv's
packages (TECH-NOTES section 2, "Do not resolve a venv's python").
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

from repairloop.errors import ProjectError
from repairloop.types import matches_globs, within

_PYTEST_NAMES = ("pytest", "py.test")
_VENV_DIRS = (".venv", "venv")
# Directories that never hold the project's own tests; virtualenvs are found by pyvenv.cfg.
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "build", "dist", "site-packages"})
_ENV_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# (file, pattern) pairs that mean "this project configures pytest".
_PYTEST_CONFIG = (
    ("pytest.ini", None),
    ("pyproject.toml", re.compile(r"^\s*\[tool\.pytest(\.ini_options)?\]", re.MULTILINE)),
    ("setup.cfg", re.compile(r"^\s*\[tool:pytest\]", re.MULTILINE)),
    ("tox.ini", re.compile(r"^\s*\[pytest\]", re.MULTILINE)),
)
_WALK_LIMIT = 5000  # directories looked at when searching for test files
# pytest's default ``python_files``: what pytest would collect, not the run's test_globs
# (the question here is whether pytest has something to run).
_PYTEST_FILES = ("test_*.py", "*_test.py")


def _split(command: Union[Sequence[str], str]) -> Optional[List[str]]:
    """argv of a command; None for a shell string that is more than one simple command."""
    if not isinstance(command, str):
        return [str(part) for part in command]
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # unbalanced quotes
        return None
    # `a && b`, `a | b`, `a; b`, redirections: appending ids would hit the wrong part.
    if any(token and set(token) <= set("();<>|&") for token in tokens):
        return None
    return tokens


def is_pytest_command(command: Union[Sequence[str], str]) -> bool:
    """True for ``pytest``, ``py.test``, ``python -m pytest`` and ``<path>/python3.X -m pytest``.

    Leading ``VAR=value`` assignments of a shell string are skipped. A shell
    string with pipes, lists or redirections is not a pytest command, because
    arguments appended to it would not reach pytest.
    """
    argv = _split(command)
    if not argv:
        return False
    if isinstance(command, str):
        while argv and _ENV_ASSIGNMENT.match(argv[0]):
            argv = argv[1:]
    if not argv:
        return False
    program = os.path.basename(argv[0])
    if program in _PYTEST_NAMES:
        return True
    if not re.fullmatch(r"python[0-9.]*(\.exe)?", program):
        return False
    for index, arg in enumerate(argv[1:], start=1):
        if arg == "-m":
            return index + 1 < len(argv) and argv[index + 1] in _PYTEST_NAMES
        if arg.startswith("-m"):
            return arg[2:] in _PYTEST_NAMES
        if not arg.startswith("-"):
            return False  # a script: `python run_tests.py`
    return False


def project_python(project: Path) -> str:
    """The interpreter that runs the project's tests by default.

    In order: the project's virtualenv (``.venv`` then ``venv``); the active
    virtualenv (``$VIRTUAL_ENV``); ``python`` (then ``python3``) on PATH when
    it can import pytest, since that is where the user's dependencies live
    when repairloop itself is installed apart (pipx); else repairloop's own
    interpreter. Paths are absolute but never resolved: resolving follows a
    venv's symlink to the base interpreter, which lacks the venv's packages.
    The project's own interpreters are chosen here but only ever run in the
    sandbox (test runs, ``ProjectInterpreter``).
    """
    root = Path(project).absolute()
    homes = [root / name for name in _VENV_DIRS]
    if os.environ.get("VIRTUAL_ENV"):
        homes.append(Path(os.environ["VIRTUAL_ENV"]))
    for home in homes:
        for candidate in (home / "bin" / "python", home / "Scripts" / "python.exe"):
            if candidate.exists():
                return str(candidate)
    for name in ("python", "python3"):
        found = shutil.which(name)
        # Asking means running it here, on the host: never a program of the project's (a relative or
        # in-project PATH entry would find one).
        if (
            found
            and os.path.isabs(found)
            and not within(Path(found), root)
            and _imports_pytest(found)
        ):
            return found
    return sys.executable


# Finds pytest without importing it (nothing of a pytest.py runs), in an empty directory, ignoring
# PYTHON* variables (-E: no PYTHONPATH into the project, no PYTHONSTARTUP).
_FIND_PYTEST = "import importlib.util, sys; sys.exit(importlib.util.find_spec('pytest') is None)"


@functools.lru_cache(maxsize=8)
def _imports_pytest(python: str) -> bool:
    """Whether the user's ``python`` (from PATH, outside the project) has pytest. It runs on the
    host, so nothing of the current directory (the project's checkout) may reach it: an empty
    working directory, ``-E``, pytest found rather than imported, and no environment but PATH and
    HOME (no secret)."""
    env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "LC_ALL")}
    with tempfile.TemporaryDirectory(prefix="repairloop-find-pytest-") as empty:
        try:
            done = subprocess.run(
                [python, "-E", "-c", _FIND_PYTEST],
                capture_output=True,
                timeout=30,
                cwd=empty,
                env=env,
                stdin=subprocess.DEVNULL,
            )
        except (OSError, subprocess.SubprocessError):
            return False
    return done.returncode == 0


def _has_pytest_config(root: Path) -> bool:
    for name, pattern in _PYTEST_CONFIG:
        path = root / name
        if not path.is_file():
            continue
        if pattern is None:
            return True
        try:
            if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                return True
        except OSError:
            continue
    return False


def _has_test_files(root: Path) -> bool:
    """True when a ``test_*.py`` or ``*_test.py`` exists outside virtualenvs and hidden dirs."""
    seen = 0
    for dirpath, dirnames, filenames in os.walk(root):
        seen += 1
        if seen > _WALK_LIMIT:
            return False
        if any(matches_globs(name, _PYTEST_FILES) for name in filenames):
            return True
        dirnames[:] = [
            d
            for d in dirnames
            if not d.startswith(".")
            and d not in _SKIP_DIRS
            and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))
        ]
    return False


def default_test_command(project: Path) -> Tuple[str, ...]:
    """``(python, "-m", "pytest")`` for a project that has tests or pytest configuration.

    Evidence, cheapest first: a ``tests/`` or ``test/`` directory, pytest
    configuration (``pytest.ini``, ``[tool.pytest.ini_options]``,
    ``[tool:pytest]`` in setup.cfg, ``[pytest]`` in tox.ini), then any
    ``test_*.py`` / ``*_test.py`` file. ``python`` is :func:`project_python`.
    Raises ProjectError when there is none of these.
    """
    root = Path(project).absolute()
    found = (
        (root / "tests").is_dir()
        or (root / "test").is_dir()
        or _has_pytest_config(root)
        or _has_test_files(root)
    )
    if not found:
        raise ProjectError(
            f"found no tests in {root}: no tests/ or test/ directory, no test_*.py or *_test.py "
            f"file and no "
            "pytest configuration, so there is no test command to run",
            hint="add tests, or pass --test-cmd 'CMD' (or set test_cmd in [tool.repairloop]) if "
            "they run another way",
        )
    return (project_python(root), "-m", "pytest")


def with_arguments(
    command: Union[Sequence[str], str], extra: Sequence[str]
) -> Union[Tuple[str, ...], str]:
    """``command`` with ``extra`` appended: to the argv, or shell-quoted to the string."""
    if isinstance(command, str):
        if not extra:
            return command
        return command + " " + " ".join(shlex.quote(arg) for arg in extra)
    return tuple(command) + tuple(extra)


def interpreter_of(command: Union[Sequence[str], str], project: Path) -> str:
    """The interpreter that ``command`` runs the tests with, as well as it can be told.

    ``python -m pytest`` (any ``python*`` path) names it; ``pytest`` is a
    script whose ``#!`` line names it; anything else (``make test``, ``tox``)
    is taken to use :func:`project_python`. Paths are never resolved.
    """
    argv = _split(command) or []
    if isinstance(command, str):
        while argv and _ENV_ASSIGNMENT.match(argv[0]):
            argv = argv[1:]
    if not argv:
        return project_python(project)
    program = os.path.basename(argv[0])
    if re.fullmatch(r"python[0-9.]*(\.exe)?", program):
        return _located(argv[0], project) or project_python(project)
    if program in _PYTEST_NAMES:
        script = _located(argv[0], project)
        interpreter = _shebang_interpreter(script) if script else None
        if interpreter:
            return interpreter
    return project_python(project)


def _located(program: str, project: Path) -> Optional[str]:
    """``program`` as an absolute path: relative to ``project`` when it has a slash, else from
    PATH."""
    if os.sep in program or (os.altsep and os.altsep in program):
        path = Path(program) if os.path.isabs(program) else Path(project).absolute() / program
        return str(path) if path.exists() else None
    return shutil.which(program)


def _shebang_interpreter(script: str) -> Optional[str]:
    """The interpreter of a ``#!`` line (``/usr/bin/env python3`` looked up on PATH), or None."""
    try:
        with open(script, "rb") as fh:
            first = fh.readline(512).decode("utf-8", errors="replace")
    except OSError:
        return None
    if not first.startswith("#!"):
        return None
    words = first[2:].split()
    if words and os.path.basename(words[0]) == "env":
        words = [w for w in words[1:] if not w.startswith("-")]
        return shutil.which(words[0]) if words else None
    return words[0] if words else None
