"""GitHub Actions workflow commands and files: outputs, the step summary, annotations.

Everything here is the standard library and takes the target file path or
stream as a parameter, so it runs (and is tested) anywhere with the variables
pointed at temporary files. Facts from TECH-NOTES 8.2 and GitHub's "Workflow
commands" page: outputs go to ``$GITHUB_OUTPUT`` (``name=value`` or a heredoc
with a random delimiter for multi-line values; ``::set-output`` is deprecated),
the step summary is Markdown appended to ``$GITHUB_STEP_SUMMARY`` and GitHub
refuses more than 1 MiB per step, annotations are ``::error file=…,line=…::msg``
lines on stdout with ``%``, CR, LF (and ``:`` ``,`` in properties) escaped, and
only 10 errors and 10 warnings per step are shown.
"""

from __future__ import annotations

import os
import secrets
import uuid
from pathlib import Path
from typing import IO, Mapping, Optional

SUMMARY_LIMIT = 1024 * 1024  # bytes per step (GitHub: "supports content up to a size of 1024k")
ANNOTATIONS_PER_LEVEL = 10  # per step; extra ones are dropped silently by GitHub


def escape_data(text: str) -> str:
    """Escape a workflow command's message (``%``, CR, LF)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """Escape a workflow command's property value (the data escapes plus ``:`` and ``,``)."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(
    level: str,
    message: str,
    *,
    file: Optional[str] = None,
    line: Optional[int] = None,
    title: Optional[str] = None,
) -> str:
    """One annotation command line, e.g. ``::error file=a.py,line=3,title=t::msg``.

    ``level`` is ``error``, ``warning`` or ``notice``; ``file`` is relative to
    the repository root (GitHub resolves it there).
    """
    props = {"file": file, "line": line, "title": title}
    text = ",".join(f"{k}={escape_property(str(v))}" for k, v in props.items() if v is not None)
    return f"::{level}{' ' + text if text else ''}::{escape_data(message)}"


def stop_commands(stream: IO[str]) -> str:
    """Make the runner ignore workflow commands (``::error::``, ``::set-output::``...) in what
    follows on ``stream`` until ``resume_commands`` with the returned token: the project's test
    output, test ids and settings keys pass through the console, and a line of theirs must never
    become a command (GitHub's ``stop-commands``, with an unguessable token)."""
    token = secrets.token_hex(16)
    stream.write(f"::stop-commands::{token}\n")
    stream.flush()
    return token


def resume_commands(stream: IO[str], token: str) -> None:
    """Let the runner take workflow commands again (repairloop's own annotations follow)."""
    if token:
        stream.write(f"::{token}::\n")
        stream.flush()


def write_annotation(stream: IO[str], level: str, message: str, **where: object) -> None:
    """Print an annotation on ``stream`` (the runner reads workflow commands from stdout)."""
    stream.write(annotation(level, message, **where) + "\n")  # type: ignore[arg-type]
    stream.flush()


def set_output(path: Optional[str], name: str, value: str) -> None:
    """Append an output to the ``$GITHUB_OUTPUT`` file; nothing when ``path`` is empty.

    Multi-line values use a heredoc whose delimiter is random, so a value can
    never end the block early (GitHub's documented multi-line syntax).
    """
    if not path:
        return
    with open(path, "a", encoding="utf-8") as fh:
        if "\n" in value or "\r" in value:
            delimiter = f"ghadelimiter_{uuid.uuid4().hex}"
            fh.write(f"{name}<<{delimiter}\n{value}\n{delimiter}\n")
        else:
            fh.write(f"{name}={value}\n")


def add_summary(path: Optional[str], markdown: str, limit: int = SUMMARY_LIMIT) -> None:
    """Append Markdown to the ``$GITHUB_STEP_SUMMARY`` file, cut to fit ``limit`` bytes.

    GitHub drops a step summary over 1 MiB entirely, so a long one is truncated
    with a note instead (a margin of 1 KiB is kept for the note).
    """
    if not path:
        return
    used = os.path.getsize(path) if os.path.exists(path) else 0
    data = markdown.encode("utf-8")
    room = limit - 1024 - used
    if len(data) > room:
        data = data[: max(room, 0)].decode("utf-8", "ignore").encode("utf-8")
        data += b"\n\n_(summary truncated: GitHub keeps at most 1 MiB per step)_\n"
    with open(path, "ab") as fh:
        fh.write(data)


def read_outputs(path: Path) -> Mapping[str, str]:
    """Parse a ``$GITHUB_OUTPUT`` file back into a dict (both syntaxes); for tests and tools."""
    values = {}
    lines = Path(path).read_text(encoding="utf-8").split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, i)
            values[name] = "\n".join(lines[i:end])
            i = end + 1
        elif "=" in line:
            name, value = line.split("=", 1)
            values[name] = value
    return values
