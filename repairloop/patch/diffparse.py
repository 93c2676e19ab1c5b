"""Unified diffs as models write them: unfence, normalise, recount, then unidiff.

unidiff silently truncates hunks whose counts are too small and drops ``@@``
headers without numbers (TECH-NOTES 3.1), so every hunk is recounted here from
its body before unidiff sees it, and the line each header claims is kept aside
(``None`` when the header had no numbers).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from unidiff.errors import UnidiffParseError
from unidiff.patch import Hunk as UnidiffHunk
from unidiff.patch import PatchSet

from repairloop.errors import PatchError
from repairloop.patch.changes import ADDED, CONTEXT, REMOVED, FileEdit, Hunk

DEV_NULL = "/dev/null"
_FENCE = re.compile(r"^[ \t]*(?:```|~~~)[^\n]*\n(.*?)^[ \t]*(?:```|~~~)[ \t]*$", re.S | re.M)
_OLD = re.compile(r"-(\d+)(?:,(\d+))?")
_NEW = re.compile(r"\+(\d+)(?:,(\d+))?")
_GIT_HEADER = re.compile(r"^diff --git (\S+) (\S+)\s*$")
_NO_NEWLINE = "\\ No newline at end of file"


def extract_diff(text: str) -> str:
    """The diff part of an answer: fenced blocks that hold a diff, else the whole text."""
    blocks = [b for b in _FENCE.findall(text) if _looks_like_diff(b)]
    return "\n".join(blocks) if blocks else text


def _looks_like_diff(block: str) -> bool:
    return any(line.startswith("@@") for line in block.split("\n")) or "\n+++ " in "\n" + block


def _is_body(line: str) -> bool:
    return line[:1] in (CONTEXT, REMOVED, ADDED) or line.startswith(_NO_NEWLINE[:2])


def _clean_path(raw: str) -> str:
    path = raw.split("\t")[0].strip()
    if len(path) > 1 and path[0] == path[-1] == '"':
        path = path[1:-1]
    return path.replace("\\", "/")


def _strip_prefixes(src: str, dst: str) -> Tuple[str, str]:
    """Remove git's ``a/``/``b/`` prefixes when the headers use them."""
    s_has, d_has = src.startswith("a/"), dst.startswith("b/")
    if src == DEV_NULL:
        return src, dst[2:] if d_has else dst
    if dst == DEV_NULL:
        return (src[2:] if s_has else src), dst
    if s_has and d_has:
        return src[2:], dst[2:]
    if s_has and src[2:] == dst:
        return dst, dst
    if d_has and dst[2:] == src:
        return src, src
    return src, dst


def _is_file_header(lines: List[str], i: int) -> bool:
    return lines[i].startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ ")


def _hunk_body(lines: List[str], i: int, want_old: Optional[int]) -> Tuple[List[str], int]:
    """Body lines of the hunk starting at ``lines[i]``; a blank line is a context line
    that lost its space when more body follows or the header's count is not reached."""
    body: List[str] = []
    while i < len(lines):
        line = lines[i]
        if line.startswith(("@@", "diff --git")) or _is_file_header(lines, i):
            break
        if line == "":
            old_so_far = sum(1 for b in body if b[:1] in (CONTEXT, REMOVED))
            more = (
                i + 1 < len(lines) and _is_body(lines[i + 1]) and not _is_file_header(lines, i + 1)
            )
            if more or (want_old is not None and old_so_far < want_old):
                body.append(CONTEXT)
                i += 1
                continue
            break
        if not _is_body(line):
            break
        body.append(line)
        i += 1
    return body, i


def _hunk_header(line: str, body: List[str]) -> Tuple[str, Optional[int]]:
    """Recounted header for ``body`` and the 0-based line it claims (None: no numbers)."""
    inner, _, section = line[2:].partition("@@")
    old_m, new_m = _OLD.search(inner), _NEW.search(inner)
    old = sum(1 for b in body if b[:1] in (CONTEXT, REMOVED))
    new = sum(1 for b in body if b[:1] in (CONTEXT, ADDED))
    hint: Optional[int] = None
    start = 1
    numbers = old_m or new_m
    if numbers is not None:
        start = int(numbers.group(1))
        # A pure insertion "-N,0" goes after line N; otherwise line N is the first one.
        hint = start if old == 0 else max(start - 1, 0)
    return f"@@ -{start},{old} +{start},{new} @@{section}", hint


