"""One answer to "is this a test file": the glob rule, the collected files, and every consumer
agreeing.

``types.TestFiles`` is the only implementation; these tables pin its answers
(``matches_globs`` documents the rule), and the last tests ask the guards, the
context, the offline engine and the overfitting check the same question on
real files and expect the table's answer from each.
"""

from __future__ import annotations

from pathlib import Path
from typing import Tuple

import pytest

from repairloop.context import group_failures
from repairloop.context.source import code_frames
from repairloop.errors import GuardError
from repairloop.localise import failure_frames
from repairloop.patch import AppliedPatch, FileChange, GuardPolicy, check_guards
from repairloop.patch.overfit import overfitting_flags
from repairloop.types import (
    DEFAULT_PROTECTED_GLOBS,
    DEFAULT_TEST_GLOBS,
    Failure,
    FailureKind,
    Frame,
    TestFiles,
    TestOutcome,
    TestReport,
    TestResult,
    is_project_path,
    matches_globs,
    read_sources,
)

# (path, is a test by the default test_globs, why)
DEFAULT_CASES = [
    ("tests/test_a.py", True, "tests/**"),
    ("tests/helpers/data.py", True, "tests/** takes every depth below tests/"),
    ("tests/fixtures/data.json", True, "not only .py files"),
    ("test/x.py", True, "test/**"),
    ("test_top.py", True, "test_*.py"),
    ("pkg/test_b.py", True, "**/test_*.py, and test_*.py by file name"),
    ("pkg/sub/b_test.py", True, "*_test.py"),
    ("conftest.py", True, "conftest.py"),
    ("pkg/sub/conftest.py", True, "**/conftest.py"),
    ("pkg/tests/test_x.py", True, "test_*.py by file name"),
    (
        "pkg/tests/helpers.py",
        False,
        "tests/** is anchored at the root (django/test/ is product code)",
    ),
    (
        "test_utils/helpers.py",
        True,
        "fnmatch's * crosses /: test_*.py takes it (errs towards test)",
    ),
    ("pkg/testing.py", False, "not test_*"),
    ("src/pkg/core.py", False, "plain code"),
    ("contest.py", False, "not conftest.py"),
    ("attest.py", False, "not *_test.py"),
    ("src/latest.py", False, "not *_test.py"),
    ("Tests/test_case.py", True, "test_*.py by file name; Tests/** itself would not match"),
    ("Tests/helpers.py", False, "case-sensitive: Tests/ is not tests/"),
    ("./tests/x.py", True, "normalised: ./ folded"),
    ("tests\\x.py", True, "normalised: backslashes turned"),
    ("pkg/../tests/x.py", True, "normalised: a/../ folded"),
]


@pytest.mark.parametrize("path, expected, why", DEFAULT_CASES)
def test_default_globs(path: str, expected: bool, why: str) -> None:
    assert TestFiles().is_test(path) is expected, why
    assert TestFiles(DEFAULT_TEST_GLOBS).is_test(path) is expected, why


# (glob, path, matches)
GLOB_CASES = [
    ("tests/**", "tests/a/b.py", True),
    ("tests/**", "pkg/tests/x.py", False),  # a glob with / is anchored at the project root
    ("tests/*", "tests/a/b.py", True),  # * crosses / (fnmatch), like **
    ("x/**/c.py", "x/c.py", True),  # **/ also matches no directory
    ("x/**/c.py", "x/a/b/c.py", True),
    ("x/**/c.py", "y/x/c.py", False),
    ("**/conftest.py", "conftest.py", True),
    ("**/conftest.py", "a/conftest.py", True),
    ("src/**/tests/**", "src/tests/x.py", True),
    ("src/**/x.py", "src/tests/x.py", True),
    ("a/**/b/**/c.py", "a/b/c.py", True),  # every **/ may vanish, each alone or together
    ("a/**/b/**/c.py", "a/x/b/c.py", True),
    ("a/**/b/**/c.py", "a/b/y/c.py", True),
    ("a/**/b/**/c.py", "a/c.py", False),
    ("tests/**", "conftest.py", False),
    ("test_*.py", "test_a.py", True),
    (
        "test_*.py",
        "pkg/deep/test_a.py",
        True,
    ),  # a glob without / matches the file name at any depth
    ("check_*.py", "checks/check_x.py", True),
    ("checks/*.py", "sub/checks/a.py", False),
    ("conftest.py", "a/b/conftest.py", True),
    ("*.py", "a/b.txt", False),
    ("test_[ab].py", "pkg/test_a.py", True),
    ("test_[ab].py", "pkg/test_c.py", False),
]


@pytest.mark.parametrize("glob, path, expected", GLOB_CASES)
def test_the_glob_rule(glob: str, path: str, expected: bool) -> None:
    assert matches_globs(path, (glob,)) is expected
    assert TestFiles((glob,)).is_test(path) is expected


def test_no_globs_means_no_test_files_by_name() -> None:
    assert not TestFiles(()).is_test("tests/test_a.py")
    assert TestFiles((), frozenset({"tests/test_a.py"})).is_test("tests/test_a.py")


