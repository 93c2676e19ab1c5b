"""Reference mutations from real fixes: another module constant, a constant's value, a method.

Three shapes the identifier families miss, each a ManySStuBs4J / PySStuBs pattern
(Karampatsis and Sutton, MSR 2020; Kamienski et al., MSR 2021):

* ``wrong_constant`` ("change identifier used", for module constants): a read of
  a module-level constant (``MAX_WIDTH``) replaced by another constant of the
  module, those sharing a word first. ``wrong_variable`` offers module names only
  after every local, so on a busy function the constant never comes up;
* ``constant_value`` ("change numeric literal", at its definition): a read of a
  module-level integer constant (``DIGITS = 6``) changes the definition by one.
  The definition runs at import for every test, so it ranks with every other
  module-level line and, in a long module, past the lines the engine mutates;
  the read is where the failing tests point;
* ``self_callable`` ("wrong function name", with a receiver): a plain call
  ``escape(x)`` in a method (any function whose first parameter is ``self``)
  becomes ``self.<m>(x)``, for ``m`` a method of the class or an attribute the
  file calls on ``self``: the same name and ``_name`` first (a helper that became
  a method), then the others. Seen in mistune's ``render_block_image``
  (``escape_text(src)`` for ``self.safe_url(src)``, fixtures/realbugs).
"""

from __future__ import annotations

import ast
import builtins
import re
from typing import Dict, Iterator, List, Tuple

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_ops import make
from repairloop.propose.builtin.mutation import Mutation, alt_weight

_CONSTANT_NAME = re.compile(r"^_?[A-Z][A-Z0-9_]*$")
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
MAX_CONSTANTS = 4  # per read: a module of fifty constants must not add fifty candidates
MAX_METHODS = 4


def module_constants(model: FileModel) -> Dict[str, ast.Assign]:
    """``{NAME: its one assignment}`` for module-level ``NAME = value`` with an upper-case name,
    assigned once at module level (a name assigned twice is state, not a constant)."""
    key = ("module_constants", 0)
    if key not in model.memo:
        found: Dict[str, ast.Assign] = {}
        twice = set()
        for stmt in model.source.tree.body:
            if not isinstance(stmt, ast.Assign) or len(stmt.targets) != 1:
                continue
            target = stmt.targets[0]
            if isinstance(target, ast.Name) and _CONSTANT_NAME.match(target.id):
                if target.id in found:
                    twice.add(target.id)
                found[target.id] = stmt
        model.memo[key] = {k: v for k, v in found.items() if k not in twice}
    return model.memo[key]  # type: ignore[return-value]


def _constant_read(model: FileModel, node: ast.AST) -> str:
    """The constant's name when ``node`` reads a module constant not shadowed locally, else ""."""
    if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
        return ""
    if node.id not in module_constants(model) or node.id in model.local_vars(node):
        return ""
    return node.id


def _shared_words(a: str, b: str) -> int:
    return len(set(a.strip("_").split("_")) & set(b.strip("_").split("_")))


def wrong_constant(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """A read of module constant ``A`` replaced by another module constant ``B`` (those sharing a
    word with ``A`` first, then by distance of their definitions; at most ``MAX_CONSTANTS``)."""
    name = _constant_read(model, node)
    if not name:
        return
    constants = module_constants(model)
    own = constants[name].lineno
    others = sorted(
        (n for n in constants if n != name),
        key=lambda n: (-_shared_words(n, name), abs(constants[n].lineno - own), n),
    )
    start, end = model.source.span(node)
    for k, other in enumerate(others[:MAX_CONSTANTS]):
        weight = alt_weight(k) * (1.0 if _shared_words(other, name) else 0.8)
        yield make(model, "wrong_constant", start, end, other, weight, f"`{name}` -> `{other}`")


def constant_value(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """A read of ``N`` where the module says ``N = 6``: the definition becomes ``N = 7`` or
    ``N = 5`` (the edit is on the definition's line)."""
    name = _constant_read(model, node)
    if not name:
        return
    value = module_constants(model)[name].value
    if not isinstance(value, ast.Constant) or type(value.value) is not int:
        return
    start, end = model.source.span(value)
    for k, new in enumerate((value.value + 1, value.value - 1)):
        what = f"`{name} = {value.value}` -> `{name} = {new}`"
        yield make(model, "constant_value", start, end, str(new), 1.0 - 0.1 * k, what)


def _self_called(model: FileModel, owner: str) -> Tuple[str, ...]:
    """Attribute names the file calls on ``self`` (``self.safe_url(...)``) in the methods of class
    ``owner`` ("" : in module-level functions that take a ``self``, like mistune's renderer
    plug-ins), sorted: there ``self`` is the same kind of object."""
    key = ("self_called:" + owner, 0)
    if key not in model.memo:
        names = set()
        for n in ast.walk(model.source.tree):
            if (
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name)
                and n.func.value.id == "self"
            ):
                cls = model.class_of(n)
                if (cls.name if cls is not None else "") == owner:
                    names.add(n.func.attr)
        model.memo[key] = tuple(sorted(names))
    return model.memo[key]  # type: ignore[return-value]


def _method_choices(model: FileModel, call: ast.Call, name: str) -> List[Tuple[str, float]]:
    owner = model.class_of(call)
    table = model.methods.get(owner.name, {}) if owner is not None else {}
    called = _self_called(model, owner.name if owner is not None else "")
    names = {n for n, sig in table.items() if sig.accepts(call)} | set(called)
    names.discard("__init__")
    names.discard(getattr(model.function_of(call), "name", ""))  # recursion is wrap_call's
    bare = name.lstrip("_")

    def weight(n: str) -> float:
        # No bonus for a method sharing a word with the called function: the counted real fix
        # shares none (``escape_text`` to ``self.safe_url``, fixtures/bench/README.md), and one
        # outranked the right unwrap on a real bug (``escape_text(x)`` to ``self.text(x)``,
        # mistune-image-alt-double-encoding, BENCHMARKS.md figure 16).
        return 1.0 if n.lstrip("_") == bare else 0.6

    ranked = sorted(names, key=lambda n: (-weight(n), n))
    return [(n, weight(n)) for n in ranked[:MAX_METHODS]]


def self_callable(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``f(x)`` to ``self.m(x)`` inside a function whose first parameter is ``self``."""
    if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Name):
        return
    fn = model.function_of(node)
    if not isinstance(fn, _FUNCS):
        return
    params = fn.args.posonlyargs + fn.args.args
    name = node.func.id
    if not params or params[0].arg != "self" or name in model.local_vars(node):
        return
    if hasattr(builtins, name) or name[:1].isupper():
        return  # `len(x)` or `Parser(x)`: a builtin or a class is not a method that lost `self.`
    start, end = model.source.span(node.func)
    for method, weight in _method_choices(model, node, name):
        what = f"`{name}()` -> `self.{method}()`"
        yield make(
            model,
            "self_callable",
            start,
            end,
            f"self.{method}",
            weight,
            what,
        )
