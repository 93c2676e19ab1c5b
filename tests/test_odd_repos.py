"""Odd repositories: where the loop can work it works; where it cannot, exit 2 with a clear message.

Where the repository's shape is the point (a detached HEAD, CRLF files, a project in a
subdirectory), the tests' results are canned (``tests/canned_runner.py``, reading the tree it is
given); test runs that must reach odd paths, another test command or a real hang run for real.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

import pytest
from canned_projects import canned
from canned_runner import Canned
from conftest import PROJECTS, git, init_repo
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT

from repairloop.cli import main


def scripted(project: Path, srv: ScriptedServer, *extra: str) -> List[str]:
    return [
        "run",
        str(project),
        "--model",
        "openai/scripted",
        "--api-base",
        srv.base_url,
        "--no-builtin",
        "--json",
        *extra,
    ]


def fixed_with(
    project: Path, answer: str, capsys: pytest.CaptureFixture[str], runner: Optional[Canned] = None
) -> dict:
    with ScriptedServer([("ok", answer)]) as srv:
        code = main(scripted(project, srv), runner=runner)
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["outcome"] == "fixed", doc
    return doc


@pytest.mark.usefixtures("no_flaky_check")
def test_detached_head(make_project, capsys) -> None:
    project = make_project("off_by_one")
    git(project, "checkout", "-q", "--detach")
    fixed_with(project, RIGHT, capsys, canned("off_by_one"))
    assert git(project, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # still detached


@pytest.mark.slow
@pytest.mark.usefixtures("no_flaky_check")
def test_spaces_and_non_ascii_names(tmp_path, capsys) -> None:
    project = tmp_path / "my project é"
    shutil.copytree(PROJECTS / "off_by_one", project)
    (project / "calc" / "lists.py").rename(project / "calc" / "listes à jour.py")
    init_text = (project / "calc" / "__init__.py").read_text()
    (project / "calc" / "__init__.py").write_text(
        init_text.replace(
            "from calc.lists import",
            "from importlib import import_module\n_l = import_module('calc.listes à jour')\n"
            "chunk, first_n, last_n = _l.chunk, _l.first_n, _l.last_n\n#",
        )
    )
    init_repo(project)
    answer = RIGHT.replace("calc/lists.py", "calc/listes à jour.py")
    doc = fixed_with(project, answer, capsys)
    assert "listes à jour.py" in doc["patch"]


@pytest.mark.usefixtures("no_flaky_check")
def test_crlf_file_stays_crlf_and_missing_final_newline_stays_missing(make_project, capsys) -> None:
    project = make_project("off_by_one", git_repo=False)
    lists = project / "calc" / "lists.py"
    lists.write_bytes(lists.read_bytes().replace(b"\n", b"\r\n").rstrip(b"\r\n"))
    init_repo(project)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code = main(scripted(project, srv, "--apply", "--yes"), runner=canned("off_by_one"))
    capsys.readouterr()
    assert code == 0
    data = lists.read_bytes()
    assert b"return items[-n:]\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert not data.endswith(b"\n")


@pytest.mark.usefixtures("no_flaky_check")
def test_project_in_a_subdirectory_of_a_larger_repository(tmp_path, capsys) -> None:
    repo = tmp_path / "monorepo"
    shutil.copytree(PROJECTS / "off_by_one", repo / "services" / "calc")
    (repo / "README.md").write_text("a larger repository\n")
    init_repo(repo)
    # reads the project's own files
    doc = fixed_with(repo / "services" / "calc", RIGHT, capsys, canned("off_by_one"))
    assert (
        "--- a/calc/lists.py" in doc["patch"]
    )  # paths relative to the project, not the repository


@pytest.mark.slow
@pytest.mark.usefixtures("no_flaky_check")
def test_non_git_project(make_project, capsys) -> None:
    project = make_project("plain_project", git_repo=False)
    code = main(["run", str(project), "--json"])  # the offline engine: no model, no key
    doc = json.loads(capsys.readouterr().out)
    assert code in (0, 1) and doc["run_dir"].startswith(str(project))
    assert not (project / ".git").exists()


def expect_usage_error(args: List[str], capsys: pytest.CaptureFixture[str], *words: str) -> None:
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    for word in words:
        assert word in err, err


def test_not_a_directory(tmp_path, capsys) -> None:
    expect_usage_error(["run", str(tmp_path / "nowhere")], capsys, "is not a directory")


def test_no_test_command_found(tmp_path, capsys) -> None:
    (tmp_path / "app.py").write_text("x = 1\n")
    init_repo(tmp_path)
    expect_usage_error(["run", str(tmp_path)], capsys, "no test command", "--test-cmd")


def test_repository_without_commits(make_project, capsys) -> None:
    project = make_project("off_by_one", git_repo=False)
    git(project, "init", "-q")
    expect_usage_error(["run", str(project)], capsys, "no commits")


def test_merge_in_progress(make_project, capsys) -> None:
    project = make_project("off_by_one")
    git(project, "checkout", "-q", "-b", "other")
    (project / "calc" / "numbers.py").write_text("# other\n")
    git(project, "commit", "-qam", "other")
    git(project, "checkout", "-q", "main")
    (project / "calc" / "numbers.py").write_text("# main\n")
    git(project, "commit", "-qam", "main")
    subprocess.run(["git", "merge", "other"], cwd=project, capture_output=True)
    expect_usage_error(["run", str(project)], capsys, "merge")


def test_bare_repository(tmp_path, capsys) -> None:
    git(tmp_path, "init", "-q", "--bare", "repo.git")
    expect_usage_error(["run", str(tmp_path / "repo.git")], capsys, "bare")


def test_read_only_checkout(make_project, capsys) -> None:
    project = make_project("off_by_one")
    if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(project)]).returncode:
        pytest.skip("cannot make a directory read-only for root here")
    try:
        expect_usage_error(["run", str(project)], capsys, "writable")
    finally:
        subprocess.run(["chattr", "-i", str(project)])


@pytest.mark.slow
def test_a_test_command_known_only_by_its_exit_code_is_repaired(tmp_path, capsys) -> None:
    """No pytest plugin and no JUnit XML: the whole suite is the failing unit, never 'flaky'."""
    root = tmp_path / "plain_unittest"
    root.mkdir()
    (root / "app.py").write_text("def double(x):\n    return x + x + 1\n")
    (root / "test_app.py").write_text(
        "import unittest\nfrom app import double\n\n\n"
        "class T(unittest.TestCase):\n    def test_double(self):\n"
        "        self.assertEqual(double(2), 4)\n"
    )
    init_repo(root)
    fix = (
        "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n def double(x):\n-    return x + x + 1\n+  "
        "  return x + x\n"
    )
    with ScriptedServer([("ok", fix)]) as srv:
        code = main(scripted(root, srv, "--test-cmd", "python -m unittest -q"))
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["outcome"] == "fixed", doc
    assert doc["flaky_tests"] == [] and doc["iterations"][0]["decision"] == "kept"


@pytest.mark.slow
def test_the_run_budget_running_out_in_the_baseline_is_a_budget_stop(make_project, capsys) -> None:
    project = make_project("off_by_one")
    (project / "conftest.py").write_text(
        "import time\n\n\ndef pytest_sessionstart(session):\n    time.sleep(30)\n"
    )
    git(project, "add", "conftest.py")
    git(project, "commit", "-q", "-m", "slow suite")
    code = main(["run", str(project), "--timeout", "3", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 1 and doc["stop_reason"] == "budget_time" and doc["outcome"] == "not_fixed"
