"""repairloop.patch: answers in, new file texts out; guards; syntax check; signature.

Recorded answers live in ``fixtures/answers/<case>/`` (see its README): every
success case is applied to a real copy of its project and its ``diff()`` is
re-applied with ``git apply`` in a real repository; every error case must be
refused with a message naming the cause.
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List, Optional

import pytest
from answer_corpus import ANSWERS, CASES, judge, project, refusal, run
from conftest import git, init_repo

from repairloop.errors import GuardError, PatchError
from repairloop.patch import (
    AppliedPatch,
    FileChange,
    GuardPolicy,
    apply_answer,
    change_signature,
    check_guards,
    check_syntax,
    parse_answer,
)
from repairloop.types import CodeSlice, TestFiles

OK_CASES = [d for d in CASES if refusal(d) is None]
ERR_CASES = [d for d in CASES if refusal(d) is not None]


def _ids(cases: List[Path]) -> List[str]:
    return [d.name for d in cases]


def _project(case: Path, tmp_path: Path) -> Path:
    return project(case, tmp_path)


def _tree(root: Path) -> Dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.relative_to(root).parts
    }


def _change(applied: AppliedPatch, path: str) -> FileChange:
    return next(c for c in applied.changes if c.path == path)


# --- recorded answers -------------------------------------------------------------


def test_fixture_cases_were_found() -> None:
    assert len(OK_CASES) >= 20 and len(ERR_CASES) >= 8


@pytest.mark.parametrize("case", OK_CASES, ids=_ids(OK_CASES))
def test_recorded_answer_gives_expected_texts_without_writing(case: Path, tmp_path: Path) -> None:
    root = _project(case, tmp_path)
    before = _tree(root)
    applied, error = run(case, root)
    assert _tree(root) == before, "apply_answer must not write"
    assert applied is not None, f"refused: {error}"
    verdict = judge(case, tmp_path / "again")
    assert verdict.right, verdict.detail


@pytest.mark.parametrize("case", OK_CASES, ids=_ids(OK_CASES))
def test_recorded_answer_diff_applies_with_git(case: Path, tmp_path: Path) -> None:
    root = init_repo(_project(case, tmp_path))
    applied, error = run(case, root)
    assert applied is not None, f"refused: {error}"
    patch = tmp_path / "candidate.patch"
    patch.write_bytes(applied.diff().encode())
    git(root, "apply", "--check", str(patch))
    git(root, "apply", str(patch))
    for change in applied.changes:
        target = root / change.path
        if change.new_text is None:
            assert not target.exists()
        else:
            assert target.read_bytes().decode() == change.new_text


@pytest.mark.parametrize("case", ERR_CASES, ids=_ids(ERR_CASES))
def test_recorded_answer_is_refused_with_its_cause(case: Path, tmp_path: Path) -> None:
    root = _project(case, tmp_path)
    applied, error = run(case, root)
    assert error is not None, f"accepted: {applied.diff() if applied else ''}"
    for needle in refusal(case) or []:
        assert needle in str(error)
    assert error.hint


# --- parsing -----------------------------------------------------------------------


def test_parse_answer_kinds_and_formats() -> None:
    diff = (ANSWERS / "diff_multiple_files" / "answer.md").read_text()
    edits = parse_answer(diff)
    assert [(e.path, e.kind, e.format) for e in edits] == [
        ("calc.py", "modify", "unified_diff"),
        ("text.py", "modify", "unified_diff"),
    ]
    created = parse_answer((ANSWERS / "sr_new_file" / "answer.md").read_text())
    assert [(e.path, e.kind, e.format) for e in created] == [
        ("src/stats.py", "create", "search_replace")
    ]


def test_no_patch_error_has_a_hint() -> None:
    with pytest.raises(PatchError, match="no patch found in the answer") as info:
        parse_answer("Sorry, I cannot see the bug.")
    assert "SEARCH" in info.value.hint and "---" in info.value.hint


def test_hunk_without_changes_is_no_patch() -> None:
    with pytest.raises(PatchError, match="no patch found"):
        parse_answer("--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n")


def test_counts_too_small_are_recounted_not_truncated() -> None:
    edits = parse_answer((ANSWERS / "diff_counts_too_small" / "answer.md").read_text())
    assert [tag for tag, _ in edits[0].hunks[0].lines] == [" ", "-", "+"]


def test_crlf_answer_text(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    answer = (
        "```diff\n--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return "
        "a - b\n+    return a + b\n```\n"
    )
    applied = apply_answer(answer.replace("\n", "\r\n"), tmp_path)
    assert applied.changes[0].path == "calc.py"
    assert applied.changes[0].new_text == "def add(a, b):\n    return a + b\n"


# --- line endings and final newline ------------------------------------------------

_ADD_FIX = """--- a/calc.py
+++ b/calc.py
@@ -1,3 +1,3 @@
 def add(a, b):
