"""Real-bug corpus: materialise and check the cases of ``fixtures/realbugs``.

Each case directory holds a ``case.toml`` (see ``fixtures/realbugs/README.md``), a
``bug.patch`` that re-introduces a real, publicly fixed bug into a released sdist, and
optionally a ``tests.patch`` that adds the fix's regression test. This module is both a
library (``load_cases``, ``materialise``, ``check``) and a script::

    python tests/bench/realbugs.py check [CASE ...] [--jobs N]
    python tests/bench/realbugs.py materialise CASE DEST [--fixed]
    python tests/bench/realbugs.py table

Standard library only (``tomllib``; on Python < 3.11 the ``tomli`` backport when it is
installed, else a small parser of the TOML subset the cases use).
Only PyPI is reached, through ``pip download``, and only for an sdist not yet cached.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import importlib
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time
import zipfile
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Set, Tuple

tomllib: Any
try:  # tomllib from Python 3.11; before it the tomli backport, a dependency of repairloop
    tomllib = importlib.import_module("tomllib" if sys.version_info >= (3, 11) else "tomli")
except ImportError:  # pragma: no cover - Python < 3.11 without tomli
    tomllib = None

REPO_ROOT = Path(__file__).resolve().parents[2]
# Another corpus in the same format (a held-out set, say) is used instead when named here.
CASES_ROOT = Path(os.environ.get("REPAIRLOOP_REALBUGS") or REPO_ROOT / "fixtures" / "realbugs")
DEFAULT_CACHE = Path("~/.cache/repairloop-bench/sdists").expanduser()

DISTANCES = (
    "in_frame",
    "returned_value",
    "callee",
    "other_module_method",
    "fixture_helper",
    "doctest",
    "multi_function",
)
REQUIRED_KEYS: Dict[str, type] = {
    "library": str,
    "version": str,
    "sdist_sha256": str,
    "source": str,
    "description": str,
    "fixed_functions": list,
    "failing_tests": list,
    "test_cmd": str,
    "distance": str,
}
OPTIONAL_KEYS: Dict[str, type] = {"files_kept": list}
SOURCE_RE = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/commit/[0-9a-f]{40}$")
MODULE_LEVEL = "<module>"
GIT_DATE = "2000-01-01T00:00:00+00:00"
TEST_TIMEOUT = 600

_locks: Dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


@dataclass(frozen=True)
class RealBug:
    """One case: the fields of its ``case.toml`` plus its directory."""

    name: str
    path: Path
    library: str
    version: str
    sdist_sha256: str
    source: str
    description: str
    fixed_functions: Tuple[str, ...]
    failing_tests: Tuple[str, ...]
    test_cmd: str
    distance: str
    files_kept: Optional[Tuple[str, ...]] = None

    @property
    def bug_patch(self) -> Path:
        """The patch that re-introduces the bug (its reverse is the reference fix)."""
        return self.path / "bug.patch"

    @property
    def tests_patch(self) -> Optional[Path]:
        """The optional patch adding the fix's regression test, or None."""
        p = self.path / "tests.patch"
        return p if p.exists() else None


