"""Rough edges a new user met, each driven through the real command line on real fixture projects.

--version; flags that were silently ignored (--yes without --apply, an empty
--model); the patch printed once (``ci``, ``run --apply`` on a terminal); no
``::`` in ``stats``; no run directory left by a configuration error; hints a
pip-installed user can follow; warnings for unknown ``REPAIRLOOP_*`` variables;
the JSON error document of ``--json``. The runs' tests are canned (``tests/canned_runner.py``):
what is tested is what the command line says and does.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from importlib.metadata import version
from typing import Dict, List, Optional, Tuple

import pytest
from canned_projects import canned
from canned_runner import Canned
from conftest import REPO_ROOT
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT

from repairloop.cli import main
from repairloop.settings import FIELD_NAMES

FIX_LINE = "+    return items[-n:]"  # the one added line of RIGHT, off_by_one's fix


def cli(
    args: List[str], capsys: pytest.CaptureFixture[str], runner: Optional[Canned] = None
) -> Tuple[int, str, str]:
    """``repairloop ARGS`` in this process: (exit code, stdout, stderr); ``runner`` replays canned
    test results."""
    code = main(args, runner=runner)
    out, err = capsys.readouterr()
    return code, out, err


def scripted(srv: ScriptedServer) -> List[str]:
    return ["--model", "openai/scripted", "--api-base", srv.base_url, "--no-builtin"]


@pytest.fixture
def quiet_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No CI system, no provider key, no stray REPAIRLOOP_* setting; no flaky re-run (faster,
    deterministic)."""
    import os

    for name in list(os.environ):
        if name.startswith("REPAIRLOOP_") or name in (
            "GITHUB_ACTIONS",
            "GITLAB_CI",
            "OPENAI_API_KEY",
            "ANTHROPIC_API_KEY",
        ):
            monkeypatch.delenv(name)
    monkeypatch.setenv("REPAIRLOOP_CONFIRM_RUNS", "0")
    monkeypatch.setenv("NO_COLOR", "1")


# -- 1. --version ---------------------------------------------------------------------------------


def test_version_prints_the_installed_version(capsys) -> None:
    code, out, _ = cli(["--version"], capsys)
    assert code == 0 and out == f"repairloop {version('repairloop')}\n"


def test_version_and_help_import_nothing_heavy() -> None:
    probe = (
        "import sys\nfrom repairloop.cli import main\n"
        "codes = [main(['--version']), main(['--help'])]\n"
        "heavy = [m for m in ('pydantic', 'git', 'litellm', 'rapidfuzz', 'unidiff', "
        "'repairloop.settings',\n"
        "                     'repairloop.loop.driver') if m in sys.modules]\n"
        "sys.stderr.write(repr((codes, heavy)))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=REPO_ROOT
    )
    assert done.stderr.strip().splitlines()[-1] == "([0, 0], [])"
    assert done.stdout.startswith(f"repairloop {version('repairloop')}\n")


# -- 2. flags that did nothing --------------------------------------------------------------------


@pytest.mark.parametrize("command", ["run", "resume"])
def test_yes_without_apply_is_a_usage_error(command, make_project, quiet_env, capsys) -> None:
    project = make_project("off_by_one")
    args = (
        ["run", str(project), "--yes"]
        if command == "run"
        else ["resume", "-C", str(project), "--yes"]
    )
    code, _, err = cli(args, capsys)
    assert code == 2
    assert "--yes was given without --apply" in err and "hint: add --apply" in err
    assert not (project / ".repairloop" / "runs").exists()


@pytest.mark.parametrize("command", ["run", "hook", "ci", "bench"])
def test_an_empty_model_name_is_a_usage_error(command, make_project, quiet_env, capsys) -> None:
    project = make_project("off_by_one")
    target = str(REPO_ROOT / "fixtures" / "bench") if command == "bench" else str(project)
    code, _, err = cli([command, target, "-m", ""], capsys)
    assert code == 2
    assert "--model was given an empty name" in err and "--model builtin" in err
    assert not (project / ".repairloop" / "runs").exists()


@pytest.mark.parametrize(
    "config",
    [
        'models = ["openai/gpt-4o-mini", ""]\n',
        'test_cmd = ""\n',
        'retry_kinds = ["logic", "syntx"]\n',
    ],
)
def test_empty_or_unknown_values_in_the_config_file_are_errors(
    config, make_project, quiet_env, capsys
) -> None:
    project = make_project("off_by_one")
    (project / "repairloop.toml").write_text(config)
    code, _, err = cli(["run", str(project)], capsys)
    key = config.split(" =")[0]
    assert code == 2 and f"'{key}' in {project / 'repairloop.toml'}" in err
    assert not (project / ".repairloop" / "runs").exists()


# -- 3. the patch once ----------------------------------------------------------------------------


