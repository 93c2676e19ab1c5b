"""Guards that keep a fix from cheating: tests, test config, tamper content, confinement,
overfitting.

Every case builds the candidate the way the loop does (``apply_answer`` on a
real project directory, or an ``AppliedPatch`` of old and new texts) and runs
the real ``check_guards``.
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Dict, Optional

import pytest

from repairloop.errors import GuardError, PatchError
from repairloop.patch import AppliedPatch, FileChange, GuardPolicy, apply_answer, check_guards
from repairloop.patch.overfit import check_hardcoded, overfitting_flags
from repairloop.patch.testliterals import assertion_literals, failing_inputs
from repairloop.settings import Settings

ALLOW = GuardPolicy(allow_test_edits=True)

TEST_FILE = """\
import pytest

from calc import last_n


def test_last_n():
    assert last_n([1, 2, 3, 4], 2) == [3, 4]


def test_first():
    assert last_n([5, 6], 1) == [6]
"""

SOURCE = """\
def last_n(items, n):
    if n <= 0:
        return []
    return items[-n - 1:]
"""


def change(path: str, old: Optional[str], new: Optional[str]) -> AppliedPatch:
    return AppliedPatch((FileChange(path, old, new, "exact", 1.0),), "unified_diff")


def project(tmp_path: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        target = tmp_path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return tmp_path


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


# --- tests are the oracle -------------------------------------------------------


def test_changed_expected_value_is_rejected_without_renaming_the_test(tmp_path: Path) -> None:
    root = project(tmp_path, {"tests/test_lists.py": TEST_FILE})
    answer = (
        "--- a/tests/test_lists.py\n+++ b/tests/test_lists.py\n@@ -6,2 +6,2 @@\n def "
        "test_last_n():\n"
        "-    assert last_n([1, 2, 3, 4], 2) == [3, 4]\n+    assert last_n([1, 2, 3, 4], 2) == [2, "
        "3, 4]\n"
    )
    applied = apply_answer(answer, root)
    with pytest.raises(GuardError, match=r"tests/test_lists.py, a test file"):
        check_guards(applied, root, GuardPolicy())
    screened = check_guards(applied, root, ALLOW)
    assert screened.test_edits == ("tests/test_lists.py",)


def test_test_found_by_content_outside_the_test_globs(tmp_path: Path) -> None:
    """A test file no glob names is still a test when its edited function is a test."""
    new = edit(TEST_FILE, "== [3, 4]", "== [2, 3, 4]")
    with pytest.raises(GuardError, match=r"edits the test test_last_n in checks/verify_lists.py"):
        check_guards(change("checks/verify_lists.py", TEST_FILE, new), tmp_path, GuardPolicy())
    screened = check_guards(change("checks/verify_lists.py", TEST_FILE, new), tmp_path, ALLOW)
    assert screened.test_edits == ("checks/verify_lists.py::test_last_n",)


def test_code_next_to_a_test_function_is_not_a_test_edit(tmp_path: Path) -> None:
    old = "def helper():\n    return 1\n\n\ndef test_helper():\n    assert helper() == 1\n"
    new = edit(old, "return 1", "return 2 - 1")
    check_guards(change("checks/verify_helper.py", old, new), tmp_path, GuardPolicy())


@pytest.mark.parametrize(
    "decorator",
    [
        "@pytest.mark.skip",
        "@pytest.mark.skip(reason='flaky')",
        "@pytest.mark.xfail",
        "@pytest.mark.skipif(True, reason='x')",
    ],
)
def test_skip_and_xfail_markers_are_rejected_even_with_test_edits_allowed(
    decorator: str, tmp_path: Path
) -> None:
    new = edit(TEST_FILE, "def test_last_n():", f"{decorator}\ndef test_last_n():")
    with pytest.raises(GuardError, match=r"skips the test or expects it to fail"):
        check_guards(change("tests/test_lists.py", TEST_FILE, new), tmp_path, ALLOW)


@pytest.mark.parametrize(
    "added, rule",
    [
        ("    pytest.skip('later')\n", "skips the test"),
        ("    pytest.xfail('known')\n", "skips the test"),
        ("    raise unittest.SkipTest('no')\n", "skips the test"),
        ("    self.skipTest('no')\n", "skips the test"),
        ("    skip('no')\n", "skips the test"),
        ("    sys.exit(0)\n", "ends the test process early"),
        ("    os._exit(0)\n", "ends the test process early"),
        ("    raise SystemExit(0)\n", "ends the test process early"),
        ("    exit(0)\n", "ends the test process early"),
        ("    atexit.register(print)\n", "ends the test process early"),
        ("    print('===== 3 passed in 0.01s =====')\n", "looks like a test summary"),
        ("    sys.stdout.write('Ran 3 tests in 0.001s')\n", "looks like a test summary"),
        ("    pytest.main = lambda *a: 0\n", "tampers with the test runner"),
        ("    setattr(unittest.TestCase, 'run', None)\n", "tampers with the test runner"),
        (
            "    monkeypatch.setattr('_pytest.runner.call_runtest_hook', None)\n",
            "tampers with the test runner",
        ),
        ("    os.environ['PYTEST_ADDOPTS'] = '-k nothing'\n", "tampers with the test runner"),
        (
            "    if 'PYTEST_CURRENT_TEST' in os.environ:\n        return [3, 4]\n",
            "tampers with the test runner",
        ),
        ("    import _pytest.runner\n", "tampers with the test runner"),
    ],
)
def test_tampering_content_is_rejected_in_source_code(
    added: str, rule: str, tmp_path: Path
) -> None:
    old = "import os, sys, atexit, unittest\nimport pytest\nfrom pytest import skip\n\n\n" + SOURCE
    new = edit(old, "    if n <= 0:\n", added + "    if n <= 0:\n")
    with pytest.raises(GuardError, match=rule) as info:
        check_guards(change("calc/lists.py", old, new), tmp_path, ALLOW)
    assert "calc/lists.py (line" in str(info.value)


@pytest.mark.parametrize(
    "text",
    [
        "import pytest\n\n\ndef pytest_runtest_makereport(item, call):\n    pass\n",
        "__test__ = False\n",
        "collect_ignore = ['tests/test_lists.py']\n",
        "print('== 1 failed, 3 passed in 0.10s ==')\n",
    ],
)
def test_a_new_conftest_that_tampers_is_rejected_even_when_tests_may_change(
    text: str, tmp_path: Path
) -> None:
    for policy in (
        GuardPolicy(),
        ALLOW,
    ):  # conftest.py is protected: allowing test edits does not lift it
        with pytest.raises(GuardError, match=r"conftest.py, a protected file"):
            check_guards(change("conftest.py", None, text), tmp_path, policy)
        with pytest.raises(GuardError, match=r"conftest.py, a protected file"):
            check_guards(change("pkg/sub/conftest.py", None, text), tmp_path, policy)
    # The content rules stand behind the protection: the same text in a test helper, with test edits
    # allowed.
    with pytest.raises(GuardError, match=r"tampers with the test runner|looks like a test summary"):
        check_guards(change("tests/helpers.py", None, text), tmp_path, ALLOW)


def test_code_that_already_exits_may_be_edited(tmp_path: Path) -> None:
    old = "import sys\n\n\ndef main():\n    x = 1\n    sys.exit(x)\n"
    check_guards(change("tool/cli.py", old, edit(old, "x = 1", "x = 2")), tmp_path, GuardPolicy())


def test_deleting_assertions_is_rejected_even_with_test_edits_allowed(tmp_path: Path) -> None:
    fewer = edit(TEST_FILE, "    assert last_n([5, 6], 1) == [6]\n", "    pass\n")
    with pytest.raises(GuardError, match=r"removes 1 assertion\(s\) of tests/test_lists.py"):
        check_guards(change("tests/test_lists.py", TEST_FILE, fewer), tmp_path, ALLOW)
    with pytest.raises(GuardError, match=r"deletes the file, and with it 2 assertion"):
        check_guards(change("tests/test_lists.py", TEST_FILE, None), tmp_path, ALLOW)
    trivial = edit(TEST_FILE, "assert last_n([5, 6], 1) == [6]", "assert True")
    with pytest.raises(GuardError, match=r"always passes"):
        check_guards(change("tests/test_lists.py", TEST_FILE, trivial), tmp_path, ALLOW)


def test_removing_a_unittest_assert_call_counts(tmp_path: Path) -> None:
    old = (
        "class T(unittest.TestCase):\n    def test_a(self):\n        self.assertEqual(f(), 1)\n  "
        "      g()\n"
    )
    with pytest.raises(GuardError, match=r"removes 1 assertion"):
        check_guards(
            change("tests/test_t.py", old, edit(old, "        self.assertEqual(f(), 1)\n", "")),
            tmp_path,
            ALLOW,
        )


# --- protected files: test configuration, CI, dependency pins ---------------------


@pytest.mark.parametrize(
    "path",
    [
        "pytest.ini",
        "tox.ini",
        "noxfile.py",
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        "requirements.txt",
        "requirements-dev.txt",
        "poetry.lock",
        "setup.py",
        ".pre-commit-config.yaml",
    ],
)
def test_protected_files_are_rejected_even_with_test_edits_allowed(
    path: str, tmp_path: Path
) -> None:
    with pytest.raises(GuardError, match=f"edits {path}, a protected file"):
        check_guards(change(path, "a = 1\n", "a = 2\n"), tmp_path, ALLOW)


PYPROJECT = """\
[project]
name = "calc"
version = "0.1.0"
dependencies = ["attrs>=22"]

