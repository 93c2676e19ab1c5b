"""Warm validation (part of the loop layer): warm test processes whose starts and fallbacks are
journalled.

A warm process (``runner.warm.WarmProcess``) runs a candidate's failing tests
in a fork of a pytest process that collected the suite once. It serves the
offline engine's worker copies (``journalled_warm``, handed to the engine as
its ``open_warm``) and the model loop's targeted re-run of the failing tests
in the workspace (``WarmSlot``, used by ``validation``). What it answers only
filters candidates: the full suite and the proof run always run fresh, and
every keep decision comes from a fresh run (``validation.untrusted_run``).
Each start, refusal and fresh fallback is a ``WarmEvent`` in the journal (an
engine worker's fallbacks after the first ``MAX_FALLBACK_EVENTS`` only in its
counts, which the engine's notes carry).
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Callable, Optional, Sequence

from repairloop.journal import Journal, WarmEvent
from repairloop.types import TestReport, TestRunner, WarmTestProcess

MAX_FALLBACK_EVENTS = (
    20  # fallback events journalled per warm process; the rest are counted in notes
)


class JournalledWarm:
    """A warm process (``runner.warm.WarmProcess``, or whatever the run's TestRunner makes) that
    journals as ``where`` (``loop`` or ``builtin``); the engine's ``WarmTests``."""

    def __init__(self, process: WarmTestProcess, journal: Journal, where: str) -> None:
        self.process = process
        self.journal = journal
        self.where = where
        self._fallbacks = 0
        self.served = 0  # runs answered warm
        self.fresh = 0  # runs sent to a fresh process
        self._lock = threading.Lock()

    @property
    def why(self) -> str:
        """Why the last ``run`` answered None."""
        return self.process.why

    def ready(self) -> bool:
        """Start the process if it is not running (call before writing a candidate); whether it
        runs."""
        with self._lock:
            was_running, refused = self.process.running, self.process.refused
            ready = self.process.ready()
            start = self.process.last_start
            if not was_running and ready and start is not None:
                self.journal.record(
                    WarmEvent(
                        where=self.where,
                        action="started",
                        seconds=round(start.seconds, 3),
                        collected=start.collected,
                    )
                )
            elif not ready and not refused:
                self.journal.record(
                    WarmEvent(where=self.where, action="refused", why=self.process.refused)
                )
            return ready

    def run(
        self, test_ids: Sequence[str], changed: Sequence[str], timeout: float
    ) -> Optional[TestReport]:
        """The warm report, or None (journalled, ``why``) when the tests must run fresh."""
        report = self.process.run(test_ids, changed, timeout)
        with self._lock:
            if report is not None:
                self.served += 1
                return report
            self.fresh += 1
            if self._fallbacks < MAX_FALLBACK_EVENTS and not self.process.refused:
                self._fallbacks += 1
                self.journal.record(
                    WarmEvent(where=self.where, action="fallback", why=self.process.why)
                )
        return None

    def close(self) -> None:
        """End the process; a process that was started journals how many runs it served warm and
        fresh."""
        started = self.process.last_start is not None and self.process.last_start.ready
        self.process.close()
        if started:
            self.journal.record(
                WarmEvent(where=self.where, action="closed", served=self.served, fresh=self.fresh)
            )


def journalled_warm(
    suite: TestRunner, journal: Journal, where: str
) -> Callable[[Path], JournalledWarm]:
    """What makes a copy's warm process, for the offline engine (``open_warm``)."""
    return lambda root: JournalledWarm(suite.warm(root), journal, where)


class WarmSlot:
    """The workspace's warm process for the model loop, made on first use and kept across
    iterations."""

    def __init__(self) -> None:
        self.warm: Optional[JournalledWarm] = None

    def get(self, make: Callable[[], JournalledWarm]) -> JournalledWarm:
        if self.warm is None:
            self.warm = make()
        return self.warm

    def close(self) -> None:
        if self.warm is not None:
            self.warm.close()
            self.warm = None
