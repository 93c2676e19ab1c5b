"""Partial fixes that do not reach the fault (issue 28, item 2): a partial candidate whose edits
some still-failing test never runs, while all failing tests share a more suspicious function,
is journalled and not kept; a kept partial fix names the tests it leaves and the function they
share, in the console, ``--json`` and the hook."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import init_repo
from scripted_server import ScriptedServer
from test_e2e_run import run_cli, scripted_run

from repairloop.cli import main
from repairloop.loop.partials import misses_shared_fault
from repairloop.patch import AppliedPatch, FileChange
from repairloop.patch.changes import edited_old_lines, unchanged_line_map
from repairloop.types import Localisation, Suspect, SuspectFunction

# Both failing tests run ``totals``, whose extra leading 0 is the fault; only one of them also
# runs ``first_totals``, where a shifted slice can absorb it.
RUNNING = '''\
def totals(values):
    """Running totals of ``values``."""
    found = []
    total = 0
    for value in values:
        total += value
        found.append(total)
    return [0] + found


def last_total(values):
    return totals(values)[-1]


def first_totals(values, count):
    """The first ``count`` running totals."""
    return totals(values)[:count]
'''

RUNNING_TESTS = """\
from pkg.running import first_totals, last_total, totals


def test_totals():
    assert totals([1, 2, 3]) == [1, 3, 6]


def test_first_totals():
    assert first_totals([1, 2, 3], 2) == [1, 3]


def test_last_total():
    assert last_total([1, 2, 3]) == 6
"""

ABSORBS = """\
```diff
--- a/pkg/running.py
+++ b/pkg/running.py
@@ -16,2 +16,2 @@ def last_total(values):
     \"\"\"The first ``count`` running totals.\"\"\"
-    return totals(values)[:count]
+    return totals(values)[1 : count + 1]
```
"""

RIGHT = """\
```diff
--- a/pkg/running.py
+++ b/pkg/running.py
@@ -8,1 +8,1 @@ def totals(values):
-    return [0] + found
+    return found
```
"""

# Two faults, each in a function only one failing test runs.
SCALE = """\
def double(x):
    return x * 3


def halve(x):
    return x / 3
"""

SCALE_TESTS = """\
from pkg.scale import double, halve


def test_double():
    assert double(4) == 8


def test_halve():
    assert halve(8) == 4
