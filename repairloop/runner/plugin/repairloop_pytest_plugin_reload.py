"""Bringing a forked child of the warm server up to date with a candidate's source (part of the
pytest plugin).

The warm server (``repairloop_pytest_plugin_warm``) imports and collects the
suite once; each candidate runs in a forked child. Re-executing a changed
module would make new function objects while the rest of the process (names
imported with ``from m import f``, decorators, registries, bound methods)
keeps the old ones. Instead the child gives each existing function the code
object compiled from the candidate's source (``function.__code__``), so every
reference to it runs the new code; a module-level assignment to plain names
whose value alone changed (``DAYS = [...]``) is executed anew in the module's
namespace, when nothing that ran at import read those names
(``repairloop_pytest_plugin_shape``). That is exact only when nothing else in
the module changed, so a change is refused (the caller falls back to a fresh
process) unless it is confined to those:

* the module's statements, decorators, signatures, default values, class
  bodies outside methods must be equal (as ASTs, line numbers ignored);
* a function whose body changed must not have run while the suite was
  imported and collected (``trace_imports``): its result may live on in
  module state (``TABLE = build()``, a decorator, a parametrize list);
* the module must not be a test module, a conftest, assertion-rewritten by
  pytest, or an extension module, and a function's free variables must match.

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import ast
import gc
import os
import sys
import warnings
from types import CodeType, FunctionType
from typing import Any, Dict, FrozenSet, List, Set, Tuple

from repairloop_pytest_plugin_shape import Difference, Place, difference, first_reader

_CO_OPTIMIZED = 0x0001  # inspect.CO_OPTIMIZED: a function's code, not a module's or class body's
_ran: Set[CodeType] = set()  # code objects that ran while the suite was imported and collected


def _note_call(frame: Any, event: str, arg: Any) -> None:
    if event == "call":
        _ran.add(frame.f_code)


def trace_imports() -> None:
    """Record every function that runs from now on (``ran_while_importing``); call ``stop_tracing``
    after collection.

    ``sys.settrace`` sees Python calls only, in this thread; the trace
    function returns None, so no line events are paid for.
    """
    sys.settrace(_note_call)


def stop_tracing() -> bool:
    """Stop recording; False when something replaced the trace function meanwhile (what ran is then
    unknown)."""
    ours = sys.gettrace() is _note_call
    sys.settrace(None)
    return ours


def under(path: str, roots: Tuple[str, ...]) -> bool:
    return any(path == root or path.startswith(root + os.sep) for root in roots)


class Snapshot:
    """What the server imported from the tree under test, and the tree's Python sources then.

    ``root`` is the tree (absolute, real path); ``skip`` are directories inside
    it that are not the project (virtualenvs). ``modules`` maps the real path
    of each loaded module under the tree to its names in ``sys.modules``;
    ``sources`` the real path of every ``.py`` file under the tree (and of each
    loaded module) to its bytes; ``stats`` their ``(mtime_ns, size)``, to notice
    a file changed since; ``functions`` the live functions of those files.
    """

    def __init__(self, root: str, skip: Tuple[str, ...]) -> None:
        self.root = os.path.realpath(root)
        self.skip = tuple(os.path.realpath(s) for s in skip)
        self.sources: Dict[str, bytes] = {}
        self.modules: Dict[str, List[str]] = {}  # real path -> names in sys.modules
        for name, module in list(sys.modules.items()):
            path = _module_file(module)
            if path and under(path, (self.root,)) and not under(path, self.skip):
                self.modules.setdefault(path, []).append(name)
        self.stats = self.scan()
        for path in set(self.stats) | {p for p in self.modules if p.endswith(".py")}:
            try:
                with open(path, "rb") as handle:
                    self.sources[path] = handle.read()
            except OSError:
                continue
        self.functions = _functions_by_code(set(self.sources))

    def scan(self) -> Dict[str, Tuple[int, int]]:
        """``(mtime_ns, size)`` of every ``.py`` file under the tree (virtualenvs and caches left
        out)."""
        found: Dict[str, Tuple[int, int]] = {}
        for folder, dirs, files in os.walk(self.root):
            dirs[:] = [
                d
                for d in dirs
                if not d.startswith(".")
                and d != "__pycache__"
                and not under(os.path.join(folder, d), self.skip)
            ]
            for name in files:
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    try:
                        st = os.stat(path)
                    except OSError:
                        continue
                    found[path] = (st.st_mtime_ns, st.st_size)
        return found

    def foreign_changes(self, changed: FrozenSet[str]) -> List[str]:
        """``.py`` files under the tree whose content differs from the server's start, besides
        ``changed`` (real paths). A file rewritten with its old content counts as unchanged (and is
        not read again)."""
        now = self.scan()
        differ = sorted(
            p
            for p in set(now) | set(self.stats)
            if now.get(p) != self.stats.get(p) and p not in changed
        )
        foreign = [p for p in differ if self._content_differs(p)]
        for path in differ:
            if path not in foreign and path in now:
                self.stats[path] = now[path]
        return foreign

    def _content_differs(self, path: str) -> bool:
        if path not in self.sources:
            return True
        try:
            with open(path, "rb") as handle:
                return handle.read() != self.sources[path]
        except OSError:
            return True


def _module_file(module: Any) -> str:
    path = getattr(module, "__file__", None)
    return os.path.realpath(path) if isinstance(path, str) else ""


def _functions_by_code(files: Set[str]) -> Dict[Tuple[str, int, str], List[FunctionType]]:
    """Every live function defined in ``files``, by ``(real path, first line, name)`` of its
    code."""
    found: Dict[Tuple[str, int, str], List[FunctionType]] = {}
    real: Dict[str, str] = {}
    for obj in gc.get_objects():
        if isinstance(obj, FunctionType):
            code = obj.__code__
            path = real.get(code.co_filename)
            if path is None:
                path = real[code.co_filename] = os.path.realpath(code.co_filename)
            if path in files:
                found.setdefault((path, code.co_firstlineno, code.co_name), []).append(obj)
    return found


def refusal(path: str, snapshot: Snapshot, test_modules: FrozenSet[str]) -> str:
    """Why a changed file ``path`` (real path) cannot be brought up to date in a child, or ""."""
    base = os.path.basename(path)
    if not base.endswith(".py"):
        return f"{base} is not Python source (what read it at import time cannot be redone)"
    if base == "conftest.py":
        return f"{base} configures the test run"
    if path in test_modules:
        return f"{base} is a test module (its tests were collected from the old source)"
    names = snapshot.modules.get(path, [])
    if any(
        n.startswith(base[:-3] + ".") and n.endswith((".so", ".pyd"))
        for n in _listing(os.path.dirname(path))
    ):
        return (
            f"a compiled extension stands beside {base} (which one is imported depends on the "
            f"build)"
        )
    for name in names:
        loader = type(getattr(sys.modules.get(name), "__loader__", None)).__name__
        if loader == "AssertionRewritingHook":
            return f"pytest rewrote the asserts of {base} when it imported it"
    return ""


def _listing(folder: str) -> List[str]:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def bring_up_to_date(path: str, snapshot: Snapshot) -> str:
    """Give the functions of the module at ``path`` the code of its new source; "" or why not.

    A module the server never imported needs nothing: the child imports it
    from disk like a fresh process. Called in the child only: the server
    never compiles a candidate's source.
    """
    old = snapshot.sources.get(path)
    if old is None:
        return (
            ""
            if path not in snapshot.modules
            else f"{os.path.basename(path)} was not loaded from source"
        )
    try:
        with open(path, "rb") as handle:
            new = handle.read()
    except OSError as error:
        return f"{os.path.basename(path)} cannot be read: {error.strerror}"
    if new == old:
        return ""
    filename = _code_filename(path, snapshot)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            old_tree, new_tree = ast.parse(old), ast.parse(new)
            new_code = compile(new, filename, "exec", dont_inherit=True)
            old_code = compile(old, filename, "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as error:
        return f"{os.path.basename(path)} does not compile: {error}"
    changed = difference(old_tree, new_tree)
    if changed is None:
        return (
            f"{os.path.basename(path)} changed outside function bodies (module level, a "
            f"signature or a class body)"
        )
    why = _read_at_import(path, snapshot, changed.names, old_tree) if changed.rebinds else ""
    return (
        why
        or _swap_code(path, snapshot, changed.bodies, _defined(old_code), _defined(new_code))
        or _rebind(path, snapshot, changed, filename)
    )


def _read_at_import(
    path: str, snapshot: Snapshot, names: FrozenSet[str], old_tree: ast.Module
) -> str:
    """Why the module-level ``names`` of ``path`` cannot simply be bound anew: code that ran while
    the suite was imported read them (its results may hold the old values), or ""."""
    shown = ", ".join(sorted(names))
    for code in (
        _ran
    ):  # the tree's functions (module and class bodies: below); a library's do not name them
        if (
            code.co_flags & _CO_OPTIMIZED
            and names & (set(code.co_names) | set(code.co_consts))
            and under(os.path.realpath(code.co_filename), (snapshot.root,))
        ):
            return (
                f"{os.path.basename(path)}: {shown} read by {code.co_name}, which ran while the "
                f"suite was imported"
            )
    reader = first_reader(sorted(set(snapshot.sources) | {path}), names, {path: old_tree})
    return f"{os.path.basename(path)}: {shown} read when {reader} is imported" if reader else ""


def _rebind(path: str, snapshot: Snapshot, changed: Difference, filename: str) -> str:
    """Run the new module-level assignments of ``path`` in its module(s); "" or why not."""
    for name in snapshot.modules.get(path, []):
        module = sys.modules.get(name)
        if module is None:
            continue
        for statement, _ in changed.rebinds:
            try:
                exec(
                    compile(
                        ast.Module(body=[statement], type_ignores=[]),
                        filename,
                        "exec",
                        dont_inherit=True,
                    ),
                    module.__dict__,
                )
            except (
                Exception
            ) as error:  # the candidate's value fails: a fresh import shows that as it is
                return (
                    f"{os.path.basename(path)}: a new module-level value raised "
                    f"{type(error).__name__}"
                )
    return ""


def _code_filename(path: str, snapshot: Snapshot) -> str:
    """The file name the module's code objects carry (what tracebacks show), as the import gave
    it."""
    for name in snapshot.modules.get(path, []):
        given = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(given, str):
            return given
    return path


def _swap_code(
    path: str,
    snapshot: Snapshot,
    changed: Set[Place],
    old: List[Tuple[str, CodeType]],
    new: List[Tuple[str, CodeType]],
) -> str:
    """Point every live function of ``path`` at its new code (all of them: line numbers move too).

    ``old`` and ``new`` list the module's and its classes' own functions in
    compile order; module and class level being equal, they pair up one to one.
    """
    base = os.path.basename(path)
    if [q for q, _ in old] != [q for q, _ in new]:
        return f"{base}: its functions differ"
    swaps: List[Tuple[FunctionType, CodeType]] = []
    for (qualname, code), (_, new_code) in zip(old, new):
        live = snapshot.functions.get((path, code.co_firstlineno, code.co_name), [])
        if (code.co_firstlineno, code.co_name) in changed:
            if any(f.__code__ in _ran for f in live):
                return (
                    f"{base}: {qualname} ran while the suite was imported (its results may be "
                    f"kept at module level)"
                )
            if not live:
                return f"{base}: no function object holds {qualname}"
        swaps += [(function, new_code) for function in live]
    done: List[Tuple[FunctionType, CodeType]] = []
    for function, code in swaps:
        previous = function.__code__
        try:
            function.__code__ = code
        except ValueError:  # a different closure (free variables): not representable
            for undo, before in done:
                undo.__code__ = before
            return f"{base}: {function.__qualname__} uses different enclosing variables"
        done.append((function, previous))
    return ""


def _defined(code: CodeType, prefix: str = "") -> List[Tuple[str, CodeType]]:
    """The functions a module (or class body) defines itself, and those of its classes, in compile
    order."""
    found: List[Tuple[str, CodeType]] = []
    for const in code.co_consts:
        if isinstance(const, CodeType):
            found.append((prefix + const.co_name, const))
            if not const.co_flags & _CO_OPTIMIZED:  # a class body
                found += _defined(const, f"{prefix}{const.co_name}.")
    return found
