"""Doctests (issue 14, item 1): a module collected for its doctests is source code, and the doctest
examples (their expected output above all) in its docstrings or in a collected text file are tests.

The project below is collected with ``--doctest-modules --doctest-glob=*.rst``,
as many libraries do; real pytest runs through ``repairloop.runner.run_tests``.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import Dict

import pytest

from repairloop.errors import GuardError
from repairloop.patch import AppliedPatch, FileChange, GuardPolicy, check_guards
from repairloop.runner import run_tests
from repairloop.types import TestFiles, TestReport

WORDS = '''\
"""Small word helpers."""


def count_words(text):
    """Count the words of ``text``.

    >>> count_words("a b  c")
    3
    """
    return len([w for w in text.split(" ") if w]) + 1


def title_case(text):
    """Upper-case the first letter of each word.

    >>> title_case("hello world")
    'Hello World'
    """
    return " ".join(w[:1].upper() + w[1:] for w in text.split(" "))
'''

README = """\
textkit
=======

>>> from textkit.words import count_words
>>> count_words("one two")
2
"""

DOCTEST_PROJECT: Dict[str, str] = {
    "pyproject.toml": """\
        [project]
        name = "textkit"
        version = "0.1.0"

        [tool.pytest.ini_options]
        addopts = "--doctest-modules --doctest-glob=*.rst"
    """,
    "textkit/__init__.py": "",
    "textkit/words.py": WORDS,
    "README.rst": README,
    "tests/test_words.py": """\
        from textkit.words import count_words, title_case


        def test_count_words():
            assert count_words("x y") == 2


        def test_title_case():
            assert title_case("ab cd") == "Ab Cd"
    """,
}
FIX = (
    '    return len([w for w in text.split(" ") if w]) + 1\n',
    '    return len([w for w in text.split(" ") if w])\n',
)


def write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> TestReport:
    root = write(tmp_path_factory.mktemp("doctests") / "textkit", DOCTEST_PROJECT)
    return run_tests(
        root, (sys.executable, "-m", "pytest", "-q"), pythonpath=[Path(".")], timeout=120
    )


@pytest.fixture
def policy(baseline: TestReport) -> GuardPolicy:
    return GuardPolicy(test_files=TestFiles().with_collected(baseline))


def change(path: str, old: str, new: str) -> AppliedPatch:
    return AppliedPatch((FileChange(path, old, new, "exact", 1.0),), "unified_diff")


def edit(text: str, old: str, new: str) -> str:
    assert old in text
    return text.replace(old, new, 1)


def test_a_module_collected_for_its_doctests_is_code_and_a_doctest_text_file_is_a_test(
    baseline: TestReport,
) -> None:
    files = TestFiles().with_collected(baseline)
    assert not files.is_test("textkit/words.py") and files.has_doctests("textkit/words.py")
    assert files.is_test("README.rst") and not files.has_doctests("README.rst")
    assert files.is_test("tests/test_words.py")
    assert files.doctests == {"textkit/words.py"}


def test_a_failing_doctest_says_what_it_expected_and_where(baseline: TestReport) -> None:
    failing = {r.test_id: r for r in baseline.failing}
    module = failing["textkit/words.py::textkit.words.count_words"]
    assert module.doctest == "module" and module.exc_type == "DocTestFailure"
    assert (
        'count_words("a b  c")' in module.message
        and "Expected:\n    3\nGot:\n    4" in module.message
    )
    assert [(f.path, f.line) for f in module.frames] == [
        ("textkit/words.py", 7)
    ]  # the example, not doctest.py
    text = failing["README.rst::README.rst"]
    assert text.doctest == "text" and [(f.path, f.line) for f in text.frames] == [("README.rst", 5)]


def test_a_fix_in_a_doctest_module_passes_the_guards(tmp_path: Path, policy: GuardPolicy) -> None:
    screened = check_guards(change("textkit/words.py", WORDS, edit(WORDS, *FIX)), tmp_path, policy)
    assert screened.test_edits == ()


@pytest.mark.parametrize(
    "new",
    [
        edit(
            WORDS,
            '    >>> count_words("a b  c")\n    3\n',
            '    >>> count_words("a b  c")\n    4\n',
        ),  # expected output
        edit(WORDS, '    >>> count_words("a b  c")\n    3\n', ""),  # the example deleted
        edit(
            WORDS,
            '    >>> title_case("hello world")',
            '    >>> title_case("hello world")  # doctest: +SKIP',
        ),
        edit(
            WORDS,
            '    3\n    """\n',
            "    3\n    \"\"\"\n    count_words.__doc__ = count_words.__doc__.replace('3', '4')\n",
        ),
        WORDS + "\nsetattr(count_words, '__doc__', '')\n",  # a docstring rewritten at import time
    ],
    ids=["expected-output", "deleted-example", "skip-directive", "doc-assigned", "setattr-doc"],
)
def test_a_candidate_that_changes_a_doctest_example_is_refused_unless_test_edits_are_allowed(
    tmp_path: Path, policy: GuardPolicy, new: str
) -> None:
    candidate = change("textkit/words.py", WORDS, new)
    with pytest.raises(GuardError, match=r"doctest examples of .* in textkit/words.py"):
        check_guards(candidate, tmp_path, policy)
    allowed = GuardPolicy(test_files=policy.test_files, allow_test_edits=True)
    screened = check_guards(candidate, tmp_path, allowed)
    assert screened.test_edits and all(
        e.startswith("textkit/words.py::") and e.endswith("(doctest)") for e in screened.test_edits
    )


