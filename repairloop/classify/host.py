"""What the machine the tests run on lacks: a program, an environment variable, a display, a GPU, a
locale, write access or disk space. Each is ``environment``: no change to the code fixes it.

The structured evidence decides where it can: a FileNotFoundError raised by
``subprocess`` when it starts a program names the program; a KeyError raised
by ``os.environ`` (its frame is in ``os.py``) names the variable. The rest are
the libraries' own messages (tkinter, Qt, PyTorch/CUDA, ``locale``).
"""

from __future__ import annotations

import re
from typing import Optional

from repairloop.classify.evidence import FailureEvidence
from repairloop.types import Failure, FailureKind

_NO_DISPLAY = re.compile(
    r"no display name and no \$DISPLAY|couldn't connect to display|could not connect to display|"
    r"cannot connect to X server|Can't open display"
)
_NO_GPU = re.compile(
    r"Found no NVIDIA driver|no CUDA-capable device|Torch not compiled with CUDA enabled|"
    r"CUDA driver version is insufficient|No CUDA GPUs are available"
)
_ERRNO = re.compile(r"\[Errno (\d+)\][^:]*(?::\s*'([^']+)')?")
_PERMISSION, _READ_ONLY, _NO_SPACE = 13, 30, 28


def _innermost_file(ev: FailureEvidence) -> str:
    """The file name of the innermost frame; a frozen stdlib module ("<frozen os>") as "os.py"."""
    if not ev.frames:
        return ""
    path = ev.frames[-1].path
    if path.startswith("<frozen ") and path.endswith(">"):
        return path[len("<frozen ") : -1].rsplit(".", 1)[-1] + ".py"
    return path.replace("\\", "/").rsplit("/", 1)[-1]


def host_rule(ev: FailureEvidence) -> Optional[Failure]:
    """environment for something the machine lacks, else None."""
    if ev.exc_type == "FileNotFoundError" and _innermost_file(ev) == "subprocess.py":
        program = _ERRNO.search(ev.message)
        name = program.group(2) if program and program.group(2) else "a program the tests start"
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint=f"{name} is not installed or not on PATH: install it where the tests run",
        )
    if ev.exc_type == "KeyError" and _innermost_file(ev) == "os.py":
        variable = ev.message.split(":", 1)[-1].strip().strip("'\"")
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint=f"the tests need the environment variable {variable}: set it "
            "(or the .env file the project documents) where the tests run",
        )
    if _NO_DISPLAY.search(ev.message):
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="the tests open a window and there is no display: run them "
            "under a virtual display (xvfb-run) or with the toolkit's offscreen platform",
        )
    if _NO_GPU.search(ev.message):
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="the tests need a GPU with a working CUDA driver, which this "
            "machine lacks: run them where one is, or select the CPU device",
        )
    if ev.exc_type == "Error" and "unsupported locale setting" in ev.message:
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint="the locale the tests set is not installed here: generate it "
            "(locale-gen) or install the system's locale package",
        )
    return _os_error(ev)


def _os_error(ev: FailureEvidence) -> Optional[Failure]:
    if ev.exc_type not in ("PermissionError", "OSError", "IOError"):
        return None
    errno = _ERRNO.search(ev.message)
    number = (
        int(errno.group(1)) if errno else (_PERMISSION if ev.exc_type == "PermissionError" else 0)
    )
    path = errno.group(2) if errno and errno.group(2) else ""
    if (
        number in (_PERMISSION, _READ_ONLY)
        and path.startswith("/")
        and not path.startswith(str(ev.project))
    ):
        return ev.failure(
            FailureKind.ENVIRONMENT,
            hint=f"the tests may not write {path} here (permission denied or a "
            "read-only file system): point them at a writable directory or run them where it is",
        )
    if number == _NO_SPACE:
        return ev.failure(
            FailureKind.ENVIRONMENT, hint="the disk is full: free space where the tests write"
        )
    return None
