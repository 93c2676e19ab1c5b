"""Budgets that mean what they say: a cost limit with a model that has no price is refused before
any call unless the user prices it; time spent in the offline engine is engine time; a candidate cut
short by the run's time budget says so. The runs' tests are canned (``tests/canned_runner.py``):
what is tested is what the loop spends and decides."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Dict, List, Optional, Union

import pytest
from canned_projects import canned, off_by_one
from canned_runner import TIMED_OUT, Canned, Fail, TimedOut, Tree, Verdicts
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT, run_cli, scripted_run

from repairloop.integrations.hook import hook_settings
from repairloop.loop.driver import repair
from repairloop.reports.text import cost_line
from repairloop.settings import Settings
from repairloop.types import Decision, Iteration, Proposal, ProposalRequest, Usage


@pytest.mark.usefixtures("no_flaky_check")
def test_a_cost_limit_with_an_unpriced_model_is_refused_before_any_call(
    make_project, capsys
) -> None:
    # Seen on a real project: --max-cost 0.0001 with a model litellm does not price ran on with
    # "cost: unknown" and no warning, so the limit could never stop it.
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, err = run_cli(
            scripted_run(project, srv, "--max-cost", "0.0001"), capsys, canned("off_by_one")
        )
        asked = len(srv.requests)
    doc = json.loads(out)
    assert code == 2 and asked == 0, (code, asked, err)
    error = doc["error"]
    assert (
        error["exit_code"] == 2
        and "openai/scripted" in error["message"]
        and "no price" in error["message"]
    )
    assert "model_prices" in error["hint"] and "--max-cost" in error["hint"]
    assert not (project / ".repairloop" / "runs").exists() or not any(
        (project / ".repairloop" / "runs").iterdir()
    )


@pytest.mark.usefixtures("no_flaky_check")
def test_a_priced_model_keeps_the_limit_at_the_users_price(
    make_project, capsys, monkeypatch
) -> None:
    project = make_project("off_by_one")
    monkeypatch.setenv("REPAIRLOOP_MODEL_PRICES", "openai/scripted=2/10")  # USD per million tokens
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(
            scripted_run(project, srv, "--max-cost", "0.5"), capsys, canned("off_by_one")
        )
    doc = json.loads(out)
    assert code == 0 and doc["outcome"] == "fixed"
    first = doc["iterations"][0]
    expected = (first["prompt_tokens"] * 2 + first["completion_tokens"] * 10) / 1_000_000
    assert first["cost_usd"] == pytest.approx(expected) and first["cost_usd"] > 0


@pytest.mark.usefixtures("no_flaky_check")
def test_without_a_cost_limit_an_unpriced_model_runs(make_project, capsys) -> None:
    project = make_project("off_by_one")
    with ScriptedServer([("ok", RIGHT)]) as srv:
        code, out, _ = run_cli(scripted_run(project, srv), capsys, canned("off_by_one"))
    doc = json.loads(out)
    assert code == 0 and doc["iterations"][0]["cost_usd"] is None  # unknown, and said so


def test_a_hook_default_is_no_cost_limit_of_the_users(tmp_path: Path) -> None:
    assert "max_cost" not in hook_settings(tmp_path, {}, {}).settings.model_fields_set
    assert hook_settings(tmp_path, {}, {}).settings.max_cost == 0.10
    assert "max_cost" in hook_settings(tmp_path, {"max_cost": 0.2}, {}).settings.model_fields_set


@pytest.mark.parametrize("value", [{"m": [1.0]}, {"m": [-1.0, 2.0]}, {"m": "cheap"}, "m=1/x"])
def test_a_bad_price_is_a_config_error(value: object) -> None:
    with pytest.raises(ValueError, match="per million tokens"):
        Settings(model_prices=value)


def test_prices_read_from_the_environment_and_toml() -> None:
    assert Settings(model_prices="ollama/qwen3:8b=0.1/0.4, openai/x=3").model_prices == {
        "ollama/qwen3:8b": [0.1, 0.4],
        "openai/x": [3.0, 3.0],
    }
    assert Settings(model_prices={"a/b": [1, 2], "c": 0.5}).model_prices == {
        "a/b": [1.0, 2.0],
        "c": [0.5, 0.5],
    }


def test_the_offline_engines_time_is_engine_time() -> None:
    engine = Iteration(
        1,
        "builtin",
        "builtin",
        Usage(seconds=41.5),
        Decision.NO_CANDIDATE,
        "builtin failed: ...",
        seconds_model=41.5,
        seconds_total=43.0,
    )
    model = Iteration(
        2, "llm", "openai/x", Usage(10, 5, None, 2.0, 1), Decision.REVERTED, "", seconds_model=2.0
    )
    assert engine.to_json()["seconds"] == {
        "model": 0.0,
        "engine": 41.5,
        "tests": 0.0,
        "total": 43.0,
    }
    assert model.to_json()["seconds"] == {"model": 2.0, "tests": 0.0, "total": 0.0}
    assert Iteration.from_json(engine.to_json()).seconds_model == 41.5
    assert "seconds: engine 41.50," in cost_line(engine) and "seconds: model 2.00," in cost_line(
        model
    )


class LateProposer:
    """Answers the right patch, but only when the run's time budget is all but gone (it moves the
    clock)."""

    name, engine = "late", "llm"

    def __init__(self, skip: List[float], timeout: float) -> None:
        self.skip, self.timeout = skip, timeout

    def propose(self, request: ProposalRequest) -> Proposal:
        self.skip[0] += self.timeout  # the run's clock: past its --timeout once the answer is in
        return Proposal(answer=RIGHT, engine="llm", model="late")


def hangs_with_the_fix(tree: Tree) -> Union[Verdicts, TimedOut]:
    """off_by_one's tests, whose run hangs (until killed at its limit) once the fix is in."""
    verdicts: Dict[str, Optional[Fail]] = off_by_one(tree)
    return TIMED_OUT if verdicts["tests/test_lists.py::test_last_n"] is None else verdicts


def test_a_candidate_cut_by_the_runs_time_budget_says_so(make_project) -> None:
    # Seen on a real project: a candidate whose tests were cut short because --timeout ran out was
    # reported as "the test suite timed out with this candidate".
    project = make_project("off_by_one")
    runner = Canned(hangs_with_the_fix)
    skip = [0.0]
    settings = Settings(models=["late"], fallback_to_builtin=False, timeout=3600.0, confirm_runs=0)
    result = repair(
        settings,
        project,
        environ={},
        proposers={"late": LateProposer(skip, 3600.0)},
        clock=lambda: time.monotonic() + skip[0],
        runner=runner,
    )
    reason = result.iterations[0].reason
    assert (
        "time budget (--timeout) ran out" in reason
        and "timed out with this candidate" not in reason
    ), reason
    assert result.stop_reason.value == "budget_time"
    assert (
        runner.runs[-1].timeout == 1.0
    )  # the candidate's run had what was left of --timeout (at least 1 s)
