"""A candidate that deletes functionality: a function that stops reading an input (a parameter,
or a local it still assigns, that it read before the patch and reads nowhere after it), or a
patch that only removes code.

Most plausible-but-wrong patches of test-suite-based repair delete functionality: Qi et al.
("An Analysis of Patch Plausibility and Correctness for Generate-and-Validate Patch Generation
Systems", ISSTA 2015) found most of GenProg's, RSRepair's and AE's plausible patches equivalent
to a deletion, and Tan et al. ("Anti-patterns in Search-Based Program Repair", FSE 2016) forbid
deletions of that kind. The form seen here: ``max(lo, max(x, hi))`` turned into
``max(lo, max(x, lo))``, a clamp that no longer reads ``hi``; ``"<p>" + text + "</p>"`` turned
into ``"<p>" + "</p>"``. The failing tests pass, and the function now ignores an input for
every caller. A right fix rarely stops reading an input it still receives.

Such a candidate is *flagged* (``FlagKind.DROPS_INPUT``), never refused: a fix can drop a stale
input on purpose, and only a reader can tell. A heuristic on the syntax, with what it leaves
out:

* functions are matched by qualified name (``Class.method``, ``outer.inner``) between the old
  and the new text of a changed source file (test files are left out); a function renamed, or
  whose signature drops the parameter, is an API change, not a dropped read;
* a read is a ``Name`` loaded anywhere in the function's body, nested functions and
  comprehensions included (a closure reads it too); a function that calls ``locals()``,
  ``vars()``, ``eval`` or ``exec`` reads names the syntax cannot see, and is left out;
* ``self`` and ``cls`` (a method may stop using its instance), names starting with ``_``
  (unused by convention) and names the function declares ``global`` or ``nonlocal`` (their
  value lives outside) are left out;
* a local counts while the new body still assigns it: a patch that removes the assignment
  with its last read removed the whole computation, which is a different (and visible) edit.

The plainest deletion is flagged too (``FlagKind.DELETES_CODE``): a candidate whose every
change to a source file removes code and adds none (Qi et al. built Kali, which repairs only by
deleting, to show how far deletion alone passes the tests). Blank lines, comments and lines that
do nothing (``pass``, ``...``, ``x = x``) do not count as code (``var = f"[{var}]"`` turned into
``pass``); any other added line, even a useless one (``x = str(x)``), makes it an edit. Of the 113
reference fixes in fixtures/realbugs, fixtures/realbugs-heldout and fixtures/bench, one is a
pure deletion (an extra ``sort()`` call removed): a right fix can be one, so it is a flag.
"""

from __future__ import annotations

import ast
import difflib
from typing import Dict, Iterator, List, Mapping, Optional, Set, Tuple, Union

from repairloop.patch.changes import AppliedPatch, FileChange
from repairloop.types import Flag, FlagKind, TestFiles

MAX_FLAGS = 5
_DYNAMIC_READS = frozenset({"locals", "vars", "eval", "exec"})
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
FunctionNode = Union[ast.FunctionDef, ast.AsyncFunctionDef]


def functions(tree: ast.AST) -> Dict[str, FunctionNode]:
    """Every function of ``tree`` by qualified name (``Class.method``, ``outer.inner``; the first
    of two with one name)."""
    found: Dict[str, FunctionNode] = {}

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (*_FUNCTIONS, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if isinstance(child, _FUNCTIONS):
                    found.setdefault(name, child)
                visit(child, f"{name}.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return found


def _parameters(function: FunctionNode) -> List[str]:
    args = function.args
    named = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    named += [a for a in (args.vararg, args.kwarg) if a is not None]
    return [a.arg for a in named]


def _body_nodes(function: FunctionNode) -> Iterator[ast.AST]:
    """Every node of the function's body statements (not its decorators, defaults or
    annotations, which the enclosing scope evaluates)."""
    for statement in function.body:
        yield from ast.walk(statement)


def _uses(function: FunctionNode) -> Tuple[Set[str], Set[str], Set[str], bool]:
    """(names read, names assigned, names declared global or nonlocal, reads it cannot see)."""
    reads: Set[str] = set()
    stores: Set[str] = set()
    outside: Set[str] = set()
    dynamic = False
    for node in _body_nodes(function):
        if isinstance(node, ast.Name):
            (reads if isinstance(node.ctx, ast.Load) else stores).add(node.id)
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name):
            reads.add(node.target.id)  # ``n += 1`` reads n
        elif isinstance(node, (ast.Global, ast.Nonlocal)):
            outside.update(node.names)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            dynamic = dynamic or node.func.id in _DYNAMIC_READS
    return reads, stores, outside, dynamic


def dropped_reads(old: FunctionNode, new: FunctionNode) -> List[Tuple[str, str]]:
    """The inputs ``new`` no longer reads that ``old`` read, as (kind, name) with kind
    "parameter" or "local", in the order of the old function's parameters then sorted; [] when
    either function reads names the syntax cannot see."""
    old_reads, old_stores, old_outside, old_dynamic = _uses(old)
    new_reads, new_stores, new_outside, new_dynamic = _uses(new)
    if old_dynamic or new_dynamic:
        return []
    skipped = old_outside | new_outside | {"self", "cls"}
    parameters = [p for p in _parameters(old) if p in set(_parameters(new))]
    found = [("parameter", p) for p in parameters if p in old_reads and p not in new_reads]
    locals_ = (old_stores & new_stores & old_reads) - new_reads - set(_parameters(old))
    found += [("local", name) for name in sorted(locals_)]
    return [(kind, name) for kind, name in found if name not in skipped and name[0] != "_"]


def _parsed(text: Optional[str]) -> Optional[ast.AST]:
    if text is None:
        return None
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):  # too deep for the parser
        return None


