"""Result channels: the test process sends its results through pipes that repairloop reads.

A candidate's code runs in the pytest process that reports on it. With result *files*, code that
outlives the session (an ``atexit`` hook, a thread, a finalizer) could rewrite both witnesses
after pytest wrote them, so that they agree on a pass. Here each witness is a pipe: repairloop
keeps the reading end, the test process inherits only the writing end (named in its environment
as ``FD:INODE``, which the plugin pops at start-up and checks is that very pipe), and the plugin
closes it when the session ends. So:

- nothing a test run writes to the file system is read as a result (the received bytes are
  written by repairloop, after the run, where the sandbox binds nothing writable);
- what the plugin sent cannot be taken back, and anything sent after its ``session`` record
  (code still running when the session is over) makes the run untrusted, as does a writing
  end that a process of the run still held open after pytest ended;
- pytest's own JUnit XML comes through a second pipe, sent by the plugin once pytest wrote it.

What it does not do: code running *inside* the test process while the tests run can reach the
writing end (``/proc/self/fd`` lists it; no descriptor is hidden from its own process) or the
plugin's objects, and send forged records before the session ends. The capability rules
(``patch/capabilities.py``) refuse the powers that takes (``os``, ``gc``, ``sys``, threads,
files), and the proof run is a fresh process; the channel removes the after-the-end forgeries.

A pytest started by another Python program (tox, nox, hatch) inherits no descriptor (Python's
``subprocess`` closes them): its plugin then writes the result files as before, and only then
are the files read (``Channels.used``).
"""

from __future__ import annotations

import json
import os
import selectors
import threading
from pathlib import Path
from typing import Dict, List, Optional, Tuple

RESULTS_PIPE_ENV = "REPAIRLOOP_RESULTS_PIPE"
JUNIT_PIPE_ENV = "REPAIRLOOP_JUNIT_PIPE"
# How long the writing ends may stay open after the test command ended (seconds): the plugin
# closed its own at the end of the session, and the command's process group is killed.
EOF_GRACE = 5.0
RECEIVE_LIMIT = 512 * 1024 * 1024  # bytes kept per channel; more is read and dropped


class Channel:
    """One pipe: its writing end for the test process, a thread here reading it into memory."""

    def __init__(self) -> None:
        self._read_fd, self.write_fd = os.pipe()
        os.set_inheritable(self.write_fd, True)
        self._inode = os.fstat(self.write_fd).st_ino
        self._data = bytearray()
        self.dropped = 0  # bytes past RECEIVE_LIMIT
        self.held_open = False  # a writing end was still open EOF_GRACE seconds after the run
        self._stop = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def env_value(self) -> str:
        """``FD:INODE``: the descriptor the test process inherits and the pipe it must be."""
        return f"{self.write_fd}:{self._inode}"

    def close_write(self) -> None:
        """Close this process's copy of the writing end (once the test command started)."""
        if self.write_fd >= 0:
            os.close(self.write_fd)
            self.write_fd = -1

    def _read(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._read_fd, selectors.EVENT_READ)
            while not self._stop.is_set():
                if not selector.select(timeout=0.2):
                    continue
                chunk = os.read(self._read_fd, 1 << 16)
                if not chunk:
                    return
                room = RECEIVE_LIMIT - len(self._data)
                self._data += chunk[: max(room, 0)]
                self.dropped += max(len(chunk) - max(room, 0), 0)

    def received(self) -> bytes:
        """Everything sent, once every writing end is closed (or EOF_GRACE seconds passed: then
        ``held_open``). Call after the test command ended; closes the reading end."""
        self.close_write()
        self._reader.join(EOF_GRACE)
        self.held_open = self._reader.is_alive()
        self.shut()
        return bytes(self._data)

    def shut(self) -> None:
        """Stop reading and close both ends (idempotent)."""
        self.close_write()
        self._stop.set()
        self._reader.join()
        if self._read_fd >= 0:
            os.close(self._read_fd)
            self._read_fd = -1


class Channels:
    """The two channels of one run, and what they received, written where the sandbox cannot.

    ``used`` is True when the plugin spoke through the results pipe (its first record); the
    run's results are then what the pipes carried, and the files the plugin was also given
    are never read.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory  # repairloop's own: never bound writable into a sandbox
        self.results = Channel()
        self.junit = Channel()
        self.used = False
        self.distrust = ""

    def env(self) -> Dict[str, str]:
        """The variables that name the channels to the plugin."""
        return {RESULTS_PIPE_ENV: self.results.env_value(), JUNIT_PIPE_ENV: self.junit.env_value()}

    def hand_over(self) -> Tuple[int, ...]:
        """The writing ends, for the test command to inherit; ``run_process(pass_fds=...)``
        closes this process's copies, so they are no longer this object's to close."""
        fds = (self.results.write_fd, self.junit.write_fd)
        self.results.write_fd = self.junit.write_fd = -1
        return fds

    def collect(self) -> Tuple[Path, Path]:
        """After the run: the received results and JUnit XML as files in ``directory``, and
        ``used``/``distrust`` set. Raises OSError when ``directory`` cannot be written."""
        results, junit = self.results.received(), self.junit.received()
        self.directory.mkdir(parents=True, exist_ok=True)
        results_file, junit_file = self.directory / "results.jsonl", self.directory / "junit.xml"
        results_file.write_bytes(results)
        if junit:
            junit_file.write_bytes(junit)
        self.used = results.startswith(b'{"kind": "channel"')
        if self.used:
            self.distrust = _why_untrusted(results, self.results, self.junit)
        return results_file, junit_file

    def __enter__(self) -> "Channels":
        return self

    def __exit__(self, *exc: object) -> None:
        for channel in (self.results, self.junit):  # received, or a run that never started
            channel.shut()


def _why_untrusted(results: bytes, *channels: Channel) -> str:
    """Why what the results pipe carried cannot be trusted, or ""."""
    if any(c.dropped for c in channels):
        return "the test run sent more results than repairloop keeps"
    if any(c.held_open for c in channels):
        return "a process of the test run still held the results channel open after pytest ended"
    late = _after_session(results.decode("utf-8", "replace").splitlines())
    if late:
        return f"the results channel received {late} record(s) after the session ended"
    return ""


def _after_session(lines: List[str]) -> int:
    """How many non-empty lines follow the plugin's first ``session`` record (0 without one)."""
    end: Optional[int] = None
    for index, line in enumerate(lines):
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("kind") == "session":
            end = index
            break
    if end is None:
        return 0
    return sum(1 for line in lines[end + 1 :] if line.strip())
