"""Call-shape mutations: wrap an expression in a call, or turn a method into a function.

Two slips the identifier families cannot express, both common in small
algorithm programs and in PySStuBs' "missing call" pattern (Kamienski et al.,
MSR 2021):

* a missing wrapper: ``a - b < eps`` for ``abs(a - b) < eps``, ``ch * count``
  for ``ch * int(count)``, ``range(xs)`` for ``range(len(xs))``,
  ``out.extend(item)`` for ``out.extend(flatten(item))`` (the missing
  recursive call). Wrappers are the numeric builtins for numeric positions and,
  for value positions, the enclosing function when it takes one argument (a
  recursion), the file's other one-argument functions and the one-argument
  builtins the file already calls;
* an in-place method used for its value (``ordered = xs.sort()`` is ``None``)
  or a pure function called for an effect (``sorted(xs)`` as a statement).
"""

from __future__ import annotations

import ast
import builtins
from typing import Iterator, List, Optional, Set, Tuple, cast

from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate_ops import make
from repairloop.propose.builtin.mutation import Mutation, wrap

_WRAPPABLE = (ast.Name, ast.Subscript, ast.Attribute, ast.BinOp, ast.Call)
_ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.FloorDiv, ast.Mod, ast.Div)
_ORDERING = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
# One-argument builtins worth offering where the file already calls them with one argument.
_VALUE_BUILTINS = (
    "list",
    "sorted",
    "set",
    "tuple",
    "str",
    "int",
    "float",
    "len",
    "abs",
    "reversed",
)
MAX_WRAPPERS = 4  # per site: wrappers multiply candidates by every operand of the line


def _file_builtins(model: FileModel) -> Tuple[str, ...]:
    """One-argument builtins the file calls somewhere (``int(x)``, ``len(xs)``), in a fixed
    order."""
    key = ("wrap_call", 0)
    if key not in model.memo:
        model.memo[key] = _scan_builtins(model)
    return model.memo[key]  # type: ignore[return-value]


def _scan_builtins(model: FileModel) -> Tuple[str, ...]:
    used: Set[str] = set()
    for node in ast.walk(model.source.tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and len(node.args) == 1:
            if not node.keywords and node.func.id in _VALUE_BUILTINS:
                used.add(node.func.id)
    shadowed = set(model.functions) | set(model.module_vars)
    return tuple(
        n for n in _VALUE_BUILTINS if n in used and n not in shadowed and hasattr(builtins, n)
    )


def _own_unary_functions(model: FileModel, node: ast.AST) -> List[Tuple[str, float]]:
    """The file's functions callable with one positional argument, the enclosing one first."""
    probe = ast.Call(
        func=ast.Name(id="f", ctx=ast.Load()), args=[cast(ast.expr, node)], keywords=[]
    )
    enclosing = model.function_of(node)
    name = getattr(enclosing, "name", None)
    found = []
    for fn, sig in sorted(model.functions.items()):
        if sig.accepts(probe):
            found.append((fn, 1.0 if fn == name else 0.7))
    found.sort(key=lambda f: -f[1])
    return found


def _numeric_position(model: FileModel, node: ast.AST) -> Optional[str]:
    """``arithmetic`` or ``ordering`` (an operand of one), ``range`` (its argument), or None."""
    parent = model.parent(node)
    if isinstance(parent, ast.BinOp) and isinstance(parent.op, _ARITHMETIC):
        return "arithmetic"
    if isinstance(parent, ast.Compare) and all(isinstance(op, _ORDERING) for op in parent.ops):
        return "ordering"
    if (
        isinstance(parent, ast.Call)
        and isinstance(parent.func, ast.Name)
        and parent.func.id == "range"
    ):
        return "range" if any(a is node for a in parent.args) else None
    return None


def _value_position(model: FileModel, node: ast.AST) -> bool:
    """A value handed on whole: a call argument, a returned, yielded or assigned value."""
    parent = model.parent(node)
    if isinstance(parent, ast.Call):
        return any(a is node for a in parent.args) and not _is_builtin_call(parent)
    if isinstance(parent, (ast.Return, ast.Yield, ast.YieldFrom)):
        return parent.value is node
    return isinstance(parent, ast.Assign) and parent.value is node


def _is_builtin_call(call: ast.Call) -> bool:
    return isinstance(call.func, ast.Name) and hasattr(builtins, call.func.id)


def _numeric_wrappers(node: ast.AST, position: str) -> List[Tuple[str, float]]:
    """A difference compared or summed wants ``abs``; a sequence compared or ranged wants
    ``len``; a string in arithmetic (``ch * count``) wants ``int``."""
    if isinstance(node, ast.BinOp):
        return [("abs", 1.0)] if isinstance(node.op, ast.Sub) and position != "range" else []
    if isinstance(node, ast.Call):
        return []
    if position == "range":
        return [("len", 1.0)]
    if position == "ordering":
        return [("len", 0.7), ("abs", 0.5)]
    return [("int", 0.6)]


def _wrappers(model: FileModel, node: ast.AST) -> List[Tuple[str, float]]:
    if not isinstance(node, _WRAPPABLE) or model.is_callee(node):
        return []
    if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
        return []
    found: List[Tuple[str, float]] = []
    position = _numeric_position(model, node)
    if position is not None:
        found += _numeric_wrappers(node, position)
    if _value_position(model, node) and not isinstance(node, ast.BinOp):
        found += _own_unary_functions(model, node)
        found += [(b, 0.5) for b in _file_builtins(model)]
    parent = model.parent(node)
    outer = (
        parent.func.id if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) else ""
    )
    unique: List[Tuple[str, float]] = []
    for name, weight in found:  # never `abs(abs(x))`, never the same wrapper twice
        if name != outer and name not in (n for n, _ in unique):
            unique.append((name, weight))
    return unique[:MAX_WRAPPERS]


