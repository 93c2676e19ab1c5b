"""What a value's shape says: random like a key or a token, or plainly not a secret (a word, a name,
a number, a path, a placeholder). Heuristics, each rule with its source.

Shannon entropy is measured in bits per character over the value's own characters, as
detect-secrets does (``detect_secrets/plugins/high_entropy_strings.py``): a random base64 string
of 40 characters scores about 4.8, a hex digest about 3.8, an English word or an identifier
about 2.5 to 3.5.
"""

from __future__ import annotations

import math
import re
from collections import Counter

# detect-secrets' defaults for its high-entropy detectors (``--base64-limit`` defaults to 4.5,
# ``--hex-limit`` to 3.0): a bare string must score more than these to count as random.
BASE64_LIMIT = 4.5
HEX_LIMIT = 3.0
# A value assigned to a secret-looking name is suspect already: GitGuardian's generic high-entropy
# detector asks a Shannon entropy of at least 3 of such a value (its "Generic high entropy secret"
# documentation), which keeps out repeated characters and short words.
ASSIGNED_LIMIT = 3.0

_WORD = r"(?:[a-z]+|[A-Z]+|[A-Z][a-z]+)"
# Words in one case or capitalised, joined by spaces or separators: localhost, Europe/Berlin, INFO,
# config.settings.local, sk-no-key. No digit: a digit is what most passwords add to a word.
_WORDS = re.compile(rf"{_WORD}(?:[ ._\-/:]+{_WORD})*")
# Names in code: snake_case with an underscore, UPPER_CASE, CamelCase of words of three letters or
# more (FileNotFoundError; random text like Zq8pL2mVx7 is not), an attribute chain
# (settings.API_KEY, os.environ, self.password_field).
_IDENT = r"(?:[a-z_][a-z0-9_]*|[A-Z_][A-Z0-9_]*|(?:[A-Z][a-z0-9]+)+)"
_NAMES = re.compile(
    rf"_*[a-z][a-z0-9]*(?:_[a-z0-9]+)+|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)*|(?:[A-Z][a-z]{{2,}}[0-9]*)+"
    rf"|{_IDENT}(?:\.{_IDENT})+"
)
# Hosts with a port, addresses and versions: db:5432, 127.0.0.1, 1.2.3.
_HOST = re.compile(r"[A-Za-z0-9.\-]+:[0-9]{1,5}|v?[0-9]+(?:\.[0-9]+){1,3}")
# A word-built identifier (CamelCase, camelCase, kebab or snake with digits): every letter run
# of two or more, so no lone lower-case letter between others as random text has.
_IDENTIFIER_WORDS = re.compile(r"(?:[A-Z]?[a-z]{2,}|[A-Z]{2,}(?![a-z])|[0-9]+|[_\-./])+")
_NUMBER = re.compile(r"[-+]?(?:0[xX][0-9a-fA-F]+|[0-9][0-9_,]*(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)")
_PATH = re.compile(r"(?:~|\.{1,2})?/[\w.\-/]*")
UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
# Templates and stand-ins: <your key>, ${VAR}, {{ var }}, %(name)s, ****, xxxx.
_TEMPLATE = re.compile(r"<[^>]*>|\$\{[^}]*\}|\{\{?[^}]*\}\}?|%\([^)]*\)[sdr]|(.)\1*")
PLACEHOLDER_WORDS = frozenset(
    {"changeit", "redacted", "notasecret", "none", "null", "todo", "secret", "password", "token"}
    | {"apikey", "secretkey", "passw0rd"}
)


def entropy(text: str) -> float:
    """Shannon entropy of ``text`` in bits per character (0.0 for empty text)."""
    if not text:
        return 0.0
    size = len(text)
    return -sum(n / size * math.log2(n / size) for n in Counter(text).values())


def is_plain(value: str) -> bool:
    """True when ``value``'s shape says it is not a secret: a number, words (``_WORDS``), a name or
    attribute chain in code (``_NAMES``), a host with a port, an address or a version, a path, a
    UUID; or a comma-separated list of those."""
    value = value.strip()
    if "," in value:  # a list of plain items: hosts, names, numbers
        return all(is_plain(item) for item in value.split(",") if item.strip())
    return bool(
        _NUMBER.fullmatch(value)
        or _HOST.fullmatch(value)
        or _WORDS.fullmatch(value)
        or _NAMES.fullmatch(value)
        or _PATH.fullmatch(value)
        or UUID.fullmatch(value)
    )


def is_placeholder(value: str) -> bool:
    """True for a stand-in where a secret goes: a template (``<your key>``, ``${VAR}``, ``{{ x }}``,
    ``%(x)s``), one repeated character (``****``, ``xxxxxxxx``), a word such as ``changeme``
    (``PLACEHOLDER_WORDS``, compared without case and separators), or text that starts with "your"
    or holds "changeme", "example", "placeholder" or "dummy"."""
    squeezed = re.sub(r"[^a-z0-9]", "", value.lower())
    return (
        bool(_TEMPLATE.fullmatch(value.strip()))
        or squeezed in PLACEHOLDER_WORDS
        or squeezed.startswith("your")  # your-api-key-here
        or any(word in squeezed for word in ("changeme", "example", "placeholder", "dummy"))
    )


def is_code_name(value: str) -> bool:
    """True for a name as code writes one (``snake_case`` with an underscore, ``UPPER_CASE``, an
    attribute chain): a field, a variable or a setting named, not a secret."""
    return bool(_NAMES.fullmatch(value))


def is_identifier_words(value: str) -> bool:
    """True for an identifier built of words (``TestQuickBrownFox1234``, ``get-user-by-id``)."""
    return bool(_IDENTIFIER_WORDS.fullmatch(value))


def looks_assigned_secret(value: str) -> bool:
    """True for a value that, assigned to a secret-looking name, is taken for a secret: at least 8
    characters, not plain (``is_plain``) nor a placeholder, and of at least ASSIGNED_LIMIT bits of
    entropy per character (HEX_LIMIT for a hex string: a hex key under a key name is common)."""
    limit = HEX_LIMIT if re.fullmatch(r"[0-9a-fA-F]+", value) else ASSIGNED_LIMIT
    return (
        len(value) >= 8
        and not is_plain(value)
        and not is_placeholder(value)
        and entropy(value) >= limit
    )


def looks_random(run: str) -> bool:
    """True for a bare run of base64 characters (no name before it) taken for a key: letters of
    both cases and digits, more than BASE64_LIMIT bits per character, and neither a hex string
    (digests, git hashes: no upper and lower case at once), a UUID, an identifier built of words,
    a path, nor a subresource-integrity hash (``sha512-...``, lock files)."""
    kinds = all(re.search(p, run) for p in ("[a-z]", "[A-Z]", "[0-9]"))
    if not kinds or entropy(run) <= BASE64_LIMIT or re.match(r"sha(?:1|256|384|512)-", run):
        return False
    return not (UUID.search(run) or is_identifier_words(run) or _is_path_like(run))


def _is_path_like(run: str) -> bool:
    """True when ``run`` is a path: at least two ``/`` and half its parts or more words or names."""
    parts = [p for p in run.split("/") if p]
    if run.count("/") < 2 or not parts:
        return False
    wordy = sum(bool(_WORDS.fullmatch(p) or _NAMES.fullmatch(p) or p.isdigit()) for p in parts)
    return wordy * 2 >= len(parts)
