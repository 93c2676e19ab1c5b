"""The forms a known secret value takes in text (``encodings``), and where its characters stand
apart in text (``Squeezed``: split across lines, joined by spaces, commas, colons or dashes).

A value printed as it is, escaped, percent-encoded, as hex or base64 is one string to look for.
Printed across lines (``print(s[:9]); print(s[9:])``, a message pytest shows as ``E`` lines), as
spaced or colon-separated hex (``de ad be ef``, ``de:ad:be:ef``) or one character at a time
(``list(s)``, ``" ".join(s)``, ``"-".join(s)``), its letters and digits are still in order with
only other characters between them: ``Squeezed`` looks for them there.
"""

from __future__ import annotations

import base64
import bisect
import codecs
import html
import json
import re
import urllib.parse
from typing import Callable, List, Optional, Set, Tuple

from repairloop.redact.names import MIN_SECRET_CHARS

# What separates a secret's letters and digits when it is split or spaced: any other character,
# and besides these, the two-character escapes of a line break in a repr (``\n``) and pytest's
# ``E`` at the start of each line of an error message (``E       rest of the value``).
_RUNS = re.compile(r"\\[nrt]|^[ \t]*E(?=[ \t])|([A-Za-z0-9]+)", re.M)
_ALNUM = re.compile(r"[^A-Za-z0-9]+")
MAX_GRAM_TEXT = (
    20_000  # characters: above, a set of every 8-character piece costs more than it saves
)


def _cores(raw: bytes, encode: Callable[[bytes], bytes], bits: int, block: int) -> Set[str]:
    """The characters of ``encode(prefix + raw + suffix)`` that depend on ``raw`` alone, for each of
    the ``block`` byte offsets ``raw`` can have inside a longer encoded text (base64: 6 bits a
    character, 3-byte blocks; base32: 5 bits, 5-byte blocks): a character spanning a byte of the
    text around the value differs with that byte, so it is left out."""
    cores = set()
    for offset in range(block):
        text = encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
        first = -(-offset * 8 // bits)  # the first character whose bits all lie in raw
        end = (offset + len(raw)) * 8 // bits  # after the last one
        cores.add(text[first:end])
    return cores


def _escaped(value: str) -> Set[str]:
    """``value`` as it is and escaped: a ``repr``, JSON, ``unicode_escape``, HTML, percent-encoding
    (``quote``, ``quote_plus``, and with lower-case hex digits as some encoders write them)."""
    percent = urllib.parse.quote(value, safe="")
    return {
        value,
        repr(value)[1:-1],
        json.dumps(value)[1:-1],
        value.encode("unicode_escape").decode("ascii"),
        html.escape(value),
        percent,
        urllib.parse.quote_plus(value),
        re.sub(r"%[0-9A-F]{2}", lambda m: m.group(0).lower(), percent),
    }


def encodings(value: str) -> List[str]:
    """The forms of a secret value that text may carry, longest first: itself and escaped
    (``_escaped``), hex (both cases), base64 (standard and URL-safe) and base32 (both cases) at each
    byte offset it can have inside a longer encoded text and encoded alone (padding and all),
    reversed, rot13, and in upper and lower case (``.upper()`` of a value in a message). Forms
    shorter than
    MIN_SECRET_CHARS are left out."""
    raw = value.encode("utf-8")
    forms = _escaped(value) | {raw.hex(), raw.hex().upper(), value[::-1]}
    forms |= {value.upper(), value.lower()}
    forms.add(codecs.encode(value, "rot13"))
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms |= _cores(raw, encode, 6, 3) | {encode(raw).decode("ascii")}
    whole32 = base64.b32encode(raw).decode("ascii")  # encoded alone, its last character goes too
    for core in _cores(raw, base64.b32encode, 5, 5) | {whole32}:
        forms |= {core, core.lower()}
    return sorted((f for f in forms if len(f) >= MIN_SECRET_CHARS), key=lambda f: (-len(f), f))


def squeezed_forms(value: str) -> List[str]:
    """The letters and digits of each of ``value``'s ``encodings``, where enough of them remain to
    be told from ordinary text: at least MIN_SECRET_CHARS characters, of two kinds or more (lower
    case, upper case, digits) and five different ones (``12345678`` or ``aaaabbbb`` spaced out
    would match page numbers and underlines)."""
    found = set()
    for form in encodings(value):
        text = _ALNUM.sub("", form)
        kinds = sum(bool(re.search(p, text)) for p in ("[a-z]", "[A-Z]", "[0-9]"))
        if len(text) >= MIN_SECRET_CHARS and kinds >= 2 and len(set(text)) >= 5:
            found.add(text)
    return sorted(found, key=lambda f: (-len(f), f))


class Squeezed:
    """The letters and digits of ``text`` run together, and where each came from: a secret whose
    characters stand apart in ``text`` (split across lines, spaced, joined by separators) is one
    string here. ``spans(form)`` gives the slices of ``text`` that hold it, from its first character
    to its last (what lies between goes too)."""

    def __init__(self, text: str) -> None:
        runs = [(m.start(1), m.group(1)) for m in _RUNS.finditer(text) if m.group(1)]
        self.text = "".join(run for _, run in runs)
        self._starts: List[int] = []  # where each run starts in ``self.text``
        self._origins: List[int] = []  # and in the original text
        self._grams: Optional[Set[str]] = None
        at = 0
        for origin, run in runs:
            self._starts.append(at)
            self._origins.append(origin)
            at += len(run)

    def _origin(self, index: int) -> int:
        run = bisect.bisect_right(self._starts, index) - 1
        return self._origins[run] + index - self._starts[run]

    def spans(self, form: str) -> List[Tuple[int, int]]:
        """``(start, end)`` slices of the original text where ``form``'s characters stand, in
        order."""
        size = MIN_SECRET_CHARS
        if self._grams is None and len(self.text) <= MAX_GRAM_TEXT:
            # every 8 characters in a row of a short text (a journal's fields, a message): most
            # forms are out at one look; a long text is searched as it is
            self._grams = {self.text[i : i + size] for i in range(len(self.text) - size + 1)}
        found: List[Tuple[int, int]] = []
        if self._grams is not None and form[:size] not in self._grams:
            return found
        at = self.text.find(form)
        while at >= 0:
            found.append((self._origin(at), self._origin(at + len(form) - 1) + 1))
            at = self.text.find(form, at + len(form))
        return found
