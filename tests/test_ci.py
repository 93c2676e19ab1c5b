"""``repairloop ci``: loops on fixture repositories, a local bare repository as the remote,
a fake GitHub on 127.0.0.1, and the GitHub Actions files (outputs, step summary) read back.

The model is the scripted OpenAI-compatible server (fast and deterministic);
the offline engine's part is covered by the hook tests. What ``ci`` does with a
run's outcome (outputs, summary, annotations, pushes, pull requests, refusals) is
shown on runs whose tests are canned (``tests/canned_runner.py``), the fix
commit's re-run included; one run, the summary's, runs the real tests.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import pytest
import yaml
from canned_projects import canned
from canned_runner import Canned
from conftest import GIT_ENV, REPO_ROOT, git
from fake_github import FakeForge
from scripted_server import ScriptedServer, completion_body
from test_e2e_run import RIGHT

from repairloop.cli import app, main
from repairloop.integrations import github_actions
from repairloop.integrations.summary import fingerprint
from repairloop.types import Failure, FailureKind

TOUCHES_WORKFLOW = (
    RIGHT
    + """\
--- a/.github/workflows/test.yml
+++ b/.github/workflows/test.yml
@@ -1,1 +1,1 @@
-name: test
+name: tests
"""
)

FP = fingerprint(
    [
        Failure(
            "tests/test_lists.py::test_last_n",
            FailureKind.LOGIC,
            True,
            "",
            exc_type="AssertionError",
        )
    ]
)


# -- helpers -------------------------------------------------------------------------------


def with_remote(project: Path) -> Path:
    """Give ``project`` an ``origin``: a bare repository next to it, with main pushed."""
    bare = project.parent / "remote.git"
    git(project.parent, "init", "-q", "--bare", "-b", "main", str(bare))
    git(project, "remote", "add", "origin", str(bare))
    git(project, "push", "-q", "origin", "main")
    return bare


def actions_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, **extra: str) -> Dict[str, Path]:
    """Set the variables GitHub Actions sets; return the output and summary files."""
    files = {
        "output": tmp_path / "gh_output",
        "summary": tmp_path / "gh_summary.md",
        "temp": tmp_path / "runner",
    }
    files["temp"].mkdir()
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_HEAD_REF", "GITLAB_CI"):
        monkeypatch.delenv(name, raising=False)
    values = {
        "GITHUB_ACTIONS": "true",
        "GITHUB_OUTPUT": str(files["output"]),
        "GITHUB_STEP_SUMMARY": str(files["summary"]),
        "RUNNER_TEMP": str(files["temp"]),
        "GITHUB_REPOSITORY": "acme/widgets",
        "GITHUB_REF": "refs/heads/main",
        "GITHUB_ACTOR": "alice",
        "GITHUB_TOKEN": "t0ken",
        "NO_COLOR": "1",
        "REPAIRLOOP_CONFIRM_RUNS": "0",
        **extra,
    }  # no flaky re-run: a deterministic suite, a faster test
    for name, value in values.items():
        monkeypatch.setenv(name, value)
    return files


def run_ci(
    project: Path,
    srv: ScriptedServer,
    capsys: pytest.CaptureFixture[str],
    *extra: str,
    runner: Optional[Canned] = None,
) -> Tuple[int, str]:
    """``repairloop ci PROJECT`` with the scripted model: (exit code, stdout); ``runner`` replays
    canned test results (None: real pytest subprocesses in the sandbox)."""
    code = main(
        ["ci", str(project), "--model", "openai/scripted", "--api-base", srv.base_url, *extra],
        runner=runner,
    )
    return code, capsys.readouterr().out


def outputs(files: Dict[str, Path]) -> Dict[str, str]:
    return dict(github_actions.read_outputs(files["output"])) if files["output"].exists() else {}


def checkout_state(repo: Path) -> Tuple[str, ...]:
    def g(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True
        ).stdout

    return (
        g("rev-parse", "HEAD"),
        g("symbolic-ref", "HEAD"),
        g("ls-files", "-s"),
        g("status", "--porcelain"),
        (repo / "calc" / "lists.py").read_text(),
    )


def journal_events(project: Path) -> List[dict]:
    events = []
    for path in sorted((project / ".repairloop" / "runs").glob("*/journal.jsonl")):
        events += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return events


# -- the GitHub Actions helpers -----------------------------------------------------------------


def test_annotation_escapes_properties_and_message() -> None:
    line = github_actions.annotation(
        "error", "50% done\nnext", file="a,b.py", line=3, title="repairloop: syntax"
    )
    assert line == "::error file=a%2Cb.py,line=3,title=repairloop%3A syntax::50%25 done%0Anext"


def test_outputs_round_trip_including_multiline(tmp_path: Path) -> None:
    path = tmp_path / "out"
    github_actions.set_output(str(path), "outcome", "fixed")
    github_actions.set_output(str(path), "patch", "--- a\n+++ b\n")
    assert github_actions.read_outputs(path) == {"outcome": "fixed", "patch": "--- a\n+++ b\n"}


def test_summary_is_cut_below_githubs_limit(tmp_path: Path) -> None:
    path = tmp_path / "summary.md"
    github_actions.add_summary(str(path), "x" * 5000, limit=4096)
    text = path.read_text()
    assert path.stat().st_size < 4096 and text.endswith(
        "_(summary truncated: GitHub keeps at most 1 MiB per step)_\n"
    )


def test_fingerprint_is_stable_and_ignores_messages_and_order() -> None:
    a = Failure("t::a", FailureKind.LOGIC, True, "assert 1 == 2", exc_type="AssertionError")
    b = Failure("t::b", FailureKind.LOGIC, True, "boom at 0x7f", exc_type="KeyError")
    moved = Failure(
        "t::a",
        FailureKind.LOGIC,
        True,
        "assert 3 == 4",
        location="x.py:9",
        exc_type="AssertionError",
    )
    assert fingerprint([a, b]) == fingerprint([b, moved]) and len(fingerprint([a])) == 12
    assert fingerprint([a]) != fingerprint(
        [Failure("t::a", FailureKind.LOGIC, True, "", exc_type="TypeError")]
    )
    assert fingerprint([]) == ""


# -- whole runs -----------------------------------------------------------------------------------


@pytest.mark.slow
def test_summary_outputs_annotation_and_patch_artifact(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("off_by_one")
    files = actions_env(monkeypatch, tmp_path)
    before = checkout_state(project)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out = run_ci(project, srv, capsys)
    # The server charges characters // 4; the prompt quotes pytest's assertion text, which varies by
    # pytest version.
    (request,) = srv.requests
    charged = completion_body(request, RIGHT)["usage"]["total_tokens"]
    got = outputs(files)
    summary = files["summary"].read_text()
    assert code == 1  # the commit under test is broken, fix proposed or not
    assert (
        got["outcome"] == "fixed"
        and got["fingerprint"] == FP
        and got["branch"] == ""
        and got["pull-request-url"] == ""
    )
    assert got["patch-path"] == str(files["temp"] / "repairloop.patch")
    assert "+    return items[-n:]" in Path(got["patch-path"]).read_text()
    for expected in (
        "## repairloop: a fix for the failing tests",
        "### What failed",
        "tests/test_lists.py::test_last_n",
        "| logic |",
        "### What was tried",
        "| kept |",
        "```diff",
        "+    return items[-n:]",
        f"{charged} tokens",
        "unknown (unpriced model)",
    ):
        assert expected in summary, expected
    assert "::notice title=repairloop::repairloop proposes a patch for 1 failing test(s)" in out
    assert checkout_state(project) == before  # the CI workspace is never written


def test_open_pr_twice_on_the_same_commit_yields_one_pull_request(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("off_by_one")
    bare = with_remote(project)
    with FakeForge() as forge, ScriptedServer([("ok", RIGHT)]) as srv:
        files = actions_env(monkeypatch, tmp_path, GITHUB_API_URL=forge.base_url)
        before = checkout_state(project)
        code1, _ = run_ci(
            project,
            srv,
            capsys,
            "--open-pr",
            "--author",
            "Fix Bot <fixbot@example.com>",
            runner=canned("off_by_one"),
        )
        first = outputs(files)
        files["output"].unlink()
        code2, _ = run_ci(
            project,
            srv,
            capsys,
            "--open-pr",
            "--author",
            "Fix Bot <fixbot@example.com>",
            runner=canned("off_by_one"),
        )
        second = outputs(files)
        pulls, posts = forge.open_pulls(), [r for r in forge.requests if r[0] == "POST"]
    assert code1 == code2 == 1 and len(pulls) == 1 and len(posts) == 1
    assert first["branch"] == second["branch"] == f"repairloop/{FP}"
    assert first["pull-request-url"] == second["pull-request-url"] == pulls[0]["html_url"]
    assert pulls[0]["base"]["ref"] == "main" and "### Patch" in pulls[0]["body"]
    head = git(bare, "rev-parse", f"refs/heads/repairloop/{FP}").strip()
    assert (
        git(bare, "rev-parse", f"{head}^").strip() == before[0].strip()
    )  # one commit on the failing one
    message = git(bare, "log", "-1", "--format=%an <%ae>%n%B", head)
    assert message.startswith(
        "Fix Bot <fixbot@example.com>\nrepairloop: fix tests/test_lists.py::test_last_n"
    )
    assert f"Repairloop-Fingerprint: {FP}" in message
    assert "+    return items[-n:]" in git(bare, "show", head)
    assert checkout_state(project) == before  # no checkout switched, nothing staged or written
    done = [
        (e["action"], e["event"])
        for e in journal_events(project)
        if e["event"] in ("intent", "done")
    ]
    assert done == [
        ("push", "intent"),
        ("push", "done"),
        ("open_pr", "intent"),
        ("open_pr", "done"),
    ]
    summaries = files["summary"].read_text()  # both runs appended to the same step summary
    assert (
        "re-ran the tests on" in summaries
        and f"branch repairloop/{FP} already holds this fix" in summaries
    )


def test_timeout_after_creating_the_pull_request_still_yields_one(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("off_by_one")
    with_remote(project)
    with FakeForge(hang_after_create=1) as forge, ScriptedServer([("ok", RIGHT)]) as srv:
        files = actions_env(monkeypatch, tmp_path, GITHUB_API_URL=forge.base_url)
        code, _ = run_ci(
            project, srv, capsys, "--open-pr", "--api-timeout", "2", runner=canned("off_by_one")
        )
        pulls = forge.open_pulls()
    assert code == 1 and len(pulls) == 1
    assert outputs(files)["pull-request-url"] == pulls[0]["html_url"]
    notes = [e for e in journal_events(project) if e.get("action") == "open_pr"]
    assert [e["event"] for e in notes] == ["intent", "note", "done"]


def test_base_branch_moved_while_the_loop_ran_is_not_pushed(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("off_by_one")
    bare = with_remote(project)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(bare), str(other))

    def push_meanwhile(body: dict) -> tuple:
        (other / "NOTES.md").write_text("someone else pushed\n")
        git(other, "add", "-A")
        git(other, "commit", "-q", "-m", "meanwhile")
        git(other, "push", "-q", "origin", "main")
        return ("ok", RIGHT)

    files = actions_env(monkeypatch, tmp_path)
    with ScriptedServer([push_meanwhile]) as srv:
        code, out = run_ci(project, srv, capsys, "--push-branch", runner=canned("off_by_one"))
    assert code == 1 and outputs(files)["branch"] == ""
    assert "main moved on origin while the loop ran" in out and out.count("::error") == 1
    assert "repairloop/" not in git(bare, "branch", "--list")


def test_patch_touching_ci_configuration_is_refused(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("off_by_one")
    (project / ".github" / "workflows").mkdir(parents=True)
    (project / ".github" / "workflows" / "test.yml").write_text("name: test\n")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "workflow")
    bare = with_remote(project)
    # the loop's own guard off
    files = actions_env(monkeypatch, tmp_path, REPAIRLOOP_PROTECTED_GLOBS="")
    with ScriptedServer([("ok", TOUCHES_WORKFLOW)]) as srv:
        code, out = run_ci(project, srv, capsys, "--push-branch", runner=canned("off_by_one"))
    assert code == 1 and outputs(files)["outcome"] == "fixed" and outputs(files)["branch"] == ""
    assert "touches CI configuration (.github/workflows/test.yml); not pushed" in out
    assert "repairloop/" not in git(bare, "branch", "--list")


def test_branch_holding_someone_elses_commit_is_not_pushed_over(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("off_by_one")
    bare = with_remote(project)
    # a human's commit there
    git(project, "push", "-q", "origin", f"HEAD:refs/heads/repairloop/{FP}")
    files = actions_env(monkeypatch, tmp_path)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out = run_ci(project, srv, capsys, "--push-branch", runner=canned("off_by_one"))
    assert code == 1 and outputs(files)["branch"] == ""
    assert "has commits not made by repairloop; not pushing over it" in out
    assert git(bare, "rev-parse", f"refs/heads/repairloop/{FP}") == git(bare, "rev-parse", "main")


def test_commit_by_a_bot_is_skipped_without_running_the_loop(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("off_by_one")
    (project / "calc" / "lists.py").write_text((project / "calc" / "lists.py").read_text() + "\n")
    bot = {
        "GIT_AUTHOR_NAME": "dependabot[bot]",
        "GIT_AUTHOR_EMAIL": "49699333+dependabot[bot]@users.noreply.github.com",
    }
    subprocess.run(
        ["git", "commit", "-q", "-am", "Bump something"],
        cwd=project,
        check=True,
        env={**os.environ, **GIT_ENV, **bot},
    )
    files = actions_env(monkeypatch, tmp_path)
    code = main(["ci", str(project), "--open-pr"])
    out = capsys.readouterr().out
    assert code == 0 and outputs(files)["outcome"] == "skipped"
    assert (
        "::notice title=repairloop::repairloop skipped: the triggering commit" in out
        and "dependabot[bot]" in out
    )
    assert not (project / ".repairloop" / "runs").exists()  # no loop, no budget spent


def test_commit_made_by_repairloop_is_skipped(make_project, monkeypatch, tmp_path, capsys) -> None:
    project = make_project("off_by_one")
    git(
        project,
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        f"repairloop: fix x\n\nRepairloop-Fingerprint: {FP}\n",
    )
    files = actions_env(monkeypatch, tmp_path)
    assert main(["ci", str(project)]) == 0
    assert (
        outputs(files)["outcome"] == "skipped"
        and "made by repairloop" in files["summary"].read_text()
    )


@pytest.mark.parametrize(
    "case, file, line",
    [("syntax_error", "geometry/shapes.py", 10), ("missing_dependency", "imaging/loader.py", 3)],
)
def test_unrecoverable_failures_are_annotated_at_file_and_line(
    make_project, monkeypatch, tmp_path, capsys, case, file, line
) -> None:
    project = make_project(case)
    files = actions_env(monkeypatch, tmp_path)
    code = main(["ci", str(project)], runner=canned(case))
    out = capsys.readouterr().out
    assert (
        code == 3
        and outputs(files)["outcome"] == "unrecoverable"
        and outputs(files)["patch-path"] == ""
    )
    kind = "syntax" if case == "syntax_error" else "dependency"
    assert f"::error file={file},line={line},title=repairloop%3A {kind}::" in out
    assert f"| {kind} |" in files["summary"].read_text()


def test_gitlab_and_plain_modes_print_the_summary_and_write_dotenv(
    make_project, monkeypatch, tmp_path, capsys
) -> None:
    project = make_project("syntax_error")
    actions_env(monkeypatch, tmp_path)
    monkeypatch.setenv("GITHUB_ACTIONS", "")
    monkeypatch.setenv("GITLAB_CI", "true")
    dotenv, summary = tmp_path / "repairloop.env", tmp_path / "summary.md"
    code = main(
        ["ci", str(project), "--dotenv", str(dotenv), "--summary-file", str(summary)],
        runner=canned("syntax_error"),
    )
    out = capsys.readouterr().out
    assert code == 3 and "::error" not in out
    assert "error: geometry/shapes.py:10: syntax:" in out and "## repairloop:" in out
    assert (
        "REPAIRLOOP_OUTCOME=unrecoverable\n" in dotenv.read_text()
        and summary.read_text().startswith("## repairloop:")
    )


# -- the files people copy: action.yml, the README workflow, the GitLab job, the hook manifest
# ------

SHA_PIN = re.compile(r"^[\w.-]+/[\w.-]+@[0-9a-f]{40}$")


def load_action() -> dict:
    return yaml.safe_load((REPO_ROOT / "action.yml").read_text())


def readme_block(heading: str) -> str:
    text = (REPO_ROOT / "README.md").read_text()
    return re.search(r"```yaml\n(.*?)```", text[text.index(heading) :], re.S).group(1)


def test_action_follows_the_composite_conventions() -> None:
    action = load_action()
    steps = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    for step in steps:
        if "run" in step:
            assert (
                step["shell"] == "bash" and "${{" not in step["run"]
            )  # inputs reach scripts through env only
        if "uses" in step:
            assert SHA_PIN.match(step["uses"]), step["uses"]
    ids = {step.get("id") for step in steps}
    for name, output in action["outputs"].items():
        assert output["value"] == f"${{{{ steps.run.outputs.{name} }}}}" and "run" in ids
    env_inputs = {
        m
        for step in steps
        for v in (step.get("env") or {}).values()
        for m in re.findall(r"inputs\.([\w-]+)", str(v))
    }
    assert env_inputs <= set(action["inputs"]) and set(action["inputs"]) - env_inputs <= {
        "working-directory",
        "python-version",
    }


def _action_args(tmp_path: Path, **inputs: str) -> List[str]:
    """Run the action's "Run repairloop" script with bash as GitHub does, a stub repairloop
    recording argv."""
    step = next(s for s in load_action()["runs"]["steps"] if s.get("id") == "run")
    stub = tmp_path / "bin" / "repairloop"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text(f"#!/bin/sh\nprintf '%s\\n' \"$@\" > {tmp_path / 'argv'}\n")
    stub.chmod(0o755)
    defaults = {k: str(v.get("default", "")) for k, v in load_action()["inputs"].items()}
    env = {"PATH": f"{stub.parent}{os.pathsep}{os.environ['PATH']}"}
    for name, value in step["env"].items():
        key = re.search(r"inputs\.([\w-]+)", value).group(1)
        env[name] = inputs.get(key.replace("-", "_"), defaults[key])
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env, check=True
    )
    return (tmp_path / "argv").read_text().splitlines()


def test_action_turns_inputs_into_flags(tmp_path: Path) -> None:
    assert _action_args(tmp_path) == ["ci", "."]
    args = _action_args(
        tmp_path,
        models="openai/gpt-4o-mini, anthropic/claude-3-5-haiku-latest",
        max_cost="0.5",
        test_command="make check",
        open_pr="true",
        author="Bot <b@example.com>",
    )
    assert args == [
        "ci",
        ".",
        "--test-cmd",
        "make check",
        "--model",
        "openai/gpt-4o-mini",
        "--model",
        "anthropic/claude-3-5-haiku-latest",
        "--max-cost",
        "0.5",
        "--author",
        "Bot <b@example.com>",
        "--open-pr",
    ]


def test_readme_workflow_uses_the_action_as_declared() -> None:
    workflow = yaml.safe_load(readme_block("### GitHub Actions"))
    steps = workflow["jobs"]["test"]["steps"]
    action = load_action()
    ours = next(s for s in steps if s.get("id") == "repairloop")
    assert set(ours["with"]) <= set(action["inputs"])
    for step in steps:
        if "uses" in step and step is not ours:
            assert SHA_PIN.match(step["uses"]), step["uses"]
    used = set(
        re.findall(r"steps\.repairloop\.outputs\.([\w-]+)", readme_block("### GitHub Actions"))
    )
    assert used and used <= set(action["outputs"])
    assert workflow["permissions"] == {"contents": "write", "pull-requests": "write"}


def test_gitlab_example_uses_existing_flags(capsys) -> None:
    job = yaml.safe_load((REPO_ROOT / "configs" / "gitlab-ci.yml").read_text())["repairloop"]
    command = next(line for line in job["script"] if line.startswith("repairloop ci"))
    with pytest.raises(SystemExit):
        app(["ci", "--help"])
    help_text = capsys.readouterr().out
    for flag in re.findall(r"--[\w-]+", command):
        assert flag in help_text, flag
    assert job["artifacts"]["reports"]["dotenv"] == "repairloop.env"


def test_pre_commit_manifest_is_valid_and_declares_the_hook() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pre_commit", "validate-manifest", ".pre-commit-hooks.yaml"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (hook,) = yaml.safe_load((REPO_ROOT / ".pre-commit-hooks.yaml").read_text())
    assert (hook["id"], hook["entry"], hook["language"]) == (
        "repairloop",
        "repairloop hook",
        "python",
    )
    assert (
        hook["pass_filenames"] is False
        and hook["always_run"] is True
        and hook["stages"] == ["pre-push"]
    )
