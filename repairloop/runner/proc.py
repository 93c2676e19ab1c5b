"""The one subprocess helper: process-group kills, timeouts and capped output.

Every command repairloop runs for a project (the test command above all) goes
through :func:`run_process`. The child starts in a new session so that a
timeout, or the end of the run, can kill everything it started at once
(TECH-NOTES 5.4: ``start_new_session=True``, SIGTERM, then SIGKILL). Output is
read with a selector in this thread, so a grandchild that keeps the pipe open
can never keep the run alive, and only a head and a tail of it are kept in
memory however much the command prints.
"""

from __future__ import annotations

import os
import selectors
import signal as signal_module
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence, Union

# Seconds between SIGTERM and SIGKILL: long enough for pytest to flush, short
# enough that a hung suite does not hold the loop.
TERM_GRACE = 2.0
# Seconds to keep reading after the command exited, for output still in the
# pipe or held by a descendant that escaped the process group (setsid).
DRAIN_GRACE = 1.0
_CHUNK = 65536
_POLL = 0.1  # seconds between liveness checks while the pipe is quiet


@dataclass(frozen=True)
class ProcessResult:
    """What one command did.

    ``exit_code`` is None when the command was killed by a signal (``signal``
    names it) or by our timeout (``timed_out``). ``output`` is stdout and
    stderr combined, decoded with ``backslashreplace``, capped to a head and a
    tail; ``truncated_bytes`` counts the bytes dropped between them.
    ``seconds`` is wall-clock time.
    """

    exit_code: Optional[int]
    output: str
    seconds: float
    timed_out: bool
    signal: Optional[int]
    truncated_bytes: int


class CappedBuffer:
    """Keeps the first ``limit // 2`` and the last ``limit - limit // 2`` bytes written."""

    def __init__(self, limit: int) -> None:
        limit = max(0, limit)
        self.head_limit = limit // 2
        self.tail_limit = limit - self.head_limit
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0

    def write(self, data: bytes) -> None:
        """Add ``data``; memory stays under about twice the limit plus one chunk."""
        self.total += len(data)
        room = self.head_limit - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        # Trim lazily (amortised): cutting on every chunk would copy the tail each time.
        if len(self.tail) > 2 * self.tail_limit + _CHUNK:
            del self.tail[: len(self.tail) - self.tail_limit]

    @property
    def dropped(self) -> int:
        """Bytes written but not kept."""
        return self.total - len(self.head) - min(len(self.tail), self.tail_limit)

    def text(self) -> str:
        """Head, a marker naming the dropped byte count (if any), and tail, decoded."""
        tail = bytes(self.tail[-self.tail_limit :]) if self.tail_limit else b""
        head = self.head.decode("utf-8", errors="backslashreplace")
        if not self.dropped:
            return head + tail.decode("utf-8", errors="backslashreplace")
        marker = f"\n[... repairloop: {self.dropped} bytes of output dropped ...]\n"
        return head + marker + tail.decode("utf-8", errors="backslashreplace")


def _kill_group(pgid: int, sig: int) -> None:
    """Signal every process in the group; a group already gone is fine."""
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _has_exited(proc: "subprocess.Popen[bytes]") -> bool:
    """True once the child exited, without reaping it where the OS allows.

    Not reaping keeps its pid (the process-group id) reserved, so the kill of
    the leftovers cannot hit an unrelated group that reused the number.
    """
    if proc.returncode is not None:
        return True
    try:
        info = os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except (AttributeError, ChildProcessError, OSError):
        return proc.poll() is not None
    return info is not None


def _start(
    command: Union[Sequence[str], str],
    cwd: Path,
    env: Optional[Mapping[str, str]],
    pass_fds: Sequence[int] = (),
) -> "subprocess.Popen[bytes]":
    """Popen in a new session with stdout+stderr on one pipe; raises OSError as Popen does."""
    return subprocess.Popen(
        command if isinstance(command, str) else list(command),
        shell=isinstance(command, str),
        cwd=str(cwd),
        env=dict(env) if env is not None else None,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )


