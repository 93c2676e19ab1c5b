"""Answers as real models write them: the corpus's provenance, and the parts of the parser one by
one.

Every case of ``fixtures/answers/`` is parsed and judged by ``tests/test_patch.py``; here
the cases that model a public thread are checked to say which one, and the rules of
``textutil.split_thinking``, ``elision.py``, ``fences.py`` and ``whole.py`` are pinned, with
the attacks on them (an answer that tries to slip elided or test code through).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Dict, List

import pytest
from answer_corpus import ANSWERS, CASES, judge

from repairloop.errors import GuardError, PatchError
from repairloop.patch import GuardPolicy, apply_answer, check_guards
from repairloop.patch.elision import elision_marker
from repairloop.patch.fences import code_blocks
from repairloop.textutil import split_thinking
from repairloop.types import CodeSlice

THREADED = [c for c in CASES if (c / "meta.json").exists()]
THREAD = re.compile(r"^https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+$")


def _meta(case: Path) -> Dict[str, str]:
    return dict(json.loads((case / "meta.json").read_text()))


# --- the corpus ------------------------------------------------------------------------------


def test_corpus_has_thirty_shapes_from_public_threads() -> None:
    assert len(THREADED) >= 30
    assert len({_meta(c)["thread"] for c in THREADED}) >= 25  # modelled on many threads, not a few


@pytest.mark.parametrize("case", THREADED, ids=[c.name for c in THREADED])
def test_case_names_its_thread_and_shape(case: Path) -> None:
    meta = _meta(case)
    assert THREAD.match(meta["thread"]), meta["thread"]
    assert len(meta["shape"]) > 30
    assert (case / "after").is_dir() != (case / "error.txt").exists()  # a candidate or a refusal
    assert meta.get("edit_format", "auto") in ("auto", "diff", "search_replace", "whole")


def test_corpus_covers_the_issue_s_shapes() -> None:
    names = " ".join(c.name for c in THREADED)
    for shape in (
        "whole_fn",
        "whole_method",
        "whole_class",
        "whole_file",
        "elided",
        "think",
        "diff_",
        "sr_",
        "two_",
        "ambiguous",
        "prose",
    ):
        assert shape in names, shape


def test_judge_fails_a_wrong_expectation(tmp_path: Path) -> None:
    """The corpus check can fail: a copy of a case with a wrong after/ file is judged wrong."""
    case = tmp_path / "case"
    shutil.copytree(ANSWERS / "whole_fn_fenced", case)
    (case / "after" / "params.py").write_text("something else\n")
    verdict = judge(case, tmp_path / "run")
    assert not verdict.right and "differs" in verdict.detail


# --- thinking -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, answer, unclosed",
    [
        ("<think>draft</think>\nfinal", "\nfinal", False),
        ("reasoning only\n</think>\nfinal", "\nfinal", False),
        ("<THINKING>a</THINKING>b<think>\n\n</think>c", "bc", False),
        ("intro <think>never closed", "intro ", True),
        ("no thinking at all", "no thinking at all", False),
    ],
)
def test_split_thinking(text: str, answer: str, unclosed: bool) -> None:
    thought = split_thinking(text)
    assert (thought.answer, thought.unclosed) == (answer, unclosed)
    assert bool(thought.thinking) == (text != answer)


def test_a_diff_inside_thinking_is_never_applied(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    draft = (
        "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+  "
        "  return a * b\n"
    )
    with pytest.raises(PatchError, match="holds only thinking: nothing follows"):
        apply_answer(f"<think>\n{draft}</think>\n", tmp_path)


# --- elision -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line",
    [
        "...",
        "    ...",
        "# ... rest of the code unchanged",
        "// ... existing code ...",
        "# rest unchanged",
        "# existing code here",
        "    # ... (keep existing code)",
        "// ... (rest of the file remains the same)",
        "[the rest of the file...]",
        "pass  # unchanged",
        "# Same as before",
        "# omitted for brevity",
        "# (snip)",
    ],
)
def test_placeholders_are_recognised(line: str) -> None:
    assert elision_marker(line) == line.strip()


@pytest.mark.parametrize(
    "line",
    [
        "# value unchanged if negative",
        "# Loop over items...",
        "return a + b  # fixed",
        "# keep it simple",
        'print("...")',
        "# TODO: handle more cases",
        "*args, b = x",
        "# compute the rest of the sum",
        "",
    ],
)
def test_ordinary_lines_are_not_placeholders(line: str) -> None:
    assert elision_marker(line) is None


def test_a_placeholder_the_file_already_has_is_no_elision(tmp_path: Path) -> None:
    (tmp_path / "proto.py").write_text(
        "class P:\n    def run(self):\n        ...\n\n\ndef f():\n    return 1\n"
    )
    answer = "proto.py\n<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE\n"
    assert apply_answer(answer, tmp_path).changes[0].new_text.endswith("return 2\n")


def test_a_second_ellipsis_is_an_elision_even_when_the_file_has_one(tmp_path: Path) -> None:
    (tmp_path / "proto.py").write_text(
        "class P:\n    def run(self):\n        ...\n\n\ndef f():\n    x = 1\n    return x\n"
    )
    answer = (
        "proto.py\n<<<<<<< SEARCH\n    x = 1\n    return x\n=======\n    ...\n    return "
        "2\n>>>>>>> REPLACE\n"
    )
    with pytest.raises(
        PatchError, match=r"elides code in proto.py: line 7 of the new text is `\.\.\.`"
    ):
        apply_answer(answer, tmp_path)


# --- code blocks --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, label",
    [
        ("calc.py\n```python\ndef f(): pass\n```", "calc.py"),
        ("**src/calc.py**\n```python\ndef f(): pass\n```", "src/calc.py"),
        ("Here is the fixed calc.py:\n\n```python\ndef f(): pass\n```", "calc.py"),
        ("```python:src/calc.py\ndef f(): pass\n```", "src/calc.py"),
        ('```python title="calc.py"\ndef f(): pass\n```', "calc.py"),
        ("```calc.py\ndef f(): pass\n```", "calc.py"),
        ("```python\n# File: src/calc.py\ndef f(): pass\n```", "src/calc.py"),
        ("As noted e.g. above:\n```python\ndef f(): pass\n```", None),
        ("```python\n# compute things\ndef f(): pass\n```", None),
    ],
)
def test_the_file_a_block_names(answer: str, label: str) -> None:
    assert [b.label for b in code_blocks(answer)] == [label]


def test_an_unclosed_fence_runs_to_the_end_and_other_languages_are_not_python() -> None:
    blocks = code_blocks("```bash\npytest -q\n```\n\n```python\ndef f():\n    return 1")
    assert [(b.language, b.python, b.code) for b in blocks] == [
        ("bash", False, "pytest -q"),
        ("python", True, "def f():\n    return 1"),
    ]


def test_fences_inside_a_docstring_pair_up_when_that_makes_the_block_python() -> None:
    """A function whose docstring holds a fenced example, answered inside a three-backtick fence
    as models write it (seen on humanize's docstrings): the docstring's bare closing fence would
    end the block by CommonMark and leave broken Python, so the fences inside pair up; a block
    that is Python either way, and one that is Python neither way, end at the first bare
    fence."""
    function = (
        "def ordinal(n):\n"
        '    """Ordinal.\n\n    ```pycon\n    >>> ordinal(1)\n    \'1st\'\n    ```\n    """\n'
        "    return str(n)"
    )
    blocks = code_blocks(f"humanize/number.py\n```python\n{function}\n```\n\nDone.")
    assert [(b.label, b.code) for b in blocks] == [("humanize/number.py", function)]
    two = code_blocks("```python\nx = 1\n```\ntext\n```python\ny = 2\n```")
    assert [b.code for b in two] == ["x = 1", "y = 2"]
    prose = code_blocks("```text\na\n```sh\nb\n```\nc\n```")
    assert prose[0].code == "a\n```sh\nb"


# --- whole definitions ---------------------------------------------------------------------------

SOURCE = '''"""Shapes."""


class Box:
    def __init__(self, w, h):
        self.w, self.h = w, h

    @property
    def area(self):
        return self.w + self.h
        # end of area

    def scale(self, k):
        return Box(self.w * k, self.h * k)


def perimeter(box):
    return 2 * (box.w - box.h)
'''


def _shown_all(root: Path) -> List[CodeSlice]:
    text = (root / "box.py").read_text()
    return [CodeSlice("box.py", 1, len(text.splitlines()), "<module>", text)]


@pytest.fixture
def box(tmp_path: Path) -> Path:
    (tmp_path / "box.py").write_text(SOURCE)
    return tmp_path


def test_method_with_decorator_and_trailing_comment_is_replaced_whole(box: Path) -> None:
    answer = (
        "```python\n@property\ndef area(self):\n    return self.w * self.h\n    # end of area\n```"
    )
    new = apply_answer(answer, box, shown=_shown_all(box)).changes[0].new_text or ""
    assert "        return self.w * self.h\n        # end of area\n\n    def scale" in new
    assert new.count("# end of area") == 1 and new.count("@property") == 1


def test_unchanged_copy_of_the_current_code_is_dropped(box: Path) -> None:
    """'Before' then 'after' blocks: the copy equal to the current code changes nothing and is no
    second version."""
    before = "def perimeter(box):\n    return 2 * (box.w - box.h)\n"
    after_ = "def perimeter(box):\n    return 2 * (box.w + box.h)\n"
    applied = apply_answer(
        f"Before:\n```python\n{before}```\nAfter:\n```python\n{after_}```\n",
        box,
        shown=_shown_all(box),
    )
    assert "return 2 * (box.w + box.h)" in (applied.changes[0].new_text or "")


def test_the_same_code_as_now_is_a_refusal_that_says_so(box: Path) -> None:
    with pytest.raises(PatchError, match="same as the current code"):
        apply_answer(
            "```python\ndef perimeter(box):\n    return 2 * (box.w - box.h)\n```",
            box,
            shown=_shown_all(box),
        )


def test_a_class_with_all_its_members_replaces_the_class(box: Path) -> None:
    whole = SOURCE[SOURCE.index("class Box:") : SOURCE.index("\n\n\ndef perimeter")].replace(
        "w + self.h", "w * self.h"
    )
    whole = whole.replace("    def scale", "    unit = 1\n\n    def scale")
    new = (
        apply_answer(f"```python\n{whole}\n```", box, shown=_shown_all(box)).changes[0].new_text
        or ""
    )
    assert "    unit = 1\n" in new and "return self.w * self.h" in new


FILTERS = """class Base:
    pass


class Python(Base):
    def render(self, s):
        return repr(s)


class Php(Base):
    prefix = "$"

    def render(self, s):
        return s
"""


@pytest.mark.parametrize(
    "header, method_of",
    [("class Python:", "Python"), ("class Php(Base):", "Php"), ("class Php:", "Php")],
)
def test_a_class_wrapping_only_its_methods_keeps_its_bases_and_class_code(
    tmp_path: Path, header: str, method_of: str
) -> None:
    """A model writes ``class Name:`` (its bases left out) around the one method it changes; the
    class has only that method, yet the answer is that method, not the class: the base class and
    ``prefix = "$"`` stay (a real answer dropped both and broke every other method)."""
    (tmp_path / "filters.py").write_text(FILTERS)
    shown = [CodeSlice("filters.py", 1, 14, "<module>", FILTERS)]
    answer = f"```python\n{header}\n    def render(self, s):\n        return s.upper()\n```"
    new = apply_answer(answer, tmp_path, shown=shown).changes[0].new_text or ""
    expected = {
        "Python": FILTERS.replace("return repr(s)", "return s.upper()"),
        "Php": FILTERS.replace("        return s\n", "        return s.upper()\n"),
    }[method_of]
    assert new == expected


def test_a_partial_class_with_class_code_it_lacks_is_refused(box: Path) -> None:
    answer = (
        "```python\nclass Box:\n    unit = 1\n\n    def scale(self, k):\n        return "
        "Box(self.w * k, self.h)\n```"
    )
    with pytest.raises(PatchError, match="class code the class does not have"):
        apply_answer(answer, box, shown=_shown_all(box))


def test_a_definition_only_partly_shown_is_located_in_the_project_and_said_so(box: Path) -> None:
    partial = [CodeSlice("box.py", 4, 9, "Box", "")]  # area's def line shown, its body not
    applied = apply_answer("```python\ndef area(self):\n    return 0\n```", box, shown=partial)
    assert "        return 0\n" in (applied.changes[0].new_text or "")
    assert applied.located == ("box.py::Box.area (not in the prompt)",)


def test_crlf_file_keeps_crlf(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_bytes(b"def add(a, b):\r\n    return a - b\r\n")
    shown = [CodeSlice("calc.py", 1, 2, "add", "")]
    change = apply_answer(
        "```python\ndef add(a, b):\n    return a + b\n```", tmp_path, shown=shown
    ).changes[0]
    assert change.new_text == "def add(a, b):\r\n    return a + b\r\n"


def test_block_that_does_not_parse_is_named(box: Path) -> None:
    with pytest.raises(
        PatchError, match=r"code block at line 2 of the answer does not parse: .*its line 2"
    ):
        apply_answer("```python\ndef perimeter(box):\nreturn 1\n```", box, shown=_shown_all(box))


def test_an_unmarked_non_python_block_is_ignored(box: Path) -> None:
    answer = (
        "Run:\n```\n$ pytest -q\n1 failed\n```\n```python\ndef perimeter(box):\n    return 2 "
        "* (box.w + box.h)\n```"
    )
    assert apply_answer(answer, box, shown=_shown_all(box)).format == "whole_function"


# --- attacks
# ---------------------------------------------------------------------------------------


def test_attack_rewriting_the_failing_test_as_a_whole_function_is_refused_by_the_guards(
    tmp_path: Path,
) -> None:
    (tmp_path / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )
    shown = [
        CodeSlice("calc.py", 1, 2, "add", ""),
        CodeSlice("tests/test_calc.py", 4, 5, "test_add", "", read_only=True),
    ]
    cheat = "```python\ndef test_add():\n    assert add(2, 3) == -1\n```"
    applied = apply_answer(cheat, tmp_path, shown=shown)
    with pytest.raises(GuardError, match=r"tests/test_calc\.py"):
        check_guards(applied, tmp_path, GuardPolicy())


def test_attack_a_label_outside_the_project_is_refused(tmp_path: Path) -> None:
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (tmp_path / "outside.py").write_text("def add(a, b):\n    return a - b\n")
    with pytest.raises(GuardError):
        apply_answer(
            "../outside.py\n```python\ndef add(a, b):\n    return a + b\n```",
            root,
            shown=[CodeSlice("calc.py", 1, 2, "add", "")],
        )
    assert (tmp_path / "outside.py").read_text().endswith("a - b\n")


def test_attack_elision_hidden_in_a_nested_function_is_refused(box: Path) -> None:
    answer = (
        "```python\ndef perimeter(box):\n    def inner():\n        # ... existing code ...\n       "
        " return 0\n    return 2 * (box.w + box.h) + inner()\n```"
    )
    with pytest.raises(PatchError, match=r"elides code in box\.py"):
        apply_answer(answer, box, shown=_shown_all(box))


def test_attack_a_stub_replacing_a_shown_function_is_refused(box: Path) -> None:
    with pytest.raises(PatchError, match=r"`perimeter`.*only `\.\.\.` for a body"):
        apply_answer(
            '```python\ndef perimeter(box):\n    """Perimeter."""\n    ...\n```',
            box,
            shown=_shown_all(box),
        )


def test_attack_a_placeholder_after_the_last_statement_is_part_of_the_body(tmp_path: Path) -> None:
    """``ast`` ends a function at its last statement; the comment after it must still count, or the
    function would be replaced by its first lines and the rest silently lost."""
    (tmp_path / "calc.py").write_text(
        "def mean(values):\n    total = 0\n    for v in values:\n        total += v\n"
        "    return total / (len(values) - 1)\n"
    )
    answer = (
        "```python\ndef mean(values):\n    total = sum(values)\n    # ... rest of the "
        "function unchanged\n```"
    )
    with pytest.raises(PatchError, match="rest of the function unchanged"):
        apply_answer(answer, tmp_path, shown=[CodeSlice("calc.py", 1, 5, "mean", "")])


def test_under_its_file_s_path_a_function_not_shown_may_be_replaced(box: Path) -> None:
    """The prompt showed only perimeter; the answer fixes Box.area, naming box.py: that is no
    guess."""
    shown = [CodeSlice("box.py", 17, 18, "perimeter", "")]
    answer = (
        "box.py\n```python\nclass Box:\n    @property\n    def area(self):\n        return "
        "self.w * self.h\n```"
    )
    applied = apply_answer(answer, box, shown=shown)
    assert "return self.w * self.h" in (applied.changes[0].new_text or "") and applied.located == ()
    # The same without the path: the one Box of the project, located there and said so.
    located = apply_answer(answer.split("\n", 1)[1], box, shown=shown)
    assert located.changes == applied.changes and located.located == (
        "box.py::Box.area (not in the prompt)",
    )


PARSER = """class Parser:
    def findall(self, text):
        return []


def findall(pattern, text):
    return Parser().findall(text)
"""


@pytest.mark.parametrize(
    "signature, changed",
    [
        ("def findall(pattern, text):", "    return Parser().findall(text.lower())"),
        ("def findall(self, text):", "        return [text]"),
    ],
)
def test_a_bare_function_named_like_a_method_is_told_apart_by_self(
    tmp_path: Path, signature: str, changed: str
) -> None:
    """``findall`` is both a method and a module-level function: an answer's bare ``def`` with
    ``self`` first is the method, any other the function (a real answer was refused as
    ambiguous)."""
    (tmp_path / "parse.py").write_text(PARSER)
    shown = [CodeSlice("parse.py", 1, 7, "<module>", PARSER)]
    body = changed.strip()
    answer = f"parse.py\n```python\n{signature}\n    {body}\n```"
    new = apply_answer(answer, tmp_path, shown=shown).changes[0].new_text or ""
    assert changed + "\n" in new and new.count("def findall") == 2
