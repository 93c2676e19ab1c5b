"""The secrets in a project's environment files (``.env``, ``.env.local``, ``.envrc``,
``prod.env``, ``.envs/.production/.django``): ``KEY=VALUE`` lines, as python-dotenv, docker
compose and direnv read them.

A line is ``[export ]KEY=VALUE`` (or ``KEY: VALUE``); blank lines and ``#`` comments are skipped.
A value in single quotes is taken as it is; one in double quotes may span lines and has its
``\\n``, ``\\"`` and ``\\\\`` escapes read; an unquoted one ends at `` #``.
"""

from __future__ import annotations

import re
from typing import List, Tuple

from repairloop.redact.known_formats import url_passwords
from repairloop.redact.names import MIN_SECRET_CHARS, is_secret_name
from repairloop.redact.shapes import is_placeholder, looks_assigned_secret

_LINE = re.compile(r"^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_.\-]*)\s*[=:]\s*(.*)$")
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", '"': '"', "\\": "\\"}
MAX_QUOTED_LINES = 200  # a double-quoted value longer than this is not a value but a broken file


def is_env_file(rel: str) -> bool:
    """True for a project-relative path (``/`` separated) that names an environment file:
    ``.env``, ``.env.<anything>``, ``.envrc``, ``<name>.env``, or any file under a ``.envs``
    directory (cookiecutter-django's layout)."""
    parts = rel.split("/")
    name = parts[-1]
    return (
        name in (".env", ".envrc")
        or name.startswith(".env.")
        or (name.endswith(".env") and len(name) > 4)
        or ".envs" in parts[:-1]
    )


def _double_quoted(first: str, rest: List[str]) -> Tuple[str, int]:
    """The value of a double-quoted string that starts with ``first`` (after the quote) and may
    go on into ``rest``'s lines; and how many of those lines it took."""
    text, used = first, 0
    while True:
        match = re.match(r'((?:[^"\\]|\\.)*)"', text, re.S)
        if match:
            body = match.group(1)
            return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), m.group(0)), body), used
        if used >= min(len(rest), MAX_QUOTED_LINES):
            return text, used
        text += "\n" + rest[used]
        used += 1


def parse_env(text: str) -> List[Tuple[str, str]]:
    """``(key, value)`` pairs of an environment file, in order (the module docstring's rules)."""
    pairs: List[Tuple[str, str]] = []
    lines = text.splitlines()
    at = 0
    while at < len(lines):
        match = _LINE.match(lines[at])
        at += 1
        if not match or lines[at - 1].lstrip().startswith("#"):
            continue
        key, rest = match.group(1), match.group(2).strip()
        if rest.startswith('"'):
            value, used = _double_quoted(rest[1:], lines[at:])
            at += used
        elif rest.startswith("'"):
            value = rest[1:].split("'", 1)[0]
        else:
            value = re.split(r"\s+#", rest, maxsplit=1)[0].strip()
        pairs.append((key, value))
    return pairs


def env_file_secrets(text: str) -> List[str]:
    """The secrets of an environment file: every value under a secret-looking key
    (``names.is_secret_name``, as for the environment) that is not a placeholder; under any other
    key, a value that looks like one (``shapes.looks_assigned_secret``: not a word, name, number,
    host, path or placeholder, 3 bits a character or more; a URL only for its password). Values
    shorter than MIN_SECRET_CHARS are left out."""
    found: List[str] = []
    for key, value in parse_env(text):
        if "://" in value:
            found += url_passwords(value)
        if is_secret_name(key):
            taken = not is_placeholder(value)
        else:
            taken = "://" not in value and not re.search(r"\s", value)
            taken = taken and looks_assigned_secret(value)
        if taken and len(value) >= MIN_SECRET_CHARS:
            found.append(value)
    return list(dict.fromkeys(found))
