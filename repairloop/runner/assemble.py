"""A TestReport from what one run left: the plugin's records, a JUnit file, the exit code, the
witness.

``assemble`` picks the best source of per-test results (the finished plugin,
JUnit XML, the partial plugin, nothing); ``witnessed`` adds whether the run
reached its normal end and whether pytest's own JUnit record agrees with the
plugin (``crosscheck``).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional, Sequence, Tuple, Union

from repairloop.runner.crosscheck import disagreement
from repairloop.runner.junit import read_junit
from repairloop.runner.plugin_records import PluginResults
from repairloop.runner.proc import ProcessResult
from repairloop.types import ResultSource, TestOutcome, TestReport, TestResult


def _interrupted(nodeid: str, done: ProcessResult, timeout: Optional[float]) -> TestResult:
    """The test that was running when the run stopped without pytest finishing."""
    if done.timed_out:
        exc_type = "Timeout"
        message = (
            f"the test-suite run exceeded its timeout of {timeout:g} s while this test ran;"
            " the process group was killed"
        )
    else:
        exc_type = "Crash"
        message = "the test process ended while this test ran, before pytest could report it"
    return TestResult(nodeid, TestOutcome.ERROR, phase="call", exc_type=exc_type, message=message)


def _notes(done: ProcessResult, plugin: PluginResults, timeout: Optional[float]) -> str:
    """Lines repairloop adds to the output: why the run stopped, what was not recorded."""
    notes = ""
    if done.timed_out:
        notes += (
            f"\nrepairloop: the test command timed out after {timeout:g} s;"
            " its process group was killed\n"
        )
    elif done.signal is not None:
        notes += f"\nrepairloop: the test command was killed by signal {done.signal}\n"
    if plugin.coverage_available is False:
        notes += (
            "\nrepairloop: per-test coverage was not recorded"
            " (coverage.py is missing or failed in the test environment)\n"
        )
    return notes


def assemble(
    command: Union[Sequence[str], str],
    done: ProcessResult,
    plugin: PluginResults,
    junit_path: Optional[Path],
    root: Path,
    timeout: Optional[float],
) -> TestReport:
    """Pick the best source of per-test results: finished plugin, JUnit, partial plugin, none."""
    results: Tuple[TestResult, ...] = ()
    source, collected = ResultSource.EXIT_CODE, None
    junit = read_junit(junit_path, root) if junit_path is not None and not plugin.finished else None
    if plugin.finished:
        source, results, collected = ResultSource.PLUGIN, plugin.results, plugin.collected
    elif junit is not None:
        source, results, collected = ResultSource.JUNIT, junit.results, junit.collected
    elif plugin.results or plugin.in_progress:
        source, results, collected = ResultSource.PLUGIN, plugin.results, plugin.collected
        if plugin.in_progress:
            results = results + (_interrupted(plugin.in_progress, done, timeout),)
    output = done.output + _notes(done, plugin, timeout)
    if junit_path is not None and junit is None and not plugin.finished:
        output += (  # a missing file would otherwise pass unseen (`--junit-xml --json` too)
            f"\nrepairloop: the test command wrote no JUnit XML at {junit_path.relative_to(root)}"
            " (junit_xml); its results come from the exit code alone\n"
        )
    return TestReport(
        command=(command,) if isinstance(command, str) else tuple(command),
        exit_code=done.exit_code,
        results=results,
        output=output,
        seconds=done.seconds,
        timed_out=done.timed_out,
        source=source,
        collected=collected,
        signal=done.signal,
    )


def witnessed(
    report: TestReport,
    plugin: PluginResults,
    witness: Path,
    root: Path,
    pytest_like: bool,
) -> TestReport:
    """``report`` with ``complete`` and ``distrust`` set from the plugin's end record and pytest's
    JUnit witness.

    A pytest run that never wrote the plugin's end record stopped early (a
    crash, ``os._exit``, a kill): it is incomplete whatever its exit code. A
    command that is not pytest and left no plugin record is judged by its exit
    code alone (complete as far as anyone can tell).
    """
    started = plugin.finished or plugin.records > 0
    complete = plugin.finished or (not started and not pytest_like)
    if not plugin.finished:
        return replace(report, complete=complete)
    junit = read_junit(witness, root) if witness.is_file() else None
    why = disagreement(plugin.results, junit.results if junit else None, expected=True)
    return replace(report, complete=complete, distrust=why)
