"""Words seen wrong on real projects: an interrupted --json error without the run's id, an HTML
report whose long lists of test ids ran off the page, `classify` without the per-test timeout
flag."""

from __future__ import annotations

import contextlib
import json
import re
from typing import Any, Iterator

import pytest
import typer.main
from conftest import REPO_ROOT, init_repo

from repairloop.cli import app, main
from repairloop.loop import driver as loop


def test_an_interrupted_json_run_names_its_run(make_project, monkeypatch, capsys) -> None:
    """Ctrl-C while the workspace is being made (outside the loop, which ends in a result of its
    own)."""
    project = make_project("off_by_one")
    real = loop.open_workspace

    @contextlib.contextmanager
    def interrupted(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with real(*args, **kwargs):
            raise KeyboardInterrupt  # as the user's Ctrl-C would, once the workspace exists

        yield  # pragma: no cover - never reached

    monkeypatch.setattr(loop, "open_workspace", interrupted)
    code = main(["run", str(project), "--model", "builtin", "--json"])
    out, err = capsys.readouterr()
    error = json.loads(out)["error"]
    runs = [p.name for p in (project / ".repairloop" / "runs").iterdir()]
    assert code == 130 and error["kind"] == "interrupted" and runs == [error["run_id"]]
    assert (
        f"repairloop resume {error['run_id']}" in error["hint"]
        and f"repairloop resume {error['run_id']}" in err
    )


def test_long_lists_of_test_ids_wrap_in_the_html_report() -> None:
    from repairloop.reports.html import _CSS

    rules = dict(re.findall(r"([^{}]+)\{([^{}]*)\}", _CSS))
    wrapping = [selector for selector, body in rules.items() if "overflow-wrap: anywhere" in body]
    assert wrapping and all(tag in " ".join(wrapping) for tag in ("li", "td")), rules


SLEEPS = (
    "import time\n\n\ndef test_waits():\n    time.sleep(30)\n\n\ndef test_fine():\n    assert "
    "True\n"
)


@pytest.mark.slow
def test_classify_takes_the_per_test_timeout(make_project, capsys) -> None:
    project = make_project("all_green", git_repo=False)
    (project / "tests" / "test_sleep.py").write_text(SLEEPS)
    init_repo(project)
    code = main(["classify", str(project), "--per-test-timeout", "1", "--json"])
    doc = json.loads(capsys.readouterr().out)
    waits = [f for f in doc["failures"] if f["test_id"].endswith("test_waits")]
    assert (
        waits and waits[0]["kind"] == "timeout" and "per-test timeout of 1" in waits[0]["message"]
    ), doc
    assert code == 3


def test_the_readme_shows_every_classify_flag_and_its_exit_codes() -> None:
    readme = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
    usage = next(line for line in readme.splitlines() if line.startswith("repairloop classify "))
    command = typer.main.get_command(app).commands["classify"]  # type: ignore[attr-defined]
    flags = [
        name
        for param in command.params
        for name in param.opts
        if name.startswith("--") and name != "--help"
    ]
    assert [flag for flag in flags if flag not in usage] == []
    assert "`repairloop classify` exits 0" in readme
