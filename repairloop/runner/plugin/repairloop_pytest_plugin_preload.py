"""Modules the warm server imports once so its children need not (part of the pytest plugin).

Some pytest plugins import a module only when a session ends: an installed
hypothesis's terminal summary imports hypothesis, about a second, whether or
not a test uses it. Every forked child of the warm server would pay that
again. The server finds such modules with a child that runs no tests
(``repairloop_pytest_plugin_warm``) and imports them here, once. Only modules
the environment itself loaded from outside the tree under test are named,
never the project's own, so this is the one place the plugin imports by a
computed name.

Standard library only, Python 3.8+.
"""

from __future__ import annotations

import importlib
import os
from typing import Any, List


def installed(module: Any, tree: str) -> bool:
    """Whether ``module`` was loaded from a file outside ``tree`` (the environment's, not the
    project's)."""
    path = getattr(module, "__file__", None)
    return isinstance(path, str) and not os.path.realpath(path).startswith(tree + os.sep)


def preload(names: List[str]) -> None:
    """Import ``names`` (modules of the installed environment, never of the tree under test); a
    module that fails to import is left to the children, as before."""
    for name in names:
        try:
            importlib.import_module(name)
        except BaseException:
            continue