-    return a - b
+    return a + b
 # end
"""


def test_crlf_file_stays_crlf_and_git_applies_the_diff(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "calc.py").write_bytes(b"def add(a, b):\r\n    return a - b\r\n# end\r\n")
    init_repo(root)
    applied = apply_answer(_ADD_FIX, root)
    assert applied.changes[0].new_text == "def add(a, b):\r\n    return a + b\r\n# end\r\n"
    patch = tmp_path / "c.patch"
    patch.write_bytes(applied.diff().encode())
    git(root, "apply", str(patch))
    assert (root / "calc.py").read_bytes() == b"def add(a, b):\r\n    return a + b\r\n# end\r\n"


def test_missing_final_newline_is_preserved(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "calc.py").write_bytes(b"def add(a, b):\n    return a - b\n# end")
    init_repo(root)
    applied = apply_answer(_ADD_FIX, root)
    assert applied.changes[0].new_text == "def add(a, b):\n    return a + b\n# end"
    assert "\\ No newline at end of file" in applied.diff()
    patch = tmp_path / "c.patch"
    patch.write_bytes(applied.diff().encode())
    git(root, "apply", str(patch))
    assert (root / "calc.py").read_bytes() == b"def add(a, b):\n    return a + b\n# end"


def test_patch_may_add_the_final_newline_explicitly(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_bytes(b"def add(a, b):\n    return a - b")
    answer = (
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n"
        "-    return a - b\n\\ No newline at end of file\n+    return a + b\n"
    )
    assert (
        apply_answer(answer, tmp_path).changes[0].new_text == "def add(a, b):\n    return a + b\n"
    )


def test_non_utf8_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_bytes(b"x = '\xff\xfe'\n")
    with pytest.raises(PatchError, match="binary or non-UTF-8 file"):
        apply_answer(_ADD_FIX, tmp_path)


# --- locating ----------------------------------------------------------------------


def test_fuzzy_threshold_is_a_parameter(tmp_path: Path) -> None:
    case = ANSWERS / "diff_fuzzy_context_kept"
    root = _project(case, tmp_path)
    answer = (case / "answer.md").read_text()
    assert _change(apply_answer(answer, root), "calc.py").score >= 0.85
    with pytest.raises(PatchError, match="closest text in the file is at line 12"):
        apply_answer(answer, root, fuzzy_threshold=0.99)


def test_line_to_remove_must_really_be_there(tmp_path: Path) -> None:
    root = _project(ANSWERS / "_base", tmp_path)
    answer = """--- a/calc.py
+++ b/calc.py
@@ -12,5 +12,5 @@
 def mean(values):
     total = 0
     for v in values:
         total += v
