"""Elided code: placeholders such as ``...`` or ``# rest unchanged`` that stand for code an answer
left out.

Applied as written, such an answer deletes the code the placeholder stands
for: aider's whole-file format (Aider-AI/aider#1915, #1832), Cline
(cline/cline#456), OpenHands (OpenHands/OpenHands#6907) and Void
(voideditor/void#9) all met it. A candidate whose new text holds more of
such a placeholder line than the old text did is refused, whatever the
answer's format (diff, SEARCH/REPLACE, whole function, whole file): the
message names the placeholder and where it is.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import List, Optional, Tuple

from repairloop.errors import PatchError
from repairloop.patch.changes import AppliedPatch, FileChange

_COMMENT = re.compile(r"^(?:#+|//+|/\*+|<!--)\s*(.*?)\s*(?:\*/|-->)?$")
_BRACKETED = re.compile(r"^[\[(<{]\s*(.*?)\s*[\])>}]$")
_ELLIPSIS = re.compile(r"^(?:\.\.\.|…)+$")
# Wording of placeholders seen in the threads above and in aider's and Continue's prompts
# ("... existing code ...", "rest of the file remains the same", "keep existing code").
_PHRASE = re.compile(
    r"""^(?:\.\.\.|…)                                   # '# ...', '// ... existing code ...'
    | \b(?:rest|remainder)\s+of\s+(?:the\s+|this\s+|your\s+)?
        (?:code|file|function|method|class|module|implementation|body|lines?|content|logic)\b
    | \bexisting\s+(?:code|methods?|functions?|implementation|logic|lines?|content)\b
    | \b(?:code|lines?|methods?|functions?|implementation|body|everything\s+else|(?:the\s+)?rest)
        \s+(?:\w+\s+){0,2}(?:unchanged|omitted|elided|as\s+before)\b
    | \b(?:remains?|stays?|left|kept)\s+(?:the\s+same|unchanged|as\s+(?:is|before))\b
    | ^\W*(?:unchanged|no\s+changes?)\W*$
    | \bsame\s+as\s+(?:before|above|the\s+original|original)\b
    | \bkeep\s+(?:the\s+)?(?:existing|original|rest)\b
    | \b(?:previous|original)\s+(?:code|implementation)\s+(?:here|goes\s+here)\b
    | \b(?:other|remaining)\s+(?:methods|functions)\s+(?:unchanged|omitted|here|as\s+before)\b
    | \bfor\s+brevity\b | ^\W*snip(?:ped)?\W*$
    """,
    re.I | re.X,
)
_HINT = (
    "write every line of each function, class or file you give, in full (no '...', no "
    "'# rest unchanged' comments), or answer with a diff of the changed lines only"
)


def elision_marker(line: str) -> Optional[str]:
    """The placeholder ``line`` is (stripped), or None when it is ordinary text or code.

    A placeholder is a line that is only ``...`` (Python's Ellipsis statement
    included), or a comment or bracketed note whose words say code was left
    out (``# ... rest of the code ...``, ``// existing code here``, ``[the rest
    of the file...]``), or ``pass``/``...`` followed by such a comment.
    """
    text = line.strip()
    if not text:
        return None
    if _ELLIPSIS.match(text):
        return text
    body = re.sub(r"^(?:pass|\.\.\.)\s*(?=#)", "", text)
    note = _COMMENT.match(body) or _BRACKETED.match(body)
    if note is None:
        return None
    return text if _PHRASE.search(note.group(1)) else None


def _markers(text: Optional[str]) -> List[Tuple[int, str]]:
    found = []
    for number, line in enumerate((text or "").splitlines(), 1):
        marker = elision_marker(line)
        if marker is not None:
            found.append((number, marker))
    return found


def find_elision(change: FileChange) -> Optional[Tuple[int, str]]:
    """(line in the new text, placeholder) of the first placeholder the change adds, else None."""
    if change.new_text is None:
        return None
    before = Counter(marker for _, marker in _markers(change.old_text))
    seen: Counter[str] = Counter()
    for number, marker in _markers(change.new_text):
        seen[marker] += 1
        if seen[marker] > before[marker]:
            return number, marker
    return None


def check_elisions(applied: AppliedPatch) -> None:
    """Raise PatchError naming the first placeholder a candidate adds; None when there is none."""
    for change in applied.changes:
        found = find_elision(change)
        if found is not None:
            number, marker = found
            raise PatchError(
                f"the answer elides code in {change.path}: line {number} of the new text is "
                f"`{marker}`, "
                "a placeholder for code the answer leaves out (applied, it would delete that code)",
                hint=_HINT,
            )
