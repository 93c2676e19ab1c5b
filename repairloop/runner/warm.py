"""A warm test process: pytest imports and collects the suite once, then runs each candidate's tests
in a fork.

``WarmProcess`` starts the project's own pytest command (its interpreter, its
arguments, the bundled plugin, the same environment, import redirection and
sandbox as a fresh run) with ``REPAIRLOOP_WARM_FD`` naming one end of a socket
pair; the plugin's warm server (``plugin/repairloop_pytest_plugin_warm.py``)
answers each ``run`` in a forked child that first brings the candidate's
changed modules up to date. A candidate then costs its failing tests' own run
time instead of an interpreter start, the imports and the collection.

A warm answer is a pre-filter, never a verdict that keeps anything: callers
run the full suite fresh before keeping a candidate (DESIGN.md, "The
verdict"). ``run`` answers None, with the reason in ``why``, whenever the
warm path cannot be trusted, and the caller runs the tests fresh: a command
that is not pytest, xdist, no fork, a change the reload cannot represent (at
module level, a test module, a conftest or configuration file, a file that is
not Python, a function that ran while the suite was imported, assert-rewritten
or compiled modules), tests the server did not collect, files changed under
the server (it is restarted), a child that ended before pytest did.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import weakref
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Union

from repairloop.runner import (
    PYTEST_ARGS,
    CommandWrapper,
    ImportRedirect,
    build_test_env,
    wrapped,
)
from repairloop.runner.assemble import assemble
from repairloop.runner.command import is_pytest_command, with_arguments
from repairloop.runner.plugin_records import read_plugin_results
from repairloop.runner.proc import ProcessResult
from repairloop.types import TestReport, WarmStart

WARM_FD_ENV = "REPAIRLOOP_WARM_FD"  # read by the plugin (repairloop_pytest_plugin_warm)
CONFINED_ENV = "REPAIRLOOP_WARM_CONFINED"
SKIP_ENV = "REPAIRLOOP_WARM_SKIP"
MAX_STARTS = 5  # starts of one warm process's server (the first and four restarts)
ANSWER_GRACE = 15.0  # seconds past a request's own timeout before the server counts as hung
OUTPUT_LIMIT = 200_000  # bytes of a child's output kept (its tail)


class WarmProcess:
    """One warm pytest process serving one tree (``root``); use as a context manager.

    ``command``, ``env``, ``imports``, ``wrap`` and ``readonly`` are what a
    fresh ``run_tests`` of the same tree would use (the server runs in one
    sandbox for its whole life). ``start_timeout`` gives, when a start begins,
    the seconds it may take (a run's time left: a server whose start hangs must
    not outlive the run's ``--timeout``).
    ``why`` holds the reason of the last None from ``run``; ``stale`` is True
    when that reason was files changed under the server (``restart`` it).
    """

    def __init__(
        self,
        root: Path,
        command: Union[Sequence[str], str],
        *,
        env: Mapping[str, str],
        imports: Optional[ImportRedirect] = None,
        wrap: Optional[CommandWrapper] = None,
        readonly: Sequence[Path] = (),
        start_timeout: Callable[[], float] = lambda: 120.0,
        scratch_dir: Optional[Path] = None,
    ) -> None:
        self.root = Path(root).absolute()
        self.scratch_dir = (
            scratch_dir  # where its temporary directory goes (a run's registered one)
        )
        self.command = command
        self.env = env
        self.imports = imports
        self.wrap = wrap
        self.readonly = tuple(readonly)
        self.start_timeout = start_timeout
        self.why = ""
        self.stale = False
        self._proc: Optional["subprocess.Popen[bytes]"] = None
        self._channel: Optional[socket.socket] = None
        self._reader: Any = None
        self._scratch: Optional[Path] = None
        self._requests = 0
        self._starts = 0
        self.refused = ""  # why the server will not be started again (set for good)
        self.last_start: Optional[WarmStart] = None

    def __enter__(self) -> "WarmProcess":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def running(self) -> bool:
        return self._proc is not None

    def ready(self) -> bool:
        """Start the server unless it runs or was refused (``refused``); whether it runs now.

        The server imports the tree as it is: call this before a candidate is
        written into it. After ``MAX_STARTS`` starts (restarts after files
        changed under it, or a crash) it is not started again.
        """
        if self._proc is not None:
            return True
        if self.refused:
            return False
        if self._starts >= MAX_STARTS:
            self.refused = (
                f"the warm server was started {self._starts} times; the tests now run fresh"
            )
            return False
        self._starts += 1
        self.last_start = self.start()
        if not self.last_start.ready:
            self.refused = self.last_start.why
        return self.last_start.ready

    def start(self) -> WarmStart:
        """Start the server and wait until it collected the suite; never raises for the project's
        faults."""
        began = time.monotonic()
        if not is_pytest_command(self.command):
            return WarmStart(False, "the test command is not pytest")
        if not hasattr(os, "fork"):
            return WarmStart(False, "this platform has no fork()")
        self._scratch = Path(tempfile.mkdtemp(prefix="repairloop-warm-", dir=self.scratch_dir))
        ours, theirs = socket.socketpair()
        try:
            self._proc = self._launch(theirs)
        except OSError as error:
            ours.close()
            self.close()
            return WarmStart(False, f"the warm server could not start: {error}")
        finally:
            theirs.close()
        self._channel = ours
        self._reader = ours.makefile("r", encoding="utf-8")
        # Should the owner forget ``close`` (a crash), the server still ends with this object.
        weakref.finalize(self, _stop, self._proc, ours)
        hello = self._answer(self.start_timeout())
        if not hello or not hello.get("ready"):
            why = (
                str(hello.get("why"))
                if hello
                else f"the warm server did not start: {self._log_tail()}"
            )
            self.close()
            return WarmStart(False, why, time.monotonic() - began)
        return WarmStart(True, "", time.monotonic() - began, int(hello.get("collected") or 0))

    def _launch(self, theirs: socket.socket) -> "subprocess.Popen[bytes]":
        assert self._scratch is not None
        final = with_arguments(self.command, PYTEST_ARGS)
        env = build_test_env(
            self.env,
            self.root,
            results_file=self._scratch / "server.jsonl",
            imports=self.imports,
            cache_dir=self._scratch / "pytest-cache",
        )
        env[WARM_FD_ENV] = str(theirs.fileno())
        env[SKIP_ENV] = os.pathsep.join(
            str(self.root / d) for d in (".venv", "venv", ".tox", ".nox")
        )
        if self.wrap is not None:
            env[CONFINED_ENV] = (
                "1"  # a PID namespace of its own: the server may end every stray process in it
            )
        runnable = wrapped(final, self.wrap, self.root, [self._scratch], env, self.readonly)
        log = open(self._scratch / "server.log", "wb")  # handed to the child, closed below
        try:
            return subprocess.Popen(
                runnable if isinstance(runnable, str) else list(runnable),
                shell=isinstance(runnable, str),
                cwd=str(self.root),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(theirs.fileno(),),
                start_new_session=True,
            )
        finally:
            log.close()

    def run(
        self, test_ids: Sequence[str], changed: Sequence[str], timeout: float
    ) -> Optional[TestReport]:
        """The report of ``test_ids`` run with the tree as it is now, ``changed`` (paths relative to
        the tree) being the candidate's files; None (and ``why``) when it must run fresh instead.

        ``timeout`` bounds the tests (seconds); the report then has ``timed_out``.
        Never starts the server (``ready`` does, before the candidate is
        written). Raises nothing for the project's faults.
        """
        self.why, self.stale = "", False
        if self._proc is None:
            return self._refuse(
                self.refused
                or "the warm server is not running (it restarts before the next candidate)"
            )
        assert self._scratch is not None and self._channel is not None
        self._requests += 1
        # Names no earlier child can guess: one that planted a file (a FIFO, a link) where the next
        # request writes must not be able to stall or steer it.
        name = f"run-{self._requests}-{secrets.token_hex(8)}"
        results, output = self._scratch / f"{name}.jsonl", self._scratch / f"{name}.out"
        request = {
            "id": name,
            "tests": list(test_ids),
            "changed": list(changed),
            "results": str(results),
            "output": str(output),
            "timeout": timeout,
        }
        try:
            self._channel.sendall((json.dumps(request) + "\n").encode("utf-8"))
            answer = self._answer(timeout + ANSWER_GRACE)
        except OSError as error:
            answer = {
                "ran": False,
                "stale": True,
                "why": f"the warm server's channel broke: {error}",
            }
        if answer is not None and answer.get("id") != name:  # not this request's answer: trust none
            answer = {
                "ran": False,
                "stale": True,
                "why": "the warm server answered another request",
            }
        try:
            return self._report(answer, test_ids, results, output, timeout)
        finally:
            for path in (results, output):
                path.unlink(missing_ok=True)

    def _report(
        self,
        answer: Optional[Dict[str, Any]],
        test_ids: Sequence[str],
        results: Path,
        output: Path,
        timeout: float,
    ) -> Optional[TestReport]:
        if answer is None:
            self.close()
            return self._refuse(
                f"the warm server stopped answering: {self._log_tail()}", stale=True
            )
        if not answer.get("ran"):
            if answer.get("stale"):
                self.close()
            return self._refuse(
                str(answer.get("why") or "refused"), stale=bool(answer.get("stale"))
            )
        plugin = read_plugin_results(results, self.root)
        timed_out = bool(answer.get("timed_out"))
        status = answer.get("status")
        done = ProcessResult(
            None if timed_out or status is None else int(status),
            _tail(output),
            float(answer.get("seconds") or 0.0),
            timed_out,
            None,
            0,
        )
        argv = with_arguments(self.command, tuple(test_ids))
        report = assemble(argv, done, plugin, None, self.root, timeout)
        if not plugin.finished and not timed_out:
            return self._refuse("the warm child ended before pytest finished (a crash or an exit)")
        return replace(report, complete=plugin.finished)

    def _refuse(self, why: str, stale: bool = False) -> Optional[TestReport]:
        """None, remembering why (the caller runs the tests fresh)."""
        self.why, self.stale = why, stale
        return None

    def _answer(self, timeout: float) -> Optional[Dict[str, Any]]:
        """The server's next message, or None when it ended or said nothing within ``timeout``
        seconds."""
        assert self._channel is not None
        self._channel.settimeout(timeout)
        try:
            line = self._reader.readline()
        except (OSError, ValueError):
            return None
        if not line:
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return None
        return message if isinstance(message, dict) else None

    def _log_tail(self) -> str:
        if self._scratch is None:
            return ""
        text = _tail(self._scratch / "server.log", 2000).strip()
        return text.splitlines()[-1] if text else "no output"

    def close(self) -> None:
        """End the server and remove its files.

        The server is killed with everything it started (its process group;
        in a sandbox, the sandbox's PID namespace with it): nothing it would
        do at its session's end is needed, and a graceful end would cost a
        pytest session finish (a plugin's terminal summary can import a
        module for a second) on every close.
        """
        for closable in (self._reader, self._channel):
            if closable is not None:
                try:
                    closable.close()
                except OSError:
                    pass
        self._reader = self._channel = None
        if self._proc is not None:
            _kill_group(self._proc.pid)
            self._proc.wait()
            self._proc = None
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None


def _stop(proc: "subprocess.Popen[bytes]", channel: socket.socket) -> None:
    channel.close()
    if proc.poll() is None:
        _kill_group(proc.pid)
        proc.wait()


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def _tail(path: Path, limit: int = OUTPUT_LIMIT) -> str:
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, os.SEEK_END)
            handle.seek(max(0, size - limit))
            return handle.read().decode("utf-8", "backslashreplace")
    except OSError:
        return ""


__all__: List[str] = ["WarmProcess", "WarmStart"]
