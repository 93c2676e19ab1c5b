"""Mutation operators of the builtin engine: each family gives a minimal one-line edit.

Every test mutates a real snippet, applies the edit to the text and checks
that exactly the expected line changed (and, where it matters, that the
replaced span is only the node or token the operator targets).
"""

from __future__ import annotations

import difflib
import textwrap
from typing import List, Tuple

import pytest

from repairloop.propose.builtin.edits import Edit, apply_edits, unified_diff
from repairloop.propose.builtin.mutate import mutate_source
from repairloop.propose.builtin.mutation import Mutation


def changed_lines(old: str, new: str) -> Tuple[List[str], List[str]]:
    """(removed lines, added lines) between two texts."""
    removed, added = [], []
    for line in difflib.ndiff(old.splitlines(), new.splitlines()):
        if line.startswith("- "):
            removed.append(line[2:])
        elif line.startswith("+ "):
            added.append(line[2:])
    return removed, added


def find(code: str, line: int, operator: str, new_line: str) -> Mutation:
    """The mutation of ``operator`` on ``line`` that turns that line into ``new_line``.

    Fails unless that edit changes exactly one line (or inserts/deletes one).
    """
    text = textwrap.dedent(code)
    seen = []
    for mutation in mutate_source("m.py", text, line):
        if mutation.operator != operator:
            continue
        new = apply_edits(text, [mutation.edit])
        compile(new, "m.py", "exec")
        removed, added = changed_lines(text, new)
        seen.append((removed, added))
        if (added == [new_line] and len(removed) <= 1) or (removed == [new_line] and not added):
            return mutation
    raise AssertionError(f"no {operator} mutation gives {new_line!r}; got {seen}")


def span_text(code: str, mutation: Mutation) -> str:
    return textwrap.dedent(code)[mutation.start : mutation.end]


SEARCH = """\
def search(xs, target):
    lo, hi = 0, len(xs) - 1
    while lo < hi:
        mid = (lo + hi) // 2
        if xs[mid] < target:
            lo = mid + 1
        else:
            hi = mid
    return lo
"""


def test_comparison_changes_only_the_operator_token() -> None:
    m = find(SEARCH, 3, "comparison", "    while lo <= hi:")
    assert span_text(SEARCH, m) == "<"
    assert m.replacement == "<="


def test_arithmetic_operator_and_augmented_assignment() -> None:
    code = "def f(a, b, g):\n    n = 0\n    n += a * b % g\n    return n\n"
    m = find(code, 3, "arithmetic", "    n += a * b // g")
    assert span_text(code, m) == "%"
    find(code, 3, "arithmetic", "    n -= a * b % g")


def test_bitwise_operator() -> None:
    code = "def p(n):\n    return n > 0 and (n | (n - 1)) == 0\n"
    m = find(code, 2, "bitwise", "    return n > 0 and (n & (n - 1)) == 0")
    assert span_text(code, m) == "|"


def test_boolean_operator() -> None:
    code = "def leap(y):\n    return y % 4 == 0 and y % 100 != 0 and y % 400 == 0\n"
    find(code, 2, "boolean_operator", "    return y % 4 == 0 and y % 100 != 0 or y % 400 == 0")


def test_numeric_literal_by_one() -> None:
    code = "def shift(c, k):\n    return chr((ord(c) - 97 + k) % 25 + 97)\n"
    m = find(code, 2, "literal_off_by_one", "    return chr((ord(c) - 97 + k) % 26 + 97)")
    assert span_text(code, m) == "25"


def test_literal_by_one_skips_identity_operands() -> None:
    code = "def f(xs):\n    return xs[-len(xs) - 1:]\n"
    texts = [
        m.replacement for m in mutate_source("m.py", code, 2) if m.operator == "literal_off_by_one"
    ]
    assert "0" not in texts  # `x - 0` is sub_expression's `x`, written more cleanly
    find(code, 2, "sub_expression", "    return xs[-len(xs):]")


