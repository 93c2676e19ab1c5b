"""Code blocks of an answer and the file each one names.

A block is a Markdown fence (three or more backticks or tildes; an unclosed
fence runs to the end of the answer; a block that is Python only when the
fences inside it pair up, as in a docstring's ```` ```pycon ```` example, is
read so). The file it names, if any, is taken
from, in order: the fence's info string (```` ```python calc.py ````,
```` ```python:calc.py ````, ```` ```python title="calc.py" ````), the line
above the fence (``calc.py``, ``**calc.py**``, ``File: `calc.py` ``, prose
ending in a path), or a first-line comment (``# calc.py``, ``# File: calc.py``).
An answer without any fence whose whole text parses as Python and begins
with a definition or an import is one unlabelled block.
"""

from __future__ import annotations

import ast
import re
import textwrap
from dataclasses import dataclass
from typing import List, Optional

from repairloop.patch.blocks import path_above

_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([^`]*?)[ \t]*$")
_PYTHON = {"python", "py", "python3", "py3", "pycon", ""}
_PATHISH = re.compile(r"^[\w./\\-]+\.[A-Za-z0-9]{1,8}$")
_FIRST_COMMENT = re.compile(r"^[ \t]*#\s*(?:(?:file(?:name)?|path)\s*:\s*)?(\S+)\s*$", re.I)
_STARTS = ("def ", "async def ", "class ", "@", "import ", "from ")


@dataclass(frozen=True)
class CodeBlock:
    """One block of code in an answer: ``code`` (``\\n`` newlines), the file it names, where it
    is."""

    code: str
    label: Optional[str]  # the path it names, as written (normalised separators), or None
    line: int  # 1-based line of the answer where the code starts
    python: bool  # the info string says Python, says nothing, or the label is a .py file
    language: str = ""  # the info string's language word, lower case ("" when none)


def code_blocks(text: str) -> List[CodeBlock]:
    """Every fenced block of ``text`` in order; else the unfenced answer if it is plain Python
    code."""
    lines = text.split("\n")
    blocks: List[CodeBlock] = []
    i = 0
    while i < len(lines):
        opened = _OPEN.match(lines[i])
        if opened is None:
            i += 1
            continue
        fence, info = opened.group(1), opened.group(2)
        end = _end(lines, i, fence, nested=False)
        if not _parses(lines[i + 1 : end]):
            nested = _end(lines, i, fence, nested=True)
            end = nested if _parses(lines[i + 1 : nested]) else end
        body = lines[i + 1 : end]
        blocks.append(_block(body, info, path_above(lines, i, stop=0), i + 2))
        i = end + 1
    if blocks or not text.strip():
        return blocks
    return [CodeBlock(text.strip("\n"), None, 1, True, "python")] if _plain_python(text) else []


def _end(lines: List[str], start: int, fence: str, *, nested: bool) -> int:
    """The line closing the fence opened at ``start`` (``len(lines)`` when none does). With
    ``nested``, a fence with an info string inside it (a docstring's ```` ```pycon ```` example)
    opens a level that the next bare fence closes, as models write code holding fences; by
    CommonMark that bare fence closes the block."""
    depth, end = 0, start + 1
    while end < len(lines):
        inner = _OPEN.match(lines[end]) if nested else None
        if inner is not None and inner.group(2) and inner.group(1)[0] == fence[0]:
            depth += 1
        elif _closes(lines[end], fence):
            if depth == 0:
                return end
            depth -= 1
        end += 1
    return end


def _parses(body: List[str]) -> bool:
    """Whether ``body`` is Python (indented as a method may be)."""
    try:
        ast.parse(textwrap.dedent("\n".join(body)))
    except (SyntaxError, ValueError):
        return False
    return True


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0])


def _block(body: List[str], info: str, above: Optional[str], line: int) -> CodeBlock:
    words = [w.strip("'\"{}") for w in re.split(r"[\s:]+|=", info) if w.strip("'\"{}")]
    language = words[0].lower() if words and not _PATHISH.match(words[0]) else ""
    label = next((w.replace("\\", "/") for w in words if _PATHISH.match(w)), None)
    if label is None and above is not None and _PATHISH.match(above):
        label = above
    if label is None and body:
        first = _FIRST_COMMENT.match(body[0])
        if first is not None and _PATHISH.match(first.group(1)) and "/" in first.group(1) + "/":
            label = first.group(1).replace("\\", "/") if first.group(1).endswith(".py") else None
    python = language in _PYTHON or bool(label and label.endswith(".py"))
    return CodeBlock("\n".join(body), label, line, python, language)


def _plain_python(text: str) -> bool:
    stripped = text.strip()
    if not stripped.startswith(_STARTS):
        return False
    try:
        ast.parse(stripped)
    except (SyntaxError, ValueError):
        return False
    return True
