"""The prompt's "Last attempt" section: what the previous candidate changed and what it did.

Only code the prompt shows may be pointed at: a kept candidate outside the
code shown (it fixed another group of failures) is named with its file and
shown as its changed lines, never as "in the code above".
"""

from __future__ import annotations

import os
import re
from typing import List, Optional, Tuple

from repairloop.textutil import fence
from repairloop.types import CodeSlice, Decision, FailureSnapshot, LastAttempt

# A changed span ending in one of these gets the next word too, when that is short (characters).
_OPERATOR_ENDS = set("+-*/%<>=!&|^~,")
_SHORT_WORD = 8
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def last_attempt_section(
    last: LastAttempt, failure: str, slices: Tuple[CodeSlice, ...] = ()
) -> str:
    """What the previous candidate changed and what it did, in as few tokens as will do.

    A one-line change is shown in place (```a - 1` → `a + 1```), with just
    enough of the line around it to be unambiguous, because the code above
    already shows the whole line (its number is added when the changed text
    occurs more than once there); anything larger is shown as its changed
    lines only. A change outside the code shown is named by file (and line)
    instead, and a kept one is then "applied", not "in the code above". The
    verdict leaves out a failure the Failure section already shows. The
    section is the only part of the prompt that iteration 1 lacks, so its size
    is the prompt's growth over a run: about 60 tokens for a one-line candidate
    that changed the failure (BENCHMARKS.md, figure 2).
    """
    visible = in_view(last.diff, slices, new_side=last.decision is Decision.KEPT)
    change = _one_line_change(last.diff, "\n".join(piece.text for piece in slices), visible)
    outcome = _outcome(last, failure)
    title = f"## Last attempt ({_decision_words(last, visible)})"
    if change is not None:
        lines = [title, f"{change}{': ' + outcome if outcome else ''}"]
    else:
        lines = [title] + ([outcome] if outcome else [])
    if last.fixed:
        lines.append("It fixed: " + ", ".join(last.fixed))
    if last.broke:
        lines.append("It broke: " + ", ".join(last.broke))
    if change is None:
        changed = _changed_lines(last.diff, name_files=not visible)
        if changed:
            lines.append(fence(changed, "diff"))
    return "\n".join(lines)


def in_view(diff: str, slices: Tuple[CodeSlice, ...], *, new_side: bool) -> bool:
    """True when every hunk of ``diff`` lies inside a slice of its file: its new lines when
    ``new_side`` (a kept candidate: the code shown has it), else its old ones (the code shown is
    without it)."""
    path, hunks = "", 0
    for line in diff.splitlines():
        if line.startswith("+++ "):
            path = line[4:].strip()
            path = path[2:] if path.startswith("b/") else path
            continue
        match = _HUNK.match(line)
        if match is None:
            continue
        hunks += 1
        start = int(match.group(3) if new_side else match.group(1))
        count = int((match.group(4) if new_side else match.group(2)) or 1)
        end = start + max(count, 1) - 1
        if not any(s.path == path and s.start_line <= start and end <= s.end_line for s in slices):
            return False
    return hunks > 0


def _decision_words(last: LastAttempt, visible: bool = True) -> str:
    if last.decision is Decision.KEPT:
        return (
            "kept: it is in the code above; build on it"
            if visible
            else "kept: it is applied; build on it"
        )
    if last.decision is Decision.REVERTED:
        return "reverted"  # tested, then undone: the code above is without it
    if last.decision is Decision.REJECTED:
        return "rejected untested"
    return f"not used: {last.decision.value}"


def _outcome(last: LastAttempt, failure: str) -> str:
    """The verdict's reason, without a failure message the Failure section already shows; for a
    candidate that fixed none of its tests, whether it left their failure as it was or changed it,
    and how."""
    head, _, detail = last.reason.strip().partition(": ")
    if not head:
        return ""
    changed = _changed_failure(last, failure)
    if head.startswith("fixed none of") and changed:
        return f"{head}{': ' if changed == 'the same failure' else ', '}{changed}"
    if head.startswith("fixed none of") and detail:
        first = detail.split("\n")[0].strip()
        first = (
            first[len("AssertionError: ") :]
            if first.startswith("AssertionError: assert ")
            else first
        )
        return "the same failure" if first in failure else first
    if detail and detail.split("\n")[0].strip() in failure:
        return head
    return last.reason.strip()


def _changed_failure(last: LastAttempt, failure: str) -> str:
    """\"the same failure" when the candidate left every one of its tests failing as before;
    else the first failure it changed (type, message, the project frame it now fails in) beside
    what it was, unless the Failure section (``failure``) already shows that; "" when the records
    do not tell (a run without per-test results, an older journal)."""
    before = {b.test_id: b for b in last.before}
    pairs = [(before[a.test_id], a) for a in last.after if a.test_id in before]
    if not pairs:
        return ""
    if all(b.same_as(a) for b, a in pairs):
        return "the same failure"
    was, now = next((b, a) for b, a in pairs if not b.same_as(a))
    new_frames = [f for f in now.frames if f not in was.frames]
    where = f" at {new_frames[-1]}" if new_frames else ""
    earlier = "" if was.message and was.message in failure else f" (before it: {_said(was)})"
    return f"now failing with {_said(now)}{where}{earlier}"


def _said(snapshot: FailureSnapshot) -> str:
    message = snapshot.message
    if snapshot.exc_type and not message.startswith(snapshot.exc_type):
        return f"{snapshot.exc_type}: {message}" if message else snapshot.exc_type
    return message or "a failure"


def _one_line_change(diff: str, shown: str = "", visible: bool = True) -> Optional[str]:
    """```old` → `new``` when ``diff`` replaces one line of one file, else None.

    Prefixed with ``Line N, `` (the line's number in the file; the code above
    shows the range) unless ``old`` occurs exactly once in ``shown``; with
    ``In PATH line N, `` when the change is not in the code shown (``visible`` False).
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
    for line in lines[hunks[0] + 1 :]:
        if line[:1] == "-":
            break
        number += line[:1] == " "
    old, new = _changed_span(removed[0], added[0])
    if "`" in old + new:
        return None  # would break out of the inline code span
    where = "" if shown.count(old) == 1 else f"Line {number}, "
    if not visible:
        path = next(line[4:].strip() for line in lines if line.startswith("+++"))
        where = f"In {path[2:] if path.startswith('b/') else path} line {number}, "
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


def _changed_lines(diff: str, name_files: bool = False) -> str:
    """The '-'/'+' lines of a diff, each file named once when there are several (or
    ``name_files``)."""
    out: List[str] = []
    files = [line[6:] for line in diff.splitlines() if line.startswith("+++ b/")]
    for line in diff.splitlines():
        if line.startswith("+++ b/") and (len(files) > 1 or name_files):
            out.append(f"# {line[6:]}")
        elif line[:1] in ("+", "-") and not line.startswith(("+++", "---")):
            out.append(line)
    return "\n".join(out)