-    return sum(values) // count
+    return total / len(values)
"""
    with pytest.raises(PatchError) as info:
        apply_answer(answer, root)
    assert "hunk 1 of calc.py does not match" in str(info.value)
    assert "line 12" in str(info.value) and "to be removed differs" in str(info.value)


def test_fuzzy_in_a_long_file_finds_the_block(tmp_path: Path) -> None:
    lines = [f"value_{i} = compute({i}, scale={i % 7})" for i in range(2000)]
    (tmp_path / "big.py").write_text("\n".join(lines) + "\n")
    answer = (
        "--- a/big.py\n+++ b/big.py\n@@ -1000,3 +1000,3 @@\n"
        " value_999 = compute(999, scale=5)  # tuned\n"
        "-value_1000 = compute(1000, scale=6)\n"
        "+value_1000 = compute(1000, scale=0)\n"
        " value_1001 = compute(1001, scale=0)\n"
    )
    change = apply_answer(answer, tmp_path).changes[0]
    assert change.match == "fuzzy"
    new = (change.new_text or "").splitlines()
    assert new[1000] == "value_1000 = compute(1000, scale=0)"
    assert new[999] == "value_999 = compute(999, scale=5)"  # the file's context line kept


def test_two_hunks_shift_the_second_hint(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("a = 1\nb = 2\nc = 3\n" + "x = 0\n" * 3 + "d = 4\nc = 3\n")
    answer = (
        "--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,4 @@\n a = 1\n+a1 = 1\n+a2 = 2\n b = 2\n@@ -8,1 "
        "+10,1 @@\n-c = 3\n+c = 30\n"
    )
    new = apply_answer(answer, tmp_path).changes[0].new_text
    assert new == "a = 1\na1 = 1\na2 = 2\nb = 2\nc = 3\n" + "x = 0\n" * 3 + "d = 4\nc = 30\n"


# --- guards ------------------------------------------------------------------------


def _one(path: str, old: Optional[str] = "x = 1\n", new: Optional[str] = "x = 2\n") -> AppliedPatch:
    return AppliedPatch((FileChange(path, old, new, "exact", 1.0),), "unified_diff")


def test_guards_pass_a_normal_candidate(tmp_path: Path) -> None:
    check_guards(_one("src/calc.py"), tmp_path, GuardPolicy())
    check_guards(_one("src/../calc.py"), tmp_path, GuardPolicy())


@pytest.mark.parametrize(
    "path, reason",
    [
        ("/etc/passwd", "an absolute path"),
        ("C:/Windows/win.ini", "an absolute path"),
        ("../x.py", "outside the project root"),
        ("src/../../x.py", "outside the project root"),
        (".git/config", "inside .git/"),
        ("vendor/lib/.git/HEAD", "inside .git/"),
        (".repairloop/runs/1/journal.jsonl", "inside .repairloop/"),
        ("", "not a file path"),
        (".", "not a file path"),
    ],
)
def test_guards_refuse_paths(path: str, reason: str, tmp_path: Path) -> None:
    with pytest.raises(GuardError, match=reason) as info:
        check_guards(_one(path), tmp_path, GuardPolicy())
    assert path in str(info.value)


def test_guard_refuses_symlink_out_of_root(tmp_path: Path) -> None:
    root, outside = tmp_path / "project", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "link").symlink_to(outside, target_is_directory=True)
    with pytest.raises(GuardError, match="symbolic link"):
        check_guards(_one("link/evil.py", old=None), root, GuardPolicy())
    answer = "--- /dev/null\n+++ b/link/evil.py\n@@ -0,0 +1 @@\n+x = 1\n"
    with pytest.raises(GuardError, match="symbolic link"):
        apply_answer(answer, root)


def test_apply_refuses_to_read_outside_root(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (tmp_path / "secret.py").write_text("x = 1\n")
    answer = "--- a/../secret.py\n+++ b/../secret.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
    with pytest.raises(GuardError, match="outside the project root"):
        apply_answer(answer, root)


TEST_PATHS = [
    ("tests/test_calc.py", "tests/**"),
    ("tests/helpers/data.py", "tests/**"),
    ("test_calc.py", "test_*.py"),
    ("pkg/test_calc.py", "**/test_*.py"),
    ("calc_test.py", "*_test.py"),
    ("pkg/sub/calc_test.py", "**/*_test.py"),
]


@pytest.mark.parametrize("path", ["conftest.py", "pkg/conftest.py"])
def test_conftest_is_a_test_file_and_protected_even_when_tests_may_change(
    path: str, tmp_path: Path
) -> None:
    # pytest loads it before any test: a candidate may never write it
    assert TestFiles().is_test(path)
    for policy in (GuardPolicy(), GuardPolicy(allow_test_edits=True)):
        with pytest.raises(GuardError, match=f"edits {path}, a protected file"):
            check_guards(_one(path), tmp_path, policy)


@pytest.mark.parametrize("path, glob", TEST_PATHS)
def test_test_files_by_each_glob(path: str, glob: str, tmp_path: Path) -> None:
    assert TestFiles((glob,)).is_test(path)
    with pytest.raises(GuardError) as info:
        check_guards(_one(path), tmp_path, GuardPolicy())
    assert f"the candidate edits {path}, a test file" in str(info.value)
    assert "tests are the oracle" in str(info.value)
    check_guards(_one(path), tmp_path, GuardPolicy(allow_test_edits=True))


@pytest.mark.parametrize(
    "path", ["calc.py", "pkg/testing.py", "contest.py", "src/latest.py", "attest.py"]
)
def test_non_test_files(path: str) -> None:
    assert not GuardPolicy().test_files.is_test(path)


def test_guard_refuses_binary(tmp_path: Path) -> None:
    with pytest.raises(GuardError, match="binary file"):
        check_guards(_one("data.py", new="x = '\x00'\n"), tmp_path, GuardPolicy())


def test_guard_size_limits(tmp_path: Path) -> None:
    two = AppliedPatch(
        (
            FileChange("a.py", "x\n", "y\n", "exact", 1.0),
            FileChange("b.py", "x\n", "y\n", "exact", 1.0),
        ),
        "unified_diff",
    )
    with pytest.raises(GuardError, match="touches 2 files, more than the 1 allowed"):
        check_guards(two, tmp_path, GuardPolicy(max_files=1))
    with pytest.raises(GuardError, match=r"changes 4 lines .* more than the 3 allowed"):
        check_guards(two, tmp_path, GuardPolicy(max_changed_lines=3))
    with pytest.raises(GuardError, match=r"makes a.py 2 bytes, more than the 1 allowed"):
        check_guards(two, tmp_path, GuardPolicy(max_file_bytes=1))
    check_guards(two, tmp_path, GuardPolicy(max_files=2, max_changed_lines=4, max_file_bytes=2))


def test_changed_lines_counts_added_and_removed(tmp_path: Path) -> None:
    root = _project(ANSWERS / "sr_multiple", tmp_path)
    applied = apply_answer((ANSWERS / "sr_multiple" / "answer.md").read_text(), root)
    assert applied.changed_lines == 6  # three lines replaced, each one removed + one added


# --- syntax ------------------------------------------------------------------------


def test_check_syntax_names_path_line_and_text() -> None:
    broken = _one("pkg/calc.py", new="def add(a, b):\n    return a +\n")
    with pytest.raises(PatchError) as info:
        check_syntax(broken)
    message = str(info.value)
    assert message.startswith("pkg/calc.py:2: SyntaxError: ")
    assert "return a +" in message


def test_check_syntax_indentation_error() -> None:
    with pytest.raises(PatchError, match=r"^m\.py:2: IndentationError: "):
        check_syntax(_one("m.py", new="def f():\nreturn 1\n"))


def test_check_syntax_passes_good_deleted_and_non_python() -> None:
    check_syntax(_one("m.py", new="def f():\n    return '\\d'\n"))
    check_syntax(_one("notes.txt", new="def f(:\n"))
    check_syntax(
        AppliedPatch((FileChange("m.py", "x = 1\n", None, "delete", 1.0),), "unified_diff")
    )


# --- change signature --------------------------------------------------------------


def test_signature_keeps_only_changed_lines_tagged_with_file() -> None:
    diff = (
        "diff --git a/src/calc.py b/src/calc.py\n--- a/src/calc.py\n+++ b/src/calc.py\n"
        "@@ -3,3 +3,3 @@ def add(a, b):\n context\n-    return  a - b\n+\treturn a + b\n"
        "--- a/old.py\n+++ /dev/null\n@@ -1 +0,0 @@\n--- sql comment\n"
    )
    assert change_signature(diff) == (
        "src/calc.py:-return a - b\nsrc/calc.py:+return a + b\nold.py:--- sql comment"
    )


def test_signature_ignores_context_size_and_position(tmp_path: Path) -> None:
    one = "--- a/m.py\n+++ b/m.py\n@@ -10,1 +10,1 @@\n-x = 1\n+x = 2\n"
    three = "--- m.py\n+++ m.py\n@@ -5,3 +5,3 @@\n a = 0\n-x = 1\n+x  =  2\n b = 0\n"
    assert change_signature(one) == change_signature(three) == "m.py:-x = 1\nm.py:+x = 2"
    assert change_signature("") == ""


def test_search_quoted_without_class_indentation_keeps_the_file_depth(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(
        "class Calc:\n    def add(self, a, b):\n        return a - b\n"
    )
    answer = (
        "calc.py\n<<<<<<< SEARCH\ndef add(self, a, b):\n    return a - b\n=======\n"
        "def add(self, a, b):\n    total = a + b\n    return total\n>>>>>>> REPLACE\n"
    )
    change = apply_answer(answer, tmp_path).changes[0]
    assert change.match == "whitespace"
    assert change.new_text == (
        "class Calc:\n    def add(self, a, b):\n        total = a + b\n        return total\n"
    )


def test_search_with_extra_indentation_is_dedented(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    answer = (
        "calc.py\n<<<<<<< SEARCH\n    def add(a, b):\n        return a - b\n=======\n"
        "    def add(a, b):\n        return a + b\n>>>>>>> REPLACE\n"
    )
    assert (
        apply_answer(answer, tmp_path).changes[0].new_text == "def add(a, b):\n    return a + b\n"
    )


def test_fuzzy_search_with_equal_candidates_is_ambiguous(tmp_path: Path) -> None:
    root = _project(ANSWERS / "sr_ambiguous", tmp_path)
    answer = (
        "handlers.py\n<<<<<<< SEARCH\n    if event is None:  # check\n        return None\n"
        "    return event.value\n=======\n    if event is None:  # check\n        return {}\n"
        "    return event.value\n>>>>>>> REPLACE\n"
    )
    with pytest.raises(PatchError, match="matches 3 places"):
        apply_answer(answer, root)


def test_empty_files_created_and_deleted_through_git(tmp_path: Path) -> None:
    root = tmp_path / "p"
    root.mkdir()
    (root / "gone.py").write_text("")
    init_repo(root)
    applied = AppliedPatch(
        (
            FileChange("new.py", None, "", "new", 1.0),
            FileChange("gone.py", "", None, "delete", 1.0),
        ),
        "unified_diff",
    )
    patch = tmp_path / "c.patch"
    patch.write_text(applied.diff())
    git(root, "apply", str(patch))
    assert (root / "new.py").read_text() == "" and not (root / "gone.py").exists()


def test_three_character_block_markers_open_and_close_a_block() -> None:
    from repairloop.patch.blocks import parse_blocks

    edits = parse_blocks(
        "calc.py\n<<< SEARCH\n    return a - b\n=======\n    return a + b\n>>> REPLACE\n"
    )
    assert [e.path for e in edits] == ["calc.py"] and len(edits[0].hunks) == 1


HUNK = "@@ -4,2 +4,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"


def test_a_hunk_with_no_file_header_belongs_to_the_one_file_shown(tmp_path: Path) -> None:
    """A hunk with no header is the one shown file's; with two files shown it stays refused."""
    root = project(ANSWERS / "sr_single", tmp_path)
    one = (CodeSlice("calc.py", 4, 5, "add", "def add(a, b):\n    return a - b\n"),)
    test = CodeSlice("tests/test_calc.py", 1, 2, "test_add", "", read_only=True)
    applied = apply_answer("```diff\n" + HUNK + "```\n", root, shown=one + (test,))
    assert "return a + b" in applied.changes[0].new_text and applied.changes[0].path == "calc.py"
    two = one + (CodeSlice("text.py", 1, 2, "f", ""),)
    with pytest.raises(PatchError, match="before any file header"):
        apply_answer(HUNK, root, shown=two)


