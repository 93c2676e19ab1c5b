"""``repairloop bench`` end to end: kept runs, correct beside plausible, shards merged, progress on
stderr.

Four cases written under tmp_path, repaired through the real CLI by the
scripted model (tests/scripted_server.py, reached through litellm), each run a
real loop with real pytest runs in the sandbox:

- ``alpha``: the model's fix is the reference fix written with other spacing
  (plausible, same as the reference, passes the hidden tests: correct);
- ``beta``: the model special-cases the visible tests (``n % 4 == 0`` for
  "is even"): plausible, not the reference, fails the hidden tests;
- ``delta``: tests live in ``checks/check_*.py`` (pytest's ``python_files``)
  and test edits are allowed; the model weakens the test, which no test glob
  names: only the run's own test-file rule (the files the baseline collected
  tests from) calls it a test edit;
- ``gamma``: the model's answer never fixes it (not plausible, not judged).

The same bench runs once whole and once as two shards; every test reads the
runs the module's fixture made (one xdist worker runs them all).
"""

from __future__ import annotations

import contextlib
import difflib
import io
import json
import os
import shutil
import textwrap
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest
from scripted_server import ScriptedServer

from repairloop.cli import main
from repairloop.reports import format_names

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("bench_e2e")]

PYPROJECT = '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = ["tests"]\n'
CONFIG = "fallback_to_builtin = false\nmax_iterations = 2\nconfirm_runs = 0\n"


def _file(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


CASES: Dict[str, Dict[str, Any]] = {
    "alpha": {
        "module": (
            "alpha.py",
            _file('''
            """Scaling."""


            def triple(x):
                """Three times ``x``."""
                return x * 3 + 1
            '''),
        ),
        "fixed": "    return x * 3\n",
        "answer": "    return x*3\n",  # the reference fix with other spacing
        "tests": (
            "tests/test_alpha.py",
            "from alpha import triple\n\n\ndef test_triple():\n    assert triple(2) == 6\n\n\n"
            "def test_zero():\n    assert triple(0) == 0\n",
        ),
        "hidden": (
            "tests/test_alpha_hidden.py",
            "from alpha import triple\n\n\ndef test_more():\n"
            "    assert triple(-4) == -12\n    assert triple(10) == 30\n",
        ),
    },
    "beta": {
        "module": (
            "beta.py",
            _file('''
            """Parity."""


            def is_even(n):
                """True for even ``n``."""
                return n % 2 == 1
            '''),
        ),
        "fixed": "    return n % 2 == 0\n",
        "answer": "    return n % 4 == 0\n",  # passes 4 and 7, fails 6: overfitting
        "tests": (
            "tests/test_beta.py",
            "from beta import is_even\n\n\ndef test_four():\n    assert is_even(4) is True\n\n\n"
            "def test_seven():\n    assert is_even(7) is False\n",
        ),
        "hidden": (
            "tests/test_beta_hidden.py",
            "from beta import is_even\n\n\ndef test_six():\n    assert is_even(6) is True\n\n\n"
            "def test_nine():\n    assert is_even(9) is False\n",
        ),
    },
    "gamma": {
        "module": (
            "gamma.py",
            _file('''
            """Halving."""


            def half(x):
                """Half of ``x``."""
                return x / 3
            '''),
        ),
        "fixed": "    return x / 2\n",
        "answer": "    return x / 4\n",  # still wrong: rejected, then the same answer stops the run
        "tests": (
            "tests/test_gamma.py",
            "from gamma import half\n\n\ndef test_half():\n    assert half(8) == 4\n",
        ),
        "hidden": (
            "tests/test_gamma_hidden.py",
            "from gamma import half\n\n\ndef test_odd():\n    assert half(3) == 1.5\n",
        ),
    },
}


def bug_line(module: str) -> str:
    return next(line for line in module.splitlines(True) if line.startswith("    return"))


def _diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"
    )
    return f"diff --git a/{path} b/{path}\n" + "".join(lines)


