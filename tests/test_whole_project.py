"""Whole-function answers located against the whole project, not only the code shown
(patch/lookup.py).

Each case writes a small project to a temporary directory and applies the
answer the way the loop does (``apply_answer`` with the slices shown).
"""

from __future__ import annotations

from pathlib import Path
from typing import Dict, List

import pytest

from repairloop.errors import PatchError
from repairloop.journal import IterationEvent
from repairloop.journal.codec import event_from_json, event_to_json
from repairloop.patch import apply_answer
from repairloop.patch.lookup import ProjectDefs, python_files
from repairloop.types import CodeSlice, Decision, Iteration, TestFiles, Usage

SHAPES = '''"""Shapes."""


def area(w, h):
    return w * h
'''

UTIL = '''"""Helpers the shown code calls."""


def scale(value, k):
    return value + k


class Box:
    def __init__(self, w, h):
        self.w, self.h = w, h

    def perimeter(self):
        return 2 * (self.w - self.h)
'''

FIXED_SCALE = "```python\ndef scale(value, k):\n    return value * k\n```\n"


def write(root: Path, files: Dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def shown_area() -> List[CodeSlice]:
    return [CodeSlice("pkg/shapes.py", 4, 5, "area", "")]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/shapes.py": SHAPES,
            "pkg/util.py": UTIL,
            "tests/test_shapes.py": "from pkg.shapes import area\n\n\ndef test_area():\n"
            "    assert area(2, 3) == 6\n",
        },
    )


def test_a_unique_name_in_a_file_not_shown_is_applied_there_and_said(project: Path) -> None:
    applied = apply_answer(FIXED_SCALE, project, shown=shown_area())
    assert [c.path for c in applied.changes] == ["pkg/util.py"]
    assert "    return value * k\n" in (applied.changes[0].new_text or "")
    assert applied.located == ("pkg/util.py::scale (not in the prompt)",)
    assert applied.format == "whole_function"


def test_a_shown_definition_changes_nothing_in_located(project: Path) -> None:
    applied = apply_answer(
        "```python\ndef area(w, h):\n    return w * h * 1\n```", project, shown=shown_area()
    )
    assert [c.path for c in applied.changes] == ["pkg/shapes.py"] and applied.located == ()


def test_the_shown_definition_wins_over_one_of_the_same_name_elsewhere(project: Path) -> None:
    write(project, {"pkg/other.py": "def area(w, h):\n    return 0\n"})
    applied = apply_answer(
        "```python\ndef area(w, h):\n    return w * h * 1\n```", project, shown=shown_area()
    )
    assert [c.path for c in applied.changes] == ["pkg/shapes.py"] and applied.located == ()


def test_the_same_name_in_two_files_is_refused_with_both_listed(project: Path) -> None:
    write(project, {"pkg/more.py": "def scale(value, k):\n    return value\n"})
    with pytest.raises(PatchError) as err:
        apply_answer(FIXED_SCALE, project, shown=shown_area())
    assert (
        "matches 2 definitions in the project" in err.value.message
        and "ambiguous" in err.value.message
    )
    assert (
        "`pkg/more.py::scale`" in err.value.message and "`pkg/util.py::scale`" in err.value.message
    )
    assert "path of the file" in (err.value.hint or "")


def test_at_most_five_candidates_are_listed(project: Path) -> None:
    write(project, {f"pkg/m{i}.py": "def scale(value, k):\n    return value\n" for i in range(7)})
    with pytest.raises(PatchError, match=r"matches 8 definitions.*and 3 more") as err:
        apply_answer(FIXED_SCALE, project, shown=shown_area())
    assert err.value.message.count("::scale`") == 5


def test_a_name_only_in_a_test_file_is_refused_saying_so(project: Path) -> None:
    answer = "```python\ndef test_area():\n    assert True\n```"
    with pytest.raises(
        PatchError,
        match=r"only in a test file \(`tests/test_shapes\.py::test_area`\); test files "
        r"are read-only",
    ) as err:
        apply_answer(answer, project, shown=shown_area())
    assert "code under test" in (err.value.hint or "")


def test_the_callers_test_files_decide_what_is_a_test(project: Path) -> None:
    """A file the runner collected tests from is a test whatever the globs say
    (``TestFiles.collected``)."""
    write(project, {"checks/check_util.py": "def helper(x):\n    return x\n"})
    answer = "```python\ndef helper(x):\n    return x + 1\n```"
    assert apply_answer(answer, project, shown=shown_area()).located == (
        "checks/check_util.py::helper (not in the prompt)",
    )
    test_files = TestFiles(collected=frozenset({"checks/check_util.py"}))
    with pytest.raises(PatchError, match="only in a test file"):
        apply_answer(answer, project, shown=shown_area(), is_test=test_files.is_test)


def test_a_name_in_a_test_file_and_in_the_code_is_the_code_s(project: Path) -> None:
    write(project, {"tests/conftest.py": "def scale(value, k):\n    return 0\n"})
    applied = apply_answer(FIXED_SCALE, project, shown=shown_area())
    assert [c.path for c in applied.changes] == ["pkg/util.py"]


def test_a_method_inside_its_class_not_shown_is_applied(project: Path) -> None:
    answer = (
        "```python\nclass Box:\n    def perimeter(self):\n        return 2 * (self.w + self.h)\n```"
    )
    applied = apply_answer(answer, project, shown=shown_area())
    assert "        return 2 * (self.w + self.h)\n" in (applied.changes[0].new_text or "")
    assert "self.w, self.h = w, h" in (applied.changes[0].new_text or "")  # the other member stays
    assert applied.located == ("pkg/util.py::Box.perimeter (not in the prompt)",)


