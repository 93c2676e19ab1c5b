"""Nothing left behind: a run killed with SIGKILL leaves its temporary directories registered, and
`repairloop clean` (or the next run) removes every one of them, the offline engine's scratch copies
and the test runs' result directories included, and stops the test processes still working in
them."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import List

import pytest
from conftest import init_repo

# The offline engine's copies are recognisable by their path: a test session there hangs, so the
# kill finds the engine's copies and its test processes in place (the workspace's own runs go on
# normally).
HANG_IN_ENGINE_COPIES = """\
import os
import time


def pytest_sessionstart(session):
    if "repairloop-builtin-" in os.getcwd():
        time.sleep(120)
"""


def leftovers(tmp: Path) -> List[str]:
    """Every file or directory repairloop made in the temporary directory ``tmp``."""
    return sorted(p.name for p in tmp.iterdir() if p.name.startswith("repairloop-"))


def processes_in(directory: Path) -> List[str]:
    """The working directories inside ``directory`` of the processes running there (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:  # gone, or a zombie
            continue
        if cwd == str(directory) or cwd.startswith(str(directory) + os.sep):
            found.append(cwd)
    return found


def wait_for_engine_copies(tmp: Path, proc: subprocess.Popen, limit: float = 240) -> None:
    """Until a test process runs in one of the engine's scratch copies (wherever they are made)."""
    deadline = time.monotonic() + limit
    while not any("repairloop-builtin-" in cwd for cwd in processes_in(tmp)):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.1)


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds test processes through /proc (Linux)")
def test_clean_removes_everything_a_killed_run_left(make_project, tmp_path: Path) -> None:
    project = make_project("off_by_one", git_repo=False)
    (project / "conftest.py").write_text(HANG_IN_ENGINE_COPIES, encoding="utf-8")
    init_repo(project)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "repairloop", "run", str(project), "--model", "builtin", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        wait_for_engine_copies(tmp, proc)
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert leftovers(tmp), "the killed run left nothing: the test killed it too late"
    done = subprocess.run(
        [sys.executable, "-m", "repairloop", "clean", str(project)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0 and "1 stale workspace(s) removed" in done.stderr, done.stderr
    # Before: the workspace went, but the engine's copies (repairloop-builtin-*) and the result
    # directories of its test runs (repairloop-results-*) stayed in TMPDIR, one set per killed run.
    assert leftovers(tmp) == []
    deadline = time.monotonic() + 30
    while (
        processes_in(tmp) and time.monotonic() < deadline
    ):  # killed; /proc entries go with their parent's wait
        time.sleep(0.2)
    assert processes_in(tmp) == []
