"""The project's interpreter, asked a question about its environment the way a test run is run.

The interpreter is the project's (its ``.venv/bin/python``, or whatever the test
command names), so it is the project's program: it may be a script committed to
the repository. It therefore runs like a test run, through the sandbox's command
wrapper and with the test runs' filtered environment, never on the host with
repairloop's own environment (DESIGN.md, "Workspace, sandbox and side effects").
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Optional, Sequence

from repairloop.runner.wrapping import CommandWrapper, wrapped


@dataclass(frozen=True, eq=False)  # hashed by identity: classify caches its answers per interpreter
class ProjectInterpreter:
    """``python`` run with ``env`` through ``wrap`` (a sandbox; None: unconfined), in a fresh empty
    directory under ``scratch_dir``, which is its current directory and its only writable place.

    Call it as an ``InterpreterQuery``: ``ask(["-c", code, arg], timeout=60)`` -> stdout or None.
    """

    python: str
    env: Mapping[str, str]
    wrap: Optional[CommandWrapper] = None
    scratch_dir: Optional[Path] = None

    def __call__(self, args: Sequence[str], timeout: float) -> Optional[str]:
        """What the interpreter printed on stdout, or None when it failed, timed out or could not
        start."""
        if self.scratch_dir is not None:
            self.scratch_dir.mkdir(parents=True, exist_ok=True)
        here = Path(tempfile.mkdtemp(prefix="repairloop-ask-", dir=self.scratch_dir))
        env = {**self.env, "PYTHONDONTWRITEBYTECODE": "1"}
        try:
            runnable = wrapped([self.python, *args], self.wrap, here, (), env)
            # Not proc.run_process: a bounded one-shot query needs no output cap; a sandbox's
            # PID namespace ends whatever it started when bwrap is killed.
            done = subprocess.run(
                list(runnable),
                capture_output=True,
                text=True,
                env=env,
                cwd=here,
                timeout=timeout,
                stdin=subprocess.DEVNULL,
                check=False,
            )
        except (OSError, subprocess.SubprocessError, ValueError):
            return None
        finally:
            shutil.rmtree(here, ignore_errors=True)
        return done.stdout if done.returncode == 0 else None