def test_a_plus_plus_plus_header_alone_names_the_file(tmp_path: Path) -> None:
    root = project(ANSWERS / "sr_single", tmp_path)
    applied = apply_answer("+++ b/calc.py\n" + HUNK, root)
    assert applied.changes[0].path == "calc.py" and "return a + b" in applied.changes[0].new_text


def test_an_apply_patch_answer_adds_updates_and_deletes_and_refuses_a_rename(
    tmp_path: Path,
) -> None:
    root = project(ANSWERS / "sr_single", tmp_path)
    applied = apply_answer(
        "*** Begin Patch\n*** Add File: notes.py\n+TEXT = 1\n*** Delete File: text.py\n"
        "*** Update File: calc.py\n@@\n-    return a - b\n+    return a + b\n\n*** End Patch\n",
        root,
    )
    by_path = {c.path: c for c in applied.changes}
    assert by_path["notes.py"].new_text == "TEXT = 1\n" and by_path["text.py"].new_text is None
    assert "return a + b" in (by_path["calc.py"].new_text or "")
    with pytest.raises(PatchError, match=r"renames calc\.py"):
        apply_answer(
            "*** Begin Patch\n*** Update File: calc.py\n*** Move to: c.py\n@@\n-    return a - b\n"
            "+    return a + b\n*** End Patch\n",
            root,
        )
    with pytest.raises(PatchError, match="neither context"):
        apply_answer(
            "*** Begin Patch\n*** Update File: calc.py\n@@\n~    return a - b\n*** End Patch\n",
            root,
        )


