"""The warm server: collect once, then run each candidate's tests in a forked child (part of the
pytest plugin).

Started by repairloop (``runner/warm.py``) as the project's own pytest
command with ``REPAIRLOOP_WARM_FD`` naming an inherited socket. After
collection it answers ``{"ready": true, "collected": N}`` (or ``{"ready":
false, "why": ...}``) and serves one JSON line per request::

    {"id": "run-1-…", "tests": [nodeids], "changed": [paths], "results": file, "output": file,
    "timeout": seconds}

For each request it forks. The child brings the changed modules up to date
(``repairloop_pytest_plugin_reload``), tells the server on a pipe whether it
could (before any candidate code runs), then runs the tests through pytest's
own run protocol, the recorder writing the usual records to ``results`` and
the terminal's output going to ``output``, and exits with pytest's exit
status. The server itself never runs candidate code: it answers ``{"id": …,
"ran": true, "status": code, "timed_out": bool}``, or ``{"id": …, "ran":
false, "why": ..., "stale": bool}`` when the request must run in a fresh
process instead (``stale``: files changed under the server, start a new one).
After each child every process the child left is killed: its process group,
and in a sandbox (``REPAIRLOOP_WARM_CONFINED``, a PID namespace of its own)
every process but the server and its ancestors; there, what the child added to
the sandbox's private ``/tmp`` is removed too. The server is not dumpable
(``prctl``), so no child can ``ptrace`` it or write its memory, and each child
reads bytecode only from its own empty ``sys.pycache_prefix``.

Standard library and pytest only, Python 3.8+.
"""

from __future__ import annotations

import importlib
import json
import os
import shutil
import socket
import sys
import tempfile
import time
from typing import Any, Callable, Dict, FrozenSet, List, Optional, Tuple

import pytest
from repairloop_pytest_plugin_children import (
    kill_leftovers,
    not_dumpable,
    read_pipe,
    redirect_output,
    sweep_tmp,
    threads,
    tmp_entries,
    wait_for,
)
from repairloop_pytest_plugin_preload import installed, preload
from repairloop_pytest_plugin_reload import Snapshot, bring_up_to_date, refusal, stop_tracing

WARM_FD_ENV = "REPAIRLOOP_WARM_FD"
# directories inside the tree that are not the project (os.pathsep-separated)
SKIP_ENV = "REPAIRLOOP_WARM_SKIP"
_FALLBACK_STATUS = 86  # a child that could not bring its modules up to date exits with this
REHEARSAL_SECONDS = (
    30.0  # the most the start waits for the child that finds what a session's end imports
)