[tool.pytest.ini_options]
addopts = "-q"
"""


@pytest.mark.parametrize(
    "old, new, refused",
    [
        ('addopts = "-q"', 'addopts = "-q -k not_last_n"', "[tool.pytest]"),
        ('["attrs>=22"]', '["attrs==21.1"]', "[project.dependencies]"),
        ('version = "0.1.0"', 'version = "0.1.1"', None),
        ("[project]", "[project\n", "does not parse"),
    ],
)
def test_pyproject_test_and_dependency_sections(
    old: str, new: str, refused: Optional[str], tmp_path: Path
) -> None:
    applied = change("pyproject.toml", PYPROJECT, edit(PYPROJECT, old, new))
    if refused is None:
        check_guards(applied, tmp_path, ALLOW)
        return
    with pytest.raises(GuardError, match=r"pyproject.toml") as info:
        check_guards(applied, tmp_path, ALLOW)
    assert refused in str(info.value)


def test_setup_cfg_test_sections(tmp_path: Path) -> None:
    cfg = (
        "[metadata]\nname = calc\n\n[options]\ninstall_requires = "
        "attrs\n\n[tool:pytest]\naddopts = -q\n"
    )
    check_guards(
        change("setup.cfg", cfg, edit(cfg, "name = calc", "name = calc2")), tmp_path, ALLOW
    )
    with pytest.raises(GuardError, match=r"\[tool:pytest\]"):
        check_guards(
            change("setup.cfg", cfg, edit(cfg, "addopts = -q", "addopts = -q -x")), tmp_path, ALLOW
        )
    with pytest.raises(GuardError, match=r"install_requires"):
        check_guards(change("setup.cfg", cfg, edit(cfg, "= attrs", "= attrs<20")), tmp_path, ALLOW)


def test_settings_and_guard_policy_protect_the_same_files() -> None:
    assert tuple(Settings().protected_globs) == GuardPolicy().protected_globs


# --- confinement: new files, scratch files, binary ---------------------------------


MODULE = "from calc.lists import last_n\n"


def test_a_scratch_file_next_to_the_fix_is_not_part_of_the_patch(tmp_path: Path) -> None:
    root = project(tmp_path, {"calc/__init__.py": MODULE, "calc/lists.py": SOURCE})
    fix = FileChange("calc/lists.py", SOURCE, edit(SOURCE, "-n - 1:", "-n:"), "exact", 1.0)
    scratch = FileChange("calc/scratch_notes.py", None, "print('trying things')\n", "new", 1.0)
    note = FileChange("calc/NOTES.md", None, "the bug is an off-by-one\n", "new", 1.0)
    screened = check_guards(AppliedPatch((fix, scratch, note), "unified_diff"), root, GuardPolicy())
    assert [c.path for c in screened.applied.changes] == ["calc/lists.py"]
    assert screened.dropped == ("calc/scratch_notes.py", "calc/NOTES.md")
    assert "scratch" not in screened.applied.diff()


def test_only_scratch_files_is_a_structural_error(tmp_path: Path) -> None:
    root = project(tmp_path, {"calc/__init__.py": MODULE, "calc/lists.py": SOURCE})
    with pytest.raises(PatchError, match=r"only creates files that nothing refers to"):
        check_guards(change("calc/try.py", None, "x = 1\n"), root, GuardPolicy())


def test_a_new_module_the_fix_imports_stays_in_a_source_directory(tmp_path: Path) -> None:
    root = project(tmp_path, {"calc/__init__.py": MODULE, "calc/lists.py": SOURCE})
    fixed = "from calc.slicing import tail\n\n\n" + edit(SOURCE, "items[-n - 1:]", "tail(items, n)")
    helper = FileChange(
        "calc/slicing.py", None, "def tail(items, n):\n    return items[-n:]\n", "new", 1.0
    )
    fix = FileChange("calc/lists.py", SOURCE, fixed, "exact", 1.0)
    screened = check_guards(AppliedPatch((fix, helper), "unified_diff"), root, GuardPolicy())
    assert [c.path for c in screened.applied.changes] == ["calc/lists.py", "calc/slicing.py"]
    with pytest.raises(
        GuardError, match=r"creates calc/slicing.py, outside the source directories"
    ):
        check_guards(
            AppliedPatch((fix, helper), "unified_diff"), root, GuardPolicy(source_dirs=("lib",))
        )


def test_a_new_module_outside_the_source_directories_is_rejected(tmp_path: Path) -> None:
    root = project(
        tmp_path,
        {"calc/__init__.py": MODULE, "calc/lists.py": SOURCE, "tests/test_lists.py": TEST_FILE},
    )
    fixed = "from slicing import tail\n\n\n" + SOURCE
    helper = FileChange(
        "slicing.py", None, "def tail(items, n):\n    return items[-n:]\n", "new", 1.0
    )
    fix = FileChange("calc/lists.py", SOURCE, fixed, "exact", 1.0)
    with pytest.raises(
        GuardError, match=r"creates slicing.py, outside the project's source directories"
    ):
        check_guards(AppliedPatch((fix, helper), "unified_diff"), root, GuardPolicy())
    hidden = FileChange(".cache/slicing.py", None, "x = 1\n", "new", 1.0)
    fix2 = FileChange("calc/lists.py", SOURCE, "from slicing import x\n" + SOURCE, "exact", 1.0)
    with pytest.raises(GuardError, match=r"in a hidden directory"):
        check_guards(AppliedPatch((fix2, hidden), "unified_diff"), root, GuardPolicy())


@pytest.mark.parametrize("path", ["calc/_speedups.so", "calc/lists.pyc", "docs/logo.png"])
def test_binary_files_are_rejected_by_suffix(path: str, tmp_path: Path) -> None:
    with pytest.raises(GuardError, match=r"a binary file"):
        check_guards(change(path, "abc\n", "abd\n"), tmp_path, GuardPolicy())


def test_size_limits_still_hold(tmp_path: Path) -> None:
    big = SOURCE + "".join(f"X{i} = {i}\n" for i in range(30))
    with pytest.raises(GuardError, match=r"changes 30 lines"):
        check_guards(
            change("calc/lists.py", SOURCE, big), tmp_path, GuardPolicy(max_changed_lines=20)
        )


# --- suspected overfitting: flagged, not rejected ----------------------------------


def test_special_casing_the_tests_inputs_is_flagged(tmp_path: Path) -> None:
    root = project(tmp_path, {"tests/test_lists.py": TEST_FILE})
    literals = assertion_literals(root, ["tests/test_lists.py::test_last_n"])
    assert {
        "[1, 2, 3, 4]",
        "[3, 4]",
    } <= literals and "2" not in literals  # 2 is too common to mean much
    cheat = edit(
        SOURCE,
        "    if n <= 0:",
        "    if items == [1, 2, 3, 4] and n == 2:\n        return [3, 4]\n    if n <= 0:",
    )
    applied = change("calc/lists.py", SOURCE, cheat)
    check_guards(applied, tmp_path, GuardPolicy())  # not rejected
    flags = tuple(str(flag) for flag in overfitting_flags(applied, literals))
    assert flags == (
        "suspected_overfitting: calc/lists.py:2 `items == [1, 2, 3, 4]` compares with "
        "[1, 2, 3, 4] from the failing test",
    )
    honest = change("calc/lists.py", SOURCE, edit(SOURCE, "-n - 1:", "-n:"))
    assert overfitting_flags(honest, literals) == ()


ORDINAL_TEST = """\
    import pytest

    from ordinals import ordinal

    CASES = [(1, "1st"), (11, "11th"), (13, "13th"), (113, "113th"), (-13, "-13th"), (22, "22nd")]


    @pytest.mark.parametrize("number, expected", CASES)
    def test_ordinal(number, expected):
        assert ordinal(number) == expected
    """
ORDINAL = """\
def ordinal(number):
    suffix = "th"
    if abs(number) % 100 in (11, 12):
        return str(number) + suffix
    return str(number) + {1: "st", 2: "nd", 3: "rd"}.get(abs(number) % 10, "th")
