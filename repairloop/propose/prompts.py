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

import os
import re
from typing import Dict, List, Optional, Tuple

from repairloop.textutil import fence
from repairloop.types import CodeSlice, Decision, Feedback, LastAttempt, RepairContext

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
    "diff": _RULES + _DIFF_RULE + """\
- If a diff is awkward you may answer with SEARCH/REPLACE blocks instead: the \
file path on its own line, then `<<<<<<< SEARCH`, the exact current lines, \
`=======`, the new lines, `>>>>>>> REPLACE`.
""" + _MINIMAL,
    "search_replace": _RULES + _SEARCH_REPLACE_RULE + _MINIMAL,
    "whole": _RULES + _WHOLE_RULE + _MINIMAL,
}
SYSTEM_PROMPTS["auto"] = SYSTEM_PROMPTS["diff"]
SYSTEM_PROMPT = SYSTEM_PROMPTS["diff"]

_ASK_AGAIN = {
    "diff": "Answer again with a unified diff (or SEARCH/REPLACE blocks) only",
    "search_replace": "Answer again with SEARCH/REPLACE blocks only",
    "whole": ("Answer again with the complete new version of each function you change, in a "
              "```python block under its file path, every line written out,"),
}
RETRY_INSTRUCTION = (
    "Your previous answer could not be used: {error}\n"
    "{ask} against the current code shown in the first message."
)

# A changed span ending in one of these gets the next word too, when that is short (characters).
_OPERATOR_ENDS = set("+-*/%<>=!&|^~,")
_SHORT_WORD = 8

_LANGUAGES = {".py": "python", ".pyi": "python", ".toml": "toml", ".cfg": "ini", ".ini": "ini",
              ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".js": "javascript",
              ".ts": "typescript", ".sh": "sh"}


def render_messages(context: RepairContext, feedback: Optional[Feedback] = None,
                    edit_format: str = "diff") -> List[Dict[str, str]]:
    """Chat messages for one request: ``[system, user]``, plus the structural retry.

    ``edit_format`` ("diff", "search_replace", "whole"; "auto" is "diff")
    picks the answer format the system prompt and the retry ask for. With
    ``feedback`` the list is ``[system, user(context), assistant(previous
    answer), user(the error and the instruction to answer again)]``: four
    messages, the last one naming the error.
    """
    messages = [{"role": "system", "content": SYSTEM_PROMPTS[edit_format]},
                {"role": "user", "content": render_context(context)}]
    if feedback is not None:
        ask = _ASK_AGAIN.get(edit_format, _ASK_AGAIN["diff"])
        messages.append({"role": "assistant", "content": feedback.answer})
        messages.append({"role": "user", "content": RETRY_INSTRUCTION.format(error=feedback.error.strip(), ask=ask)})
    return messages


def render_context(context: RepairContext) -> str:
    """The user message: failing tests, failure, traceback, code slices, last attempt, notes.

    Sections are Markdown headings in a fixed order; empty sections are left
    out. ``context.py`` measures this text's tokens for its budget.
    """
    parts = [_tests_section(context), _failure_section(context), _code_section(context.slices)]
    if context.last_attempt is not None:
        parts.append(_last_attempt_section(context.last_attempt, context.message, context.slices))
    if context.notes:
        parts.append("## Notes\n" + "\n".join(f"- {note}" for note in context.notes))
    parts.append("## Task\nFix the code under test so that the failing tests pass and no "
                 "passing test breaks. Answer with the patch only.")
    return "\n\n".join(p for p in parts if p) + "\n"


def _tests_section(context: RepairContext) -> str:
    lines = ["## Failing tests"] + [f"- {test_id}" for test_id in context.failing_tests]
    if context.other_failing:
        lines.append("")
        lines.append("Also failing, probably for another reason (not part of this task):")
        lines.extend(f"- {test_id}" for test_id in context.other_failing)
    return "\n".join(lines)


def _failure_section(context: RepairContext) -> str:
    parts = []
    if context.message.strip():
        parts.append("## Failure\n" + fence(context.message.strip()))
    if context.traceback.strip():
        parts.append("## Traceback (project frames only)\n" + fence(context.traceback.strip()))
    return "\n\n".join(parts)


def _code_section(slices: Tuple[CodeSlice, ...]) -> str:
    if not slices:
        return ""
    blocks = ["## Code"]
    for piece in slices:
        header = f"### {piece.path}, lines {piece.start_line}-{piece.end_line}"
        if piece.name:
            header += f" ({piece.name})"
        if piece.read_only:
            header += "\nREAD-ONLY: this is the failing test; do not edit it."
        blocks.append(header + "\n" + fence(piece.text.rstrip("\n"), _language(piece.path)))
    return "\n\n".join(blocks)


