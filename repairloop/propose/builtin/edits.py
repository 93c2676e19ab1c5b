"""Source spans, minimal textual edits and unified diffs for the offline engine.

Every mutation is one replacement of a character span of a file's text: the
span of the changed ``ast`` node (``lineno``/``col_offset`` to
``end_lineno``/``end_col_offset``), never a re-rendering of the file, so a
one-token fix is a one-line diff. ``ast`` columns are UTF-8 byte offsets; they
are converted to character offsets here, once.
"""

from __future__ import annotations

import ast
import difflib
import re
from dataclasses import dataclass
from typing import Callable, Dict, List, Sequence, Tuple

from repairloop.textutil import common_ends, doctest_examples
from repairloop.types import TestFiles

_NEWLINE = re.compile(r"\n")


class Source:
    """One parsed Python file: its text, its tree and offset helpers.

    ``path`` is relative to the project root, with ``/`` separators. Raises
    ``SyntaxError`` (or ``ValueError`` for NUL bytes) when the text does not parse.
    """

    def __init__(self, path: str, text: str) -> None:
        self.path = path
        self.text = text
        self.tree = ast.parse(text, filename=path)
        # Line starts as ast counts lines: by "\n" only (splitlines would also
        # split on form feeds and other separators and shift the numbering).
        self.line_starts: List[int] = [0] + [m.end() for m in _NEWLINE.finditer(text)]

    def line_text(self, line: int) -> str:
        """The text of 1-based ``line`` without its newline ("" past the end)."""
        if line < 1 or line > len(self.line_starts):
            return ""
        start = self.line_starts[line - 1]
        end = self.line_starts[line] - 1 if line < len(self.line_starts) else len(self.text)
        return self.text[start:end]

    def offset(self, line: int, col_bytes: int) -> int:
        """Character offset in ``text`` of (1-based line, UTF-8 byte column)."""
        text = self.line_text(line)
        if text.isascii():
            col = col_bytes
        else:
            col = len(text.encode("utf-8")[:col_bytes].decode("utf-8", "replace"))
        return self.line_starts[line - 1] + col

    def span(self, node: ast.AST) -> Tuple[int, int]:
        """(start, end) character offsets of ``node``'s source, end exclusive."""
        start = self.offset(node.lineno, node.col_offset)  # type: ignore[attr-defined]
        end = self.offset(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
        return start, end

    def segment(self, node: ast.AST) -> str:
        """The exact source text of ``node`` (without enclosing parentheses)."""
        start, end = self.span(node)
        return self.text[start:end]

    def line_of(self, offset: int) -> int:
        """1-based line number of a character offset."""
        lo, hi = 0, len(self.line_starts)
        while lo < hi:  # bisect_right on line_starts
            mid = (lo + hi) // 2
            if self.line_starts[mid] <= offset:
                lo = mid + 1
            else:
                hi = mid
        return lo


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` of file ``path`` by ``replacement`` (character offsets)."""

    path: str
    start: int
    end: int
    replacement: str


def apply_edits(text: str, edits: Sequence[Edit]) -> str:
    """Apply non-overlapping edits of one file; raises ValueError when two overlap."""
    ordered = sorted(edits, key=lambda e: (e.start, e.end))
    for before, after in zip(ordered, ordered[1:]):
        if after.start < before.end or (after.start == before.start == before.end):
            raise ValueError(f"overlapping edits at offset {after.start}")
    for edit in reversed(ordered):
        text = text[: edit.start] + edit.replacement + text[edit.end :]
    return text


def apply_to_files(originals: Dict[str, str], edits: Sequence[Edit]) -> Dict[str, str]:
    """New text of every file the edits touch: ``{path: text}``; raises ValueError on overlap."""
    by_path: Dict[str, List[Edit]] = {}
    for edit in edits:
        by_path.setdefault(edit.path, []).append(edit)
    return {path: apply_edits(originals[path], group) for path, group in sorted(by_path.items())}


def _diff_lines(text: str) -> List[str]:
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])  # last line without a newline
    return lines


def unified_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A git-style unified diff of one file (``a/``, ``b/`` prefixes); "" when equal.

    A last line without a newline gets git's ``\\ No newline at end of file`` marker,
    which difflib does not write on its own.
    """
    if old == new:
        return ""
    out: List[str] = []
    for line in difflib.unified_diff(
        _diff_lines(old), _diff_lines(new), f"a/{path}", f"b/{path}", n=context
    ):
        if line.endswith("\n"):
            out.append(line)
        else:
            out.append(line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_files(originals: Dict[str, str], changed: Dict[str, str]) -> str:
    """Concatenated unified diffs of every changed file, in path order."""
    return "".join(unified_diff(p, originals[p], changed[p]) for p in sorted(changed))


def edit_size(originals: Dict[str, str], changed: Dict[str, str]) -> Tuple[int, int]:
    """Size of a change: (changed lines, changed characters), smaller is smaller.

    Changed lines count removed plus added lines of the diff; characters are
    what differs once the common prefix and suffix of each file are trimmed.
    """
    lines = chars = 0
    for path in sorted(changed):
        old, new = originals[path], changed[path]
        for line in difflib.unified_diff(_diff_lines(old), _diff_lines(new), n=0):
            if line[:1] in "+-" and not line.startswith(("+++", "---")):
                lines += 1
        prefix, suffix = common_ends(old, new)
        chars += (len(old) - prefix - suffix) + (len(new) - prefix - suffix)
    return lines, chars


def keeps_doctests(
    test_files: TestFiles, originals: Dict[str, str]
) -> Callable[[Dict[str, str]], bool]:
    """A check of changed files: False when one changes the doctest examples (code or expected
    output) of a module collected for its doctests, which are test content the loop's guards
    refuse."""

    def allowed(changed: Dict[str, str]) -> bool:
        return not any(
            test_files.has_doctests(path)
            and doctest_examples(originals[path]) != doctest_examples(text)
            for path, text in changed.items()
            if path in originals
        )

    return allowed
