"""A kept candidate that compensates is flagged (issue 14, item 4): it changes the data the failing
assertion compares (a list's shape, a limit), not the code that computes it."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Tuple

from repairloop.patch.apply import apply_answer
from repairloop.patch.compensate import assertion_names, compensation_flags
from repairloop.types import FlagKind, TestFiles

CODES = '''\
def codes(words):
    """The first letter of each word, upper-cased."""
    found = []
    for word in words:
        code = word[:1].upper() + word[1:2]
        found.append(code)
    return found
'''

CACHE = """\
class Cache:
    def __init__(self, maxsize):
        self._maxsize = maxsize
        self.items = {}

    def put(self, key, value):
        if len(self.items) > self._maxsize:
            self.items.pop(next(iter(self.items)))
        self.items[key] = value
"""

TESTS = """\
from pkg.codes import codes
from pkg.cache import Cache


def test_codes():
    assert len(codes(["ab", "cd"])) == 2 and codes(["ab"]) == ["A"]


def test_limit():
    cache = Cache(2)
    for key in range(5):
        cache.put(key, key)
    assert len(cache.items) <= cache._maxsize
"""


def project(tmp_path: Path) -> Path:
    files: Dict[str, str] = {
        "pkg/__init__.py": "",
        "pkg/codes.py": CODES,
        "pkg/cache.py": CACHE,
        "tests/test_pkg.py": TESTS,
    }
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    return tmp_path


def flags(root: Path, path: str, old: str, new: str) -> Tuple[str, ...]:
    answer = f"{path}\n```python\n<<<<<<< SEARCH\n{old}\n=======\n{new}\n>>>>>>> REPLACE\n```\n"
    applied = apply_answer(answer, root)
    names = assertion_names(
        root, ["tests/test_pkg.py::test_codes", "tests/test_pkg.py::test_limit"]
    )
    found = compensation_flags(applied, names, TestFiles(("tests/*",)))
    assert all(f.kind is FlagKind.COMPENSATES for f in found)
    return tuple(f.detail for f in found)


def test_the_failing_assertions_name_what_they_compare(tmp_path: Path) -> None:
    names = assertion_names(
        project(tmp_path), ["tests/test_pkg.py::test_limit", "tests/test_pkg.py::test_gone"]
    )
    assert {
        "len",
        "cache",
        "items",
        "maxsize",
    } <= names and "put" not in names  # put is called, not compared


def test_storing_a_string_as_characters_is_flagged(tmp_path: Path) -> None:
    root = project(tmp_path)
    found = flags(root, "pkg/codes.py", "        found.append(code)", "        found.extend(code)")
    assert found == (
        "pkg/codes.py:6 `found.extend(code)` changes the data the failing assertion compares, "
        "not the code that computes it",
    )


def test_raising_a_limit_the_assertion_compares_is_flagged(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert flags(
        root,
        "pkg/cache.py",
        "        self._maxsize = maxsize",
        "        self._maxsize = maxsize + 1",
    )
    added = "        self._maxsize = maxsize\n        self._maxsize += 1"
    assert flags(root, "pkg/cache.py", "        self._maxsize = maxsize", added)


def test_fixing_the_computation_is_not_flagged(tmp_path: Path) -> None:
    root = project(tmp_path)
    assert (
        flags(
            root,
            "pkg/cache.py",
            "        if len(self.items) > self._maxsize:",
            "        if len(self.items) >= self._maxsize:",
        )
        == ()
    )
    assert (
        flags(
            root,
            "pkg/codes.py",
            "        code = word[:1].upper() + word[1:2]",
            "        code = word[:1].upper()",
        )
        == ()
    )
    # A compensating line together with a real change: the candidate changes the computation too.
    both = "        code = word[:1].upper()\n        found.extend(code)"
    assert (
        flags(
            root,
            "pkg/codes.py",
            "        code = word[:1].upper() + word[1:2]\n        found.append(code)",
            both,
        )
        == ()
    )
    # A limit the assertions do not name is no data they compare.
    assert (
        flags(
            root,
            "pkg/cache.py",
            "        self.items = {}",
            "        self.items = {}\n        self.size = 1",
        )
        == ()
    )
