"""Compute new file texts from a model's answer, purely: read under a root, write nothing.

Each file is worked on as ``\\n`` lines and written back in its own newline
style (CRLF stays CRLF) and with its own final-newline state, unless a hunk
that reaches the end of the file says otherwise (``\\ No newline at end of file``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from repairloop.errors import PatchError
from repairloop.patch.blocks import has_blocks, parse_blocks
from repairloop.patch.changes import (
    ADDED,
    CONTEXT,
    MATCH_RANK,
    REMOVED,
    AppliedPatch,
    FileChange,
    FileEdit,
    Hunk,
)
from repairloop.patch.codexpatch import has_codex_patch, parse_codex_patch
from repairloop.patch.diffparse import parse_unified_diff
from repairloop.patch.elision import check_elisions
from repairloop.patch.guards import normalize_path, resolve_inside
from repairloop.patch.indentstyle import restyler
from repairloop.patch.locate import locate
from repairloop.patch.toolmarkup import has_tool_markup, parse_tool_markup
from repairloop.patch.whole import parse_whole
from repairloop.textutil import split_thinking
from repairloop.types import CodeSlice

_NO_PATCH_HINT = (
    "answer with a unified diff ('--- a/path', '+++ b/path', '@@ ... @@' hunks) in a ```diff "
    "fence; or with SEARCH/REPLACE blocks: the path on its own line, then '<<<<<<< SEARCH', "
    "the current lines, '=======', the new lines, '>>>>>>> REPLACE'; or with each changed "
    "function complete in a ```python block under its file path"
)


def parse_answer(
    answer: str,
    root: Optional[Path] = None,
    shown: Optional[Sequence[CodeSlice]] = None,
    is_test: Optional[Callable[[str], bool]] = None,
    set_aside: Optional[List[str]] = None,
) -> List[FileEdit]:
    """The edits a model's answer asks for, in order (paths normalised, not yet checked).

    Thinking (``<think>`` blocks) is set aside first. Tool calls written as text
    (``toolmarkup.py``) win, then an ``apply_patch`` patch (``*** Begin Patch``,
    ``codexpatch.py``), then SEARCH/REPLACE blocks
    when the answer has a ``<<<<<<< SEARCH`` line; otherwise a unified
    diff, fenced or not, CRLF or not; otherwise, with ``root``, whole
    functions, methods, classes or files (``whole.py``; ``shown`` is the code
    the prompt showed, ``is_test`` which paths are test files). Raises PatchError("no patch found in
    the answer") when there is none of these, and PatchError for malformed blocks or diffs, refused
    whole-code answers. Two different changes of the same lines are a draft and its final
    edit: the last one stays, and ``set_aside`` (when given) gets a line naming the earlier.
    """
    text = answer.replace("\r\n", "\n").replace("\r", "\n")
    thought = split_thinking(text)
    text = thought.answer
    if has_tool_markup(text):
        edits = parse_tool_markup(text, root, shown, is_test)
    elif has_codex_patch(text):
        edits = parse_codex_patch(text)
    elif has_blocks(text):
        edits = parse_blocks(text)
    else:
        edits = parse_unified_diff(text, _only(shown))
    if not edits and root is not None:
        edits = parse_whole(text, root, shown, is_test)
    if not edits:
        if thought.thinking and not text.strip():
            why = (
                "its <think> block is never closed"
                if thought.unclosed
                else "nothing follows its </think>"
            )
            raise PatchError(f"the answer holds only thinking: {why}", hint=_NO_PATCH_HINT)
        raise PatchError("no patch found in the answer", hint=_NO_PATCH_HINT)
    return _unique([replace(e, path=normalize_path(e.path)) for e in edits], set_aside)


def _only(shown: Optional[Sequence[CodeSlice]]) -> Optional[str]:
    """The one file the prompt showed code of to edit (the failing tests' own code is read-only),
    or None when it showed none or several."""
    paths = {s.path for s in shown or () if not s.read_only}
    return paths.pop() if len(paths) == 1 else None


def _unique(edits: List[FileEdit], set_aside: Optional[List[str]] = None) -> List[FileEdit]:
    """Drop a block repeated verbatim; of two different changes of the same lines of a file (a
    draft, then the final edit) keep the last, noting the earlier in ``set_aside``."""
    # Keyed by the line a diff header claims too: equal hunks at different lines are two places.
    seen: Dict[Tuple[str, Tuple[str, ...], Optional[int]], Hunk] = {}
    for edit in edits:
        for hunk in edit.hunks:
            key = (edit.path, tuple(hunk.before), hunk.hint)
            first = seen.get(key) if hunk.before else None
            if first is not None and first.after != hunk.after and set_aside is not None:
                one, other = _first_difference(first.after, hunk.after)
                set_aside.append(
                    f"{edit.path}: an earlier change of the same lines (making `{one}`) was set "
                    f"aside for the answer's last one (making `{other}`)"
                )
            if hunk.before:
                seen[key] = hunk  # the last version of this place
    out = []
    for edit in edits:
        hunks = []
        for hunk in edit.hunks:
            key = (edit.path, tuple(hunk.before), hunk.hint)
            if not hunk.before:
                hunks.append(hunk)
            elif seen.get(key) is hunk:
                hunks.append(hunk)
                del seen[key]  # a verbatim repeat later is the same place: kept once
        if hunks or edit.kind != "modify":
            out.append(replace(edit, hunks=tuple(hunks)))
    return out


def _first_difference(one: List[str], other: List[str]) -> Tuple[str, str]:
    """The first line where two versions of the same lines differ, from each ("(nothing)" past the
    end)."""
    at = next((i for i, (a, b) in enumerate(zip(one, other)) if a != b), min(len(one), len(other)))

    def line(version: List[str]) -> str:
        return version[at].strip() if at < len(version) else "(nothing)"

    return line(one), line(other)


@dataclass
class _FileState:
    """One file while edits are applied to it (mutable, internal)."""

    path: str
    old_text: Optional[str]  # as read, None when the file does not exist
    lines: List[str] = field(default_factory=list)
    newline: str = "\n"
    final_newline: bool = True
    exists: bool = True
    match: str = "exact"
    score: float = 1.0

    def note(self, match: str, score: float) -> None:
        if MATCH_RANK[match] > MATCH_RANK.get(self.match, 0):
            self.match = match
        self.score = min(self.score, score)

    def text(self) -> Optional[str]:
        if not self.exists:
            return None
        body = "\n".join(self.lines) + ("\n" if self.final_newline and self.lines else "")
        return body.replace("\n", self.newline) if self.newline != "\n" else body


def _load(root: Path, path: str) -> _FileState:
    target = resolve_inside(root, path)
    if not target.exists():
        return _FileState(path, None, exists=False, match="new")
    if not target.is_file():
        raise PatchError(
            f"the patch edits {path}, which is not a regular file", hint="edit source files only"
        )
    data = target.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise PatchError(
            f"the patch edits {path}, a binary or non-UTF-8 file "
            f"({exc.reason} at byte {exc.start})",
            hint="edit only UTF-8 text files",
        ) from exc
    crlf = text.count("\r\n")
    newline = "\r\n" if crlf and crlf >= text.count("\n") - crlf else "\n"
    plain = text.replace("\r\n", "\n")
    lines = plain.split("\n")
    if lines[-1] == "":
        lines.pop()
    return _FileState(path, text, lines, newline, plain.endswith("\n") or not plain)


# A git diff header that makes a path a symbolic link.
_SYMLINK_MODE = re.compile(r"^(?:new file |new |old |deleted file )?mode 120000\s*$", re.M)


def apply_answer(
    answer: str,
    root: Path,
    *,
    fuzzy_threshold: float = 0.85,
    shown: Optional[Sequence[CodeSlice]] = None,
    is_test: Optional[Callable[[str], bool]] = None,
) -> AppliedPatch:
    """Parse ``answer`` and compute every touched file's new text under ``root``.

    Nothing is written. ``fuzzy_threshold`` (0..1) is the least mean line
    similarity of a fuzzily located block; ``shown`` is the code the prompt
    showed (``RepairContext.slices``), which whole-function answers are
    matched against before the rest of the project; ``is_test`` says which
    paths are test files, where no unshown definition is located (default:
    the default ``test_globs``). ``AppliedPatch.located`` names the
    definitions changed that were not shown. Raises PatchError when there is no patch, a file is
    missing, binary or non-UTF-8, a block does not match (the message names it
    and the closest text, with line and similarity), a block is ambiguous,
    the answer elides code (``elision.py``), or nothing would change;
    GuardError (a PatchError) for a path outside ``root``, in ``.git/`` or
    ``.repairloop/``.
    """
    if _SYMLINK_MODE.search(answer):
        raise PatchError(
            "the candidate creates a symbolic link (mode 120000); a link can make one path write "
            "another",
            hint="edit files by their own paths; a fix needs no links",
        )
    set_aside: List[str] = []
    edits = parse_answer(answer, root, shown, is_test, set_aside)
    states: Dict[str, _FileState] = {}
    for edit in edits:
        state = states.get(edit.path) or _load(root, edit.path)
        states[edit.path] = state
        _apply_edit(state, edit, root, fuzzy_threshold)
    changes = tuple(c for c in (_change(s) for s in states.values()) if c is not None)
    if not changes:
        raise PatchError(
            "the patch changes nothing: every edit leaves its file as it was",
            hint="make sure the new lines differ from the current ones",
        )
    located = tuple(name for e in edits for name in e.located)
    applied = AppliedPatch(changes, edits[0].format, located, tuple(set_aside))
    check_elisions(applied)
    return applied


def _change(state: _FileState) -> Optional[FileChange]:
    new_text = state.text()
    if new_text == state.old_text:
        return None
    if state.old_text is None:
        return FileChange(state.path, None, new_text, "new", 1.0)
    if new_text is None:
        return FileChange(state.path, state.old_text, None, "delete", 1.0)
    return FileChange(state.path, state.old_text, new_text, state.match, round(state.score, 4))


def _apply_edit(state: _FileState, edit: FileEdit, root: Path, threshold: float) -> None:
    if edit.kind == "create":
        if state.exists and any(line.strip() for line in state.lines):
            raise PatchError(
                f"the patch creates {edit.path}, which already exists",
                hint=f"edit {edit.path} with a diff against its current text (or a SEARCH block "
                f"quoting it)",
            )
        state.exists, state.lines = (
            True,
            [t for h in edit.hunks for tag, t in h.lines if tag != REMOVED],
        )
        state.final_newline = not (edit.hunks and edit.hunks[-1].target_no_newline)
        return
    if not state.exists:
        verb = "deletes" if edit.kind == "delete" else "edits"
        raise PatchError(
            f"the patch {verb} {edit.path}, which does not exist",
            hint=_missing_hint(root, edit.path),
        )
    offset = 0
    for hunk in edit.hunks:
        offset += _apply_hunk(state, hunk, offset, threshold)
    if edit.kind == "delete":
        state.exists = False


def _apply_hunk(state: _FileState, hunk: Hunk, offset: int, threshold: float) -> int:
    """Rewrite the located block keeping the file's own context lines; return the line shift."""
    hint = None if hunk.hint is None else max(hunk.hint + offset, 0)
    loc = locate(state.lines, hunk, hint, threshold)
    state.note(loc.match, loc.score)
    window = state.lines[loc.start : loc.end]
    restyle: Callable[[str], str] = lambda line: line  # noqa: E731
    shift = None
    if loc.match == "whitespace":  # the answer's indentation in the file's style (tabs, widths)
        restyle = restyler([t for _, t in hunk.lines], state.lines)
        shift = _indent_shift([restyle(t) for t in hunk.before], window)
    file_lines = iter(window)
    block: List[str] = []
    for tag, text in hunk.lines:
        if tag == CONTEXT:
            block.append(next(file_lines))
        elif tag == REMOVED:
            next(file_lines)
        elif tag == ADDED:
            block.append(_reindent(restyle(text), shift) if shift else restyle(text))
    at_end = loc.end == len(state.lines)
    state.lines[loc.start : loc.end] = block
    if at_end and hunk.target_no_newline:
        state.final_newline = False
    elif at_end and hunk.source_no_newline:
        state.final_newline = True
    return len(block) - (loc.end - loc.start)


def _indent_shift(before: List[str], window: List[str]) -> Optional[Tuple[str, str]]:
    """(drop, add): the uniform indentation the file has instead of the answer's, if any.

    Models often quote a method without its class indentation (or with one
    level too many); the located lines then differ only by a leading prefix,
    and the new lines need the same correction to land at the right depth.
    """
    shift: Optional[Tuple[str, str]] = None
    for want, have in zip(before, window):
        if not want.strip() or not have.strip():
            continue
        if want.strip() != have.strip():
            return None
        w_ind, h_ind = (
            want[: len(want) - len(want.lstrip())],
            have[: len(have) - len(have.lstrip())],
        )
        if h_ind.endswith(w_ind):
            pair = ("", h_ind[: len(h_ind) - len(w_ind)])
        elif w_ind.endswith(h_ind):
            pair = (w_ind[: len(w_ind) - len(h_ind)], "")
        else:
            return None
        if shift is not None and pair != shift:
            return None
        shift = pair
    return shift if shift and shift != ("", "") else None


def _reindent(line: str, shift: Tuple[str, str]) -> str:
    drop, add = shift
    if not line.strip():
        return line
    if drop and line.startswith(drop):
        line = line[len(drop) :]
    return add + line


def _missing_hint(root: Path, path: str, limit: int = 5000) -> str:
    """'did you mean ...' from files with the same name under ``root`` (a bounded walk)."""
    name, seen, found = os.path.basename(path), 0, []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [
            d
            for d in dirnames
            if not d.startswith(".") and d not in ("node_modules", "__pycache__")
        ]
        seen += len(filenames)
        if name in filenames:
            found.append(Path(dirpath, name).relative_to(root).as_posix())
        if seen > limit or len(found) >= 3:
            break
    if found:
        return "did you mean " + " or ".join(found) + "? Paths are relative to the project root"
    return (
        "name an existing file, by its path relative to the project root, or create it with --- "
        "/dev/null"
    )