def test_protected_globs_follow_the_same_rule() -> None:
    assert matches_globs(".github/workflows/ci.yml", DEFAULT_PROTECTED_GLOBS)
    assert matches_globs("sub/requirements-dev.txt", DEFAULT_PROTECTED_GLOBS)
    assert matches_globs("services/api/setup.py", DEFAULT_PROTECTED_GLOBS)  # bare name: any depth
    assert not matches_globs("src/github.py", DEFAULT_PROTECTED_GLOBS)


@pytest.mark.parametrize(
    "path, expected",
    [
        ("pkg/mod.py", True),
        ("tests/test_a.py", True),
        ("src/pkg/venv_tools.py", True),
        (".venv/lib/python3.12/site-packages/x.py", False),
        ("venv/lib/x.py", False),
        ("lib/python3/site-packages/requests/api.py", False),
        ("usr/lib/python3/dist-packages/y.py", False),
        (".tox/py39/lib/z.py", False),
        ("/abs/pkg/mod.py", False),
        ("../other/mod.py", False),
        ("<string>", False),
        ("<frozen importlib._bootstrap>", False),
        ("", False),
    ],
)
def test_project_paths(path: str, expected: bool) -> None:
    """Project code (DESIGN.md): inside the root, outside environments; one helper for classify and
    context."""
    assert is_project_path(path) is expected


def result(test_id: str) -> TestResult:
    return TestResult(test_id, TestOutcome.PASSED)


def test_collected_files_are_tests_whatever_the_globs_say() -> None:
    report = TestReport(
        ("pytest",),
        0,
        results=(
            result("checks/check_a.py::check_x"),
            result("checks/check_a.py::check_y"),
            result("tests/test_b.py::TestB::test_one[1-2]"),
            result("./lib/verify.py::verify_all"),
            result("/elsewhere/test_abs.py::test_x"),  # outside the project: adds nothing
            result("../outside.py::test_x"),
            result("pkg.module.TestCase::test_x"),  # a JUnit class name, not a file
            result("<session>"),
        ),
    )
    files = TestFiles().with_collected(report)
    assert files.collected == {"checks/check_a.py", "tests/test_b.py", "lib/verify.py"}
    assert files.beyond_globs == ("checks/check_a.py", "lib/verify.py")
    assert files.is_test("checks/check_a.py") and files.is_test("./lib/verify.py")
    assert not files.is_test("checks/helpers.py")
    assert files.with_collected(report) == files  # idempotent: built once, the same value again
    assert TestFiles().collected == frozenset()  # the value built before it is unchanged (frozen)


# -- every consumer gives the same answer ---------------------------------------------------

CUSTOM = TestFiles(("spec/**", "x/**/c.py", "verify_*.py"), frozenset({"checks/run_checks.py"}))
# (path, is a test by CUSTOM): the paths where the old implementations disagreed, and more.
AGREEMENT = [
    ("spec/unit/calc_spec.py", True),
    ("pkg/spec/helper.py", False),  # was a test for the offline engine only
    ("x/c.py", True),  # was code for the offline engine only
    ("x/a/c.py", True),
    ("lib/verify_sum.py", True),  # bare glob: any depth (was a test for the engine only)
    ("checks/run_checks.py", True),  # collected by the runner
    ("checks/helpers.py", False),
    ("calc/core.py", False),
]

OLD = "def f(n):\n    return n\n"
SPECIAL = "def f(n):\n    if n == 12345:\n        return 7\n    return n\n"


def write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text)


def guards_say_test(root: Path, path: str) -> bool:
    applied = AppliedPatch(
        (FileChange(path, OLD, OLD.replace("n\n", "n + 1\n"), "exact", 1.0),), "unified_diff"
    )
    try:
        check_guards(applied, root, GuardPolicy(test_files=CUSTOM))
    except GuardError as err:
        assert "a test file" in err.message, err.message
        return True
    return False


def context_says_test(path: str) -> Tuple[bool, bool]:
    frame = Frame(path, 2, "f")
    failures = [
        Failure(
            f"t::test_{i}", FailureKind.LOGIC, True, "boom", exc_type="ValueError", frames=(frame,)
        )
        for i in (1, 2)
    ]
    # a frame in a test is no shared root cause
    by_grouping = len(group_failures(failures, CUSTOM)) == 2
    by_slices = code_frames([frame], CUSTOM) == []
    return by_grouping, by_slices


def engine_says_test(root: Path, path: str) -> Tuple[bool, bool]:
    failing = TestResult("t::test", TestOutcome.FAILED, frames=(Frame(path, 2, "f"),))
    by_frames = failure_frames([failing], ["t::test"], "", root, CUSTOM) == []
    by_sources = path not in read_sources(root, CUSTOM.is_test)
    return by_frames, by_sources


def overfitting_says_test(path: str) -> bool:
    applied = AppliedPatch((FileChange(path, OLD, SPECIAL, "exact", 1.0),), "unified_diff")
    return overfitting_flags(applied, frozenset({"12345"}), CUSTOM) == ()


@pytest.mark.parametrize("path, expected", AGREEMENT)
def test_guards_context_engine_and_overfitting_agree(
    tmp_path: Path, path: str, expected: bool
) -> None:
    write(tmp_path, path, OLD)
    assert CUSTOM.is_test(path) is expected
    assert guards_say_test(tmp_path, path) is expected, "guards"
    assert context_says_test(path) == (expected, expected), "context"
    assert engine_says_test(tmp_path, path) == (expected, expected), "offline engine"
    assert overfitting_says_test(path) is expected, "overfitting check"
