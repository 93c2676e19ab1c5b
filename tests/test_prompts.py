"""The prompt text: system rules, the rendered context, and the structural retry thread."""

from __future__ import annotations

from dataclasses import replace

import pytest

from repairloop.propose.prompts import SYSTEM_PROMPT, render_context, render_messages
from repairloop.types import CodeSlice, Decision, Feedback, LastAttempt, RepairContext

SOURCE = CodeSlice("calc/lists.py", 10, 12, "last", "def last(xs):\n    return xs[len(xs)]\n")
TEST = CodeSlice(
    "tests/test_lists.py",
    4,
    5,
    "test_last",
    "def test_last():\n    assert last([1, 2]) == 2\n",
    read_only=True,
)
CONTEXT = RepairContext(
    failing_tests=("tests/test_lists.py::test_last", "tests/test_lists.py::test_last_single"),
    message="IndexError: list index out of range",
    traceback="calc/lists.py:11 in last\n    return xs[len(xs)]",
    slices=(SOURCE, TEST),
    other_failing=("tests/test_io.py::test_read",),
    notes=("trimmed: 2 slices",),
)
DIFF = (
    "--- a/calc/lists.py\n+++ b/calc/lists.py\n@@ -11 +11 @@\n-    return xs[len(xs)]\n+    "
    "return xs[len(xs) - 2]\n"
)


def test_system_prompt_states_the_rules() -> None:
    text = SYSTEM_PROMPT.lower()
    for phrase in (
        "code under test",
        "read-only",
        "unified diff",
        "search/replace",
        "minimal",
        "relative to the project root",
    ):
        assert phrase in text, phrase
    assert len(SYSTEM_PROMPT) < 1500  # short: it is sent with every request


def test_messages_without_feedback_are_system_and_user() -> None:
    messages = render_messages(CONTEXT)
    assert messages == [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": render_context(CONTEXT)},
    ]


def test_feedback_adds_the_rejected_answer_and_the_error() -> None:
    messages = render_messages(
        CONTEXT, Feedback(answer="use xs[-1]", error="no patch found in the answer")
    )
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == "use xs[-1]"
    assert "could not be used: no patch found in the answer" in messages[3]["content"]


def test_context_shows_every_part_in_order() -> None:
    text = render_context(CONTEXT)
    order = [
        "## Failing tests",
        "tests/test_lists.py::test_last_single",
        "Also failing",
        "tests/test_io.py::test_read",
        "## Failure",
        "IndexError: list index out of range",
        "## Traceback (project frames only)",
        "calc/lists.py:11 in last",
        "## Code",
        "### calc/lists.py, lines 10-12 (last)",
        "```python\ndef last(xs):",
        "### tests/test_lists.py, lines 4-5 (test_last)",
        "## Notes",
        "- trimmed: 2 slices",
        "## Task",
    ]
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
    for heading in (
        "## Failure",
        "## Traceback",
        "## Code",
        "## Last attempt",
        "## Notes",
        "Also failing",
    ):
        assert heading not in text
    assert text.startswith("## Failing tests\n- t::x\n")


@pytest.mark.parametrize(
    "last, expected",
    [
        (
            LastAttempt(
                DIFF, Decision.REVERTED, "broke a passing test", fixed=("t::a",), broke=("t::b",)
            ),
            [
                "## Last attempt (reverted)\n",
                ": broke a passing test",
                "It fixed: t::a",
                "It broke: t::b",
            ],
        ),
        (
            LastAttempt(DIFF, Decision.REJECTED, "hunk 1 does not apply to calc/lists.py"),
            ["(rejected untested)", ": hunk 1 does not apply to calc/lists.py"],
        ),
        (
            LastAttempt(DIFF, Decision.KEPT, "fixed 1 test", fixed=("t::a",)),
            ["(kept: it is in the code above; build on it)", "It fixed: t::a"],
        ),
        (
            LastAttempt(DIFF, Decision.STAGNANT, "92% alike to iteration 1"),
            ["(not used: stagnant)", "92% alike"],
        ),
    ],
    ids=["reverted", "rejected", "kept", "stagnant"],
)
def test_last_attempt_says_what_it_did(last: LastAttempt, expected: list) -> None:
    ctx = RepairContext(
        failing_tests=("t::a",), message="m", traceback="", slices=(SOURCE,), last_attempt=last
    )
    section = render_context(ctx).split("## Task", 1)[0].split("\n\n")[-2]
    for phrase in expected:
        assert phrase in section, phrase
    assert "`xs[len(xs)]` → `xs[len(xs) - 2]`" in section  # a one-line change, shown in place
    assert "@@" not in section and "+++" not in section and "```" not in section


