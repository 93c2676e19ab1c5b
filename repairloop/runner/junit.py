"""JUnit XML to TestResults, for test commands our pytest plugin does not see.

Shapes follow TECH-NOTES 5.2 (pytest's xunit2 output, the common case) and
stay loose enough for other runners: ``<failure>`` and ``<error>`` usually have
no ``type`` attribute, so the exception class is read from the last line of
the text (``path:line: ExcType``) or an ``E   ExcType: message`` line;
collection errors are test cases with ``classname=""`` whose name is the
dotted module path. A file that is missing or cut short by a kill reads as None.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from repairloop.runner.plugin_records import clean_text, merge_phases
from repairloop.types import Frame, TestOutcome, TestResult, relative_to, root_forms

_LOCATION = re.compile(r"^(\S[^:\n]*):(\d+)(?:: (.*))?$")
# "E   SomeError: message"; the suffix keeps "E   Expected: 3" from reading as a type.
_E_LINE = re.compile(
    r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt|Failed|Failure|Timeout)):"
    r"\s?(.*)$"
)
_SYNTAX_FILE = re.compile(r'File "([^"]+)", line (\d+)')
_FIXTURE = re.compile(r"^E\s+fixture '([^']+)' not found", re.MULTILINE)
_INTERNAL = ("/_pytest/", "/pluggy/", "/importlib/", "<frozen")  # machinery, not the project
_SYNTAX_TYPES = ("SyntaxError", "IndentationError", "TabError")


@dataclass(frozen=True)
class JunitResults:
    """Results of one JUnit file; ``collected`` counts test cases that are not collection errors."""

    results: Tuple[TestResult, ...]
    collected: int


def _test_id(case: ET.Element, root: Path) -> str:
    """pytest's node id when the file can be found under ``root``, else ``classname::name``."""
    classname, name = case.get("classname", ""), case.get("name", "")
    file_attr = case.get("file")
    if not classname:  # a collection error: name is the module's dotted path
        module = name.replace(".", "/") + ".py"
        return module if (root / module).is_file() else name
    parts = classname.split(".")
    if file_attr:
        module_parts = file_attr[: -len(".py")].replace("/", ".").split(".")
        rest = parts[len(module_parts) :] if parts[: len(module_parts)] == module_parts else []
        return "::".join([file_attr, *rest, name])
    for cut in range(len(parts), 0, -1):
        module = "/".join(parts[:cut]) + ".py"
        if (root / module).is_file():
            return "::".join([module, *parts[cut:], name])
    return f"{classname}::{name}"


def _frames(text: str, roots: Tuple[str, ...]) -> List[Frame]:
    frames = []
    for line in text.splitlines():
        match = _LOCATION.match(line.strip())
        if match and not any(mark in match.group(1) for mark in _INTERNAL):
            rest = match.group(3) or ""
            function = rest[3:] if rest.startswith("in ") else ""
            path = relative_to(match.group(1), roots) or match.group(1)
            frames.append(Frame(path, int(match.group(2)), function))
    return frames


def _exception(node: ET.Element, text: str) -> Tuple[Optional[str], str]:
    """(exc_type, message) from the ``type`` attribute, the text's last line or its E lines."""
    message = node.get("message", "")
    if message == "collection failure":
        message = ""
    e_lines = [m for m in map(_E_LINE.match, text.splitlines()) if m]
    fixture = _FIXTURE.search(text)
    if fixture:
        return "FixtureLookupError", f"fixture '{fixture.group(1)}' not found"
    exc_type = node.get("type")
    if not exc_type:
        lines = [line for line in text.strip().splitlines() if line.strip()]
        last = _LOCATION.match(lines[-1].strip()) if lines else None
        if last and last.group(3) and re.fullmatch(r"[A-Za-z_][\w.]*", last.group(3)):
            exc_type = last.group(3)
        elif e_lines:
            exc_type = e_lines[-1].group(1)
    if exc_type:
        exc_type = exc_type.split(".")[-1]
        same = [m for m in e_lines if m.group(1).split(".")[-1] == exc_type]
        if same and (not message or message.startswith("failed on ")):
            message = same[-1].group(2)
    return exc_type or None, message


def _phase(node: ET.Element, classname: str) -> str:
    message = node.get("message", "")
    if not classname or message == "collection failure":
        return "collect"
    for phase in ("setup", "teardown"):
        if message.startswith(f"failed on {phase}"):
            return phase
    return "call"


def _result(case: ET.Element, root: Path, roots: Tuple[str, ...]) -> TestResult:
    test_id = _test_id(case, root)
    duration = float(case.get("time") or 0.0)
    for tag, outcome in (("failure", TestOutcome.FAILED), ("error", TestOutcome.ERROR)):
        node = case.find(tag)
        if node is not None:
            text = clean_text(node.text or "")
            exc_type, message = _exception(node, text)
            frames = _frames(text, roots)
            syntax = _SYNTAX_FILE.findall(text)
            if exc_type in _SYNTAX_TYPES and syntax:
                frames.append(
                    Frame(
                        relative_to(syntax[-1][0], roots) or syntax[-1][0], int(syntax[-1][1]), ""
                    )
                )
            phase = _phase(node, case.get("classname", ""))
            return TestResult(
                test_id=test_id,
                outcome=outcome,
                duration=duration,
                phase=phase,
                exc_type=exc_type,
                message=clean_text(message),
                frames=tuple(frames),
                output=_output(case),
                longrepr=text[-4000:],
            )
    skipped = case.find("skipped")
    if skipped is not None:
        xfail = skipped.get("type") == "pytest.xfail"
        outcome = TestOutcome.XFAILED if xfail else TestOutcome.SKIPPED
        message = clean_text(skipped.get("message", ""))
        return TestResult(test_id, outcome, duration, message=message)
    return TestResult(test_id, TestOutcome.PASSED, duration)


def _output(case: ET.Element) -> str:
    nodes = case.findall("system-out") + case.findall("system-err")
    parts = [clean_text(node.text or "") for node in nodes]
    return "\n".join(p for p in parts if p)[-2000:]


def read_junit(path: Path, root: Path) -> Optional[JunitResults]:
    """Parse the JUnit XML at ``path`` (node ids relative to ``root``).

    Returns None when the file is absent or unreadable (a killed run leaves none, or half of one).
    """
    try:
        tree = ET.parse(str(path))
    except (OSError, ET.ParseError):
        return None
    roots = root_forms(root)
    by_id: Dict[str, List[TestResult]] = {}
    for case in tree.getroot().iter("testcase"):
        result = _result(case, Path(root), roots)
        by_id.setdefault(result.test_id, []).append(result)
    results = tuple(merge_phases(phases) for phases in by_id.values())
    return JunitResults(results, sum(1 for r in results if r.phase != "collect"))
