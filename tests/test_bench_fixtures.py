"""Every case of fixtures/bench is what fixtures/bench/README.md says, checked by running it.

The buggy code fails at least one visible test and passes at least one; the
hidden tests catch the bug too (at least one fails on the buggy code); the
reference fix applies and makes every test pass, the hidden ones included. So
a plausible patch judged correct by the bench is judged by tests that can fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Set, Tuple

import pytest

from repairloop.integrations.bench import find_cases
from repairloop.integrations.bench.cases import Case, copy_project, lay_over
from repairloop.integrations.bench.correct import patched_copy

BENCH = Path(__file__).resolve().parent.parent / "fixtures" / "bench"
CASES = {case.name: case for case in find_cases(BENCH)}


def pytest_in(root: Path) -> Tuple[int, Dict[str, Set[str]], str]:
    """``python -m pytest -q -rA`` in ``root`` (the case's own configuration): exit code, the test
    files that had a PASSED and a FAILED test (from pytest's short summary), the output's tail."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
    )
    files: Dict[str, Set[str]] = {"PASSED": set(), "FAILED": set()}
    for line in done.stdout.splitlines():
        word, _, test_id = line.partition(" ")
        if word in files:
            files[word].add(test_id.split("::", 1)[0])
    return done.returncode, files, done.stdout[-800:]


# bisect_hang_step's own conftest fails a test still running after GUARD_SECONDS (10) of the bug's
# busy loop: three such tests cost 30 s of CPU on the buggy copy. 2 s show the same failures.
GUARD = ("GUARD_SECONDS = 10\n", "GUARD_SECONDS = 2\n")


def shorten_guard(root: Path) -> None:
    for conftest in root.rglob("conftest.py"):
        text = conftest.read_text(encoding="utf-8")
        if GUARD[0] in text:
            conftest.write_text(text.replace(*GUARD), encoding="utf-8")


def test_every_case_ships_a_reference_fix_and_hidden_tests() -> None:
    assert len(CASES) >= 30
    missing: List[str] = [n for n, c in CASES.items() if c.reference is None or not c.hidden_files]
    assert missing == []


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_hidden_tests_catch_the_bug_and_the_reference_fix_passes_them(
    name: str, tmp_path: Path
) -> None:
    case: Case = CASES[name]
    assert case.hidden is not None and case.reference is not None
    buggy = copy_project(case, tmp_path / "buggy")
    shorten_guard(buggy)
    hidden = set(lay_over(case.hidden, buggy))
    code, files, tail = pytest_in(buggy)
    assert code == 1 and files["FAILED"] & hidden, f"a hidden test fails on the bug: {tail}"
    visible = files["FAILED"] - hidden
    assert visible and (files["PASSED"] - hidden), (
        f"the bug fails a visible test and passes one: {tail}"
    )
    fixed, changed = patched_copy(
        case, case.reference.read_text(encoding="utf-8"), tmp_path / "fixed"
    )
    assert changed and not set(changed) & (visible | hidden)
    lay_over(case.hidden, fixed)
    code, files, tail = pytest_in(fixed)
    assert code == 0 and not files["FAILED"] and hidden <= files["PASSED"], (
        f"every test passes with the reference fix: {tail}"
    )
