"""Fidelity: a test run in a copy of the project imports what the user's own command would, from the
copy.

Real projects in temporary directories, a real virtualenv with real
``pip install -e`` editable installs (setuptools' static ``.pth`` for a src
layout and a namespace package, its finder mapping for a flat layout), and
real pytest runs. The user's plain command is run in the user's tree as the
reference; repairloop's run (``TestSuite``) runs in a copy, as in the
workspace. One virtualenv serves the whole session (built once, under a lock,
for every xdist worker).
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, Iterator, Mapping, Tuple

import pytest

from repairloop.loop import suite as suite_module
from repairloop.loop.fidelity import fidelity_failures
from repairloop.runner import ProjectInterpreter, interpreter_of, probe_imports, project_python
from repairloop.settings import Settings
from repairloop.types import FailureKind, TestReport

# What each editable project holds; tests never change these trees, only their copies.
BUGGY = "def double(x):\n    return x + 2\n"
FIXED = "def double(x):\n    return x * 2\n"
TEST = "from {pkg}.calc import double\n\n\ndef test_double():\n    assert double(5) == 10\n"
SETUPTOOLS = (
    '[build-system]\nrequires = ["setuptools>=64"]\nbuild-backend = "setuptools.build_meta"\n\n'
)
PROJECTS: Dict[str, Dict[str, str]] = {
    # src layout: setuptools writes a static .pth with <project>/src
    "srcproj": {
        "pyproject.toml": SETUPTOOLS + '[project]\nname = "srcpkg"\nversion = "0.1"\n\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n',
        "src/srcpkg/__init__.py": "",
        "src/srcpkg/calc.py": BUGGY,
        # not a package of the project, importable through the .pth
        "src/unlisted/__init__.py": "VALUE = 1\n",
        "tests/test_calc.py": TEST.format(pkg="srcpkg"),
    },
    # flat layout: setuptools installs a meta path finder mapping {"flatpkg": <project>/flatpkg}
    "flatproj": {
        "pyproject.toml": SETUPTOOLS + '[project]\nname = "flatpkg"\nversion = "0.1"\n\n'
        '[tool.setuptools]\npackages = ["flatpkg"]\n',
        "flatpkg/__init__.py": "",
        "flatpkg/calc.py": BUGGY,
        "helpers.py": "ANSWER = 42\n",  # at the root, not part of the install
        "tests/test_calc.py": TEST.format(pkg="flatpkg"),
        "tests/test_helpers.py": "from helpers import ANSWER\n\n\ndef test_answer():\n    assert "
        "ANSWER == 42\n",
    },
    # a PEP 420 namespace package in a src layout
    "nsproj": {
        "pyproject.toml": SETUPTOOLS + '[project]\nname = "acme-tools"\nversion = "0.1"\n\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n',
        "src/acme/tools/__init__.py": "",
        "src/acme/tools/calc.py": BUGGY,
        "tests/test_calc.py": TEST.format(pkg="acme.tools"),
    },
}


def write(root: Path, files: Mapping[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


@pytest.fixture(scope="session")
def editable_env(tmp_path_factory: pytest.TempPathFactory) -> Tuple[str, Path]:
    """(python, directory of the projects): a virtualenv with the three projects installed
    editable."""
    shared = tmp_path_factory.getbasetemp().parent / "editable-env"
    shared.mkdir(exist_ok=True)
    python = shared / "venv" / "bin" / "python"
    with open(shared / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # xdist workers share one build
        if not (shared / "ready").exists():
            _build_env(shared, python)
            (shared / "ready").write_text("ok")
    return str(python), shared / "projects"


def _build_env(shared: Path, python: Path) -> None:
    shutil.rmtree(shared / "venv", ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(shared / "venv")], check=True
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    ours = next(p for p in sys.path if p.endswith("site-packages"))
    # pytest and setuptools from our venv
    Path(site, "repairloop-test-deps.pth").write_text(ours + "\n")
    script = python.parent / "pytest"  # a console script, as pip would write it
    script.write_text(f"#!{python}\nimport sys\nimport pytest\nsys.exit(pytest.console_main())\n")
    script.chmod(0o755)
    args = []
    for name, files in PROJECTS.items():
        write(shared / "projects" / name, files)
        args += ["-e", str(shared / "projects" / name)]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--quiet",
            "--no-index",
            "--no-deps",
            "--no-build-isolation",
            *args,
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def environ() -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    return env


def user_run(project: Path, command: str) -> Tuple[int, str]:
    """The user's own command, run plainly in the user's tree: (exit code, output)."""
    done = subprocess.run(
        command, shell=True, cwd=project, env=environ(), capture_output=True, text=True
    )
    return done.returncode, done.stdout + done.stderr


def our_run(project: Path, command: str, copy: Path) -> Tuple[suite_module.TestSuite, TestReport]:
    """repairloop's run: the suite for ``project``, run in ``copy`` (the workspace)."""
    settings = Settings(test_cmd=command, per_test_timeout=0)
    suite = suite_module.TestSuite.for_project(settings, project, environ(), lambda: 120.0)
    return suite, suite.run(copy)


