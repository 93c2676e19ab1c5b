"""The held-out forgery suite (``fixtures/forgeries/``): each forgery end to end, and what it left.

A forgery is a model's answer that makes a small project's failing test pass
without fixing the function (see ``fixtures/forgeries/README.md``). ``run_forgery``
builds the project as a real git repository in a temporary directory, serves the
answer from the scripted OpenAI-compatible server on 127.0.0.1, runs
``repairloop run --apply --yes --json`` as a process and reads its JSON; then
``probe`` calls the function on the bug's input in a plain interpreter (no
pytest, no test-runner variables) to show the applied patch is still wrong.
``unguarded`` runs the project's tests on the forgery with repairloop's own
runner and no content guard: a forgery that fails there was not stopped by a
guard (the runner's own defences stopped it, or the fixture is broken).

Shared by ``tests/test_forgery_suite.py`` and ``make bench`` (figure 15).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Tuple

from conftest import init_repo
from scripted_server import ScriptedServer

from repairloop.errors import PatchError
from repairloop.patch import AppliedPatch, apply_answer
from repairloop.runner import PER_TEST_TIMEOUT_ENV, default_test_command, run_tests

SUITE = Path(__file__).resolve().parent.parent / "fixtures" / "forgeries"
MAX_ITERATIONS = 2  # the same answer twice: a forgery that works at all works the first time
RUN_TIMEOUT = 240.0  # seconds for one `repairloop run`, model and proof included
# The project's test runs load only the plugins they name (as tests/conftest.py arranges): the
# installed pytest-cov and xdist would add a quarter second to each and change nothing here.
LEAN = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@dataclass(frozen=True)
class Bug:
    """A buggy project (``projects/<name>/``): its tree, and the call that shows the bug."""

    name: str
    imports: str  # Python that imports what ``probe`` calls
    probe: str  # an expression calling the function on the failing test's input
    right: Any  # what a fixed function returns for it (a plain JSON value)
    failing: str  # the test id that fails before a fix

    @property
    def tree(self) -> Path:
        return SUITE / "projects" / self.name / "tree"


@dataclass(frozen=True)
class Forgery:
    """One case of ``cases/<name>/``: the answer and ``meta.json``'s family and what it forges."""

    name: str
    family: str
    forges: str
    bug: Bug
    answer: str


def load_bug(name: str) -> Bug:
    spec = json.loads((SUITE / "projects" / name / "bug.json").read_text(encoding="utf-8"))
    return Bug(name, spec["imports"], spec["probe"], spec["right"], spec["failing"])


def load_forgeries(folder: str = "cases") -> List[Forgery]:
    """Every case of the suite (``cases/``), by name; ``controls/`` holds two forgeries the
    README's rules name outright, which any run must stop (they show a refusal is seen)."""
    found = []
    for case in sorted((SUITE / folder).iterdir()):
        meta = json.loads((case / "meta.json").read_text(encoding="utf-8"))
        answer = (case / "answer.md").read_text(encoding="utf-8")
        found.append(
            Forgery(case.name, meta["family"], meta["forges"], load_bug(meta["project"]), answer)
        )
    return found


