"""run_process: exit codes, capped output, undecodable bytes, timeouts and process-group kills.

Every case runs a real child process (this interpreter with ``-c``); bounds on
time are generous, so a slow machine still passes.
"""

from __future__ import annotations

import os
import signal
import textwrap
from pathlib import Path
from typing import List

from runner_helpers import PYTHON, read_pid, wait_gone

from repairloop.runner.proc import CappedBuffer, run_process


def script(code: str) -> List[str]:
    return [PYTHON, "-c", textwrap.dedent(code)]


def test_exit_code_and_combined_output_are_reported(tmp_path: Path) -> None:
    code = "import sys; print('to out'); print('to err', file=sys.stderr); sys.exit(3)"
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=60)
    assert done.exit_code == 3
    assert "to out" in done.output and "to err" in done.output
    assert not done.timed_out and done.signal is None and done.truncated_bytes == 0


def test_runs_in_cwd_with_the_given_environment(tmp_path: Path) -> None:
    env = {**os.environ, "REPAIRLOOP_PROBE": "42"}
    code = "import os; print(os.getcwd()); print(os.environ['REPAIRLOOP_PROBE'])"
    done = run_process(script(code), cwd=tmp_path, env=env, timeout=60)
    assert done.exit_code == 0
    assert str(tmp_path.resolve()) in done.output and "42" in done.output


def test_five_megabytes_of_output_keep_head_and_tail_under_the_limit(tmp_path: Path) -> None:
    code = """
        import sys
        sys.stdout.write("HEAD-START\\n")
        for i in range(50_000):
            sys.stdout.write("x" * 99 + "\\n")
        sys.stdout.write("TAIL-END\\n")
    """
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=120, output_limit=10_000)
    assert done.exit_code == 0
    assert done.output.startswith("HEAD-START")
    assert done.output.rstrip().endswith("TAIL-END")
    assert len(done.output) < 10_200
    assert done.truncated_bytes > 4_900_000
    assert f"{done.truncated_bytes} bytes of output dropped" in done.output


def test_undecodable_bytes_survive_as_escapes(tmp_path: Path) -> None:
    code = "import sys; sys.stdout.buffer.write(b'bad \\xff\\xfe bytes, caf\\xc3\\xa9 ok\\n')"
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=60)
    assert done.exit_code == 0
    assert "bad \\xff\\xfe bytes" in done.output
    assert "café ok" in done.output


def test_missing_program_is_exit_127_in_both_forms(tmp_path: Path) -> None:
    argv = run_process(["repairloop-no-such-command"], cwd=tmp_path, env=None, timeout=60)
    assert argv.exit_code == 127
    assert "command not found: repairloop-no-such-command" in argv.output
    shell = run_process("repairloop-no-such-command --flag", cwd=tmp_path, env=None, timeout=60)
    assert shell.exit_code == 127
    assert "not found" in shell.output


def test_file_without_execute_permission_is_exit_126(tmp_path: Path) -> None:
    target = tmp_path / "run.sh"
    target.write_text("#!/bin/sh\necho hi\n")
    target.chmod(0o644)
    if os.geteuid() == 0 and os.access(target, os.X_OK):  # pragma: no cover - odd filesystems
        return
    done = run_process([str(target)], cwd=tmp_path, env=None, timeout=60)
    assert done.exit_code == 126
    assert "cannot run command" in done.output


def test_timeout_kills_the_whole_process_group(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    code = f"""
        import subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("started", flush=True)
        time.sleep(600)
    """
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=2)
    assert done.timed_out
    assert done.exit_code is None
    assert done.seconds < 60
    assert "started" in done.output
    assert wait_gone(read_pid(pid_file))


def test_sigterm_ignoring_command_is_killed_after_the_grace(tmp_path: Path) -> None:
    code = """
        import signal, time
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        print("ignoring", flush=True)
        time.sleep(600)
    """
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=1)
    assert done.timed_out and done.exit_code is None
    assert done.signal == signal.SIGKILL
    assert done.seconds < 60


def test_grandchild_holding_the_pipe_does_not_keep_the_run_alive(tmp_path: Path) -> None:
    pid_file = tmp_path / "grandchild.pid"
    # The grandchild inherits stdout (our pipe) and outlives its parent.
    code = f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("parent done", flush=True)
    """
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=300)
    assert done.exit_code == 0 and not done.timed_out
    assert "parent done" in done.output
    assert done.seconds < 60
    assert wait_gone(read_pid(pid_file))


def test_escaped_descendant_holding_the_pipe_stops_the_reading(tmp_path: Path) -> None:
    pid_file = tmp_path / "escaped.pid"
    # setsid() takes it out of our process group: it cannot be killed with the
    # group, but its open pipe must not hold the run either.
    code = f"""
        import subprocess, sys
        child = subprocess.Popen(
            [sys.executable, "-c", "import os, time; os.setsid(); time.sleep(120)"])
        open({str(pid_file)!r}, "w").write(str(child.pid))
        print("parent done", flush=True)
    """
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=300)
    pid = read_pid(pid_file)
    try:
        assert done.exit_code == 0 and not done.timed_out
        assert done.seconds < 60
        assert "parent done" in done.output
    finally:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_command_killed_by_a_signal_has_no_exit_code(tmp_path: Path) -> None:
    code = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    done = run_process(script(code), cwd=tmp_path, env=None, timeout=60)
    assert done.exit_code is None
    assert done.signal == signal.SIGKILL
    assert not done.timed_out


def test_capped_buffer_keeps_exact_head_and_tail() -> None:
    buffer = CappedBuffer(10)
    for chunk in (b"abc", b"defgh", b"ijklmnop", b"qrstuvwxyz"):
        buffer.write(chunk)
    assert buffer.total == 26
    assert buffer.dropped == 16
    text = buffer.text()
    assert text.startswith("abcde")
    assert text.endswith("vwxyz")
    assert "16 bytes of output dropped" in text


def test_capped_buffer_under_the_limit_is_verbatim() -> None:
    buffer = CappedBuffer(100)
    buffer.write(b"hello ")
    buffer.write(b"world")
    assert buffer.text() == "hello world"
    assert buffer.dropped == 0
