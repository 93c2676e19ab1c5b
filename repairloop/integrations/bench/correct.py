"""Correct beside plausible: a plausible patch against the case's reference fix and its hidden
tests.

A plausible patch passes the tests the loop was shown; the field calls one that
passes them without fixing the bug an overfitting patch (Smith et al., "Is the
cure worse than the disease? Overfitting in automated program repair", FSE 2015;
Qi et al., "An analysis of patch plausibility and correctness", ISSTA 2015).
Two judges, used only after the loop stopped and never shown to it:

- the reference fix (``reference.patch``): the patch makes the same change,
  compared file by file after applying each to a fresh copy of the case and
  normalising whitespace (``same_code``);
- the hidden tests (``hidden_tests/``): laid over a fresh copy with the patch,
  the whole suite, hidden tests included, runs through the same test command,
  sandbox and structured results as the loop's own runs, and must pass.
"""

from __future__ import annotations

import io
import os
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from repairloop.errors import ConfigError, RepairloopError
from repairloop.integrations.bench.cases import Case, copy_project, lay_over
from repairloop.integrations.branch import run_git
from repairloop.loop.suite import TestSuite
from repairloop.settings import Settings
from repairloop.textutil import numstat_paths
from repairloop.types import TestReport

# Tokens that carry no meaning of their own: line breaks inside brackets and blank lines, the end
# marker.
_LAYOUT = {tokenize.NL, tokenize.ENDMARKER}


@dataclass(frozen=True)
class Judgement:
    """What the judges said about one plausible patch; None where the case ships no such judge.

    ``hidden_tests`` counts the hidden tests that ran; ``detail`` says what
    failed (or why a judge could not run).
    """

    matches_reference: Optional[bool] = None
    passes_hidden_tests: Optional[bool] = None
    hidden_tests: int = 0
    detail: str = ""

    @property
    def correct(self) -> Optional[bool]:
        """Passes the hidden tests; for a case without them, matches the reference; None: no
        judge."""
        if self.passes_hidden_tests is not None:
            return self.passes_hidden_tests
        return self.matches_reference


def normalise(path: str, text: Optional[str]) -> Optional[Tuple[str, ...]]:
    """``text`` with its whitespace normalised: what two versions of a file must share to count as
    the same code.

    Python source is compared as its token stream (``tokenize``): spacing
    inside a line, blank lines, line continuations and the width of the
    indentation do not count; the nesting (INDENT/DEDENT), comments and the
    contents of string literals do. Other files, and Python that does not
    tokenize, are compared as their whitespace-separated words. None stays None
    (the file does not exist).
    """
    if text is None:
        return None
    if path.endswith(".py"):
        try:
            tokens = tokenize.generate_tokens(io.StringIO(text).readline)
            return tuple(
                f"{tokenize.tok_name[t.type]}:{t.string if t.type != tokenize.INDENT else ''}"
                for t in tokens
                if t.type not in _LAYOUT
            )
        except (tokenize.TokenError, IndentationError, SyntaxError):
            pass
    return tuple(text.split())


def same_code(path: str, first: Optional[str], second: Optional[str]) -> bool:
    """True when two versions of ``path`` are the same code after ``normalise``."""
    return normalise(path, first) == normalise(path, second)


def patched_copy(case: Case, patch: str, dest: Path) -> Tuple[Path, Tuple[str, ...]]:
    """A fresh copy of the case's project at ``dest`` with ``patch`` applied; the copy and the paths
    it changed.

    The copy is made its own git repository first, so ``git apply`` can never
    reach a repository around it. Raises GitCommandError when the patch does not apply.
    """
    root = copy_project(case, dest)
    text = patch if patch.endswith("\n") else patch + "\n"
    run_git(root, "init", "-q")
    paths = numstat_paths(run_git(root, "apply", "--numstat", "-z", "-", input_text=text))
    run_git(root, "apply", "--whitespace=nowarn", "-", input_text=text)
    return root, tuple(paths)


def _read(root: Path, rel: str) -> Optional[str]:
    path = root / rel
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else None


