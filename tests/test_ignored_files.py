"""Git-ignored files the user's tests need (``workspace.ignored``): brought into the workspace, or
the run stops as ``environment`` naming them.

Real git repositories and real pytest runs: a generated ``_version.py`` (setuptools-scm style),
a generated module the package imports, a data file and a secret-looking settings module, each
git-ignored in the user's tree, where the user's own ``pytest`` passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Dict

from conftest import init_repo

from repairloop.loop.driver import classify_project
from repairloop.settings import Settings
from repairloop.types import FailureKind
from repairloop.workspace import open_workspace
from repairloop.workspace.ignored import ignored_files
from repairloop.workspace.start import start_files

PYTEST = f"{sys.executable} -m pytest -q -p no:cacheprovider"


def _project(root: Path, files: Dict[str, str], ignored: Dict[str, str]) -> Path:
    """A committed repository with ``files``, then ``ignored`` written and git-ignored."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / ".gitignore").write_text("\n".join(ignored) + "\n__pycache__/\n", encoding="utf-8")
    init_repo(root)
    for rel, text in ignored.items():
        if not rel.endswith("/"):  # a directory pattern: the test writes its files itself
            (root / rel).write_text(text, encoding="utf-8")
    return root


def _users_own_command_passes(project: Path) -> None:
    done = subprocess.run(
        PYTEST.split(), cwd=project, capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 0, done.stdout


VERSIONED = {
    "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['src']\n",
    "src/stamp/__init__.py": "from stamp._version import version\nfrom stamp._table import TABLE\n",
    "tests/test_stamp.py": (
        "import stamp\n\n\ndef test_version():\n    assert stamp.version == '1.2'\n\n\n"
        "def test_table():\n    assert stamp.TABLE == {'a': 1}\n"
    ),
}
GENERATED = {
    "src/stamp/_version.py": "version = '1.2'\n",  # setuptools-scm writes it at build time
    "src/stamp/_table.py": "TABLE = {'a': 1}\n",  # another build step's output, imported by name
    "src/stamp/notes.py": "raise SystemExit('an ignored module nothing imports')\n",
}


def test_generated_modules_the_tests_import_are_brought_and_the_baseline_is_green(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path / "stamp", VERSIONED, GENERATED)
    _users_own_command_passes(project)
    report, failures, kind = classify_project(Settings(test_cmd=PYTEST), project)
    assert report.green and kind == "none", [f.message for f in failures]
    chosen = ignored_files(project, start_files(project))
    assert chosen.brought == ("src/stamp/_table.py", "src/stamp/_version.py")
    assert "src/stamp/notes.py" in chosen.left_out and chosen.too_large == ()


def test_a_brought_file_is_part_of_the_start_state_a_candidate_cannot_change_unseen(
    tmp_path: Path,
) -> None:
    project = _project(tmp_path / "stamp", VERSIONED, GENERATED)
    with open_workspace(project, run_id="r1", registry_dir=tmp_path / "reg") as ws:
        assert ws.ignored.brought == ("src/stamp/_table.py", "src/stamp/_version.py")
        start = ws.checkpoint()
        ws.write_files({"src/stamp/_version.py": "version = 'forged'\n"})
        assert "src/stamp/_version.py" in ws.diff()  # a change to it shows in the candidate's diff
        ws.revert_to(start)
        assert ws.read_text("src/stamp/_version.py") == "version = '1.2'\n"
    assert (project / "src/stamp/_version.py").read_text() == "version = '1.2'\n"
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True, check=True
    )
    assert status.stdout == ""  # the user's repository still ignores it, untouched


def test_a_symlinked_or_secret_looking_ignored_module_is_never_brought(tmp_path: Path) -> None:
    outside = tmp_path / "outside.py"
    outside.write_text("KEY = 'x'\n", encoding="utf-8")
    project = _project(
        tmp_path / "app",
        {"app/__init__.py": "from app import local_settings, _link\n", "tests/test_a.py": ""},
        {"app/local_settings.py": "PASSWORD = 'hunter2'\n", "app/_link.py": ""},
    )
    (project / "app/_link.py").unlink()
    os.symlink(outside, project / "app/_link.py")
    chosen = ignored_files(project, start_files(project))
    assert chosen.brought == ()
    assert set(chosen.left_out) == {"app/local_settings.py", "app/_link.py"}


def test_a_copy_that_still_fails_what_the_users_tree_passes_stops_as_environment(
    tmp_path: Path,
) -> None:
    project = _project(
        tmp_path / "shop",
        {
            "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['.']\n",
            "shop/__init__.py": "",
            "shop/prices.py": (
                "import json\nfrom pathlib import Path\n\n\ndef price(item):\n"
                "    table = json.loads((Path(__file__).parent / 'prices.json').read_text())\n"
                "    return table[item]\n"
            ),
            "tests/test_prices.py": (
                "from shop.prices import price\n\n\ndef test_price():\n"
                "    assert price('tea') == 3\n"
            ),
        },
        {"shop/prices.json": '{"tea": 3}'},  # generated data, git-ignored: not a module
    )
    _users_own_command_passes(project)
    report, failures, kind = classify_project(Settings(test_cmd=PYTEST), project)
    assert report.failing_ids == ("tests/test_prices.py::test_price",)
    assert kind == FailureKind.ENVIRONMENT.value, [(f.kind, f.message) for f in failures]
    env = [f for f in failures if f.kind is FailureKind.ENVIRONMENT]
    assert "shop/prices.json" in env[0].message and "git-ignored" in env[0].message
    assert "tests/test_prices.py::test_price" in env[0].message


