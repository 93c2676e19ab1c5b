"""How the project's tests are run in any copy of it: the command, its limits and its environment."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from repairloop.runner import PER_TEST_TIMEOUT_ENV, default_test_command, run_tests
from repairloop.settings import Settings
from repairloop.types import TestReport


def source_roots(root: Path) -> List[Path]:
    """Directories put first on PYTHONPATH so imports resolve to ``root``, not an editable install."""
    return [p for p in (root / "src", root) if p.is_dir()]


def test_environment(environ: Mapping[str, str], settings: Settings) -> Dict[str, str]:
    """The environment test commands run in: the user's, plus the per-test timeout for our plugin."""
    env = dict(environ)
    if settings.per_test_timeout:
        env[PER_TEST_TIMEOUT_ENV] = str(settings.per_test_timeout)
    return env


@dataclass
class TestSuite:
    """How to run the project's tests in any copy of it (the workspace or an engine's scratch copy)."""

    command: Tuple[str, ...] | str
    timeout: float
    junit_xml: Optional[str]
    environ: Mapping[str, str]
    deadline: Callable[[], float]  # seconds left in the run

    @classmethod
    def for_project(cls, settings: Settings, project: Path, environ: Mapping[str, str],
                    deadline: Callable[[], float]) -> "TestSuite":
        """The suite ``settings`` describe for ``project``: its test command (or the default
        one, which raises ProjectError when there is none), limits and environment."""
        command: Tuple[str, ...] | str = settings.test_cmd or default_test_command(project)
        return cls(command, settings.test_timeout, settings.junit_xml, test_environment(environ, settings), deadline)

    def run(self, root: Path, test_ids: Sequence[str] = (), *, coverage: bool = False, timeout: Optional[float] = None) -> TestReport:
        limit = min(timeout or self.timeout, max(self.deadline(), 1.0))
        return run_tests(
            root,
            self.command,
            test_ids=tuple(test_ids),
            timeout=limit,
            env=self.environ,
            pythonpath=source_roots(root),
            junit_xml=self.junit_xml,
            coverage_source=[str(root)] if coverage else None,
        )