def _last_attempt_section(last: LastAttempt, failure: str, slices: Tuple[CodeSlice, ...] = ()) -> str:
    """What the previous candidate changed and what it did, in as few tokens as will do.

    A one-line change is shown in place (```a - 1` → `a + 1```), with just
    enough of the line around it to be unambiguous, because the code above
    already shows the whole line (its number is added when the changed text
    occurs more than once there); anything larger is shown as its changed
    lines only. The verdict leaves out a failure the Failure section
    already shows. The section is the only part of the prompt that iteration 1
    lacks, so its size is the prompt's growth over a run: about 40 tokens for
    a one-line candidate (BENCHMARKS.md, figure 2).
    """
    change = _one_line_change(last.diff, "\n".join(piece.text for piece in slices))
    outcome = _outcome(last, failure)
    if change is not None:
        lines = [f"## Last attempt ({_decision_words(last)})", f"{change}{': ' + outcome if outcome else ''}"]
    else:
        lines = [f"## Last attempt ({_decision_words(last)})"] + ([outcome] if outcome else [])
    if last.fixed:
        lines.append("It fixed: " + ", ".join(last.fixed))
    if last.broke:
        lines.append("It broke: " + ", ".join(last.broke))
    if change is None:
        changed = _changed_lines(last.diff)
        if changed:
            lines.append(fence(changed, "diff"))
    return "\n".join(lines)


def _decision_words(last: LastAttempt) -> str:
    if last.decision is Decision.KEPT:
        return "kept: it is in the code above; build on it"
    if last.decision is Decision.REVERTED:
        return "reverted"  # tested, then undone: the code above is without it
    if last.decision is Decision.REJECTED:
        return "rejected untested"
    return f"not used: {last.decision.value}"


def _outcome(last: LastAttempt, failure: str) -> str:
    """The verdict's reason, without a failure message the Failure section already shows."""
    head, _, detail = last.reason.strip().partition(": ")
    if not head:
        return ""
    if head.startswith("fixed none of") and detail:
        first = detail.split("\n")[0].strip()
        first = first[len("AssertionError: "):] if first.startswith("AssertionError: assert ") else first
        return "the same failure" if first in failure else first
    if detail and detail.split("\n")[0].strip() in failure:
        return head
    return last.reason.strip()


def _one_line_change(diff: str, shown: str = "") -> Optional[str]:
    """```old` → `new``` when ``diff`` replaces one line of one file, else None.

    Prefixed with ``Line N, `` (the line's number in the file; the code above
    shows the range) unless ``old`` occurs exactly once in ``shown``.
    None too for a change of whitespace only, or one with backticks: clearer as a diff.
    """
    lines = diff.splitlines()
    hunks = [i for i, line in enumerate(lines) if line.startswith("@@")]
    removed = [line[1:] for line in lines if line[:1] == "-" and not line.startswith("---")]
    added = [line[1:] for line in lines if line[:1] == "+" and not line.startswith("+++")]
    files = sum(line.startswith("+++") for line in lines)
    header = re.match(r"@@ -(\d+)", lines[hunks[0]]) if len(hunks) == 1 else None
    if header is None or files != 1 or len(removed) != 1 or len(added) != 1:
        return None
    if removed[0].split() == added[0].split():
        return None
    number = int(header.group(1))
    for line in lines[hunks[0] + 1:]:
        if line[:1] == "-":
            break
        number += line[:1] == " "
    old, new = _changed_span(removed[0], added[0])
    if "`" in old + new:
        return None  # would break out of the inline code span
    where = "" if shown.count(old) == 1 else f"Line {number}, "
    return f"{where}`{old}` → `{new}`"


def _changed_span(old: str, new: str) -> Tuple[str, str]:
    """The part of ``old`` that ``new`` changes, widened to whole words, then by one more
    word at a time (to the left first) until it occurs once in ``old``."""
    prefix = len(os.path.commonprefix([old, new]))
    room = min(len(old), len(new)) - prefix
    suffix = min(room, len(os.path.commonprefix([old[::-1], new[::-1]])))
    left = _word_start(old, prefix)
    end_old, end_new = _word_end(old, len(old) - suffix), _word_end(new, len(new) - suffix)
    while not old[left:end_old].strip() or old.count(old[left:end_old].strip()) > 1:
        if left > 0:
            left = _word_start(old, len(old[:left].rstrip()))
        elif end_old < len(old):
            end_old, end_new = _word_end(old, end_old + 1), _word_end(new, end_new + 1)
        else:
            break
    # `n -` → `n +` reads better as `n - 1` → `n + 1`: finish an operator with a short operand.
    right = _word_end(old, end_old + 1) if end_old < len(old) else end_old
    if old[left:end_old].strip()[-1:] in _OPERATOR_ENDS and right - end_old <= _SHORT_WORD + 1:
        end_old, end_new = right, _word_end(new, end_new + 1)
    return old[left:end_old].strip(), new[left:end_new].strip()


def _word_start(text: str, at: int) -> int:
    while at > 0 and not text[at - 1].isspace():
        at -= 1
    return at


def _word_end(text: str, at: int) -> int:
    at = min(at, len(text))
    while at < len(text) and not text[at].isspace():
        at += 1
    return at


def _changed_lines(diff: str) -> str:
    """The '-'/'+' lines of a diff, each file named once when there are several."""
    out: List[str] = []
    files = [line[6:] for line in diff.splitlines() if line.startswith("+++ b/")]
    for line in diff.splitlines():
        if line.startswith("+++ b/") and len(files) > 1:
            out.append(f"# {line[6:]}")
        elif line[:1] in ("+", "-") and not line.startswith(("+++", "---")):
            out.append(line)
    return "\n".join(out)


def _language(path: str) -> str:
    dot = path.rfind(".")
    return _LANGUAGES.get(path[dot:].lower(), "") if dot != -1 else ""
