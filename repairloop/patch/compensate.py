"""A candidate that compensates: it changes the data a failing assertion compares, not the code
computing it.

Seen with the offline engine on real libraries (issue 14): ``codes.append(code)``
turned into ``codes.extend(code)`` so that a list held the characters of a
string and a length check passed, with the faulty line left untouched; and
``self.maxsize += 1`` kept as a partial fix that lets a cache grow past its
limit. Both make the failing assertion pass by changing what it looks at, not
how it is computed. Such candidates are *flagged* (``FlagKind.COMPENSATES``),
never refused: the same edit is sometimes the real fix, and only a reader can
tell.

A candidate is flagged when every line it changes in a Python source file is
one of these (each compared with the line it replaces, or added on its own):

* a call storing into a container whose method changed between storing
  methods (``append`` to ``extend``, ``add`` to ``update``), receiver and
  arguments unchanged: it changes the shape of the stored data;
* an assignment to a name or attribute the failing tests' assertions name
  (``self._maxsize``, ``maxsize``: leading underscores ignored) whose value
  changed only by a number (``= n`` to ``= n + 1``, ``+= 1`` added).
"""

from __future__ import annotations

import ast
import difflib
from pathlib import Path
from typing import FrozenSet, List, Optional, Sequence, Set, Tuple

from repairloop.patch.changes import AppliedPatch
from repairloop.patch.testliterals import assertion_nodes
from repairloop.types import Flag, FlagKind, TestFiles

STORING_METHODS = frozenset(
    {"append", "extend", "insert", "add", "update", "appendleft", "extendleft"}
)


def _bare(name: str) -> str:
    return name.lstrip("_").rsplit("__", 1)[-1]  # self.__maxsize is stored as _Cache__maxsize


def assertion_names(root: Path, test_ids: Sequence[str]) -> FrozenSet[str]:
    """Names and attribute names (leading underscores removed) in the failing tests' assertions.

    ``test_ids`` are pytest node ids relative to ``root``; files or tests not
    found contribute nothing. Raises nothing.
    """
    found: Set[str] = set()
    for node in assertion_nodes(root, test_ids):
        for sub in ast.walk(node):
            if isinstance(sub, ast.Name):
                found.add(_bare(sub.id))
            elif isinstance(sub, ast.Attribute):
                found.add(_bare(sub.attr))
    return frozenset(found)


def _statement(line: Optional[str]) -> Optional[ast.stmt]:
    """A one-line simple statement, parsed on its own (None for anything else)."""
    if line is None:
        return None
    try:
        body = ast.parse(line.strip()).body
    except (SyntaxError, ValueError):
        return None
    return (
        body[0]
        if len(body) == 1 and not isinstance(body[0], (ast.If, ast.For, ast.While, ast.With))
        else None
    )


def _stores(old: Optional[ast.stmt], new: Optional[ast.stmt]) -> bool:
    """A storing method swapped for another, receiver and arguments unchanged."""
    calls = [
        s.value if isinstance(s, ast.Expr) and isinstance(s.value, ast.Call) else None
        for s in (old, new)
    ]
    a, b = calls
    if (
        a is None
        or b is None
        or not isinstance(a.func, ast.Attribute)
        or not isinstance(b.func, ast.Attribute)
    ):
        return False
    same = ast.dump(a.func.value) == ast.dump(b.func.value) and ast.dump(
        ast.Tuple(a.args, ast.Load())
    ) == ast.dump(ast.Tuple(b.args, ast.Load()))
    return same and a.func.attr != b.func.attr and {a.func.attr, b.func.attr} <= STORING_METHODS


def _target(node: Optional[ast.stmt]) -> str:
    targets = (
        node.targets
        if isinstance(node, ast.Assign)
        else [node.target]
        if isinstance(node, (ast.AugAssign, ast.AnnAssign))
        else []
    )
    if len(targets) != 1:
        return ""
    target = targets[0]
    return (
        _bare(target.attr)
        if isinstance(target, ast.Attribute)
        else _bare(target.id)
        if isinstance(target, ast.Name)
        else ""
    )


def _numbers_only(old: Optional[ast.stmt], new: Optional[ast.stmt]) -> bool:
    """``new`` assigns what ``old`` did, shifted by a number; or ``new`` alone adds a number (``x +=
    1``)."""
    if old is None:
        return (
            isinstance(new, ast.AugAssign)
            and isinstance(new.value, ast.Constant)
            and isinstance(new.value.value, (int, float))
        )
    old_value, new_value = getattr(old, "value", None), getattr(new, "value", None)
    if old_value is None or new_value is None or type(old) is not type(new):
        return False
    if (
        isinstance(new_value, ast.BinOp)
        and isinstance(new_value.right, ast.Constant)
        and ast.dump(new_value.left) == ast.dump(old_value)
    ):
        return isinstance(new_value.right.value, (int, float))
    return all(
        isinstance(v, ast.Constant) and isinstance(v.value, (int, float))
        for v in (old_value, new_value)
    )


def _compensates(old: Optional[str], new: Optional[str], names: FrozenSet[str]) -> bool:
    a, b = _statement(old), _statement(new)
    if _stores(a, b):
        return True
    target = _target(b)
    return (
        bool(target)
        and target in names
        and (a is None or _target(a) == target)
        and _numbers_only(a, b)
    )


def changed_lines(old_text: str, new_text: str) -> List[Tuple[Optional[str], Optional[str], int]]:
    """(old line or None, new line or None, 1-based new line number) of each line a change replaces
    or adds."""
    old, new = old_text.splitlines(), new_text.splitlines()
    pairs: List[Tuple[Optional[str], Optional[str], int]] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(
        None, old, new, autojunk=False
    ).get_opcodes():
        if tag == "equal":
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            pairs.append(
                (
                    old[i1 + k] if i1 + k < i2 else None,
                    new[j1 + k] if j1 + k < j2 else None,
                    j1 + k + 1 if j1 + k < j2 else j1,
                )
            )
    return pairs


def compensation_flags(
    applied: AppliedPatch, names: FrozenSet[str], test_files: TestFiles = TestFiles()
) -> Tuple[Flag, ...]:
    """COMPENSATES flags (one per changed line, ``PATH:LINE `NEW LINE` ...``) when every changed
    line of the candidate's Python source files compensates (module docstring); () otherwise."""
    flags: List[Flag] = []
    for change in applied.changes:
        if not change.path.endswith(".py") or test_files.is_test(change.path):
            continue
        if change.old_text is None or change.new_text is None:
            return ()
        for old, new, line in changed_lines(change.old_text, change.new_text):
            if not _compensates(old, new, names):
                return ()
            shown = (new or "").strip()[:100]
            flags.append(
                Flag(
                    FlagKind.COMPENSATES,
                    f"{change.path}:{line} `{shown}` changes the data the failing "
                    "assertion compares, not the code that computes it",
                )
            )
    return tuple(flags[:5])
