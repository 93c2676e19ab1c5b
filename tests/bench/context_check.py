"""Figure 13's pure parts: the reference fix as an answer, and whether a prompt shows the code.

No network, no subprocess: everything here works on source texts and prompt
texts, so ``tests/test_bench_figure.py`` tests it directly.

- ``whole_function_answer``: the reference fix as whole functions, each one's
  complete text from the fixed source (decorators included) in a ```python
  block under its file path, a method inside ``class Name:`` lines (README,
  "Answer formats"); None when an entry of ``fixed_functions`` is not a
  function in both versions (``<module>``, a class's own body, a new one).
- ``reference_diff``: the fix as a unified diff, for those cases.
- ``expected_lines`` and ``missing_from_prompt``: the in-prompt check. A fixed
  function is in a prompt when ONE fenced code block of the prompt holds its
  ``def``/``class`` line and every line of the buggy version that the fix
  changes, in file order, each compared with surrounding whitespace stripped
  and a line-number prefix (``  12 | ``) removed.
"""

from __future__ import annotations

import ast
import difflib
import re
from typing import Dict, List, Optional, Sequence, Tuple

MODULE_LEVEL = "<module>"
FUNCTION_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef)
DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
NUMBERED = re.compile(r"^\s*\d+\s?[|│] ?")  # "  12 | code": a line-numbered listing
FENCE = re.compile(r"^(`{3,}|~{3,})")

Scope = Tuple[int, int, int, str]  # first line (decorators), def/class line, last line, qualname


def scopes(source: str) -> List[Scope]:
    """Every def and class of ``source`` with its qualified name (``Class.method``,
    ``outer.inner``), as ``fixed_functions`` names them (fixtures/realbugs/README.md)."""
    found: List[Scope] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, DEF_TYPES):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                last = child.end_lineno or child.lineno
                found.append((first, child.lineno, last, prefix + child.name))
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source), "")
    return found


def enclosing(found: Sequence[Scope], line: int) -> str:
    """The qualified name of the innermost def or class holding ``line``, or ``<module>``."""
    inside = [s for s in found if s[0] <= line <= s[2]]
    return min(inside, key=lambda s: s[2] - s[0])[3] if inside else MODULE_LEVEL


def changed_lines(buggy: str, fixed: str) -> List[int]:
    """1-based lines of ``buggy`` that the fix (``buggy`` -> ``fixed``) replaces or deletes;
    where it only inserts, the last non-blank buggy line before the insertion."""
    old, new = buggy.splitlines(), fixed.splitlines()
    lines: List[int] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, _, _ in matcher.get_opcodes():
        if tag in ("replace", "delete"):
            lines += range(i1 + 1, i2 + 1)
        elif tag == "insert":
            anchor = i1
            while anchor > 0 and not old[anchor - 1].strip():
                anchor -= 1
            lines += [anchor] if anchor else []
    return sorted(set(lines))


def _owner(name: str, listed: Sequence[str]) -> Optional[str]:
    """The most specific listed qualname covering ``name`` (itself or an enclosing def/class)."""
    covering = [q for q in listed if name == q or name.startswith(q + ".")]
    return max(covering, key=len) if covering else None


def _header(found: Sequence[Scope], qualname: str) -> List[int]:
    """The def/class line of ``qualname``; for a definition the fix adds, that of the class it
    goes into (none for a new module-level one). Defined twice: the last, which Python keeps."""
    while qualname:
        lines = [s[1] for s in found if s[3] == qualname]
        if lines:
            return lines[-1:]
        qualname = qualname.rpartition(".")[0]
    return []


def expected_lines(buggy: str, fixed: str, listed: Sequence[str]) -> Dict[str, List[str]]:
    """Per listed qualname of one file: its ``def``/``class`` line in ``buggy`` (``_header``;
    none for ``<module>``) and the buggy lines the fix changes inside it (not blank ones), each
    once, in file order (a changed decorator comes before the ``def`` line)."""
    found = scopes(buggy)
    text = buggy.splitlines()
    numbers = {qualname: set(_header(found, qualname)) for qualname in listed}
    for line in changed_lines(buggy, fixed):
        owner = _owner(enclosing(found, line), listed)
        if owner is not None and text[line - 1].strip():
            numbers[owner].add(line)
    return {qualname: [text[n - 1] for n in sorted(lines)] for qualname, lines in numbers.items()}


