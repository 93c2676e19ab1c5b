"""``Redactor``: text in, text out with every known secret masked; and the walkers that apply it to
records (``redact_record``, ``redact_context``, ``redact_feedback``)."""

from __future__ import annotations

import dataclasses
import enum
import re
from typing import Any, Callable, Iterable, List, Sequence, Tuple

from repairloop.redact.forms import Squeezed, encodings, squeezed_forms
from repairloop.redact.heuristics import mask_heuristics
from repairloop.redact.known_formats import mask_formats
from repairloop.redact.names import MIN_SECRET_CHARS
from repairloop.types import Feedback, RepairContext

MARKER = "[REDACTED]"
# Text that marks where an output, message or capture was cut: a secret split there leaves a
# fragment.
CUT_MARKS = re.compile(r"\n?\[\.\.\. repairloop: \d+ bytes of output dropped \.\.\.\]\n?|\.\.\.|…")
MIN_FRAGMENT_CHARS = 6


class Redactor:
    """``text -> text`` with every known secret value and well-known format replaced.

    ``Redactor(secret_values(os.environ))`` is the run's redactor; calling it
    on text without secrets returns the text unchanged. Each value is masked in
    all its ``encodings`` (escaped, percent, hex, base64, base32, reversed, rot13),
    then wherever its letters and digits stand in order with only other characters
    between them (``forms.Squeezed``: split across lines, spaced or colon-separated
    hex, joined by commas or dashes), and a fragment of it (at least MIN_FRAGMENT_CHARS
    and half of it) is masked where text starts or ends or was cut
    (``CUT_MARKS``): output caps keep a head and a tail, and a value split there
    would leave a piece of itself on each side.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=_longest_first
        )
        self._forms = sorted({f for s in self._secrets for f in encodings(s)}, key=_longest_first)
        self._squeezed = sorted(
            {f for s in self._secrets for f in squeezed_forms(s)}, key=_longest_first
        )

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self._secrets:
            for form in self._forms:  # longest first: a form inside a longer one goes with it
                if form in text:
                    text = text.replace(form, MARKER)
            text = self._spread(text)
            text = self._fragments(text)
        return mask_heuristics(mask_formats(text))

    def _spread(self, text: str) -> str:
        """Mask a secret whose characters stand apart in ``text`` (``forms.Squeezed``)."""
        if not self._squeezed:
            return text
        view = Squeezed(text)
        spans = [span for form in self._squeezed for span in view.spans(form)]
        for begin, end in sorted(_merged(spans), reverse=True):
            text = text[:begin] + MARKER + text[end:]
        return text

    def _fragments(self, text: str) -> str:
        """Mask a secret's tail at the start of ``text`` or after a cut, and its head at the end or
        before one."""
        cuts = [(m.start(), m.end()) for m in CUT_MARKS.finditer(text)]
        ends = [0] + [end for _, end in cuts]  # where a secret's tail could begin
        starts = [len(text)] + [start for start, _ in cuts]  # where a secret's head could end
        spans: List[Tuple[int, int]] = []
        for secret in self._secrets:
            shortest = max(MIN_FRAGMENT_CHARS, len(secret) // 2)
            # a fragment holds the few characters next to its boundary: most secrets are out at once
            tails = [at for at in ends if text[at : at + MIN_FRAGMENT_CHARS] in secret]
            heads = [at for at in starts if text[max(at - MIN_FRAGMENT_CHARS, 0) : at] in secret]
            for size in range(len(secret) - 1, shortest - 1, -1) if tails or heads else ():
                tail, head = secret[-size:], secret[:size]
                spans += [(at, at + size) for at in tails if text.startswith(tail, at)]
                spans += [
                    (at - size, at) for at in heads if at >= size and text.endswith(head, 0, at)
                ]
        for begin, end in sorted(set(spans), reverse=True):
            if MARKER not in text[max(begin - len(MARKER), 0) : end + len(MARKER)]:
                text = text[:begin] + MARKER + text[end:]
        return text


def _longest_first(value: str) -> Tuple[int, str]:
    return (-len(value), value)


def _merged(spans: List[Tuple[int, int]]) -> List[Tuple[int, int]]:
    """``spans`` with overlapping ones joined, in order."""
    merged: List[Tuple[int, int]] = []
    for begin, end in sorted(spans):
        if merged and begin < merged[-1][1]:
            merged[-1] = (merged[-1][0], max(end, merged[-1][1]))
        else:
            merged.append((begin, end))
    return merged


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with the given secret values and every well-known credential format masked."""
    return Redactor(secrets)(text)


def redact_context(context: RepairContext, redactor: Callable[[str], str]) -> RepairContext:
    """The context with every text a proposer could send redacted: every string field of it, however
    deep (``redact_record``), so a field added later is never sent unredacted."""
    redacted: RepairContext = redact_record(context, redactor)
    return redacted


def redact_feedback(feedback: Feedback, redactor: Callable[[str], str]) -> Feedback:
    """A structural-retry message with its answer and error redacted (errors quote file text)."""
    redacted: Feedback = redact_record(feedback, redactor)
    return redacted


def redact_record(value: Any, redactor: Callable[[str], str]) -> Any:
    """``value`` with every string inside it redacted, the same shape back.

    Walks dataclasses (frozen ones are rebuilt with ``dataclasses.replace``),
    tuples, lists and dict values; enums, numbers and None are returned as
    they are. Used on what leaves a run for the user's screen, ``--json`` and
    CI summaries (a RunResult, classified failures), as the journal already is.
    """
    if isinstance(value, enum.Enum) or value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, str):
        return redactor(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: redact_record(getattr(value, f.name), redactor)
            for f in dataclasses.fields(value)
            if f.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(redact_record(item, redactor) for item in value)
    if isinstance(value, list):
        return [redact_record(item, redactor) for item in value]
    if isinstance(value, dict):
        return {key: redact_record(item, redactor) for key, item in value.items()}
    return value
