"""The prompt text: system rules, the rendered context, and the structural retry thread."""

from __future__ import annotations

import pytest

from repairloop.propose.prompts import SYSTEM_PROMPT, render_context, render_messages
from repairloop.types import CodeSlice, Decision, Feedback, LastAttempt, RepairContext

SOURCE = CodeSlice("calc/lists.py", 10, 12, "last", "def last(xs):\n    return xs[len(xs)]\n")
TEST = CodeSlice("tests/test_lists.py", 4, 5, "test_last",
                 "def test_last():\n    assert last([1, 2]) == 2\n", read_only=True)
CONTEXT = RepairContext(
    failing_tests=("tests/test_lists.py::test_last", "tests/test_lists.py::test_last_single"),
    message="IndexError: list index out of range",
    traceback="calc/lists.py:11 in last\n    return xs[len(xs)]",
    slices=(SOURCE, TEST),
    other_failing=("tests/test_io.py::test_read",),
    notes=("trimmed: 2 slices",),
)
DIFF = "--- a/calc/lists.py\n+++ b/calc/lists.py\n@@ -11 +11 @@\n-    return xs[len(xs)]\n+    return xs[len(xs) - 2]\n"


def test_system_prompt_states_the_rules() -> None:
    text = SYSTEM_PROMPT.lower()
    for phrase in ("code under test", "read-only", "unified diff", "search/replace", "minimal",
                   "relative to the project root"):
        assert phrase in text, phrase
    assert len(SYSTEM_PROMPT) < 1500  # short: it is sent with every request


def test_messages_without_feedback_are_system_and_user() -> None:
    messages = render_messages(CONTEXT)
    assert messages == [{"role": "system", "content": SYSTEM_PROMPT},
                        {"role": "user", "content": render_context(CONTEXT)}]


def test_feedback_adds_the_rejected_answer_and_the_error() -> None:
    messages = render_messages(CONTEXT, Feedback(answer="use xs[-1]", error="no patch found in the answer"))
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "use xs[-1]"
    assert "could not be used: no patch found in the answer" in messages[3]["content"]


def test_context_shows_every_part_in_order() -> None:
    text = render_context(CONTEXT)
    order = ["## Failing tests", "tests/test_lists.py::test_last_single", "Also failing",
             "tests/test_io.py::test_read", "## Failure", "IndexError: list index out of range",
             "## Traceback (project frames only)", "calc/lists.py:11 in last", "## Code",
             "### calc/lists.py, lines 10-12 (last)", "```python\ndef last(xs):",
             "### tests/test_lists.py, lines 4-5 (test_last)", "## Notes", "- trimmed: 2 slices",
             "## Task"]
    positions = [text.index(part) for part in order]
    assert positions == sorted(positions)


def test_only_the_test_slice_is_marked_read_only() -> None:
    text = render_context(CONTEXT)
    assert text.count("READ-ONLY") == 1
    marker = text.index("READ-ONLY")
    assert text.index("### tests/test_lists.py") < marker < text.index("def test_last():")


def test_rendering_is_deterministic() -> None:
    assert render_context(CONTEXT) == render_context(CONTEXT)
    assert render_messages(CONTEXT) == render_messages(CONTEXT)


def test_empty_parts_are_left_out() -> None:
    bare = RepairContext(failing_tests=("t::x",), message="", traceback="", slices=())
    text = render_context(bare)
    for heading in ("## Failure", "## Traceback", "## Code", "## Last attempt", "## Notes", "Also failing"):
        assert heading not in text
    assert text.startswith("## Failing tests\n- t::x\n")


@pytest.mark.parametrize("last, expected", [
    (LastAttempt(DIFF, Decision.REVERTED, "broke a passing test", fixed=("t::a",), broke=("t::b",)),
     ["Tested and reverted", ": broke a passing test", "It fixed: t::a", "It broke: t::b"]),
    (LastAttempt(DIFF, Decision.REJECTED, "hunk 1 does not apply to calc/lists.py"),
     ["Rejected untested", ": hunk 1 does not apply to calc/lists.py"]),
    (LastAttempt(DIFF, Decision.KEPT, "fixed 1 test", fixed=("t::a",)),
     ["Kept", "build on it", "It fixed: t::a"]),
    (LastAttempt(DIFF, Decision.STAGNANT, "92% alike to iteration 1"),
     ["Not used (stagnant)", "92% alike"]),
], ids=["reverted", "rejected", "kept", "stagnant"])
def test_last_attempt_says_what_it_did(last: LastAttempt, expected: list) -> None:
    ctx = RepairContext(failing_tests=("t::a",), message="m", traceback="", slices=(SOURCE,), last_attempt=last)
    section = render_context(ctx).split("## Last attempt\n", 1)[1]
    for phrase in expected:
        assert phrase in section, phrase
    assert "```diff\n-    return xs[len(xs)]\n+    return xs[len(xs) - 2]\n```" in section
    assert "@@" not in section and "+++" not in section  # only the changed lines: the code above is current


def test_last_attempt_does_not_repeat_the_failure_shown_above() -> None:
    last = LastAttempt(DIFF, Decision.REVERTED, "fixed none of the 1 failing test(s): AssertionError: assert 1 == 2")
    ctx = RepairContext(failing_tests=("t::a",), message="AssertionError: assert 1 == 2\n  where 1 = f()",
                        traceback="", slices=(SOURCE,), last_attempt=last)
    section = render_context(ctx).split("## Last attempt\n", 1)[1]
    assert ": fixed none of the 1 failing test(s).\n" in section and "assert 1 == 2" not in section
    other = RepairContext(failing_tests=("t::a",), message="KeyError: 'x'", traceback="", slices=(SOURCE,),
                          last_attempt=last)
    assert "assert 1 == 2" in render_context(other)  # a different failure is worth saying


def test_backticks_in_text_cannot_close_the_fence() -> None:
    tricky = CodeSlice("README.md", 1, 3, "", "text\n```\nmore ```` text\n")
    ctx = RepairContext(failing_tests=("t::a",), message="m", traceback="", slices=(tricky,))
    text = render_context(ctx)
    assert "`````\ntext\n```\nmore ```` text\n`````" in text
