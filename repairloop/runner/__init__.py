"""Run a project's test command and say, from structured results, what happened.

``run_tests`` runs any test command in the workspace through ``proc.run_process``
(process-group kill on timeout, capped output). Per-test results come, in this
order of preference, from our pytest plugin's JSON lines (``source="plugin"``;
the plugin is put on PYTHONPATH and enabled through PYTEST_ADDOPTS for every
command, since ``make test`` may run pytest underneath), from a JUnit XML file
the command writes (``source="junit"``), or from the exit code alone
(``source="exit_code"``). Verdicts never come from what the tests print
(DESIGN.md, "Stop policy").
"""

from __future__ import annotations

import os
import shlex
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Protocol, Sequence, Tuple, Union

from repairloop.errors import ConfigError, ProjectError
from repairloop.runner.command import (
    default_test_command,
    interpreter_of,
    is_pytest_command,
    project_python,
    with_arguments,
)
from repairloop.runner.crosscheck import JUNIT_NAME, disagreement
from repairloop.runner.imports import ImportRedirect, probe_imports
from repairloop.runner.junit import read_junit
from repairloop.runner.proc import ProcessResult, run_process
from repairloop.runner.results import PluginResults, read_plugin_results
from repairloop.types import ResultSource, TestOutcome, TestReport, TestResult

# Read by the bundled plugin: seconds one test may run before it fails as "Timeout".
PER_TEST_TIMEOUT_ENV = "REPAIRLOOP_PER_TEST_TIMEOUT"

__all__ = [
    "PER_TEST_TIMEOUT_ENV",
    "PLUGIN_DIR",
    "PLUGIN_NAME",
    "CommandWrapper",
    "ImportRedirect",
    "ProcessResult",
    "build_test_env",
    "default_test_command",
    "interpreter_of",
    "is_pytest_command",
    "probe_imports",
    "project_python",
    "run_process",
    "run_tests",
]

PLUGIN_NAME = "repairloop_pytest_plugin"
PLUGIN_DIR = Path(os.path.abspath(__file__)).parent / "plugin"
# Always added to a pytest command: run every test even when a module fails to
# import (TECH-NOTES 5.1). The cache goes to the run's scratch directory, so no
# .pytest_cache is left in the workspace; the cache plugin stays loaded, since
# disabling it makes the user's `--lf`/`--ff` in addopts a usage error (exit 4)
# that their own command never hits.
PYTEST_ARGS = ("--continue-on-collection-errors",)


def pytest_arguments(scratch: Path) -> Tuple[str, ...]:
    """The arguments added to every pytest command, with its cache in ``scratch``."""
    return PYTEST_ARGS + ("-o", f"cache_dir={scratch / 'pytest-cache'}")


class CommandWrapper(Protocol):
    """Turns a test command's argv into the argv that runs it confined (``workspace.sandbox``).

    ``tree`` is the copy under test (the command runs in it and may write there;
    a sandbox may discard those writes when the command ends); ``outputs`` are
    the files and directories whose writes must be kept (the results and
    coverage files, the JUnit XML); ``env`` is the command's environment;
    ``readonly`` are files inside ``tree`` the command may not change (the
    tests and the files that configure them).
    """

    def __call__(self, argv: Sequence[str], *, tree: Path, outputs: Sequence[Path],
                 env: Mapping[str, str], readonly: Sequence[Path] = ()) -> List[str]: ...


def _wrapped(command: Union[Sequence[str], str], wrap: Optional[CommandWrapper], tree: Path,
             outputs: Sequence[Path], env: Mapping[str, str], readonly: Sequence[Path] = ()) -> Union[Sequence[str], str]:
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
    return wrap([argv[0] if os.sep in argv[0] else program, *argv[1:]], tree=tree, outputs=outputs, env=env,
                readonly=readonly)


def build_test_env(
    base: Mapping[str, str],
    root: Path,
    *,
    results_file: Path,
    pythonpath: Sequence[Path] = (),
    coverage: Optional[Tuple[Sequence[str], Path]] = None,
    imports: Optional[ImportRedirect] = None,
    junit_witness: Optional[Path] = None,
) -> Dict[str, str]:
    """The test process's environment: ``base`` plus the plugin, import redirection and quiet settings.

    PYTHONPATH becomes ``<plugin dir>:<redirect hook dir>:<pythonpath...>:<base
    PYTHONPATH>``. ``imports`` sends the modules the user's environment
    imports from the user's tree to ``root`` instead (an editable install;
    see ``runner.imports``) and makes nothing else importable; ``pythonpath``
    (dirs relative to ``root``) is for callers that want more on the path.
    ``coverage`` is ``(source dirs relative to root, data file)``.
    ``junit_witness`` is where pytest writes its own JUnit XML of the run
    (``crosscheck``).
    """
    env = dict(base)
    redirect = imports.environment(root) if imports else {}
    paths = [str(PLUGIN_DIR)] + ([redirect.pop("PYTHONPATH")] if redirect else [])
    paths += [str(root / p) for p in pythonpath]
    env.update(redirect)
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    addopts = [env.get("PYTEST_ADDOPTS", "").strip(), f"-p {PLUGIN_NAME}"]
    if junit_witness is not None:
        addopts.append(f"--junitxml={shlex.quote(str(junit_witness))}")
    env["PYTEST_ADDOPTS"] = " ".join(part for part in addopts if part)
    env["REPAIRLOOP_RESULTS"] = str(results_file)
    env["PYTHONDONTWRITEBYTECODE"] = "1"  # no __pycache__ written into the workspace
    env["NO_COLOR"] = "1"
    env["PY_COLORS"] = "0"  # pytest's own switch; output is read by programs
    if coverage is not None:
        dirs, data_file = coverage
        env["REPAIRLOOP_COVERAGE_SOURCE"] = os.pathsep.join(str(root / d) for d in dirs)
        env["REPAIRLOOP_COVERAGE_FILE"] = str(data_file)
    return env


