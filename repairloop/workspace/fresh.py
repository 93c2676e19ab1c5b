"""A fresh copy of a workspace's start state, for the proof run (DESIGN.md "The verdict").

The reported patch is proven on a copy that nothing a candidate ran could have
touched: the start-state commit written out with a temporary index into a new
temporary directory (``Workspace.export_start``), removed whatever happens.
"""

from __future__ import annotations

import contextlib
import shutil
import tempfile
from pathlib import Path
from typing import Iterator

from repairloop.workspace.tree import Workspace


@contextlib.contextmanager
def start_copy(ws: Workspace) -> Iterator[Path]:
    """Yield a directory holding exactly the start state of ``ws`` (its project root, not the
    repository top).

    Raises WorkspaceError (from git) when the start-state commit cannot be read.
    """
    # registered: see open_workspace
    tmp = Path(tempfile.mkdtemp(prefix="repairloop-proof-", dir=ws.scratch))
    try:
        yield ws.export_start(tmp / "tree")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
