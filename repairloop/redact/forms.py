"""The forms a secret value takes in text: ``encodings``."""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import List

from repairloop.redact.names import MIN_SECRET_CHARS


def encodings(value: str) -> List[str]:
    """The forms of a secret value that text may carry: itself, escaped (``repr``, JSON,
    ``unicode_escape``), percent-encoded, hex (both cases), and base64 (standard and URL-safe, at
    each of the three byte offsets it can have inside a longer encoded text). Forms shorter than
    MIN_SECRET_CHARS are left out."""
    raw = value.encode("utf-8")
    forms = {
        value,
        repr(value)[1:-1],
        json.dumps(value)[1:-1],
        value.encode("unicode_escape").decode("ascii"),
        urllib.parse.quote(value, safe=""),
        raw.hex(),
        raw.hex().upper(),
    }
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            text = encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
            core = text[4 if offset else 0 :]  # the first group mixes in the bytes before the value
            if len(raw) + offset > 3:
                core = core[: len(core) - (len(core) % 4 or 4)] if (len(raw) + offset) % 3 else core
            forms.add(core)
    return sorted((f for f in forms if len(f) >= MIN_SECRET_CHARS), key=lambda f: (-len(f), f))