def test_ci_outside_github_prints_the_patch_once(make_project, quiet_env, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        # ci has no --no-builtin
        code, out, err = cli(["ci", str(project), *scripted(srv)[:4]], capsys, canned("off_by_one"))
    assert code == 1  # a fix is proposed; the commit is still broken
    assert (out + err).count(
        FIX_LINE
    ) == 1 and FIX_LINE in out  # in the summary, not again in the panel
    assert "outcome: fixed" in err


class TerminalAnswering(io.StringIO):
    """stdin of a user at a terminal who answers the --apply question."""

    def isatty(self) -> bool:
        return True


def test_run_apply_on_a_terminal_prints_the_patch_once(
    make_project, quiet_env, monkeypatch, capsys
) -> None:
    project = make_project("off_by_one")
    monkeypatch.setattr(sys, "stdin", TerminalAnswering("y\n"))
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, err = cli(
            ["run", str(project), *scripted(srv), "--apply"], capsys, canned("off_by_one")
        )
    assert code == 0 and "Apply this patch to your files?" in err
    assert (out + err).count(FIX_LINE) == 1  # shown with the question, not again under the panel
    assert "return items[-n:]" in (project / "calc" / "lists.py").read_text()


# -- 4. stats without "::" ------------------------------------------------------------------------


def test_stats_name_the_recurring_code_without_a_double_colon(
    make_project, quiet_env, capsys
) -> None:
    project = make_project("off_by_one")
    for _ in range(2):  # two runs repairing the same function: it keeps coming back
        with ScriptedServer([("ok", RIGHT)]) as srv:
            assert (
                cli(["run", str(project), *scripted(srv), "--json"], capsys, canned("off_by_one"))[
                    0
                ]
                == 0
            )
    code, out, _ = cli(["stats", "-C", str(project)], capsys)
    upstream = [line for line in out.splitlines() if line.startswith("upstream:")]
    assert code == 0 and len(upstream) == 1
    assert (
        "repaired calc/lists.py: def last_n(items, n). The fault keeps coming back" in upstream[0]
    )
    assert "::" not in out


# -- 5. nothing left behind by a configuration error
# ------------------------------------------------


@pytest.mark.parametrize(
    "setup, args",
    [
        ("", ["--test-cmd", " "]),  # a bad value: a blank test command
        ("", ["--max-iterations", "0"]),
        ("unknown_key", []),  # an unknown key in the project's config
        ("no_tests", []),  # nothing to run: found no tests
    ],
)
def test_a_configuration_error_leaves_no_run_directory(
    setup, args, make_project, quiet_env, capsys
) -> None:
    project = make_project("off_by_one")
    if setup == "unknown_key":
        (project / "repairloop.toml").write_text("max_iteration = 3\n")
    if setup == "no_tests":
        for path in sorted(project.rglob("*"), reverse=True):
            if ".git" not in path.parts and (
                "tests" in path.parts or path.name == "pyproject.toml"
            ):
                path.unlink() if path.is_file() else path.rmdir()
    code, _, err = cli(["run", str(project), *args], capsys)
    assert code == 2 and "repairloop: error:" in err
    assert not (project / ".repairloop" / "runs").exists()
    assert not (project / ".repairloop" / "lock").exists()


# -- 6. hints a pip-installed user can follow -----------------------------------------------------


def test_a_bad_flag_value_names_the_help_of_the_command_used(
    make_project, quiet_env, capsys
) -> None:
    # A new user's trial: `repairloop classify --test-timeout 0` pointed to `repairloop run --help`.
    project = make_project("off_by_one")
    code, _, err = cli(["classify", str(project), "--test-timeout", "0"], capsys)
    assert code == 2 and "'test_timeout'" in err
    assert "the flag (`repairloop classify --help` lists the flags)" in err
    assert "run --help" not in err
    # `--junit-xml --json` takes the flag as the file name: refused, not a silent text report
    code, _, err = cli(["classify", str(project), "--junit-xml", "--json"], capsys)
    assert code == 2 and "'junit_xml'" in err and "not a flag ('--json')" in err
    # a budget of "inf" seconds is no budget: refused like any other impossible value
    code, _, err = cli(["run", str(project), "--timeout", "inf"], capsys)
    assert code == 2 and "'timeout'" in err and "finite number" in err


def test_hints_point_to_what_an_installed_user_has(make_project, quiet_env, capsys) -> None:
    project = make_project("off_by_one")
    (project / "repairloop.toml").write_text("max_iteration = 3\n")
    code, _, err = cli(["run", str(project)], capsys)
    assert code == 2 and "configs/default.toml" not in err
    assert "hint: did you mean 'max_iterations'?" in err and '"Configuration" section' in err
    (project / "repairloop.toml").write_text("patience = 0\n")
    code, _, err = cli(["run", str(project)], capsys)
    assert code == 2 and "configs/default.toml" not in err
    assert (
        "'patience': Iterations in a row without fewer failing tests before stopping. (default: 3)"
        in err
    )
    (project / "repairloop.toml").unlink()
    code, _, err = cli(["run", str(project), "--max-cost", "-1"], capsys)
    assert code == 2 and "repairloop run --help" in err and "configs/default.toml" not in err


def test_the_readme_configuration_section_names_every_key() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    assert [key for key in FIELD_NAMES if f"`{key}`" not in section] == []


# -- 7. unknown REPAIRLOOP_* variables
# --------------------------------------------------------------


def test_a_misspelt_variable_is_named_with_the_closest_setting(
    make_project, quiet_env, monkeypatch, capsys
) -> None:
    project = make_project("all_green")
    monkeypatch.setenv("REPAIRLOOP_MAX_ITERATION", "3")
    code, out, err = cli(["classify", str(project), "--json"], capsys, canned("all_green"))
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert code == 0 and json.loads(out)["kind"] == "none"  # a warning, not a failure
    assert warnings == [
        "repairloop: warning: REPAIRLOOP_MAX_ITERATION is not a repairloop setting and is "
        "ignored; did you mean REPAIRLOOP_MAX_ITERATIONS?"
    ]


def test_variables_repairloop_itself_uses_are_not_warned_about(
    make_project, quiet_env, monkeypatch, capsys
) -> None:
    project = make_project("all_green")
    internal: Dict[str, str] = {
        "REPAIRLOOP_CONFIRM_RUNS": "0",
        "REPAIRLOOP_DOWNGRADE_AT": "0.5",
        "REPAIRLOOP_PER_TEST_TIMEOUT": "30",
        "REPAIRLOOP_DEBUG": "",
        "REPAIRLOOP_COVERAGE_FILE": "x",
        "REPAIRLOOP_RESULTS": "x",
        # what `repairloop ci --dotenv` writes, which a GitLab dotenv report exports to later jobs
        "REPAIRLOOP_OUTCOME": "fixed",
        "REPAIRLOOP_PATCH_PATH": "p",
        "REPAIRLOOP_BRANCH": "b",
        "REPAIRLOOP_PULL_REQUEST_URL": "u",
        "REPAIRLOOP_FINGERPRINT": "f",
    }
    for name, value in internal.items():
        monkeypatch.setenv(name, value)
    code, _, err = cli(["classify", str(project)], capsys, canned("all_green"))
    assert code == 0 and "warning" not in err


# -- 8. --json errors are a JSON document ---------------------------------------------------------


def json_error(out: str) -> Dict[str, object]:
    doc = json.loads(out)
    assert list(doc) == ["error"] and sorted(doc["error"]) == [
        "exit_code",
        "hint",
        "kind",
        "message",
    ]
    return doc["error"]


def test_json_usage_error_of_ours(make_project, quiet_env, capsys) -> None:
    project = make_project("off_by_one")
    code, out, err = cli(["run", str(project), "--yes", "--json"], capsys)
    error = json_error(out)
    assert code == 2 and error["exit_code"] == 2 and error["kind"] == "config"
    assert "--yes was given without --apply" in str(error["message"]) and "--apply" in str(
        error["hint"]
    )
    assert (
        "repairloop: error: --yes was given without --apply" in err
    )  # the human message stays on stderr


def test_json_usage_error_from_the_option_parser(make_project, quiet_env, capsys) -> None:
    project = make_project("off_by_one")
    code, out, err = cli(["run", str(project), "--max-iterations", "many", "--json"], capsys)
    error = json_error(out)
    assert code == 2 and error == {
        "kind": "usage",
        "message": error["message"],
        "hint": "see 'repairloop run --help'",
        "exit_code": 2,
    }
    assert "--max-iterations" in str(error["message"]) and "--max-iterations" in err


def test_json_configuration_error(make_project, quiet_env, capsys) -> None:
    project = make_project("off_by_one")
    (project / "pyproject.toml").write_text(
        (project / "pyproject.toml").read_text() + "\n[tool.repairloop]\nmax_iteratons = 2\n"
    )
    code, out, err = cli(["classify", str(project), "--json"], capsys)
    error = json_error(out)
    assert code == 2 and error["kind"] == "config" and error["exit_code"] == 2
    assert "unknown key 'max_iteratons'" in str(error["message"]) and "max_iterations" in str(
        error["hint"]
    )
    assert "repairloop: error: unknown key 'max_iteratons'" in err


def test_json_project_error_of_the_reading_commands(tmp_path, quiet_env, capsys) -> None:
    for command in (["runs"], ["stats"]):
        code, out, _ = cli([*command, "-C", str(tmp_path / "missing"), "--json"], capsys)
        error = json_error(out)
        assert (
            code == 2
            and error["kind"] == "project"
            and re.search(r"missing is not a directory", str(error["message"]))
        )
