"""One run per project at a time: the lock file ``<project>/.repairloop/lock``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Callable

from repairloop.errors import LockedError
from repairloop.journal.runs import Clock, state_dir, utcnow


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (``os.kill(pid, 0)``; another user's counts)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # it exists but belongs to someone else
    except OSError:
        return False
    return True


class ProjectLock:
    """One run per project: ``<project>/.repairloop/lock`` holds {pid, started, run_id}.

    Created atomically (``O_CREAT | O_EXCL``). A lock whose pid is dead is taken
    over; a live one raises LockedError. Released on exit (only if still ours).
    """

    def __init__(
        self,
        project: Path,
        run_id: str,
        *,
        clock: Clock = utcnow,
        is_alive: Callable[[int], bool] = pid_alive,
    ) -> None:
        self.path = state_dir(project) / "lock"
        self.run_id = run_id
        self._clock = clock
        self._is_alive = is_alive
        self._content = b""

    def __enter__(self) -> "ProjectLock":
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._content = json.dumps(
            {"pid": os.getpid(), "started": self._clock().isoformat(), "run_id": self.run_id},
            ensure_ascii=False,
        ).encode("utf-8")
        for _ in range(3):  # a stale lock removed, then a second try; a third for a race
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                self._check_holder()
                continue
            try:
                os.write(fd, self._content)
                os.fsync(fd)
            finally:
                os.close(fd)
            return self
        raise LockedError(
            f"could not take {self.path}", hint="remove .repairloop/lock if no run is going"
        )

    def _check_holder(self) -> None:
        """Raise LockedError if the lock's holder is alive, else remove the stale lock."""
        try:
            holder = json.loads(self.path.read_text(encoding="utf-8"))
            pid, run = int(holder["pid"]), holder.get("run_id", "?")
        except FileNotFoundError:
            return  # released meanwhile: try again
        except (OSError, ValueError, KeyError, TypeError):
            # Unreadable: a writer between create and write, or a crash right there.
            raise LockedError(
                f"the project lock {self.path} is unreadable",
                hint="wait for the other run, or remove .repairloop/lock if none is going",
            ) from None
        if self._is_alive(pid):
            raise LockedError(
                f"another repairloop run (pid {pid}, run {run}) is working on this project",
                hint="wait for it, or remove .repairloop/lock if that process is gone",
            )
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def __exit__(self, *exc: object) -> None:
        try:
            if self.path.read_bytes() == self._content:
                self.path.unlink()
        except OSError:
            pass
