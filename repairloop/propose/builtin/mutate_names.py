"""Identifier mutations: another variable, another attribute, another function.

Replacements come from the same scope or file (ManySStuBs4J's "change
identifier used" and "wrong function name" patterns): a variable of the
enclosing functions or the module, an attribute the file uses on the same
receiver, a known sibling function (``min``/``max``, ``any``/``all``, ...) or a
function of the file with a matching positional arity.
"""

from __future__ import annotations

import ast
from typing import Dict, Iterator, List, Optional, Set, Tuple

from repairloop.propose.builtin.filemodel import FileModel, Signature
from repairloop.propose.builtin.mutate_ops import make
from repairloop.propose.builtin.mutation import Mutation, alt_weight

# Sibling functions and methods commonly confused with each other.
SIBLINGS: Dict[str, Tuple[str, ...]] = {
    "any": ("all",),
    "all": ("any",),
    "min": ("max",),
    "max": ("min",),
    "floor": ("ceil",),
    "ceil": ("floor",),
    "sorted": ("reversed",),
    "reversed": ("sorted",),
    "int": ("round",),
    "round": ("int",),
    "bisect_left": ("bisect_right",),
    "bisect_right": ("bisect_left",),
    "bisect": ("bisect_left",),
    "lower": ("upper",),
    "upper": ("lower",),
    "startswith": ("endswith",),
    "endswith": ("startswith",),
    "lstrip": ("rstrip",),
    "rstrip": ("lstrip",),
    "find": ("rfind",),
    "rfind": ("find",),
    "index": ("rindex",),
    "isupper": ("islower",),
    "islower": ("isupper",),
    "append": ("extend", "appendleft"),
    "extend": ("append",),
    "appendleft": ("append",),
    "add": ("update",),
    "update": ("add",),
    "keys": ("values", "items"),
    "values": ("keys", "items"),
    "items": ("values", "keys"),
    "pop": ("popleft",),
    "popleft": ("pop",),
    "heappush": ("heappushpop",),
    "nlargest": ("nsmallest",),
    "nsmallest": ("nlargest",),
    "insort_left": ("insort_right",),
    "insort_right": ("insort_left",),
}
MAX_NAME_ALTERNATIVES = 8  # keeps the wide identifier families from drowning the rest


# Names that are confused with each other in pairs (loop bounds, coordinates, ends).
PAIRED_NAMES = frozenset(
    frozenset(p)
    for p in (
        ("i", "j"),
        ("j", "k"),
        ("lo", "hi"),
        ("low", "high"),
        ("left", "right"),
        ("x", "y"),
        ("row", "col"),
        ("start", "end"),
        ("first", "last"),
        ("a", "b"),
        ("u", "v"),
        ("m", "n"),
        ("src", "dst"),
        ("prev", "curr"),
        ("min", "max"),
    )
)


def _similar(a: str, b: str) -> bool:
    """``s``/``t``, ``old_s``/``old_t``, ``lo``/``hi``: one character apart or a known pair."""
    if frozenset((a, b)) in PAIRED_NAMES:
        return True
    if len(a) == len(b) == 1:
        return abs(ord(a) - ord(b)) == 1  # s/t, x/y, p/q
    return len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == 1


def _statement_names(model: FileModel, node: ast.AST) -> Set[str]:
    stmt = model.enclosing(node, (ast.stmt,))
    if stmt is None:
        return set()
    return {n.id for n in ast.walk(stmt) if isinstance(n, ast.Name)}


def _body_nodes(fn: ast.AST) -> Iterator[ast.AST]:
    """Nodes of a function (or module) body, not entering nested definitions."""
    stack: List[ast.AST] = list(getattr(fn, "body", []))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(node))


def _index_slot(model: FileModel, node: ast.AST) -> Optional[Tuple[str, int]]:
    """(sequence name, depth) when ``node`` is inside an index: ``j`` of ``dp[i - 1][j]`` is ("dp",
    2)."""
    child, parent = node, model.parent(node)
    while parent is not None and not isinstance(parent, ast.stmt):
        if isinstance(parent, ast.Subscript):
            if child is not parent.slice:
                return None
            depth, base = 1, parent.value
            while isinstance(base, ast.Subscript):
                depth, base = depth + 1, base.value
            return (base.id, depth) if isinstance(base, ast.Name) else None
        child, parent = parent, model.parent(parent)
    return None


def _function_facts(
    model: FileModel, node: ast.AST
) -> Tuple[Dict[Tuple[str, int], Dict[str, int]], Set[str]]:
    """Of the function around ``node``: how often each name indexes each (sequence, depth),
    and the variables read only to update themselves (``current = max(0, current + x)``)."""
    fn = model.function_of(node) or model.source.tree
    key = ("wrong_variable", id(fn))
    if key not in model.memo:
        slots: Dict[Tuple[str, int], Dict[str, int]] = {}
        readers: Dict[str, Set[int]] = {}
        self_updates: Dict[str, Set[int]] = {}
        for sub in _body_nodes(fn):
            if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Load):
                slot = _index_slot(model, sub)
                if slot is not None:
                    counts = slots.setdefault(slot, {})
                    counts[sub.id] = counts.get(sub.id, 0) + 1
                stmt = model.enclosing(sub, (ast.stmt,))
                readers.setdefault(sub.id, set()).add(id(stmt))
            elif isinstance(sub, (ast.Assign, ast.AugAssign)):
                targets = sub.targets if isinstance(sub, ast.Assign) else [sub.target]
                for target in targets:
                    for name in ast.walk(target):
                        if isinstance(name, ast.Name):
                            self_updates.setdefault(name.id, set()).add(id(sub))
        unread = {n for n, stmts in readers.items() if stmts <= self_updates.get(n, set())}
        unread |= {n for n in self_updates if n not in readers}
        model.memo[key] = (slots, unread)
    return model.memo[key]  # type: ignore[return-value]


