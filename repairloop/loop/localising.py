"""Fault localisation for the model loop (part of the loop layer): one run of the suite with
per-test line coverage in the workspace, ranked by the ``localise`` worker; the loop runs it before
the first iteration and again after a kept candidate changed the code (``session.Session``)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Sequence

from repairloop.localise import localise
from repairloop.types import Localisation, TestFiles, TestRunner, read_sources


def localise_now(
    suite: TestRunner, root: Path, failing: Sequence[str], test_files: TestFiles
) -> Localisation:
    """Run the suite once in ``root`` recording the lines each test runs, and rank the suspects of
    ``failing`` (a Localisation whose ``report`` is that run; its line data file is removed after).
    Raises nothing for the project's faults: without line data the ranking comes from the
    traceback."""
    report = suite.run(root, coverage=True)
    try:
        return localise(
            report, root, tuple(failing), "", test_files, read_sources(root, test_files.is_test)
        )
    finally:
        if report.coverage_file:
            remove_line_data(report.coverage_file)


def remove_line_data(data_file: str) -> None:
    """Remove a run's per-test line data: the run's own temporary directory holding it."""
    data = Path(data_file)
    if data.parent.name.startswith("repairloop-coverage-"):
        shutil.rmtree(data.parent, ignore_errors=True)


def suspects_note(localisation: Localisation, count: int = 3) -> str:
    """One line for the console: the most suspicious functions, with their scores, and how they were
    found."""
    top = ", ".join(f"{f.path}::{f.name} ({f.score:.2f})" for f in localisation.functions[:count])
    how = (
        "per-test coverage"
        if localisation.method == "coverage"
        else "the traceback (no per-test line data)"
    )
    return f"most suspicious ({how}): {top or 'none found'}"
