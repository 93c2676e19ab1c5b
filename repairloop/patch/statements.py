"""What a candidate changes in a Python file, as whole top-level statements.

The content guards (``tamper.py``) and the overfitting flags (``overfit.py``)
ask one question of each candidate: which constructs does the new text have
that the old one did not? Their rules look at one node at a time, so the
answer only depends on the top-level statements the candidate touches.
Scanning those instead of the whole module keeps a candidate's guard cost
flat in the module's size: on a 3,000-line module it was about half a second
per candidate before (BENCHMARKS.md, figure 1, big_module).

Statements are matched by their source lines (decorators included), so an
untouched function that merely moved down keeps its identity. Parses are
cached by text: every candidate of a run is checked against the same old text.
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import List, Optional, Sequence, Tuple

from repairloop.textutil import common_ends

# Old and new text of the file being checked, and of one more (a candidate seldom touches more).
_CACHED_PARSES = 4
_LINE_BREAK = re.compile(r"\r\n|\r|\n")


@lru_cache(maxsize=_CACHED_PARSES)
def parse_module(text: str) -> Optional[ast.Module]:
    """``ast.parse(text)``, or None when it does not parse; cached by text.

    Callers must not modify the tree: it is shared with every later caller.
    """
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


@dataclass(frozen=True)
class StatementDelta:
    """Top-level statements a candidate removes from a file and adds to it.

    ``old_tree`` is the whole old module (None for a created file or one that
    does not parse); ``removed`` are statements of it, ``added`` statements of
    the new text (with their line numbers in the new file) whose source lines
    differ between the two. A statement that is only moved counts as neither.
    ``parses`` is False when the new text (or the changed part of it) does not
    parse, or the file is deleted; ``check_syntax`` has the verdict on syntax.
    """

    old_tree: Optional[ast.Module]
    new_text: Optional[str]
    removed: Tuple[ast.stmt, ...]
    added: Tuple[ast.stmt, ...]
    parses: bool

    def new_module(self) -> Optional[ast.Module]:
        """The whole new module, parsed on demand (None when deleted or unparsable)."""
        return parse_module(self.new_text) if self.new_text is not None else None


def statement_delta(old_text: Optional[str], new_text: Optional[str]) -> StatementDelta:
    """The changed top-level statements between ``old_text`` and ``new_text``.

    Only the part of the new text that replaces the touched old statements is
    parsed, so the cost follows the size of the change, not of the module;
    when that part does not parse on its own, the whole text is. A side that
    is None (a created or deleted file) or does not parse has no statements,
    so everything on the other side counts as changed.
    """
    old_tree = parse_module(old_text) if old_text is not None else None
    if old_tree is not None and old_text is not None and new_text is not None:
        region = _changed_region(old_tree, _lines(old_text), _lines(new_text))
        if region is not None:
            removed, added_text, offset = region
            added_tree = _parse_uncached(added_text)
            if added_tree is not None:
                ast.increment_lineno(added_tree, offset)
                kept_old, kept_new = _unmatched(
                    _keyed_nodes(removed, _lines(old_text)),
                    _keyed_nodes(added_tree.body, _lines(new_text)),
                )
                return StatementDelta(old_tree, new_text, kept_old, kept_new, True)
    new_tree = parse_module(new_text) if new_text is not None else None
    removed_all, added_all = _unmatched(_keyed(old_tree, old_text), _keyed(new_tree, new_text))
    return StatementDelta(old_tree, new_text, removed_all, added_all, new_tree is not None)


def _lines(text: str) -> List[str]:
    """Lines as the compiler numbers them (``str.splitlines`` also splits at form feeds)."""
    return _LINE_BREAK.split(text)


def _changed_region(
    old_tree: ast.Module, old: List[str], new: List[str]
) -> Optional[Tuple[List[ast.stmt], str, int]]:
    """(old statements touched, the new text that replaces them, its line offset), or None
    when nothing changed."""
    prefix, suffix = common_ends(old, new)
    first, last = (
        prefix + 1,
        len(old) - suffix,
    )  # changed old lines, 1-based; last < first: an insertion
    if first > last and len(old) == len(new):
        return None
    # an insertion touches both neighbours
    low, high = (first, last) if last >= first else (first - 1, first)
    touched = [
        node for node in old_tree.body if _first_line(node) <= high and _last_line(node) >= low
    ]
    start = min([first] + [_first_line(node) for node in touched])
    end = max([last] + [_last_line(node) for node in touched])
    new_end = end + len(new) - len(old)
    return touched, "\n".join(new[start - 1 : new_end]), start - 1


def _parse_uncached(text: str) -> Optional[ast.Module]:
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def _unmatched(
    old: List[Tuple[str, ast.stmt]], new: List[Tuple[str, ast.stmt]]
) -> Tuple[Tuple[ast.stmt, ...], Tuple[ast.stmt, ...]]:
    """Statements of ``old`` and of ``new`` without a twin (same source lines) on the other side."""
    remaining = Counter(key for key, _ in old)
    added = []
    for key, node in new:
        if remaining[key] > 0:
            remaining[key] -= 1
        else:
            added.append(node)
    removed = []
    for key, node in reversed(old):  # the last copies of a repeated statement are the removed ones
        if remaining[key] > 0:
            remaining[key] -= 1
            removed.append(node)
    return tuple(reversed(removed)), tuple(added)


def _keyed(tree: Optional[ast.Module], text: Optional[str]) -> List[Tuple[str, ast.stmt]]:
    if tree is None or text is None:
        return []
    return _keyed_nodes(tree.body, _lines(text))


def _keyed_nodes(nodes: Sequence[ast.stmt], lines: List[str]) -> List[Tuple[str, ast.stmt]]:
    return [("\n".join(lines[_first_line(node) - 1 : _last_line(node)]), node) for node in nodes]


def _first_line(node: ast.stmt) -> int:
    decorators: List[ast.expr] = getattr(node, "decorator_list", [])
    return min([d.lineno for d in decorators] + [node.lineno])


def _last_line(node: ast.stmt) -> int:
    return getattr(node, "end_lineno", None) or node.lineno
