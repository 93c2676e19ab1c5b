"""Fault localisation (a worker): which functions and lines of the project the failing tests point
at.

``localise`` ranks the lines the failing tests ran by Ochiai suspiciousness over
per-test line data (``spectra``: coverage.py's dynamic contexts, or the pytest
plugin's own tracer), falling back to the traceback's frames and the functions
the failing tests call when there is none; ``functions`` turns the lines into
ranked functions for the prompt. Computed once per run by the loop.
"""

from repairloop.localise.functions import definition_spans, rank_functions
from repairloop.localise.ochiai import failure_frames, localise, ochiai, rank
from repairloop.localise.spectra import EVERY_TEST, read_spectra

__all__ = [
    "EVERY_TEST",
    "definition_spans",
    "failure_frames",
    "localise",
    "ochiai",
    "rank",
    "rank_functions",
    "read_spectra",
]