def normalize_diff(text: str, only_path: Optional[str] = None) -> Tuple[str, List[Optional[int]]]:
    """Normalised diff text (``a/``/``b/`` headers, recounted hunks, final newline)
    and, per hunk in order, the 0-based line its header claims or None.

    ``text`` has ``\\n`` newlines. Lines that are neither headers nor hunk bodies
    (prose, ``index`` lines) are dropped. A ``+++ path`` line with no ``---`` line
    before it heads that file; a hunk with no file header before it belongs to
    ``only_path`` (the one file the prompt showed) when given. Raises PatchError
    for a hunk with no file header before it otherwise.
    """
    lines = extract_diff(text).split("\n")
    out: List[str] = []
    hints: List[Optional[int]] = []
    i, have_file, git_paths = 0, False, None
    while i < len(lines):
        line = lines[i]
        git_m = _GIT_HEADER.match(line)
        if git_m:
            git_paths, have_file = (_clean_path(git_m.group(1)), _clean_path(git_m.group(2))), False
            i += 1
        elif _is_file_header(lines, i):
            out += _file_header(_clean_path(line[4:]), _clean_path(lines[i + 1][4:]))
            have_file, i = True, i + 2
        elif line.startswith("+++ ") and _clean_path(line[4:]) != DEV_NULL:
            path = _clean_path(line[4:])  # `+++ path` alone: models drop the `---` line
            out += _file_header("a/" + path[2:] if path.startswith("b/") else path, path)
            have_file, i = True, i + 1
        elif line.startswith("@@"):
            if not have_file and git_paths is not None:
                out += _file_header(*git_paths)  # git header without ---/+++: models drop them
                have_file = True
            if not have_file and only_path is not None:
                out += _file_header(only_path, only_path)  # one file shown: the hunk is its
                have_file = True
            if not have_file:
                raise PatchError(
                    "the diff has a hunk (@@) before any file header",
                    hint="start each file with '--- a/path' and '+++ b/path' lines",
                )
            old_m = _OLD.search(line[2:].partition("@@")[0])
            want_old = int(old_m.group(2)) if old_m and old_m.group(2) else None
            body, i = _hunk_body(lines, i + 1, want_old)
            if not any(b[:1] in (REMOVED, ADDED) for b in body):
                continue  # a hunk that changes nothing (or is empty) is no edit
            header, hint = _hunk_header(line, body)
            out += [header, *body]
            hints.append(hint)
        else:
            i += 1
    return "\n".join(out) + "\n", hints


def _file_header(src: str, dst: str) -> List[str]:
    src, dst = _strip_prefixes(src, dst)
    return [
        f"--- {src if src == DEV_NULL else 'a/' + src}",
        f"+++ {dst if dst == DEV_NULL else 'b/' + dst}",
    ]


def parse_unified_diff(text: str, only_path: Optional[str] = None) -> List[FileEdit]:
    """FileEdits of a diff answer (``\\n`` newlines); [] when it holds no hunk. ``only_path``:
    the one file the prompt showed, which headerless hunks belong to (``normalize_diff``).

    Raises PatchError when unidiff rejects the normalised text or a file header
    renames a file (not supported).
    """
    normalized, hints = normalize_diff(text, only_path)
    try:
        patch_set = PatchSet(normalized)
    except UnidiffParseError as exc:
        raise PatchError(f"the diff could not be parsed: {exc}", hint=_DIFF_HINT) from exc
    if sum(len(pf) for pf in patch_set) == 0:
        return []
    edits: List[FileEdit] = []
    hint_iter = iter(hints)
    for pf in patch_set:
        src, dst = pf.source_file, pf.target_file
        src = src if src == DEV_NULL else src[2:]
        dst = dst if dst == DEV_NULL else dst[2:]
        if DEV_NULL not in (src, dst) and src != dst:
            raise PatchError(
                f"the diff renames {src} to {dst}, which is not supported",
                hint="use the same path on the '---' and '+++' lines",
            )
        kind = "create" if src == DEV_NULL else "delete" if dst == DEV_NULL else "modify"
        path = src if kind == "delete" else dst
        hunks = tuple(_hunk(h, n, path, next(hint_iter)) for n, h in enumerate(pf, 1))
        edits.append(FileEdit(path, kind, hunks, "unified_diff"))
    return edits


def _hunk(h: UnidiffHunk, number: int, path: str, hint: Optional[int]) -> Hunk:
    pairs: List[Tuple[str, str]] = []
    source_nl = target_nl = False
    last = CONTEXT
    for line in h:
        if line.line_type == "\\":
            source_nl = source_nl or last in (CONTEXT, REMOVED)
            target_nl = target_nl or last in (CONTEXT, ADDED)
            continue
        last = line.line_type
        pairs.append((line.line_type, line.value.rstrip("\n")))
    return Hunk(f"hunk {number} of {path}", tuple(pairs), hint, source_nl, target_nl)


_DIFF_HINT = (
    "answer with one unified diff: '--- a/path', '+++ b/path', then '@@ -l,n +l,n @@' hunks"
)