@pytest.mark.parametrize(
    "code, line, new_line",
    [
        ("def k(xs, k):\n    return sorted(xs)[k]\n", 2, "    return sorted(xs)[k - 1]"),
        (
            "def m(s, n):\n    return s[n // 2 - 1:n // 2]\n",
            2,
            "    return s[n // 2 - 1:n // 2 + 1]",
        ),
        (
            "def p(n):\n    return [i for i in range(2, n)]\n",
            2,
            "    return [i for i in range(2, n + 1)]",
        ),
        ("def d(path):\n    return len(path)\n", 2, "    return len(path) - 1"),
        (
            "def w(i, j, up):\n    return xs[i if up else j]\n",
            2,
            "    return xs[(i if up else j) + 1]",
        ),
        (
            "def search(xs, mid, end):\n    return search(xs, mid, end)\n",
            2,
            "    return search(xs, mid + 1, end)",
        ),
        (
            "def l(dp, i, j):\n    dp[i, j] = dp[i - 1, j] + 1\n",
            2,
            "    dp[i, j] = dp[i - 1, j - 1] + 1",
        ),
        (
            "def n(ds):\n    return [1] + len(ds) * [0] + [1]\n",
            2,
            "    return [1] + (len(ds) - 1) * [0] + [1]",
        ),
    ],
    ids=[
        "index",
        "slice-bound",
        "range-argument",
        "return-value",
        "parenthesised",
        "call-argument",
        "tuple-index",
        "len",
    ],
)
def test_add_or_subtract_one(code: str, line: int, new_line: str) -> None:
    find(code, line, "off_by_one", new_line)


def test_negate_and_unnegate_a_condition() -> None:
    code = (
        "def c(seen, v, x):\n    if seen[v]:\n        return 1\n    if not x:\n        return 2\n"
    )
    m = find(code, 2, "negate_condition", "    if not seen[v]:")
    assert (m.start, m.end, m.replacement) == (m.start, m.start, "not ")  # an insertion only
    find(code, 4, "negate_condition", "    if x:")


def test_negating_a_boolean_operation_keeps_its_meaning() -> None:
    code = "def c(a, b):\n    while a or b:\n        pass\n"
    find(code, 2, "negate_condition", "    while not (a or b):")


def test_swap_operands_of_a_non_commutative_operator() -> None:
    code = "def r(xs, lo, hi):\n    return left(xs, lo) - right(xs, hi)\n"
    find(code, 2, "swap_operands", "    return right(xs, hi) - left(xs, lo)")


def test_swap_operands_adds_parentheses_when_precedence_needs_them() -> None:
    code = "def r(a, b, c):\n    return a - b - c\n"
    m = find(code, 2, "swap_operands", "    return c - (a - b)")
    assert m.replacement == "c - (a - b)"


def test_swap_operands_of_a_concatenation() -> None:
    code = "def to_base(n, alphabet, i):\n    result = result + alphabet[i]\n"
    find(code, 2, "swap_operands", "    result = alphabet[i] + result")


def test_swap_call_arguments() -> None:
    code = (
        "def s(xs):\n    out = []\n    for x in xs:\n        insert_sorted(x, out)\n    return "
        "out\n"
    )
    m = find(code, 4, "swap_arguments", "        insert_sorted(out, x)")
    assert span_text(code, m) == "x, out"


def test_wrong_variable_from_the_same_scope() -> None:
    code = """\
    def sort(xs):
        for i in range(len(xs)):
            smallest = i
            for j in range(i + 1, len(xs)):
                if xs[j] < xs[i]:
                    smallest = j
        return xs
    """
    m = find(code, 5, "wrong_variable", "            if xs[j] < xs[smallest]:")
    assert span_text(code, m) == "i"


def test_wrong_variable_tries_similar_and_same_statement_names_first() -> None:
    code = """\
    def egcd(a, b):
        old_s, s = 1, 0
        old_t, t = 0, 1
        zeta = 0
        while b:
            q = a // b
            old_t, t = t, old_t - q * s
        return zeta
    """
    order = [
        m.replacement
        for m in mutate_source("m.py", textwrap.dedent(code), 7)
        if m.operator == "wrong_variable" and span_text(code, m) == "s" and m.start > 100
    ]
    assert order[0] == "t"  # one letter apart and in the same statement
    assert order.index("t") < order.index("zeta")


def test_wrong_variable_ignores_builtins_and_functions() -> None:
    code = "def f(xs):\n    return len(xs)\n"
    replaced = {
        span_text(code, m) for m in mutate_source("m.py", code, 2) if m.operator == "wrong_variable"
    }
    assert "len" not in replaced