def test_a_candidate_that_deletes_an_expected_line_of_a_doctest_text_file_is_refused(
    tmp_path: Path, policy: GuardPolicy
) -> None:
    candidate = change("README.rst", README, README.replace("2\n", ""))
    with pytest.raises(GuardError, match=r"README.rst, a test file"):
        check_guards(candidate, tmp_path, policy)
    screened = check_guards(
        candidate, tmp_path, GuardPolicy(test_files=policy.test_files, allow_test_edits=True)
    )
    assert screened.test_edits == ("README.rst",)


def test_the_offline_engine_mutates_a_module_collected_for_its_doctests(
    baseline: TestReport, tmp_path: Path
) -> None:
    from repairloop.types import read_sources

    root = write(tmp_path / "textkit", DOCTEST_PROJECT)
    sources = read_sources(root, TestFiles().with_collected(baseline).is_test)
    assert (
        "textkit/words.py" in sources
    )  # the engine's candidates come from these files (none before)


README_DELETED = (
    "--- a/README.rst\n+++ b/README.rst\n@@ -3,4 +3,3 @@\n \n"
    ' >>> from textkit.words import count_words\n >>> count_words("one two")\n-2\n'
)
RIGHT = """\
--- a/textkit/words.py
+++ b/textkit/words.py
@@ -9,3 +9,3 @@ def count_words(text):
     \"\"\"
-    return len([w for w in text.split(" ") if w]) + 1
+    return len([w for w in text.split(" ") if w])
"""


@pytest.mark.slow
def test_a_model_may_fix_a_doctest_module_but_not_delete_a_doctest_files_expected_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from conftest import init_repo
    from scripted_server import ScriptedServer

    from repairloop.cli import main

    project = init_repo(write(tmp_path / "textkit", DOCTEST_PROJECT))
    with ScriptedServer([("ok", README_DELETED), ("ok", README_DELETED), ("ok", RIGHT)]) as srv:
        code = main(
            [
                "run",
                str(project),
                "--model",
                "openai/scripted",
                "--api-base",
                srv.base_url,
                "--no-builtin",
                "--json",
                "--timeout",
                "120",
            ]
        )
    doc = json.loads(capsys.readouterr().out)
    first, second = doc["iterations"][:2]
    assert first["decision"] == "rejected" and "README.rst, a test file" in first["reason"]
    assert second["decision"] == "kept", second
    assert code == 0 and doc["outcome"] == "fixed"
    assert "+++ b/textkit/words.py" in doc["patch"] and "README.rst" not in doc["patch"]
    assert (project / "README.rst").read_text() == README  # the user's tree is never written
