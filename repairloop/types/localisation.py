"""Fault localisation's records: suspicious lines and functions, ranked, and how they were found.

The ``localise`` worker computes them once per run (Ochiai over per-test line
data, traceback fallback); the loop hands them to the context (what the model is
shown) and to the offline engine (what it mutates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, FrozenSet, List, Mapping, Optional, Tuple

from repairloop.types.reports import TestReport

LineKey = Tuple[str, int]  # (project-relative path, 1-based line)
FAR = 10**6  # distance of a line in a file with no failing frame


@dataclass(frozen=True)
class Suspect:
    """A suspicious line: ``path`` relative to the project root, 1-based ``line``, ``score`` in
    0..1.

    ``failed``/``passed`` count the failing and passing tests that executed it
    (zero for traceback localisation); ``distance`` is in lines to the nearest
    failing frame in the same file (``FAR`` when there is none).
    """

    path: str
    line: int
    score: float
    failed: int = 0
    passed: int = 0
    distance: int = FAR

    def to_json(self) -> Dict[str, object]:
        return {
            "path": self.path,
            "line": self.line,
            "score": round(self.score, 4),
            "failed": self.failed,
            "passed": self.passed,
        }


@dataclass(frozen=True)
class SuspectFunction:
    """A suspicious function: ``path`` (project-relative), qualified ``name`` (``Class.method``; a
    class for a line of its body; ``<module>`` for module-level code), its lines ``start``..``end``
    (1-based, decorators included), ``score`` (its most suspicious line's, 0..1), those suspicious
    ``lines`` (most suspicious first) and the failing ``tests`` that ran them (empty when localised
    from the traceback)."""

    path: str
    name: str
    start: int
    end: int
    score: float
    lines: Tuple[int, ...] = ()
    tests: FrozenSet[str] = frozenset()
    kind: str = (
        "function"  # "function", "class" (a line of its body outside any method) or "module"
    )
    copy_of: str = ""  # for a copy (``Localisation.copies``): the suspect whose lines it repeats
    calls: str = ""  # for a caller (``Localisation.callers``): the suspect it calls
    says: str = ""  # for a message source (``Localisation.speakers``): its text in the failure
    via: str = ""  # for a message source that reads the text from a module-level constant: its name
    top_lines: int = 1  # how many of ``lines`` (the first ones) have the function's score

    def to_json(self) -> Dict[str, object]:
        return {
            "path": self.path,
            "name": self.name,
            "lines": f"{self.start}-{self.end}",
            "score": round(self.score, 4),
            "suspicious": list(self.lines[:5]),
        }


@dataclass(frozen=True)
class Localisation:
    """Ranked suspects, most suspicious first, and how they were found.

    ``method`` is ``coverage`` (Ochiai over per-test line data) or ``traceback``
    (the fallback: degraded); ``note`` says why the fallback was used; ``tool``
    recorded the line data (``coverage.py``, ``sys.monitoring``,
    ``sys.settrace``); ``ran_by`` maps each suspect line to the failing tests
    that ran it (empty for the fallback); ``spectra`` maps every project line the run recorded to
    every test that ran it, passing ones too (``<every test>`` for code run outside any test;
    empty for the fallback): the behaviour check compares it with a later run's
    (``loop.behaviour``).
    """

    method: str
    suspects: Tuple[Suspect, ...]
    failing: Tuple[str, ...]
    passing: Tuple[str, ...]
    note: str = ""
    tool: str = ""
    ran_by: Mapping[LineKey, FrozenSet[str]] = field(default_factory=dict)
    report: Optional[TestReport] = (
        None  # the run the line data came from (None: no run, the traceback only)
    )
    functions: Tuple[SuspectFunction, ...] = ()  # the suspects' functions, most suspicious first
    # functions no failing test ran that repeat lines of the most suspicious ones (``copy_of``)
    copies: Tuple[SuspectFunction, ...] = ()
    # functions no failing test ran that call one of the most suspicious ones (``calls``)
    callers: Tuple[SuspectFunction, ...] = ()
    # functions whose string literals the failing tests' messages quote (``says``)
    speakers: Tuple[SuspectFunction, ...] = ()
    spectra: Mapping[LineKey, FrozenSet[str]] = field(default_factory=dict, repr=False)

    def top_functions(self, test_id: str, count: int) -> List[SuspectFunction]:
        """The ``count`` most suspicious functions ``test_id`` ran, most suspicious first."""
        return [f for f in self.functions if test_id in f.tests][:count]

    @property
    def degraded(self) -> bool:
        """True when no per-test line data was used: the ranking is much weaker."""
        return self.method != "coverage"

    def top(self, count: int = 10) -> List[Dict[str, object]]:
        """The first ``count`` suspects as JSON-ready dicts."""
        return [s.to_json() for s in self.suspects[:count]]
