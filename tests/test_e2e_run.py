"""End to end: `repairloop run` on real fixture repositories with a scripted model.

The model is the scripted OpenAI-compatible server on 127.0.0.1, reached
through the real litellm with ``openai/<name>`` and ``--api-base``; the
workspace is a real git worktree. What the loop decides (keep or revert,
stagnation, budgets, hand-overs, the JSON document, exit codes) is driven by
the canned runner (``tests/canned_runner.py``: the fixture's test results for
the tree as it is, no subprocess); two runs are real pytest subprocesses in
the sandbox: ``repairloop run`` as a process, and an editable install whose
imports must reach the workspace.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest
from canned_projects import canned
from canned_runner import Canned
from scripted_server import ScriptedServer

from repairloop.cli import main

pytestmark = pytest.mark.usefixtures("no_flaky_check")

RIGHT = """\
--- a/calc/lists.py
+++ b/calc/lists.py
@@ -12,4 +12,4 @@ def last_n(items, n):
     \"\"\"Return the last ``n`` items of ``items``.\"\"\"
     if n <= 0:
         return []
-    return items[-n - 1:]
+    return items[-n:]
"""

WRONG = RIGHT.replace("+    return items[-n:]", "+    return items[-n + 1:]")

OTHER_WRONG = """\
--- a/calc/lists.py
+++ b/calc/lists.py
@@ -11,5 +11,5 @@
 def last_n(items, n):
     \"\"\"Return the last ``n`` items of ``items``.\"\"\"
-    if n <= 0:
+    if n < 0 or not items:
         return []
     return items[-n - 1:]
"""

EDITS_TEST = """\
--- a/tests/test_lists.py
+++ b/tests/test_lists.py
@@ -8,2 +8,2 @@
 def test_last_n():
-    assert last_n([1, 2, 3, 4], 2) == [3, 4]
+    assert last_n([1, 2, 3, 4], 2) == [2, 3, 4]
"""

# The second context line differs from the file (a docstring reworded): found fuzzily.
FUZZY = """\
```diff
--- calc/lists.py
+++ calc/lists.py
@@ -11,5 +11,5 @@
 def last_n(items, n):
     \"\"\"Return the final n entries of items.\"\"\"
     if n <= 0:
         return []
-    return items[-n - 1:]
+    return items[-n:]
```
"""


SLUG_FIX = """\
--- a/src/textkit/slug.py
+++ b/src/textkit/slug.py
@@ -10,2 +10,2 @@
     words = _NON_WORD.split(text.lower())
-    return separator.join(word for word in words)
+    return separator.join(word for word in words if word)
"""


def snapshot(repo: Path) -> Dict[str, object]:
    """HEAD, index, status and every file's bytes: what must not change without --apply."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True
        ).stdout

    files = {
        str(p.relative_to(repo)): p.read_bytes()
        for p in sorted(repo.rglob("*"))
        if p.is_file()
        and ".git" not in p.parts
        and ".repairloop" not in p.parts
        and "__pycache__" not in p.parts
    }
    return {
        "head": git("rev-parse", "HEAD"),
        "index": git("ls-files", "-s"),
        "status": git("status", "--porcelain", "--untracked-files=all"),
        "stash": git("stash", "list"),
        "files": files,
    }


def run_cli(
    args: Sequence[str], capsys: pytest.CaptureFixture[str], runner: Optional[Canned] = None
) -> Tuple[int, str, str]:
    """``repairloop ARGS`` in this process: (exit code, stdout, stderr); ``runner`` replays canned
    test results (None: the real pytest subprocesses in the sandbox)."""
    code = main(list(args), runner=runner)
    out, err = capsys.readouterr()
    return code, out, err


def scripted_run(project: Path, srv: ScriptedServer, *extra: str) -> List[str]:
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


