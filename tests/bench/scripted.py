"""Running the real loop against the scripted model server, and reading the run back from its
journal.

The model is ``openai/gpt-4o-mini`` as far as litellm knows (so calls are
priced from litellm's bundled price map and tokens counted with its offline
cl100k counter), but the server is ``tests/scripted_server.py`` on 127.0.0.1
answering at once with what the benchmark scripts. The server reports usage
counted by the same offline counter, so the journal's token figures are the
ones a real gpt-4o-mini call of that prompt would be billed for (approximately:
TECH-NOTES 1.5, gpt-4o is counted with cl100k).
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Sequence, Tuple

from scripted_server import ScriptedServer

from repairloop.loop.driver import repair
from repairloop.reports import RunReport, load_run
from repairloop.settings import load_settings

MODEL = "openai/gpt-4o-mini"
# Settings every scripted run shares: no offline engine behind the model, no flaky re-run
# (its test process is not journalled, so overhead could not be separated from it).
BASE_FLAGS: Dict[str, Any] = {"models": [MODEL], "fallback_to_builtin": False, "confirm_runs": 0}


def _usage(body: Dict[str, Any], answer: str) -> Dict[str, int]:
    from repairloop.propose.litellm_env import load_litellm

    litellm = load_litellm()
    prompt = int(litellm.token_counter(model="gpt-4o-mini", messages=body.get("messages") or []))
    completion = int(litellm.token_counter(model="gpt-4o-mini", text=answer))
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }


TOOL_CALLS = "tool calls:"  # an answer that starts so is the function calls (a JSON list) it makes


def _item(body: Dict[str, Any], answer: str) -> tuple:
    if answer.startswith(TOOL_CALLS):
        calls = json.loads(answer[len(TOOL_CALLS) :])
        return ("ok", "", "tool_calls", _usage(body, answer), {"tool_calls": calls})
    return ("ok", answer, "stop", _usage(body, answer))


def cli_argv(project: Path, api_base: str, *flags: str) -> List[str]:
    """``python -m repairloop run PROJECT`` with the scripted model at ``api_base`` alone (no
    offline engine), then ``flags``: the command line the figures run in a fresh process."""
    argv = [sys.executable, "-m", "repairloop", "run", str(project), "--model", MODEL]
    return argv + ["--api-base", api_base, "--no-builtin", *flags]


def answering(answers: Sequence[str]) -> List[Callable[[Dict[str, Any]], tuple]]:
    """Script items that answer ``answers`` in order (the last repeats), with counted usage; an
    answer starting with ``TOOL_CALLS`` answers with those function calls instead of text."""
    return [lambda body, a=answer: _item(body, a) for answer in answers]


def tool_calls(*calls: Tuple[str, Dict[str, Any]]) -> str:
    """An answer of ``answering`` that makes the function calls ``(name, arguments)``."""
    listed = [
        {
            "id": f"call_{n}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(args)},
        }
        for n, (name, args) in enumerate(calls)
    ]
    return TOOL_CALLS + json.dumps(listed)


@dataclass(frozen=True)
class LoopRun:
    """One scripted run: its report (from the journal), wall seconds around ``repair()``, model
    requests."""

    report: RunReport
    wall: float
    requests: int

    @property
    def test_seconds(self) -> float:
        """Seconds inside test processes: the baseline run plus every candidate's test runs."""
        baseline = self.report.baseline.seconds if self.report.baseline is not None else 0.0
        return baseline + sum(it.seconds_tests for it in self.report.result.iterations)

    @property
    def model_seconds(self) -> float:
        return sum(it.seconds_model for it in self.report.result.iterations)

    @property
    def overhead(self) -> float:
        """Wall time of the run outside test processes and model calls (seconds)."""
        return self.wall - self.test_seconds - self.model_seconds


def scripted_run(project: Path, answers: Sequence[str], **flags: Any) -> LoopRun:
    """Repair ``project`` in-process with the scripted model answering ``answers`` in order."""
    with ScriptedServer(answering(answers)) as srv:
        settings = load_settings(
            project, {**BASE_FLAGS, "api_base": srv.base_url, **flags}, environ={}
        )
        began = time.perf_counter()
        result = repair(settings, project)
        wall = time.perf_counter() - began
        requests = len(srv.requests)
    return LoopRun(load_run(Path(result.run_dir)), wall, requests)


def unified(path: str, start: int, context: Sequence[str], old: str, new: str) -> str:
    """A one-line-change unified diff: ``context`` lines, then ``old`` replaced by ``new``."""
    count = len(context) + 1
    body = "".join(f" {line}\n" for line in context)
    return (
        f"--- a/{path}\n+++ b/{path}\n@@ -{start},{count} +{start},{count} "
        f"@@\n{body}-{old}\n+{new}\n"
    )


def search_replace(path: str, old: str, new: str) -> str:
    """A SEARCH/REPLACE block (aider's format, which the loop accepts) changing one line."""
    return f"{path}\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n"


# calc/lists.py of fixtures/projects/off_by_one: last_n returns items[-n - 1:].
LAST_N_CONTEXT = (
    '    """Return the last ``n`` items of ``items``."""',
    "    if n <= 0:",
    "        return []",
)
LAST_N_BUG = "    return items[-n - 1:]"
LAST_N_RIGHT = "    return items[-n:]"
# Wrong fixes that differ from one another (last_n([1, 2, 3, 4], 2) must be [3, 4]).
LAST_N_WRONG = (
    "items[-n + 1:]",
    "items[:n]",
    "items[::-1][:n]",
    "items[1:n + 1]",
    "items[-n:-1]",
    "items[n - 1:]",
    "sorted(items, reverse=True)[:n]",
    "items[-n - 2:]",
    "[items[-1]] * n",
)
# Near-identical wrong fixes: one character apart, all still wrong.
LAST_N_NEAR = tuple(f"items[-n - {k}:]" for k in range(2, 9))


def last_n_patch(expr: str) -> str:
    """A unified diff setting last_n's return expression to ``expr``."""
    return unified("calc/lists.py", 12, LAST_N_CONTEXT, LAST_N_BUG, f"    return {expr}")


def last_n_right() -> str:
    return unified("calc/lists.py", 12, LAST_N_CONTEXT, LAST_N_BUG, LAST_N_RIGHT)


# convert/units.py of fixtures/projects/big_module: pound_to_ounce multiplies where it should
# divide.
OUNCE_BUG = "    return value * POUND_IN_KILOGRAM * OUNCE_IN_KILOGRAM"
OUNCE_WRONG = (
    "value * OUNCE_IN_KILOGRAM / POUND_IN_KILOGRAM",
    "value * POUND_IN_KILOGRAM + OUNCE_IN_KILOGRAM",
    "value * 12",
    "value / POUND_IN_KILOGRAM * OUNCE_IN_KILOGRAM",
    "value * POUND_IN_KILOGRAM",
    "value * 15",
    "value * 16 + 1",
    "value * POUND_IN_KILOGRAM - OUNCE_IN_KILOGRAM",
)


def ounce_patch(expr: str) -> str:
    return search_replace("convert/units.py", OUNCE_BUG, f"    return {expr}")
