"""The real-bug corpora (``fixtures/realbugs`` and its held-out set) are well formed: no network,
no downloads.

``tests/bench/realbugs.py check`` is the slow check that the bugs are real (it downloads the
sdists and runs their tests); this one only reads the case files.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import List

import pytest

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "fixtures" / "realbugs"
HELD_OUT = ROOT / "fixtures" / "realbugs-heldout"


def _load_realbugs() -> ModuleType:
    name = "realbugs_under_test"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "tests" / "bench" / "realbugs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


rb = _load_realbugs()
CASE_DIRS: List[Path] = sorted(p.parent for p in CASES.glob("*/case.toml"))
HELD_OUT_DIRS: List[Path] = sorted(p.parent for p in HELD_OUT.glob("*/case.toml"))


def test_corpus_size() -> None:
    cases = rb.load_cases(CASES)
    assert len(cases) >= 40
    assert len({c.library for c in cases}) >= 8
    assert {c.distance for c in cases} <= set(rb.DISTANCES)


def test_held_out_set_is_other_libraries() -> None:
    """The held-out set measures what was not tuned on: none of its libraries is in the corpus."""
    held_out = rb.load_cases(HELD_OUT)
    assert len(held_out) >= 10
    assert not {c.library for c in held_out} & {c.library for c in rb.load_cases(CASES)}


@pytest.mark.parametrize("root", [CASES, HELD_OUT], ids=["corpus", "held-out"])
def test_readme_lists_every_case(root: Path) -> None:
    readme = (root / "README.md").read_text(encoding="utf-8")
    for case_dir in sorted(p.parent for p in root.glob("*/case.toml")):
        assert f"`{case_dir.name}`" in readme, f"README.md does not list {case_dir.name}"


@pytest.mark.parametrize("root", [CASES, HELD_OUT], ids=["corpus", "held-out"])
def test_every_directory_is_a_case(root: Path) -> None:
    dirs = sorted(p for p in root.iterdir() if p.is_dir())
    assert dirs == sorted(p.parent for p in root.glob("*/case.toml"))


@pytest.mark.parametrize(
    "case_dir", CASE_DIRS + HELD_OUT_DIRS, ids=[p.name for p in CASE_DIRS + HELD_OUT_DIRS]
)
def test_case_format(case_dir: Path) -> None:
    data = rb.read_case_toml(case_dir / "case.toml")
    assert rb.case_format_problems(data) == []
    assert case_dir.name.startswith(re.sub(r"[^a-z0-9]+", "-", data["library"].lower()) + "-")
    assert {p.name for p in case_dir.iterdir()} <= {"case.toml", "bug.patch", "tests.patch"}

    bug = rb.parse_unified_diff((case_dir / "bug.patch").read_text(encoding="utf-8"))
    bug_paths = {f.path for f in bug}
    for f in bug:
        assert f.old_path == f.new_path, f"bug.patch renames, adds or deletes {f.path}"
        assert not rb.is_test_path(f.path), f"bug.patch touches test file {f.path}"
        assert f.removed or f.added
    fixed_paths = {ff.split("::")[0] for ff in data["fixed_functions"]}
    assert fixed_paths == bug_paths, "fixed_functions and bug.patch name different files"
    for ff in data["fixed_functions"]:
        qualname = ff.split("::", 1)[1]
        dotted = re.fullmatch(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*", qualname)
        assert qualname == rb.MODULE_LEVEL or dotted, ff

    tests_patch = case_dir / "tests.patch"
    if tests_patch.exists():
        for f in rb.parse_unified_diff(tests_patch.read_text(encoding="utf-8")):
            assert rb.is_test_path(f.path), f"tests.patch touches non-test file {f.path}"

    for nodeid in data["failing_tests"]:
        path = nodeid.split("::")[0]
        assert path.endswith((".py", ".rst", ".txt", ".md")) and "::" in nodeid, nodeid
    kept = data.get("files_kept")
    if kept is not None:
        for path in bug_paths | {t.split("::")[0] for t in data["failing_tests"]}:
            assert path.split("/")[0] in kept, f"{path} is outside files_kept"


def test_toml_subset_parser_reads_every_case_as_tomllib_does() -> None:
    tomllib = pytest.importorskip("tomllib")
    for case_dir in CASE_DIRS + HELD_OUT_DIRS:
        text = (case_dir / "case.toml").read_text(encoding="utf-8")
        assert rb.parse_toml_subset(text) == tomllib.loads(text), case_dir.name


def test_diff_parser_counts_lines() -> None:
    text = (
        "diff --git a/pkg/m.py b/pkg/m.py\n--- a/pkg/m.py\n+++ b/pkg/m.py\n"
        "@@ -1,3 +1,3 @@\n a\n-b\n+c\n d\n"
    )
    (f,) = rb.parse_unified_diff(text)
    assert (f.path, f.removed, f.added) == ("pkg/m.py", [2], [2])
    with pytest.raises(ValueError):
        rb.parse_unified_diff(text.replace("@@ -1,3 +1,3 @@", "@@ -1,5 +1,3 @@"))


def test_enclosing_function_names() -> None:
    source = (
        "X = 1\n\nclass A:\n    @staticmethod\n    def f():\n        def g():\n            pass\n"
    )
    scopes = rb._scopes(source)
    assert rb.enclosing_name(scopes, 1) == rb.MODULE_LEVEL
    assert rb.enclosing_name(scopes, 4) == "A.f"
    assert rb.enclosing_name(scopes, 7) == "A.f.g"
    assert rb.covers("m.py::A.f", "m.py::A.f.g")
    assert not rb.covers("m.py::A.f", "m.py::A.fg")