@pytest.fixture
def copy_of(tmp_path: Path) -> Iterator:
    def make(project: Path) -> Path:
        target = tmp_path / "workspace" / project.name
        shutil.copytree(
            project, target, ignore=shutil.ignore_patterns("*.egg-info", "__pycache__", "build")
        )
        return target

    yield make


# ------------------------------------------------------------------ not installed


@pytest.mark.parametrize(
    "command", ["{python} -m pytest -q", "pytest -q"], ids=["python-m-pytest", "pytest"]
)
def test_src_layout_not_installed_fails_as_it_does_for_the_user(
    tmp_path: Path, copy_of, command: str
) -> None:
    project = write(
        tmp_path / "user" / "textkit",
        {
            "pyproject.toml": '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
            "src/textkit/__init__.py": "def shout(s):\n    return s.upper()\n",
            "tests/test_shout.py": "from textkit import shout\n\n\ndef test_shout():\n    assert "
            "shout('a') == 'A'\n",
        },
    )
    command = command.format(python=sys.executable)
    code, output = user_run(project, command)
    assert code == 2 and "No module named 'textkit'" in output  # the user's run: a collection error
    suite, report = our_run(project, command, copy_of(project))
    assert not suite.imports  # nothing of the project is importable from the user's environment
    assert not report.green
    assert report.failing_ids == ("tests/test_shout.py",)
    assert "No module named 'textkit'" in report.failing[0].message


def test_conftest_importing_the_uninstalled_package_fails_as_it_does_for_the_user(
    tmp_path: Path, copy_of
) -> None:
    project = write(
        tmp_path / "user" / "bugbug",
        {
            "bugbug/__init__.py": "SEVERITY = 'normal'\n",
            "tests/conftest.py": "import pytest\nfrom bugbug import "
            "SEVERITY\n\n\n@pytest.fixture\ndef severity():\n    return SEVERITY\n",
            "tests/test_severity.py": "def test_severity(severity):\n    assert severity == "
            "'normal'\n",
        },
    )
    code, output = user_run(project, "pytest -q")  # plain pytest does not put the root on sys.path
    assert code == 4 and "while loading conftest" in output
    _, report = our_run(project, "pytest -q", copy_of(project))
    assert report.exit_code == 4 and not report.green
    assert "No module named 'bugbug'" in report.output


def test_a_plain_pytest_that_fails_is_never_green_even_with_src_on_the_users_disk(
    tmp_path: Path, copy_of
) -> None:
    """The old blanket ``src/`` and root on PYTHONPATH turned this red suite green; the attack must
    fail."""
    project = write(
        tmp_path / "user" / "demo",
        {
            "src/demo/__init__.py": "X = 1\n",
            "tests/test_it.py": "import demo\n\n\ndef test_it():\n    assert demo.X == 1\n",
        },
    )
    assert user_run(project, "pytest -q")[0] != 0
    _, report = our_run(project, "pytest -q", copy_of(project))
    assert not report.green and report.failing_ids == ("tests/test_it.py",)


