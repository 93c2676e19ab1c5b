"""A candidate that attacks the warm server, or leaves something behind for later runs: it may cost
a fresh run, never a right fix, and never forge a verdict.

The warm server forks a child per candidate. Without protection a child (candidate code) could
``ptrace`` the server or write its memory, leave a file at a fixed path in the sandbox's ``/tmp``,
plant a file where the next request's results go, or leave bytecode in the tree that a later run
executes instead of the source. Each test below is such an attack.
"""

from __future__ import annotations

import importlib.util
import json
import marshal
import os
import struct
import sys
from pathlib import Path
from typing import Dict

import pytest
from conftest import git
from runner_helpers import PYTEST, write_project
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT
from test_warm import CALC, IDS, candidate

from repairloop.cli import main
from repairloop.loop.suite import TestSuite
from repairloop.runner import run_tests
from repairloop.runner.warm import WarmProcess
from repairloop.settings import Settings

TOUCH_THE_SERVER = """import ctypes, os
    denied = []
    try:
        open('/proc/%d/mem' % os.getppid(), 'r+b').close()
    except OSError:
        denied.append('mem')
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.ptrace(16, os.getppid(), 0, 0) != 0:  # PTRACE_ATTACH
        denied.append('ptrace')
    else:
        libc.ptrace(17, os.getppid(), 0, 0)  # PTRACE_DETACH
    return a + b if denied == ['mem', 'ptrace'] else 'reached the server: ' + repr(denied)"""


def test_a_child_can_neither_ptrace_the_server_nor_open_its_memory(tmp_path: Path) -> None:
    """In the sandbox (no capabilities, even as root): the server is not dumpable, so a child of the
    same user may not attach to it nor open its memory. (Unconfined as root, CAP_SYS_PTRACE would
    allow both.)"""
    root = write_project(tmp_path / "calc", CALC)
    suite = TestSuite.for_project(Settings(sandbox="bwrap"), root, dict(os.environ), lambda: 120.0)
    with suite.warm(root) as warm:
        assert warm.ready(), warm.refused
        candidate(root, "calc/ops.py", "return a - b", TOUCH_THE_SERVER)
        report = warm.run(IDS[:1], ["calc/ops.py"], 60)
        assert report is not None, warm.why
        assert report.results[0].outcome.value == "passed", report.results[0].message
        assert warm.running  # the server was left as it was


def test_a_file_a_child_leaves_in_the_sandboxs_tmp_is_gone_for_the_next_child(
    tmp_path: Path,
) -> None:
    root = write_project(tmp_path / "calc", CALC)
    suite = TestSuite.for_project(Settings(sandbox="bwrap"), root, dict(os.environ), lambda: 120.0)
    with suite.warm(root) as warm:
        assert warm.ready(), warm.refused
        original = candidate(
            root,
            "calc/ops.py",
            "return a - b",
            "open('/tmp/poison', 'w').write('x')\n    return a + b",
        )
        assert warm.run(IDS[:1], ["calc/ops.py"], 60) is not None
        (root / "calc/ops.py").write_text(original)
        candidate(
            root,
            "calc/ops.py",
            "return a - b",
            "import os\n    return a + b if not os.path.exists('/tmp/poison') else 'poisoned'",
        )
        report = warm.run(IDS[:1], ["calc/ops.py"], 60)
        assert report is not None and report.results[0].outcome.value == "passed", report.results[
            0
        ].message


def forged_pyc(source: Path, code: str) -> bytes:
    """An unchecked hash-based .pyc (PEP 552) of ``code`` for ``source``: loaded without looking at
    the source."""
    compiled = compile(code, str(source), "exec")
    return (
        importlib.util.MAGIC_NUMBER + struct.pack("<I", 0b01) + b"\0" * 8 + marshal.dumps(compiled)
    )


def plant_pyc(root: Path, rel: str, code: str) -> Path:
    source = root / rel
    pyc = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
    pyc.parent.mkdir(exist_ok=True)
    pyc.write_bytes(forged_pyc(source, code))
    return pyc


def test_bytecode_left_in_the_tree_never_runs_instead_of_the_source(tmp_path: Path) -> None:
    """A .pyc an earlier run wrote next to ``ops.py`` (its tests could write there) whose add() is
    right: loaded, it would forge a passing verdict for the unchanged, buggy source."""
    root = write_project(tmp_path / "calc", CALC)
    plant_pyc(
        root,
        "calc/ops.py",
        (root / "calc/ops.py").read_text().replace("return a - b", "return a + b"),
    )
    fresh = run_tests(root, PYTEST, test_ids=IDS[:1], timeout=60)
    assert fresh.results[0].outcome.value == "failed"
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready(), warm.refused
        original = candidate(
            root, "calc/ops.py", "return sum(xs) + 1", "return sum(xs) + 1  # touched"
        )
        report = warm.run(IDS[:1], ["calc/ops.py"], 60)
        assert report is not None and report.results[0].outcome.value == "failed"
        (root / "calc/ops.py").write_text(original)


