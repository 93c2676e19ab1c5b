"""OpenAI's ``apply_patch`` format (Codex-family models' own) as FileEdits.

    *** Begin Patch
    *** Update File: calc.py
    @@ def add(a, b):
     def add(a, b):
    -    return a - b
    +    return a + b
    *** Add File: notes.py
    +TEXT = "new"
    *** Delete File: old.py
    *** End Patch

Each ``*** Update File`` section holds hunks that start at an ``@@`` line (its
text, a line to find the place by, is not needed: the hunk's own context
lines locate it, exactly then fuzzily, like a diff hunk); body lines start with
a space (context), ``-`` or ``+``; a blank line is a blank context line (models
drop its space). ``*** End of File`` markers are ignored. The format as
posit-dev/btw#190 specifies it; boozedog/pi-codemode#28 shows a model writing it.

Refused with a structural error: a patch with no ``*** End Patch`` (the model did
not finish it), ``*** Move to`` (a rename), an ``Add File`` line without ``+``,
and any line the format does not have.
"""

from __future__ import annotations

import re
from typing import List, Tuple

from repairloop.errors import PatchError
from repairloop.patch.changes import ADDED, CONTEXT, REMOVED, FileEdit, Hunk

_BEGIN = re.compile(r"^[ \t]*\*\*\* Begin Patch[ \t]*$", re.M)
_END = "*** End Patch"
_SECTION = re.compile(r"^\*\*\* (Update|Add|Delete) File:[ \t]*(\S.*?)[ \t]*$")
_HINT = (
    "write the patch as '*** Begin Patch', then '*** Update File: path' with '@@' hunks of "
    "' ', '-' and '+' lines, then '*** End Patch'; or send a unified diff"
)
_TAGS = {" ": CONTEXT, "-": REMOVED, "+": ADDED}


def has_codex_patch(text: str) -> bool:
    """True when a line of ``text`` is ``*** Begin Patch``."""
    return bool(_BEGIN.search(text))


def parse_codex_patch(text: str) -> List[FileEdit]:
    """One FileEdit per file section of the first patch in ``text`` (``\\n`` newlines).

    Raises PatchError for an unfinished patch, a rename, or a line the format does not have.
    """
    lines = text.split("\n")
    begin = next(i for i, line in enumerate(lines) if _BEGIN.match(line))
    end = next((i for i in range(begin + 1, len(lines)) if lines[i].strip() == _END), None)
    if end is None:
        raise PatchError(
            "the apply_patch answer has no '*** End Patch': it is unfinished", hint=_HINT
        )
    edits: List[FileEdit] = []
    i = begin + 1
    while i < end:
        if not lines[i].strip():
            i += 1
            continue
        section = _SECTION.match(lines[i].strip())
        if section is None:
            raise PatchError(
                f"the apply_patch answer has an unexpected line: {lines[i]!r}", hint=_HINT
            )
        kind, path = section.group(1), section.group(2)
        body, i = _section_body(lines, i + 1, end)
        edits.append(_edit(kind, path, body))
    return edits


def _section_body(lines: List[str], i: int, end: int) -> Tuple[List[str], int]:
    body: List[str] = []
    while i < end and not _SECTION.match(lines[i].strip()):
        body.append(lines[i])
        i += 1
    return body, i


def _edit(kind: str, path: str, body: List[str]) -> FileEdit:
    if kind == "Delete":
        return FileEdit(path, "delete", (), "codex_patch")
    if any(line.startswith("*** Move to:") for line in body):
        raise PatchError(
            f"the apply_patch answer renames {path}, which is not supported",
            hint="change the file where it is",
        )
    body = [line for line in body if line.strip() != "*** End of File"]
    if kind == "Add":
        while body and not body[-1].strip():
            body.pop()
        wrong = [line for line in body if not line.startswith("+")]
        if wrong:
            raise PatchError(
                f"the apply_patch answer adds {path} with a line without '+': {wrong[0]!r}",
                hint=_HINT,
            )
        added = tuple((ADDED, line[1:]) for line in body)
        return FileEdit(path, "create", (Hunk(f"new file {path}", added),), "codex_patch")
    return FileEdit(path, "modify", _hunks(path, body), "codex_patch")


def _hunks(path: str, body: List[str]) -> Tuple[Hunk, ...]:
    groups: List[List[Tuple[str, str]]] = []
    for line in body:
        if line.startswith("@@"):
            groups.append([])
            continue
        if not groups:
            groups.append([])  # a section whose first hunk has no @@ line
        tag = _TAGS.get(line[:1]) if line else CONTEXT
        if tag is None:
            raise PatchError(
                f"the apply_patch answer has a line in {path} that is neither context (' '), "
                f"removed ('-') nor added ('+'): {line!r}",
                hint=_HINT,
            )
        groups[-1].append((tag, line[1:]))
    hunks = []
    for number, pairs in enumerate(groups, 1):
        while pairs and pairs[-1] == (CONTEXT, ""):
            pairs.pop()  # the blank line before the next section
        if any(tag != CONTEXT for tag, _ in pairs):
            hunks.append(Hunk(f"hunk {number} of {path}", tuple(pairs)))
    if not hunks:
        raise PatchError(f"the apply_patch answer changes nothing in {path}", hint=_HINT)
    return tuple(hunks)
