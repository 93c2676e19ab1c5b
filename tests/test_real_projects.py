"""What trying repairloop on real libraries showed (issue 14, items 1-4), end to end.

Each test runs ``repairloop run`` (offline: the builtin engine) or
``repairloop classify`` on a small project written here, through the real CLI,
with real pytest subprocesses in a real git repository.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest
from conftest import init_repo

from repairloop.cli import main

pytestmark = pytest.mark.slow


def write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return init_repo(root)


def run_cli(args: Sequence[str], capsys: pytest.CaptureFixture[str]) -> Tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


UNITTEST_PROJECT = {
    "shop/__init__.py": "",
    "shop/prices.py": """
        def total(prices):
            result = 0
            for price in prices:
                result += price
            return result - 1
    """,
    "tests/__init__.py": "",
    "tests/test_prices.py": """
        import unittest

        from shop.prices import total


        class TotalTest(unittest.TestCase):
            def test_total(self):
                self.assertEqual(total([1, 2, 3]), 6)
    """,
}


def test_the_console_says_when_fault_localisation_is_degraded(tmp_path: Path, capsys) -> None:
    # unittest: no pytest plugin runs, so no per-test line data is recorded.
    project = write(tmp_path / "shop", UNITTEST_PROJECT)
    command = f"{sys.executable} -m unittest discover -s tests -t ."
    _, out, err = run_cli(["run", str(project), "--test-cmd", command, "--no-builtin", "--model", "builtin",
                              "--timeout", "120", "--json"], capsys)
    doc = json.loads(out)
    assert "fault localisation degraded: the test run recorded no per-test line data" in err
    notes: List[str] = doc["notes"]
    assert any(n.startswith("fault localisation degraded") for n in notes), notes
