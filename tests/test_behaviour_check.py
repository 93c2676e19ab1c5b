"""The behaviour check on a reported patch (issue 28, item 3): passing tests that never run the
suspicious code and take other paths through the changed files with the patch flag it
``changes_passing_behaviour``, named; a fix of the suspicious code alone is not flagged."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from conftest import init_repo
from scripted_server import ScriptedServer
from test_e2e_run import run_cli, scripted_run

from repairloop.loop.behaviour import changed_paths
from repairloop.patch import AppliedPatch, FileChange
from repairloop.types import Localisation, Suspect, SuspectFunction

SHOP = '''\
def normalise(kind):
    kind = kind.strip()
    if kind.islower():
        return kind
    return kind.lower()


def price(kind, quantity):
    """What ``quantity`` items cost."""
    unit = 10 if normalise(kind) == "book" else 5
    return unit * quantity - 1
'''

SHOP_TESTS = """\
from pkg.shop import normalise, price


def test_price():
    assert price("book", 2) == 20


def test_normalise():
    assert normalise(" pen ") == "pen"
"""

RIGHT = """\
```diff
--- a/pkg/shop.py
+++ b/pkg/shop.py
@@ -10,2 +10,2 @@ def price(kind, quantity):
     unit = 10 if normalise(kind) == "book" else 5
-    return unit * quantity - 1
+    return unit * quantity
```
"""

# The same fix, and a "tidy" of normalise that sends lower-case names down the other branch:
# the result is the same, the path is not.
RIGHT_AND_TIDY = """\
```diff
--- a/pkg/shop.py
+++ b/pkg/shop.py
@@ -1,5 +1,5 @@
 def normalise(kind):
     kind = kind.strip()
-    if kind.islower():
+    if kind.isupper():
         return kind
     return kind.lower()
@@ -10,2 +10,2 @@ def price(kind, quantity):
     unit = 10 if normalise(kind) == "book" else 5
-    return unit * quantity - 1
+    return unit * quantity
```
"""


def shop(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "shop.py").write_text(SHOP)
    (root / "tests" / "test_shop.py").write_text(SHOP_TESTS)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    return init_repo(root)


@pytest.mark.slow
def test_a_patch_that_changes_a_passing_tests_path_is_flagged(
    tmp_path, capsys, no_flaky_check
) -> None:
    root = shop(tmp_path)
    with ScriptedServer([("ok", RIGHT_AND_TIDY)]) as srv:
        code, out, _ = run_cli(scripted_run(root, srv, "--max-iterations", "1"), capsys)
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    flags = doc["evidence"]["proof"]["flags"]
    assert len(flags) == 1 and flags[0].startswith("changes_passing_behaviour: 1 passing test")
    assert "tests/test_shop.py::test_normalise" in flags[0]
    assert "pkg/shop.py:8-11" in flags[0]  # the suspicious code: price
    assert flags[0] in doc["evidence"]["flags"]
    assert any(n.startswith("WARNING: the patch: changes_passing_behaviour") for n in doc["notes"])


@pytest.mark.slow
def test_a_fix_of_the_suspicious_code_alone_is_not_flagged(
    tmp_path, capsys, no_flaky_check
) -> None:
    root = shop(tmp_path)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(root, srv, "--max-iterations", "1"), capsys)
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    assert doc["evidence"]["proof"]["flags"] == [] and doc["evidence"]["flags"] == []
    assert doc["evidence"]["proof"]["other_paths"] == []
    assert not any("changes_passing_behaviour" in n for n in doc["notes"])


@pytest.mark.slow
def test_a_project_measuring_its_own_coverage_is_still_proven(
    tmp_path, capsys, no_flaky_check
) -> None:
    """pytest-cov in addopts stops a coverage collector it did not start when the proof's run
    also records lines (INTERNALERROR, a JUnit record "internal"): the verdict is a run without
    line data, and the right fix is proven (a new user's trial on semver 3.0.2)."""
    root = shop(tmp_path)
    (root / "pytest.ini").write_text(
        "[pytest]\npythonpath = .\naddopts = -p pytest_cov --cov=pkg\n"
    )
    commit = ["git", "-C", str(root), "commit", "-qam", "measure coverage"]
    subprocess.run(commit, check=True)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(root, srv, "--max-iterations", "1"), capsys)
    doc = json.loads(out)
    assert doc["stop_reason"] == "success" and doc["outcome"] == "fixed", doc["stop_detail"]
    assert code == 0 and doc["evidence"]["proof"]["passed"] is True


# -- the comparison, on line data -------------------------------------------------------------

FAIL, PASS = "t.py::test_price", "t.py::test_normalise"
PATH = "pkg/shop.py"


def start(spectra) -> Localisation:
    price = SuspectFunction(PATH, "price", 8, 11, 1.0, (11,), frozenset({FAIL}))
    return Localisation(
        "coverage",
        (Suspect(PATH, 11, 1.0, 1, 0),),
        (FAIL,),
        (PASS,),
        ran_by={(PATH, 11): frozenset({FAIL})},
        functions=(price,),
        spectra=spectra,
    )


def tidy() -> AppliedPatch:
    new = SHOP.replace("kind.islower()", "kind.isupper()")
    return AppliedPatch((FileChange(PATH, SHOP, new, "exact", 1.0),), "diff")


def test_lines_are_compared_over_unchanged_code_only() -> None:
    both = frozenset({FAIL, PASS})
    before = {(PATH, 2): both, (PATH, 3): both, (PATH, 4): both, (PATH, 11): frozenset({FAIL})}
    # Line 3 is edited: that it ran before and after says nothing. Line 4 -> 5 is the new path.
    other_branch = {(PATH, 2): both, (PATH, 3): both, (PATH, 5): both}
    same_branch = {(PATH, 2): both, (PATH, 3): both, (PATH, 4): both}
    assert changed_paths(start(before), other_branch, tidy(), (PASS,)) == ((PASS,), ())
    assert changed_paths(start(before), same_branch, tidy(), (PASS,)) == ((), ())
    # A test that ran the suspicious code is recorded apart; no line data, or a test that did
    # not pass: nothing compared.
    touching = {**before, (PATH, 10): frozenset({PASS, FAIL})}
    assert changed_paths(start(touching), other_branch, tidy(), (PASS,)) == ((), (PASS,))
    assert changed_paths(start({}), other_branch, tidy(), (PASS,)) == ((), ())
    assert changed_paths(start(before), {}, tidy(), (PASS,)) == ((), ())
    assert changed_paths(start(before), other_branch, tidy(), ()) == ((), ())
