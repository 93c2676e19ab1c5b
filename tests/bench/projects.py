"""Projects the benchmark repairs: fixture copies and generated ones, each a fresh git repository.

Generated projects are plain data written to a temporary directory: a module
of a chosen size with one bug (figure 3), and a suite of 300 passing tests and
one failing (figure 4). Each is committed with a fixed identity, like
``tests/conftest.py`` does for the test suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Dict

REPO = Path(__file__).resolve().parents[2]
PROJECTS = REPO / "fixtures" / "projects"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.invalid",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}
PYPROJECT = (
    '[project]\nname = "{name}"\nversion = "0.1.0"\n\n[tool.pytest.ini_options]\ntestpaths '
    '= ["tests"]\npythonpath = ["."]\n'
)


def commit_all(path: Path) -> Path:
    """Make ``path`` a git repository with everything committed (fixed identity, no signing)."""
    env = {**os.environ, **GIT_ENV}
    for args in (
        ["init", "-q", "-b", "main"],
        ["config", "commit.gpgsign", "false"],
        ["add", "-A"],
        ["commit", "-q", "-m", "bench fixture"],
    ):
        subprocess.run(["git", *args], cwd=path, env=env, check=True, capture_output=True)
    return path


def fixture_copy(name: str, dest: Path) -> Path:
    """``fixtures/projects/<name>`` copied to ``dest/<name>`` and committed."""
    target = dest / name
    shutil.copytree(
        PROJECTS / name,
        target,
        ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache", ".repairloop"),
    )
    return commit_all(target)


def write_files(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return commit_all(root)


FUNCTION = '''def scale_{k}(value):
    """Return ``value`` times {k}; negative values are refused."""
    if value < 0:
        raise ValueError("value must not be negative")
    return value * {k}


'''  # seven lines per function
HEADER = '"""Scaling helpers: one small function per factor (generated for the benchmark)."""\n\n\n'
BUG_LINE = "    return value * {k} + 1"


def sized_module(dest: Path, lines: int) -> Dict[str, object]:
    """A project whose ``scaling/ops.py`` has about ``lines`` lines and one bug in its middle
    function.

    Returns ``{"root", "lines", "bug_line", "right_line", "path"}``: the buggy
    line and its fix, for a scripted answer.
    """
    count = max(3, round((lines - 3) / 7))
    buggy = count // 2 + 1
    body = HEADER + "".join(FUNCTION.format(k=k) for k in range(1, count + 1))
    right = f"    return value * {buggy}"
    body = body.replace(right + "\n", BUG_LINE.format(k=buggy) + "\n", 1)
    tests = (
        f"from scaling.ops import scale_1, scale_{buggy}, scale_{count}\n\n\n"
        f"def test_first():\n    assert scale_1(2) == 2\n\n\n"
        f"def test_middle():\n    assert scale_{buggy}(2) == {2 * buggy}\n\n\n"
        f"def test_last():\n    assert scale_{count}(1) == {count}\n"
    )
    root = dest / f"module_{lines}"
    write_files(
        root,
        {
            "pyproject.toml": PYPROJECT.format(name="scaling"),
            "scaling/__init__.py": "",
            "scaling/ops.py": body,
            "tests/test_ops.py": tests,
        },
    )
    return {
        "root": root,
        "lines": len(body.splitlines()),
        "bug_line": BUG_LINE.format(k=buggy),
        "right_line": right,
        "path": "scaling/ops.py",
    }


def many_tests(dest: Path, passing: int = 300, test_seconds: float = 0.01) -> Path:
    """A project with ``passing`` passing tests (each sleeps ``test_seconds``) and one failing test.

    The sleep stands in for real test work so that the full suite costs what
    a few hundred small tests cost; the failing test is ``tests/test_price.py::test_discount``.
    """
    files = {
        "pyproject.toml": PYPROJECT.format(name="shop"),
        "shop/__init__.py": "",
        "shop/price.py": 'def discount(price, percent):\n    """Price after ``percent`` off."""\n'
        "    return price * percent / 100\n",
        "tests/test_price.py": "from shop.price import discount\n\n\n"
        "def test_discount():\n    assert discount(200, 25) == 150\n",
    }
    per_file = 30
    for index in range(0, passing, per_file):
        names = range(index, min(index + per_file, passing))
        files[f"tests/test_bulk_{index // per_file:02d}.py"] = "import time\n\n\n" + "".join(
            f"def test_bulk_{n}():\n    time.sleep({test_seconds})\n    assert {n} + 1 == "
            f"{n + 1}\n\n\n"
            for n in names
        )
    return write_files(dest / "many_tests", files)
