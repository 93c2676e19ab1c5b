"""Failing tests that depend on an earlier test of their module (the fidelity issue, item 4).

``test_total`` uses the cart ``test_open`` leaves in a module-level dict: in the suite's order it
fails on the bug (AssertionError), alone it fails otherwise (KeyError). A right fix must not be
judged by a run of ``test_total`` alone. Real git repositories, real pytest subprocesses in the
sandbox; the model is the scripted server reached through litellm, or the offline engine.
"""

from __future__ import annotations

import io
import json
import sys
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest
from conftest import init_repo
from scripted_server import ScriptedServer

from repairloop.cli import main
from repairloop.loop.validation import ValidationSetup
from repairloop.types import ResultSource, TestOutcome, TestReport, TestResult

CART = """\
class Cart:
    def __init__(self):
        self.items = []

    def add(self, price):
        self.items.append(price)

    def total(self):
        t = 0
        for price in self.items:
            t = t - price
        return t
"""

TESTS = """\
from shop.cart import Cart

STATE = {}


def test_open():
    STATE["cart"] = Cart()
    assert STATE["cart"].items == []


def test_total():
    cart = STATE["cart"]
    cart.add(3)
    cart.add(4)
    assert cart.total() == 7
"""

RIGHT = """\
--- a/shop/cart.py
+++ b/shop/cart.py
@@ -8,5 +8,5 @@ class Cart:
     def total(self):
         t = 0
         for price in self.items:
-            t = t - price
+            t = t + price
         return t
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return make_shop(tmp_path)


def make_shop(parent: Path) -> Path:
    root = parent / "shop"
    for rel, text in {
        "shop/__init__.py": "",
        "shop/cart.py": CART,
        "tests/test_cart.py": TESTS,
        "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['.']\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return init_repo(root)


def _run(args: List[str], capsys: pytest.CaptureFixture[str]) -> dict:
    code = main(args)
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert code == 0, (doc, err)
    return doc


def _command() -> List[str]:
    return ["--test-cmd", f"{sys.executable} -m pytest -q -p no:cacheprovider", "--json"]


@pytest.mark.parametrize("confirm_runs", ["1", "0"])
def test_a_right_fix_of_a_test_that_needs_an_earlier_one_is_kept(
    shop: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    confirm_runs: str,
) -> None:
    """With the confirmation re-runs (the default), the targeted run gives ``test_total`` the
    test before it; without them, the targeted run alone fails with another exception, and the
    full suite decides instead of the targeted run rejecting the fix."""
    monkeypatch.setenv("REPAIRLOOP_CONFIRM_RUNS", confirm_runs)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        args = ["run", str(shop), "--model", "openai/scripted", "--api-base", srv.base_url]
        doc = _run(args + ["--no-builtin", *_command()], capsys)
    assert doc["outcome"] == "fixed" and doc["iterations"][0]["decision"] == "kept"
    assert "+            t = t + price" in doc["patch"]


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory: pytest.TempPathFactory) -> Tuple[int, Dict[str, Any], str]:
    """One run of the default chain (the offline engine) with the default flaky check, shared by
    the two tests below: (exit code, the --json document, stderr). In this process, its output
    captured apart (capsys is per test)."""
    shop = make_shop(tmp_path_factory.mktemp("order"))
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["run", str(shop), *_command()])
    return code, json.loads(out.getvalue()), err.getvalue()


OFFLINE_RUN = pytest.mark.xdist_group("order_dependent_offline_run")  # one worker makes the run


@OFFLINE_RUN
def test_the_confirmation_finds_the_test_that_needs_an_earlier_one(
    offline_run: Tuple[int, Dict[str, Any], str],
) -> None:
    _, _, err = offline_run
    assert "1 failing test(s) fail otherwise when run alone" in " ".join(err.split())


@OFFLINE_RUN
def test_the_offline_engine_validates_with_the_earlier_test_too(
    offline_run: Tuple[int, Dict[str, Any], str],
) -> None:
    code, doc, err = offline_run
    assert code == 0, (doc, err)
    assert doc["outcome"] == "fixed"
    assert "+            t = t + price" in doc["patch"]


def test_the_targeted_run_gives_a_dependent_test_the_earlier_tests_of_its_module_only() -> None:
    order = (
        "tests/test_a.py::test_x",
        "tests/test_b.py::test_open",
        "tests/test_b.py::test_other",
        "tests/test_b.py::test_total",
        "tests/test_b.py::test_after",
        "tests/test_c.py::test_alone",
    )
    setup = ValidationSetup(
        None, None, None, None, None, 1, True, None,  # type: ignore[arg-type]
        run_order=order,
        needs_earlier=frozenset({"tests/test_b.py::test_total"}),
    )  # fmt: skip
    failing = ("tests/test_c.py::test_alone", "tests/test_b.py::test_total")
    assert setup.targeted_ids(failing) == (
        "tests/test_b.py::test_open",
        "tests/test_b.py::test_other",
        "tests/test_b.py::test_total",
        "tests/test_c.py::test_alone",
    )
    alone = ValidationSetup(
        None, None, None, None, None, 1, True, None, run_order=order  # type: ignore[arg-type]
    )  # fmt: skip
    assert alone.targeted_ids(failing) == failing[::-1]  # the failing tests alone, in order


def test_a_changed_failure_is_the_candidates_when_the_test_runs_alone_as_in_order() -> None:
    """A failing test the confirmation saw failing alone just as in the suite's order: its
    failure changing kind in a targeted run is the candidate's doing, so the targeted run may
    reject it; for a test not seen alone, the full suite decides."""
    failing = ("tests/test_b.py::test_total",)
    before = {failing[0]: TestResult(failing[0], TestOutcome.FAILED, exc_type="AssertionError")}
    now = TestReport(
        ("pytest",),
        1,
        (TestResult(failing[0], TestOutcome.FAILED, exc_type="TypeError"),),
        source=ResultSource.PLUGIN,
    )
    unknown = ValidationSetup(
        None, None, None, None, None, 1, True, None, known_failures=before  # type: ignore[arg-type]
    )  # fmt: skip
    assert unknown.failure_changed(now, failing) == list(failing)
    seen_alone = replace(unknown, runs_alone=frozenset(failing))
    assert seen_alone.failure_changed(now, failing) == []
