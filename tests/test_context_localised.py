"""The model is shown the code it must fix, however far the bug is from the traceback.

Each project below has its bug in a function that no frame of the failing test's traceback names: a
value returned to an assertion, a callee of the frame that raised, a doctest in a text file, a
method of a class in another module, a helper reached through a fixture. Each test runs the real
loop (real pytest, the sandbox, per-test coverage) against the scripted model and asserts that the
FIRST prompt holds the buggy function whole, under its path; the same projects with ``localise =
false`` (the traceback's code only, as before) show what the localisation adds.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import init_repo
from scripted_server import ScriptedServer

from repairloop.cli import main

pytestmark = pytest.mark.slow

PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["."]\n'

# Each case: the project's files, the buggy function's path and its text (as the file has it).
CASES: Dict[str, Dict[str, str]] = {
    "returned_value": {
        "calc/__init__.py": "",
        "calc/stats.py": """
            def spread(values):
                return max(values) - min(values) + 1
        """,
        "calc/report.py": """
            from calc.stats import spread


            def summary(values):
                return {"count": len(values), "spread": spread(values)}
        """,
        "tests/test_report.py": """
            from calc.report import summary


            def test_summary():
                assert summary([1, 4, 2]) == {"count": 3, "spread": 3}


            def test_count():
                assert summary([5])["count"] == 1
        """,
    },
    "callee_of_the_frame": {
        "shop/__init__.py": "",
        "shop/units.py": """
            def to_cents(amount):
                return int(amount * 10)
        """,
        "shop/checkout.py": """
            from shop.units import to_cents


            def pay(amount, budget_cents):
                cents = to_cents(amount)
                if cents > budget_cents:
                    raise ValueError(f"over budget: {cents} > {budget_cents}")
                return budget_cents - cents
        """,
        "tests/test_checkout.py": """
            from shop.checkout import pay


            def test_pay_within_budget():
                assert pay(2.5, 300) == 50


            def test_pay_nothing():
                assert pay(0, 100) == 100
        """,
    },
    "doctest_in_a_text_file": {
        "textkit/__init__.py": "",
        "textkit/case.py": """
            def title(words):
                return " ".join(w[:1].upper() + w[1:] for w in words.split(" "))[:-1]
        """,
        "docs/usage.txt": """
            Titles
            ======

            >>> from textkit.case import title
            >>> title("hello big world")
            'Hello Big World'
        """,
        "tests/test_case.py": """
            from textkit.case import title


            def test_one_word():
                assert title("x") == "X"
        """,
        "pytest.ini": "[pytest]\npythonpath = .\naddopts = --doctest-glob=*.txt\ntestpaths = tests "
        "docs\n",
    },
    "method_in_another_module": {
        "store/__init__.py": "",
        "store/items.py": """
            class Item:
                def __init__(self, price, quantity):
                    self.price = price
                    self.quantity = quantity

                def subtotal(self):
                    return self.price + self.quantity
        """,
        "store/basket.py": """
            from store.items import Item


            class Basket:
                def __init__(self):
                    self.items = []

                def add(self, price, quantity):
                    self.items.append(Item(price, quantity))

                def total(self):
                    return sum(item.subtotal() for item in self.items)
        """,
        "tests/test_basket.py": """
            from store.basket import Basket


            def test_total():
                basket = Basket()
                basket.add(4, 3)
                basket.add(5, 1)
                assert basket.total() == 17


            def test_empty():
                assert Basket().total() == 0
        """,
    },
    "helper_through_a_fixture": {
        "inventory/__init__.py": "",
        "inventory/load.py": """
            def parse_rows(text):
                rows = []
                for line in text.strip().splitlines()[1:-1]:
                    name, count = line.split(",")
                    rows.append((name.strip(), int(count)))
                return rows
        """,
        "tests/conftest.py": """
            import pytest

            from inventory.load import parse_rows


            @pytest.fixture
            def rows():
                return parse_rows("name,count\\napples,3\\npears,5\\n")
        """,
        "tests/test_rows.py": """
            def test_every_row(rows):
                assert rows == [("apples", 3), ("pears", 5)]


            def test_header_skipped(rows):
                assert all(name != "name" for name, _ in rows)
        """,
    },
}
BUGGY = {
    "returned_value": ("calc/stats.py", "def spread(values):"),
    "callee_of_the_frame": ("shop/units.py", "def to_cents(amount):"),
    "doctest_in_a_text_file": ("textkit/case.py", "def title(words):"),
    "method_in_another_module": ("store/items.py", "def subtotal(self):"),
    "helper_through_a_fixture": ("inventory/load.py", "def parse_rows(text):"),
}


def project(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    for rel, text in {"pyproject.toml": PYPROJECT, **CASES[name]}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return init_repo(root)


def first_prompt(
    root: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, localise: bool
) -> str:
    monkeypatch.setenv("REPAIRLOOP_LOCALISE", "true" if localise else "false")
    monkeypatch.setenv("REPAIRLOOP_CONFIRM_RUNS", "0")
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with ScriptedServer([("ok", "I cannot find the bug.")]) as srv:
        main(
            [
                "run",
                str(root),
                "--model",
                "openai/scripted",
                "--api-base",
                srv.base_url,
                "--no-builtin",
                "--max-iterations",
                "1",
                "--json",
            ]
        )
        requests: List[dict] = list(srv.requests)
    doc = json.loads(capsys.readouterr().out)
    assert doc["failure_kinds"] == {"logic": 1} or doc["failure_kinds"].get("logic"), doc[
        "failure_kinds"
    ]
    return requests[0]["messages"][1]["content"]


def shows_whole(prompt: str, path: str, text: str) -> bool:
    """Every line of ``text`` in the prompt, under a code header of ``path``."""
    header = f"### {path}, lines "
    return header in prompt and all(line in prompt for line in text.splitlines() if line.strip())


def function_text(root: Path, path: str, def_line: str) -> str:
    lines = (root / path).read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip() == def_line)
    indent = len(lines[start]) - len(lines[start].lstrip())
    end = start + 1
    while end < len(lines) and (
        not lines[end].strip() or len(lines[end]) - len(lines[end].lstrip()) > indent
    ):
        end += 1
    return "\n".join(lines[start:end]).rstrip()


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_first_prompt_holds_the_buggy_function_whole(
    tmp_path: Path, capsys, monkeypatch, name: str
) -> None:
    root = project(tmp_path, name)
    path, def_line = BUGGY[name]
    buggy = function_text(root, path, def_line)
    prompt = first_prompt(root, capsys, monkeypatch, localise=True)
    assert shows_whole(prompt, path, buggy), prompt
    assert "Most suspicious first, as ranked by per-test coverage" in prompt
    assert f"Files you may change: {path}" in prompt or f", {path}" in prompt


def test_the_traceback_alone_misses_most_of_them(tmp_path: Path, capsys, monkeypatch) -> None:
    """Without localisation (as before), the prompt lacks the buggy function in most of these cases:
    the checks above can fail."""
    missed = []
    for name in sorted(CASES):
        root = project(tmp_path, name)
        path, def_line = BUGGY[name]
        prompt = first_prompt(root, capsys, monkeypatch, localise=False)
        if not shows_whole(prompt, path, function_text(root, path, def_line)):
            missed.append(name)
    assert len(missed) >= 3, missed
