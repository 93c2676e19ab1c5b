"""How the project's tests are run in any copy of it: the command, its limits, its environment
and the sandbox every run goes through."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, Mapping, Optional, Sequence, Tuple

from repairloop.redact import Redactor, is_secret_name
from repairloop.runner import (
    PER_TEST_TIMEOUT_ENV,
    ImportRedirect,
    default_test_command,
    interpreter_of,
    probe_imports,
    run_tests,
)
from repairloop.runner.warm import WarmProcess
from repairloop.settings import Settings
from repairloop.types import RunResult, SandboxStatus, TestReport
from repairloop.workspace.sandbox import Sandbox, SandboxPolicy, filter_environment, open_sandbox


def looks_secret(name: str, value: str) -> bool:
    """A variable candidate code must not see: its name looks secret, or its value has a
    well-known credential format (the rules of ``repairloop.redact``)."""
    return is_secret_name(name) or Redactor()(value) != value


def test_environment(environ: Mapping[str, str], settings: Settings) -> Dict[str, str]:
    """The environment test commands run in: the user's without secret-looking variables (unless
    listed in ``sandbox_env_allow``), plus the per-test timeout for our plugin."""
    env, _ = filter_environment(environ, settings.sandbox_env_allow, looks_secret)
    if settings.per_test_timeout:
        env[PER_TEST_TIMEOUT_ENV] = str(settings.per_test_timeout)
    return env


def sandbox_for(settings: Settings, project: Path) -> Sandbox:
    """The sandbox the settings ask for, probed here; the user's project tree is hidden in it.

    Raises ConfigError when ``sandbox = "bwrap"`` and bubblewrap cannot run.
    """
    project = Path(project).absolute()
    venvs = tuple(d for d in (project / ".venv", project / "venv") if (d / "pyvenv.cfg").is_file())
    policy = SandboxPolicy(mode=settings.sandbox, network=settings.sandbox_network,
                           memory_mb=settings.sandbox_memory_mb, disk_mb=settings.sandbox_disk_mb,
                           hidden=(project,), readable=venvs)
    chosen = settings.sandbox_bwrap
    return open_sandbox(policy, candidates=(lambda: [str(chosen)]) if chosen else None)


def unconfined_warning(status: SandboxStatus) -> Optional[str]:
    """The sentence every report shows when candidate code runs unconfined; None when confined."""
    if status.confined:
        return "test runs in the sandbox could use the network (sandbox_network = true)" if status.network else None
    return ("candidate code ran UNCONFINED (with your permissions, files, network and processes): "
            + status.detail)


def with_sandbox(result: RunResult, status: SandboxStatus) -> RunResult:
    """``result`` with where its candidate code ran; an unconfined run's warning leads its notes."""
    warning = unconfined_warning(status)
    notes = result.notes
    if warning is not None:
        notes = ((f"WARNING: {warning}",) if not status.confined else (warning,)) + notes
    return replace(result, sandbox=status, notes=notes)


@dataclass
class TestSuite:
    """How to run the project's tests in any copy of it (the workspace or an engine's scratch copy)."""

    __test__ = False  # keep pytest from collecting this class

    command: Tuple[str, ...] | str
    timeout: float
    junit_xml: Optional[str]
    environ: Mapping[str, str]
    deadline: Callable[[], float]  # seconds left in the run
    sandbox: Optional[Sandbox] = field(default=None)  # None: unconfined (library use without settings)
    # The modules the user's environment imports from the user's tree (an editable install),
    # sent to the copy under test instead; nothing else is made importable.
    imports: ImportRedirect = field(default_factory=ImportRedirect)

    @classmethod
    def for_project(cls, settings: Settings, project: Path, environ: Mapping[str, str],
                    deadline: Callable[[], float]) -> "TestSuite":
        """The suite ``settings`` describe for ``project``: its test command (or the default
        one, which raises ProjectError when there is none), limits, environment and sandbox
        (ConfigError when ``sandbox = "bwrap"`` cannot run).

        The test interpreter is asked once, with the user's environment, which project modules
        it imports from ``project`` (``runner.probe_imports``, one short subprocess).
        """
        command: Tuple[str, ...] | str = settings.test_cmd or default_test_command(project)
        imports = probe_imports(interpreter_of(command, project), project, environ)
        return cls(command, settings.test_timeout, settings.junit_xml, test_environment(environ, settings),
                   deadline, sandbox_for(settings, project), imports)

    def plain(self) -> "TestSuite":
        """The same suite without the import redirection: the user's own world (imports from their tree).

        Its sandbox shows the user's tree (read-only) instead of hiding it, since that is where
        the user's environment imports from; it runs only before any candidate exists.
        """
        sandbox = self.sandbox
        if sandbox is not None and sandbox.policy.hidden:
            policy = replace(sandbox.policy, hidden=())
            sandbox = Sandbox(sandbox.status, policy, sandbox.bwrap, sized_tmp=sandbox.sized_tmp)
        return replace(self, imports=ImportRedirect(), sandbox=sandbox)

    @property
    def sandbox_status(self) -> SandboxStatus:
        """Where this suite's runs execute candidate code."""
        if self.sandbox is None:
            return SandboxStatus(False, "none", "no sandbox was set up for this suite", network=True)
        return self.sandbox.status

    def run(self, root: Path, test_ids: Sequence[str] = (), *, coverage: bool = False, timeout: Optional[float] = None,
            past_deadline: bool = False, protect: Sequence[str] = ()) -> TestReport:
        """One run of the test command in ``root``, bounded by ``timeout`` (default: the suite's) and by the
        seconds left in the run, unless ``past_deadline`` (the proof run of a found fix is never cut short).
        ``protect`` are project-relative files the run may not change (read-only in the sandbox)."""
        limit = self.time_limit(timeout, past_deadline)
        return run_tests(
            root,
            self.command,
            test_ids=tuple(test_ids),
            timeout=limit,
            env=self.environ,
            imports=self.imports,
            junit_xml=self.junit_xml,
            coverage_source=[str(root)] if coverage else None,
            wrap=self.sandbox if self.sandbox is not None and self.sandbox.bwrap else None,
            readonly=tuple(root / rel for rel in protect),
        )

    def time_limit(self, timeout: Optional[float] = None, past_deadline: bool = False) -> float:
        """Seconds one run may take: ``timeout`` (default: the suite's), within the seconds left in the run
        unless ``past_deadline``."""
        limit = timeout or self.timeout
        return limit if past_deadline else min(limit, max(self.deadline(), 1.0))

    def warm(self, root: Path, protect: Sequence[str] = ()) -> WarmProcess:
        """A warm test process for ``root`` (not started; ``WarmProcess.ready`` starts it), run like
        ``run`` runs a fresh one: the same command, environment, import redirection and sandbox, with
        ``protect`` read-only. Its answers only filter candidates (``runner.warm``)."""
        return WarmProcess(root, self.command, env=self.environ, imports=self.imports,
                           wrap=self.sandbox if self.sandbox is not None and self.sandbox.bwrap else None,
                           readonly=tuple(root / rel for rel in protect), start_timeout=self.timeout)
