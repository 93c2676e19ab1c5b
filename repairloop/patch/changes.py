"""Records of the patch module: parsed edits (internal), applied changes, guard policy.

``FileEdit``/``Hunk`` are what ``parse_answer`` understood from a model's answer;
``FileChange``/``AppliedPatch`` are what ``apply_answer`` computed against the
files under a root (old and new texts, nothing written).
"""

from __future__ import annotations

import difflib
import functools
import re
from dataclasses import dataclass, field
from typing import Dict, FrozenSet, Iterator, List, Optional, Set, Tuple

from repairloop.textutil import common_ends
from repairloop.types import DEFAULT_PROTECTED_GLOBS, TestFiles, matches_globs

# How a hunk line is tagged, as in a unified diff.
CONTEXT, REMOVED, ADDED = " ", "-", "+"

# Worst-first order of how a file's blocks were located (FileChange.match).
MATCH_RANK = {"new": 0, "delete": 0, "exact": 0, "whitespace": 1, "fuzzy": 2}


# Test configuration, CI configuration and dependency pins (settings' ``protected_globs``).
PROTECTED_GLOBS: Tuple[str, ...] = DEFAULT_PROTECTED_GLOBS


@dataclass(frozen=True)
class GuardPolicy:
    """What one candidate patch may touch and how big it may be.

    ``test_files`` says which files are tests (``types.TestFiles``, built once per
    run); ``protected_globs`` follow the same glob rule (``types.matches_globs``).
    ``allow_test_edits`` lifts only the test-file rule, never ``protected_globs``
    nor the content rules of ``tamper.py``. Sizes: files per candidate, added plus removed lines,
    bytes of one resulting file.
    """

    test_files: TestFiles = field(default_factory=TestFiles)
    allow_test_edits: bool = False
    # Refused whatever ``allow_test_edits`` says: test configuration, CI, dependency pins.
    protected_globs: Tuple[str, ...] = PROTECTED_GLOBS
    # Where new files may be created (relative directories); () means "next to existing
    # non-test Python files" (see guards.check_new_files).
    source_dirs: Tuple[str, ...] = ()
    max_files: int = 5
    max_changed_lines: int = 200
    # Capabilities (patch/capabilities.py) the user lets a candidate add: ``import:os``,
    # ``dunder:__eq__``...; each use is flagged.
    allowed_capabilities: FrozenSet[str] = frozenset()
    max_file_bytes: int = 1_000_000

    def guards_verdict(self, path: str) -> bool:
        """True for a file whose content decides a verdict: a test, a protected file,
        pyproject.toml, setup.cfg.

        No test run may change these (``workspace.fingerprint``), whatever a
        candidate was allowed to edit before the run.
        """
        name = path.rsplit("/", 1)[-1]
        return (
            name in ("pyproject.toml", "setup.cfg")
            or self.test_files.is_test(path)
            or matches_globs(path, self.protected_globs)
        )


@dataclass(frozen=True)
class Hunk:
    """One block to locate and rewrite: a diff hunk or a SEARCH/REPLACE block.

    ``lines`` are ``(tag, text)`` pairs, tag one of ``" "``, ``"-"``, ``"+"``, text
    without its newline. ``hint`` is the 0-based line the diff header claims (for a
    pure insertion: the index to insert at); None when unknown (SEARCH/REPLACE,
    ``@@`` without numbers), in which case several exact matches are an error.
    ``source_no_newline``/``target_no_newline`` carry ``\\ No newline at end of file``.
    """

    label: str  # "hunk 2 of calc.py" or "SEARCH/REPLACE block 3 (calc.py)", for messages
    lines: Tuple[Tuple[str, str], ...]
    hint: Optional[int] = None
    source_no_newline: bool = False
    target_no_newline: bool = False

    @property
    def before(self) -> List[str]:
        """The lines the file must contain: context and removed lines, in order."""
        return [text for tag, text in self.lines if tag != ADDED]

    @property
    def after(self) -> List[str]:
        """The lines the block becomes: context and added lines, in order."""
        return [text for tag, text in self.lines if tag != REMOVED]


@dataclass(frozen=True)
class FileEdit:
    """What an answer asks of one file: ``kind`` is "modify", "create" or "delete".

    ``located`` names the definitions (``path::qualname (not in the prompt)``)
    a whole-function answer changes that the prompt did not show, found by
    name in the project (``lookup.py``).
    """

    path: str  # relative POSIX path as the answer names it (a/ b/ prefixes removed)
    kind: str
    hunks: Tuple[Hunk, ...]
    format: (
        str  # "unified_diff" | "search_replace" | "codex_patch" | "whole_function" | "whole_file"
    )
    located: Tuple[str, ...] = ()


@dataclass(frozen=True)
class FileChange:
    """One file's old and new text (in the file's own newline style).

    ``old_text`` is None when the file is created, ``new_text`` None when it is
    deleted. ``match`` is the loosest tier any block of the file needed
    ("exact", "whitespace", "fuzzy"; "new"/"delete" for whole files) and ``score``
    the lowest similarity (0..1) of a located block, 1.0 when exact.
    """

    path: str
    old_text: Optional[str]
    new_text: Optional[str]
    match: str
    score: float


