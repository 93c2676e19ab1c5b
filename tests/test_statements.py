"""Which top-level statements a candidate touches, and the guards that look only at those."""

from __future__ import annotations

import pytest

from repairloop.errors import GuardError
from repairloop.patch.changes import AppliedPatch, FileChange
from repairloop.patch.overfit import overfitting_flags
from repairloop.patch.statements import statement_delta
from repairloop.patch.tamper import check_tamper

OLD = """import sys


def helper():
    return 1


def buggy(x):
    return x - 1


def leave():
    sys.exit(0)
"""


def change(path: str, old, new) -> FileChange:
    return FileChange(path, old, new, "exact", 1.0)


def names(nodes) -> list:
    return [getattr(node, "name", type(node).__name__) for node in nodes]


def test_only_the_edited_function_counts_as_removed_and_added() -> None:
    delta = statement_delta(OLD, OLD.replace("x - 1", "x + 1"))
    assert names(delta.removed) == ["buggy"] and names(delta.added) == ["buggy"]
    assert delta.added[0].lineno == 8  # the node of the new tree, with its own position


def test_a_moved_function_is_not_a_change() -> None:
    moved = (
        OLD.replace("def helper():\n    return 1\n\n\n", "") + "\n\ndef helper():\n    return 1\n"
    )
    delta = statement_delta(OLD, moved)
    assert delta.removed == () and delta.added == ()


def test_created_deleted_and_unparsable_sides_have_no_statements() -> None:
    assert names(statement_delta(None, OLD).added) == ["Import", "helper", "buggy", "leave"]
    assert names(statement_delta(OLD, None).removed) == ["Import", "helper", "buggy", "leave"]
    broken = statement_delta("def f(:\n", OLD)
    assert broken.old_tree is None and len(broken.added) == 4


def test_an_existing_exit_elsewhere_does_not_block_a_fix_but_a_new_one_does() -> None:
    check_tamper(change("calc/m.py", OLD, OLD.replace("x - 1", "x + 1")))
    with pytest.raises(GuardError, match=r"adds `sys\.exit` to calc/m.py \(line 9\)"):
        check_tamper(change("calc/m.py", OLD, OLD.replace("return x - 1", "sys.exit(1)")))


def test_a_new_pytest_import_is_checked_against_untouched_statements() -> None:
    """`skip()` in an untouched function means nothing until the candidate imports pytest's skip."""
    old = "def skip():\n    pass\n\n\ndef check():\n    skip()\n"
    new = "from pytest import skip\n\n\ndef check():\n    skip()\n"
    with pytest.raises(GuardError, match="skip"):
        check_tamper(change("calc/m.py", old, new))


def test_a_fix_of_a_file_that_did_not_parse_is_checked_whole() -> None:
    check_tamper(change("calc/m.py", "def f(:\n    return 1\n", "def f():\n    return 1\n"))
    with pytest.raises(GuardError, match="ends the test process early"):
        check_tamper(
            change("calc/m.py", "def f(:\n    return 1\n", "import os\ndef f():\n    os._exit(0)\n")
        )


def test_overfitting_is_found_in_the_touched_function_only_once() -> None:
    old = "def last_n(items, n):\n    if n == 7:\n        return []\n    return items[-n - 1:]\n"
    new = (
        "def last_n(items, n):\n    if n == 7:\n        return []\n    if items == [1, 2, 3, "
        "4]:\n        return [3, 4]\n    return items[-n - 1:]\n"
    )

    flags = overfitting_flags(
        AppliedPatch((change("calc/lists.py", old, new),), "unified_diff"),
        frozenset({"[1, 2, 3, 4]", "7"}),
    )
    # `n == 7` was already there
    assert len(flags) == 1 and "calc/lists.py:4 `items == [1, 2, 3, 4]`" in str(flags[0])


def test_a_function_inserted_between_two_others_is_the_only_addition() -> None:
    new = OLD.replace("def buggy(x):", "def extra():\n    return 2\n\n\ndef buggy(x):")
    delta = statement_delta(OLD, new)
    assert delta.removed == () and names(delta.added) == ["extra"] and delta.added[0].lineno == 8


def test_a_line_added_after_a_gap_still_belongs_to_its_function() -> None:
    """An indented line after blank lines continues the function above: the part alone does not
    parse."""
    old = "def f():\n    return 1\n\n\nx = 2\n"
    new = "def f():\n    return 1\n\n    sys.exit(3)\n\nx = 2\n"
    delta = statement_delta(old, new)
    assert delta.parses and names(delta.removed) == ["f"] and names(delta.added) == ["f"]


def test_line_numbers_follow_the_compiler_not_str_splitlines() -> None:
    old = "x = 1  # page\x0cbreak\n\n\ndef f():\n    return 1\n"
    delta = statement_delta(old, old.replace("return 1", "return 2"))
    assert names(delta.added) == ["f"] and delta.added[0].lineno == 4