# ------------------------------------------------------------------ editable installs


@pytest.mark.parametrize(
    "name, pkg, rel",
    [
        ("srcproj", "srcpkg", "src/srcpkg/calc.py"),
        ("flatproj", "flatpkg", "flatpkg/calc.py"),
        ("nsproj", "acme", "src/acme/tools/calc.py"),
    ],
    ids=["src-layout-pth", "flat-layout-finder", "namespace-package"],
)
def test_an_editable_install_makes_the_tests_exercise_the_copy(
    editable_env, copy_of, name: str, pkg: str, rel: str
) -> None:
    python, projects = editable_env
    project = projects / name
    command = f"{python} -m pytest -q tests/test_calc.py"
    assert user_run(project, command)[0] == 1  # the user's tree has the bug
    copy = copy_of(project)
    suite, before = our_run(project, command, copy)
    assert pkg in suite.imports.names
    assert before.failing_ids == (
        "tests/test_calc.py::test_double",
    )  # the same verdict as the user's run
    assert fidelity_failures(suite, copy, before) == ()  # both worlds agree at the baseline
    (copy / rel).write_text(FIXED)  # a candidate patch in the workspace
    after = suite.run(copy)
    assert after.green, after.output[-2000:]  # the tests exercised the patch, not the user's tree
    assert Path(project / rel).read_text() == BUGGY


def test_the_redirect_makes_nothing_else_importable(editable_env, copy_of) -> None:
    """flatpkg is mapped by setuptools' finder; helpers.py beside it is not installed: it stays
    unimportable."""
    python, projects = editable_env
    project = projects / "flatproj"
    command = (
        f"{Path(python).parent / 'pytest'} -q tests/test_helpers.py"  # the venv's console script
    )
    code, output = user_run(project, command)
    assert code == 2 and "No module named 'helpers'" in output
    suite, report = our_run(project, command, copy_of(project))
    assert suite.imports.names == ("flatpkg",)
    assert not report.green and report.failing_ids == ("tests/test_helpers.py",)


def test_the_probe_maps_what_the_interpreter_imports_from_the_tree(editable_env) -> None:
    python, projects = editable_env
    redirect = probe_imports(ProjectInterpreter(python, environ()), projects / "srcproj")
    # the static .pth puts src/ on sys.path: everything there resolves to the user's tree, and only
    # that
    assert {n: (k, loc) for n, k, loc in redirect.entries} == {
        "srcpkg": ("package", ("src/srcpkg",)),
        "unlisted": ("package", ("src/unlisted",)),
    }
    assert probe_imports(ProjectInterpreter(python, environ()), projects / "nsproj").entries == (
        ("acme", "namespace", ("src/acme",)),
    )
    assert (
        probe_imports(ProjectInterpreter(sys.executable, environ()), projects / "srcproj").entries
        == ()
    )  # not installed there


def test_the_users_tree_and_the_copy_disagree_when_an_ignored_file_is_missing(
    tmp_path: Path, copy_of
) -> None:
    """The user's PYTHONPATH points into their tree, where a generated, git-ignored module exists;
    the workspace lacks it. repairloop's world fails what the user's passes: it must say so, not
    repair."""
    project = write(
        tmp_path / "user" / "stamp",
        {
            "src/stamp/__init__.py": "",
            "src/stamp/_version.py": "VERSION = '0.1'\n",  # written by the build, ignored by git
            "src/stamp/calc.py": "from stamp._version import VERSION\n\n\n" + FIXED,
            "tests/test_calc.py": TEST.format(pkg="stamp"),
        },
    )
    env = {**environ(), "PYTHONPATH": str(project / "src")}
    copy = copy_of(project)
    (copy / "src" / "stamp" / "_version.py").unlink()
    settings = Settings(test_cmd=f"{sys.executable} -m pytest -q", per_test_timeout=0)
    suite = suite_module.TestSuite.for_project(settings, project, env, lambda: 120.0)
    assert suite.imports.names == (
        "stamp",
    )  # the PYTHONPATH entry into the user's tree is redirected
    report = suite.run(copy)
    assert report.failing_ids == ("tests/test_calc.py",)  # the copy cannot import stamp._version
    failures = fidelity_failures(suite, copy, report)
    assert [f.kind for f in failures] == [FailureKind.ENVIRONMENT]
    assert (
        "does not behave like your tree" in failures[0].message
        and "git-ignored" in failures[0].hint
    )
    (copy / "src" / "stamp" / "_version.py").write_text("VERSION = '0.1'\n")
    assert suite.run(copy).green and fidelity_failures(suite, copy, suite.run(copy)) == ()


