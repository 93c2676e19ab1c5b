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

import re
from typing import Dict, List, Optional, Tuple

from repairloop.types import CodeSlice, Decision, Feedback, LastAttempt, RepairContext

SYSTEM_PROMPT = """\
You repair failing tests by fixing the code under test.

Rules:
- Change only the code under test. Test files are read-only: never edit them, \
and never weaken, skip or delete an assertion.
- Answer with a unified diff only, in one ```diff block: `--- a/PATH` and \
`+++ b/PATH` headers, then `@@` hunks with a few unchanged context lines. \
PATH is relative to the project root, exactly as shown in the code headers.
- If a diff is awkward you may answer with SEARCH/REPLACE blocks instead: the \
file path on its own line, then `<<<<<<< SEARCH`, the exact current lines, \
`=======`, the new lines, `>>>>>>> REPLACE`.
- Keep the change minimal: fix the cause of the failure; do not refactor, \
reformat, rename or add features.
- No explanations outside the patch."""

RETRY_INSTRUCTION = (
    "Your previous answer could not be used: {error}\n"
    "Answer again with a unified diff (or SEARCH/REPLACE blocks) only, against the "
    "current code shown in the first message."
)

_LANGUAGES = {".py": "python", ".pyi": "python", ".toml": "toml", ".cfg": "ini", ".ini": "ini",
              ".json": "json", ".yaml": "yaml", ".yml": "yaml", ".js": "javascript",
              ".ts": "typescript", ".sh": "sh"}


def render_messages(context: RepairContext, feedback: Optional[Feedback] = None) -> List[Dict[str, str]]:
    """Chat messages for one request: ``[system, user]``, plus the structural retry.

    With ``feedback`` the list is ``[system, user(context), assistant(previous
    answer), user(the error and the instruction to answer again)]``: four
    messages, the last one naming the error.
    """
    messages = [{"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": render_context(context)}]
    if feedback is not None:
        messages.append({"role": "assistant", "content": feedback.answer})
        messages.append({"role": "user", "content": RETRY_INSTRUCTION.format(error=feedback.error.strip())})
    return messages


def render_context(context: RepairContext) -> str:
    """The user message: failing tests, failure, traceback, code slices, last attempt, notes.

    Sections are Markdown headings in a fixed order; empty sections are left
    out. ``context.py`` measures this text's tokens for its budget.
    """
    parts = [_tests_section(context), _failure_section(context), _code_section(context.slices)]
    if context.last_attempt is not None:
        parts.append(_last_attempt_section(context.last_attempt, context.message))
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
        parts.append("## Failure\n" + _fenced(context.message.strip()))
    if context.traceback.strip():
        parts.append("## Traceback (project frames only)\n" + _fenced(context.traceback.strip()))
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
        blocks.append(header + "\n" + _fenced(piece.text.rstrip("\n"), _language(piece.path)))
    return "\n\n".join(blocks)


def _last_attempt_section(last: LastAttempt, failure: str) -> str:
    """What the previous candidate changed and what it did, in a few lines.

    Only the changed lines are shown (the code above is current), and the
    verdict leaves out a failure message the Failure section already shows:
    the prompt stays about the same size from one iteration to the next.
    """
    lines = ["## Last attempt", _verdict(last, failure)]
    if last.fixed:
        lines.append("It fixed: " + ", ".join(last.fixed))
    if last.broke:
        lines.append("It broke: " + ", ".join(last.broke))
    changed = _changed_lines(last.diff)
    if changed:
        lines.append(_fenced(changed, "diff"))
    return "\n".join(lines)


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


def _verdict(last: LastAttempt, failure: str) -> str:
    reason = last.reason.strip()
    head, _, detail = reason.partition(": ")
    if detail and detail.split("\n")[0].strip() in failure:
        reason = head  # the same failure as shown above: do not repeat it
    if last.decision is Decision.KEPT:
        text = "Kept: it is in the code above; build on it"
    elif last.decision is Decision.REJECTED:
        text = "Rejected untested"
    elif last.decision is Decision.REVERTED:
        text = "Tested and reverted (not in the code above)"
    else:
        text = f"Not used ({last.decision.value})"
    if reason:
        text += f" ({reason})" if last.decision is Decision.KEPT else f": {reason}"
    return text if text.endswith(".") else text + "."


def _fenced(text: str, language: str = "") -> str:
    """Fence ``text`` with more backticks than any run inside it, so it cannot break out."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{language}\n{text}\n{fence}"


def _language(path: str) -> str:
    dot = path.rfind(".")
    return _LANGUAGES.get(path[dot:].lower(), "") if dot != -1 else ""
