"""Imports of the project's own modules, sent to repairloop's copy of the project.

Loaded at interpreter start-up by the ``sitecustomize.py`` beside it, in every
Python process a test run starts (pytest, a test's subprocesses), when
repairloop puts this directory on PYTHONPATH. It runs under the project's
Python, so it uses the standard library only (Python 3.8+).

``$REPAIRLOOP_IMPORTS`` is a JSON object ``{name: [kind, [path, ...]]}`` for
each top-level module that the user's environment imports from inside the
user's tree (an editable install, a ``.pth``, PYTHONPATH), with the paths
already mapped to the copy: ``kind`` is ``package`` (the package directory),
``module`` (the file) or ``namespace`` (every portion, in the user's order).
Exactly those names are redirected; nothing else becomes importable
(DESIGN.md: the baseline verdict equals the user's own command's).
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import json
import os
import sys
from typing import Any, Dict, List, Optional, Sequence, Tuple

IMPORTS_ENV = "REPAIRLOOP_IMPORTS"

Table = Dict[str, Tuple[str, List[str]]]


class WorkspaceFinder:
    """A meta path finder, first on ``sys.meta_path``, for the names of its table only."""

    def __init__(self, table: Table) -> None:
        self.table = table

    def find_spec(
        self, fullname: str, path: Optional[Sequence[str]] = None, target: Any = None
    ) -> Any:
        entry = self.table.get(fullname)
        if entry is None:
            return None
        kind, locations = entry
        if kind == "namespace":
            spec = importlib.machinery.ModuleSpec(fullname, None, is_package=True)
            spec.submodule_search_locations = list(locations)
            return spec
        where = locations[0]
        found = importlib.machinery.PathFinder.find_spec(fullname, [os.path.dirname(where)])
        if found is None:
            # Never fall through to the user's tree: the copy under test lacks this module.
            raise ModuleNotFoundError(
                f"No module named '{fullname}' in repairloop's copy of the project ({where} is "
                f"missing; "
                "your environment imports it from your own tree)",
                name=fullname,
            )
        return found

    def invalidate_caches(self) -> None:
        """Nothing cached here (PathFinder keeps its own caches)."""


def read_table(raw: Optional[str]) -> Table:
    """The table of ``$REPAIRLOOP_IMPORTS``; {} when unset or malformed."""
    if not raw:
        return {}
    try:
        data = json.loads(raw)
    except ValueError:
        return {}
    table: Table = {}
    if isinstance(data, dict):
        for name, entry in data.items():
            try:
                kind, locations = entry
            except (TypeError, ValueError):
                continue
            if isinstance(kind, str) and isinstance(locations, list) and locations:
                table[str(name)] = (kind, [str(p) for p in locations])
    return table


def install() -> None:
    """Put a WorkspaceFinder for ``$REPAIRLOOP_IMPORTS`` first on ``sys.meta_path`` (once)."""
    table = read_table(os.environ.get(IMPORTS_ENV))
    if not table or any(isinstance(f, WorkspaceFinder) for f in sys.meta_path):
        return
    sys.meta_path.insert(0, WorkspaceFinder(table))


def run_shadowed_sitecustomize(ours: str) -> None:
    """Run the ``sitecustomize`` that ``ours`` hides (the next one on sys.path), as Python would
    have."""
    here = os.path.dirname(os.path.abspath(ours))
    for entry in list(sys.path):
        if not entry or os.path.abspath(entry) == here:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry])
        if spec is None or spec.loader is None:
            continue
        module = importlib.util.module_from_spec(spec)
        sys.modules["sitecustomize"] = module
        spec.loader.exec_module(module)
        return
