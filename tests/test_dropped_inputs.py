"""A candidate that stops reading an input (issue 28, item 3): a changed function that no longer
reads a parameter, or a local it still assigns, is flagged ``drops_input``; a fix that keeps
reading its inputs is not."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import List, Optional, Tuple

import pytest
from conftest import init_repo
from scripted_server import ScriptedServer
from test_e2e_run import run_cli, scripted_run

from repairloop.patch import AppliedPatch, FileChange
from repairloop.patch.dropped import (
    deletion_flags,
    dropped_input_flags,
    dropped_reads,
    functions,
)
from repairloop.types import FlagKind, TestFiles

CLAMP = '''\
def clamp(x, lo, hi):
    """``x`` limited to ``[lo, hi]``."""
    return max(lo, max(x, hi))
'''


def _dropped(old: str, new: str, name: str) -> List[Tuple[str, str]]:
    return dropped_reads(functions(ast.parse(old))[name], functions(ast.parse(new))[name])


def _flags(old: str, new: str, path: str = "pkg/calc.py") -> List[str]:
    patch = AppliedPatch((FileChange(path, old, new, "exact", 1.0),), "test")
    return [str(f) for f in dropped_input_flags(patch, TestFiles(("tests/*",)))]


def _deletions(*changes: Tuple[str, Optional[str], Optional[str]]) -> List[str]:
    patch = AppliedPatch(tuple(FileChange(p, o, n, "exact", 1.0) for p, o, n in changes), "t")
    return [str(f) for f in deletion_flags(patch, TestFiles(("tests/*",)))]


METAVAR = """\
def make_metavar(self, var, required):
    if not required:
        var = f"[{var}]"
    return var
