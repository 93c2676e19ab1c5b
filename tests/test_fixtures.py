"""Every fixture project, run for real, classifies as its ``fixture.toml`` says.

``fixture.toml`` keys: ``expected_kind`` (``classify --json``'s ``kind``),
``expected_failing`` (node ids), and optionally ``expected_location`` (of the
first failure), ``expected_hint`` (a substring of some hint),
``expected_hints`` (each a substring of some hint), ``expected_groups``
(test ids by root cause, largest group first), ``source_roots`` (put on
PYTHONPATH), ``git_repo`` (false: used as a plain directory),
``max_context_tokens``.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any, Callable, Dict, Tuple

import pytest

from repairloop.classify import classify_report, overall_kind
from repairloop.context import build_context, group_failures
from repairloop.runner import ProjectInterpreter, default_test_command, run_tests
from repairloop.types import Failure, TestFiles, TestReport

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CASES = sorted(p.parent.name for p in (FIXTURES / "projects").glob("*/fixture.toml"))


def expectations(name: str) -> Dict[str, Any]:
    return tomllib.loads((FIXTURES / "projects" / name / "fixture.toml").read_text())


def run(project: Path, spec: Dict[str, Any]) -> Tuple[TestReport, Tuple[Failure, ...]]:
    roots = [Path(r) for r in spec.get("source_roots", [])]
    command = default_test_command(project)
    report = run_tests(project, command, pythonpath=roots, timeout=120)
    return report, classify_report(
        report, project, interpreter=ProjectInterpreter(command[0], dict(os.environ))
    )


def test_every_fixture_project_is_listed() -> None:
    projects = sorted(p.name for p in (FIXTURES / "projects").iterdir() if p.is_dir())
    assert projects == CASES
    assert len(CASES) >= 11


@pytest.mark.parametrize("name", CASES)
def test_fixture_is_a_clean_pytest_project(name: str) -> None:
    root = FIXTURES / "projects" / name
    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert config["tool"]["pytest"]["ini_options"]["testpaths"] == ["tests"]
    assert list((root / "tests").glob("test_*.py"))
    assert not [p for p in root.rglob("*") if p.name in ("__pycache__", ".pytest_cache")]


@pytest.mark.parametrize("name", CASES)
def test_fixture_classifies_as_expected(name: str, make_project: Callable[..., Path]) -> None:
    spec = expectations(name)
    project = make_project(name, git_repo=spec.get("git_repo", True))
    report, failures = run(project, spec)
    assert overall_kind(failures) == spec["expected_kind"], [f.to_json() for f in failures]
    assert sorted({f.test_id for f in failures}) == sorted(spec["expected_failing"])
    if "expected_location" in spec:
        assert failures[0].location == spec["expected_location"]
    hints = " | ".join(f.hint for f in failures)
    for hint in [spec.get("expected_hint", "")] + spec.get("expected_hints", []):
        assert hint in hints
    if "expected_groups" in spec:
        groups = [[f.test_id for f in g] for g in group_failures(failures, TestFiles())]
        assert groups == spec["expected_groups"]
    if "max_context_tokens" in spec:
        results = {r.test_id: r for r in report.results}
        ctx = build_context(
            project, group_failures(failures, TestFiles())[0], results, test_files=TestFiles()
        )
        assert ctx.tokens < spec["max_context_tokens"]


def test_src_layout_without_its_source_root_is_a_config_problem(
    make_project: Callable[..., Path],
) -> None:
    project = make_project("src_layout")
    _, failures = run(project, {})
    assert overall_kind(failures) == "test_config"
    assert all("textkit" in f.message and "PYTHONPATH" in f.hint for f in failures)


def test_demo_has_one_fixable_comparison(tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(FIXTURES / "demo", demo)
    assert (demo / "README.md").is_file()
    report, failures = run(demo, {})
    assert overall_kind(failures) == "logic"
    assert len(failures) == 2 and len(report.passed_ids) == 6
    scale = demo / "grades" / "scale.py"
    scale.write_text(scale.read_text().replace("score > lowest", "score >= lowest"))
    fixed, _ = run(demo, {})
    assert fixed.green and len(fixed.passed_ids) == 8