def matches_reference(
    patched: Path, changed: Sequence[str], reference: Path, touched: Sequence[str]
) -> bool:
    """True when the two copies agree, after ``normalise``, on every file either patch changed."""
    return all(
        same_code(rel, _read(patched, rel), _read(reference, rel))
        for rel in sorted({*changed, *touched})
    )


def judge(case: Case, patch: str, settings: Settings, work: Path) -> Judgement:
    """Judge a plausible ``patch`` of ``case`` by its reference fix and its hidden tests, in
    ``work``.

    Never raises for the patch's own faults: a patch that does not apply to a
    fresh copy, or a hidden-test run that cannot finish, is judged not correct
    with the reason in ``detail``.
    """
    if case.reference is None and case.hidden is None:
        return Judgement()
    try:
        root, changed = patched_copy(case, patch, work / "patched")
    except RepairloopError as err:
        failed = False if case.hidden is not None else None
        return Judgement(
            False if case.reference is not None else None,
            failed,
            0,
            f"the patch does not apply to a fresh copy of the case: {err.message}",
        )
    matches = None
    if case.reference is not None:
        reference = case.reference.read_text(encoding="utf-8")
        ref_root, touched = patched_copy(case, reference, work / "reference")
        matches = matches_reference(root, changed, ref_root, touched)
    if case.hidden is None:
        return Judgement(matches)
    passed, count, detail = run_hidden_tests(case, root, settings)
    return Judgement(matches, passed, count, detail)


def run_hidden_tests(case: Case, root: Path, settings: Settings) -> Tuple[bool, int, str]:
    """Lay the hidden tests over ``root`` and run the whole suite once: (all passed, hidden tests
    run, detail).

    The run goes through the loop's own TestSuite (the case's test command,
    the sandbox, the structured results); the hidden test files are read-only
    to it. Passing means the run is green and every hidden test is reported passed.
    """
    hidden = lay_over(case.hidden, root) if case.hidden is not None else ()
    deadline = time.monotonic() + settings.test_timeout
    suite = TestSuite.for_project(
        settings, root, dict(os.environ), lambda: deadline - time.monotonic()
    )
    report = suite.run(root, protect=hidden)
    return hidden_verdict(report, hidden)


def hidden_verdict(report: TestReport, hidden: Sequence[str]) -> Tuple[bool, int, str]:
    """(passed, hidden tests that ran, detail) for a run of the suite with ``hidden`` files laid
    over it."""
    files = set(hidden)
    ran: Dict[str, bool] = {
        r.test_id: r.test_id in report.passed_only
        for r in report.results
        if r.test_id.split("::", 1)[0] in files
    }
    if not report.green and not report.failing:
        why = (
            "it timed out"
            if report.timed_out
            else report.distrust or f"it exited {report.exit_code}"
        )
        return False, len(ran), f"the suite with the hidden tests did not pass: {why}"
    if not ran:
        return (
            False,
            0,
            "no hidden test ran: check that the test command collects " + ", ".join(hidden),
        )
    failed: List[str] = sorted(t for t, ok in ran.items() if not ok)
    others = sorted(r.test_id for r in report.failing if r.test_id not in ran)
    if failed or others:
        also = f" and {len(others)} other test(s) failed" if others else ""
        return (
            False,
            len(ran),
            (
                f"{len(failed)} of {len(ran)} hidden test(s) did not pass{also}: "
                + ", ".join((failed + others)[:5])
            ),
        )
    return True, len(ran), f"{len(ran)} hidden test(s) passed"


def check_reference(case: Case, work: Path) -> None:
    """Raise ConfigError when the case's reference fix does not apply to its project (checked before
    a bench starts)."""
    if case.reference is None:
        return
    try:
        patched_copy(case, case.reference.read_text(encoding="utf-8"), work / case.name)
    except RepairloopError as err:
        raise ConfigError(
            f"{case.reference} does not apply to its case: {err.message}",
            hint="make it with `git diff` in a copy of the case (paths relative to the case)",
        ) from None
