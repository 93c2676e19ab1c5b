"""Canned test results of the fixture projects (``fixtures/projects/<case>``), for
``canned_runner.Canned``.

Each script gives what the bundled plugin reports for the fixture's real pytest run
(ids in the suite's order, exception types, messages and frames copied from one),
for the tree as it is: the failing test passes once the file holds the right fix.
"""

from __future__ import annotations

import re
from typing import Dict, Optional

from canned_runner import Canned, Fail, Tree

from repairloop.types import Frame

LAST_N = "tests/test_lists.py::test_last_n"
SLICE = re.compile(r"def last_n\(items, n\):.*?return (items\[[^\]\n]*\])", re.S)
# What last_n([1, 2, 3, 4], 2) returns with the slices the loop tests write (pytest's assertion
# shows it).
RETURNS = {"items[-n - 1:]": "[2, 3, 4]", "items[-n + 1:]": "[4]"}


def off_by_one(tree: Tree) -> Dict[str, Optional[Fail]]:
    """``fixtures/projects/off_by_one``: ``test_last_n`` fails until ``last_n`` returns
    ``items[-n:]``; a candidate that breaks ``calc/lists.py`` (no ``last_n`` left) fails the
    module's tests."""
    text = tree.read("calc/lists.py")
    found = SLICE.search(text)
    if found is None:
        broken = Fail(
            "ImportError",
            "cannot import name 'last_n' from 'calc'",
            (Frame("tests/test_lists.py", 1, "<module>"),),
            phase="collect",
        )
        return {
            "tests/test_lists.py": broken,
            "tests/test_numbers.py::test_mean": None,
            "tests/test_numbers.py::test_clamp": None,
        }
    body = found.group(1)
    got = RETURNS.get(body, f"last_n([1, 2, 3, 4], 2) (returning {body})")
    fail = (
        None
        if body == "items[-n:]"
        else Fail(
            "AssertionError",
            f"assert {got} == [3, 4]",
            (Frame("tests/test_lists.py", 9, "test_last_n"),),
        )
    )
    return {
        "tests/test_lists.py::test_first_n": None,
        LAST_N: fail,
        "tests/test_lists.py::test_chunk": None,
        "tests/test_numbers.py::test_mean": None,
        "tests/test_numbers.py::test_clamp": None,
    }


def all_green(tree: Tree) -> Dict[str, Optional[Fail]]:
    """``fixtures/projects/all_green``: three tests that pass."""
    return dict.fromkeys(
        (
            "tests/test_greet.py::test_greet",
            "tests/test_greet.py::test_greet_blank_name",
            "tests/test_greet.py::test_shout",
        )
    )


def syntax_error(tree: Tree) -> Dict[str, Optional[Fail]]:
    """``fixtures/projects/syntax_error``: ``tests/test_shapes.py`` cannot be collected
    (geometry/shapes.py:10)."""
    fail = Fail(
        "SyntaxError",
        "expected ':' (shapes.py, line 10)",
        (Frame("tests/test_shapes.py", 1, "<module>"), Frame("geometry/shapes.py", 10, "")),
        phase="collect",
    )
    return {"tests/test_shapes.py": fail, "tests/test_units.py::test_inches_to_cm": None}


def missing_dependency(tree: Tree) -> Dict[str, Optional[Fail]]:
    """``fixtures/projects/missing_dependency``: two modules import packages that are not
    installed."""

    def missing(test: str, source: str, module: str) -> Fail:
        return Fail(
            "ModuleNotFoundError",
            f"No module named '{module}'",
            (Frame(test, 1, "<module>"), Frame(source, 3, "<module>")),
            phase="collect",
        )

    return {
        "tests/test_loader.py": missing("tests/test_loader.py", "imaging/loader.py", "cv2"),
        "tests/test_report.py": missing("tests/test_report.py", "imaging/report.py", "bs4"),
        "tests/test_sizes.py::test_fit_within": None,
    }


def shared_root_cause(tree: Tree) -> Dict[str, Optional[Fail]]:
    """``fixtures/projects/shared_root_cause``: ``parse_price`` chokes on thousands separators (two
    tests), ``apply_discount`` divides by 10 (one test); each is fixed by its own change to
    orders/pricing.py."""
    text = tree.read("orders/pricing.py")
    commas = '.replace(",", "")' not in text
    test = "tests/test_pricing.py"
    parse = Frame("orders/pricing.py", 6, "parse_price")
    separator = (
        Fail(
            "ValueError",
            "could not convert string to float: '1,200.50'",
            (Frame(test, 9, "test_parse_price_with_thousands_separator"), parse),
        )
        if commas
        else None
    )
    large = (
        Fail(
            "ValueError",
            "could not convert string to float: '2,000.00'",
            (
                Frame(test, 13, "test_order_total_with_large_line"),
                Frame("orders/pricing.py", 16, "order_total"),
                Frame("orders/pricing.py", 16, "<genexpr>"),
                Frame("orders/pricing.py", 11, "line_total"),
                parse,
            ),
        )
        if commas
        else None
    )
    discount = (
        Fail(
            "AssertionError",
            "assert -300.0 == 150.0\n +  where -300.0 = apply_discount(200.0, 25)",
            (Frame(test, 21, "test_apply_discount"),),
        )
        if "percent / 10\n" in text
        else None
    )
    return {
        f"{test}::test_parse_simple_price": None,
        f"{test}::test_parse_price_with_thousands_separator": separator,
        f"{test}::test_order_total_with_large_line": large,
        f"{test}::test_line_total": None,
        f"{test}::test_apply_discount": discount,
        f"{test}::test_no_discount": None,
    }


SCRIPTS = {
    "off_by_one": off_by_one,
    "all_green": all_green,
    "syntax_error": syntax_error,
    "missing_dependency": missing_dependency,
    "shared_root_cause": shared_root_cause,
}


def canned(case: str) -> Canned:
    """A runner factory replaying ``fixtures/projects/<case>``'s tests (``SCRIPTS``)."""
    return Canned(SCRIPTS[case])
