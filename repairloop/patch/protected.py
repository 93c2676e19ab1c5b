"""Test and dependency sections of ``pyproject.toml`` and ``setup.cfg``.

These two files mix what a fix may touch (a version, a tool's settings) with
what decides the verdict (pytest's options, coverage thresholds, test
environments) and the project's dependency pins. Whole files that are only
test configuration, CI or pins (``pytest.ini``, ``tox.ini``, ``.github/**``,
``requirements*.txt``...) are refused by glob (``GuardPolicy.protected_globs``);
these two are compared section by section.
"""

from __future__ import annotations

import configparser
import posixpath
import sys
from fnmatch import fnmatchcase
from typing import Any, Dict, List, Optional, Tuple

from repairloop.patch.changes import FileChange

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib

# Dotted keys of pyproject.toml: test runners and environments (PEP 518 [tool.*] tables),
# dependency declarations (PEP 621, PEP 735, Poetry, PDM, uv) and repairloop's own settings.
PYPROJECT_KEYS: Tuple[str, ...] = (
    "tool.pytest",
    "tool.coverage",
    "tool.tox",
    "tool.nox",
    "tool.hatch.envs",
    "tool.repairloop",
    "project.dependencies",
    "project.optional-dependencies",
    "project.requires-python",
    "build-system",
    "dependency-groups",
    "tool.poetry.dependencies",
    "tool.poetry.dev-dependencies",
    "tool.poetry.group",
    "tool.pdm.dev-dependencies",
    "tool.uv",
)
# setup.cfg sections (fnmatch) that are test configuration, and dependency options of [options].
SETUP_CFG_SECTIONS: Tuple[str, ...] = (
    "tool:pytest",
    "pytest",
    "coverage:*",
    "tox",
    "tox:*",
    "options.extras_require",
    "repairloop",
)
SETUP_CFG_OPTIONS: Tuple[str, ...] = (
    "install_requires",
    "setup_requires",
    "tests_require",
    "python_requires",
)


def _lookup(data: Dict[str, Any], dotted: str) -> Any:
    node: Any = data
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


def _toml(text: Optional[str]) -> Optional[Dict[str, Any]]:
    if text is None:
        return {}
    try:
        data: Dict[str, Any] = tomllib.loads(text)
        return data
    except (tomllib.TOMLDecodeError, ValueError):
        return None


def _cfg(text: Optional[str]) -> Optional[Dict[str, Dict[str, str]]]:
    if text is None:
        return {}
    parser = configparser.RawConfigParser(strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return {name: dict(parser.items(name)) for name in parser.sections()}


def _pyproject_changes(old: Dict[str, Any], new: Dict[str, Any]) -> List[str]:
    return [f"[{key}]" for key in PYPROJECT_KEYS if _lookup(old, key) != _lookup(new, key)]


def _setup_cfg_changes(old: Dict[str, Dict[str, str]], new: Dict[str, Dict[str, str]]) -> List[str]:
    names = sorted(set(old) | set(new))
    out = [
        f"[{n}]"
        for n in names
        if any(fnmatchcase(n, p) for p in SETUP_CFG_SECTIONS) and old.get(n) != new.get(n)
    ]
    for option in SETUP_CFG_OPTIONS:
        if old.get("options", {}).get(option) != new.get("options", {}).get(option):
            out.append(f"[options] {option}")
    return out


def protected_sections(change: FileChange) -> Optional[str]:
    """What of a ``pyproject.toml``/``setup.cfg`` change touches test or dependency sections.

    Returns None when the change leaves them alone (or the file is another
    one), else a phrase for the error message: the changed sections, or that
    the new text no longer parses (then nothing in it can be trusted). An old
    text that does not parse protects the whole file.
    """
    name = posixpath.basename(change.path)
    if name == "pyproject.toml":
        old_t, new_t = _toml(change.old_text), _toml(change.new_text)
        if old_t is None or new_t is None:
            return "a pyproject.toml that does not parse as TOML"
        changed = _pyproject_changes(old_t, new_t)
    elif name == "setup.cfg":
        old_c, new_c = _cfg(change.old_text), _cfg(change.new_text)
        if old_c is None or new_c is None:
            return "a setup.cfg that does not parse"
        changed = _setup_cfg_changes(old_c, new_c)
    else:
        return None
    if not changed:
        return None
    return "its test or dependency settings (" + ", ".join(changed[:4]) + ")"
