"""From suspicious lines to suspicious functions: what the prompt shows, most suspicious first.

A line belongs to the outermost function or method whose body holds it (a
nested function is part of the function that defines it), to its class when
it is in a class body outside any method, and to ``<module>`` otherwise: a
``def`` line (and its decorators) runs when the enclosing scope runs, at
import for a top-level function, so it is the enclosing scope's. A function's
score is its most suspicious line's (Ochiai's ``max`` rule: one faulty line
makes the function faulty); ties go to the line nearest a failing frame, then
to the function whose name shares more words with the failing tests' names
(``test_header_and_paragraph_...`` and ``HashHeaderProcessor.run``: a test
names what it tests), then path and position, so the ranking is
deterministic.
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
    at least three letters, common ones left out, a final ``s`` or ``ed`` cut (``headers`` and
    ``header`` meet): what a test's name and a function's name are compared by."""
    found = set()
    for part in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", text):
        word = part.lower()
        for ending in ("ed", "s"):
            if len(word) > 4 and word.endswith(ending):
                word = word[: -len(ending)]
        if len(word) >= 3 and word not in _COMMON_WORDS:
            found.add(word)
    return frozenset(found)


def definition_spans(text: str) -> List[Span]:
    """Every function, method and class of a module's ``text``: (qualified name, first line with
    decorators, last line, first line of its body, ``function`` or ``class``), outer before inner;
    [] when it does not parse."""
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
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

    walk(body, "")
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
) -> Tuple[SuspectFunction, ...]:
    """The functions holding ``suspects`` (most suspicious first, see the module docstring);
    ``sources`` are the project's non-test files, ``ran_by`` the failing tests that ran each suspect
    line, ``failing`` their ids, whose names break what ties remain (``_words``)."""
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
    named = _words(" ".join(re.sub(r"\[.*\]$", "", t.split("::")[-1]) for t in failing))

    def named_by_tests(key: Tuple[str, str]) -> int:
        return -len(_words(key[1]) & named)

    ranked = sorted(found, key=lambda k: (*order[k], named_by_tests(k), k[0], found[k].start))
    return tuple(found[k] for k in ranked)


COPIED_SUSPECTS = 3  # the most suspicious functions whose lines are looked for elsewhere
MAX_COPIES = 2  # copies kept, most shared lines first
# Fewer shared lines are coincidence: on fixtures/realbugs' 59 bugs, copies sharing one or two
# lines with a suspect were ordinary idioms (``name = getNodeName(node)``) in 55 of 56 cases.
MIN_SHARED_LINES = 4
MAX_PLACES = 4  # a line found in more places than this is common code, no evidence
MIN_LINE_CHARS = 20  # shorter lines (``return x``, ``else:``) are too common to tell


def copies(
    functions: Sequence[SuspectFunction], sources: Mapping[str, str]
) -> Tuple[SuspectFunction, ...]:
    """Functions that repeat suspicious lines of the ``COPIED_SUSPECTS`` most suspicious functions
    but were not among ``functions`` (no failing test ran them): a fault copied into a sibling
    function is fixed in both places (a ``width`` and a ``wcswidth`` computing the same bound).

    A line counts when, stripped and without its trailing comment, it has at least
    ``MIN_LINE_CHARS`` characters and occurs in at most ``MAX_PLACES`` places of the project's
    non-test ``sources``; a copy shares at least ``MIN_SHARED_LINES`` of them. The copies are ranked
    by how many lines they share, at most ``MAX_COPIES``, each with ``lines`` its shared lines and
    ``copy_of`` the name of the suspect it shares the most suspicious of them with.
    """
    top = [f for f in functions if f.kind == "function"][:COPIED_SUSPECTS]
    # (line text, the suspect it is from), most suspicious suspect first, then its lines in order
    wanted: Dict[str, SuspectFunction] = {}
    for fn in top:
        numbered = sources.get(fn.path, "").splitlines()
        for line in fn.lines:
            key = _normal(numbered[line - 1]) if 0 < line <= len(numbered) else ""
            if key and key not in wanted:
                wanted[key] = fn
    places: Dict[str, List[Tuple[str, int]]] = {}
    for path, text in sorted(sources.items()):
        for number, code in enumerate(text.splitlines(), 1):
            key = _normal(code)
            if key in wanted:
                places.setdefault(key, []).append((path, number))
    known = {(f.path, f.name) for f in functions}
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    spans: Dict[str, List[Span]] = {}
    for key, source in wanted.items():  # so a copy's first line repeats the most suspicious one
        where = places.get(key, [])
        if len(where) > MAX_PLACES:
            continue
        for path, number in where:
            if path not in spans:
                spans[path] = definition_spans(sources[path])
            span = owner(spans[path], number)
            if span is None or span[4] != "function" or (path, span[0]) in known:
                continue
            old = found.get((path, span[0]))
            found[(path, span[0])] = SuspectFunction(
                path,
                span[0],
                span[1],
                span[2],
                old.score if old else source.score,
                (old.lines if old else ()) + (number,),
                kind="function",
                copy_of=old.copy_of if old else source.name,
                top_lines=len(old.lines) + 1 if old else 1,  # every shared line counts alike
            )
    kept = [f for f in found.values() if len(f.lines) >= MIN_SHARED_LINES]
    ranked = sorted(kept, key=lambda f: (-len(f.lines), f.path, f.start))
    return tuple(ranked[:MAX_COPIES])