def dropped_input_flags(applied: AppliedPatch, test_files: TestFiles) -> Tuple[Flag, ...]:
    """A ``drops_input`` flag for each function of a changed source file that no longer reads a
    parameter or a local it still assigns (module docstring), at most ``MAX_FLAGS``. Raises
    nothing: a file that does not parse on either side is skipped."""
    flags: List[Flag] = []
    for change in applied.changes:
        if not change.path.endswith(".py") or test_files.is_test(change.path):
            continue
        old_tree, new_tree = _parsed(change.old_text), _parsed(change.new_text)
        if old_tree is None or new_tree is None:
            continue
        old_functions, new_functions = functions(old_tree), functions(new_tree)
        for name, old in old_functions.items():
            new = new_functions.get(name)
            if new is None or ast.dump(old) == ast.dump(new):
                continue
            flags += [
                _flag(change.path, name, kind, input_) for kind, input_ in dropped_reads(old, new)
            ]
    return tuple(flags[:MAX_FLAGS])


def _no_op(line: str) -> bool:
    """A line that does nothing: ``pass``, a constant (``...``), or an assignment of a name or
    attribute to itself (``word = word``: a filler that would otherwise make a deletion look like
    an edit; a new user's trial). A bare name is not one: it may be a line of a longer call."""
    try:
        body = ast.parse(line).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # part of a longer statement (or too deep to be a filler)
    if len(body) != 1:
        return False
    statement = body[0]
    if isinstance(statement, ast.Pass):
        return True
    if isinstance(statement, ast.Expr):
        return isinstance(statement.value, ast.Constant)
    if isinstance(statement, ast.Assign):
        value = ast.unparse(statement.value)
        return all(ast.unparse(target) == value for target in statement.targets)
    return False


def _code_lines(text: str) -> List[str]:
    """The lines of ``text`` that are code: not blank, not a comment, not a no-op (``_no_op``)."""
    stripped = (line.strip() for line in text.splitlines())
    return [line for line in stripped if line and not line.startswith("#") and not _no_op(line)]


def deletion_flags(applied: AppliedPatch, test_files: TestFiles) -> Tuple[Flag, ...]:
    """One ``deletes_code`` flag when every changed source file of ``applied`` only loses code
    (module docstring), naming the files; () otherwise. A created or deleted file, or a change
    to a test file alone, is not a deletion of this kind."""
    removed: List[str] = []
    for change in applied.changes:
        if not change.path.endswith(".py") or test_files.is_test(change.path):
            continue
        if change.old_text is None or change.new_text is None:
            return ()
        old, new = _code_lines(change.old_text), _code_lines(change.new_text)
        matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
        opcodes = [op for op in matcher.get_opcodes() if op[0] != "equal"]
        if any(op[0] != "delete" for op in opcodes):
            return ()
        if opcodes:
            lost = sum(first_after - first for _, first, first_after, _, _ in opcodes)
            removed.append(f"{change.path} ({lost} line(s))")
    if not removed:
        return ()
    return (
        Flag(
            FlagKind.DELETES_CODE,
            f"the patch only removes code, adding none: {', '.join(removed)}: a plausible patch "
            "that deletes functionality is often wrong; read it",
        ),
    )


def drops_input(
    originals: Mapping[str, str], changed: Mapping[str, str], test_files: TestFiles
) -> bool:
    """True when the files ``changed`` (path -> new text) would be flagged ``drops_input``
    against ``originals`` (path -> text): how the offline engine ranks such a patch after
    one that fixes as many tests (``BuiltinProposer``'s ``distrusted``)."""
    changes = tuple(
        FileChange(path, originals.get(path), text, "exact", 1.0) for path, text in changed.items()
    )
    return bool(dropped_input_flags(AppliedPatch(changes, "engine"), test_files))


def _flag(path: str, function: str, kind: str, name: str) -> Flag:
    what = (
        f"its parameter {name!r}" if kind == "parameter" else f"its local {name!r}, still assigned"
    )
    return Flag(
        FlagKind.DROPS_INPUT,
        f"{path}: {function}() no longer reads {what}, which it read before the patch: a "
        "plausible patch that stops using an input is often wrong; read it"
        + ("" if kind == "parameter" else " (if it is right, the assignment may now be dead)"),
    )
