"""From suspicious lines to suspicious functions: what the prompt shows, most suspicious first.

A line belongs to the outermost function or method whose body holds it (a
nested function is part of the function that defines it), to its class when
it is in a class body outside any method, and to ``<module>`` otherwise: a
``def`` line (and its decorators) runs when the enclosing scope runs, at
import for a top-level function, so it is the enclosing scope's. A function's
score is its most suspicious line's (Ochiai's ``max`` rule: one faulty line
makes the function faulty); ties go to the line nearest a failing frame, then
to the function whose name shares more words with the failing tests' names,
docstrings and comments (``test_header_and_paragraph_...`` and
``HashHeaderProcessor.run``: a test names what it tests), then path and
position, so the ranking is deterministic.
"""

from __future__ import annotations

import ast
import re
from typing import Dict, FrozenSet, List, Mapping, Optional, Sequence, Tuple

from repairloop.types import LineKey, Suspect, SuspectFunction

Span = Tuple[
    str, int, int, int, str
]  # (qualified name, first line, last line, first body line, kind)


_COMMON_WORDS = frozenset(
    {"test", "tests", "self", "the", "and", "not", "for", "with", "get", "set"}
)


def _words(text: str) -> FrozenSet[str]:
    """The words of identifiers in ``text``, split at ``_``, dots and case changes, lower case, of
    at least three letters, common ones left out, a final ``ed``, ``s`` and ``e`` cut from words of
    five letters or more (``headers`` and ``header`` meet, ``compile`` and ``recompiled`` share
    ``compil``): what a test's name and a function's name are compared by."""
    found = set()
    for part in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", text):
        word = part.lower()
        for ending in ("ed", "s", "e"):
            if len(word) > 4 and word.endswith(ending):
                word = word[: -len(ending)]
        if len(word) >= 3 and word not in _COMMON_WORDS:
            found.add(word)
    return frozenset(found)


def _said(word: str, named: FrozenSet[str]) -> bool:
    """Whether ``word`` of a function's name is one of the tests' words, or, from five letters on,
    part of one (``compil`` in ``recompil``)."""
    return word in named or (len(word) >= 5 and any(word in other for other in named))


def definition_spans(text: str) -> List[Span]:
    """Every function, method and class of a module's ``text``: (qualified name, first line with
    decorators, last line, first line of its body, ``function`` or ``class``), outer before inner;
    [] when it does not parse."""
    return spans_of(parsed(text))


def parsed(text: str) -> Optional[ast.Module]:
    """A module's ``text`` parsed, or None when it does not parse."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def spans_of(tree: Optional[ast.Module]) -> List[Span]:
    """``definition_spans`` of a parsed module (None: [])."""
    if tree is None:
        return []
    spans: List[Span] = []

    def walk(nodes: Sequence[ast.stmt], prefix: str) -> None:
        for node in nodes:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                first = min([node.lineno] + [d.lineno for d in node.decorator_list])
                name = f"{prefix}{node.name}"
                kind = "class" if isinstance(node, ast.ClassDef) else "function"
                spans.append(
                    (name, first, node.end_lineno or node.lineno, node.body[0].lineno, kind)
                )
                walk(node.body, name + ".")

    walk(tree.body, "")
    return spans


def owner(spans: Sequence[Span], line: int) -> Optional[Span]:
    """The definition ``line`` is suspected in (None: module level): the outermost function whose
    body holds it, so that a nested function (a closure, a ``key=`` helper) is ranked and shown as
    part of the function that defines it (the unit a whole-function answer replaces, README
    "Answer formats"); else the innermost class whose body holds it."""
    holding = sorted((s for s in spans if s[3] <= line <= s[2]), key=lambda s: s[1] - s[2])
    functions = [s for s in holding if s[4] == "function"]
    return functions[0] if functions else (holding[-1] if holding else None)


def rank_functions(
    suspects: Sequence[Suspect],
    sources: Mapping[str, str],
    ran_by: Mapping[LineKey, FrozenSet[str]],
    failing: Sequence[str] = (),
    described: str = "",
) -> Tuple[SuspectFunction, ...]:
    """The functions holding ``suspects`` (most suspicious first, see the module docstring);
    ``sources`` are the project's non-test files, ``ran_by`` the failing tests that ran each suspect
    line, ``failing`` their ids and ``described`` what the tests say they test (their docstrings and
    comments, ``ochiai.described_by_tests``): their words break what ties remain (``_words``)."""
    spans: Dict[str, List[Span]] = {}
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    order: Dict[Tuple[str, str], Tuple[float, int]] = {}
    for suspect in suspects:
        if suspect.path not in spans:
            spans[suspect.path] = definition_spans(sources.get(suspect.path, ""))
        span = owner(spans[suspect.path], suspect.line)
        name, start, end, _, kind = span or (
            "<module>",
            1,
            max(1, len(sources.get(suspect.path, "").splitlines())),
            1,
            "module",
        )
        key = (suspect.path, name)
        tests = ran_by.get((suspect.path, suspect.line), frozenset())
        old = found.get(key)
        if old is None:
            found[key] = SuspectFunction(
                suspect.path, name, start, end, suspect.score, (suspect.line,), tests, kind
            )
            order[key] = (-round(suspect.score, 9), suspect.distance)
        else:
            found[key] = SuspectFunction(
                old.path,
                name,
                start,
                end,
                max(old.score, suspect.score),
                old.lines + (suspect.line,),
                old.tests | tests,
                kind,
                top_lines=old.top_lines + (round(suspect.score, 9) == round(old.score, 9)),
            )
    named = _words(
        " ".join(re.sub(r"\[.*\]$", "", t.split("::")[-1]) for t in failing) + " " + described
    )

    def named_by_tests(key: Tuple[str, str]) -> int:
        return -sum(1 for word in _words(key[1]) if _said(word, named))

    ranked = sorted(found, key=lambda k: (*order[k], named_by_tests(k), k[0], found[k].start))
    return tuple(found[k] for k in ranked)
