"""SEARCH/REPLACE blocks (aider's edit format) as FileEdits.

    path/to/file.py
    <<<<<<< SEARCH
    old lines
    =======
    new lines
    >>>>>>> REPLACE

The path is the nearest line above the block that is not blank nor a fence
(``File: path``, ``**path**``, `` `path` `` and a trailing ``:`` are tolerated);
a block right after another one reuses its path. An empty SEARCH creates a file.
Cline's markers (``------- SEARCH``, ``+++++++ REPLACE``, in any mix with
aider's: cline/cline#4216, #8178) and three-character ones (``<<< SEARCH``,
``>>> REPLACE``) open and close blocks too. Line numbers copied from a numbered
listing (``  12 | code``, on every non-blank line of the SEARCH text, as
RooCodeInc/Roo-Code#1628 shows) are taken off both sides.
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from repairloop.errors import PatchError
from repairloop.patch.changes import ADDED, CONTEXT, REMOVED, FileEdit, Hunk
from repairloop.textutil import common_ends

SEARCH = re.compile(r"^[ \t]*(?:<{3,9}|-{5,9})[ \t]*SEARCH[ \t]*$")
_DIVIDER = re.compile(r"^[ \t]*={5,9}[ \t]*$")
_REPLACE = re.compile(r"^[ \t]*(?:>{3,9}|\+{5,9})[ \t]*REPLACE[ \t]*$")
_NUMBERED = re.compile(r"^[ \t]*\d+ [|│] ?")
_FENCE = re.compile(r"^[ \t]*(```|~~~)")
_LABEL = re.compile(r"^(?:#+\s*)?(?:file(?:name)?|path)\s*:\s*", re.I)
_HINT = (
    "write each edit as: the file path on its own line, then '<<<<<<< SEARCH', the exact "
    "current lines, '=======', the new lines, '>>>>>>> REPLACE'"
)


def has_blocks(text: str) -> bool:
    """True when some line of ``text`` opens a SEARCH block."""
    return any(SEARCH.match(line) for line in text.split("\n"))


def parse_blocks(text: str) -> List[FileEdit]:
    """One FileEdit per block, in order (``text`` has ``\\n`` newlines).

    Raises PatchError for an unterminated block or a block without a path.
    """
    lines = text.split("\n")
    edits: List[FileEdit] = []
    path: Optional[str] = None
    i, number, last_end = 0, 0, 0
    while i < len(lines):
        if not SEARCH.match(lines[i]):
            i += 1
            continue
        number += 1
        found = path_above(lines, i, stop=last_end)
        path = found or path
        if path is None:
            raise PatchError(f"SEARCH/REPLACE block {number} names no file", hint=_HINT)
        search, replace, i = _block_body(lines, i + 1, number)
        last_end = i
        edits.append(search_replace_edit(path, search, replace, number))
    return edits


def _block_body(lines: List[str], i: int, number: int) -> Tuple[List[str], List[str], int]:
    search: List[str] = []
    while i < len(lines) and not _DIVIDER.match(lines[i]):
        if SEARCH.match(lines[i]) or _REPLACE.match(lines[i]):
            break
        search.append(lines[i])
        i += 1
    if i >= len(lines) or not _DIVIDER.match(lines[i]):
        raise PatchError(f"SEARCH/REPLACE block {number} has no '=======' divider", hint=_HINT)
    replace: List[str] = []
    i += 1
    while i < len(lines) and not _REPLACE.match(lines[i]):
        replace.append(lines[i])
        i += 1
    if i >= len(lines):
        raise PatchError(f"SEARCH/REPLACE block {number} has no '>>>>>>> REPLACE' end", hint=_HINT)
    return search, replace, i + 1


def path_above(lines: List[str], i: int, stop: int) -> Optional[str]:
    """The path written above line ``i`` (looking no higher than line ``stop``)."""
    j = i - 1
    while j >= max(stop, i - 4):
        line = lines[j].strip()
        if line and not _FENCE.match(line):
            return _clean(line)
        j -= 1
    return None


def _clean(line: str) -> Optional[str]:
    line = _LABEL.sub("", line).strip().strip("*`'\"").rstrip(":").strip("*`'\"")
    if not line:
        return None
    if any(c.isspace() for c in line):
        # Prose like "Here is the fix for calc.py:" -> the last word that looks like a path.
        words = [w.strip("*`'\":,") for w in line.split()]
        paths = [w for w in words if "." in w.strip(".") or "/" in w]
        return paths[-1].replace("\\", "/") if paths else None
    return line.replace("\\", "/")


def _unnumbered(search: List[str], replace: List[str]) -> Tuple[List[str], List[str]]:
    """Both sides without the ``NN | `` prefixes of a numbered listing, when every non-blank
    SEARCH line has one (REPLACE lines lose theirs where they have one); else as they are."""
    body = [line for line in search if line.strip()]
    if not body or not all(_NUMBERED.match(line) for line in body):
        return search, replace
    return (
        [_NUMBERED.sub("", line, count=1) for line in search],
        [_NUMBERED.sub("", line, count=1) for line in replace],
    )


def search_replace_edit(path: str, search: List[str], replace: List[str], number: int) -> FileEdit:
    """The FileEdit of SEARCH/REPLACE block ``number``: an empty SEARCH creates ``path``."""
    label = f"SEARCH/REPLACE block {number} ({path})"
    search, replace = _unnumbered(search, replace)
    if not any(s.strip() for s in search):
        return FileEdit(
            path, "create", (Hunk(label, tuple((ADDED, r) for r in replace)),), "search_replace"
        )
    # Lines shared at both ends become context, so a fuzzy match keeps the file's own text.
    head, tail = common_ends(search, replace)
    pairs = [(CONTEXT, s) for s in search[:head]]
    pairs += [(REMOVED, s) for s in search[head : len(search) - tail]]
    pairs += [(ADDED, r) for r in replace[head : len(replace) - tail]]
    pairs += [(CONTEXT, s) for s in search[len(search) - tail :]]
    return FileEdit(path, "modify", (Hunk(label, tuple(pairs)),), "search_replace")
