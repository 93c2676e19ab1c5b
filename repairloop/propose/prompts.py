"""The prompt: a short system message and a user message rendered from a RepairContext.

Each iteration's prompt is rebuilt from the current code, the latest failure
and the last diff (DESIGN.md, "The loop"): no conversation history crosses
iterations, so prompt size stays flat. The one exception is the structural
retry inside an iteration: the rejected answer and the validator's error are
appended once, in the same thread (``render_messages(..., feedback)``).

Rendering is deterministic (same context, same text) so prompts can be
journalled, compared between iterations and snapshot-tested. Code slices show
their line range in a header rather than numbering every line: numbered lines
invite the model to copy the numbers into its diff.
"""

from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from repairloop.propose.lastattempt import last_attempt_section
from repairloop.textutil import fence
from repairloop.types import CodeSlice, Feedback, RepairContext

_RULES = """\
You repair failing tests by fixing the code under test.

Rules:
- Change only the code under test. Test files are read-only: never edit them, \
and never weaken, skip or delete an assertion.
"""
_MINIMAL = """\
- Keep the change minimal: fix the cause of the failure; do not refactor, \
reformat, rename or add features.
- No explanations outside the patch."""
_DIFF_RULE = """\
- Answer with a unified diff only, in one ```diff block: `--- a/PATH` and \
`+++ b/PATH` headers, then `@@` hunks with a few unchanged context lines. \
PATH is relative to the project root, exactly as shown in the code headers.
"""
_SEARCH_REPLACE_RULE = """\
- Answer with SEARCH/REPLACE blocks only: the file path on its own line \
(relative to the project root, exactly as shown in the code headers), then \
`<<<<<<< SEARCH`, the exact current lines, `=======`, the new lines, \
`>>>>>>> REPLACE`. Quote enough lines to make the SEARCH part unique.
"""
_WHOLE_RULE = """\
- Answer with the complete new version of each function or method you \
change, in a ```python block, with the file path (relative to the project \
root, exactly as shown in the code headers) on the line above the block. \
Give a method inside its class: `class Name:` and then only that method.
- Write every line of the function: never shorten it with `...` or with \
comments such as `# rest unchanged`. Add no other code to the block.
"""

# The system prompt per edit format ("auto" starts with diffs; settings.EDIT_FORMATS).
SYSTEM_PROMPTS: Dict[str, str] = {
    "diff": _RULES
    + _DIFF_RULE
    + """\
- If a diff is awkward you may answer with SEARCH/REPLACE blocks instead: the \
file path on its own line, then `<<<<<<< SEARCH`, the exact current lines, \
`=======`, the new lines, `>>>>>>> REPLACE`.
"""
    + _MINIMAL,
    "search_replace": _RULES + _SEARCH_REPLACE_RULE + _MINIMAL,
    "whole": _RULES + _WHOLE_RULE + _MINIMAL,
}
SYSTEM_PROMPTS["tools"] = (
    _RULES
    + """\
- Make the change by calling the edit tools, at least once: `replace_function` \
with the complete new version of a function or method you change (every line \
written out), `str_replace` with the exact current text and its replacement, or \
`write_file` for a new file. Paths are relative to the project root, exactly \
as shown in the code headers.
"""
    + _MINIMAL
)
SYSTEM_PROMPTS["auto"] = SYSTEM_PROMPTS["diff"]

# The edit tools a model that supports function calling is given (``edit_format`` "tools", or
# "auto" where litellm says the model supports it). Their calls are read by the same strict
# parser as calls written as text (``patch/toolmarkup.py``).
EDIT_TOOLS: List[Dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "replace_function",
            "description": "Replace one function or method with its complete new version.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file path from the project root"},
                    "name": {"type": "string", "description": "`func` or `Class.method`"},
                    "code": {
                        "type": "string",
                        "description": "the whole new definition, every line written out",
                    },
                },
                "required": ["path", "name", "code"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "str_replace",
            "description": "Replace an exact piece of a file's current text.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file path from the project root"},
                    "old": {"type": "string", "description": "the exact current lines"},
                    "new": {"type": "string", "description": "the lines that replace them"},
                },
                "required": ["path", "old", "new"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Write a new file (its whole content).",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "file path from the project root"},
                    "content": {"type": "string", "description": "the whole file"},
                },
                "required": ["path", "content"],
                "additionalProperties": False,
            },
        },
    },
]
SYSTEM_PROMPT = SYSTEM_PROMPTS["diff"]

