"""Forked children of the warm server: reading their pipes, waiting for them, killing what they
leave (part of the pytest plugin; ``repairloop_pytest_plugin_warm`` forks them).

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import threading
import time
from typing import FrozenSet, List, Optional, Tuple

CONFINED_ENV = "REPAIRLOOP_WARM_CONFINED"  # "1": the server runs in a sandbox's own PID namespace


def not_dumpable() -> bool:
    """Make this process non-dumpable (``prctl(PR_SET_DUMPABLE, 0)``, Linux): a process of the same
    user, such as a forked child running candidate code, can then neither ``ptrace`` it nor open its
    ``/proc/<pid>/mem`` (ptrace access mode checks, proc(5)). Children forked from it inherit the
    flag. Returns whether it took (False off Linux)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(4, 0, 0, 0, 0)) == 0  # PR_SET_DUMPABLE is 4 (linux/prctl.h)
    except (OSError, AttributeError):
        return False


def threads() -> int:
    """Threads of this process: the kernel's count (C threads too) where /proc has it."""
    try:
        return len(os.listdir("/proc/self/task"))
    except OSError:
        return threading.active_count()


def read_pipe(fd: int, deadline: float) -> str:
    """What a child writes on the pipe ``fd`` (a run's child: "" or why it cannot run the candidate;
    the rehearsal child: module names), read until it closes the pipe; "" when ``deadline`` passes
    first (a child stuck there is then killed by ``wait_for``)."""
    parts: List[bytes] = []
    while True:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return ""
        chunk = os.read(fd, 4096)
        if not chunk:
            return b"".join(parts).decode("utf-8", "replace")
        parts.append(chunk)


def wait_for(pid: int, deadline: float) -> Tuple[Optional[int], bool]:
    """(exit status or None when killed, timed out) of the child, killed at ``deadline``."""
    nap = 0.0005
    while True:
        done, code = os.waitpid(pid, os.WNOHANG)
        if done:
            return (os.WEXITSTATUS(code) if os.WIFEXITED(code) else None), False
        if time.monotonic() >= deadline:
            kill_group(pid)
            os.waitpid(pid, 0)
            return None, True
        time.sleep(nap)
        nap = min(nap * 2, 0.01)


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def kill_leftovers(pgid: int) -> None:
    """Every process a child left: its group; in a sandbox's PID namespace, all but the server's
    line."""
    kill_group(pgid)
    if os.environ.get(CONFINED_ENV) != "1":
        return
    keep = _ancestors()
    for name in os.listdir("/proc"):
        if name.isdigit() and int(name) not in keep:
            try:
                os.kill(int(name), signal.SIGKILL)
            except OSError:
                pass
    _reap()


def tmp_entries() -> Optional[FrozenSet[str]]:
    """What ``/tmp`` holds now, in a sandbox (its private /tmp); None unconfined (the host's /tmp)
    or when it cannot be listed."""
    if os.environ.get(CONFINED_ENV) != "1":
        return None
    try:
        return frozenset(os.listdir("/tmp"))
    except OSError:
        return None


def sweep_tmp(keep: Optional[FrozenSet[str]]) -> None:
    """In a sandbox, remove what a child added to its private ``/tmp`` (all but ``keep``, what it
    held before any child ran), so a file an earlier candidate left at a fixed path is never read by
    a later one's tests. Never a mount point or what holds one (the tree under test is bound there),
    and nothing when ``keep`` is None (unconfined: that /tmp is the host's) or the mounts cannot be
    read."""
    if keep is None or os.environ.get(CONFINED_ENV) != "1":
        return
    try:
        names = os.listdir("/tmp")
        with open("/proc/self/mountinfo", encoding="utf-8") as handle:
            mounts = [line.split()[4] for line in handle if len(line.split()) > 4]
    except OSError:
        return
    for name in names:
        path = os.path.join("/tmp", name)
        if name in keep or any(m == path or m.startswith(path + "/") for m in mounts):
            continue
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            try:
                os.unlink(path)
            except OSError:
                pass


def _ancestors() -> FrozenSet[int]:
    found = {os.getpid()}
    pid = os.getpid()
    while pid > 1:
        try:
            with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
                pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            break
        found.add(pid)
    return frozenset(found | {1})


def _reap() -> None:
    """Collect orphans re-parented to the server (it may be the namespace's subreaper)."""
    while True:
        try:
            done, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if not done:
            return


def redirect_output(path: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