def wrap_call(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``x`` to ``f(x)``: a missing ``abs``/``len``/``int`` or a missing (recursive) call."""
    wrappers = _wrappers(model, node)
    if not wrappers:
        return
    src = model.source
    start, end = src.span(node)
    text = wrap(src.text[start:end], node, 0)
    for name, weight in wrappers:
        yield make(
            model,
            "wrap_call",
            start,
            end,
            f"{name}({text})",
            weight,
            f"`{text}` -> `{name}({text})`",
        )


def _is_statement_call(model: FileModel, node: ast.Call) -> bool:
    return isinstance(model.parent(node), ast.Expr)


def method_to_function(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``v = xs.sort()`` to ``v = sorted(xs)``; ``sorted(xs)`` as a statement to ``xs.sort()``.

    Likewise ``reverse``/``reversed``. The in-place methods return None, so their
    value is never what was meant; the functions return a new object, so calling
    them for an effect does nothing.
    """
    if isinstance(node, ast.Call):
        yield from _method_as_function(model, node)
        yield from _function_as_method(model, node)


def _method_as_function(model: FileModel, node: ast.Call) -> Iterator[Mutation]:
    """``xs.sort()`` / ``xs.reverse()`` used for its value -> ``sorted(xs)`` / ``reversed``."""
    src = model.source
    start, end = src.span(node)
    func = node.func
    if (
        isinstance(func, ast.Attribute)
        and func.attr in ("sort", "reverse")
        and not _is_statement_call(model, node)
    ):
        receiver = wrap(src.segment(func.value), func.value, 0)
        if func.attr == "sort" and not node.args:
            extra = "".join(", " + src.segment(k) for k in node.keywords)
            yield make(
                model,
                "wrong_function",
                start,
                end,
                f"sorted({receiver}{extra})",
                1.0,
                "`.sort()` -> `sorted()`",
            )
        elif func.attr == "reverse" and not node.args and not node.keywords:
            yield make(
                model,
                "wrong_function",
                start,
                end,
                f"list(reversed({receiver}))",
                1.0,
                "`.reverse()` -> `reversed()`",
            )


def _function_as_method(model: FileModel, node: ast.Call) -> Iterator[Mutation]:
    """``sorted(xs)`` / ``reversed(xs)`` called for an effect -> ``xs.sort()`` / ``.reverse()``."""
    src = model.source
    start, end = src.span(node)
    func = node.func
    if (
        isinstance(func, ast.Name)
        and func.id in ("sorted", "reversed")
        and _is_statement_call(model, node)
    ):
        if len(node.args) != 1 or isinstance(node.args[0], ast.Starred):
            return
        method = "sort" if func.id == "sorted" else "reverse"
        if method == "reverse" and node.keywords:
            return
        receiver = wrap(src.segment(node.args[0]), node.args[0], 16)
        keywords = ", ".join(src.segment(k) for k in node.keywords)
        yield make(
            model,
            "wrong_function",
            start,
            end,
            f"{receiver}.{method}({keywords})",
            1.0,
            f"`{func.id}()` -> `.{method}()`",
        )