def user_messages(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")


def test_right_on_the_first_try(make_project, capsys) -> None:
    project = make_project("off_by_one")
    before = snapshot(project)
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed" and doc["stop_reason"] == "success"
    assert len(doc["iterations"]) == 1 and doc["iterations"][0]["decision"] == "kept"
    assert "+    return items[-n:]" in doc["patch"]
    assert (Path(doc["run_dir"]) / "fix.patch").read_text() == doc["patch"]
    assert snapshot(project) == before  # no --apply: the user's tree is untouched


def test_wrong_then_right(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", WRONG), ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
        second_prompt = user_messages(srv.requests[1])
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    assert [i["decision"] for i in doc["iterations"]] == ["reverted", "kept"]
    assert "items[-n + 1:]" in second_prompt  # the last diff and what it did are shown


def test_same_wrong_patch_twice_stops_on_stagnation(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", WRONG)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
        calls = len(srv.requests)
    doc = json.loads(out)
    assert code == 1 and doc["outcome"] == "not_fixed" and doc["stop_reason"] == "stagnation"
    assert [i["decision"] for i in doc["iterations"]] == ["reverted", "duplicate"]
    assert calls == 2


def test_a_b_a_oscillation_stops_at_the_third(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", WRONG), ("ok", OTHER_WRONG), ("ok", WRONG)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
    doc = json.loads(out)
    assert code == 1 and doc["stop_reason"] == "stagnation"
    assert [i["decision"] for i in doc["iterations"]] == ["reverted", "reverted", "duplicate"]
    assert doc["iterations"][2]["similarity_max"] == 1.0


def test_token_budget_gates_the_call_before_it_is_sent(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--max-tokens", "500"), capsys, canned("off_by_one")
        )
        calls = len(srv.requests)
    doc = json.loads(out)
    assert code == 1 and doc["stop_reason"] == "budget_tokens" and calls == 0


def test_answer_without_patch_is_retried_with_the_error(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer(
        [("ok", "The bug is in last_n, it slices one too many."), ("ok", RIGHT)]
    ) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
        retry = srv.requests[1]["messages"]
    doc = json.loads(out)
    assert code == 0 and len(doc["iterations"]) == 1 and doc["iterations"][0]["attempts"] == 2
    assert retry[-2]["role"] == "assistant" and "one too many" in retry[-2]["content"]
    assert "no patch" in retry[-1]["content"].lower()


def test_patch_touching_a_test_file_is_rejected(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", EDITS_TEST), ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
        retry = srv.requests[1]["messages"][-1]["content"]
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    assert "tests/test_lists.py" in retry and "test file" in retry
    assert "tests/test_lists.py" not in doc["patch"]


def test_slightly_wrong_context_is_applied_fuzzily(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", FUZZY)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    assert (
        '"""Return the last ``n`` items of ``items``."""' in (project / "calc/lists.py").read_text()
    )
    assert "final n entries" not in doc["patch"]  # the file's own context is kept


def test_json_follows_the_contract(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        _, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
    doc = json.loads(out)
    for key in (
        "run_id",
        "outcome",
        "stop_reason",
        "failure_kinds",
        "iterations",
        "totals",
        "patch",
        "run_dir",
    ):
        assert key in doc
    assert doc["failure_kinds"] == {"logic": 1}
    it = doc["iterations"][0]
    for key in (
        "engine",
        "model",
        "prompt_tokens",
        "completion_tokens",
        "cost_usd",
        "similarity_to_previous",
        "tests_failed",
        "decision",
    ):
        assert key in it
    assert set(it["seconds"]) == {"model", "tests", "total"} and it["engine"] == "llm"
    assert set(doc["totals"]["seconds"]) == {"model", "tests", "total"}
    assert doc["totals"]["prompt_tokens"] == it["prompt_tokens"] > 0
    events = [
        json.loads(line)["event"]
        for line in (Path(doc["run_dir"]) / "journal.jsonl").read_text().splitlines()
    ]
    assert events[0] == "start" and "iteration" in events and events[-1] == "stopped"


@pytest.mark.slow
def test_stdout_is_only_json_in_a_subprocess(make_project) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        done = subprocess.run(
            [sys.executable, "-m", "repairloop", *scripted_run(project, srv)],
            capture_output=True,
            text=True,
            env={**os.environ, "NO_COLOR": "1"},
            timeout=300,
        )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["outcome"] == "fixed"
    assert "outcome: fixed" in done.stderr


def test_apply_writes_only_the_fix(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--apply", "--yes"), capsys, canned("off_by_one")
        )
    assert code == 0 and json.loads(out)["applied"] is True
    assert "return items[-n:]" in (project / "calc/lists.py").read_text()
    status = subprocess.run(
        ["git", "status", "--porcelain"], cwd=project, capture_output=True, text=True
    ).stdout
    assert status.strip() == "M calc/lists.py"  # unstaged, uncommitted


@pytest.mark.slow
def test_editable_install_tests_the_workspace(make_project, tmp_path, capsys) -> None:
    """With the project installed editable, the candidate must be what the tests import."""
    project = make_project("src_layout")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    py = venv / "bin" / "python"
    site = subprocess.run(
        [str(py), "-c", "import site; print(site.getsitepackages()[0])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    ours = next(p for p in sys.path if p.endswith("site-packages"))
    Path(site, "outer.pth").write_text(ours + "\n")  # pytest from repairloop's environment
    # What `pip install -e .` of a src-layout project writes with setuptools >= 64 (PEP 660):
    Path(site, "__editable__.textkit-0.1.0.pth").write_text(str(project / "src") + "\n")
    check = subprocess.run(
        [str(py), "-c", "import textkit; print(textkit.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        cwd=tmp_path,
    ).stdout
    assert check.startswith(str(project / "src"))  # the environment imports the user's tree
    answer = SLUG_FIX
    with ScriptedServer([("ok", answer)]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--test-cmd", f"{py} -m pytest -q"), capsys
        )
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed", doc
    assert "if word" not in (project / "src/textkit/slug.py").read_text()  # user's tree untouched


def test_budget_share_steps_down_to_the_next_model(make_project, capsys, monkeypatch) -> None:
    monkeypatch.setenv("REPAIRLOOP_DOWNGRADE_AT", "0.001")  # 200 of the default 200,000 tokens
    project = make_project("off_by_one")
    with ScriptedServer([("ok", WRONG), ("ok", RIGHT)]) as srv:
        args = [
            "run",
            str(project),
            "--model",
            "openai/big",
            "--model",
            "openai/small",
            "--api-base",
            srv.base_url,
            "--no-builtin",
            "--json",
        ]
        code, out, _ = run_cli(args, capsys, canned("off_by_one"))
        models = [r["model"] for r in srv.requests]
    doc = json.loads(out)
    assert code == 0 and models == ["big", "small"]
    assert [i["model"] for i in doc["iterations"]] == ["openai/big", "openai/small"]


def test_unauthorised_model_is_dropped_and_the_next_one_used(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("status", 401, "invalid api key"), ("ok", RIGHT)]) as srv:
        args = [
            "run",
            str(project),
            "--model",
            "openai/first",
            "--model",
            "openai/second",
            "--api-base",
            srv.base_url,
            "--no-builtin",
            "--json",
        ]
        code, out, _ = run_cli(args, capsys, canned("off_by_one"))
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    assert [i["decision"] for i in doc["iterations"]] == ["no_candidate", "kept"]
    assert any("openai/first" in note for note in doc["notes"])
    events = [
        json.loads(line)
        for line in (Path(doc["run_dir"]) / "journal.jsonl").read_text().splitlines()
    ]
    assert any(e["event"] == "model_dropped" and e["model"] == "openai/first" for e in events)


def test_only_model_unauthorised_is_unrecoverable(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("status", 401, "invalid api key")]) as srv:
        code, out, _err = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
    doc = json.loads(out)
    assert code == 3 and doc["outcome"] == "unrecoverable" and doc["stop_reason"] == "no_model_left"
    assert "openai/scripted" in doc["stop_detail"]


def test_blocking_kind_stops_before_any_model_call(make_project, capsys) -> None:
    project = make_project("syntax_error")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("syntax_error"))
        calls = len(srv.requests)
    doc = json.loads(out)
    assert code == 3 and doc["outcome"] == "unrecoverable" and calls == 0
    assert doc["failure_kinds"].get("syntax") and "syntax" in doc["stop_detail"]


def test_nothing_to_fix(make_project, capsys) -> None:
    project = make_project("all_green")
    code, out, _ = run_cli(["run", str(project), "--json"], capsys, canned("all_green"))
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "nothing_to_fix" and doc["iterations"] == []


PRICE_FIX = """\
--- a/orders/pricing.py
+++ b/orders/pricing.py
@@ -4,3 +4,3 @@
 def parse_price(text):
     \"\"\"Turn a price string such as "$1,200.50" into a float (dollars).\"\"\"
-    return float(text.strip().lstrip("$"))
+    return float(text.strip().lstrip("$").replace(",", ""))
"""


def test_the_prompt_after_a_kept_partial_fix_carries_code(make_project, capsys) -> None:
    """Two root causes; the first answer fixes one (kept). The next prompt shows the code of the
    failure it shows, and names the kept change by file instead of pointing at code it does not
    show."""
    project = make_project("shared_root_cause")
    with ScriptedServer([("ok", PRICE_FIX), ("ok", "no idea")]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--max-iterations", "2"), capsys, canned("shared_root_cause")
        )
        prompts = [user_messages(r) for r in srv.requests]
    doc = json.loads(out)
    assert [i["decision"] for i in doc["iterations"]] == ["kept", "rejected"] and code == 1
    after = prompts[1]
    assert "Traceback" not in after or "## Code" in after
    assert "### orders/pricing.py" in after and "def apply_discount(total, percent):" in after
    assert "(kept: it is applied; build on it)" in after and "in the code above" not in after
    assert "In orders/pricing.py line 6, " in after
    retry = prompts[2]
    assert "against the current code shown in the first message" in retry


def test_an_answer_cut_at_the_output_limit_is_never_applied(make_project, capsys) -> None:
    """The right diff, but the model stopped at its output limit (finish_reason "length"): an
    unfinished answer is not applied, whatever it looks like; the one structural retry asks for a
    shorter edit, and its answer is judged as usual."""
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT, "length"), ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
        retry = user_messages(srv.requests[1])
        calls = len(srv.requests)
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed" and calls == 2
    assert "cut off at the model's output limit" in retry and "shorter edit" in retry
    assert len(doc["iterations"]) == 1  # the retry is the same iteration's, not a new one


def _tool_call(name: str, arguments: str) -> Dict[str, Any]:
    return {
        "id": f"call_{name}",
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


LAST_N_FIXED = (
    'def last_n(items, n):\n    """Return the last ``n`` items of ``items``."""\n'
    "    if n <= 0:\n        return []\n    return items[-n:]\n"
)
REPLACE_FUNCTION = json.dumps({"path": "calc/lists.py", "name": "last_n", "code": LAST_N_FIXED})
STR_REPLACE = json.dumps(
    {"path": "calc/lists.py", "old": "    return items[-n - 1:]", "new": "    return items[-n:]"}
)


@pytest.mark.parametrize(
    "name,arguments", [("replace_function", REPLACE_FUNCTION), ("str_replace", STR_REPLACE)]
)
def test_a_model_given_the_edit_tools_fixes_with_one_call(
    make_project, capsys, name: str, arguments: str
) -> None:
    """With `--edit-format tools` the request carries the three edit tools and requires a call;
    the call's arguments are the candidate."""
    project = make_project("off_by_one")
    answer = ("ok", "", "tool_calls", None, {"tool_calls": [_tool_call(name, arguments)]})
    with ScriptedServer([answer]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--edit-format", "tools"), capsys, canned("off_by_one")
        )
        body = srv.requests[0]
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed" and len(srv.requests) == 1
    assert [t["function"]["name"] for t in body["tools"]] == [
        "replace_function",
        "str_replace",
        "write_file",
    ]
    assert body["tool_choice"] == "required" and "+    return items[-n:]" in doc["patch"]


def test_a_malformed_tool_call_is_sent_back_once_then_the_right_call_fixes(
    make_project, capsys
) -> None:
    project = make_project("off_by_one")
    bad = ("ok", "", "tool_calls", None, {"tool_calls": [_tool_call("str_replace", '{"path": ')]})
    good = ("ok", "", "tool_calls", None, {"tool_calls": [_tool_call("str_replace", STR_REPLACE)]})
    with ScriptedServer([bad, good]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--edit-format", "tools"), capsys, canned("off_by_one")
        )
        retry = user_messages(srv.requests[1])
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed" and len(doc["iterations"]) == 1
    assert "arguments are not JSON" in retry and "Call the edit tools again" in retry


def test_auto_gives_the_edit_tools_to_a_model_litellm_says_calls_functions(
    make_project, capsys
) -> None:
    """`edit_format = "auto"`: gpt-4o-mini calls functions (litellm's model map), so it gets the
    tools; the scripted model of the other tests (unknown to litellm) gets the diff prompt."""
    project = make_project("off_by_one")
    answer = (
        "ok",
        "",
        "tool_calls",
        None,
        {"tool_calls": [_tool_call("str_replace", STR_REPLACE)]},
    )
    with ScriptedServer([answer]) as srv:
        args = scripted_run(project, srv)
        args[args.index("openai/scripted")] = "openai/gpt-4o-mini"
        code, out, _ = run_cli(args, capsys, canned("off_by_one"))
        body = srv.requests[0]
    assert code == 0 and json.loads(out)["outcome"] == "fixed" and "tools" in body
    with ScriptedServer([("ok", RIGHT)]) as srv:
        run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
        assert "tools" not in srv.requests[0]


def test_a_server_that_refuses_the_tools_gets_a_text_format_instead(make_project, capsys) -> None:
    """A 400 naming `tool_choice` (a local server that takes no required call): the same request
    goes again without the tools, asking for a diff, and the diff fixes."""
    project = make_project("off_by_one")
    refused = ("status", 400, "Unsupported parameter: 'tool_choice' is not supported here")
    with ScriptedServer([refused, ("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--edit-format", "tools"), capsys, canned("off_by_one")
        )
        bodies = list(srv.requests)
    assert code == 0 and json.loads(out)["outcome"] == "fixed"
    assert "tools" in bodies[0] and "tools" not in bodies[1] and len(bodies) == 2


def test_a_draft_and_its_final_edit_in_one_answer_apply_the_final_and_the_journal_says_so(
    make_project, capsys
) -> None:
    project = make_project("off_by_one")
    draft = f"A first idea:\n```diff\n{WRONG}```\nNo, that drops one too few. Final:\n"
    answer = draft + f"```diff\n{RIGHT}```\n"
    with ScriptedServer([("ok", answer)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed" and "+    return items[-n:]" in doc["patch"]
    journal = (Path(doc["run_dir"]) / "journal.jsonl").read_text()
    iteration = next(json.loads(line) for line in journal.splitlines() if '"set_aside"' in line)
    assert (
        "items[-n + 1:]" in iteration["set_aside"][0] and "set aside" in iteration["set_aside"][0]
    )
