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
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

from repairloop.errors import ConfigError, ProjectError
from repairloop.runner.assemble import assemble, witnessed
from repairloop.runner.channel import Channels
from repairloop.runner.command import (
    default_test_command,
    interpreter_of,
    is_pytest_command,
    project_python,
    with_arguments,
)
from repairloop.runner.crosscheck import JUNIT_NAME
from repairloop.runner.import_redirect import ImportRedirect, probe_imports
from repairloop.runner.interpreter import ProjectInterpreter
from repairloop.runner.plugin_records import read_plugin_results
from repairloop.runner.proc import ProcessResult, run_process
from repairloop.runner.wrapping import CommandWrapper, wrapped
from repairloop.types import NOT_PROJECT_DIRS, TestReport, is_bytecode, within

# Read by the bundled plugin: seconds one test may run before it fails as "Timeout".
PER_TEST_TIMEOUT_ENV = "REPAIRLOOP_PER_TEST_TIMEOUT"

__all__ = [
    "CACHE_DIR_ENV",
    "PER_TEST_TIMEOUT_ENV",
    "PLUGIN_DIR",
    "PLUGIN_NAME",
    "PYTEST_ARGS",
    "CommandWrapper",
    "ImportRedirect",
    "ProcessResult",
    "ProjectInterpreter",
    "build_test_env",
    "default_test_command",
    "interpreter_of",
    "is_pytest_command",
    "probe_imports",
    "project_python",
    "run_process",
    "run_tests",
    "wrapped",
]

PLUGIN_NAME = "repairloop_pytest_plugin"
PLUGIN_DIR = Path(os.path.abspath(__file__)).parent / "plugin"
# The plugin's line tracer writes here (beside coverage.py's data file) when coverage.py is not
# importable in the project's environment (plugin/repairloop_pytest_plugin_trace.py).
LINES_NAME = "repairloop-lines.jsonl"
# Always added to a pytest command: run every test even when a module fails to
# import (TECH-NOTES 5.1). Nothing else is: an option the user's configuration
# could reject (`-o cache_dir=...` is an unknown option, an error under
# --strict-config or -W error, where `-p no:cacheprovider` disables the cache
# plugin) would make their suite fail here and not under their own command. The
# cache goes to the run's scratch directory through the plugin instead
# (CACHE_DIR_ENV), so no .pytest_cache is left in the workspace; the cache
# plugin stays loaded, since disabling it makes the user's `--lf`/`--ff` in
# addopts a usage error (exit 4) that their own command never hits.
PYTEST_ARGS = ("--continue-on-collection-errors",)
CACHE_DIR_ENV = "REPAIRLOOP_CACHE_DIR"
JUNIT_WITNESS_ENV = "REPAIRLOOP_JUNIT_WITNESS"  # read by the plugin: where its JUnit witness goes