def test_tool_calls_written_as_text_are_checked_strictly(tmp_path: Path) -> None:
    root = project(ANSWERS / "sr_single", tmp_path)
    whole = "def add(a, b):\n    return a + b\n"
    applied = apply_answer(
        "<write_to_file>\n<path>notes.py</path>\n<content>\nTEXT = 1\n</content>\n</write_to_file>",
        root,
    )
    assert applied.changes[0].new_text == "TEXT = 1\n"
    bare = (
        "<function=str_replace_editor>\n<parameter=command>\nview\n</parameter>\n"
        "<parameter=path>\ncalc.py\n</parameter>\n</function>\n"
        "<function=str_replace_editor>\n<parameter=path>\ncalc.py\n</parameter>\n"
        "<parameter=old_str>\n    return a - b\n</parameter>\n"
        "<parameter=new_str>\n    return a + b\n</parameter>\n</function>"
    )
    assert whole in (apply_answer(bare, root).changes[0].new_text or "")  # `view` is skipped
    with pytest.raises(PatchError, match="names no file"):
        apply_answer('<tool_call>{"name": "edit", "arguments": {"old_str": "a"}}</tool_call>', root)
    with pytest.raises(PatchError, match="neither old and new text nor"):
        apply_answer('<tool_call>{"name": "e", "arguments": {"path": "calc.py"}}</tool_call>', root)
    with pytest.raises(PatchError, match="neither JSON nor"):
        apply_answer("<tool_call>edit calc.py please</tool_call>", root)