def write_cases(root: Path) -> Path:
    """The four cases of the module docstring under ``root/cases``."""
    cases = root / "cases"
    for name, spec in CASES.items():
        case = cases / name
        module_path, module = spec["module"]
        fixed = module.replace(bug_line(module), spec["fixed"])
        files = {
            module_path: module,
            spec["tests"][0]: spec["tests"][1],
            "pyproject.toml": PYPROJECT,
            "repairloop.toml": CONFIG,
            "case.toml": f'description = "{name}"\nfamily = "literal"\n',
            f"hidden_tests/{spec['hidden'][0]}": spec["hidden"][1],
            "reference.patch": _diff(module_path, module, fixed),
        }
        for rel, text in files.items():
            (case / rel).parent.mkdir(parents=True, exist_ok=True)
            (case / rel).write_text(text, encoding="utf-8")
    delta = cases / "delta"
    for rel, text in {
        "delta.py": '"""Squares."""\n\n\ndef square(x):\n    """``x`` squared."""\n    return x * '
        "x + 1\n",
        "checks/check_delta.py": "from delta import square\n\n\ndef test_square():\n    assert "
        "square(3) == 9\n",
        "pyproject.toml": '[tool.pytest.ini_options]\npythonpath = ["."]\ntestpaths = '
        '["checks"]\npython_files = ["check_*.py"]\n',
        "repairloop.toml": CONFIG + "allow_test_edits = true\n",
        "case.toml": 'description = "the model weakens a test in checks/"\nfamily = "literal"\n',
    }.items():
        (delta / rel).parent.mkdir(parents=True, exist_ok=True)
        (delta / rel).write_text(text, encoding="utf-8")
    return cases


def answer_for(body: Dict[str, Any]) -> Tuple[Any, ...]:
    """The scripted model: a whole-file answer for whichever case the prompt is about."""
    prompt = "\n".join(str(m.get("content")) for m in body.get("messages", []))
    if "check_delta.py" in prompt or "square" in prompt:
        weakened = "from delta import square\n\n\ndef test_square():\n    assert square(3) == 10\n"
        return ("ok", f"checks/check_delta.py\n```python\n{weakened}```\n")
    for spec in CASES.values():
        path, module = spec["module"]
        if path in prompt:
            answer = module.replace(bug_line(module), spec["answer"])
            return ("ok", f"{path}\n```python\n{answer}```\n")
    return ("ok", "no idea")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dict[str, Any]]:
    """The bench run whole (kept) and as two shards (kept), each with its stdout and stderr."""
    root = tmp_path_factory.mktemp("bench")
    cases = write_cases(root)
    done: Dict[str, Any] = {"root": root, "cases": cases}
    with pytest.MonkeyPatch.context() as mp, ScriptedServer([answer_for]) as srv:
        for name in [n for n in os.environ if n.startswith("REPAIRLOOP_")]:
            mp.delenv(name)
        mp.setenv("NO_COLOR", "1")
        model = ["--model", "openai/scripted", "--api-base", srv.base_url]
        for label, extra in (
            ("whole", []),
            ("shard1", ["--shard", "1/2"]),
            ("shard2", ["--shard", "2/2"]),
        ):
            done[label] = _run_captured(
                [str(cases), *model, "--keep", str(root / label), "--json", *extra]
            )
    yield done