def test_a_one_line_change_names_its_line_when_the_text_recurs() -> None:
    source = CodeSlice(
        "calc/lists.py", 10, 12, "last", "def last(xs):\n    n = len(xs)\n    return xs[n]\n"
    )
    diff = (
        "--- a/calc/lists.py\n+++ b/calc/lists.py\n@@ -11,2 +11,2 @@\n     n = len(xs)\n-    "
        "return xs[n]\n+    return xs[n - 1]\n"
    )
    last = LastAttempt(
        diff,
        Decision.REVERTED,
        "fixed none of the 1 failing test(s): IndexError: list index out of range",
    )
    ctx = RepairContext(
        failing_tests=("t::a",), message="m", traceback="", slices=(source,), last_attempt=last
    )
    # `n` alone recurs in the line, so the span widens to `xs[n]`; that occurs once in the code
    # shown
    assert "\n`xs[n]` → `xs[n - 1]`: IndexError: list index out of range\n" in render_context(ctx)
    twice = CodeSlice(
        "calc/lists.py", 10, 12, "last", "def last(xs):\n    xs[n]\n    return xs[n]\n"
    )
    ctx = RepairContext(
        failing_tests=("t::a",), message="m", traceback="", slices=(twice,), last_attempt=last
    )
    assert "\nLine 12, `xs[n]` → `xs[n - 1]`: " in render_context(ctx)


@pytest.mark.parametrize(
    "diff",
    [
        # two lines
        "--- a/calc/lists.py\n+++ b/calc/lists.py\n@@ -10,2 +10,2 @@\n-a = 1\n-b = 2\n+a = 2\n+b = "
        "1\n",
        # whitespace only
        "--- a/calc/lists.py\n+++ b/calc/lists.py\n@@ -11 +11 @@\n-x = 1\n+    x = 1\n",
        # backticks
        "--- a/calc/lists.py\n+++ b/calc/lists.py\n@@ -11 +11 @@\n-x = `a`\n+x = `b`\n",
    ],
    ids=["two-lines", "whitespace", "backticks"],
)
def test_other_changes_are_shown_as_their_changed_lines(diff: str) -> None:
    last = LastAttempt(diff, Decision.REVERTED, "broke a passing test")
    ctx = RepairContext(
        failing_tests=("t::a",), message="m", traceback="", slices=(SOURCE,), last_attempt=last
    )
    changed = "\n".join(line for line in diff.splitlines()[3:])
    assert f"```diff\n{changed}\n```" in render_context(ctx) and "→" not in render_context(ctx)


def test_last_attempt_does_not_repeat_the_failure_shown_above() -> None:
    last = LastAttempt(
        DIFF,
        Decision.REVERTED,
        "fixed none of the 1 failing test(s): AssertionError: assert 1 == 2",
    )
    ctx = RepairContext(
        failing_tests=("t::a",),
        message="AssertionError: assert 1 == 2\n  where 1 = f()",
        traceback="",
        slices=(SOURCE,),
        last_attempt=last,
    )
    section = render_context(ctx).split("## Last attempt", 1)[1]
    assert "`xs[len(xs) - 2]`: the same failure\n" in section and "assert 1 == 2" not in section
    other = RepairContext(
        failing_tests=("t::a",),
        message="KeyError: 'x'",
        traceback="",
        slices=(SOURCE,),
        last_attempt=last,
    )
    # a different failure is worth saying
    assert "`xs[len(xs) - 2]`: assert 1 == 2\n" in render_context(other)