def test_an_answers_indentation_is_read_in_its_own_unit_and_written_in_the_files() -> None:
    from repairloop.patch.indentstyle import in_file_style, indent_unit

    assert indent_unit(["def f():", "\tif x:", "\t\treturn 1"]) == "\t"
    assert indent_unit(["def f():", "  if x:", "    return 1"]) == "  "
    assert indent_unit(["x = 1", "y = 2"]) is None  # nothing indented: leave the lines alone
    tabs = ["class K:", "\tdef f(self):", "\t\treturn 1"]
    spaces = ["def f(self):", "    if x:", "        return (1,", "                2)"]
    assert in_file_style(spaces, tabs) == [
        "def f(self):",
        "\tif x:",
        "\t\treturn (1,",
        "\t\t\t\t2)",
    ]
    assert in_file_style(["def f():", "  return 1"], ["def g():", "    pass"]) == [
        "def f():",
        "    return 1",
    ]


def test_a_draft_then_a_final_edit_of_the_same_lines_applies_the_final_and_says_so(
    tmp_path: Path,
) -> None:
    root = project(ANSWERS / "two_diffs_same_lines", tmp_path)
    applied = apply_answer((ANSWERS / "two_diffs_same_lines" / "answer.md").read_text(), root)
    assert "return a + b" in (applied.changes[0].new_text or "")
    assert applied.set_aside == (
        "calc.py: an earlier change of the same lines (making `return b - a`) was set aside for "
        "the answer's last one (making `return a + b`)",
    )
