"""Real-world pytest configurations: repairloop's run of a suite gives the verdict the user's own
command gives (the fidelity issue, item 1).

Each case is a small project with a passing and a failing test under one configuration seen in
tox, CI and library setups. The user's plain command (with ``-rA`` so that its own summary names
every test) and repairloop's runner (plugin, results file, redirected cache) must agree on the exit
code and on which tests passed and failed, the run's second witness (pytest's JUnit XML) must be
written whatever the configuration disables, and no ``.pytest_cache`` may be left in the tree.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict, Set, Tuple

import pytest
from runner_helpers import PYTHON, write_project

from repairloop.runner import run_tests

TESTS = """
    import warnings

    import pytest


    @pytest.mark.slowish
    def test_passes():
        assert 1 + 1 == 2


    def test_fails():
        assert 1 + 1 == 3


    def test_warns_nothing_it_should_not():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            warnings.warn("quiet", DeprecationWarning)
"""
CONFTEST = """
    def pytest_configure(config):
        config.addinivalue_line("markers", "slowish: a marker the project registers")
"""
# name: (extra command arguments, configuration files)
CONFIGS: Dict[str, Tuple[Tuple[str, ...], Dict[str, str]]] = {
    "plain": ((), {}),
    "no_cacheprovider": (("-p", "no:cacheprovider"), {}),
    "strict_config_without_cache": (("-p", "no:cacheprovider", "--strict-config"), {}),
    "warnings_are_errors_without_cache": (("-p", "no:cacheprovider", "-W", "error"), {}),
    "strict_markers": (("--strict-markers",), {"pytest.ini": "[pytest]\n"}),
    "filterwarnings_error_in_ini": (
        (),
        {"pytest.ini": "[pytest]\nfilterwarnings =\n    error\n"},
    ),
    "addopts_stop_at_first_failure": ((), {"pytest.ini": "[pytest]\naddopts = -x\n"}),
    "import_mode_importlib": (("--import-mode=importlib",), {}),
    "testpaths_and_rootdir": (
        (),
        {"pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'},
    ),
    "tox_ini_without_cache_strict": (
        (),
        {"tox.ini": "[pytest]\naddopts = -p no:cacheprovider --strict-config\n"},
    ),
    "setup_cfg_warnings_error": (
        (),
        {"setup.cfg": "[tool:pytest]\nfilterwarnings = error\naddopts = --strict-config\n"},
    ),
    "another_plugin_disabled": (("-p", "no:doctest", "-p", "no:pastebin"), {}),
    "junit_plugin_disabled": (("-p", "no:junitxml"), {}),
    "junit_plugin_disabled_in_addopts": (
        (),
        {"pytest.ini": "[pytest]\naddopts = -p no:junitxml\n"},
    ),
    "own_junitxml": (("--junitxml=own-report.xml",), {}),
    "last_failed_in_addopts": ((), {"pytest.ini": "[pytest]\naddopts = --lf\n"}),
}


def _plain(root: Path, args: Tuple[str, ...]) -> Tuple[int, Set[str], Set[str]]:
    """The user's own command: exit code, and the tests its -rA summary says passed and failed."""
    done = subprocess.run(
        [PYTHON, "-m", "pytest", "-q", "-rA", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=120,
    )
    said: Dict[str, Set[str]] = {"PASSED": set(), "FAILED": set()}
    for line in done.stdout.splitlines():
        word, _, rest = line.partition(" ")
        if word in said:
            said[word].add(rest.split(" - ")[0].strip())
    return done.returncode, said["PASSED"], said["FAILED"]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_runner_gives_the_users_own_verdict(tmp_path: Path, name: str) -> None:
    args, config = CONFIGS[name]
    files = {"tests/test_math.py": TESTS, "tests/conftest.py": CONFTEST, **config}
    root = write_project(tmp_path / "project", files)
    code, passed, failed = _plain(root, args)
    assert code == 1 and failed == {"tests/test_math.py::test_fails"}, name  # the config runs
    cache = root / ".pytest_cache"
    if cache.exists():  # the user's own run may leave one; repairloop's never does
        subprocess.run(["rm", "-rf", str(cache)], check=True)
    report = run_tests(root, (PYTHON, "-m", "pytest", "-q", *args), timeout=120)
    assert report.exit_code == code, report.output[-2000:]
    assert set(report.passed_ids) == passed and set(report.failing_ids) == failed
    assert report.distrust == "" and report.complete  # both witnesses wrote, and agree
    assert not cache.exists()