def test_wrong_attribute_from_the_same_receiver() -> None:
    code = """\
    def insert(root, key):
        if key < root.key:
            root.left = insert(root.left, key)
        else:
            root.right = insert(root.left, key)
        return root
    """
    m = find(code, 5, "wrong_attribute", "        root.right = insert(root.right, key)")
    assert span_text(code, m) == "left"


def test_wrong_attribute_from_another_receiver_in_the_file() -> None:
    code = """\
    def order(nodes, done):
        for node in nodes:
            if node.incoming_nodes:
                pass
            for nxt in node.outgoing_nodes:
                if done.issuperset(nxt.outgoing_nodes):
                    pass
    """
    find(code, 6, "wrong_attribute", "            if done.issuperset(nxt.incoming_nodes):")


def test_a_data_attribute_is_never_swapped_for_a_special_one() -> None:
    # The engine's wrong plausible patch on pyflakes-print-augmented-assign (figure 16):
    # ``self.handleNodeLoad(node.target)`` became ``self.handleNodeLoad(node.__class__)``.
    code = """\
    def visit(self, node):
        name = node.__class__.__name__
        self.load(node.target)
        self.walk(node.value)
    """
    text = textwrap.dedent(code)
    swapped = [
        span_text(code, m)
        for m in mutate_source("m.py", text, 3)
        if m.operator == "wrong_attribute" and "__" in m.edit.replacement
    ]
    assert swapped == []
    find(code, 3, "wrong_attribute", "    self.load(node.value)")  # a data attribute still is


@pytest.mark.parametrize(
    "code, line, new_line",
    [
        ("def b(best, c):\n    return min(best, c)\n", 2, "    return max(best, c)"),
        (
            "def s(xs):\n    return any(a <= b for a, b in zip(xs, xs[1:]))\n",
            2,
            "    return all(a <= b for a, b in zip(xs, xs[1:]))",
        ),
        ("def p(w):\n    return w.startswith('x')\n", 2, "    return w.endswith('x')"),
        (
            "def lower(xs, x):\n    return 0\n\n\ndef upper(xs, x):\n    return 1\n\n\n"
            "def count(xs, x):\n    return lower(xs, x) - lower(xs, x)\n",
            10,
            "    return upper(xs, x) - lower(xs, x)",
        ),
    ],
    ids=["min-max", "any-all", "method", "same-file-arity"],
)
def test_wrong_function(code: str, line: int, new_line: str) -> None:
    find(code, line, "wrong_function", new_line)


def test_identical_operands_raise_the_prior() -> None:
    code = (
        "def below(xs, x):\n    return 0\n\n\ndef above(xs, x):\n    return 1\n\n\n"
        "def count(xs, x):\n    return below(xs, x) - below(xs, x)\n\n\n"
        "def other(xs, x):\n    return below(xs, x) - above(xs, x)\n"
    )
    smelly = find(code, 10, "wrong_function", "    return above(xs, x) - below(xs, x)")
    plain = find(code, 14, "wrong_function", "    return above(xs, x) - above(xs, x)")
    assert smelly.prior == pytest.approx(2 * plain.prior)


def test_same_file_function_needs_equal_arity() -> None:
    code = (
        "def one(a):\n    return a\n\n\ndef two(a, b):\n    return b\n\n\ndef use(x):\n    "
        "return one(x)\n"
    )
    names = {
        m.replacement for m in mutate_source("m.py", code, 10) if m.operator == "wrong_function"
    }
    assert "two" not in names


def test_sub_expression() -> None:
    code = "def v(xs, s):\n    return s / (len(xs) - 1)\n"
    m = find(code, 2, "sub_expression", "    return s / (len(xs))")
    assert span_text(code, m) == "len(xs) - 1"


def test_sub_expression_unwraps_a_single_argument_call() -> None:
    code = "def flatten(xs):\n    for x in xs:\n        yield flatten(x)\n"
    find(code, 3, "sub_expression", "        yield x")


def test_sub_expression_parenthesises_a_looser_part() -> None:
    code = "def f(a, b, c):\n    return x - (a + b) * c\n"
    find(code, 2, "sub_expression", "    return x - (a + b)")