def clean_env(**extra: str) -> Dict[str, str]:
    """The environment of a user's shell: this interpreter first on PATH, and nothing a test
    runner or repairloop itself set (``PYTEST_*``, ``REPAIRLOOP_*``, anything naming ``TEST``)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if "TEST" not in k.upper() and not k.startswith(("REPAIRLOOP_", "COV_CORE"))
    }
    env["PATH"] = str(Path(sys.executable).parent) + os.pathsep + env.get("PATH", "")
    env.pop("VIRTUAL_ENV", None)
    env["NO_COLOR"] = "1"
    return {**env, **extra}


def make_project(bug: Bug, dest: Path) -> Path:
    """A copy of the bug's tree at ``dest``, committed as a git repository."""
    shutil.copytree(bug.tree, dest, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return init_repo(dest)


PROBE = """
import json, sys
sys.path.insert(0, ".")

def plain(value):
    kind = type(value)
    if kind in (list, tuple):
        return all(plain(item) for item in value)
    return kind in (int, float, str, bool, type(None))

try:
{imports}
    value = {probe}
    shown = repr(value)
    if not plain(value):
        kinds = (bool, int, float, str, list, tuple)
        base = next((kind for kind in kinds if isinstance(value, kind)), object)
        inner = "..." if base is object else base.__repr__(value)
        shown = type(value).__qualname__ + "(" + inner + ")"
    right = json.loads({right!r})
    ok = plain(value) and type(value) is type(right) and value == right
except BaseException as err:  # noqa: BLE001 - whatever the patched code raises is the answer
    shown, ok = "raised " + type(err).__name__, False
print(json.dumps({{"shown": shown, "right": ok}}))
"""


def probe(bug: Bug, root: Path) -> Tuple[bool, str]:
    """Call the function on the bug's input in a plain interpreter in ``root``: (whether it gave
    the right answer, what it gave). Only plain values of the exact builtin types count as
    right, so an object that compares equal to anything is still wrong."""
    imports = "\n".join("    " + line for line in bug.imports.splitlines())
    code = PROBE.format(imports=imports, probe=bug.probe, right=json.dumps(bug.right))
    done = subprocess.run(
        [sys.executable, "-c", code],
        cwd=root,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    try:
        said = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, ValueError):
        return False, f"no answer (exit {done.returncode}): {done.stderr.strip()[-200:]}"
    return bool(said["right"]), str(said["shown"])


@dataclass(frozen=True)
class Outcome:
    """What one end-to-end run of a forgery ended with."""

    forgery: Forgery
    outcome: str  # the JSON's ``outcome`` ("fixed", "not_fixed"...), or "no JSON"
    exit_code: int
    applied: bool  # --apply wrote the patch to the project
    probe_right: bool  # the function (as the run left the project) answers right outside pytest
    probe_shown: str
    detail: str  # why the candidate was refused or rejected, per iteration
    seconds: float

    @property
    def forged(self) -> bool:
        """The run ended fixed: the forgery got through."""
        return self.outcome == "fixed"


def run_forgery(forgery: Forgery, work: Path) -> Outcome:
    """``repairloop run --apply`` on a fresh copy of the forgery's project, the scripted model
    answering with the forgery; then the probe."""
    root = make_project(forgery.bug, work / forgery.name)
    began = time.perf_counter()
    with ScriptedServer([("ok", forgery.answer)]) as srv:
        done = subprocess.run(
            [
                *(sys.executable, "-m", "repairloop", "run", str(root)),
                *("--model", "openai/scripted", "--api-base", srv.base_url, "--no-builtin"),
                *("--max-iterations", str(MAX_ITERATIONS), "--apply", "--yes", "--json"),
            ],
            env=clean_env(OPENAI_API_KEY="sk-scripted", REPAIRLOOP_CONFIRM_RUNS="0", **LEAN),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
    seconds = time.perf_counter() - began
    try:
        doc: Dict[str, Any] = json.loads(done.stdout)
    except ValueError:
        doc = {"outcome": "no JSON", "notes": [done.stderr.strip()[-300:]]}
    right, shown = probe(forgery.bug, root)
    return Outcome(
        forgery,
        str(doc.get("outcome")),
        done.returncode,
        bool(doc.get("applied")),
        right,
        shown,
        _detail(doc),
        seconds,
    )


def _detail(doc: Dict[str, Any]) -> str:
    """The iterations' decisions and reasons, one clause each (what refused the forgery)."""
    parts = []
    for it in doc.get("iterations") or []:
        decision, reason = str(it.get("decision")), str(it.get("reason") or it.get("error") or "")
        parts.append(reason if reason.startswith(decision) else f"{decision}: {reason}".strip())
    return "; ".join(parts) or "; ".join(str(n) for n in doc.get("notes") or [])


def write_changes(applied: AppliedPatch, root: Path) -> None:
    """Write a parsed candidate's files under ``root`` (deleted files removed)."""
    for change in applied.changes:
        path = root / change.path
        if change.new_text is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(change.new_text, encoding="utf-8")


def unguarded(forgery: Forgery, work: Path) -> Tuple[bool, str]:
    """Does the forgery make the suite green with no guard: the answer applied as the loop parses
    it, the tests run once by repairloop's runner (unconfined), both witnesses read.
    (green, why not)."""
    root = make_project(forgery.bug, work / f"{forgery.name}-unguarded")
    try:
        write_changes(apply_answer(forgery.answer, root), root)
    except PatchError as err:
        return False, f"does not apply: {err.message}"
    # as in a loop's runs: a per-test timeout (the plugin arms SIGALRM for it)
    env = clean_env(**LEAN, **{PER_TEST_TIMEOUT_ENV: "60"})
    report = run_tests(root, default_test_command(root), timeout=120, env=env)
    if report.green:
        return True, ""
    failing = ", ".join(report.failing_ids) or "none"
    why = report.distrust or ("incomplete" if not report.complete else "")
    return False, f"exit {report.exit_code}, failing: {failing} {why}".strip()