def _smell_weight(model: FileModel, node: ast.Name, name: str) -> float:
    """1.6 when data flow points at ``name``: the sequence is indexed by ``name`` everywhere
    else and by ``node`` only here (``right[i:]`` where ``right`` always takes ``j``), or
    ``name`` is computed but never read except by its own updates (a result left unused)."""
    slots, unread = _function_facts(model, node)
    slot = _index_slot(model, node)
    if slot is not None:
        counts = slots.get(slot, {})
        if counts.get(name, 0) >= 2 and counts.get(node.id, 0) == 1:
            return 1.6
    return 1.6 if name in unread else 1.0


def variable_choices(model: FileModel, node: ast.Name) -> List[Tuple[str, float]]:
    """Other variables for ``node``, best first: names data flow points at, similar or
    same-statement names, other locals, then module variables; at most ``MAX_NAME_ALTERNATIVES``."""
    local = model.local_vars(node)
    nearby = _statement_names(model, node)
    choices: List[Tuple[str, float]] = []
    for name in local:
        if name != node.id:
            hints = int(_similar(name, node.id)) + int(name in nearby)
            choices.append((name, (0.7, 0.85, 1.0)[hints] * _smell_weight(model, node, name)))
    choices += [(n, 0.5) for n in model.module_vars if n != node.id and n not in local]
    choices.sort(key=lambda c: (-c[1], c[0]))
    return choices[:MAX_NAME_ALTERNATIVES]


def wrong_variable(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """A variable read replaced by another variable of the same function (then module)."""
    if not isinstance(node, ast.Name) or not isinstance(node.ctx, ast.Load):
        return
    if model.is_callee(node):
        return
    if node.id not in model.local_vars(node) and node.id not in model.module_vars:
        return  # a builtin, an import or a function: not a variable
    start, end = model.source.span(node)
    for name, weight in variable_choices(model, node):
        yield make(model, "wrong_variable", start, end, name, weight, f"`{node.id}` -> `{name}`")


def _special(name: str) -> bool:
    """A special (dunder) name: ``__class__``, ``__dict__``."""
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def wrong_attribute(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``node.left`` to ``node.right``: another attribute the file uses on the same receiver."""
    if not isinstance(node, ast.Attribute) or model.is_callee(node):
        return
    src = model.source
    receiver = src.segment(node.value)
    same = sorted(model.attributes.get(receiver, set()) - {node.attr})
    # Then attributes the file uses on other receivers (``node.incoming`` for ``other.outgoing``).
    anywhere = sorted(set().union(*model.attributes.values()) - set(same) - {node.attr})
    end = src.span(node)[1]
    start = end - len(node.attr)
    if src.text[start:end] != node.attr:
        return
    choices = [(n, 1.0) for n in same] + [(n, 0.6) for n in anywhere]
    # A data attribute is not swapped for a special one (``node.target`` for ``node.__class__``):
    # no fix of the 71 real bugs (fixtures/realbugs*) does it, and the engine's one such swap was
    # a wrong plausible patch (pyflakes-print-augmented-assign, figure 16).
    choices = [(n, w) for n, w in choices if _special(n) <= _special(node.attr)]
    for name, weight in choices[:MAX_NAME_ALTERNATIVES]:
        what = f"`{receiver}.{node.attr}` -> `{receiver}.{name}`"
        yield make(model, "wrong_attribute", start, end, name, weight, what)


def _function_alternatives(model: FileModel, call: ast.Call) -> List[Tuple[str, float]]:
    func = call.func
    name = (
        func.id
        if isinstance(func, ast.Name)
        else func.attr
        if isinstance(func, ast.Attribute)
        else ""
    )
    found: List[Tuple[str, float]] = [(s, 1.0) for s in SIBLINGS.get(name, ())]
    # Same-file alternatives only for calls of same-file functions (or self's
    # methods): offering every file function for len() or print() is noise.
    table: Dict[str, Signature] = {}
    if isinstance(func, ast.Name) and name in model.functions:
        table = model.functions
    elif (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in ("self", "cls")
    ):
        owner = model.class_of(call)
        table = model.methods.get(owner.name, {}) if owner is not None else {}
    same_arity = sorted(n for n, sig in table.items() if n != name and sig.accepts(call))
    found += [(n, 0.7) for n in same_arity if n not in SIBLINGS.get(name, ())]
    return found[:MAX_NAME_ALTERNATIVES]


def wrong_function(model: FileModel, node: ast.AST) -> Iterator[Mutation]:
    """``min(...)`` to ``max(...)``, ``any`` to ``all``, or a same-file function of equal arity."""
    if not isinstance(node, ast.Call):
        return
    src = model.source
    func = node.func
    if isinstance(func, ast.Name):
        start, end = src.span(func)
        old = func.id
    elif isinstance(func, ast.Attribute):
        end = src.span(func)[1]
        start, old = end - len(func.attr), func.attr
        if src.text[start:end] != old:
            return
    else:
        return
    for k, (name, weight) in enumerate(_function_alternatives(model, node)):
        yield make(
            model,
            "wrong_function",
            start,
            end,
            name,
            weight * alt_weight(min(k, 1)),
            f"`{old}()` -> `{name}()`",
        )