"""
ORDINAL_FAILING = [
    "tests/test_ordinal.py::test_ordinal[13-13th]",
    "tests/test_ordinal.py::test_ordinal[113-113th]",
    "tests/test_ordinal.py::test_ordinal[-13--13th]",
]


def test_parametrize_through_a_module_constant_and_the_ids_give_the_tests_values(
    tmp_path: Path,
) -> None:
    root = project(tmp_path, {"tests/test_ordinal.py": ORDINAL_TEST})
    literals = assertion_literals(root, ORDINAL_FAILING)
    assert {
        "13",
        "113",
        "-13",
        "'13th'",
        "'-13th'",
        "11",
        "'22nd'",
    } <= literals  # CASES, named by the decorator
    assert {"13", "'13th'"} <= assertion_literals(
        tmp_path, ["tests/gone.py::test_ordinal[13-13th]"]
    )  # the id alone


def test_recognising_the_tests_own_values_and_returning_a_constant_is_refused(
    tmp_path: Path,
) -> None:
    root = project(tmp_path, {"tests/test_ordinal.py": ORDINAL_TEST})
    literals = assertion_literals(root, ORDINAL_FAILING)
    cheat = edit(
        ORDINAL,
        '    suffix = "th"\n',
        '    suffix = "th"\n    if abs(number) in (13, 113):\n        return str(number) + "th"\n',
    )
    # returns a computed value: only flagged
    check_hardcoded(change("ordinals.py", ORDINAL, cheat), literals)
    assert overfitting_flags(change("ordinals.py", ORDINAL, cheat), literals)
    for cheat in (
        edit(
            ORDINAL,
            '    suffix = "th"\n',
            '    if number in (13, 113):\n        return "th"\n    suffix = "th"\n',
        ),
        edit(
            ORDINAL,
            '    suffix = "th"\n',
            '    if number == 13 or number == 113:\n        return None\n    suffix = "th"\n',
        ),
    ):
        with pytest.raises(GuardError, match="hard-codes the failing test's answer"):
            check_hardcoded(
                change("ordinals.py", ORDINAL, cheat),
                literals,
                inputs=failing_inputs(ORDINAL_FAILING),
            )
    stored = ORDINAL.replace(
        "    if abs(number) % 100 in (11, 12):", "    n = abs(number) % 100\n    if n in (11, 12):"
    )
    right = stored.replace(
        "in (11, 12):", "in (11, 12, 13):\n        return str(number) + 'th'\n    if n in (11, 12):"
    )
    check_hardcoded(
        change("ordinals.py", stored, right), literals, inputs=failing_inputs(ORDINAL_FAILING)
    )  # 11, 12 pass


MONTHS_TEST = """\
    from months import max_days_in_month


    def test_april():
        assert max_days_in_month(2021, 4) == 30


    def test_february_leap():
        assert max_days_in_month(2020, 2) == 29
    """
MONTHS = """\
def max_days_in_month(year, month):
    if month in (1, 3, 5, 7, 8, 10, 12):
        return 31
    if month in (4, 6, 9, 11):
        return 31
    if month == 2 and year % 4 == 0:
        return 29
    return 28