"""

FIXES_DOUBLE = """\
```diff
--- a/pkg/scale.py
+++ b/pkg/scale.py
@@ -1,2 +1,2 @@
 def double(x):
-    return x * 3
+    return x * 2
```
"""


def project(tmp_path: Path, name: str, source: str, tests: str) -> Path:
    root = tmp_path / "proj"
    (root / "pkg").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / f"{name}.py").write_text(source)
    (root / "tests" / f"test_{name}.py").write_text(tests)
    (root / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    return init_repo(root)


@pytest.mark.slow
def test_a_partial_fix_that_absorbs_the_shared_fault_elsewhere_is_not_kept(
    tmp_path, capsys, no_flaky_check
) -> None:
    root = project(tmp_path, "running", RUNNING, RUNNING_TESTS)
    with ScriptedServer([("ok", ABSORBS), ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(root, srv, "--max-iterations", "2"), capsys)
    doc = json.loads(out)
    first, second = doc["iterations"]
    assert first["decision"] == "reverted", first
    assert first["fixed"] == ["tests/test_running.py::test_first_totals"]
    assert "does not reach the fault the failing tests share" in first["reason"]
    assert "tests/test_running.py::test_totals still fails and never runs" in first["reason"]
    assert "pkg/running.py::totals" in first["reason"] and "pkg/running.py:17" in first["reason"]
    assert second["decision"] == "kept"
    assert code == 0 and doc["outcome"] == "fixed"
    assert "count + 1" not in doc["patch"] and "+    return found" in doc["patch"]
    # The journal holds the candidate that was not kept, with the reason.
    events = (Path(doc["run_dir"]) / "journal.jsonl").read_text()
    assert "does not reach the fault the failing tests share" in events


@pytest.mark.slow
def test_a_kept_partial_fix_names_what_it_leaves_in_json_and_console(
    tmp_path, capsys, no_flaky_check, monkeypatch
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    root = project(tmp_path, "scale", SCALE, SCALE_TESTS)
    with ScriptedServer([("ok", FIXES_DOUBLE)]) as srv:
        console = [a for a in scripted_run(root, srv, "--max-iterations", "1") if a != "--json"]
        code, out, err = run_cli(console, capsys)
    shown = " ".join((out + err).split())
    assert code == 1 and (
        "still failing: tests/test_scale.py::test_halve (it runs pkg/scale.py::halve: "
        "the fault is likely there)" in shown
    )
    # summary.json is the --json document.
    runs = sorted((root / ".repairloop" / "runs").iterdir())
    doc = json.loads((runs[-1] / "summary.json").read_text())
    assert doc["outcome"] == "partially_fixed" and doc["iterations"][0]["decision"] == "kept"
    assert doc["still_failing"] == ["tests/test_scale.py::test_halve"]
    assert doc["evidence"]["shared_function"] == "pkg/scale.py::halve"


@pytest.mark.slow
def test_the_hook_names_what_a_partial_fix_leaves(tmp_path, capsys, no_flaky_check) -> None:
    root = project(tmp_path, "scale", SCALE, SCALE_TESTS)
    with ScriptedServer([("ok", FIXES_DOUBLE)]) as srv:
        args = ["hook", str(root), "--model", "openai/scripted", "--api-base", srv.base_url]
        code = main([*args, "--max-iterations", "1"])
    out = " ".join(capsys.readouterr().out.split())
    assert code == 1 and "found a partial fix" in out
    assert "still failing with it: tests/test_scale.py::test_halve" in out
    assert "it runs pkg/scale.py::halve: the fault is likely there" in out


# -- the rule on a localisation, without a run -------------------------------------------------

T1, T2, T3 = "t.py::test_totals", "t.py::test_first_totals", "t.py::test_last_total"


def localisation(method: str = "coverage") -> Localisation:
    """``RUNNING``'s, as Ochiai ranks it: line 8 run by both failing tests and one passing one,
    line 17 by one failing test only."""
    shared = SuspectFunction("pkg/running.py", "totals", 1, 8, 0.82, (8,), frozenset({T1, T2}))
    other = SuspectFunction("pkg/running.py", "first_totals", 15, 17, 0.71, (17,), frozenset({T2}))
    return Localisation(
        method,
        (Suspect("pkg/running.py", 8, 0.82, 2, 1), Suspect("pkg/running.py", 17, 0.71, 1, 0)),
        (T1, T2),
        (T3,),
        ran_by={
            ("pkg/running.py", 8): frozenset({T1, T2}),
            ("pkg/running.py", 17): frozenset({T2}),
        },
        functions=(shared, other),
    )


def edit(old: str, new: str) -> AppliedPatch:
    changed = RUNNING.replace(old, new)
    assert changed != RUNNING
    return AppliedPatch((FileChange("pkg/running.py", RUNNING, changed, "exact", 1.0),), "diff")


def test_the_rule_holds_only_for_edits_outside_a_more_suspicious_shared_function() -> None:
    absorbs = edit("[:count]", "[1 : count + 1]")
    assert misses_shared_fault(localisation(), absorbs, (T1, T2), (T1,))
    # Nothing still failing, no line data, or the edit in the shared function: kept.
    assert misses_shared_fault(localisation(), absorbs, (T1, T2), ()) is None
    assert misses_shared_fault(localisation("traceback"), absorbs, (T1, T2), (T1,)) is None
    assert misses_shared_fault(None, absorbs, (T1, T2), (T1,)) is None
    inside = edit("    total = 0\n", "    total = 0\n    found.clear()\n")
    assert misses_shared_fault(localisation(), inside, (T1, T2), (T1,)) is None
    # An edit the still-failing test runs may be part of its fix: kept.
    assert misses_shared_fault(localisation(), absorbs, (T1, T2), (T2,)) is None


def test_an_edit_as_suspicious_as_the_shared_function_is_kept() -> None:
    found = localisation()
    level = Suspect("pkg/running.py", 17, 0.82, 1, 0)
    even = Localisation(
        found.method,
        (found.suspects[0], level),
        found.failing,
        found.passing,
        ran_by=found.ran_by,
        functions=found.functions,
    )
    assert misses_shared_fault(even, edit("[:count]", "[1 : count + 1]"), (T1, T2), (T1,)) is None


def test_edited_and_unchanged_lines_are_counted_in_the_old_text() -> None:
    change = edit("[:count]", "[1 : count + 1]").changes[0]
    assert edited_old_lines(change) == {17}
    assert unchanged_line_map(change)[16] == 16 and 17 not in unchanged_line_map(change)
    inserted = edit("    total = 0\n", "    total = 0\n    found.clear()\n").changes[0]
    assert edited_old_lines(inserted) == {4, 5}  # the lines around an insertion
    assert unchanged_line_map(inserted)[5] == 6