def test_a_real_logic_failure_with_ignored_files_around_is_still_logic(tmp_path: Path) -> None:
    project = _project(
        tmp_path / "calc",
        {
            "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['.']\n",
            "calc/__init__.py": "def add(a, b):\n    return a - b\n",
            "tests/test_calc.py": (
                "from calc import add\n\n\ndef test_add():\n    assert add(2, 2) == 4\n"
            ),
        },
        {"calc/cache.json": "{}", "notes.txt": "scratch"},
    )
    _, failures, kind = classify_project(Settings(test_cmd=PYTEST), project)
    assert kind == FailureKind.LOGIC.value, [(f.kind, f.message) for f in failures]


def test_a_run_says_which_ignored_files_it_brought_and_journals_them(tmp_path: Path) -> None:
    files = dict(VERSIONED)
    files["src/stamp/__init__.py"] += "\n\ndef add(a, b):\n    return a - b\n"
    files["tests/test_add.py"] = (
        "import stamp\n\n\ndef test_add():\n    assert stamp.add(2, 3) == 5\n"
    )
    project = _project(tmp_path / "stamp", files, GENERATED)
    env = {k: v for k, v in os.environ.items() if not k.startswith("REPAIRLOOP_")}
    done = subprocess.run(
        [sys.executable, "-m", "repairloop", "run", "--test-cmd", PYTEST],
        cwd=project,
        env={**env, "COLUMNS": "200", "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (
        "brought 2 git-ignored file(s) your tests need into the copy: src/stamp/_table.py, "
        "src/stamp/_version.py" in done.stderr
    )
    journal = next((project / ".repairloop" / "runs").glob("*/journal.jsonl")).read_text()
    assert '"brought_ignored": ["src/stamp/_table.py", "src/stamp/_version.py"]' in journal


def test_what_tools_leave_behind_never_makes_the_baseline_check_run(tmp_path: Path) -> None:
    from repairloop.loop.fidelity import _missing_ignored

    project = _project(
        tmp_path / "calc",
        {"calc/__init__.py": "", "tests/test_calc.py": ""},
        {".coverage": "", "run.log": "", "calc/data.json": "{}"},
    )
    with open_workspace(project, run_id="r1", registry_dir=tmp_path / "reg") as ws:
        assert _missing_ignored(ws) == ("calc/data.json",)  # only what a test could read


def test_an_ignored_package_the_project_imports_is_brought_whole(tmp_path: Path) -> None:
    """Seen in a new user's trial: `gen/` (a code generator's output, ignored as a directory) was
    reported as a missing PyPI dependency."""
    project = _project(
        tmp_path / "shop",
        {
            "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['.']\n",
            "tests/test_rate.py": (
                "from gen.tables import RATE\n\n\ndef test_rate():\n    assert RATE == 3\n"
            ),
        },
        {"gen/": ""},
    )
    (project / "gen").mkdir()
    (project / "gen" / "__init__.py").write_text("")
    (project / "gen" / "tables.py").write_text("RATE = 3\n")
    (project / ".venv" / "lib").mkdir(parents=True)
    (project / ".venv" / "pyvenv.cfg").write_text("home = /usr\n")
    _users_own_command_passes(project)
    report, failures, kind = classify_project(Settings(test_cmd=PYTEST), project)
    assert report.green and kind == "none", [(f.kind, f.message) for f in failures]
    chosen = ignored_files(project, start_files(project))
    assert set(chosen.brought) == {"gen/__init__.py", "gen/tables.py"}
    assert chosen.left_out_dirs == ()  # .venv is an environment, never a test's input


def test_an_ignored_data_directory_the_tests_read_stops_the_run_as_environment(
    tmp_path: Path,
) -> None:
    """Seen in a new user's trial: with `data/` ignored as a directory, the run proposed a
    'partial fix' that stopped reading the data."""
    project = _project(
        tmp_path / "fx",
        {
            "pyproject.toml": "[tool.pytest.ini_options]\npythonpath = ['.']\n",
            "fx/__init__.py": (
                "import json\nfrom pathlib import Path\n\n\ndef rate(cur):\n"
                "    path = Path(__file__).parent.parent / 'data' / 'rates.json'\n"
                "    return json.loads(path.read_text())[cur]\n"
            ),
            "tests/test_fx.py": (
                "from fx import rate\n\n\ndef test_eur():\n    assert rate('eur') == 2\n"
            ),
        },
        {"data/": ""},
    )
    (project / "data").mkdir()
    (project / "data" / "rates.json").write_text('{"eur": 2}')
    _users_own_command_passes(project)
    _, failures, kind = classify_project(Settings(test_cmd=PYTEST), project)
    assert kind == FailureKind.ENVIRONMENT.value, [(f.kind, f.message) for f in failures]
    env = [f for f in failures if f.kind is FailureKind.ENVIRONMENT]
    assert "data/" in env[0].message