"""


def test_the_projects_own_branches_are_neither_refused_nor_flagged(tmp_path: Path) -> None:
    """Seen on a held-out bench: the hard-coded-answer rule refused the project's own correct
    line, so that bug could not be fixed by anyone. A branch whose condition the file already had
    returns what the fix says (``return 30`` for April); the same answer behind a new condition
    is still refused, and a new comparison with the test's input still flagged."""
    root = project(tmp_path, {"tests/test_months.py": MONTHS_TEST})
    literals = assertion_literals(
        root, ["tests/test_months.py::test_april", "tests/test_months.py::test_february_leap"]
    )
    assert {"30", "2021"} <= literals
    right = change(
        "months.py", MONTHS, edit(MONTHS, "11):\n        return 31", "11):\n        return 30")
    )
    check_hardcoded(right, literals, inputs=failing_inputs(["tests/test_months.py::test_april"]))
    assert overfitting_flags(right, literals) == ()
    whole = change(  # the function rewritten whole, its branches in another order
        "months.py",
        MONTHS,
        MONTHS.replace(
            "    if month in (1, 3, 5, 7, 8, 10, 12):\n        return 31\n"
            "    if month in (4, 6, 9, 11):\n        return 31\n",
            "    if month in (4, 6, 9, 11):\n        return 30\n"
            "    if month in (1, 3, 5, 7, 8, 10, 12):\n        return 31\n",
        ),
    )
    check_hardcoded(whole, literals)
    assert overfitting_flags(whole, literals) == ()
    cheat = change(
        "months.py",
        MONTHS,
        edit(
            MONTHS,
            "    if month in (1,",
            "    if year == 2021 and month == 4:\n        return 30\n    if month in (1,",
        ),
    )
    with pytest.raises(GuardError, match="hard-codes the failing test's answer"):
        check_hardcoded(cheat, literals)
    assert overfitting_flags(cheat, literals)