def _normal(line: str) -> str:
    code = line.split("  #", 1)[0].strip()
    return "" if code.startswith("#") or len(code) < MIN_LINE_CHARS else code


CALLED_SUSPECTS = 3  # the most suspicious functions whose callers are looked for
MAX_CALL_SITES = 3  # a function called from more places is a utility: its callers are no lead
MAX_CALLERS = 3


def callers(
    functions: Sequence[SuspectFunction],
    sources: Mapping[str, str],
    copied: Sequence[SuspectFunction] = (),
) -> Tuple[SuspectFunction, ...]:
    """Functions no failing test ran that call one of the ``CALLED_SUSPECTS`` most suspicious
    functions, when that one is called (by its name, ``f(...)`` or ``x.f(...)``) from at most
    ``MAX_CALL_SITES`` places of the project's non-test ``sources``: a fix that changes what a
    suspect takes or gives back changes its callers too (pyflakes' ``handleNodeLoad``, whose
    ``parent`` argument its two callers pass). At most ``MAX_CALLERS``, most suspicious callee
    first, each with ``lines`` its call and ``calls`` the callee's name; none of ``copied`` (shown
    as copies)."""
    top = [f for f in functions if f.kind == "function"][:CALLED_SUSPECTS]
    by_name = {fn.name.rsplit(".", 1)[-1]: fn for fn in reversed(top)}  # the more suspicious wins
    sites: Dict[str, List[Tuple[str, int]]] = {}
    for path, text in sorted(sources.items()):
        for name, line in _calls(text):
            if name in by_name:
                sites.setdefault(name, []).append((path, line))
    known = {(f.path, f.name) for f in [*functions, *copied]}
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    spans: Dict[str, List[Span]] = {}
    for fn in top:
        where = sites.get(fn.name.rsplit(".", 1)[-1], [])
        if len(where) > MAX_CALL_SITES or by_name[fn.name.rsplit(".", 1)[-1]] is not fn:
            continue
        for path, line in where:
            if path not in spans:
                spans[path] = definition_spans(sources[path])
            span = owner(spans[path], line)
            if span is None or span[4] != "function" or (path, span[0]) in known:
                continue
            found.setdefault(
                (path, span[0]),
                SuspectFunction(path, span[0], span[1], span[2], fn.score, (line,), calls=fn.name),
            )
    return tuple(found.values())[:MAX_CALLERS]


def _calls(text: str) -> List[Tuple[str, int]]:
    """(called name, line) of every call by name in a module's ``text`` ([] when it does not
    parse)."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.append((func.id, node.lineno))
            elif isinstance(func, ast.Attribute):
                found.append((func.attr, node.lineno))
    return found


MIN_FRAGMENT_CHARS = 8  # a literal's piece shorter than this matches by chance
MAX_HOLDERS = 2  # a piece found in more functions than this is boilerplate
MAX_SPEAKERS = 2
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]")


def speakers(sources: Mapping[str, str], failure_text: str) -> Tuple[SuspectFunction, ...]:
    """Functions whose string literals the failure quotes: the code that wrote a wrong message
    (click's ``UsageError.show`` and its ``"Try '{command} {option}' for help."``), however many
    passing tests ran it. A literal counts by its pieces between format placeholders (``{...}``,
    ``%s``) of at least ``MIN_FRAGMENT_CHARS`` characters, stripped, found in ``failure_text``
    (the failing tests' messages) and held by at most ``MAX_HOLDERS`` functions of the project's
    non-test ``sources`` (docstrings left out). At most ``MAX_SPEAKERS``, the longest quote first,
    each with ``says`` the piece and ``lines`` its line. A heuristic over text: a message built
    from parts no literal holds names no one."""
    if not failure_text.strip():
        return ()
    holders: Dict[str, Dict[Tuple[str, str], SuspectFunction]] = {}
    for path, text in sorted(sources.items()):
        spans = None
        for piece, line in _quoted(text, failure_text):
            spans = spans if spans is not None else definition_spans(text)
            span = owner(spans, line)
            if span is None or span[4] != "function":
                continue
            fn = SuspectFunction(path, span[0], span[1], span[2], 0.0, (line,), says=piece)
            holders.setdefault(piece, {}).setdefault((path, span[0]), fn)
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    for piece in sorted(holders, key=lambda p: (-len(p), p)):
        if len(holders[piece]) <= MAX_HOLDERS:
            for key, fn in holders[piece].items():
                found.setdefault(key, fn)
    return tuple(found.values())[:MAX_SPEAKERS]


def _quoted(text: str, failure_text: str) -> List[Tuple[str, int]]:
    """(piece, line) of the string literals of a module's ``text`` that ``failure_text`` holds."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    docstrings = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and id(node) not in docstrings
        ):
            for piece in _PLACEHOLDER.split(node.value):
                piece = piece.strip()
                if len(piece) >= MIN_FRAGMENT_CHARS and piece in failure_text:
                    found.append((piece, node.lineno))
    return found