def test_the_last_attempt_says_how_the_failure_changed() -> None:
    """After a wrong answer the prompt says whether the failure stayed as it was or changed, with
    the new one's type, message and the project frame it now fails in; the old one is repeated
    only when the Failure section does not show it (the candidate was kept)."""
    from repairloop.types import FailureSnapshot

    was = FailureSnapshot("t::a", "IndexError", "list index out of range", ("calc/lists.py:11",))
    now = FailureSnapshot(
        "t::a", "TypeError", "unsupported operand", ("calc/lists.py:11", "calc/lists.py:4 in f")
    )
    reason = "fixed none of the 1 failing test(s): TypeError: unsupported operand"
    same = LastAttempt(DIFF, Decision.REVERTED, reason, before=(was,), after=(was,))
    changed = replace(same, after=(now,))
    section = render_context(replace(CONTEXT, last_attempt=same)).split("## Last attempt", 1)[1]
    assert "fixed none of the 1 failing test(s): the same failure" in section
    section = render_context(replace(CONTEXT, last_attempt=changed)).split("## Last attempt", 1)[1]
    assert (
        "fixed none of the 1 failing test(s), now failing with TypeError: unsupported operand "
        "at calc/lists.py:4 in f\n"
    ) in section
    assert "before it" not in section  # the Failure section above shows the IndexError
    moved = replace(CONTEXT, message="ValueError: other", last_attempt=changed)
    section = render_context(moved).split("## Last attempt", 1)[1]
    assert "(before it: IndexError: list index out of range)" in section


def test_a_one_line_attempt_adds_under_ten_percent_to_a_small_prompt() -> None:
    """Issue 2's flatness target, at the unit level: the last attempt is the only growth after
    iteration 1."""
    from repairloop.propose.litellm_env import count_tokens

    last = LastAttempt(
        DIFF,
        Decision.REVERTED,
        "fixed none of the 2 failing test(s): AssertionError: assert [2] == 2",
    )
    first = "".join(m["content"] for m in render_messages(CONTEXT))
    later = "".join(m["content"] for m in render_messages(replace(CONTEXT, last_attempt=last)))
    assert count_tokens("openai/gpt-4o-mini", later) <= 1.10 * count_tokens(
        "openai/gpt-4o-mini", first
    )


def test_backticks_in_text_cannot_close_the_fence() -> None:
    tricky = CodeSlice("README.md", 1, 3, "", "text\n```\nmore ```` text\n")
    ctx = RepairContext(failing_tests=("t::a",), message="m", traceback="", slices=(tricky,))
    text = render_context(ctx)
    assert "`````\ntext\n```\nmore ```` text\n`````" in text


def test_a_kept_change_outside_the_code_shown_is_named_not_pointed_at() -> None:
    """Seen on a real project: after a kept partial fix the prompt said "kept: it is in the code
    above" about a function the prompt did not show. Only code that is shown may be pointed at."""
    elsewhere = (
        "--- a/calc/parse.py\n+++ b/calc/parse.py\n@@ -6 +6 @@\n-    return float(text)\n"
        "+    return float(text.replace(',', ''))\n"
    )
    kept = LastAttempt(
        elsewhere, Decision.KEPT, "fixed 2 test(s), broke none; 1 still failing", fixed=("t::b",)
    )
    section = render_context(replace(CONTEXT, last_attempt=kept)).split("## Last attempt", 1)[1]
    assert (
        section.startswith(" (kept: it is applied; build on it)\n") and "code above" not in section
    )
    assert "In calc/parse.py line 6, `float(text)` → `float(text.replace(',', ''))`" in section
    two_lines = elsewhere.replace("@@ -6 +6 @@", "@@ -6,2 +6,2 @@") + "-    x = 1\n+    x = 2\n"
    kept = replace(kept, diff=two_lines)
    section = render_context(replace(CONTEXT, last_attempt=kept)).split("## Last attempt", 1)[1]
    assert "code above" not in section and "```diff\n# calc/parse.py\n" in section
    here = LastAttempt(DIFF, Decision.KEPT, "fixed 1 test(s), broke none; 1 still failing")
    shown = render_context(replace(CONTEXT, last_attempt=here))
    assert "(kept: it is in the code above; build on it)" in shown


def test_the_retry_points_at_code_only_when_code_was_shown() -> None:
    feedback = Feedback(answer="use xs[-1]", error="no patch found in the answer")
    assert "shown in the first message" in render_messages(CONTEXT, feedback)[3]["content"]
    bare = replace(CONTEXT, slices=())
    retry = render_messages(bare, feedback)[3]["content"]
    assert (
        "shown" not in retry
        and "against the current code of the files named in the first message" in retry
    )
