"""Shared test fixtures: real git repositories built from ``fixtures/projects/<case>``.

Every project fixture is copied into a temporary directory and committed with a
fixed identity, so tests run against real git state (see STYLE.md habit 12).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Callable, Dict, List, Optional

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "fixtures"
PROJECTS = FIXTURES / "projects"

GIT_ENV = {
    "GIT_AUTHOR_NAME": "Fixture Author",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "Fixture Author",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def git(cwd: Path, *args: str) -> str:
    """Run git in ``cwd`` with a fixed identity; return stdout (raises on failure)."""
    env = {**os.environ, **GIT_ENV}
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


def init_repo(path: Path, message: str = "initial") -> Path:
    """Make ``path`` a git repository with everything in it committed."""
    git(path, "init", "-q", "-b", "main")
    git(path, "config", "user.name", GIT_ENV["GIT_AUTHOR_NAME"])
    git(path, "config", "user.email", GIT_ENV["GIT_AUTHOR_EMAIL"])
    git(path, "config", "commit.gpgsign", "false")
    git(path, "add", "-A")
    git(path, "commit", "-q", "-m", message)
    return path


@pytest.fixture(autouse=True, scope="session")
def lean_project_test_runs() -> None:
    """Project test suites started by these tests load only the plugins they name.

    repairloop's own environment has pytest-cov and xdist installed; autoloading
    them in every one of the thousands of project test runs costs about 0.25 s
    each and plays no part in what is tested (our plugin is loaded with -p).
    """
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    # As in an activated virtualenv: `python` is repairloop's test interpreter, so the
    # default test command (the python on PATH that has pytest) is the same on every machine.
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    os.environ.pop("VIRTUAL_ENV", None)


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Path]:
    """Copy ``fixtures/projects/<name>`` to a temp dir; a git repo unless ``git=False``.

    Usage: ``project = make_project("off_by_one")``.
    """

    def _make(name: str, *, git_repo: bool = True, dest: Optional[str] = None) -> Path:
        src = PROJECTS / name
        if not src.is_dir():
            raise FileNotFoundError(f"no fixture project {src}")
        target = tmp_path / (dest or name)
        shutil.copytree(src, target, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
        if git_repo:
            init_repo(target)
        return target

    return _make


@pytest.fixture
def no_flaky_check(monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs skip the flaky check (``confirm_runs = 0``): for tests whose behaviour does not depend
    on it.

    The check re-runs the failing tests before repairing (the suite in order, then each failing
    test alone); with a deterministic fixture it only adds two test sessions to every run.
    tests/test_confirm.py and the tests that count sessions or expect a flaky verdict keep it.
    """
    monkeypatch.setenv("REPAIRLOOP_CONFIRM_RUNS", "0")


@pytest.fixture
def python_env() -> Dict[str, str]:
    """Environment for subprocesses: this interpreter's bin dir first on PATH, no color."""
    env = dict(os.environ)
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env["NO_COLOR"] = "1"
    return env


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: List[pytest.Item]) -> None:
    """Slow end-to-end tests first, then the rest, each part in its collection order.

    ``make test`` runs on two xdist workers that take tests in collection order: a long test
    collected last (``tests/test_warm.py`` sorts late) would run alone at the end while the other
    worker idles. Started first, the long tests overlap and the many short ones fill the tail.
    """
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
    if getattr(config.option, "loadgroup", False):
        _mark_xdist_groups(items)


def _mark_xdist_groups(items: List[pytest.Item]) -> None:
    """Give tests marked ``xdist_group(name)`` the ``@name`` node id suffix ``--dist loadgroup``
    groups by.

    pytest-xdist 3.8 writes the suffix to ``item._nodeid``, which pytest 9.2 no longer reads (a node
    id is ``item._id`` there): the groups were silently ignored, so a module's shared run (the
    bench of tests/test_bench_e2e.py, the run of tests/test_reports.py) was made on both workers.
    """
    try:
        from _pytest.nodeid import NodeId
    except ImportError:  # an older pytest reads xdist's own suffix
        return
    for item in items:
        names = sorted(
            {
                str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                for m in item.iter_markers("xdist_group")
            }
        )
        suffix = "@" + "_".join(names)
        if names and not item.nodeid.endswith(suffix):
            item._id = NodeId.parse(item.nodeid + suffix)  # type: ignore[attr-defined]
