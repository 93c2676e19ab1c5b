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

# Methods that make a class too big to be shown whole (source.SMALL_CLASS_LINES).
HELPERS = "".join(
    f"""
                def describe_{n}(self, text):
                    # one of the header's helpers, to make the class too big to show whole
                    words = text.split()
                    return " ".join(words[:{n}])
"""
    for n in range(1, 9)
)

# Each case: the project's files, the buggy function's path and its text (as the file has it).
# The two tables' projects share their tests: 1000 * 1000 for "G" is the bug in both.
SIZES_TESTS = """
    from sizes.parse import to_bytes


    def test_gigabytes():
        assert to_bytes("2G") == 2_000_000_000


    def test_kilobytes():
        assert to_bytes("3K") == 3000
"""
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
    "fault_copied_into_a_sibling": {
        "units/__init__.py": "",
        "units/clip.py": """
            def clip_text(values, limit=None):
                if limit is not None and limit < 0:
                    raise ValueError("limit must not be negative")
                end = len(values) if limit is None else limit
                kept = []
                for position in range(end):
                    kept.append(values[position])
                return "".join(kept)


            def clip_items(values, limit=None):
                if limit is not None and limit < 0:
                    raise ValueError("limit must not be negative")
                end = len(values) if limit is None else limit
                kept = []
                for position in range(end):
                    kept.append(values[position])
                return list(kept)
        """,
        "tests/test_clip.py": """
            from units.clip import clip_text


            def test_a_limit_past_the_end_keeps_everything():
                assert clip_text("abc", 5) == "abc"


            def test_a_short_limit_cuts():
                assert clip_text("abc", 2) == "ab"
        """,
    },
    "module_level_table": {
        "sizes/__init__.py": "",
        "sizes/parse.py": """
            UNITS = {
                "K": 1000,
                "M": 1000 * 1000,
                "G": 1000 * 1000,
            }


            def to_bytes(text):
                number, unit = text[:-1], text[-1]
                return int(float(number) * UNITS[unit])
        """,
        "tests/test_parse.py": SIZES_TESTS,
    },
    "table_imported_from_another_module": {
        "sizes/__init__.py": "",
        "sizes/units.py": """
            UNITS = {
                "K": 1000,
                "M": 1000 * 1000,
                "G": 1000 * 1000,
            }
        """,
        "sizes/parse.py": """
            from sizes.units import UNITS


            def to_bytes(text):
                number, unit = text[:-1], text[-1]
                return int(float(number) * UNITS[unit])
        """,
        "tests/test_parse.py": SIZES_TESTS,
    },
    "class_attribute": {
        "marks/__init__.py": "",
        "marks/headers.py": """
            import re


            class UnderlineHeader:
                \"\"\"A header underlined with = or - signs.\"\"\"

                PATTERN = re.compile(r"^[=-]+$")
                LEVELS = {"=": 1, "-": 2}

                def level(self, underline):
                    if not self.PATTERN.match(underline):
                        return None
                    return self.LEVELS[underline[0]]
        """
        + HELPERS,
        "marks/document.py": """
            from marks.headers import UnderlineHeader


            def header_level(lines):
                return UnderlineHeader().level(lines[1])
        """,
        "tests/test_headers.py": """
            from marks.document import header_level


            def test_mixed_signs_are_no_underline():
                assert header_level(["Title", "=-="]) is None


            def test_equal_signs():
                assert header_level(["Title", "==="]) == 1
        """,
    },
}
BUGGY = {
    "returned_value": ("calc/stats.py", "def spread(values):"),
    "callee_of_the_frame": ("shop/units.py", "def to_cents(amount):"),
    "doctest_in_a_text_file": ("textkit/case.py", "def title(words):"),
    "method_in_another_module": ("store/items.py", "def subtotal(self):"),
    "helper_through_a_fixture": ("inventory/load.py", "def parse_rows(text):"),
    "fault_copied_into_a_sibling": ("units/clip.py", "def clip_items(values, limit=None):"),
    "module_level_table": ("sizes/parse.py", "UNITS = {"),
    "table_imported_from_another_module": ("sizes/units.py", "UNITS = {"),
    "class_attribute": ("marks/headers.py", 'PATTERN = re.compile(r"^[=-]+$")'),
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


def write_project(tmp_path: Path, files: Dict[str, str]) -> Path:
    root = tmp_path / "project"
    for rel, text in {"pyproject.toml": PYPROJECT, **files}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return init_repo(root)


def test_a_long_function_is_shown_with_its_signature_and_its_suspicious_lines(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """A 140-line function whose fault is near its end: the prompt shows its signature, a comment
    naming the lines left out, and the lines around the fault, in one block under its path (before,
    the window around the fault alone: the model never saw the parameters)."""
    steps = "".join(f"    step_{n} = total + {n}\n" for n in range(130))
    book = (
        "def settle(entries, rounding=False):\n"
        "    total = 0\n"
        "    for amount in entries:\n"
        "        total += amount\n"
        f"{steps}"
        "    if rounding:\n"
        "        total = round(total) - 1\n"
        "    return total\n"
    )
    root = write_project(
        tmp_path,
        {
            "ledger/__init__.py": "",
            "ledger/book.py": book,
            "tests/test_book.py": """
                from ledger.book import settle


                def test_rounded():
                    assert settle([1.4, 2], rounding=True) == 3


                def test_exact():
                    assert settle([1, 2]) == 3
            """,
        },
    )
    prompt = first_prompt(root, capsys, monkeypatch, localise=True)
    block = prompt[prompt.index("### ledger/book.py, lines 1-") :]
    block = block[: block.index("\n```\n", block.index("```python")) + 1]
    assert "def settle(entries, rounding=False):" in block
    assert "        total = round(total) - 1" in block
    assert "    # ... lines 2-" in block and "not shown ..." in block
    assert "(lines 1-1 and " in block.splitlines()[0]


def test_failing_tests_whose_suspects_share_a_module_are_one_task(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """Two failing tests, each running a different faulty function of one module: one task, both
    functions shown, and neither test called "another root cause" (before: two groups, the second
    test listed as failing for another reason and its function left out)."""
    root = write_project(
        tmp_path,
        {
            "grid/__init__.py": "",
            "grid/cells.py": """
                def row_of(index, width):
                    return index // width + 1


                def column_of(index, width):
                    return index % width + 1


                def size(width, height):
                    return width * height
            """,
            "tests/test_cells.py": """
                import pytest

                from grid.cells import column_of, row_of, size


                def test_row():
                    assert row_of(5, 3) == 1


                def test_column():
                    assert column_of(5, 3) == 2


                @pytest.mark.parametrize("width", [1, 2, 3, 4, 5, 6])
                def test_size(width):
                    assert size(width, 3) == 3 * width
            """,
        },
    )
    prompt = first_prompt(root, capsys, monkeypatch, localise=True)
    tests = prompt[prompt.index("## Failing tests") : prompt.index("## Failure")]
    assert "tests/test_cells.py::test_row" in tests and "tests/test_cells.py::test_column" in tests
    assert "another root cause" not in prompt
    assert "def row_of(index, width):" in prompt and "def column_of(index, width):" in prompt