"""


def test_a_patch_that_only_removes_code_is_flagged() -> None:
    # The offline engine's plausible patch on click-argument-metavar-double-brackets (wrong: 30
    # tests of click's whole suite fail with it).
    gone = METAVAR.replace('var = f"[{var}]"', "pass")
    flags = _deletions(("pkg/core.py", METAVAR, gone))
    assert flags == [
        "deletes_code: the patch only removes code, adding none: pkg/core.py (1 line(s)): a "
        "plausible patch that deletes functionality is often wrong; read it"
    ]
    assert _deletions(("pkg/core.py", METAVAR, METAVAR.replace("    if not required:\n", "")))
    # every file must only lose code: one that gains some makes it an edit
    edited = METAVAR.replace("return var", "return var.strip()")
    assert _deletions(("pkg/core.py", METAVAR, gone), ("pkg/b.py", METAVAR, edited)) == []
    assert _deletions(("pkg/core.py", METAVAR, edited)) == []
    # a filler that does nothing does not make it an edit (a new user's trial: `word = word`)
    for filler in ("var = var", "self.x = self.x", "...", "None"):
        padded = METAVAR.replace('var = f"[{var}]"', filler)
        assert _deletions(("pkg/core.py", METAVAR, padded)), filler
    assert _deletions(("pkg/core.py", METAVAR, METAVAR.replace('f"[{var}]"', "str(var)"))) == []
    # comments and blank lines are not code; test files, new and deleted files are left out
    assert _deletions(("pkg/core.py", METAVAR, "# note\n" + METAVAR)) == []
    assert (
        _deletions(("pkg/core.py", METAVAR, METAVAR.replace("    return var\n", "    # r\n"))) != []
    )
    assert _deletions(("tests/test_core.py", METAVAR, gone)) == []
    assert _deletions(("pkg/core.py", METAVAR, None)) == []
    assert _deletions(("pkg/new.py", None, METAVAR)) == []


def test_a_clamp_that_stops_reading_its_upper_bound_is_flagged() -> None:
    # The offline engine's plausible patch on fixtures/bench/stats_two_bugs (fixtures/behaviour).
    wrong = CLAMP.replace("max(x, hi)", "max(x, lo)")
    flags = _flags(CLAMP, wrong)
    assert len(flags) == 1 and flags[0].startswith("drops_input: pkg/calc.py: clamp() no longer")
    assert "parameter 'hi'" in flags[0]
    assert _flags(CLAMP, CLAMP.replace("max(x, hi)", "min(x, hi)")) == []  # the right fix


def test_a_renderer_that_drops_its_text_is_flagged() -> None:
    # The engine's plausible patch on the real bug mistune-codespan-backticks (figure 16).
    old = 'class R:\n    def paragraph(self, text):\n        return "<p>" + text + "</p>"\n'
    new = old.replace(' + text + "</p>"', ' + "</p>"')
    assert _dropped(old, new, "R.paragraph") == [("parameter", "text")]
    assert "R.paragraph() no longer reads its parameter 'text'" in _flags(old, new)[0]


def test_a_local_still_assigned_but_no_longer_read_is_flagged() -> None:
    old = "def total(xs):\n    tax = 0.2\n    s = sum(xs)\n    return s + s * tax\n"
    new = old.replace("s + s * tax", "s + s")
    assert _dropped(old, new, "total") == [("local", "tax")]
    assert "its local 'tax', still assigned" in _flags(old, new)[0]
    # the assignment removed with its last read: the whole computation went, a visible edit
    assert _dropped(old, new.replace("    tax = 0.2\n", ""), "total") == []


@pytest.mark.parametrize(
    "old, new",
    [
        # a method that stops using its instance
        (
            "class A:\n    def f(self, x):\n        return self.g(x)\n",
            "class A:\n    def f(self, x):\n        return h(x)\n",
        ),
        # unused by convention
        ("def f(x, _y):\n    return x + _y\n", "def f(x, _y):\n    return x\n"),
        # the signature drops it too: an API change
        ("def f(x, y):\n    return x + y\n", "def f(x):\n    return x\n"),
        # still read, in a nested function
        (
            "def f(x, y):\n    return x + y\n",
            "def f(x, y):\n    def g():\n        return y\n    return x + g()\n",
        ),
        # reads the syntax cannot see
        ("def f(x, y):\n    return x + y\n", "def f(x, y):\n    return x + locals()['y']\n"),
        # a global's value lives outside the function
        (
            "def f(x):\n    global n\n    n = x\n    return n\n",
            "def f(x):\n    global n\n    n = x\n    return x\n",
        ),
    ],
    ids=["self", "underscore", "signature", "nested", "locals", "global"],
)
def test_what_the_heuristic_leaves_out_is_not_flagged(old: str, new: str) -> None:
    assert _flags(old, new) == []


def test_test_files_and_unparsable_files_are_skipped() -> None:
    wrong = CLAMP.replace("max(x, hi)", "max(x, lo)")
    assert _flags(CLAMP, wrong, "tests/test_calc.py") == []
    assert _flags(CLAMP, wrong + "def (:\n") == []


STATS_TESTS = """\
from pkg.calc import clamp


def test_clamp_inside():
    assert clamp(5, 0, 10) == 5


def test_clamp_below():
    assert clamp(-3, 0, 10) == 0
"""

WRONG = """\
```diff
--- a/pkg/calc.py
+++ b/pkg/calc.py
@@ -1,3 +1,3 @@
 def clamp(x, lo, hi):
     \"\"\"``x`` limited to ``[lo, hi]``.\"\"\"
-    return max(lo, max(x, hi))
+    return max(lo, max(x, lo))
```
"""


@pytest.mark.slow
def test_a_plausible_patch_that_drops_an_input_is_reported_with_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], no_flaky_check: None
) -> None:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "calc.py").write_text(CLAMP)
    (root / "tests" / "test_calc.py").write_text(STATS_TESTS)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    init_repo(root)
    with ScriptedServer([("ok", WRONG)]) as srv:
        code, out, _ = run_cli(scripted_run(root, srv, "--max-iterations", "1"), capsys)
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"  # the tests pass: plausible
    flags = [f for f in doc["evidence"]["flags"] if f.startswith(FlagKind.DROPS_INPUT.value)]
    assert len(flags) == 1 and "clamp() no longer reads its parameter 'hi'" in flags[0]
    assert doc["iterations"][0]["flags"] == flags
    assert any(n.startswith("WARNING: iteration 1: drops_input") for n in doc["notes"])