@dataclass(frozen=True)
class AppliedPatch:
    """A candidate patch computed against a root: per-file changes, nothing written.

    ``located`` lists, for the journal, the definitions it changes that the
    prompt did not show (``path::qualname (not in the prompt)``; ``FileEdit.located``);
    ``set_aside`` the earlier versions of a place the answer changed again (the last
    one applies: a draft, then the final edit).
    """

    changes: Tuple[FileChange, ...]
    format: (
        str  # "unified_diff" | "search_replace" | "codex_patch" | "whole_function" | "whole_file"
    )
    located: Tuple[str, ...] = ()
    set_aside: Tuple[str, ...] = ()

    def diff(self) -> str:
        """Canonical unified diff: ``a/``/``b/`` prefixes, 3 lines of context.

        CRLF lines keep their ``\\r``; a last line without newline gets git's
        ``\\ No newline at end of file`` marker, so ``git apply`` reproduces the texts.
        """
        return "".join(_file_diff(change) for change in self.changes)

    @property
    def changed_lines(self) -> int:
        """Added plus removed lines over all files."""
        total = 0
        for change in self.changes:
            for tag, i1, i2, j1, j2 in line_opcodes(change.old_text, change.new_text):
                if tag != "equal":
                    total += (i2 - i1) + (j2 - j1)
        return total


@functools.lru_cache(maxsize=32)
def line_opcodes(
    old_text: Optional[str], new_text: Optional[str]
) -> Tuple[Tuple[str, int, int, int, int], ...]:
    """difflib opcodes over the lines of two texts, computed once per pair.

    The equal lines at both ends are set aside before difflib runs: a one-line
    fix in a 3,000-line module compares one line, not the module (the guards,
    the size limits and the diff all need these opcodes for every candidate).
    """
    old, new = _split_keepends(old_text), _split_keepends(new_text)
    prefix, suffix = common_ends(old, new)
    middle = difflib.SequenceMatcher(
        None, old[prefix : len(old) - suffix], new[prefix : len(new) - suffix], autojunk=False
    ).get_opcodes()
    ops = [("equal", 0, prefix, 0, prefix)] if prefix else []
    ops += [
        (tag, i1 + prefix, i2 + prefix, j1 + prefix, j2 + prefix)
        for tag, i1, i2, j1, j2 in middle
        if i2 > i1 or j2 > j1
    ]
    if suffix:
        ops.append(("equal", len(old) - suffix, len(old), len(new) - suffix, len(new)))
    return tuple(ops)


def edited_old_lines(change: FileChange) -> FrozenSet[int]:
    """The 1-based lines of ``change.old_text`` the change replaces or deletes; for a line only
    inserted, the old lines on both sides of it (the code around the insertion decides whether it
    runs). Empty for a created file."""
    if change.old_text is None:
        return frozenset()
    count = len(_split_keepends(change.old_text))
    lines: Set[int] = set()
    for tag, i1, i2, _, _ in line_opcodes(change.old_text, change.new_text):
        if tag == "equal":
            continue
        if i2 > i1:
            lines.update(range(i1 + 1, i2 + 1))
        else:
            lines.update(n for n in (i1, i1 + 1) if 1 <= n <= count)
    return frozenset(lines)


def unchanged_line_map(change: FileChange) -> Dict[int, int]:
    """1-based old line -> 1-based new line for every line the change leaves as it was (a line
    it replaces, deletes or inserts has no entry). Empty for a created or deleted file."""
    if change.old_text is None or change.new_text is None:
        return {}
    mapping: Dict[int, int] = {}
    for tag, i1, i2, j1, _ in line_opcodes(change.old_text, change.new_text):
        if tag == "equal":
            mapping.update({i1 + k + 1: j1 + k + 1 for k in range(i2 - i1)})
    return mapping


def _split_keepends(text: Optional[str]) -> List[str]:
    return [] if text is None else text.splitlines(keepends=True)


def _marked(lines: Iterator[str]) -> Iterator[str]:
    # difflib leaves a last line without newline glued to the next one; git
    # expects the line ended and followed by its marker.
    for line in lines:
        if line.endswith("\n"):
            yield line
        else:
            yield line + "\n\\ No newline at end of file\n"


_HUNK = re.compile(r"^@@ -(\d+)((?:,\d+)?) \+(\d+)((?:,\d+)?) @@")


def _unified_diff(
    old: List[str], new: List[str], src: str, dst: str, context: int = 3
) -> Iterator[str]:
    """``difflib.unified_diff`` run only on the window around the change, headers shifted back.

    Same output as on the whole files (3 lines of context), without making
    difflib compare thousands of equal lines.
    """
    prefix, suffix = common_ends(old, new)
    start = max(prefix - context, 0)
    keep = max(suffix - context, 0)
    lines = difflib.unified_diff(
        old[start : len(old) - keep], new[start : len(new) - keep], src, dst, n=context
    )
    for line in lines:
        match = _HUNK.match(line) if start else None
        if match:
            a, b, c, d = match.groups()
            line = f"@@ -{int(a) + start}{b} +{int(c) + start}{d} @@" + line[match.end() :]
        yield line


def _file_diff(change: FileChange) -> str:
    old = _split_keepends(change.old_text)
    new = _split_keepends(change.new_text)
    if old == new and change.old_text is not None and change.new_text is not None:
        return ""
    src = "/dev/null" if change.old_text is None else f"a/{change.path}"
    dst = "/dev/null" if change.new_text is None else f"b/{change.path}"
    head = [f"diff --git a/{change.path} b/{change.path}\n"]
    if change.old_text is None:
        head.append("new file mode 100644\n")
    body = list(_marked(_unified_diff(old, new, src, dst)))
    if not body:  # an empty file created or deleted: git needs the mode line alone
        if change.new_text is None:
            head.append("deleted file mode 100644\n")
        return "".join(head)
    # No "deleted file mode" with a body: the file's real mode is unknown here and
    # git warns when it differs; "+++ /dev/null" already says the file goes.
    # difflib ends its own ---/+++ lines with "\n" (lineterm default).
    return "".join(head + body)