def _not_started(
    command: Union[Sequence[str], str], error: OSError, started: float
) -> ProcessResult:
    """A command that could not start, as the shell says it: 127 not found, 126 not runnable."""
    name = command if isinstance(command, str) else (list(command) or [""])[0]
    if isinstance(error, FileNotFoundError):
        code, why = 127, "command not found"
    else:
        code, why = 126, f"cannot run command ({error.strerror or error})"
    output = f"repairloop: {why}: {name}\n"
    return ProcessResult(code, output, time.monotonic() - started, False, None, 0)


def run_process(
    argv_or_shell: Union[Sequence[str], str],
    *,
    cwd: Path,
    env: Optional[Mapping[str, str]],
    timeout: Optional[float],
    output_limit: int = 200_000,
    pass_fds: Sequence[int] = (),
) -> ProcessResult:
    """Run a command to completion or to ``timeout`` seconds, whichever comes first.

    A string runs through ``/bin/sh`` (``shell=True``); a sequence is an argv.
    On timeout the whole process group gets SIGTERM, then SIGKILL after
    ``TERM_GRACE`` seconds. When the command exits, whatever it left running
    in its group is killed too. A command that cannot start becomes exit code
    127 (not found) or 126 (not executable), never an exception. At most about
    ``output_limit`` bytes of output are kept (half head, half tail). ``pass_fds`` are
    descriptors the command inherits; this process's copies are closed once it started (or
    failed to), so the command's end is the only writer left (``runner.channel``).
    """
    started = time.monotonic()
    try:
        if not isinstance(argv_or_shell, str) and not list(argv_or_shell):
            return _not_started(argv_or_shell, FileNotFoundError("empty command"), started)
        proc = _start(argv_or_shell, cwd, env, pass_fds)
    except OSError as error:
        return _not_started(argv_or_shell, error, started)
    finally:
        for fd in pass_fds:
            os.close(fd)
    buffer = CappedBuffer(output_limit)
    deadline = None if timeout is None else started + max(0.0, timeout)
    try:
        timed_out = _pump(proc, buffer, deadline)
    finally:
        # Whatever happened (Ctrl-C included), nothing of the command survives us.
        _kill_group(proc.pid, signal_module.SIGKILL)
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()
    code = proc.returncode
    signum = -code if code is not None and code < 0 else None
    exit_code = None if timed_out or signum is not None else code
    return ProcessResult(
        exit_code, buffer.text(), time.monotonic() - started, timed_out, signum, buffer.dropped
    )


def _pump(proc: "subprocess.Popen[bytes]", buffer: CappedBuffer, deadline: Optional[float]) -> bool:
    """Read output until the command and its pipe are done; return True if it timed out."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    timed_out = False
    kill_at: Optional[float] = None  # SIGKILL time once SIGTERM was sent
    drain_until: Optional[float] = None  # set when the command exited
    eof = False
    nap = 0.0  # seconds of the last sleep while waiting for the exit after EOF
    with selectors.DefaultSelector() as selector:
        selector.register(fd, selectors.EVENT_READ)
        while True:
            now = time.monotonic()
            if drain_until is None and _has_exited(proc):
                # The group's leftovers (forked children) must not outlive the run.
                _kill_group(proc.pid, signal_module.SIGKILL)
                drain_until = now + DRAIN_GRACE
            if eof and drain_until is not None:
                return timed_out
            if drain_until is not None and now >= drain_until:
                return timed_out  # a descendant outside the group holds the pipe: stop reading
            if deadline is not None and not timed_out and now >= deadline:
                timed_out = True
                _kill_group(proc.pid, signal_module.SIGTERM)
                kill_at = now + TERM_GRACE
            if kill_at is not None and now >= kill_at:
                _kill_group(proc.pid, signal_module.SIGKILL)
                kill_at = None
            if eof:
                # The pipe closed: usually the command is exiting this very moment, so look
                # again soon (1 ms, doubling up to _POLL / 2) rather than after a fixed nap.
                nap = min(_POLL / 2, nap * 2) if nap else 0.001
                time.sleep(nap)
                continue
            wait = _POLL if deadline is None or timed_out else max(0.0, min(_POLL, deadline - now))
            if selector.select(wait):
                data = os.read(fd, _CHUNK)
                if data:
                    buffer.write(data)
                else:
                    eof = True
