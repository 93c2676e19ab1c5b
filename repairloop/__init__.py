"""repairloop: repairs failing tests with a bounded, honest loop.

The library entry point is :func:`repairloop.repair` (settings in, RunResult
out); the command line in ``repairloop.cli`` adapts it. Nothing heavy is
imported here so that ``repairloop --help`` starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

if TYPE_CHECKING:  # pragma: no cover
    from repairloop.loop.driver import repair as repair


def __getattr__(name: str) -> Any:
    if name == "repair":
        from repairloop.loop.driver import repair

        return repair
    raise AttributeError(name)