class WarmServer:
    """A pytest plugin that replaces the run loop with the request loop (see the module
    docstring)."""

    def __init__(self, config: Any, fd: int, recorder: Any) -> None:
        self.config = config
        self.fd = fd
        self.channel = socket.socket(fileno=fd)
        self.recorder = recorder
        self.reader = self.channel.makefile("r", encoding="utf-8")
        self.snapshot: Optional[Snapshot] = None
        self.test_modules: FrozenSet[str] = frozenset()
        self.tmp: Optional[FrozenSet[str]] = (
            None  # what the sandbox's /tmp held before any child ran
        )

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtestloop(self, session: Any) -> bool:
        # before any child exists: candidate code may not write this process's memory
        not_dumpable()
        self.tmp = tmp_entries()  # before any child exists too (the rehearsal's is one)
        traced = stop_tracing()
        why = self._refusal(session, traced)
        if why:
            self._send({"ready": False, "why": why})
            return True
        root = str(self.config.rootpath) if hasattr(self.config, "rootpath") else os.getcwd()
        skip = tuple(p for p in os.environ.get(SKIP_ENV, "").split(os.pathsep) if p)
        preload(self._rehearse(session, os.path.realpath(os.getcwd())))
        self.snapshot = Snapshot(os.getcwd(), skip)
        self.test_modules = frozenset(os.path.realpath(str(_item_path(i))) for i in session.items)
        self._send(
            {"ready": True, "collected": len(session.items), "pid": os.getpid(), "rootdir": root}
        )
        items = {item.nodeid: item for item in session.items}
        for line in self.reader:
            request = json.loads(line)
            self._send(dict(self._serve(session, items, request), id=request.get("id")))
        return True

    def _refusal(self, session: Any, traced: bool) -> str:
        if not hasattr(os, "fork"):
            return "this platform has no fork()"
        if self.recorder is None:
            return "the results recorder is not active"
        if self.config.pluginmanager.hasplugin("dsession") or getattr(
            self.config.option, "numprocesses", None
        ):
            return "pytest-xdist distributes the tests (-n)"
        if not traced:
            return (
                "something replaced the import tracer while the suite was collected (a debugger "
                "or coverage)"
            )
        if threads() > 1:
            return (
                "the suite started threads while it was imported (a fork would copy the locks "
                "they hold)"
            )
        return ""

    def _rehearse(self, session: Any, tree: str) -> List[str]:
        """Modules from outside ``tree`` that a run's session end imports, found in a child running
        no tests.

        Plugins import some modules only when a session ends (hypothesis's
        terminal summary imports hypothesis, about a second): every child
        would pay that again, so the server imports them once (``preload``).
        The child runs no test and no candidate code; none is named when it
        started a thread (a fork would copy the locks it holds) or did not end
        within ``REHEARSAL_SECONDS``.
        """
        names, status, timed_out = self._in_child(
            lambda pipe, tmp: _rehearsal_child(self, session, tree, pipe, tmp), REHEARSAL_SECONDS
        )
        return names.split() if status == 0 and not timed_out else []

    def _in_child(
        self, body: Callable[[int, str], None], seconds: float
    ) -> Tuple[str, Optional[int], bool]:
        """Fork; the child runs ``body(pipe, tmp)`` (it never returns) without the server's channel.
        Returns what it wrote on ``pipe``, its exit status (None when killed) and whether
        ``seconds`` ran out; every process it left is killed and its temporary directory ``tmp``
        removed."""
        pipe_r, pipe_w = os.pipe()
        tmp = tempfile.mkdtemp(prefix="warm-")
        deadline = time.monotonic() + seconds
        pid = os.fork()
        if pid == 0:  # the child: never returns
            os.close(pipe_r)
            os.close(self.fd)  # candidate code gets no channel to repairloop
            body(pipe_w, tmp)
        os.close(pipe_w)
        try:
            written = read_pipe(pipe_r, deadline)
            status, timed_out = wait_for(pid, deadline)
        finally:
            os.close(pipe_r)
            kill_leftovers(pid)
            shutil.rmtree(tmp, ignore_errors=True)
            sweep_tmp(self.tmp)
        return written, status, timed_out

    def _send(self, message: Dict[str, Any]) -> None:
        self.channel.sendall((json.dumps(message) + "\n").encode("utf-8"))

    def _serve(
        self, session: Any, items: Dict[str, Any], request: Dict[str, Any]
    ) -> Dict[str, Any]:
        assert self.snapshot is not None
        unknown = [t for t in request["tests"] if t not in items]
        if unknown or not request["tests"]:
            return {
                "ran": False,
                "why": f"not collected by the warm server: {', '.join(unknown[:3]) or 'no tests'}",
            }
        changed = frozenset(
            os.path.realpath(os.path.join(self.snapshot.root, p)) for p in request["changed"]
        )
        for path in sorted(changed):
            why = refusal(path, self.snapshot, self.test_modules)
            if why:
                return {"ran": False, "why": why}
        foreign = self.snapshot.foreign_changes(changed)
        if foreign:
            names = ", ".join(os.path.relpath(p, self.snapshot.root) for p in foreign[:3])
            return {
                "ran": False,
                "stale": True,
                "why": f"files changed since the warm server started: {names}",
            }
        selected = [
            items[t] for t in dict.fromkeys(request["tests"])
        ]  # pytest's order: the ids' own
        return self._fork(session, selected, sorted(changed), request)

    def _fork(
        self, session: Any, selected: List[Any], changed: List[str], request: Dict[str, Any]
    ) -> Dict[str, Any]:
        started = time.monotonic()
        why, status, timed_out = self._in_child(
            lambda pipe, tmp: _child(self, session, selected, changed, request, pipe, tmp),
            float(request["timeout"]),
        )
        if why:
            return {"ran": False, "why": why}
        return {
            "ran": True,
            "status": status,
            "timed_out": timed_out,
            "seconds": time.monotonic() - started,
        }


