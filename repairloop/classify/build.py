"""Compiled extension modules of the project, and the command the project builds them with.

An extension that was never built in this checkout (``pip install -e .`` or
``python setup.py build_ext --inplace`` not run, or its built file ignored by
git and so absent from a copy) fails to import as "No module named
'pkg._speedups'", or, imported from its package's ``__init__``, as "cannot
import name '_speedups' from partially initialized module 'pkg' (most likely
due to a circular import)", which reads like a code fault and is not one.
"""

from __future__ import annotations

import functools
import os
import re
from pathlib import Path
from typing import Dict, Iterator, Optional, Tuple

_SKIP = frozenset(
    {"node_modules", "__pycache__", "build", "dist", "site-packages", ".git", ".tox", ".nox"}
)
_SOURCE_SUFFIXES = (".pyx", ".c", ".cpp", ".cc", ".rs")
_PYINIT = re.compile(rb"PyInit_(\w+)|PYBIND11_MODULE\(\s*(\w+)|NB_MODULE\(\s*(\w+)")
_DECLARED = (
    re.compile(r"Extension\(\s*(?:name\s*=\s*)?['\"]([\w.]+)['\"]"),  # setup.py
    re.compile(r"Pybind11Extension\(\s*['\"]([\w.]+)['\"]"),
    re.compile(r"name\s*=\s*['\"]([\w.]+)['\"][^\n]*sources"),  # [tool.setuptools] ext-modules
    re.compile(r"module-name\s*=\s*['\"]([\w.]+)['\"]"),  # [tool.maturin]
    re.compile(r"extension_module\(\s*['\"](\w+)['\"]"),  # meson-python
)
# Commands that build extensions in place, in the order they are preferred when a file names
# several.
_BUILD_COMMANDS = re.compile(
    r"(python[\d.]*\s+setup\.py\s+build_ext\s+(?:--inplace|-i)\b|python[\d.]*\s+setup\.py\s+develop\b|"
    r"(?:python[\d.]*\s+-m\s+)?pip3?\s+install\s+(?:--no-build-isolation\s+)?(?:-e|--editable)\s+[.\w\[\]\",-]+|"
    r"maturin\s+develop\b[^\n;&|]*|uv\s+pip\s+install\s+-e\s+\S+)"
)
_WHERE_TO_LOOK = (
    "Makefile",
    "makefile",
    "justfile",
    "CONTRIBUTING.md",
    "CONTRIBUTING.rst",
    "README.md",
    "README.rst",
    "tox.ini",
    "noxfile.py",
    "setup.cfg",
    "pyproject.toml",
)
_WALK_LIMIT = 3000  # files looked at


def _files(project: Path) -> Iterator[Path]:
    seen = 0
    for dirpath, dirnames, filenames in os.walk(project):
        dirnames[:] = [
            d
            for d in dirnames
            if d not in _SKIP
            and not d.startswith(".")
            and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))
        ]
        for name in filenames:
            seen += 1
            if seen > _WALK_LIMIT:
                return
            yield Path(dirpath) / name


def _dotted(project: Path, path: Path, name: str) -> str:
    """``name`` as a module of the package ``path`` lies in (its ``__init__.py`` parents)."""
    parts = [name]
    here = path.parent
    while here != project and (here / "__init__.py").exists():
        parts.insert(0, here.name)
        here = here.parent
    return ".".join(parts)


@functools.lru_cache(maxsize=8)
def extension_modules(project: Path) -> Dict[str, str]:
    """Dotted module name -> project-relative file that declares or implements it (a source or build
    file).

    From ``.pyx`` files, C/C++ files that define ``PyInit_<name>`` (or a
    pybind11/nanobind module), and the names ``setup.py``, ``pyproject.toml``
    or ``meson.build`` declare. Cached per project path.
    """
    found: Dict[str, str] = {}
    for path in _files(project):
        rel = path.relative_to(project).as_posix()
        if path.suffix == ".pyx":
            found.setdefault(_dotted(project, path, path.stem), rel)
        elif path.suffix in (".c", ".cpp", ".cc") and path.stat().st_size < 2_000_000:
            for groups in _PYINIT.findall(path.read_bytes()):
                name = next(g for g in groups if g).decode()
                found.setdefault(_dotted(project, path, name), rel)
        elif path.name in ("setup.py", "pyproject.toml", "meson.build"):
            text = path.read_text(encoding="utf-8", errors="replace")
            for pattern in _DECLARED:
                found.update({name: rel for name in pattern.findall(text) if name not in found})
    return found


def extension_for(module: str, project: Path) -> Optional[Tuple[str, str]]:
    """``(module name, declaring file)`` when ``module`` (dotted) is one of the project's
    extensions."""
    known = extension_modules(project)
    if module in known:
        return module, known[module]
    last = module.rsplit(".", 1)[-1]
    for name, where in known.items():  # meson and maturin declare the last part only
        if name == last or name.endswith("." + last):
            return name, where
    return None


def build_command(project: Path) -> str:
    """The command the project builds its extensions with, when its files say; else the usual one.

    Looks in the Makefile, justfile, contributing notes, README, tox, nox and
    packaging files, in that order, for ``setup.py build_ext --inplace``,
    ``pip install -e``, ``maturin develop`` and the like; a Makefile target
    that runs one is given as ``make <target>``. Without any, the build
    backend decides: maturin -> ``maturin develop``, a ``setup.py`` ->
    ``python setup.py build_ext --inplace``, else ``pip install -e .``.
    """
    for name in _WHERE_TO_LOOK:
        path = project / name
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = _BUILD_COMMANDS.search(text)
        if match:
            if name.lower() == "makefile":
                target = _make_target(text, match.start())
                if target:
                    return f"make {target}"
            return " ".join(match.group(1).split())
    pyproject = project / "pyproject.toml"
    if pyproject.is_file() and "maturin" in pyproject.read_text(encoding="utf-8", errors="replace"):
        return "maturin develop"
    if (project / "setup.py").is_file():
        return "python setup.py build_ext --inplace"
    return "pip install -e ."


def _make_target(text: str, offset: int) -> Optional[str]:
    """The Makefile rule whose recipe holds ``offset``."""
    for line in reversed(text[:offset].splitlines()):
        rule = re.match(r"^([\w.-]+)\s*:(?!=)", line)
        if rule:
            return rule.group(1) if not rule.group(1).startswith(".") else None
        if line and not line.startswith(("\t", " ", "#")):
            return None
    return None