def test_inputs_spelled_as_strings_are_seen_through_int_and_abs(tmp_path: Path) -> None:
    strings = ORDINAL_TEST.replace(
        '(13, "13th"), (113, "113th"), (-13, "-13th")', '("13", "13th"), ("-113", "-113th")'
    )
    root = project(tmp_path, {"tests/test_ordinal.py": strings})
    failing = [
        "tests/test_ordinal.py::test_ordinal[-113--113th]",
        "tests/test_ordinal.py::test_ordinal[13-13th]",
    ]
    literals = assertion_literals(root, failing[:1])  # the test the context shows
    assert {"13", "113", "-113"} <= literals
    converts = ORDINAL.replace(
        '    suffix = "th"\n', '    number = abs(int(number))\n    suffix = "th"\n'
    )
    cheat = converts.replace(
        '    suffix = "th"\n',
        '    if number in (13, 113):\n        return "th"\n    suffix = "th"\n',
    )
    with pytest.raises(GuardError, match="hard-codes the failing test's answer"):
        check_hardcoded(
            change("ordinals.py", converts, cheat), literals, inputs=failing_inputs(failing)
        )


def test_the_right_fix_is_not_suspected_of_overfitting(tmp_path: Path) -> None:
    root = project(tmp_path, {"tests/test_ordinal.py": ORDINAL_TEST})
    literals = assertion_literals(root, ORDINAL_FAILING)
    right = change("ordinals.py", ORDINAL, ORDINAL.replace("in (11, 12)", "in (11, 12, 13)"))
    check_hardcoded(right, literals)
    assert (
        overfitting_flags(right, literals) == ()
    )  # a computed value compared, 11 was there already
    widened = "def f(x):\n    if x in (11, 12):\n        return 0\n    return x\n"
    assert (
        overfitting_flags(
            change("f.py", widened, widened.replace("(11, 12)", "(11, 12, 9)")), literals
        )
        == ()
    )
    assert "113" in str(
        overfitting_flags(
            change("f.py", widened, widened.replace("(11, 12)", "(11, 12, 113)")), literals
        )[0]
    )  # only the value the candidate added is named