def _item_path(item: Any) -> Any:
    return getattr(item, "path", None) or item.fspath


def _child(
    server: WarmServer,
    session: Any,
    selected: List[Any],
    changed: List[str],
    request: Dict[str, Any],
    decision: int,
    tmp: str,
) -> None:
    """Bring the modules up to date, run ``selected``, exit with pytest's status. Never returns."""
    status = 3
    try:
        os.setpgid(0, 0)
        # Bytecode only from this child's own empty directory: what an earlier child left in the
        # server's is never run (nothing is written: PYTHONDONTWRITEBYTECODE).
        sys.pycache_prefix = os.path.join(tmp, "pycache")
        try:
            why = _bring_up_to_date(server, changed)
        except Exception as error:  # a reload that breaks is a reason to go fresh, never a verdict
            why = f"the modules could not be brought up to date: {type(error).__name__}: {error}"
        os.write(decision, why.encode("utf-8"))
        os.close(decision)
        if why:
            os._exit(_FALLBACK_STATUS)
        redirect_output(request["output"])
        os.environ["TMPDIR"] = tmp
        tempfile.tempdir = None
        status = _run(server, session, selected, request["results"])
    except BaseException as error:  # the child must end here, whatever a test did
        try:
            sys.stderr.write(f"repairloop warm child: {type(error).__name__}: {error}\n")
        except Exception:
            pass
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except Exception:
                pass
        os._exit(status)


def _rehearsal_child(server: WarmServer, session: Any, tree: str, names: int, tmp: str) -> None:
    """Run no tests through a session's end, then write the modules that imported from outside
    ``tree``."""
    status = 3
    try:
        os.setpgid(0, 0)
        before = set(sys.modules)
        redirect_output(os.devnull)
        os.environ["TMPDIR"] = tmp
        tempfile.tempdir = None
        _run(server, session, [], os.path.join(tmp, "results.jsonl"))
        new = [n for n, m in list(sys.modules.items()) if n not in before and installed(m, tree)]
        if threads() == 1:
            os.write(names, " ".join(new).encode("utf-8"))
        status = 0
    except BaseException:
        pass
    finally:
        os._exit(status)


def _bring_up_to_date(server: WarmServer, changed: List[str]) -> str:
    snapshot = server.snapshot
    assert snapshot is not None
    if any(p not in snapshot.stats for p in changed):
        # a new module: let the import system list its directory again
        importlib.invalidate_caches()
    return next((w for w in (bring_up_to_date(p, snapshot) for p in changed) if w), "")


def _run(server: WarmServer, session: Any, selected: List[Any], results: str) -> int:
    """pytest's own run loop over ``selected`` (``_pytest.main.pytest_runtestloop``), then its
    session end."""
    server.recorder.reopen(results)
    session.items = selected
    session.testsfailed = 0
    session.testscollected = len(selected)
    server.recorder.pytest_sessionstart(session)
    server.recorder.pytest_collection_finish(session)
    status = 0
    try:
        for i, item in enumerate(selected):
            nextitem = selected[i + 1] if i + 1 < len(selected) else None
            item.config.hook.pytest_runtest_protocol(item=item, nextitem=nextitem)
            if session.shouldfail or session.shouldstop:
                break
        status = 1 if session.testsfailed else 2 if session.shouldstop else 0 if selected else 5
    except pytest.exit.Exception as exc:
        status = exc.returncode if exc.returncode is not None else 2
    except KeyboardInterrupt:
        status = 2
    session.config.hook.pytest_sessionfinish(session=session, exitstatus=status)
    return status