def build_test_env(
    base: Mapping[str, str],
    root: Path,
    *,
    results_file: Path,
    pythonpath: Sequence[Path] = (),
    coverage: Optional[Tuple[Sequence[str], Path]] = None,
    imports: Optional[ImportRedirect] = None,
    junit_witness: Optional[Path] = None,
    cache_dir: Optional[Path] = None,
) -> Dict[str, str]:
    """The test process's environment: ``base`` plus the plugin, import redirection, a fixed
    ``PYTHONHASHSEED`` (unless ``base`` sets one) and quiet
    settings.

    PYTHONPATH becomes ``<plugin dir>:<redirect hook dir>:<pythonpath...>:<base
    PYTHONPATH>``. ``imports`` sends the modules the user's environment
    imports from the user's tree to ``root`` instead (an editable install;
    see ``runner.imports``) and makes nothing else importable; ``pythonpath``
    (dirs relative to ``root``) is for callers that want more on the path.
    ``coverage`` is ``(source dirs relative to root, data file)``.
    ``junit_witness`` is where pytest writes its own JUnit XML of the run
    (``crosscheck``); ``cache_dir`` where pytest's cache goes (the plugin points it there).
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
    if junit_witness is not None:  # written by the plugin, never an option the command rejects
        env[JUNIT_WITNESS_ENV] = str(junit_witness)
    env["PYTEST_ADDOPTS"] = " ".join(part for part in addopts if part)
    env["REPAIRLOOP_RESULTS"] = str(results_file)
    if cache_dir is not None:
        env[CACHE_DIR_ENV] = str(cache_dir)
    env["PYTHONDONTWRITEBYTECODE"] = (
        "1"  # no __pycache__ written into the workspace (run_tests removes any)
    )
    # Fixed string hashing unless the user chose a seed: a parametrize id built from a set (an
    # object's position in it, ``expected6``) is then the same in every run, so a candidate's run
    # names the tests the baseline ran (isodate 0.7.2's test_format ids changed run to run).
    env.setdefault("PYTHONHASHSEED", "0")
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
    scratch_dir: Optional[Path] = None,
) -> TestReport:
    """Run the test command once in ``root`` and return its structured TestReport.

    ``command`` is an argv or a shell string. For a pytest command
    (``is_pytest_command``) ``--continue-on-collection-errors``, a cache
    directory outside ``root`` and ``test_ids`` are appended; ``test_ids`` are ignored
    for other commands. ``timeout`` (seconds) bounds the whole run; on expiry
    the process group is killed and the report has ``timed_out=True`` and
    ``exit_code=None``. ``junit_xml`` (relative to ``root``) is deleted before
    the run so a stale file is never read. ``coverage_source`` (dirs relative
    to root) records the lines each test runs; ``coverage_file`` is then a
    coverage.py data file, or the plugin tracer's ``LINES_NAME`` JSON lines when
    the project's environment has no coverage.py, in its own temporary
    directory, which the caller owns. ``imports`` redirects the project's imports to ``root`` (see
    ``build_test_env``). ``output_limit`` is in bytes. ``wrap`` (a sandbox) turns
    the command into the argv that runs it confined, with the ``readonly``
    files of ``root`` unwritable. Its temporary directories go in ``scratch_dir`` (a
    run's registered one) when given. A command that is not found gives
    exit code 127. Raises ProjectError when ``root`` is not a directory and
    ConfigError for an empty command.
    """
    root = _checked_root(root, command)
    junit_path = _junit_file(root, junit_xml)
    # a .pyc an earlier run's code left in the tree never runs instead of its source
    remove_bytecode(root)
    with (
        _Scratch(bool(coverage_source), scratch_dir) as scratch,
        Channels(scratch.received) as channels,
    ):
        extra = PYTEST_ARGS + tuple(test_ids)
        final = with_arguments(command, extra) if is_pytest_command(command) else command
        coverage = (
            (tuple(coverage_source or ()), scratch.coverage_file) if scratch.coverage_file else None
        )
        run_env = build_test_env(
            os.environ if env is None else env,
            root,
            results_file=scratch.results_file,
            pythonpath=pythonpath,
            coverage=coverage,
            imports=imports,
            junit_witness=scratch.witness,
            cache_dir=scratch.results / "pytest-cache",
        )
        run_env.update(channels.env())
        runnable = wrapped(
            final,
            wrap,
            root,
            scratch.outputs(junit_path if wrap is not None else None),
            run_env,
            readonly,
        )
        done = run_process(
            runnable,
            cwd=root,
            env=run_env,
            timeout=timeout,
            output_limit=output_limit,
            pass_fds=channels.hand_over(),
        )
        if junit_path is not None and (junit_path.is_symlink() or not within(junit_path, root)):
            junit_path = None  # turned into a link out of the tree while the tests ran: never read
        report = _judged(final, done, (scratch, channels), junit_path, root, timeout)
        data = scratch.coverage_data()
        if data is not None:
            scratch.keep_coverage = True
            report = replace(report, coverage_file=str(data))
        return report


def _judged(
    final: Union[Sequence[str], str],
    done: ProcessResult,
    received: Tuple["_Scratch", Channels],
    junit_path: Optional[Path],
    root: Path,
    timeout: Optional[float],
) -> TestReport:
    """The run's TestReport from what its channels carried (``runner.channel``), or from the
    result files when the plugin did not speak through them (a pytest that a Python launcher such
    as tox started inherits no descriptor); witnessed, and distrusted when the channels say so."""
    scratch, channels = received
    piped_results, piped_junit = channels.collect()
    results_file, witness = (
        (piped_results, piped_junit) if channels.used else (scratch.results_file, scratch.witness)
    )
    plugin = read_plugin_results(results_file, root)
    report = assemble(final, done, plugin, junit_path, root, timeout)
    report = witnessed(report, plugin, witness, root, is_pytest_command(final))
    if channels.distrust and report.complete:
        report = replace(report, distrust=channels.distrust)  # the cause, when both
    return report


def remove_bytecode(root: Path) -> List[str]:
    """Delete every compiled bytecode file (``*.pyc``, ``*.pyo``) under ``root``, virtualenvs and
    ``.git`` left alone; returns their project-relative paths.

    Test runs write none (``PYTHONDONTWRITEBYTECODE``), so any found was written by a run's own
    code: an unchecked hash-based .pyc (PEP 552) would otherwise run instead of its source, or of a
    test.
    """
    removed: List[str] = []
    for directory, dirs, files in os.walk(root):
        dirs[:] = [
            d
            for d in dirs
            if d not in NOT_PROJECT_DIRS
            and d not in (".git", ".repairloop")
            and not os.path.islink(os.path.join(directory, d))
        ]
        for name in files:
            if is_bytecode(name):
                path = Path(directory) / name
                try:
                    path.unlink()
                except OSError:
                    continue
                removed.append(path.relative_to(root).as_posix())
    return removed


def _junit_file(root: Path, junit_xml: Optional[str]) -> Optional[Path]:
    """The JUnit XML file of this run in ``root``, emptied of any earlier run's; None when unset or
    when the tree's own files (a symbolic link a test made) lead it outside ``root``: repairloop
    never deletes, creates or binds a file outside the tree under test for it."""
    if not junit_xml or os.path.isabs(junit_xml) or ".." in Path(junit_xml).parts:
        return None
    path = root / junit_xml
    if not within(path.parent, root):
        return None
    if path.is_symlink() or path.is_file():
        path.unlink()  # a file left by an earlier run must never be read as this one's
    return None if path.exists() else path


class _Scratch:
    """The temporary directories of one run: results (removed after), coverage (kept when it has
    data)."""

    def __init__(self, coverage: bool, under: Optional[Path] = None) -> None:
        if under is not None:
            under.mkdir(parents=True, exist_ok=True)
        self.results = Path(tempfile.mkdtemp(prefix="repairloop-results-", dir=under))
        self.results_file = self.results / "results.jsonl"
        # what the result channels carried, written by repairloop after the run; never an output
        # of the sandbox (``outputs``)
        self.received = Path(tempfile.mkdtemp(prefix="repairloop-received-", dir=under))
        self.witness = self.results / JUNIT_NAME
        self._coverage = (
            Path(tempfile.mkdtemp(prefix="repairloop-coverage-", dir=under)) if coverage else None
        )
        self.coverage_file = self._coverage / ".coverage" if self._coverage is not None else None
        self.keep_coverage = False

    def coverage_data(self) -> Optional[Path]:
        """The per-test line data the run wrote: coverage.py's, else the plugin's own tracer's
        (None: none)."""
        if self.coverage_file is None:
            return None
        found = [
            f for f in (self.coverage_file, self.coverage_file.parent / LINES_NAME) if f.is_file()
        ]
        return found[0] if found else None

    def outputs(self, junit: Optional[Path] = None) -> List[Path]:
        """What a sandboxed run must be able to write; ``junit`` is created empty, for the command
        to fill."""
        found = [self.results] + ([self._coverage] if self._coverage is not None else [])
        if junit is not None and junit.parent.is_dir():
            junit.touch()
            found.append(junit)
        return found

    def __enter__(self) -> "_Scratch":
        return self

    def __exit__(self, *exc: object) -> None:
        shutil.rmtree(self.results, ignore_errors=True)
        shutil.rmtree(self.received, ignore_errors=True)
        if self._coverage is not None and not self.keep_coverage:
            shutil.rmtree(self._coverage, ignore_errors=True)


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
