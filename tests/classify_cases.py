"""The classification fixtures of ``fixtures/classify/``: load them, run one as its user would.

Each case is a small project modelled on a public bug report (``source`` in
its ``fixture.toml``). ``run_case`` copies it to a directory, commits it, and
classifies it with ``repairloop.loop.classify_project``: the baseline run, the
classification, the fidelity check and the flaky re-runs, exactly what
``repairloop classify`` and ``run`` do before any model call. Shared by
``tests/test_classify_fixtures.py`` and the bench (``tests/bench/classify_figure.py``).

``fixture.toml`` keys: ``source`` (URL of the report), ``summary``,
``expected_kind`` (``classify --json``'s ``kind``), ``expected_hint``
(substrings that some failure's message or hint holds), optional
``test_cmd`` (``{python}`` is the interpreter), ``test_timeout``,
``per_test_timeout``, ``confirm_runs``, ``sandbox``, ``env`` (extra variables). A case's
``fixture-site/`` holds stand-ins for libraries it needs that are not
installed (a database client that connects for real and fails as the real
one does): they are copied outside the project and put on PYTHONPATH, like
a package installed in the user's environment.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Tuple

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

CASES_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "classify"
SITE = "fixture-site"
_IDENTITY = {
    "GIT_AUTHOR_NAME": "Fixture Author",
    "GIT_AUTHOR_EMAIL": "fixture@example.invalid",
    "GIT_COMMITTER_NAME": "Fixture Author",
    "GIT_COMMITTER_EMAIL": "fixture@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    spec: Dict[str, Any]

    @property
    def expected_kind(self) -> str:
        return str(self.spec["expected_kind"])


@dataclass(frozen=True)
class Outcome:
    """What classification said about one case."""

    case: Case
    kind: str
    failures: Tuple[Dict[str, Any], ...]
    seconds: float
    missing_hints: Tuple[str, ...] = field(default=())

    @property
    def right(self) -> bool:
        return self.kind == self.case.expected_kind and not self.missing_hints


def load_cases() -> List[Case]:
    """Every ``fixtures/classify/<name>/fixture.toml``, sorted by name."""
    cases = []
    for spec_file in sorted(CASES_DIR.glob("*/fixture.toml")):
        spec = tomllib.loads(spec_file.read_text(encoding="utf-8"))
        cases.append(Case(spec_file.parent.name, spec_file.parent, spec))
    return cases


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **_IDENTITY}, check=True, capture_output=True
    )


def prepare(case: Case, workdir: Path) -> Tuple[Path, Optional[Path]]:
    """Copy the case to ``workdir/<name>`` (a committed git repository); its stand-in libraries
    apart."""
    project = workdir / case.name
    ignore = shutil.ignore_patterns(SITE, "fixture.toml", "__pycache__", ".pytest_cache")
    shutil.copytree(case.path, project, ignore=ignore)
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-q", "-m", "fixture")
    site = None
    if (case.path / SITE).is_dir():
        site = workdir / f"{case.name}-env" / "site-packages"
        shutil.copytree(case.path / SITE, site, ignore=shutil.ignore_patterns("__pycache__"))
    return project, site


def case_environment(case: Case, site: Optional[Path], base: Mapping[str, str]) -> Dict[str, str]:
    """The user's environment for ``case``: ``base``, its stand-in libraries and its own
    variables."""
    env = dict(base)
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = (
        "1"  # only the plugins a case names; the same on every machine
    )
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(site), env.get("PYTHONPATH", "")) if p)
    env.update({str(k): str(v) for k, v in case.spec.get("env", {}).items()})
    return env


def run_case(case: Case, workdir: Path, environ: Optional[Mapping[str, str]] = None) -> Outcome:
    """Classify ``case`` as ``repairloop classify`` would in its user's environment.

    The environment replaces ``os.environ`` while it runs (the installed-package
    probes ask the interpreter with the process's environment) and is restored.
    """
    from repairloop.loop.driver import classify_project
    from repairloop.settings import Settings

    project, site = prepare(case, workdir)
    spec = case.spec
    flags: Dict[str, Any] = {"test_timeout": spec.get("test_timeout", 120)}
    for key in ("per_test_timeout", "confirm_runs", "sandbox"):
        if key in spec:
            flags[key] = spec[key]
    if "test_cmd" in spec:
        flags["test_cmd"] = str(spec["test_cmd"]).replace("{python}", sys.executable)
    env = case_environment(case, site, os.environ if environ is None else environ)
    saved = dict(os.environ)
    started = time.monotonic()
    try:
        os.environ.clear()
        os.environ.update(env)
        _, failures, kind = classify_project(Settings(**flags), project, environ=env)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    records = tuple(f.to_json() for f in failures)
    said = " | ".join(f"{r['message']} | {r['hint']}" for r in records)
    expected = spec.get("expected_hint", [])
    missing = tuple(
        h for h in ([expected] if isinstance(expected, str) else expected) if h not in said
    )
    return Outcome(case, kind, records, time.monotonic() - started, missing)