def test_test_python_is_the_interpreter_the_command_runs(tmp_path: Path) -> None:
    script = (
        write(tmp_path, {"bin/pytest": "#!/opt/py/bin/python3.12\nimport pytest\n"})
        / "bin"
        / "pytest"
    )
    assert interpreter_of(f"{sys.executable} -m pytest", tmp_path) == sys.executable
    assert interpreter_of(f"COV=1 {script} -q", tmp_path) == "/opt/py/bin/python3.12"
    assert interpreter_of("bin/pytest -x", tmp_path) == "/opt/py/bin/python3.12"
    assert interpreter_of(("make", "test"), tmp_path) == project_python(tmp_path)


def test_a_sitecustomize_the_hook_shadows_still_runs(tmp_path: Path, editable_env, copy_of) -> None:
    python, projects = editable_env
    user_site = write(
        tmp_path / "usersite",
        {"sitecustomize.py": "import os\nos.environ['USER_HOOK_RAN'] = '1'\n"},
    )
    env = {**environ(), "PYTHONPATH": str(user_site)}
    project = projects / "srcproj"
    test = "import os\n\n\ndef test_hook():\n    assert os.environ.get('USER_HOOK_RAN') == '1'\n"
    copy = copy_of(project)
    write(copy, {"tests/test_hook.py": test})
    settings = Settings(test_cmd=f"{python} -m pytest -q tests/test_hook.py", per_test_timeout=0)
    suite = suite_module.TestSuite.for_project(settings, project, env, lambda: 60.0)
    assert suite.imports  # the hook is in front of the user's sitecustomize
    assert suite.run(copy).green


def test_a_subprocess_of_a_test_imports_the_copy_too(editable_env, copy_of) -> None:
    python, projects = editable_env
    project = projects / "flatproj"
    copy = copy_of(project)
    (copy / "flatpkg" / "calc.py").write_text(FIXED)
    write(
        copy,
        {
            "tests/test_cli.py": textwrap.dedent("""
        import subprocess, sys

        def test_cli():
            out = subprocess.run([sys.executable, "-c", "from flatpkg.calc import double; print(double(5))"],
                                 capture_output=True, text=True, cwd="/")
            assert out.stdout.strip() == "10", out.stderr
    """)  # noqa: E501
        },
    )
    _, report = our_run(project, f"{python} -m pytest -q tests/test_cli.py", copy)
    assert report.green, report.output[-2000:]


def test_a_virtualenv_inside_the_project_is_not_the_projects_code(tmp_path: Path) -> None:
    # Seen on toolz's sdist with its own .venv (issue 14's trial): every installed package (pytest
    # too) was "imported from the user's tree" and sent to the copy, where .venv is not: no pytest.
    project = write(
        tmp_path / "proj",
        {"shapes/__init__.py": "", "shapes/area.py": "def area(w, h):\n    return w * h\n"},
    )
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(project / ".venv")], check=True
    )
    python = project / ".venv" / "bin" / "python"
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(site, "thirdparty.py").write_text("VALUE = 1\n")
    # the project itself on sys.path, as pip -e does
    Path(site, "shapes-path.pth").write_text(str(project) + "\n")
    redirect = probe_imports(ProjectInterpreter(str(python), environ()), project)
    assert redirect.names == ("shapes",), redirect.entries