def _run_captured(args: List[str]) -> Tuple[int, str, str]:
    """``repairloop bench ARGS`` in this process, stdout and stderr captured apart (capsys is per
    test)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["bench", *args])
    return code, out.getvalue(), err.getvalue()


def rows(document: Dict[str, Any]) -> Dict[str, Dict[str, Any]]:
    return {row["name"]: row for row in document["cases"]}


def test_stdout_is_one_json_document_and_progress_goes_to_stderr(runs) -> None:
    code, out, err = runs["whole"]
    assert code == 0, err
    document = json.loads(out)  # nothing but the document on stdout
    assert [r["name"] for r in document["cases"]] == ["alpha", "beta", "delta", "gamma"]
    for number in range(1, 5):
        assert f"[{number}/4] " in err
    assert "fixed so far 3" in err and "elapsed" in err and "left" in err
    assert "NOT correct" in err  # beta's verdict is on the console as the bench goes


def test_rows_hold_the_patch_the_run_and_its_figures(runs) -> None:
    document = json.loads(runs["whole"][1])
    alpha = rows(document)["alpha"]
    assert alpha["outcome"] == "fixed" and alpha["plausible"] is True and alpha["proof"] is True
    assert "+    return x*3" in alpha["patch"]
    assert alpha["run_dir"] == str(runs["root"] / "whole" / "alpha") and alpha["run_id"]
    assert alpha["iterations"] == 1 and alpha["model_calls"] == 1 and alpha["tokens"] > 0
    gamma = rows(document)["gamma"]
    assert (
        gamma["outcome"] == "not_fixed" and gamma["plausible"] is False and gamma["patch"] is None
    )
    assert (
        gamma["correct"] is None and gamma["matches_reference"] is None
    )  # nothing plausible to judge


def test_kept_runs_render_in_every_report_format(runs, capsys) -> None:
    kept = runs["root"] / "whole"
    assert sorted(p.name for p in kept.iterdir()) == sorted(
        ["alpha", "beta", "bench.json", "bench.md", "delta", "gamma"]
    )
    assert json.loads((kept / "bench.json").read_text()) == json.loads(runs["whole"][1])
    for case in ("alpha", "gamma"):
        assert {"journal.jsonl", "summary.json"} <= {p.name for p in (kept / case).iterdir()}
        for fmt in format_names():
            code = main(["report", str(kept / case), "--format", fmt])
            out, err = capsys.readouterr()
            assert code == 0, err
            assert json.loads(out)["run_id"] if fmt == "json" else out.strip()
    main(["report", str(kept / "alpha")])
    text = capsys.readouterr().out
    assert "outcome: fixed" in text and "return x*3" in text
    assert (kept / "alpha" / "fix.patch").read_text() == rows(json.loads(runs["whole"][1]))[
        "alpha"
    ]["patch"]


def test_correct_beside_plausible(runs) -> None:
    by_name = rows(json.loads(runs["whole"][1]))
    alpha, beta = by_name["alpha"], by_name["beta"]
    assert (alpha["matches_reference"], alpha["passes_hidden_tests"], alpha["correct"]) == (
        True,
        True,
        True,
    )
    assert alpha["hidden_tests"] == 1
    assert beta["plausible"] is True
    assert (beta["matches_reference"], beta["passes_hidden_tests"], beta["correct"]) == (
        False,
        False,
        False,
    )
    assert "tests/test_beta_hidden.py::test_six" in beta["judge_detail"]
    totals = json.loads(runs["whole"][1])["totals"]
    assert (totals["plausible"], totals["judged"], totals["correct"], totals["correct_share"]) == (
        3,
        2,
        1,
        0.5,
    )


def test_a_test_edit_is_judged_by_the_runs_own_test_file_rule(runs) -> None:
    delta = rows(json.loads(runs["whole"][1]))["delta"]
    assert delta["outcome"] == "fixed" and "checks/check_delta.py" in delta["patch"]
    assert (
        delta["edits_tests"] is True
    )  # no test glob names checks/check_delta.py: the collected files do
    assert delta["correct"] is None  # no reference, no hidden tests: not judged
    assert json.loads(runs["whole"][1])["totals"]["patches_editing_tests"] == 1


def test_two_shards_merged_give_the_totals_of_one_run(runs, capsys) -> None:
    whole = json.loads(runs["whole"][1])
    first, second = json.loads(runs["shard1"][1]), json.loads(runs["shard2"][1])
    assert [r["name"] for r in first["cases"]] == ["alpha", "delta"]
    assert [r["name"] for r in second["cases"]] == ["beta", "gamma"]
    assert first["shard"] == {"index": 1, "count": 2}
    code = main(
        ["bench", "merge", str(runs["root"] / "shard2"), str(runs["root"] / "shard1"), "--json"]
    )
    out, err = capsys.readouterr()
    assert code == 0, err
    merged = json.loads(out)
    timing = {"median_seconds"}
    assert {k: v for k, v in merged["totals"].items() if k not in timing} == {
        k: v for k, v in whole["totals"].items() if k not in timing
    }
    assert [r["name"] for r in merged["cases"]] == ["alpha", "beta", "delta", "gamma"]
    assert rows(merged)["beta"]["run_dir"] == str(runs["root"] / "shard2" / "beta")
    main(["bench", "merge", str(runs["root"] / "shard1"), str(runs["root"] / "shard2")])
    table = capsys.readouterr().out
    assert table.count("| alpha |") == 1 and "correct: 1 of the 2" in table and "(50%)" in table


def _warm_events(run_dir: Path) -> List[Dict[str, Any]]:
    lines = (run_dir / "journal.jsonl").read_text(encoding="utf-8").splitlines()
    return [e for e in map(json.loads, lines) if e["event"] == "warm"]


def test_no_warm_validates_every_candidate_fresh(runs, tmp_path: Path) -> None:
    # make bench compares the two ways; the bench ignores REPAIRLOOP_WARM (settings from the
    # environment), so a figure that set it compared warm with warm.
    assert any(e["action"] == "started" for e in _warm_events(runs["root"] / "whole" / "alpha"))
    one = tmp_path / "cases"
    shutil.copytree(runs["cases"] / "alpha", one / "alpha")
    with pytest.MonkeyPatch.context() as mp, ScriptedServer([answer_for]) as srv:
        mp.setenv("REPAIRLOOP_WARM", "true")  # ignored by the bench: the flag decides
        code, out, _ = _run_captured(
            [
                str(one),
                "--model",
                "openai/scripted",
                "--api-base",
                srv.base_url,
                "--no-warm",
                "--keep",
                str(tmp_path / "kept"),
                "--json",
            ]
        )
    document = json.loads(out)
    assert code in (0, 1) and rows(document)["alpha"]["outcome"] == "fixed"
    assert (
        document["bench"]["warm"] is False
    )  # two benches, --warm and --no-warm, are told apart (and not merged)
    assert _warm_events(tmp_path / "kept" / "alpha") == []