@dataclass
class CheckResult:
    """What ``check`` found for one case; ``ok`` when ``problems`` is empty."""

    case: str
    problems: List[str] = field(default_factory=list)
    unlisted_failures: List[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return not self.problems


def parse_toml_subset(text: str) -> Dict[str, Any]:
    """Parse the TOML that ``case.toml`` files use, without a TOML library.

    Only what the cases need: ``key = value`` lines whose value is a basic string or an array
    of basic strings (which may span lines and end with a trailing comma), and whole-line
    comments. Basic strings are read as JSON strings, whose escapes TOML shares.
    """
    import json

    data: Dict[str, Any] = {}
    pending = ""
    for line in text.splitlines():
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line + "\n"
        key, sep, value = pending.partition("=")
        if not sep:
            raise ValueError(f"not a key = value line: {line!r}")
        value = value.strip()
        if value.startswith("[") and not _array_closed(value):
            continue
        value = re.sub(r",\s*\]$", "]", value)
        data[key.strip()] = json.loads(value)
        pending = ""
    if pending:
        raise ValueError("unterminated array")
    return data


def _array_closed(value: str) -> bool:
    """True when ``value`` (starting with ``[``) has its closing ``]`` outside strings."""
    in_string = escaped = False
    depth = 0
    for ch in value:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
            if depth == 0:
                return True
    return False


def read_case_toml(path: Path) -> Dict[str, Any]:
    """Parse one ``case.toml`` (with ``tomllib``, or ``parse_toml_subset`` without one)."""
    if tomllib is None:  # pragma: no cover - Python < 3.11 without tomli
        return parse_toml_subset(Path(path).read_text(encoding="utf-8"))
    with open(path, "rb") as fh:
        data: Dict[str, Any] = tomllib.load(fh)
    return data


def case_format_problems(data: Dict[str, Any]) -> List[str]:
    """Return what is wrong with the keys and types of a parsed ``case.toml`` (empty if fine)."""
    problems = []
    for key, typ in REQUIRED_KEYS.items():
        if key not in data:
            problems.append(f"missing key {key!r}")
        elif not isinstance(data[key], typ):
            problems.append(f"{key!r} should be a {typ.__name__}")
    for key, typ in OPTIONAL_KEYS.items():
        if key in data and not isinstance(data[key], typ):
            problems.append(f"{key!r} should be a {typ.__name__}")
    for key in data:
        if key not in REQUIRED_KEYS and key not in OPTIONAL_KEYS:
            problems.append(f"unknown key {key!r}")
    for key in ("fixed_functions", "failing_tests", "files_kept"):
        value = data.get(key)
        if isinstance(value, list) and not all(isinstance(v, str) and v for v in value):
            problems.append(f"{key!r} should hold non-empty strings")
    for key in ("fixed_functions", "failing_tests"):
        if isinstance(data.get(key), list) and not data[key]:
            problems.append(f"{key!r} is empty")
    if isinstance(data.get("source"), str) and not SOURCE_RE.match(data["source"]):
        problems.append("'source' is not a GitHub commit URL with a 40-hex sha")
    if isinstance(data.get("sdist_sha256"), str) and not re.fullmatch(
        r"[0-9a-f]{64}", data["sdist_sha256"]
    ):
        problems.append("'sdist_sha256' is not 64 lowercase hex digits")
    if isinstance(data.get("distance"), str) and data["distance"] not in DISTANCES:
        problems.append(f"'distance' {data['distance']!r} is not one of {DISTANCES}")
    for ff in data.get("fixed_functions") or []:
        if isinstance(ff, str) and "::" not in ff:
            problems.append(f"fixed function {ff!r} is not PATH::QUALNAME")
    if isinstance(data.get("test_cmd"), str) and not data["test_cmd"].startswith("python "):
        problems.append("'test_cmd' should start with 'python '")
    return problems


def load_cases(root: Path = CASES_ROOT) -> List[RealBug]:
    """Load every case under ``root`` (one directory with a ``case.toml`` per case), by name."""
    cases = []
    for toml_path in sorted(Path(root).glob("*/case.toml")):
        data = read_case_toml(toml_path)
        problems = case_format_problems(data)
        if problems:
            raise ValueError(f"{toml_path}: {'; '.join(problems)}")
        kept = data.get("files_kept")
        cases.append(
            RealBug(
                name=toml_path.parent.name,
                path=toml_path.parent,
                library=data["library"],
                version=data["version"],
                sdist_sha256=data["sdist_sha256"],
                source=data["source"],
                description=data["description"],
                fixed_functions=tuple(data["fixed_functions"]),
                failing_tests=tuple(data["failing_tests"]),
                test_cmd=data["test_cmd"],
                distance=data["distance"],
                files_kept=tuple(kept) if kept is not None else None,
            )
        )
    return cases


# --- sdists -------------------------------------------------------------------------------


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def find_sdist(cache: Path, library: str, version: str) -> Optional[Path]:
    """Return the cached sdist of ``library==version`` in ``cache``, or None."""
    if not cache.is_dir():
        return None
    want = f"{_normalise(library)}-{version}"
    for f in sorted(cache.iterdir()):
        for ext in (".tar.gz", ".zip"):
            if f.name.endswith(ext) and _normalise(f.name[: -len(ext)]) == _normalise(want):
                return f
    return None


def sha256_of(path: Path) -> str:
    """Hex sha256 of a file."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 16), b""):
            h.update(chunk)
    return h.hexdigest()


def _lock_for(key: str) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault(key, threading.Lock())


def fetch_sdist(case: RealBug, cache: Path) -> Path:
    """Return the verified sdist of the case, downloading it with pip into ``cache`` if needed.

    The sdist is downloaded without build isolation first (no index look-ups beyond the
    sdist); if pip cannot prepare its metadata that way (a build backend that is not
    installed), again with build isolation, which fetches the backend from the same index.
    """
    with _lock_for(f"{case.library}=={case.version}"):
        cache.mkdir(parents=True, exist_ok=True)
        sdist = find_sdist(cache, case.library, case.version)
        if sdist is None:
            base = [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:"]
            tail = ["--disable-pip-version-check", "-q", f"{case.library}=={case.version}"]
            tail += ["-d", str(cache)]
            errors = []
            for extra in (["--no-build-isolation"], []):
                done = subprocess.run(base + extra + tail, capture_output=True, text=True)
                sdist = find_sdist(cache, case.library, case.version)
                if sdist is not None:
                    break
                errors.append(done.stderr.strip()[-500:])
            if sdist is None:
                raise RuntimeError(
                    f"pip could not download {case.library}=={case.version}: {errors[-1]}"
                )
        got = sha256_of(sdist)
        if got != case.sdist_sha256:
            raise RuntimeError(f"{sdist.name}: sha256 {got} != case's {case.sdist_sha256}")
        return sdist


def _extract(sdist: Path, into: Path) -> Path:
    """Extract an sdist into ``into``; return its single top directory."""
    if sdist.name.endswith(".zip"):
        with zipfile.ZipFile(sdist) as zf:
            zf.extractall(into)
    else:
        with tarfile.open(sdist) as tf:
            if hasattr(tarfile, "data_filter"):
                tf.extractall(into, filter="data")
            else:  # pragma: no cover - Python without extraction filters
                tf.extractall(into)
    tops = list(into.iterdir())
    if len(tops) != 1 or not tops[0].is_dir():
        raise RuntimeError(f"{sdist.name}: expected one top directory, got {len(tops)} entries")
    return tops[0]


def _git(cwd: Path, *args: str) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "bench",
        "GIT_AUTHOR_EMAIL": "bench@localhost",
        "GIT_COMMITTER_NAME": "bench",
        "GIT_COMMITTER_EMAIL": "bench@localhost",
        "GIT_AUTHOR_DATE": GIT_DATE,
        "GIT_COMMITTER_DATE": GIT_DATE,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    done = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed in {cwd}: {done.stderr.strip()}")
    return done.stdout


def materialise(
    case: RealBug, dest: Path, cache: Optional[Path] = None, *, fixed: bool = False
) -> Path:
    """Build the case's project in ``dest`` (which must not exist or be empty); return it.

    The verified sdist is extracted, trimmed to ``files_kept``, patched with ``tests.patch``
    and (unless ``fixed``) ``bug.patch``, and committed in a fresh git repository with a
    fixed identity and date, so two materialisations are identical commits.
    """
    if cache is None:
        cache = Path(os.environ.get("REPAIRLOOP_BENCH_CACHE") or DEFAULT_CACHE)
    dest = Path(dest)
    if dest.exists() and any(dest.iterdir()):
        raise FileExistsError(f"{dest} exists and is not empty")
    sdist = fetch_sdist(case, Path(cache))
    dest.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="realbug-x-") as tmp:
        top = _extract(sdist, Path(tmp))
        for entry in top.iterdir():
            if case.files_kept is not None and entry.name not in case.files_kept:
                continue
            shutil.move(str(entry), str(dest / entry.name))
    patches = [case.tests_patch] if case.tests_patch else []
    if not fixed:
        patches.append(case.bug_patch)
    for patch in patches:
        if patch is not None:
            _git(dest, "apply", "--whitespace=nowarn", str(patch.resolve()))
    _git(dest, "-c", "init.defaultBranch=main", "init", "-q")
    _git(dest, "config", "user.name", "bench")
    _git(dest, "config", "user.email", "bench@localhost")
    _git(dest, "config", "commit.gpgsign", "false")
    _git(dest, "add", "-A", "-f")
    state = "fixed" if fixed else "bug"
    _git(dest, "commit", "-q", "--no-verify", "-m", f"{case.name} ({state})")
    return dest


# --- patches --------------------------------------------------------------------------------


@dataclass
class FileDiff:
    """The changed lines of one file in a unified diff."""

    old_path: Optional[str]
    new_path: Optional[str]
    removed: List[int] = field(default_factory=list)  # line numbers in the old file
    added: List[int] = field(default_factory=list)  # line numbers in the new file
    hunks: int = 0

    @property
    def path(self) -> str:
        """The file's path (the new one unless the file is deleted)."""
        return self.new_path or self.old_path or ""


_HUNK_RE = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _strip_prefix(p: str) -> Optional[str]:
    p = p.split("\t")[0].strip()
    if p == "/dev/null":
        return None
    if p.startswith(("a/", "b/")):
        return p[2:]
    return p


def parse_unified_diff(text: str) -> List[FileDiff]:
    """Parse a (git-style) unified diff into its files' changed line numbers.

    Raises ValueError on a malformed diff (a hunk whose line counts do not add up, a hunk
    outside a file, or no file at all).
    """
    files: List[FileDiff] = []
    lines = text.splitlines()
    i = 0
    current: Optional[FileDiff] = None
    while i < len(lines):
        line = lines[i]
        if line.startswith("--- ") and i + 1 < len(lines) and lines[i + 1].startswith("+++ "):
            current = FileDiff(_strip_prefix(line[4:]), _strip_prefix(lines[i + 1][4:]))
            files.append(current)
            i += 2
            continue
        m = _HUNK_RE.match(line)
        if m:
            if current is None:
                raise ValueError(f"hunk before any file header at line {i + 1}")
            old_no, new_no = int(m.group(1)), int(m.group(3))
            old_left = int(m.group(2)) if m.group(2) is not None else 1
            new_left = int(m.group(4)) if m.group(4) is not None else 1
            current.hunks += 1
            i += 1
            while old_left > 0 or new_left > 0:
                if i >= len(lines):
                    raise ValueError("diff ends inside a hunk")
                body = lines[i]
                tag = body[:1]
                if tag == " " or body == "":
                    old_no, new_no = old_no + 1, new_no + 1
                    old_left, new_left = old_left - 1, new_left - 1
                elif tag == "-":
                    current.removed.append(old_no)
                    old_no, old_left = old_no + 1, old_left - 1
                elif tag == "+":
                    current.added.append(new_no)
                    new_no, new_left = new_no + 1, new_left - 1
                elif tag == "\\":
                    pass
                else:
                    raise ValueError(f"unexpected line in hunk at line {i + 1}: {body!r}")
                if old_left < 0 or new_left < 0:
                    raise ValueError(f"hunk line counts do not add up at line {i + 1}")
                i += 1
            continue
        i += 1
    if not files:
        raise ValueError("no file in diff")
    for f in files:
        if f.hunks == 0:
            raise ValueError(f"{f.path}: file header without a hunk")
    return files


def is_test_path(path: str) -> bool:
    """True for a test file or directory: a ``test``/``tests``/``testing`` component,
    ``test_*.py``, ``*_test.py``, ``tests.py`` or ``conftest.py``."""
    parts = path.split("/")
    if any(p in ("test", "tests", "testing") for p in parts[:-1]):
        return True
    name = parts[-1]
    return (
        name.startswith("test_")
        or name.endswith("_test.py")
        or name in ("test.py", "tests.py", "conftest.py")
    )


def _scopes(source: str) -> List[Tuple[int, int, str]]:
    """(first line, last line, qualified name) of every def and class, outermost first."""
    tree = ast.parse(source)
    out: List[Tuple[int, int, str]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                last = child.end_lineno or child.lineno
                name = f"{prefix}{child.name}"
                out.append((first, last, name))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(tree, "")
    return out


def enclosing_name(scopes: Sequence[Tuple[int, int, str]], line: int) -> str:
    """The qualified name of the innermost def/class holding ``line``, or ``<module>``."""
    best = MODULE_LEVEL
    best_span = None
    for first, last, name in scopes:
        if first <= line <= last and (best_span is None or last - first < best_span):
            best, best_span = name, last - first
    return best


def touched_functions(patch_text: str, old_root: Path, new_root: Path) -> Set[str]:
    """``path::qualname`` of every def a patch changes.

    Removed lines are looked up in the file under ``old_root`` (before the patch), added
    lines in the one under ``new_root`` (after it). Blank lines are left out, so removing a
    whole method with the blank line after it touches only that method.
    """
    touched: Set[str] = set()
    for fd in parse_unified_diff(patch_text):
        sides = ((old_root, fd.old_path, fd.removed), (new_root, fd.new_path, fd.added))
        for root, path, lines in sides:
            if path is None or not lines:
                continue
            source = (root / path).read_text(encoding="utf-8")
            text_lines = source.splitlines()
            scopes = _scopes(source)
            for ln in lines:
                if ln <= len(text_lines) and not text_lines[ln - 1].strip():
                    continue  # a blank line belongs to no function
                touched.add(f"{path}::{enclosing_name(scopes, ln)}")
    return touched


def covers(listed: str, touched: str) -> bool:
    """True when a listed fixed function covers a touched one (equal, or an enclosing def)."""
    lpath, _, lname = listed.partition("::")
    tpath, _, tname = touched.partition("::")
    return lpath == tpath and (tname == lname or tname.startswith(lname + "."))


# --- running tests ----------------------------------------------------------------------------


def command_argv(test_cmd: str) -> List[str]:
    """The test command as argv, a leading ``python`` replaced by this interpreter."""
    argv = shlex.split(test_cmd)
    if argv and argv[0] in ("python", "python3"):
        argv[0] = sys.executable
    return argv


@dataclass
class TestRun:
    """One run of a case's test command: exit code, per-test outcomes, the output's tail and
    the (file, line) of every traceback frame it printed."""

    returncode: int
    outcomes: Dict[str, str]
    tail: str
    frames: List[Tuple[str, int]] = field(default_factory=list)


_OUTCOME_RE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (.+)$")
_FRAME_RE = re.compile(r'^\s*File "(.+?)", line (\d+), in ')
# distances whose buggy function must (or must not) be a frame of a failing test's traceback
IN_TRACEBACK = ("in_frame",)
NOT_IN_TRACEBACK = ("returned_value", "callee", "other_module_method", "fixture_helper")


def run_tests(case: RealBug, project: Path) -> TestRun:
    """Run the case's test command in ``project`` with ``-rA`` and native tracebacks; parse
    the short summary and the traceback frames."""
    argv = command_argv(case.test_cmd) + ["-rA", "--tb=native", "-p", "no:cacheprovider"]
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        done = subprocess.run(
            argv, cwd=project, env=env, capture_output=True, text=True, timeout=TEST_TIMEOUT
        )
    except subprocess.TimeoutExpired:
        return TestRun(-1, {}, f"timed out after {TEST_TIMEOUT} s")
    outcomes: Dict[str, str] = {}
    frames: List[Tuple[str, int]] = []
    for line in done.stdout.splitlines():
        m = _OUTCOME_RE.match(line)
        if m:
            outcomes[m.group(2)] = m.group(1)
        f = _FRAME_RE.match(line)
        if f:
            frames.append((f.group(1), int(f.group(2))))
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-5:])
    return TestRun(done.returncode, outcomes, tail, frames)


