"""Per-test program spectra: which tests ran each line of the project's non-test code.

Two sources, both written by the localisation run of the test suite
(``runner.run_tests`` with ``coverage_source``): coverage.py's data file with
one dynamic context per test (pytest-cov's ``--cov-context=test`` shape:
``nodeid``, or ``nodeid|setup``/``|run``/``|teardown``; shared notes, section 6),
when the project's environment has coverage.py, else the JSON lines of the
pytest plugin's own tracer (``runner/plugin/repairloop_pytest_plugin_trace.py``:
``sys.monitoring`` on Python 3.12+, ``sys.settrace`` before).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Dict, FrozenSet, Optional, Set, Tuple

from repairloop.types import LineKey, TestFiles, relative_to, resolved, root_forms

# The empty context: code run outside any test (module bodies at import, during collection).
# It runs for every test of the session, so Ochiai counts it as executed by all of them:
# a bug in import-time code then ranks low but is still a candidate, not invisible.
EVERY_TEST = "<every test>"
TRACER_SUFFIX = ".jsonl"  # the plugin tracer's file; anything else is coverage.py's


def read_spectra(
    data_file: str, root: Path, test_files: TestFiles
) -> Tuple[Dict[LineKey, FrozenSet[str]], str]:
    """(per line of non-test project code, the test ids that ran it; the tool that recorded them).

    The tool is ``coverage.py``, ``sys.monitoring`` or ``sys.settrace``. Raises
    ImportError when a coverage.py file is given and coverage.py is not
    importable here, OSError/ValueError for an unreadable file.
    """
    if data_file.endswith(TRACER_SUFFIX):
        return _read_tracer(data_file, root, test_files)
    return _read_coverage(data_file, root, test_files), "coverage.py"


def _keep(path: str, root: Path, test_files: TestFiles) -> Optional[str]:
    rel = relative_to(resolved(path), root_forms(root))
    if rel is None or test_files.is_test(rel) or not rel.endswith(".py"):
        return None
    return rel


def _read_coverage(
    data_file: str, root: Path, test_files: TestFiles
) -> Dict[LineKey, FrozenSet[str]]:
    from coverage import CoverageData  # lazily: only the localisation run needs it

    data = CoverageData(basename=data_file)
    data.read()
    lines: Dict[LineKey, FrozenSet[str]] = {}
    for measured in sorted(data.measured_files()):
        rel = _keep(measured, root, test_files)
        if rel is None:
            continue
        for line, contexts in (data.contexts_by_lineno(measured) or {}).items():
            tests = frozenset(EVERY_TEST if not c else c.split("|", 1)[0] for c in contexts)
            if tests:
                lines[(rel, line)] = tests
    return lines


def _read_tracer(
    data_file: str, root: Path, test_files: TestFiles
) -> Tuple[Dict[LineKey, FrozenSet[str]], str]:
    tool = "line tracer"
    found: Dict[LineKey, Set[str]] = {}
    kept: Dict[str, Optional[str]] = {}
    with open(data_file, encoding="utf-8", errors="replace") as handle:
        for text in handle:
            try:
                record = json.loads(text)
            except ValueError:  # a line cut short by a kill
                continue
            if not isinstance(record, dict):
                continue
            if "tool" in record:
                tool = str(record["tool"])
                continue
            test = str(record.get("test") or "") or EVERY_TEST
            for path, numbers in (record.get("lines") or {}).items():
                if path not in kept:
                    kept[path] = _keep(str(path), root, test_files)
                rel = kept[path]
                if rel is None:
                    continue
                for number in numbers:
                    if int(number) > 0:  # an empty module's code starts at line 0
                        found.setdefault((rel, int(number)), set()).add(test)
    return {key: frozenset(tests) for key, tests in found.items()}, tool