def test_a_run_that_writes_bytecode_into_the_tree_changes_its_fingerprint(tmp_path: Path) -> None:
    """Within one run, a .pyc the candidate's code writes (for a test module collected after it,
    say) could run in place of that test: no test run writes bytecode, so any that appears makes the
    run not count."""
    from repairloop.workspace.fingerprint import changed_files, fingerprint

    root = write_project(tmp_path / "calc", CALC)
    candidate(
        root,
        "calc/ops.py",
        "return a - b",
        "import os\n    os.makedirs('tests/__pycache__', exist_ok=True)\n"
        "    open('tests/__pycache__/test_more.cpython-311-pytest-9.pyc', 'wb').write(b'forged')\n"
        "    return a + b",
    )
    before = fingerprint(root, lambda rel: rel.startswith("tests/"))
    run_tests(root, PYTEST, test_ids=IDS[:1], timeout=60)
    after = fingerprint(root, lambda rel: rel.startswith("tests/"))
    assert changed_files(before, after) == ["tests/__pycache__/test_more.cpython-311-pytest-9.pyc"]
    run_tests(root, PYTEST, test_ids=IDS[1:2], timeout=60)  # the next run starts by removing it
    assert not (root / "tests/__pycache__/test_more.cpython-311-pytest-9.pyc").exists()
    assert changed_files(after, fingerprint(root, lambda rel: rel.startswith("tests/"))) == []


# The first answer poisons the warm server and the tree for the candidates after it (its own tests
# fail): bytecode for calc/numbers.py that raises at import, left in an ignored __pycache__ that the
# revert keeps, and FIFOs where the warm server's next request would write its results. Function
# body only, so it runs in a warm child. The second answer is the right fix.
POISON = """\
--- a/calc/lists.py
+++ b/calc/lists.py
@@ -12,4 +12,18 @@ def last_n(items, n):
     \"\"\"Return the last ``n`` items of ``items``.\"\"\"
     if n <= 0:
         return []
-    return items[-n - 1:]
+    import os
+    here = os.path.dirname(os.path.abspath(__file__))
+    os.makedirs(os.path.join(here, "__pycache__"), exist_ok=True)
+    with open(os.path.join(here, "__pycache__", "numbers.{tag}.pyc"), "wb") as fh:
+        fh.write(bytes.fromhex("{pyc}"))
+    for folder, _, files in os.walk(os.path.join(here, "..", "..")):
+        for name in files:
+            if name.startswith("run-") and name.endswith(".jsonl"):
+                for ext in ("jsonl", "out"):
+                    try:
+                        os.mkfifo(os.path.join(folder, "run-%d.%s" % (int(name[4:-6]) + 1, ext)))
+                    except (OSError, ValueError):
+                        pass
+    return items[-n - 1:]
"""


@pytest.mark.slow
def test_a_poisoned_warm_server_costs_a_fresh_run_never_the_right_fix(
    make_project, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = make_project("off_by_one")
    # as most projects: the bytecode survives a revert
    (project / ".gitignore").write_text("__pycache__/\n")
    git(project, "add", "-A")
    git(project, "commit", "-qm", "ignore bytecode")
    broken = forged_pyc(project / "calc" / "numbers.py", "raise ImportError('poisoned bytecode')")
    poison = POISON.replace("{tag}", sys.implementation.cache_tag).replace("{pyc}", broken.hex())
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    # the poison's capabilities allowed: the warm server's defence is what this test is about
    monkeypatch.setenv("REPAIRLOOP_ALLOW_CAPABILITIES", "*")
    with ScriptedServer([("ok", poison), ("ok", RIGHT)]) as srv:
        code = main(
            [
                "run",
                str(project),
                "--model",
                "openai/scripted",
                "--api-base",
                srv.base_url,
                "--no-builtin",
                "--max-iterations",
                "3",
                "--json",
            ]
        )
        doc: Dict = json.loads(capsys.readouterr().out)
    decisions = [(it["decision"], it.get("reason", "")) for it in doc["iterations"]]
    assert code == 0 and doc["outcome"] == "fixed", (doc["stop_detail"], decisions)
    assert len(srv.requests) == 2 and [d for d, _ in decisions] == ["reverted", "kept"], decisions
