"""Spectrum-based fault localisation (Ochiai over per-test coverage), traceback fallback.

Ochiai (Abreu, Zoeteweij and van Gemund, 2006) scores a line executed by
``ef`` failing and ``ep`` passing tests, out of ``F`` failing tests, as
``ef / sqrt(F * (ef + ep))``; it is the usual best single formula for
spectrum-based localisation. Per-test spectra (``spectra.py``) come from
coverage.py's dynamic contexts when the project's environment has coverage.py,
else from the pytest plugin's own line tracer, which repairloop brings. Ties
are broken by the distance to the failing frames of the traceback, then by
path and line, so the ranking is deterministic.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import replace
from pathlib import Path
from typing import (
    Dict,
    FrozenSet,
    Iterable,
    Iterator,
    List,
    Mapping,
    Sequence,
    Set,
    Tuple,
    Union,
)

from repairloop.localise.functions import rank_functions
from repairloop.localise.related import widen
from repairloop.localise.spectra import EVERY_TEST, read_spectra
from repairloop.types import (
    FAR,
    Frame,
    LineKey,
    Localisation,
    Suspect,
    TestFiles,
    TestReport,
    TestResult,
    read_inside,
    relative_to,
    resolved,
    root_forms,
)

__all__ = ["localise", "ochiai", "rank"]

MAX_MESSAGE_CHARS = 20_000  # of one failing test's message, searched for the project's literals


def ochiai(
    lines: Mapping[LineKey, FrozenSet[str]], failing: Iterable[str], passing: Iterable[str]
) -> Dict[LineKey, Tuple[float, int, int]]:
    """Ochiai suspiciousness of every line executed by a failing test: ``{key: (score, ef,
    ep)}``."""
    failed, passed = set(failing), set(passing) - set(failing)
    if not failed:
        return {}
    scores: Dict[LineKey, Tuple[float, int, int]] = {}
    everyone = failed | passed
    for key, tests in lines.items():
        if EVERY_TEST in tests:
            tests = frozenset(everyone)
        ef = len(tests & failed)
        if ef:
            ep = len(tests & passed)
            scores[key] = (ef / math.sqrt(len(failed) * (ef + ep)), ef, ep)
    return scores


_PY_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_PYTEST_FRAME = re.compile(r"^([^\s:][^:\n]*\.py):(\d+):", re.MULTILINE)


def failure_frames(
    results: Sequence[TestResult],
    failing: Iterable[str],
    traceback: str,
    root: Path,
    test_files: TestFiles,
) -> List[Frame]:
    """Frames of the failing tests in non-test project code, innermost first, no duplicates."""
    wanted = set(failing)
    frames: List[Frame] = []
    for result in results:
        if result.test_id in wanted and result.failed:
            frames.extend(reversed(result.frames))
    for pattern in (_PY_FRAME, _PYTEST_FRAME):
        found = [Frame(m.group(1), int(m.group(2))) for m in pattern.finditer(traceback or "")]
        frames.extend(reversed(found))
    out: List[Frame] = []
    seen: Set[LineKey] = set()
    for frame in frames:
        rel = relative_to(resolved(frame.path), root_forms(root))
        if rel is None or test_files.is_test(rel) or (rel, frame.line) in seen:
            continue
        seen.add((rel, frame.line))
        out.append(Frame(rel, frame.line, frame.function))
    return out


def distance(path: str, line: int, frames: Sequence[Frame]) -> int:
    """Lines from (path, line) to the nearest frame in the same file (``FAR`` if none)."""
    return min((abs(f.line - line) for f in frames if f.path == path), default=FAR)


def rank(
    scores: Mapping[LineKey, Tuple[float, int, int]], frames: Sequence[Frame]
) -> Tuple[Suspect, ...]:
    """Suspects sorted by score, then distance to a failing frame, then path and line."""
    suspects = [
        Suspect(path, line, score, ef, ep, distance(path, line, frames))
        for (path, line), (score, ef, ep) in scores.items()
    ]
    suspects.sort(key=lambda s: (-round(s.score, 9), s.distance, s.path, s.line))
    return tuple(suspects)


def _function_spans(tree: ast.AST) -> List[Tuple[str, int, int]]:
    spans = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            spans.append((node.name, node.lineno, node.end_lineno or node.lineno))
    return spans


def _test_scopes(test_ids: Iterable[str], root: Path) -> Iterator[Tuple[ast.AST, str]]:
    """(the test function's syntax tree, its file's text) for each failing test id (the module's
    when the function is not found), each file parsed once; files that do not parse are left
    out."""
    wanted: Dict[str, Set[str]] = {}
    for test_id in set(test_ids):
        parts = test_id.split("::")
        function = re.sub(r"\[.*\]$", "", parts[-1]) if len(parts) > 1 else ""
        wanted.setdefault(parts[0], set()).add(function)
    for path, functions in sorted(wanted.items()):
        # a test id is the run's word: never a link out, nor /dev/zero
        text = read_inside(root, path) or ""
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
        found = {}
        for node in ast.walk(tree):
            name = getattr(node, "name", None)
            if name in functions and name not in found:
                found[name] = node
        for function in sorted(functions):
            yield found.get(function, tree), text


def _test_references(test_ids: Iterable[str], root: Path) -> Set[str]:
    """Names and attributes mentioned by the failing test functions (their module if not found)."""
    names: Set[str] = set()
    for scope, _ in _test_scopes(test_ids, root):
        for node in ast.walk(scope):
            if isinstance(node, ast.Name):
                names.add(node.id)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
    return names


def described_by_tests(test_ids: Iterable[str], root: Path) -> str:
    """What the failing test functions say they test: their docstrings and comments, one text."""
    said: List[str] = []
    for scope, text in _test_scopes(test_ids, root):
        if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        said.append(ast.get_docstring(scope) or "")
        lines = text.splitlines()[scope.lineno - 1 : scope.end_lineno]
        said += [line.split("#", 1)[1] for line in lines if line.lstrip().startswith("#")]
    return "\n".join(said)


def traceback_scores(
    frames: Sequence[Frame], sources: Mapping[str, str], failing: Iterable[str], root: Path
) -> Dict[LineKey, Tuple[float, int, int]]:
    """Fallback scores: failing frames (innermost 1.0), their functions (0.6), functions the tests
    call (0.4)."""
    scores: Dict[LineKey, float] = {}

    def add(key: LineKey, value: float) -> None:
        scores[key] = max(scores.get(key, 0.0), value)

    trees = {}
    for path, text in sorted(sources.items()):
        try:
            trees[path] = ast.parse(text)
        except (SyntaxError, ValueError):
            continue
    for i, frame in enumerate(frames):
        add((frame.path, frame.line), max(0.7, 1.0 - 0.05 * i))
        for _, first, last in _function_spans(
            trees.get(frame.path, ast.Module(body=[], type_ignores=[]))
        ):
            if first <= frame.line <= last:
                for line in range(first + 1, last + 1):
                    add((frame.path, line), 0.6)
    referenced = _test_references(failing, root)
    for path, tree in trees.items():
        for name, first, last in _function_spans(tree):
            if name in referenced:
                for line in range(first + 1, last + 1):
                    add((path, line), 0.4)
    return {key: (value, 0, 0) for key, value in scores.items()}


def localise(
    report: TestReport,
    root: Path,
    failing: Sequence[str],
    traceback: str,
    test_files: TestFiles,
    sources: Mapping[str, str],
) -> Localisation:
    """Rank suspicious lines from a baseline run that recorded the lines each test ran.

    ``report`` is that run (on a copy at ``root``); ``failing`` the test ids to
    repair; ``test_files`` which files are tests (never suspects); ``sources``
    the non-test project files, ``{path: text}``. Falls back
    to the traceback frames, with a note saying why (localisation is then
    degraded), when there is no line data or it names no line executed by a
    failing test. Either way the result carries the code no failing test ran
    that goes with the suspects (``related``: copies, callers, message
    sources). Raises nothing.
    """
    failing_ids = tuple(sorted(set(failing)))
    passing = tuple(t for t in report.passed_ids if t not in set(failing_ids))
    frames = failure_frames(report.results, failing_ids, traceback, root, test_files)
    found = _from_spectra(report, root, failing_ids, passing, frames, (test_files, sources))
    if not isinstance(found, Localisation):
        scores = traceback_scores(frames, sources, failing_ids, root)
        suspects = rank(scores, frames)
        functions = rank_functions(
            suspects, sources, {}, failing_ids, described_by_tests(failing_ids, root)
        )
        found = Localisation(
            "traceback", suspects, failing_ids, passing, found, report=report, functions=functions
        )
    ran = set(found.ran_by) if found.method == "coverage" else None
    copied, calling, quoted = widen(
        found.functions, sources, failure_text(report, failing_ids), ran
    )
    return replace(found, copies=copied, callers=calling, speakers=quoted)


def _from_spectra(
    report: TestReport,
    root: Path,
    failing_ids: Tuple[str, ...],
    passing: Tuple[str, ...],
    frames: Sequence[Frame],
    files: Tuple[TestFiles, Mapping[str, str]],
) -> Union[Localisation, str]:
    """Ochiai over the run's per-test line data, or the note saying why it cannot be used.

    ``files`` is (which files are tests, the non-test sources ``{path: text}``).
    """
    test_files, sources = files
    if report.coverage_file is None:
        return (
            "the test run recorded no per-test line data (a test command that does not run "
            "pytest, or the plugin could not trace), so suspicious lines come from the traceback "
            "frames and the functions the failing tests call"
        )
    try:
        lines, tool = read_spectra(report.coverage_file, root, test_files)
    except ImportError:
        return "coverage.py is not importable by repairloop: localised from the traceback frames"
    except Exception as exc:  # any unreadable data file degrades to the fallback, never aborts
        return (
            f"the per-test line data could not be read ({exc}): localised from the traceback frames"
        )
    scores = ochiai(lines, failing_ids, passing)
    if not scores:
        return (
            "the per-test line data records no project line run by a failing test: "
            "localised from the traceback frames"
        )
    ran_by = failing_runs(lines, failing_ids, scores)
    suspects = rank(scores, frames)
    return Localisation(
        "coverage",
        suspects,
        failing_ids,
        passing,
        tool=tool,
        ran_by=ran_by,
        report=report,
        functions=rank_functions(
            suspects, sources, ran_by, failing_ids, described_by_tests(failing_ids, root)
        ),
        spectra=lines,
    )


def failure_text(report: TestReport, failing: Sequence[str]) -> str:
    """The messages of ``failing`` tests' results in ``report`` (their assertions and errors), each
    cut at ``MAX_MESSAGE_CHARS``."""
    wanted = set(failing)
    return "\n".join(
        r.message[:MAX_MESSAGE_CHARS] for r in report.results if r.test_id in wanted and r.failed
    )


def failing_runs(
    lines: Mapping[LineKey, FrozenSet[str]], failing: Sequence[str], keys: Iterable[LineKey]
) -> Dict[LineKey, FrozenSet[str]]:
    """For each of ``keys``, the failing tests that ran it (every one for code run outside any
    test)."""
    everyone = frozenset(failing)
    return {
        key: everyone if EVERY_TEST in lines[key] else lines[key] & everyone
        for key in keys
        if key in lines
    }
