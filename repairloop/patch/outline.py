"""Definitions of Python code by qualified name, with their line spans (for whole-function answers).

A definition's span runs from its first decorator to its last line, and on
over comment lines indented deeper than its ``def``/``class`` line: a body
ending in ``# ... rest unchanged`` must count that comment as part of the
body (``ast`` ends the node at the last statement), or a replacement would
silently keep or drop it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple, Union

DefNode = Union[ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef]
DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Definition:
    """A function, method or class: 1-based inclusive lines ``start``..``end`` (decorators
    included)."""

    qualname: str  # "add", "Stack.pop"
    is_class: bool
    start: int
    line: int  # the def/class line
    end: int
    indent: str  # leading whitespace of the def/class line
    node: DefNode


def parse_module(text: str) -> Optional[ast.Module]:
    """The module's tree, or None when ``text`` does not parse."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def definitions(tree: ast.Module, lines: Sequence[str]) -> Dict[str, Definition]:
    """Top-level functions and classes and, recursively, the members of classes, by qualified name.

    Functions nested inside functions are part of their function. A name
    defined twice at one level keeps its last definition (Python's own rule).
    """
    found: Dict[str, Definition] = {}
    _walk(tree.body, "", lines, found)
    return found


def _walk(
    body: Sequence[ast.stmt], prefix: str, lines: Sequence[str], found: Dict[str, Definition]
) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            definition = describe(node, prefix, lines)
            found[definition.qualname] = definition
            if isinstance(node, ast.ClassDef):
                _walk(node.body, definition.qualname + ".", lines, found)


def describe(node: DefNode, prefix: str, lines: Sequence[str]) -> Definition:
    """The Definition of ``node`` in ``lines`` (the text it was parsed from, without newlines)."""
    start = min([node.lineno] + [d.lineno for d in node.decorator_list])
    header = lines[node.lineno - 1]
    indent = header[: len(header) - len(header.lstrip())]
    end = span_end(lines, node.end_lineno or node.lineno, indent)
    return Definition(
        prefix + node.name, isinstance(node, ast.ClassDef), start, node.lineno, end, indent, node
    )


def span_end(lines: Sequence[str], end: int, indent: str) -> int:
    """``end`` moved over the comment lines that follow it indented deeper than ``indent``."""
    last = end
    for number in range(end + 1, len(lines) + 1):
        text = lines[number - 1]
        if not text.strip():
            continue
        deeper = len(text) - len(text.lstrip()) > len(indent)
        if not (deeper and text.lstrip().startswith("#")):
            break
        last = number
    return last


def members(definition: Definition) -> List[str]:
    """Names of the functions and classes defined directly in a class's body."""
    if not isinstance(definition.node, ast.ClassDef):
        return []
    return [
        n.name
        for n in definition.node.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]


def statement_keys(body: Sequence[ast.stmt]) -> List[str]:
    """A comparable key (``ast.dump`` without positions) per statement that is no definition."""
    return [
        ast.dump(s)
        for s in body
        if not isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
    ]


def is_stub(node: DefNode) -> bool:
    """True when the body is only ``...`` (after an optional docstring): a placeholder, not code."""
    body = list(node.body)
    if body and _is_docstring(body[0]) and len(body) > 1:
        body = body[1:]
    return (
        len(body) == 1
        and isinstance(body[0], ast.Expr)
        and isinstance(body[0].value, ast.Constant)
        and body[0].value.value is Ellipsis
    )


def _is_docstring(stmt: ast.stmt) -> bool:
    return (
        isinstance(stmt, ast.Expr)
        and isinstance(stmt.value, ast.Constant)
        and isinstance(stmt.value.value, str)
    )


def shown_span(spans: Sequence[Tuple[int, int]], definition: Definition) -> bool:
    """True when the def/class line to the end of ``definition`` lies inside one of ``spans``."""
    return any(a <= definition.line and definition.end <= b for a, b in spans) or any(
        a <= definition.line and (definition.node.end_lineno or definition.line) <= b
        for a, b in spans
    )


def is_demo(tree: ast.Module, new: List[str]) -> bool:
    """True when every new module statement is demo code: a main guard or a bare call such as
    print()."""
    for stmt in tree.body:
        if isinstance(stmt, DEF_TYPES) or ast.dump(stmt) not in new:
            continue
        main = isinstance(stmt, ast.If) and "__name__" in ast.dump(stmt.test)
        call = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)
        if not (main or call):
            return False
    return True


def first_new(tree: ast.Module, new: List[str]) -> str:
    stmt = next(s for s in tree.body if not isinstance(s, DEF_TYPES) and ast.dump(s) in new)
    return f"its line {stmt.lineno}: `{ast.unparse(stmt).splitlines()[0][:80]}`"


def syntax_error(code: str) -> str:
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return f"{exc.msg} (its line {exc.lineno})"
    return "unknown error"