def frames_in_fixed_functions(case: RealBug, project: Path, run: TestRun) -> List[str]:
    """The listed fixed functions (as they are in ``project``) that hold a frame of ``run``."""
    hits = []
    for listed in case.fixed_functions:
        path, _, qualname = listed.partition("::")
        target = project / path
        if qualname == MODULE_LEVEL or not target.exists():
            continue
        spans = [
            (a, b) for a, b, name in _scopes(target.read_text(encoding="utf-8")) if name == qualname
        ]
        resolved = target.resolve()
        for file, line in run.frames:
            frame_path = Path(file) if os.path.isabs(file) else project / file
            if frame_path.resolve() == resolved and any(a <= line <= b for a, b in spans):
                hits.append(listed)
                break
    return hits


def outcome_of(run: TestRun, nodeid: str) -> Optional[str]:
    """The outcome of ``nodeid`` in a run (a summary line is ``nodeid`` or ``nodeid - msg``)."""
    if nodeid in run.outcomes:
        return run.outcomes[nodeid]
    for rest, outcome in run.outcomes.items():
        if rest.startswith(nodeid + " - "):
            return outcome
    return None


def check(case: RealBug, workdir: Path, cache: Optional[Path] = None) -> CheckResult:
    """Materialise the case both ways in ``workdir`` and check it.

    (a) every failing test fails with the bug; (b) every failing test passes with the fix;
    (c) the whole test command passes with the fix; (d) ``bug.patch`` touches only the
    listed fixed functions, and every listed function is touched; (e) the distance agrees
    with the tracebacks of the bug run: ``in_frame`` needs a fixed function among their
    frames, and ``returned_value``, ``callee``, ``other_module_method`` and
    ``fixture_helper`` need none there.
    """
    started = time.monotonic()
    result = CheckResult(case.name)
    try:
        bug_dir = materialise(case, Path(workdir) / "bug", cache)
        fixed_dir = materialise(case, Path(workdir) / "fixed", cache, fixed=True)
    except Exception as exc:  # any set-up failure is the case's problem
        result.problems.append(f"materialise: {exc}")
        result.seconds = time.monotonic() - started
        return result
    try:
        touched = touched_functions(case.bug_patch.read_text(encoding="utf-8"), fixed_dir, bug_dir)
    except (OSError, SyntaxError, ValueError) as exc:
        result.problems.append(f"(d) cannot map bug.patch to functions: {exc}")
        touched = set()
    for t in sorted(touched):
        if not any(covers(listed, t) for listed in case.fixed_functions):
            result.problems.append(f"(d) bug.patch touches unlisted {t}")
    for listed in case.fixed_functions:
        if touched and not any(covers(listed, t) for t in touched):
            result.problems.append(f"(d) listed {listed} is not touched by bug.patch")
    fixed_run = run_tests(case, fixed_dir)
    if fixed_run.returncode != 0:
        result.problems.append(
            f"(c) test_cmd fails with the fix (exit {fixed_run.returncode}): "
            f"{fixed_run.tail.splitlines()[-1] if fixed_run.tail else ''}"
        )
    bug_run = run_tests(case, bug_dir)
    for nodeid in case.failing_tests:
        fixed_outcome = outcome_of(fixed_run, nodeid)
        if fixed_outcome != "PASSED":
            result.problems.append(f"(b) {nodeid} is {fixed_outcome or 'not run'} with the fix")
        bug_outcome = outcome_of(bug_run, nodeid)
        if bug_outcome not in ("FAILED", "ERROR"):
            result.problems.append(f"(a) {nodeid} is {bug_outcome or 'not run'} with the bug")
    if bug_run.returncode == 0:
        result.problems.append("(a) test_cmd passes with the bug")
    in_traceback = frames_in_fixed_functions(case, bug_dir, bug_run)
    if case.distance in IN_TRACEBACK and not in_traceback:
        result.problems.append(
            f"(e) distance {case.distance} but no traceback frame is in a fixed function"
        )
    if case.distance in NOT_IN_TRACEBACK and in_traceback:
        result.problems.append(
            f"(e) distance {case.distance} but {in_traceback[0]} is a traceback frame"
        )
    wanted = set(case.failing_tests)
    for rest, outcome in bug_run.outcomes.items():
        nodeid = rest.split(" - ")[0]
        if outcome in ("FAILED", "ERROR") and nodeid not in wanted:
            result.unlisted_failures.append(nodeid)
    result.seconds = time.monotonic() - started
    return result


