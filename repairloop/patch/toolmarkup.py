"""Edits written as tool calls in the answer's text, as FileEdits.

A model trained to edit through tools writes its calls as text when it was given
none, or when the server did not parse them. Shapes read here, each checked
strictly (a call that names no file, or has neither old and new text nor the
file's content, is a structural error):

- ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` (the Hermes and
  Qwen chat templates' form: ollama/ollama#11621);
- Qwen3-Coder's XML form, ``<tool_call><function=str_replace_editor>``
  ``<parameter=path>...</parameter>...</function></tool_call>``, also without the
  ``<tool_call>`` wrapper (ml-explore/mlx-lm#1616 shows both left in the content);
- Cline's ``<replace_in_file><path>...</path><diff>SEARCH/REPLACE blocks</diff>``
  and ``<write_to_file>`` (or ``<write_file>``) with ``<path>`` and ``<content>``
  (cline/cline#8178);
- a fenced ``json`` block holding an edit or a list of edits (also under an
  ``"edits"`` key), which a model writes instead of calling an edit tool
  (microsoft/vscode#238086).

Arguments are read by the names editing tools use: the file (``path``,
``file_path``, ``file``, ``filename``, ``target_file``), the text to replace
(``old_str``, ``old_string``, ``old_text``, their camelCase forms, ``old``,
``search``) and its replacement (``new_str`` and so on), or a whole file
(``content``, ``file_text``, ``contents``), or a whole function (``code``: the
``replace_function`` tool repairloop gives models that call functions). A call
may hold an ``edits`` list of old and new texts for its file
(ollama/ollama#17711's edit tool). A ``view`` or ``undo_edit`` command edits
nothing and is skipped.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from repairloop.errors import PatchError
from repairloop.patch.blocks import parse_blocks, search_replace_edit
from repairloop.patch.changes import ADDED, FileEdit, Hunk
from repairloop.patch.replace import replacement_hunk
from repairloop.patch.whole import parse_whole
from repairloop.types import CodeSlice

_TOOL_CALL = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.S)
_FUNCTION = re.compile(r"<function=([\w.\-]+)>(.*?)</function>", re.S)
_PARAMETER = re.compile(r"<parameter=([\w\-]+)>\n?(.*?)\n?</parameter>", re.S)
_CLINE = re.compile(r"<(replace_in_file|write_to_file|write_file)>(.*?)</\1>", re.S)
_FIELD = re.compile(r"<(\w+)>\n?(.*?)\n?</\1>", re.S)  # <path>calc.py</path> inside a Cline call
_JSON_FENCE = re.compile(r"^[ \t]*```json[ \t]*\n(.*?)\n[ \t]*```", re.S | re.M)
PATH_KEYS = ("path", "file_path", "file", "filename", "target_file")
OLD_KEYS = ("old_str", "old_string", "old_text", "oldString", "oldText", "old", "search")
NEW_KEYS = ("new_str", "new_string", "new_text", "newString", "newText", "new", "replace")
CONTENT_KEYS = ("content", "file_text", "contents")
_HINT = (
    "give each edit the file's path and either the exact old text and its replacement, or "
    "the whole new file; or answer with a unified diff"
)


def _first(call: Dict[str, Any], keys: Tuple[str, ...]) -> Optional[str]:
    for key in keys:
        value = call.get(key)
        if isinstance(value, str):
            return value
    return None


def _is_edit(value: Any) -> bool:
    return isinstance(value, dict) and _first(value, PATH_KEYS) is not None


def _json_edits(text: str) -> List[Dict[str, Any]]:
    """The edits of the fenced ``json`` blocks of ``text`` that hold edits; [] when none does."""
    found: List[Dict[str, Any]] = []
    for block in _JSON_FENCE.findall(text):
        try:
            value = json.loads(block)
        except ValueError:
            continue
        if isinstance(value, dict) and isinstance(value.get("edits"), list):
            value = value["edits"]
        items = value if isinstance(value, list) else [value]
        if items and all(_is_edit(item) for item in items):
            found += items
    return found


def _arguments(body: str, number: int) -> Dict[str, Any]:
    function = _FUNCTION.search(body)
    if function is not None:
        return dict(_PARAMETER.findall(function.group(2)))
    try:
        call = json.loads(body)
    except ValueError as exc:
        raise PatchError(
            f"tool call {number} holds neither JSON nor <function=...> markup: {exc}", hint=_HINT
        ) from exc
    args = call.get("arguments", call.get("parameters", call.get("input", {})))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError as exc:
            raise PatchError(f"tool call {number}'s arguments are not JSON", hint=_HINT) from exc
    if not isinstance(args, dict):
        raise PatchError(f"tool call {number}'s arguments are not an object", hint=_HINT)
    return args


def tool_calls(text: str) -> List[Dict[str, Any]]:
    """Every edit call written in ``text``, as a dict of its arguments, in order."""
    bodies = _TOOL_CALL.findall(text) or [m.group(0) for m in _FUNCTION.finditer(text)]
    calls = [_arguments(body, n) for n, body in enumerate(bodies, 1)]
    for tag, body in _CLINE.findall(text):
        fields = dict(_FIELD.findall(body))
        calls.append({**fields, "tool": tag})
    return calls or _json_edits(text)


def has_tool_markup(text: str) -> bool:
    """True when ``text`` writes an edit as a tool call (any shape of this module)."""
    return bool(
        _TOOL_CALL.search(text)
        or _FUNCTION.search(text)
        or _CLINE.search(text)
        or _json_edits(text)
    )


def parse_tool_markup(
    text: str,
    root: Optional[Path],
    shown: Optional[Sequence[CodeSlice]] = None,
    is_test: Optional[Callable[[str], bool]] = None,
) -> List[FileEdit]:
    """The FileEdits of the tool calls written in ``text``; a whole file replaces the one under
    ``root``, and a whole function (``code``, repairloop's own ``replace_function`` tool) is
    matched like a whole-function answer (``whole.parse_whole`` with ``shown`` and ``is_test``).
    Raises PatchError for a call without a file or an edit."""
    edits: List[FileEdit] = []
    functions: List[str] = []
    for number, call in enumerate(tool_calls(text), 1):
        if call.get("command") in ("view", "undo_edit"):
            continue
        path = _first(call, PATH_KEYS)
        if not path:
            raise PatchError(f"tool call {number} names no file", hint=_HINT)
        old, new, content = (
            _first(call, OLD_KEYS),
            _first(call, NEW_KEYS),
            _first(call, CONTENT_KEYS),
        )
        code = call.get("code")
        if isinstance(code, str):
            functions.append(f"{path}\n```python\n{code.rstrip()}\n```")
        elif isinstance(call.get("edits"), list) and old is None and content is None:
            edits += [_replacement(path, item, number) for item in call["edits"]]
        elif isinstance(call.get("diff"), str):
            edits += parse_blocks(f"{path}\n{call['diff']}")
        elif old is not None and new is not None:
            edits.append(search_replace_edit(path, old.split("\n"), new.split("\n"), number))
        elif content is not None:
            edits.append(_whole_file(path, content, root))
        else:
            raise PatchError(
                f"tool call {number} ({path}) has neither old and new text nor the file's content",
                hint=_HINT,
            )
    if functions:
        if root is None:
            raise PatchError("a whole function needs the project to find it in", hint=_HINT)
        edits += parse_whole("\n\n".join(functions), root, shown, is_test)
    return edits


def _replacement(path: str, item: Any, number: int) -> FileEdit:
    """One old-and-new pair of an ``edits`` list of call ``number`` on ``path``."""
    old = _first(item, OLD_KEYS) if isinstance(item, dict) else None
    new = _first(item, NEW_KEYS) if isinstance(item, dict) else None
    if old is None or new is None:
        raise PatchError(
            f"tool call {number} ({path}) has an edit without old and new text", hint=_HINT
        )
    return search_replace_edit(path, old.split("\n"), new.split("\n"), number)


def _whole_file(path: str, content: str, root: Optional[Path]) -> FileEdit:
    new = content[:-1].split("\n") if content.endswith("\n") else content.split("\n")
    target = (root / path) if root is not None else None
    if target is None or not target.is_file():
        added = tuple((ADDED, line) for line in new)
        return FileEdit(path, "create", (Hunk(f"the new file {path}", added),), "whole_file")
    try:
        old_text = target.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise PatchError(f"cannot read {path} to rewrite it: {exc}", hint=_HINT) from exc
    old = old_text[:-1].split("\n") if old_text.endswith("\n") else old_text.split("\n")
    return FileEdit(
        path, "modify", (replacement_hunk(f"the new {path}", old, new, 0),), "whole_file"
    )
