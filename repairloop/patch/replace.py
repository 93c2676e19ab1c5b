"""Whole-code answers, second half: the versions a plan collected, checked and turned into
FileEdits.

``whole.py`` reads the blocks into a BlockPlan (per definition and per whole file,
every version with the answer line it came from); here one version of each
is kept (refusing two different ones), definitions whose new text is the
current one are dropped, and the rest become hunks located by their line.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Set, Tuple

from repairloop.errors import PatchError
from repairloop.patch.changes import ADDED, CONTEXT, REMOVED, FileEdit, Hunk
from repairloop.patch.outline import Definition
from repairloop.textutil import common_ends

_AMBIGUOUS_HINT = "send one version of each change"


@dataclass
class Target:
    """A file the answer may change: its text, tree, definitions, and which of them were shown."""

    path: str
    lines: List[str]
    tree: ast.Module
    defs: Dict[str, Definition]
    shown: Set[str]


@dataclass
class BlockPlan:
    """What the blocks ask for: per (path, qualname) and per whole file, each version with its block
    line.

    ``located`` are the (path, qualname) definitions found in the project, not
    in the code shown (``lookup.py``), with all their members.
    """

    defs: Dict[Tuple[str, str], List[Tuple[Tuple[str, ...], int]]] = field(default_factory=dict)
    files: Dict[str, List[Tuple[str, int]]] = field(default_factory=dict)
    fragments: List[int] = field(default_factory=list)
    located: Set[Tuple[str, str]] = field(default_factory=set)


def reindent(lines: List[str], have: str, want: str) -> List[str]:
    """``lines`` moved from indentation ``have`` to ``want``; less indented lines (string bodies)
    stay."""
    out = []
    for line in lines:
        line = line.rstrip()
        out.append(want + line[len(have) :] if line.startswith(have) and line else line)
    while out and not out[-1].strip():
        out.pop()
    return out


def _versions(
    items: Sequence[Tuple[object, int]], same_as_old: object, what: str
) -> Optional[object]:
    """The one changed version of ``what``, None when every version is the current code."""
    changed: Dict[object, int] = {}
    for version, line in items:
        if version != same_as_old:
            changed.setdefault(version, line)
    if len(changed) > 1:
        lines = " and ".join(str(n) for n in list(changed.values())[:2])
        raise PatchError(
            f"the answer gives two different versions of {what} (code blocks at lines {lines}); "
            "it is ambiguous",
            hint=_AMBIGUOUS_HINT,
        )
    return next(iter(changed), None)


def file_edits(plan: BlockPlan, targets: Dict[str, Target]) -> List[FileEdit]:
    edits = []
    for path, items in plan.files.items():
        if any(p == path for p, _ in plan.defs):
            raise PatchError(
                f"the answer gives both the whole of {path} and some of its definitions; "
                "it is ambiguous",
                hint=_AMBIGUOUS_HINT,
            )
        target = targets.get(path)
        old = target.lines if target else None
        stripped = [(tuple(t.rstrip("\n").split("\n")), n) for t, n in items]
        new = _versions(
            stripped, tuple(old[:-1] if old and old[-1] == "" else old or ()), f"{path}"
        )
        if new is None:
            continue
        new_lines = list(new)  # type: ignore[call-overload]
        if old is None:
            edits.append(
                FileEdit(
                    path,
                    "create",
                    (Hunk(f"the new file {path}", tuple((ADDED, t) for t in new_lines)),),
                    "whole_file",
                )
            )
        else:
            body = old[:-1] if old and old[-1] == "" else old
            edits.append(
                FileEdit(
                    path,
                    "modify",
                    (replacement_hunk(f"the new {path}", body, new_lines, 0),),
                    "whole_file",
                )
            )
    return edits


def def_edits(plan: BlockPlan, targets: Dict[str, Target]) -> List[FileEdit]:
    per_file: Dict[str, List[Tuple[Definition, List[str]]]] = {}
    for (path, qualname), items in plan.defs.items():
        target = targets[path]
        old = target.defs[qualname]
        current = tuple(target.lines[old.start - 1 : old.end])
        new = _versions(items, tuple(line.rstrip() for line in current), f"`{qualname}`")
        if new is not None and tuple(line.rstrip() for line in current) != new:
            per_file.setdefault(path, []).append((old, list(new)))  # type: ignore[call-overload]
    edits = []
    for path, changes in per_file.items():
        changes.sort(key=lambda c: c[0].start)
        for (a, _), (b, _) in zip(changes, changes[1:]):
            if b.start <= a.end:
                raise PatchError(
                    f"the answer changes `{a.qualname}` and `{b.qualname}` of {path} "
                    "separately; it is ambiguous",
                    hint=_AMBIGUOUS_HINT,
                )
        lines = targets[path].lines
        hunks = tuple(
            replacement_hunk(
                f"the new `{d.qualname}` in {path}", lines[d.start - 1 : d.end], new, d.start - 1
            )
            for d, new in changes
        )
        located = tuple(
            f"{path}::{d.qualname} (not in the prompt)"
            for d, _ in changes
            if _located(plan, path, d.qualname)
        )
        edits.append(FileEdit(path, "modify", hunks, "whole_function", located))
    return edits


def _located(plan: BlockPlan, path: str, qualname: str) -> bool:
    parts = qualname.split(".")
    return any((path, ".".join(parts[:n])) in plan.located for n in range(1, len(parts) + 1))


def replacement_hunk(label: str, old: List[str], new: List[str], at: int) -> Hunk:
    """A hunk that turns ``old`` (the lines from 0-based line ``at``) into ``new``, the lines both
    share at their ends kept as context."""
    head, tail = common_ends(old, new)
    pairs = [(CONTEXT, s) for s in old[:head]]
    pairs += [(REMOVED, s) for s in old[head : len(old) - tail]]
    pairs += [(ADDED, s) for s in new[head : len(new) - tail]]
    pairs += [(CONTEXT, s) for s in old[len(old) - tail :]]
    return Hunk(label, tuple(pairs), at)
