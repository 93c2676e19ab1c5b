"""Code no failing test ran that belongs with the suspects: copies, callers, message sources.

Per-test coverage only ranks what the failing tests ran; three kinds of code
they did not run still belong in the prompt, each found in the project's
non-test sources and named in its slice's header (``context.suspects``):

- ``copies``: a function repeating distinctive lines of a top suspect (a fault
  copied into a sibling is fixed in both places);
- ``callers``: the few callers of a top suspect (a fix that changes what it
  takes or gives back changes them);
- ``speakers``: a function whose string literal the failure quotes (the code
  that wrote the wrong message).

Each takes an optional ``Definitions`` so that ``widen``, which runs all three
for a localisation, parses each file once. All three are heuristics over text
and names, bounded by the limits below so
that common code (an idiom, a utility, boilerplate text) names no one. The
limits were set on fixtures/realbugs (59 bugs of 11 libraries).
"""

from __future__ import annotations

import ast
import re
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from repairloop.localise.functions import Span, owner, parsed, spans_of
from repairloop.types import SuspectFunction


class Definitions:
    """The project's non-test ``sources`` (``{path: text}``), each file parsed once, when first
    asked, for all three searches of a localisation (``widen``)."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = sources
        self.trees: Dict[str, Optional[ast.Module]] = {}
        self.spans: Dict[str, List[Span]] = {}

    def tree(self, path: str) -> Optional[ast.Module]:
        """``path``'s syntax tree (None when it does not parse)."""
        if path not in self.trees:
            self.trees[path] = parsed(self.sources.get(path, ""))
        return self.trees[path]

    def function_at(self, path: str, line: int) -> Optional[Span]:
        """The function ``line`` of ``path`` belongs to (``functions.owner``); None at module
        level or in a class body."""
        if path not in self.spans:
            self.spans[path] = spans_of(self.tree(path))
        span = owner(self.spans[path], line)
        return span if span is not None and span[4] == "function" else None


def widen(
    functions: Sequence[SuspectFunction], sources: Mapping[str, str], failure_text: str
) -> Tuple[Tuple[SuspectFunction, ...], ...]:
    """(``copies``, ``callers``, ``speakers``) of the ranked ``functions``, over one parse of each
    of the project's non-test ``sources``; ``failure_text`` is the failing tests' messages."""
    definitions = Definitions(sources)
    copied = copies(functions, sources, definitions)
    return (
        copied,
        callers(functions, sources, copied, definitions),
        speakers(sources, failure_text, definitions),
    )


COPIED_SUSPECTS = 3  # the most suspicious functions whose lines are looked for elsewhere
MAX_COPIES = 2  # copies kept, most shared lines first
# Fewer shared lines are coincidence: on fixtures/realbugs' 59 bugs, 57 copies shared one or two
# lines with a suspect, and all but one were ordinary idioms (``name = getNodeName(node)``).
MIN_SHARED_LINES = 4
MAX_PLACES = 4  # a line found in more places than this is common code, no evidence
MIN_LINE_CHARS = 20  # shorter lines (``return x``, ``else:``) are too common to tell


def copies(
    functions: Sequence[SuspectFunction],
    sources: Mapping[str, str],
    definitions: Optional[Definitions] = None,
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
    definitions = definitions or Definitions(sources)
    for key, source in wanted.items():  # so a copy's first line repeats the most suspicious one
        where = places.get(key, [])
        if len(where) > MAX_PLACES:
            continue
        for path, number in where:
            span = definitions.function_at(path, number)
            if span is None or (path, span[0]) in known:
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
    definitions: Optional[Definitions] = None,
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
    definitions = definitions or Definitions(sources)
    for path in sorted(sources):
        for name, line in _calls(definitions.tree(path)):
            if name in by_name:
                sites.setdefault(name, []).append((path, line))
    known = {(f.path, f.name) for f in [*functions, *copied]}
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    for fn in top:
        where = sites.get(fn.name.rsplit(".", 1)[-1], [])
        if len(where) > MAX_CALL_SITES or by_name[fn.name.rsplit(".", 1)[-1]] is not fn:
            continue
        for path, line in where:
            span = definitions.function_at(path, line)
            if span is None or (path, span[0]) in known:
                continue
            found.setdefault(
                (path, span[0]),
                SuspectFunction(path, span[0], span[1], span[2], fn.score, (line,), calls=fn.name),
            )
    return tuple(found.values())[:MAX_CALLERS]


def _calls(tree: Optional[ast.Module]) -> List[Tuple[str, int]]:
    """(called name, line) of every call by name in a parsed module (None: [])."""
    if tree is None:
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


def speakers(
    sources: Mapping[str, str], failure_text: str, definitions: Optional[Definitions] = None
) -> Tuple[SuspectFunction, ...]:
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
    definitions = definitions or Definitions(sources)
    for path in sorted(sources):
        for piece, line in _quoted(definitions.tree(path), failure_text):
            span = definitions.function_at(path, line)
            if span is None:
                continue
            fn = SuspectFunction(path, span[0], span[1], span[2], 0.0, (line,), says=piece)
            holders.setdefault(piece, {}).setdefault((path, span[0]), fn)
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    for piece in sorted(holders, key=lambda p: (-len(p), p)):
        if len(holders[piece]) <= MAX_HOLDERS:
            for key, fn in holders[piece].items():
                found.setdefault(key, fn)
    return tuple(found.values())[:MAX_SPEAKERS]


def _quoted(tree: Optional[ast.Module], failure_text: str) -> List[Tuple[str, int]]:
    """(piece, line) of the string literals of a parsed module (None: none) that ``failure_text``
    holds."""
    if tree is None:
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