def test_a_bare_method_not_shown_is_applied_to_its_one_class(project: Path) -> None:
    answer = "```python\ndef perimeter(self):\n    return 2 * (self.w + self.h)\n```"
    applied = apply_answer(answer, project, shown=shown_area())
    assert "        return 2 * (self.w + self.h)\n" in (applied.changes[0].new_text or "")
    assert applied.located == ("pkg/util.py::Box.perimeter (not in the prompt)",)


def test_a_bare_method_of_many_classes_is_ambiguous(project: Path) -> None:
    write(project, {"pkg/more.py": "class Other:\n    def __init__(self):\n        self.x = 1\n"})
    with pytest.raises(
        PatchError, match=r"`pkg/more\.py::Other\.__init__`, `pkg/util\.py::Box\.__init__`"
    ):
        apply_answer(
            "```python\ndef __init__(self):\n    self.x = 2\n```", project, shown=shown_area()
        )


def test_a_new_member_of_a_located_class_is_refused_as_before(project: Path) -> None:
    answer = "```python\nclass Box:\n    def diagonal(self):\n        return 0\n```"
    with pytest.raises(PatchError, match=r"`Box\.diagonal`.*not in the code shown"):
        apply_answer(answer, project, shown=shown_area())


def test_a_path_naming_the_wrong_file_is_refused_naming_where_it_is(project: Path) -> None:
    """Under a path the block is looked up in that file only (the model said where); a name defined
    elsewhere is not moved there silently: the refusal says where it is, so the answer can name
    it."""
    answer = "pkg/shapes.py\n" + FIXED_SCALE
    with pytest.raises(PatchError) as err:
        apply_answer(answer, project, shown=shown_area())
    assert (
        "under pkg/shapes.py, which has no such definition; it is in `pkg/util.py::scale`"
        in err.value.message
    )
    assert "path of the file that defines it" in (err.value.hint or "")
    assert apply_answer("pkg/util.py\n" + FIXED_SCALE, project, shown=shown_area()).located == ()


def test_a_name_nowhere_in_the_project_keeps_the_refusal(project: Path) -> None:
    with pytest.raises(
        PatchError,
        match=r"`volume` \(code block at line 2\), which is not in the code shown "
        r"\(shown: area\); a new name",
    ):
        apply_answer(
            "```python\ndef volume(w, h, d):\n    return w * h * d\n```",
            project,
            shown=shown_area(),
        )


def test_with_nothing_known_shown_every_name_is_looked_up(project: Path) -> None:
    assert apply_answer(FIXED_SCALE, project).located == ("pkg/util.py::scale (not in the prompt)",)


def test_environments_caches_and_build_output_are_not_the_project(project: Path) -> None:
    copy = "def scale(value, k):\n    return value\n"
    write(
        project,
        {
            ".venv/lib/site.py": copy,
            "env/pyvenv.cfg": "",
            "env/lib/x.py": copy,
            "node_modules/x/y.py": copy,
            "build/lib/pkg/util.py": copy,
            ".git/hooks/h.py": copy,
            "pkg.egg-info/x.py": copy,
            "pkg/build/steps.py": "def step():\n    pass\n",
        },
    )
    files = sorted(python_files(project))
    assert files == [
        "pkg/__init__.py",
        "pkg/build/steps.py",
        "pkg/shapes.py",
        "pkg/util.py",
        "tests/test_shapes.py",
    ]
    assert apply_answer(FIXED_SCALE, project, shown=shown_area()).located == (
        "pkg/util.py::scale (not in the prompt)",
    )


def test_a_linked_file_is_not_read(project: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    """Files are read with ``read_inside``: a link in the project (to a file outside) is never
    followed."""
    outside = tmp_path_factory.mktemp("outside") / "secret.py"
    outside.write_text("def leak(x):\n    return x\n")
    (project / "pkg" / "linked.py").symlink_to(outside)
    with pytest.raises(PatchError, match=r"`leak`.*not in the code shown"):
        apply_answer("```python\ndef leak(x):\n    return 0\n```", project, shown=shown_area())
    assert outside.read_text().endswith("return x\n")


def test_the_scan_parses_only_files_that_define_the_name(project: Path) -> None:
    write(
        project,
        {"pkg/broken.py": "def scale(:\n", "pkg/notes.py": "# scale(value, k) is in util\n"},
    )
    defs = ProjectDefs(project, TestFiles().is_test)
    assert [f.place for f in defs.find("scale")] == [
        "pkg/util.py::scale"
    ]  # the broken file does not parse
    assert defs.complete


def test_the_journal_record_keeps_what_was_located() -> None:
    it = Iteration(1, "llm", "openai/m", Usage(), Decision.REVERTED, "")
    event = IterationEvent(iteration=it, located=("pkg/util.py::scale (not in the prompt)",))
    data = {"event": "iteration", "ts": "2026-01-01T00:00:00Z", **event_to_json(event)}
    assert data["located"] == ["pkg/util.py::scale (not in the prompt)"]
    read = event_from_json(data)
    assert isinstance(read, IterationEvent) and read.located == event.located
    # a journal from before the field
    older = event_from_json({k: v for k, v in data.items() if k != "located"})
    assert isinstance(older, IterationEvent) and older.located == ()
