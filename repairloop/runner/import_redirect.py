"""Which of the project's modules the user's environment imports from the user's tree.

An editable install (``pip install -e .``: a ``.pth`` path, or setuptools'
finder mapping), a ``.pth`` file or a PYTHONPATH entry can make the user's
interpreter import the project's modules from the user's own tree. Tests run
in a copy of the project must import the copy instead, or a candidate patch is
never what the tests exercise (TECH-NOTES section 2). Nothing else may become
importable: an uninstalled src layout fails for the user, so it must fail here
too (DESIGN.md: "the baseline verdict equals the user's own command's").

``probe_imports`` asks the test interpreter itself, once per run and confined
like a test run (``runner.interpreter``), where each candidate top-level name
resolves (``importlib.util.find_spec`` with the current directory left out, as
a test command started elsewhere sees it) and
keeps the names that resolve inside the project. ``ImportRedirect.environment``
then gives a test process the variables that make exactly those names import
from a copy (``plugin/redirect``: a start-up hook and a meta path finder).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Set, Tuple

from repairloop.types import InterpreterQuery, relative_to

REDIRECT_DIR = Path(os.path.abspath(__file__)).parent / "plugin" / "redirect"
IMPORTS_ENV = "REPAIRLOOP_IMPORTS"  # read by plugin/redirect/repairloop_imports.py
PROBE_TIMEOUT = 60.0  # seconds
_SKIP_DIRS = frozenset(
    {"node_modules", "__pycache__", "build", "dist", "site-packages", "tests", "test"}
)

# Runs in the test interpreter: argv[1] is {"roots": [...], "names": [...]}; prints
# {name: [kind, [absolute paths]]} for every name that resolves inside a root.
_PROBE = r"""
import importlib.util, json, os, pkgutil, sys
args = json.loads(sys.argv[1])
cwd = os.getcwd()
sys.path[:] = [p for p in sys.path if p not in ("", ".", cwd)]
roots = [r.rstrip(os.sep) + os.sep for r in args["roots"]]
# A virtual environment inside the project (.venv) is installed packages, not the project's code.
envs = {
    f(p).rstrip(os.sep) + os.sep
    for p in (sys.prefix, sys.exec_prefix)
    for f in (os.path.abspath, os.path.realpath)
}
def inside(path):
    for form in {os.path.abspath(path), os.path.realpath(path)}:
        installed = any((form + os.sep).startswith(e) for e in envs)
        installed = installed or {"site-packages", "dist-packages"} & set(form.split(os.sep))
        if not installed and any((form + os.sep).startswith(r) for r in roots):
            return True
    return False
names = set(args["names"])
for entry in list(sys.path):
    if entry and inside(entry):
        names.update(info.name for info in pkgutil.iter_modules([entry]))
for finder in list(sys.meta_path):
    module = sys.modules.get(getattr(finder, "__module__", "") or "")
    for attr in ("MAPPING", "NAMESPACES"):
        table = getattr(module, attr, None)
        if isinstance(table, dict):
            names.update(n for n in table if isinstance(n, str) and "." not in n)
found = {}
for name in sorted(n for n in names if n.isidentifier()):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    if spec is None:
        continue
    locations = [str(p) for p in (spec.submodule_search_locations or [])]
    origin = spec.origin if spec.has_location else None
    if origin and not locations:
        kind, paths = "module", [origin]
    elif origin:
        kind, paths = "package", [os.path.dirname(origin)]
    else:
        kind, paths = "namespace", locations
    if paths and any(inside(p) for p in paths):
        found[name] = [kind, [os.path.abspath(p) for p in paths]]
print(json.dumps(found))
"""


@dataclass(frozen=True)
class ImportRedirect:
    """Top-level modules the user's interpreter imports from inside the project.

    ``entries`` holds ``(name, kind, locations)``: ``kind`` is ``package``,
    ``module`` or ``namespace``; each location is a path relative to the
    project (posix) when inside it, else absolute (a namespace package's
    portion installed elsewhere). Empty: nothing to redirect.
    """

    entries: Tuple[Tuple[str, str, Tuple[str, ...]], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.entries)

    @property
    def names(self) -> Tuple[str, ...]:
        return tuple(name for name, _, _ in self.entries)

    def table_for(self, root: Path) -> Dict[str, List[object]]:
        """``$REPAIRLOOP_IMPORTS``'s table for a copy of the project at ``root``."""
        table: Dict[str, List[object]] = {}
        for name, kind, locations in self.entries:
            paths = [p if os.path.isabs(p) else str(Path(root) / p) for p in locations]
            table[name] = [kind, paths]
        return table

    def environment(self, root: Path) -> Dict[str, str]:
        """Variables that redirect the names to ``root``: {} when there is nothing to redirect.

        ``PYTHONPATH`` holds only the start-up hook's directory; the caller
        puts it in front of the rest of PYTHONPATH.
        """
        if not self.entries:
            return {}
        return {IMPORTS_ENV: json.dumps(self.table_for(root)), "PYTHONPATH": str(REDIRECT_DIR)}


def candidate_names(project: Path) -> List[str]:
    """Top-level names the project could provide: packages and modules in its root and ``src/``.

    The probe adds whatever the interpreter finds in a path entry inside the
    project and the names of setuptools' editable finders; this list covers
    finders it cannot enumerate.
    """
    names: Set[str] = set()
    for base in (project, project / "src"):
        try:
            children = list(base.iterdir())
        except OSError:
            continue
        for child in children:
            if child.name.startswith(".") or child.name in _SKIP_DIRS:
                continue
            if child.is_dir() and not (child / "pyvenv.cfg").exists():
                names.add(child.name)
            elif child.suffix == ".py":
                names.add(child.stem)
    return sorted(n for n in names if n.isidentifier())


def probe_imports(
    ask: InterpreterQuery, project: Path, *, timeout: float = PROBE_TIMEOUT
) -> ImportRedirect:
    """Ask the test interpreter (``ask``, confined like a test run) which project modules it imports
    from ``project``.

    Never raises: an interpreter that cannot be run or answers nonsense gives an empty
    ImportRedirect (nothing redirected).
    """
    project = Path(project).absolute()
    roots = list(dict.fromkeys([str(project), str(project.resolve())]))
    args = json.dumps({"roots": roots, "names": candidate_names(project)})
    out = ask(["-c", _PROBE, args], timeout)
    try:
        data = json.loads((out or "").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return ImportRedirect()
    entries = []
    for name, entry in sorted(data.items()) if isinstance(data, dict) else ():
        if isinstance(entry, list) and len(entry) == 2 and isinstance(entry[1], list) and entry[1]:
            locations = tuple(relative_to(str(p), roots) or str(p) for p in entry[1])
            entries.append((str(name), str(entry[0]), locations))
    return ImportRedirect(tuple(entries))
