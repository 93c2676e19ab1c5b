"""The seam between a test command and the sandbox it runs in: the command wrapper protocol.

The runner never imports the sandbox (``workspace.sandbox``): the loop hands it a
``CommandWrapper`` that turns an argv into the argv that runs it confined.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import List, Mapping, Optional, Protocol, Sequence, Union


class CommandWrapper(Protocol):
    """Turns a test command's argv into the argv that runs it confined (``workspace.sandbox``).

    ``tree`` is the copy under test (the command runs in it and may write there;
    a sandbox may discard those writes when the command ends); ``outputs`` are
    the files and directories whose writes must be kept (the results and
    coverage files, the JUnit XML); ``env`` is the command's environment;
    ``readonly`` are files inside ``tree`` the command may not change (the
    tests and the files that configure them).
    """

    def __call__(
        self,
        argv: Sequence[str],
        *,
        tree: Path,
        outputs: Sequence[Path],
        env: Mapping[str, str],
        readonly: Sequence[Path] = (),
    ) -> List[str]: ...


def wrapped(
    command: Union[Sequence[str], str],
    wrap: Optional[CommandWrapper],
    tree: Path,
    outputs: Sequence[Path],
    env: Mapping[str, str],
    readonly: Sequence[Path] = (),
) -> Union[Sequence[str], str]:
    """``command`` as ``wrap`` makes it; a program that is not found stays unwrapped, so the
    run still ends as 127 "command not found" (nothing of it runs, confined or not)."""
    if wrap is None:
        return command
    argv = ["/bin/sh", "-c", command] if isinstance(command, str) else [str(a) for a in command]
    if not argv:
        return command
    program = argv[0] if os.sep in argv[0] else shutil.which(argv[0], path=env.get("PATH"))
    if program is None or not os.path.exists(os.path.join(tree, program)):
        return command
    return wrap(
        [argv[0] if os.sep in argv[0] else program, *argv[1:]],
        tree=tree,
        outputs=outputs,
        env=env,
        readonly=readonly,
    )