@pytest.mark.parametrize(
    "code, new_line",
    [
        ("def f():\n    result = []\n", "    result = [[]]"),
        ("def f():\n    return False\n", "    return True"),
        ("def f():\n    return None\n", "    return 0"),
        ("def f():\n    best = float('inf')\n", "    best = float('-inf')"),
        ("def f(queue):\n    while True:\n        queue.pop()\n", "    while queue:"),
    ],
    ids=["empty-list", "bool", "none", "inf", "constant-condition"],
)
def test_literal_change(code: str, new_line: str) -> None:
    find(code, 2, "literal", new_line)


def test_delete_statement() -> None:
    code = "def t(nums):\n    seen = {}\n    nums = sorted(nums)\n    return seen\n"
    m = find(code, 3, "delete_statement", "    nums = sorted(nums)")
    assert m.replacement == ""


def test_delete_only_statement_of_a_block_leaves_pass() -> None:
    code = "def t(x):\n    if x:\n        x = 1\n    return x\n"
    find(code, 3, "delete_statement", "        pass")


def test_insert_a_copy_of_a_nearby_statement_with_the_target_indentation() -> None:
    code = """\
    def bubble(xs):
        swapped = True
        while swapped:
            swapped = False
            for i in range(len(xs) - 1):
                if xs[i] > xs[i + 1]:
                    xs[i], xs[i + 1] = xs[i + 1], xs[i]
        return xs
    """
    m = find(code, 7, "insert_statement", "                swapped = True")
    assert m.start == m.end  # a pure insertion


def test_no_roundabout_mutants() -> None:
    code = "def v(xs, s, nums):\n    nums = sorted(nums)\n    return s / (len(xs) - 1)\n"
    texts = {
        apply_edits(code, [m.edit]) for line in (2, 3) for m in mutate_source("m.py", code, line)
    }
    assert not any("nums = nums" in t for t in texts)  # delete_statement says it cleanly
    assert not any("len(xs) + 1 - 1" in t or "len(xs) - 1 - 1" in t for t in texts)  # literal's job


def test_call_arguments_of_library_functions_are_left_alone() -> None:
    code = "def f(xs, k):\n    return xs.pop(k)\n"
    assert not [
        m for m in mutate_source("m.py", code, 2) if m.description.startswith("call argument")
    ]


def test_a_copy_that_updates_the_loop_condition_ranks_first() -> None:
    code = """\
    def drain(items):
        done = False
        count = 0
        while not done:
            count += 1
            item = items.pop()
    """
    inserts = [
        m
        for m in mutate_source("m.py", textwrap.dedent(code), 6)
        if m.operator == "insert_statement"
    ]
    best = max(inserts, key=lambda m: m.prior)
    assert best.replacement.strip() == "done = False"  # the only donor that assigns `done`
    assert best.prior > inserts[-1].prior


def test_columns_are_characters_not_bytes() -> None:
    code = 'def f(x, y):\n    return "é€" if x < y else "ü"\n'
    m = find(code, 2, "comparison", '    return "é€" if x <= y else "ü"')
    assert span_text(code, m) == "<"


def test_same_input_gives_the_same_mutations_in_the_same_order() -> None:
    first = mutate_source("m.py", SEARCH, 5) + mutate_source("m.py", SEARCH, 2)
    second = mutate_source("m.py", SEARCH, 5) + mutate_source("m.py", SEARCH, 2)
    assert first == second
    assert len({(m.start, m.end, m.replacement) for m in first}) == len(first)  # no duplicates


def test_every_mutation_of_a_program_compiles_or_is_caught_by_the_compile_check() -> None:
    text = SEARCH
    for line in range(1, 10):
        for m in mutate_source("m.py", text, line):
            new = apply_edits(text, [m.edit])
            assert new != text
            compile(new, "m.py", "exec")


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(ValueError):
        apply_edits("abcdef", [Edit("m.py", 0, 3, "x"), Edit("m.py", 2, 4, "y")])


def test_diff_marks_a_missing_final_newline() -> None:
    diff = unified_diff("m.py", "a = 1\nb = 2", "a = 1\nb = 3")
    assert diff.startswith("--- a/m.py\n+++ b/m.py\n")
    assert "+b = 3\n\\ No newline at end of file\n" in diff