# --- command line -----------------------------------------------------------------------------


def _select(cases: List[RealBug], names: Sequence[str]) -> List[RealBug]:
    if not names:
        return cases
    by_name = {c.name: c for c in cases}
    missing = [n for n in names if n.rstrip("/").split("/")[-1] not in by_name]
    if missing:
        raise SystemExit(f"no such case: {', '.join(missing)}")
    return [by_name[n.rstrip("/").split("/")[-1]] for n in names]


def _check_one(case: RealBug, cache: Optional[Path]) -> CheckResult:
    with tempfile.TemporaryDirectory(prefix=f"realbug-{case.name}-") as tmp:
        return check(case, Path(tmp), cache)


def case_table(cases: Sequence[RealBug]) -> str:
    """A Markdown table of the cases (library, version, commit, distance, description)."""
    rows = [
        "| case | library | version | fix commit | distance | bug |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for c in cases:
        repo, _, sha = c.source[len("https://github.com/") :].partition("/commit/")
        text = c.description.replace("|", "\\|").replace("<", "&lt;")
        rows.append(
            f"| `{c.name}` | {c.library} | {c.version} | [{repo}@{sha[:10]}]({c.source}) "
            f"| {c.distance} | {text} |"
        )
    return "\n".join(rows) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Command line: ``check`` and ``materialise``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_check = sub.add_parser("check", help="materialise each case both ways and check it")
    p_check.add_argument("cases", nargs="*", help="case names (default: all)")
    p_check.add_argument("--jobs", type=int, default=1)
    p_check.add_argument("--cache", type=Path, default=None)
    p_mat = sub.add_parser("materialise", help="build one case's project")
    p_mat.add_argument("case")
    p_mat.add_argument("dest", type=Path)
    p_mat.add_argument("--fixed", action="store_true", help="leave the bug out")
    p_mat.add_argument("--cache", type=Path, default=None)
    sub.add_parser("table", help="print the Markdown table of the cases (for the README)")
    args = parser.parse_args(argv)
    cases = load_cases()
    if args.command == "table":
        print(case_table(cases), end="")
        return 0
    if args.command == "materialise":
        (case,) = _select(cases, [args.case])
        print(materialise(case, args.dest, args.cache, fixed=args.fixed))
        return 0
    chosen = _select(cases, args.cases)
    started = time.monotonic()
    failures = 0
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [pool.submit(_check_one, case, args.cache) for case in chosen]
        for case, future in zip(chosen, futures):
            res = future.result()
            if res.ok:
                more = len(res.unlisted_failures)
                note = f" ({more} more tests fail with the bug)" if more else ""
                print(f"ok   {case.name} [{case.distance}] {res.seconds:.1f}s{note}", flush=True)
            else:
                failures += 1
                print(f"FAIL {case.name}: {'; '.join(res.problems)}", flush=True)
    libs = Counter(c.library for c in chosen)
    dist = Counter(c.distance for c in chosen)
    print(
        f"{len(chosen)} cases, {failures} failed, {len(libs)} libraries, "
        f"{time.monotonic() - started:.0f}s"
    )
    print("libraries: " + ", ".join(f"{k} {v}" for k, v in sorted(libs.items())))
    print("distance: " + ", ".join(f"{k} {dist[k]}" for k in DISTANCES if dist[k]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