def test_parametrized_inputs_count_and_existing_branches_do_not(tmp_path: Path) -> None:
    test = """\
        import pytest

        @pytest.mark.parametrize("word, expected", [("kayak", True), ("hello", False)])
        def test_palindrome(word, expected):
            assert is_palindrome(word) is expected
        """
    root = project(tmp_path, {"tests/test_words.py": test})
    literals = assertion_literals(root, ["tests/test_words.py::test_palindrome[kayak-True]"])
    assert "'kayak'" in literals
    old = (
        "def is_palindrome(w):\n    if w == 'kayak':\n        return True\n    return w == "
        "w[::-1][1:]\n"
    )
    new = old.replace("[1:]", "")
    assert (
        overfitting_flags(change("words.py", old, new), literals) == ()
    )  # the branch was there already
    added = old.replace(
        "    return w ==", "    if w in ('hello', 'x'):\n        return False\n    return w =="
    )
    assert str(overfitting_flags(change("words.py", old, added), literals)[0]).startswith(
        "suspected_overfitting: words.py:4 `w in ('hello', 'x')` compares with 'hello'"
    )


LEAP = """\
def days_in_feb(year):
    if (year % 400 == 0) or (year % 100 != 0) and (year % 4 == 1):
        return 29
    return 28
"""
LEAP_TEST = """\
from leap import days_in_feb


def test_leap_years():
    assert days_in_feb(2024) == 29
    assert days_in_feb(2100) + 100 == 128
"""


def test_a_branch_whose_condition_keeps_the_files_own_values_is_not_hard_coding(
    tmp_path: Path,
) -> None:
    """Seen in a new user's trial: the right fix of a leap-year condition (`% 4 == 1` to
    `== 0`) was refused, because a test asserts on `+ 100` and the condition compares with 100.
    The file's conditions already compared with every value the new one does; a branch that
    compares with the test's input (2024) is still refused."""
    root = project(tmp_path, {"tests/test_leap.py": LEAP_TEST})
    literals = assertion_literals(root, ["tests/test_leap.py::test_leap_years"])
    assert {"2024", "29", "100"} <= literals
    right = change("leap.py", LEAP, edit(LEAP, "% 4 == 1", "% 4 == 0"))
    check_hardcoded(right, literals)
    cheat = change(
        "leap.py",
        LEAP,
        edit(LEAP, "    return 28", "    if year == 2024:\n        return 29\n    return 28"),
    )
    with pytest.raises(GuardError, match="hard-codes the failing test's answer"):
        check_hardcoded(cheat, literals)
