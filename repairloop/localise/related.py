"""Code no failing test ran that belongs with the suspects: copies, callers, message sources.

Per-test coverage only ranks what the failing tests ran; three kinds of code
they did not run still belong in the prompt, each found in the project's
non-test sources and named in its slice's header (``context.suspects``):

- ``copies``: a function repeating distinctive lines of a top suspect (a fault
  copied into a sibling is fixed in both places);
- ``callers``: the few functions whose call of a top suspect no failing test
  ran (a fix that changes what it takes or gives back changes them; a misuse
  of it is fixed at every call);
- ``speakers``: a function whose string literal the failure quotes, or that
  reads a module-level constant holding it (the code that wrote the wrong
  message).

Each takes an optional ``Definitions`` so that ``widen``, which runs all three
for a localisation, parses each file once. All three are heuristics over text
and names, bounded by the limits below so
that common code (an idiom, a utility, boilerplate text) names no one. The
limits were set on fixtures/realbugs (59 bugs of 11 libraries).
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace
from typing import AbstractSet, Dict, List, Mapping, Optional, Sequence, Tuple

from repairloop.localise.functions import Span, owner, parsed, spans_of
from repairloop.types import LineKey, SuspectFunction


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
    functions: Sequence[SuspectFunction],
    sources: Mapping[str, str],
    failure_text: str,
    ran: Optional[AbstractSet[LineKey]] = None,
) -> Tuple[Tuple[SuspectFunction, ...], ...]:
    """(``copies``, ``callers``, ``speakers``) of the ranked ``functions``, over one parse of each
    of the project's non-test ``sources``; ``failure_text`` is the failing tests' messages, ``ran``
    the lines the failing tests ran (None: no line data, see ``callers``)."""
    definitions = Definitions(sources)
    copied = copies(functions, sources, definitions)
    return (
        copied,
        callers(functions, sources, copied, definitions, ran),
        speakers(sources, failure_text, definitions, functions),
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
MAX_CALLING_FUNCTIONS = 3  # a function called from more functions is a utility: no lead
MAX_CALLERS = 3


def callers(
    functions: Sequence[SuspectFunction],
    sources: Mapping[str, str],
    copied: Sequence[SuspectFunction] = (),
    definitions: Optional[Definitions] = None,
    ran: Optional[AbstractSet[LineKey]] = None,
) -> Tuple[SuspectFunction, ...]:
    """Functions whose call of one of the ``CALLED_SUSPECTS`` most suspicious functions no failing
    test ran, when that one is called (by its name, ``f(...)`` or ``x.f(...)``) from at most
    ``MAX_CALLING_FUNCTIONS`` functions of the project's non-test ``sources``: a fix that changes
    what a suspect takes or gives back changes its callers too (pyflakes' ``handleNodeLoad``,
    whose ``parent`` argument its two callers pass), and a fix of how a suspect is used repeats at
    the calls the failing tests never reached (markdown's two ``if not isString(node)``, the
    second behind the crash). ``ran`` is the lines the failing tests ran; without it (no line data)
    no ranked function counts. At most ``MAX_CALLERS``, most suspicious callee first, each with
    ``calls`` the callee's name and ``lines`` its unrun calls (a ranked function keeps its own
    suspicious lines, so that a long one is shown where it is suspect); none of ``copied`` (shown
    as copies)."""
    top = [f for f in functions if f.kind == "function"][:CALLED_SUSPECTS]
    by_name = {fn.name.rsplit(".", 1)[-1]: fn for fn in reversed(top)}  # the more suspicious wins
    definitions = definitions or Definitions(sources)
    calling: Dict[str, Dict[Tuple[str, str], List[int]]] = {}  # callee -> caller -> call lines
    spans: Dict[Tuple[str, str], Span] = {}
    for path in sorted(sources):
        for name, line in _calls(definitions.tree(path)):
            span = definitions.function_at(path, line) if name in by_name else None
            if span is not None:
                spans[(path, span[0])] = span
                calling.setdefault(name, {}).setdefault((path, span[0]), []).append(line)
    ranked = {(f.path, f.name): f for f in functions}
    known = {(f.path, f.name) for f in [*(functions if ran is None else top), *copied]}
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    for fn in top:
        name = fn.name.rsplit(".", 1)[-1]
        where = calling.get(name, {})
        if len(where) > MAX_CALLING_FUNCTIONS or by_name[name] is not fn:
            continue
        for key, lines in where.items():
            unrun = tuple(n for n in lines if ran is None or (key[0], n) not in ran)
            if key in known or key in found or not unrun:
                continue
            if key in ranked:  # shown as ranked, with its own suspicious lines first
                found[key] = replace(ranked[key], calls=fn.name)
            else:
                _, start, end, _, _ = spans[key]
                found[key] = SuspectFunction(
                    key[0], key[1], start, end, fn.score, unrun, calls=fn.name
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
MAX_READERS = 4  # a constant read by more functions than this is common vocabulary, no lead
MAX_SPEAKERS = 2
_PLACEHOLDER = re.compile(r"\{[^{}]*\}|%(?:\([^)]*\))?[-#0 +]*\d*(?:\.\d+)?[a-zA-Z]")


def speakers(
    sources: Mapping[str, str],
    failure_text: str,
    definitions: Optional[Definitions] = None,
    functions: Sequence[SuspectFunction] = (),
) -> Tuple[SuspectFunction, ...]:
    """Functions whose string literals the failure quotes: the code that wrote a wrong message
    (click's ``UsageError.show`` and its ``"Try '{command} {option}' for help."``), however many
    passing tests ran it. A literal counts by its pieces between format placeholders (``{...}``,
    ``%s``) of at least ``MIN_FRAGMENT_CHARS`` characters, stripped, found in ``failure_text``
    (the failing tests' messages) and held by at most ``MAX_HOLDERS`` functions of the project's
    non-test ``sources`` (docstrings left out). A piece held by a module-level constant names the
    functions that read the constant, or a constant built from it, by name (``NAME`` or
    ``module.NAME``), when at most ``MAX_READERS`` do, most suspicious in ``functions`` first,
    each with ``via`` the name it reads (markdown's leaked placeholder ``klzzwxh:0000``, from
    ``INLINE_PLACEHOLDER_PREFIX``, names the ``unescape`` methods that read
    ``INLINE_PLACEHOLDER_RE``). At most ``MAX_SPEAKERS``, the holders of the longest quote
    first, then the readers, each with ``says`` the piece and ``lines`` its line. A heuristic
    over text: a message built from parts no literal holds names no one."""
    if not failure_text.strip():
        return ()
    holders: Dict[str, Dict[Tuple[str, str], SuspectFunction]] = {}
    constants: Dict[str, str] = {}  # module-level name -> the quoted piece its value holds
    definitions = definitions or Definitions(sources)
    for path in sorted(sources):
        tree = definitions.tree(path)
        for piece, line in _quoted(tree, failure_text):
            span = definitions.function_at(path, line)
            if span is None:
                for name in _assigned_at(tree, line):
                    constants.setdefault(name, piece)
                continue
            fn = SuspectFunction(path, span[0], span[1], span[2], 0.0, (line,), says=piece)
            holders.setdefault(piece, {}).setdefault((path, span[0]), fn)
    found: Dict[Tuple[str, str], SuspectFunction] = {}
    for piece in sorted(holders, key=lambda p: (-len(p), p)):
        if len(holders[piece]) <= MAX_HOLDERS:
            for key, fn in holders[piece].items():
                found.setdefault(key, fn)
    for key, fn in _readers(
        sources, _built_from(constants, definitions, sources), definitions, functions
    ):
        found.setdefault(key, fn)
    return tuple(found.values())[:MAX_SPEAKERS]


def _assigned_at(tree: Optional[ast.Module], line: int) -> List[str]:
    """The names a module-level assignment holding ``line`` binds (``NAME = ...``)."""
    for node in tree.body if tree is not None else []:
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.lineno <= line <= (
            node.end_lineno or node.lineno
        ):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return [t.id for t in targets if isinstance(t, ast.Name)]
    return []


def _built_from(
    constants: Mapping[str, str], definitions: Definitions, sources: Mapping[str, str]
) -> Dict[str, str]:
    """``constants`` and the module-level names whose value uses one of them (``RE =
    re.compile(PREFIX + "%s")``), transitively: ``{name: piece}``."""
    known = dict(constants)
    assignments = [
        (node.targets if isinstance(node, ast.Assign) else [node.target], node.value)
        for path in sorted(sources)
        for node in (definitions.tree(path) or ast.Module(body=[], type_ignores=[])).body
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None
    ]
    grown = bool(known)
    while grown:
        grown = False
        for targets, value in assignments:
            used = [n for n in _names(value) if n in known]
            for target in targets:
                if used and isinstance(target, ast.Name) and target.id not in known:
                    known[target.id] = known[used[0]]
                    grown = True
    return known


def _names(node: ast.AST) -> List[str]:
    """The names ``node`` reads: ``NAME`` and the last part of ``module.NAME``."""
    return [
        n.id if isinstance(n, ast.Name) else n.attr
        for n in ast.walk(node)
        if isinstance(n, (ast.Name, ast.Attribute)) and isinstance(n.ctx, ast.Load)
    ]


def _readers(
    sources: Mapping[str, str],
    constants: Mapping[str, str],
    definitions: Definitions,
    functions: Sequence[SuspectFunction],
) -> List[Tuple[Tuple[str, str], SuspectFunction]]:
    """The functions reading ``constants`` (``{name: piece}``) by name, per piece when at most
    ``MAX_READERS`` read it, most suspicious in ``functions`` first."""
    if not constants:
        return []
    readers: Dict[str, Dict[Tuple[str, str], SuspectFunction]] = {}
    for path in sorted(sources):
        tree = definitions.tree(path)
        for node in ast.walk(tree) if tree is not None else []:
            if not isinstance(node, (ast.Name, ast.Attribute)) or not isinstance(
                node.ctx, ast.Load
            ):
                continue
            name = node.id if isinstance(node, ast.Name) else node.attr
            span = definitions.function_at(path, node.lineno) if name in constants else None
            if span is not None:
                fn = SuspectFunction(
                    path,
                    span[0],
                    span[1],
                    span[2],
                    0.0,
                    (node.lineno,),
                    says=constants[name],
                    via=name,
                )
                readers.setdefault(constants[name], {}).setdefault((path, span[0]), fn)
    rank = {(f.path, f.name): i for i, f in enumerate(functions)}
    found = []
    for piece in sorted(readers, key=lambda p: (-len(p), p)):
        if len(readers[piece]) <= MAX_READERS:
            found += sorted(
                readers[piece].items(), key=lambda kv: (rank.get(kv[0], len(rank)), kv[0])
            )
    return found


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