_ASK_AGAIN = {
    "tools": "Call the edit tools again, with arguments that fix this,",
    "diff": "Answer again with a unified diff (or SEARCH/REPLACE blocks) only",
    "search_replace": "Answer again with SEARCH/REPLACE blocks only",
    "whole": (
        "Answer again with the complete new version of each function you change, in a "
        "```python block under its file path, every line written out,"
    ),
}
RETRY_INSTRUCTION = (
    "Your previous answer could not be used: {error}\n{ask} against the current code {where}."
)
_WHERE = {True: "shown in the first message", False: "of the files named in the first message"}

_LANGUAGES = {
    ".py": "python",
    ".pyi": "python",
    ".toml": "toml",
    ".cfg": "ini",
    ".ini": "ini",
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".js": "javascript",
    ".ts": "typescript",
    ".sh": "sh",
}


def render_messages(
    context: RepairContext, feedback: Optional[Feedback] = None, edit_format: str = "diff"
) -> List[Dict[str, str]]:
    """Chat messages for one request: ``[system, user]``, plus the structural retry.

    ``edit_format`` ("diff", "search_replace", "whole"; "auto" is "diff")
    picks the answer format the system prompt and the retry ask for. With
    ``feedback`` the list is ``[system, user(context), assistant(previous
    answer), user(the error and the instruction to answer again)]``: four
    messages, the last one naming the error.
    """
    messages = [
        {"role": "system", "content": SYSTEM_PROMPTS[edit_format]},
        {"role": "user", "content": render_context(context)},
    ]
    if feedback is not None:
        ask = _ASK_AGAIN.get(edit_format, _ASK_AGAIN["diff"])
        messages.append({"role": "assistant", "content": feedback.answer})
        where = _WHERE[bool(context.slices)]  # never point at code the prompt did not show
        messages.append(
            {
                "role": "user",
                "content": RETRY_INSTRUCTION.format(
                    error=feedback.error.strip(), ask=ask, where=where
                ),
            }
        )
    return messages


def render_context(context: RepairContext) -> str:
    """The user message: failing tests, failure, traceback, code slices, last attempt, notes.

    Sections are Markdown headings in a fixed order; empty sections are left
    out. ``context.py`` measures this text's tokens for its budget.
    """
    parts = [
        _tests_section(context),
        _failure_section(context),
        _code_section(context.slices, context.ranking),
    ]
    if context.last_attempt is not None:
        parts.append(last_attempt_section(context.last_attempt, context.message, context.slices))
    if context.notes:
        parts.append("## Notes\n" + "\n".join(f"- {note}" for note in context.notes))
    parts.append(_task_section(context.slices))
    return "\n\n".join(p for p in parts if p) + "\n"


def _tests_section(context: RepairContext) -> str:
    lines = ["## Failing tests"] + [f"- {test_id}" for test_id in context.failing_tests]
    if context.other_failing:
        lines.append("")
        lines.append(
            "Also failing, with another root cause as far as the evidence shows (not part of this "
            "task):"
        )
        lines.extend(f"- {test_id}" for test_id in context.other_failing)
    return "\n".join(lines)


def _failure_section(context: RepairContext) -> str:
    parts = []
    if context.message.strip():
        parts.append("## Failure\n" + fence(context.message.strip()))
    if context.traceback.strip():
        parts.append("## Traceback (project frames only)\n" + fence(context.traceback.strip()))
    return "\n\n".join(parts)


def _code_section(slices: Tuple[CodeSlice, ...], ranking: str = "") -> str:
    if not slices:
        return ""
    blocks = ["## Code" + (f"\nMost suspicious first, as ranked by {ranking}." if ranking else "")]
    for piece in slices:
        header = f"### {piece.path}, lines {piece.start_line}-{piece.end_line}"
        if piece.name:
            header += f" ({piece.name})"
        if piece.read_only:
            header += "\nREAD-ONLY: test code; do not edit it."
        blocks.append(header + "\n" + fence(piece.text.rstrip("\n"), _language(piece.path)))
    return "\n\n".join(blocks)


def _task_section(slices: Tuple[CodeSlice, ...]) -> str:
    """The task, and the files the answer may change: those shown that are not tests (a function of
    another project file may be answered too, under its path)."""
    editable = list(dict.fromkeys(s.path for s in slices if not s.read_only))
    where = (
        f" Files you may change: {', '.join(editable)} (or another non-test file of the project, "
        f"named by its path)."
        if editable
        else ""
    )
    return (
        "## Task\nFix the code under test so that the failing tests pass and no passing test "
        "breaks."
        f"{where} Answer with the patch only."
    )


def _language(path: str) -> str:
    dot = path.rfind(".")
    return _LANGUAGES.get(path[dot:].lower(), "") if dot != -1 else ""
