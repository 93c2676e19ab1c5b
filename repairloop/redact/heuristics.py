"""Secrets no rule names exactly, found by shape: a random-looking value assigned to a
secret-looking key, and a long random run of base64 characters. Heuristics (``shapes``), applied
after the well-known formats.

- ``assigned-secret``: the value after a key that names a secret (``names.is_secret_key``) and an
  assignment (``=``, ``:``, ``:=``, ``=>``), quoted or not: ``password = "..."``,
  ``"api_key": "..."``, ``X-Auth-Token: ...``, ``--client-secret=...``, ``token=...`` in a query
  string. Taken when ``shapes.looks_assigned_secret`` says so (not a word, name, number, path or
  placeholder; at least 3 bits per character). A call (``token = get_token(user)``) or an
  attribute (``password = self.password_field``) is code, not a value.
- ``high-entropy``: a run of 32 or more base64 characters anywhere, taken when
  ``shapes.looks_random`` says so (both cases and digits, more than detect-secrets' 4.5 bits per
  character, not hex, a UUID, a word-built identifier, a path or an integrity hash). A random
  token of 40 characters or more nearly always scores over 4.5; of 32 characters about two in three
  do, and shorter ones hardly ever: those are left alone unless a key names them.

Hex strings are never taken bare (git hashes, digests in lock files and expected test values are
hex); under a secret-looking key they are, as hex API keys are common.
"""

from __future__ import annotations

import re

from repairloop.redact.names import SECRET_WORDS, is_secret_key
from repairloop.redact.shapes import looks_assigned_secret, looks_random

# The key starts where a word starts and is at most 40 characters either side of its secret word:
# an unbounded key would make a long run of name characters cost quadratic time.
_ASSIGNED = re.compile(
    rf"(?i)(?<![A-Za-z0-9_.\-])(?P<key>[A-Za-z0-9_.\-]{{0,40}}?(?:{SECRET_WORDS})"
    r"[A-Za-z0-9_.\-]{0,40})"
    r"[\"']?[ \t]*(?:=>|:=|=|:)[ \t]*"
    # quoted: to the closing quote, without white space (``"x=" + y[...]`` is code, not a value);
    # bare: to a space, quote, bracket, "&"...
    r"(?:[bru]{0,2}(?P<q>[\"'])(?P<quoted>[^\"'\s]{8,512})(?P=q)"
    r"|(?P<bare>[^\s\"'`,;(){}\[\]<>|&]{8,512}))"
)
_RUN = re.compile(r"(?<![A-Za-z0-9+/=_\-])[A-Za-z0-9+/_\-]{32,}={0,2}(?![A-Za-z0-9+/=_\-])")


def _assigned(match: "re.Match[str]") -> str:
    whole = match.group(0)
    group = "quoted" if match.group("quoted") is not None else "bare"
    value = match.group(group) if group == "quoted" else match.group(group).rstrip(".:")
    after = match.string[match.end(group) : match.end(group) + 1]
    if group == "bare" and after in ("(", "["):  # a call or an item: code, not a value
        return whole
    if "[REDACTED" in value:  # a format masked it already, and says which
        return whole
    if not is_secret_key(match.group("key")) or not looks_assigned_secret(value):
        return whole
    start = match.start(group) - match.start(0)
    return whole[:start] + "[REDACTED:assigned-secret]" + whole[start + len(value) :]


def _bare(match: "re.Match[str]") -> str:
    return "[REDACTED:high-entropy]" if looks_random(match.group(0).rstrip("=")) else match.group(0)


def mask_heuristics(text: str) -> str:
    """``text`` with values assigned to secret-looking keys and bare random runs masked
    (``[REDACTED:assigned-secret]``, ``[REDACTED:high-entropy]``); see the module docstring."""
    return _RUN.sub(_bare, _ASSIGNED.sub(_assigned, text))
