"""Test suites that misbehave are contained to the workspace, classified and reported."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Dict

import pytest
from conftest import git, init_repo

from repairloop.cli import main

pytestmark = pytest.mark.slow

CODE = "def double(x):\n    return 2 * x\n"


def project(tmp_path: Path, test_body: str, name: str = "proj") -> Path:
    root = tmp_path / name
    (root / "tests").mkdir(parents=True)
    (root / "app.py").write_text(CODE)
    (root / "keep.txt").write_text("the user's file\n")
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\npythonpath = ["."]\n'
    )
    (root / "tests" / "test_app.py").write_text(
        "import os, signal, subprocess, sys, time\nfrom app import double\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n" + test_body
    )
    return init_repo(root)


def alive(pid: int) -> bool:
    """True while ``pid`` runs; a zombie (killed, not yet reaped by its new parent) is not alive."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, IndexError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.2)
    return True


def run_json(root: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> Dict:
    code = main(["run", str(root), "--json", *extra])
    doc = json.loads(capsys.readouterr().out)
    doc["exit"] = code
    return doc


@pytest.mark.usefixtures("no_flaky_check")  # a deterministic failure: no flaky re-run
def test_a_hung_test_is_stopped_by_the_per_test_timeout(tmp_path, capsys) -> None:
    root = project(tmp_path, "def test_hangs():\n    time.sleep(600)\n")
    started = time.monotonic()
    doc = run_json(root, capsys, "--per-test-timeout", "2")
    assert time.monotonic() - started < 120
    assert doc["exit"] == 3 and doc["failure_kinds"] == {"timeout": 1}
    assert "timeout" in doc["stop_detail"]


@pytest.mark.usefixtures("no_flaky_check")  # a deterministic failure: no flaky re-run
def test_a_loop_that_never_ends_in_the_code_under_test_is_repaired(tmp_path, capsys) -> None:
    """A bug that makes the code under test hang is a logic fault: the offline engine fixes it."""
    root = project(
        tmp_path,
        "from app import total_below\n\n\ndef test_total():\n    assert total_below(4) == 6\n",
    )
    (root / "app.py").write_text(
        CODE + "\n\ndef total_below(n):\n    i = 0\n    total = 0\n"
        "    while i < n:\n        total += i\n    return total\n"
    )
    git(root, "commit", "-qam", "total_below, whose loop never moves on")
    doc = run_json(root, capsys, "--per-test-timeout", "2", "--timeout", "240")
    assert doc["failure_kinds"] == {"logic": 1}
    assert all("does not end" in f["hint"] for f in doc["failures"])
    assert (
        "1 test(s) ran past the per-test timeout at the baseline; candidate runs stop a test after "
        "2 s (5x the slowest passing test, at least 2 s)"
    ) in doc["notes"]
    assert doc["exit"] == 0 and doc["outcome"] == "fixed", doc["stop_detail"]
    assert "+        i += 1" in doc["patch"]


@pytest.mark.usefixtures("no_flaky_check")  # a deterministic failure: no flaky re-run
def test_a_hung_suite_is_killed_by_the_test_timeout(tmp_path, capsys) -> None:
    root = project(tmp_path, "def test_hangs():\n    time.sleep(600)\n")
    doc = run_json(root, capsys, "--test-timeout", "4")
    assert doc["exit"] == 3 and "timeout" in doc["failure_kinds"]


def test_children_that_outlive_the_test_do_not_keep_the_run_alive(
    tmp_path, capsys, monkeypatch
) -> None:
    # Unconfined, so the test can leave its child's pid in tmp_path; the sandboxed case (a PID
    # namespace) is in tests/test_sandbox_attacks.py.
    monkeypatch.setenv("REPAIRLOOP_SANDBOX", "none")
    marker = tmp_path / "child.pid"
    body = (
        f"def test_forks():\n    p = subprocess.Popen([sys.executable, '-c', 'import time; "
        f"time.sleep(300)'])\n    open({str(marker)!r}, 'w').write(str(p.pid))\n"
    )
    root = project(tmp_path, body)
    started = time.monotonic()
    doc = run_json(root, capsys)
    assert doc["exit"] == 0 and doc["outcome"] == "nothing_to_fix"
    assert time.monotonic() - started < 120
    pid = int(marker.read_text())
    assert not alive(pid)  # the runner killed the test's process group


def test_fifty_megabytes_of_output_stay_out_of_memory_and_prompt(tmp_path, capsys) -> None:
    body = "def test_loud():\n    sys.stdout.write('y' * 50_000_000)\n    assert double(3) == 7\n"
    root = project(tmp_path, body)
    code = main(["classify", str(root), "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["kind"] == "logic"
    assert len(json.dumps(doc)) < 100_000


@pytest.mark.usefixtures("no_flaky_check")  # a deterministic failure: no flaky re-run
def test_a_segfault_is_an_environment_failure(tmp_path, capsys) -> None:
    root = project(tmp_path, "def test_crashes():\n    os.kill(os.getpid(), signal.SIGSEGV)\n")
    doc = run_json(root, capsys)
    assert doc["exit"] == 3 and "environment" in doc["failure_kinds"]


@pytest.mark.usefixtures("no_flaky_check")  # a deterministic failure: no flaky re-run
def test_a_test_that_deletes_files_only_deletes_them_in_the_workspace(tmp_path, capsys) -> None:
    body = "def test_cleans_up():\n    os.remove('keep.txt')\n    os.remove('app.py')\n"
    root = project(tmp_path, body)
    doc = run_json(root, capsys)
    assert doc["exit"] == 0
    assert (root / "keep.txt").read_text() == "the user's file\n" and (
        root / "app.py"
    ).read_text() == CODE


def test_a_flaky_failure_is_reported_and_left_alone(tmp_path, capsys, monkeypatch) -> None:
    # the test keeps its state in tmp_path, across runs
    monkeypatch.setenv("REPAIRLOOP_SANDBOX", "none")
    flag = tmp_path / "ran-once"
    body = (
        f"def test_flaky():\n    first = not os.path.exists({str(flag)!r})\n"
        f"    open({str(flag)!r}, 'w').close()\n    assert not first\n"
    )
    root = project(tmp_path, body)
    doc = run_json(root, capsys)
    assert doc["flaky_tests"] == ["tests/test_app.py::test_flaky"]
    assert doc["failure_kinds"] == {"flaky": 1} and doc["iterations"] == []
    assert doc["exit"] == 3 and "flaky" in doc["stop_detail"]
