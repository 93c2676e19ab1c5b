"""``repairloop hook``: in-process runs, and runs through the real ``pre-commit`` tool.

The in-process runs show what the hook does with an outcome, on canned test results
(``tests/canned_runner.py``); the runs through pre-commit run the real tests (the offline
engine's repair, an applied fix, a green suite).

The pre-commit tests point a real ``.pre-commit-config.yaml`` (and ``pre-commit
try-repo``) at a git repository holding this project's current files (HEAD
plus uncommitted and new files, like try-repo's own shadow clone), with
PRE_COMMIT_HOME in a temporary directory shared by the session so the hook
environment is built once. pre-commit builds it with ``pip install .`` of that
repository. By default the hook environment sees this test environment's
site-packages through PYTHONPATH, so pip finds the dependencies already
installed (about 10 s instead of 2-3 minutes of downloading litellm & co);
set REPAIRLOOP_TEST_FULL_HOOK_ENV=1 to build it exactly as a user's machine does.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Dict, List, Tuple

import pytest
from canned_projects import canned
from conftest import GIT_ENV, REPO_ROOT, git
from scripted_server import ScriptedServer
from test_ci import RIGHT

from repairloop.cli import main
from repairloop.integrations.hook import HOOK_DEFAULTS, hook_settings

_SKIP = ("__pycache__", ".venv", "venv", ".repairloop", ".pytest_cache")


# -- settings and in-process runs --------------------------------------------------------------


def test_hook_defaults_sit_below_the_users_configuration(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.repairloop]\ntimeout = 300\n")
    settings = hook_settings(
        tmp_path, {"max_iterations": 5}, {"REPAIRLOOP_MAX_COST": "0.5"}
    ).settings
    assert settings.timeout == 300 and settings.max_cost == 0.5 and settings.max_iterations == 5
    bare = tmp_path / "bare"
    bare.mkdir()
    plain = hook_settings(bare, {}, {}).settings
    assert (plain.timeout, plain.max_cost, plain.max_iterations) == (
        HOOK_DEFAULTS["timeout"],
        HOOK_DEFAULTS["max_cost"],
        HOOK_DEFAULTS["max_iterations"],
    )


def test_green_suite_exits_zero(make_project, capsys, monkeypatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    project = make_project("all_green")
    assert main(["hook", str(project)], runner=canned("all_green")) == 0
    assert capsys.readouterr().out == "repairloop: the tests pass\n"


def test_unrecoverable_failure_says_where_and_exits_three(make_project, capsys) -> None:
    project = make_project("syntax_error")
    assert main(["hook", str(project)], runner=canned("syntax_error")) == 3
    out = capsys.readouterr().out
    assert "geometry/shapes.py:10: syntax: fix the syntax at geometry/shapes.py:10" in out
    assert "fix it by hand" in out


# -- the real pre-commit tool ----------------------------------------------------------------------


def _repo_files() -> List[str]:
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=REPO_ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode("utf-8")
        .split("\0")
    )
    return [
        p
        for p in listed
        if p
        and not set(Path(p).parts) & set(_SKIP)
        and ".egg-info" not in p
        and (REPO_ROOT / p).is_file()
    ]


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Tuple[Path, str]:
    """(path, commit) of a repository holding this project's current files."""
    shadow = tmp_path_factory.mktemp("hook-repo") / "repairloop"
    for rel in _repo_files():
        (shadow / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO_ROOT / rel, shadow / rel)
    git(shadow, "init", "-q", "-b", "main")
    git(shadow, "add", "-A")
    git(shadow, "commit", "-q", "-m", "shadow of the working tree")
    return shadow, git(shadow, "rev-parse", "HEAD").strip()


@pytest.fixture(scope="session")
def pre_commit_env(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("REPAIRLOOP_") and k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")
    }
    env.update(
        GIT_ENV,
        PRE_COMMIT_HOME=str(tmp_path_factory.mktemp("pre-commit-home")),
        NO_COLOR="1",
        PRE_COMMIT_COLOR="never",
    )
    if not os.environ.get("REPAIRLOOP_TEST_FULL_HOOK_ENV"):
        paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]])
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


# pre-commit builds the hook's environment (``pip install .`` of hook_repo) once per
# PRE_COMMIT_HOME, that is once per xdist worker: the tests that use it run on one worker, so it is
# built once. (try-repo builds its own, in a store of its own.)
HOOK_ENV = pytest.mark.xdist_group("pre_commit_hook_env")