def code_blocks(prompt: str) -> List[List[str]]:
    """The lines of every fenced code block of ``prompt``, line-number prefixes removed."""
    blocks: List[List[str]] = []
    current: Optional[List[str]] = None
    fence = ""
    for line in prompt.splitlines():
        opening = FENCE.match(line)
        if current is None and opening:
            current, fence = [], opening.group(1)
        elif current is not None and line.strip() == fence:
            blocks.append(current)
            current = None
        elif current is not None:
            current.append(NUMBERED.sub("", line, count=1))
    return blocks


def missing_from_prompt(prompt: str, needles: Sequence[str]) -> Optional[str]:
    """None when one code block of ``prompt`` holds every line of ``needles`` in order
    (whitespace around each line ignored); else the first needed line the closest block lacks."""
    want = [n.strip() for n in needles if n.strip()]
    best = 0
    for block in code_blocks(prompt):
        matched = 0
        for line in block:
            if matched < len(want) and line.strip() == want[matched]:
                matched += 1
        if matched == len(want):
            return None
        best = max(best, matched)
    return want[best] if want else None


# --- answers ------------------------------------------------------------------------------


def function_unit(tree: ast.Module, qualname: str) -> Optional[Tuple[List[ast.ClassDef], ast.AST]]:
    """The classes around, and the function, that a whole-function answer gives for
    ``qualname``: the first function on its path (a function nested in a function is part of
    it). None for a class's own body, ``<module>`` or a name the tree lacks."""
    body: Sequence[ast.stmt] = tree.body
    classes: List[ast.ClassDef] = []
    for part in qualname.split("."):
        named = [n for n in body if isinstance(n, DEF_TYPES) and n.name == part]
        if not named:
            return None
        node = named[-1]  # defined twice: the last definition is the one Python keeps
        if isinstance(node, FUNCTION_TYPES):
            return classes, node
        assert isinstance(node, ast.ClassDef)
        classes.append(node)
        body = node.body
    return None


def _function_text(source: str, classes: Sequence[ast.ClassDef], node: ast.AST) -> str:
    """The function's lines (decorators first) under a bare ``class Name:`` line per class."""
    assert isinstance(node, FUNCTION_TYPES)
    lines = source.splitlines()
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    wrappers = []
    for cls in classes:
        header = lines[cls.lineno - 1]
        wrappers.append(header[: len(header) - len(header.lstrip())] + f"class {cls.name}:")
    return "\n".join(wrappers + lines[first - 1 : node.end_lineno])


def whole_function_answer(
    fixed: Dict[str, str], buggy: Dict[str, str], entries: Sequence[str]
) -> Optional[str]:
    """The answer giving each function of ``entries`` (``path::qualname``) whole, from the
    ``fixed`` sources (by path); None when one is not a function in both ``fixed`` and
    ``buggy``."""
    blocks: List[str] = []
    for entry in entries:
        path, _, qualname = entry.partition("::")
        unit = function_unit(ast.parse(fixed[path]), qualname)
        if unit is None or function_unit(ast.parse(buggy[path]), qualname) is None:
            return None
        block = f"{path}\n```python\n{_function_text(fixed[path], *unit)}\n```"
        if block not in blocks:  # two entries nested in one function give it once
            blocks.append(block)
    return "Here are the corrected functions.\n\n" + "\n\n".join(blocks) + "\n"


def reference_diff(fixed: Dict[str, str], buggy: Dict[str, str]) -> str:
    """The fix as one fenced unified diff (``a/``, ``b/`` paths) from ``buggy`` to ``fixed``."""
    parts = []
    for path in sorted(fixed):
        old = (buggy[path].rstrip("\n") + "\n").splitlines(True)
        new = (fixed[path].rstrip("\n") + "\n").splitlines(True)
        parts.append("".join(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}")))
    return "```diff\n" + "".join(parts) + "```\n"
