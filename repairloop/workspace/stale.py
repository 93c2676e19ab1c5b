"""Workspaces left by runs that died (SIGKILL, power loss): found by their registry entry, their
orphan test processes killed, their directories removed."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import tempfile
from pathlib import Path
from typing import Callable, List

from repairloop.types import within
from repairloop.workspace.tree import remove_workspace


def _kill_processes_in(directory: Path) -> None:
    """Kill the process groups of processes still working in ``directory`` (Linux /proc).

    A run killed with SIGKILL cannot stop the test command it started in its
    own session; such an orphan keeps running in the dead run's workspace.
    Only processes whose working directory is inside that directory are hit.
    """
    proc = Path("/proc")
    if not proc.is_dir():
        return
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cwd = Path(os.readlink(entry / "cwd"))
        except OSError:
            continue
        if within(cwd, directory):
            with contextlib.suppress(OSError):
                os.killpg(os.getpgid(int(entry.name)), signal.SIGKILL)


def _ours(tmp: Path, project: Path) -> bool:
    """Whether ``tmp`` can be a workspace ``open_workspace`` made: see
    ``clean_stale_workspaces``."""
    return (
        tmp.name.startswith("repairloop-ws-")
        and tmp.parent == Path(tempfile.gettempdir())
        and not tmp.is_symlink()
        and not within(project, tmp)
        and not within(tmp, project)
    )


def clean_stale_workspaces(
    project: Path, registry_dir: Path, *, is_alive: Callable[[int], bool]
) -> List[str]:
    """Remove the workspaces of runs whose pid is dead; return their directories.

    Only directories named ``repairloop-ws-*`` directly in the temporary directory
    (where ``open_workspace`` makes them), outside the project and not containing
    it, are removed, so the user's files are never touched, whatever a registry
    entry says (the registry lies in the project, which could have planted one).
    """
    removed: List[str] = []
    for entry in sorted(Path(registry_dir).glob("*.json")) if Path(registry_dir).is_dir() else []:
        try:
            data = json.loads(entry.read_text(encoding="utf-8"))
            pid, tmp = int(data["pid"]), Path(data["workspace"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if is_alive(pid) or not _ours(tmp, Path(project)):
            continue
        worktree = Path(data["worktree"]) if data.get("worktree") else None
        _kill_processes_in(tmp)
        remove_workspace(Path(project) if worktree else None, tmp, worktree)
        with contextlib.suppress(OSError):
            entry.unlink()
        removed.append(str(tmp))
    return removed