def configure(project: Path, hook_repo: Tuple[Path, str], args: List[str]) -> None:
    """Commit a .pre-commit-config.yaml using the hook from ``hook_repo`` with ``args``."""
    quoted = ", ".join(f'"{a}"' for a in args)
    (project / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {hook_repo[0]}\n    rev: {hook_repo[1]}\n    hooks:\n"
        f"      - id: repairloop\n        args: [{quoted}]\n"
    )
    git(project, "add", ".pre-commit-config.yaml")
    git(project, "commit", "-q", "-m", "pre-commit config")


def pre_commit(project: Path, env: Dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pre_commit", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def tree_state(project: Path) -> Dict[str, object]:
    files = {
        str(p.relative_to(project)): p.read_bytes()
        for p in sorted(project.rglob("*"))
        if p.is_file()
        and not set(p.relative_to(project).parts) & {".git", ".repairloop", "__pycache__"}
    }
    return {
        "head": git(project, "rev-parse", "HEAD"),
        "index": git(project, "ls-files", "-s"),
        "status": git(project, "status", "--porcelain"),
        "files": files,
    }


@pytest.mark.slow
@HOOK_ENV
def test_pre_push_hook_proposes_a_patch_offline_and_changes_nothing(
    make_project, hook_repo, pre_commit_env
) -> None:
    project = make_project("off_by_one")
    configure(project, hook_repo, [])
    before = tree_state(project)
    done = pre_commit(project, pre_commit_env, "run", "repairloop", "--hook-stage", "pre-push")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "- hook id: repairloop" in out and "- exit code: 1" in out
    assert "builtin" in out  # no key: the offline engine
    assert "+    return items[-n:]" in out and "saved as .repairloop/runs/" in out
    assert "files were modified by this hook" not in out
    assert tree_state(project) == before


@pytest.mark.slow
@HOOK_ENV
def test_pre_push_hook_with_apply_writes_the_fix_unstaged(
    make_project, hook_repo, pre_commit_env
) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        configure(
            project,
            hook_repo,
            ["--apply", "--model", "openai/scripted", "--api-base", srv.base_url],
        )
        numbers = project / "calc" / "numbers.py"
        numbers.write_text(numbers.read_text() + "\n# an unstaged hunk of another file\n")
        (project / "NOTES.md").write_text("staged, not committed\n")
        git(project, "add", "NOTES.md")
        index_before, numbers_before = git(project, "ls-files", "-s"), numbers.read_text()
        done = pre_commit(project, pre_commit_env, "run", "repairloop", "--hook-stage", "pre-push")
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert (
        "files were modified by this hook" in out
        and "applied a fix to your working tree (not staged)" in out
    )
    assert "return items[-n:]" in (project / "calc" / "lists.py").read_text()
    assert git(project, "ls-files", "-s") == index_before  # nothing staged
    assert git(project, "diff", "--cached", "--name-only") == "NOTES.md\n"
    assert numbers.read_text() == numbers_before  # the other file's unstaged hunk is kept
    assert sorted(git(project, "diff", "--name-only").split()) == [
        "calc/lists.py",
        "calc/numbers.py",
    ]


@pytest.mark.slow
def test_try_repo_on_a_green_suite_passes(make_project, hook_repo, pre_commit_env) -> None:
    project = make_project("all_green")
    done = pre_commit(
        project,
        pre_commit_env,
        "try-repo",
        str(hook_repo[0]),
        "repairloop",
        "--hook-stage",
        "pre-push",
        "--all-files",
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    assert "repairloop (repair failing tests)" in out and "Passed" in out


@pytest.mark.slow
def test_the_printed_apply_command_works_in_a_subdirectory_of_a_repository(
    tmp_path: Path, capsys, no_flaky_check, monkeypatch
) -> None:
    """git reads a patch's paths from the repository's top: the hook's `git apply` for a project
    in `sub/` needs `--directory=sub` (plain, it skips every file and exits 0)."""
    from conftest import init_repo
    from test_behaviour_check import RIGHT, SHOP, SHOP_TESTS

    root = tmp_path / "mono"
    project = root / "sub"
    (project / "pkg").mkdir(parents=True)
    (project / "tests").mkdir()
    (project / "pkg" / "__init__.py").write_text("")
    (project / "pkg" / "shop.py").write_text(SHOP)
    (project / "tests" / "test_shop.py").write_text(SHOP_TESTS)
    (project / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    init_repo(root)
    monkeypatch.chdir(project)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        args = ["hook", ".", "--model", "openai/scripted", "--api-base", srv.base_url]
        assert main([*args, "--max-iterations", "1"]) == 1
    out = capsys.readouterr().out
    command = out.split("apply it with: ", 1)[1].split("   ", 1)[0]
    assert command.startswith("git apply --directory=sub ")
    subprocess.run(command.split(), cwd=project, check=True)
    assert "return unit * quantity\n" in (project / "pkg" / "shop.py").read_text()