def run_tests(
    root: Path,
    command: Union[Sequence[str], str],
    *,
    test_ids: Sequence[str] = (),
    timeout: Optional[float] = None,
    env: Optional[Mapping[str, str]] = None,
    pythonpath: Sequence[Path] = (),
    junit_xml: Optional[str] = None,
    coverage_source: Optional[Sequence[str]] = None,
    output_limit: int = 200_000,
    wrap: Optional[CommandWrapper] = None,
    imports: Optional[ImportRedirect] = None,
    readonly: Sequence[Path] = (),
) -> TestReport:
    """Run the test command once in ``root`` and return its structured TestReport.

    ``command`` is an argv or a shell string. For a pytest command
    (``is_pytest_command``) ``--continue-on-collection-errors``, a cache
    directory outside ``root`` and ``test_ids`` are appended; ``test_ids`` are ignored
    for other commands. ``timeout`` (seconds) bounds the whole run; on expiry
    the process group is killed and the report has ``timed_out=True`` and
    ``exit_code=None``. ``junit_xml`` (relative to ``root``) is deleted before
    the run so a stale file is never read. ``coverage_source`` (dirs relative
    to root) records per-test line coverage; ``coverage_file`` is then a
    coverage.py data file in its own temporary directory, which the caller
    owns. ``imports`` redirects the project's imports to ``root`` (see
    ``build_test_env``). ``output_limit`` is in bytes. ``wrap`` (a sandbox) turns
    the command into the argv that runs it confined, with the ``readonly``
    files of ``root`` unwritable. A command that is not found gives
    exit code 127. Raises ProjectError when ``root`` is not a directory and
    ConfigError for an empty command.
    """
    root = _checked_root(root, command)
    junit_path = (root / junit_xml) if junit_xml else None
    if junit_path is not None and junit_path.is_file():
        junit_path.unlink()  # a file left by an earlier run must never be read as this one's
    scratch = Path(tempfile.mkdtemp(prefix="repairloop-results-"))
    extra = pytest_arguments(scratch) + tuple(test_ids)
    final = with_arguments(command, extra) if is_pytest_command(command) else command
    coverage_dir: Optional[Path] = None
    if coverage_source:
        coverage_dir = Path(tempfile.mkdtemp(prefix="repairloop-coverage-"))
    keep_coverage = False
    try:
        results_file = scratch / "results.jsonl"
        coverage = None
        if coverage_dir is not None:
            coverage = (tuple(coverage_source or ()), coverage_dir / ".coverage")
        base = os.environ if env is None else env
        witness = scratch / JUNIT_NAME
        run_env = build_test_env(
            base, root, results_file=results_file, pythonpath=pythonpath, coverage=coverage,
            imports=imports,
            junit_witness=witness,
        )
        outputs = [scratch] + ([coverage_dir] if coverage_dir is not None else [])
        if wrap is not None and junit_path is not None and junit_path.parent.is_dir():
            junit_path.touch()  # an (empty) file to keep: the command's JUnit XML lands in it
            outputs.append(junit_path)
        runnable = _wrapped(final, wrap, root, outputs, run_env, readonly)
        done = run_process(runnable, cwd=root, env=run_env, timeout=timeout, output_limit=output_limit)
        plugin = read_plugin_results(results_file, root)
        report = _report(final, done, plugin, junit_path, root, timeout)
        report = _witnessed(report, plugin, witness, root, is_pytest_command(command), command)
        if coverage is not None and coverage[1].is_file():
            keep_coverage = True
            report = replace(report, coverage_file=str(coverage[1]))
        return report
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if coverage_dir is not None and not keep_coverage:
            shutil.rmtree(coverage_dir, ignore_errors=True)


def _witnessed(report: TestReport, plugin: PluginResults, witness: Path, root: Path, pytest_like: bool,
               command: Union[Sequence[str], str]) -> TestReport:
    """``report`` with ``complete`` and ``distrust`` set from the plugin's end record and pytest's JUnit witness.

    A pytest run that never wrote the plugin's end record stopped early (a
    crash, ``os._exit``, a kill): it is incomplete whatever its exit code. A
    command that is not pytest and left no plugin record is judged by its exit
    code alone (complete as far as anyone can tell).
    """
    started = plugin.finished or plugin.records > 0
    complete = plugin.finished or (not started and not pytest_like)
    if not plugin.finished:
        return replace(report, complete=complete)
    text = " ".join(command) if not isinstance(command, str) else command
    own_junit = "--junitxml" in text or "--junit-xml" in text
    junit = read_junit(witness, root) if witness.is_file() else None
    why = disagreement(plugin.results, junit.results if junit else None, expected=not own_junit)
    return replace(report, complete=complete, distrust=why)


def _checked_root(root: Path, command: Union[Sequence[str], str]) -> Path:
    """``root`` made absolute (never resolved); raises ProjectError / ConfigError on bad input."""
    absolute = Path(root).absolute()
    if not absolute.is_dir():
        raise ProjectError(
            f"cannot run tests: {absolute} is not a directory", hint="check the project path"
        )
    if not (command.strip() if isinstance(command, str) else list(command)):
        raise ConfigError(
            "the test command is empty",
            hint="pass --test-cmd 'CMD' or set test_cmd in [tool.repairloop]",
        )
    return absolute


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


def _report(
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
