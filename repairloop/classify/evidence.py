"""What the rules look at: one failing result, normalised (project-relative frames, type, message).

Structured fields (exception type, frames) come from the runner; pytest's
failure text (``longrepr``) is read only for what pytest gives nowhere else.
Captured test output is never read: verdicts do not depend on what tests print.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, FrozenSet, Optional, Tuple

from repairloop.types import (
    NOT_PROJECT_DIRS,
    Failure,
    FailureKind,
    Frame,
    InterpreterQuery,
    TestReport,
    TestResult,
    is_project_path,
    relative_to,
    root_forms,
)

# An exception line of pytest (``E   ValueError: x``) or of Python (``ValueError: x``).
_EXC_LINE = re.compile(
    r"^(?:E\s+)?((?:[A-Za-z_]\w*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Warning|Failed|Timeout))"
    r"(?::\s?(.*))?$"
)
# "tests/t.py:9: AssertionError"
_TRAILER = re.compile(r"^\S.*?:\d+: ((?:[A-Za-z_]\w*\.)*[A-Z]\w*)$")
_PYTEST_FRAME = re.compile(r"^(\S.*?\.py):(\d+): in (\S+)$")
PYTHON_FRAME = re.compile(r'File "(.+?)", line (\d+)(?:, in (\S+))?')
_SKIP_DIRS = frozenset({"node_modules", "__pycache__", "build", "dist"}) | NOT_PROJECT_DIRS
# Messages that already say what they are: no "Type: " prefix.
_BARE_MESSAGE_TYPES = frozenset({"AssertionError", "FixtureLookupError", "Failed"})
# pytest's --tb=short frame line: path:line: in name
_FRAME_HEADER = re.compile(r"^\S+:\d+: in \S+$")


def project_modules(project: Path) -> FrozenSet[str]:
    """Dotted names of every module and package under ``project`` (venvs, hidden dirs skipped).

    A file's import root is its nearest ancestor without ``__init__.py``: the
    project root, ``src/``, or a test directory that pytest puts on sys.path.
    """
    names = set()
    for dirpath, dirnames, filenames in os.walk(project):
        dirnames[:] = [
            d
            for d in dirnames
            if d not in _SKIP_DIRS
            and not d.startswith(".")
            and not os.path.exists(os.path.join(dirpath, d, "pyvenv.cfg"))
        ]
        for name in filenames:
            if not name.endswith(".py"):
                continue
            parts = [name[:-3]] if name != "__init__.py" else []
            here = Path(dirpath)
            while here != project and (here / "__init__.py").exists():
                parts.insert(0, here.name)
                here = here.parent
            if parts:
                names.add(".".join(parts))
    return frozenset(names)


def parse_frames(text: str) -> Tuple[Frame, ...]:
    """Frames, outermost first, from pytest's (``path:line: in f``) or Python's traceback text."""
    frames = []
    for line in text.splitlines():
        match = _PYTEST_FRAME.match(line) or PYTHON_FRAME.match(line.strip())
        if match:
            frames.append(Frame(match.group(1), int(match.group(2)), match.group(3) or ""))
    return tuple(frames)


def _exception_in_text(text: str) -> Tuple[Optional[str], str]:
    """(type, message) of the last exception line in ``text``, else of a ``path:line: Type``
    trailer."""
    found_type, found_message, trailer_type = None, "", None
    for line in text.splitlines():
        if line.startswith(" "):
            continue  # source lines and Python's frame lines are indented
        match = _EXC_LINE.match(line.strip())
        if match:
            found_type, found_message = match.group(1), (match.group(2) or "").strip()
        trailer = _TRAILER.match(line)
        if trailer:
            trailer_type = trailer.group(1)
    return found_type or trailer_type, found_message


# pytest-timeout's thread method ends the whole process after printing this banner.
_TIMEOUT_BANNER = re.compile(r"^\+{5,} Timeout \+{5,}\s*$", re.M)


@dataclass(frozen=True)
class RunFacts:
    """What the whole run says about each of its results.

    ``time_limit`` says how the test command stopped itself at its own time
    limit ("" when it did not): the ``timeout`` program it runs under (exit
    124, or 137 with ``-s KILL``), pytest-timeout's thread method (its banner,
    then the process ends), or SIGALRM. repairloop's own ``--test-timeout``
    is ``TestReport.timed_out`` and a ``Timeout`` record, not this.
    """

    exit_code: Optional[int] = None
    time_limit: str = ""


def run_facts(report: TestReport) -> RunFacts:
    """The RunFacts of ``report``."""
    argv = report.command[0].split() if len(report.command) == 1 else list(report.command)
    program = os.path.basename(argv[0]) if argv else ""
    time_limit = ""
    if program == "timeout" and report.exit_code in (124, 137):
        time_limit = f"the `timeout` program the test command runs under (exit {report.exit_code})"
    elif _TIMEOUT_BANNER.search(report.output):
        time_limit = "pytest-timeout's thread method, which ends the test process"
    elif report.signal == 14 or report.exit_code in (-14, 142):
        time_limit = "SIGALRM, a timer set by the test command"
    return RunFacts(report.exit_code, time_limit)


@dataclass(frozen=True)
class FailureEvidence:
    """One failing result as the rules see it. ``text`` is pytest's failure text plus the
    message."""

    result: TestResult
    exc_type: Optional[str]
    message: str
    text: str
    frames: Tuple[Frame, ...]
    project: Path
    interpreter: Optional[InterpreterQuery]
    modules: Callable[[], FrozenSet[str]] = field(compare=False, default=frozenset)
    facts: RunFacts = RunFacts()

    @property
    def causes(self) -> Tuple[str, ...]:
        """``module.Type: message`` of the exceptions this one was raised from (the runner's
        plugin)."""
        return self.result.causes

    def failure(
        self, kind: FailureKind, message: str = "", hint: str = "", location: Optional[str] = None
    ) -> Failure:
        """A Failure of ``kind`` for this result; retryable exactly when the kind is logic."""
        return Failure(
            test_id=self.result.test_id,
            kind=kind,
            retryable=kind is FailureKind.LOGIC,
            message=(message or self.message)[:2000],
            hint=hint,
            location=location or default_location(self.frames),
            exc_type=self.exc_type,
            frames=self.frames,
        )


def _strip_project(text: str, project: Path) -> str:
    """Absolute project paths in a message become relative: stable across workspaces."""
    for root in {str(project.absolute()), str(project.resolve())}:
        text = text.replace(root + os.sep, "")
    return text


def make_evidence(
    result: TestResult,
    project: Path,
    interpreter: Optional[InterpreterQuery],
    modules: Callable[[], FrozenSet[str]],
    facts: RunFacts = RunFacts(),
) -> FailureEvidence:
    """Normalise ``result``: exception type and message, project-relative frames."""
    text = "\n".join(part for part in (result.longrepr, result.message) if part)
    exc_type, message = result.exc_type, result.message.strip()
    if not exc_type or not message:
        found_type, found_message = _exception_in_text(result.longrepr)
        exc_type, message = exc_type or found_type, message or found_message
    if not message and not exc_type:
        message = _last_said(text)
    if exc_type and not message:
        # an exception without a value (`raise ValueError()`): its type is what it said
        message = exc_type
    elif exc_type and exc_type not in _BARE_MESSAGE_TYPES and not message.startswith(exc_type):
        message = f"{exc_type}: {message}"
    frames = result.frames or parse_frames(result.longrepr)
    roots = root_forms(project)
    frames = tuple(replace(f, path=relative_to(f.path, roots) or f.path) for f in frames)
    return FailureEvidence(
        result,
        exc_type,
        _strip_project(message, project),
        text,
        frames,
        project,
        interpreter,
        modules,
        facts,
    )


def _last_said(text: str) -> str:
    """What a failure text says last: its last ``E`` line, else its last line that is no traceback
    furniture (``self = <...>``, a ``def`` line, ``Traceback (most recent call last):``, a frame
    header)."""
    lines = [line.rstrip() for line in text.strip().splitlines() if line.strip()]
    said = [line[1:].strip() for line in lines if line.startswith("E ")]
    plain = [
        line.strip()
        for line in lines
        if not line.startswith((" ", "self = ", "def ", "async def ", "Traceback ", "E ", ">"))
        and not _FRAME_HEADER.match(line)
    ]
    return (said or plain or [""])[-1]


def default_location(frames: Tuple[Frame, ...]) -> Optional[str]:
    """The innermost project frame as ``path:line``, or None."""
    for frame in reversed(frames):
        if is_project_path(frame.path):
            return f"{frame.path}:{frame.line}"
    return None


def source_line(path: Path, line: int) -> str:
    """Line ``line`` (1-based) of ``path``, stripped; "" when unreadable."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return ""
    return lines[line - 1].strip() if 0 < line <= len(lines) else ""
