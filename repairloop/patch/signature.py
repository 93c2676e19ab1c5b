"""What a candidate changes, reduced for similarity (TECH-NOTES 4).

Full-diff similarity moves with context size and hunk headers (88.8 for the
same fix with 1 instead of 3 context lines), so stagnation compares only the
changed lines, tagged with their file and whitespace-collapsed.
"""

from __future__ import annotations

import re
from typing import List

_WS = re.compile(r"\s+")


def _header_path(line: str) -> str:
    path = line[4:].split("\t")[0].strip()
    return path[2:] if path.startswith(("a/", "b/")) else path


def change_signature(diff_text: str) -> str:
    """``path:+text`` / ``path:-text`` lines of ``diff_text``, whitespace collapsed.

    Headers, hunk headers, context and ``\\ No newline`` markers are left out;
    a deleted file is tagged with its old path. ``""`` for a diff that changes nothing.
    For ``rapidfuzz.fuzz.ratio`` in stop.py (threshold 0.90, DESIGN.md).
    """
    out: List[str] = []
    lines = diff_text.replace("\r\n", "\n").split("\n")
    path, old_path = "", ""
    for i, line in enumerate(lines):
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            old_path = _header_path(line)
        elif line.startswith("+++ ") and i > 0 and lines[i - 1].startswith("--- "):
            new_path = _header_path(line)
            path = old_path if new_path == "/dev/null" else new_path
        elif line[:1] in ("+", "-"):
            out.append(f"{path}:{line[0]}{_WS.sub(' ', line[1:].strip())}")
    return "\n".join(out)
