"""The plugin's end of the result channels (part of the pytest plugin; ``runner/channel.py`` is
repairloop's end).

repairloop hands the pytest process the writing ends of two pipes, named in
``REPAIRLOOP_RESULTS_PIPE`` and ``REPAIRLOOP_JUNIT_PIPE`` as ``FD:INODE``. The plugin uses a
descriptor only when this process holds that very pipe (a launcher between repairloop and pytest
may have closed it, and the number may name another file since), and then the result files
are not written at all. Standard library only; Python 3.8+.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from typing import Any, Optional

RESULTS_PIPE_ENV = "REPAIRLOOP_RESULTS_PIPE"
JUNIT_PIPE_ENV = "REPAIRLOOP_JUNIT_PIPE"


def inherited_pipe(value: Optional[str]) -> Optional[int]:
    """The descriptor ``value`` (``FD:INODE``) names if this process holds that pipe, else None."""
    try:
        fd, inode = (int(part) for part in (value or "").split(":"))
        found = os.fstat(fd)
    except (ValueError, OSError):
        return None
    if not stat.S_ISFIFO(found.st_mode) or found.st_ino != inode:
        return None
    os.set_inheritable(fd, False)  # the project's own subprocesses never get it
    return fd


class WitnessSender:
    """Sends the JUnit XML that pytest wrote into a private file down the witness pipe, at
    ``pytest_unconfigure`` (after every ``pytest_sessionfinish``, pytest's writer's included),
    then closes the pipe."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.directory = tempfile.mkdtemp(prefix="repairloop-junit-")
        self.path = os.path.join(self.directory, "junit.xml")

    def pytest_unconfigure(self, config: Any) -> None:
        try:
            with open(self.path, "rb") as fh:
                data = fh.read()
            view = memoryview(data)
            while view:
                view = view[os.write(self.fd, view) :]
        except OSError:  # no witness is sent: repairloop then distrusts the run
            pass
        finally:
            os.close(self.fd)
            shutil.rmtree(self.directory, ignore_errors=True)
