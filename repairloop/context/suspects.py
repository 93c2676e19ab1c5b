"""The suspects' code for the prompt: the functions fault localisation ranks most suspicious, whole.

Each suspect function (``types.SuspectFunction``, most suspicious first, followed
by the copies, callers and message sources ``localise.related`` adds, each
labelled) is shown as its whole definition under its path, with line numbers as
the file has them; a method brings its class's header and the attributes before
its first method, and any function the module-level imports and short
module-level assignments it reads by name (so a name in it is never a mystery).
A function too long to show whole is shown as its signature, a comment naming
the lines left out and the window holding most of its suspicious lines, in one
slice whose name says which lines are shown. Module-level suspects are shown as
a window around their line.
"""

from __future__ import annotations

import ast
from dataclasses import replace
from functools import lru_cache
from typing import Dict, List, Sequence, Set, Tuple

from repairloop.context.source import MODULE_WINDOW, Files, Piece
from repairloop.types import CodeSlice, Localisation, SuspectFunction

# Suspects shown at most; the token budget (context_tokens) drops the farthest. On
# fixtures/realbugs' 59 bugs, 16 put the fixed code in 57 first prompts (median 4,540 tokens of
# material) and 24 in as many (median 5,800): more suspects cost every call and found no bug more.
MAX_SUSPECTS = 16
# Longer functions are shown as LONG_FUNCTION lines around their most suspicious line, from the
# def line when that line is within reach. 120 lines is about 1,500 tokens, a quarter of the
# default context_tokens; the budget's trims may still shrink it (build_context, step 4).
LONG_FUNCTION = 120
# Once the suspects shown so far hold WHOLE_LINES lines, a function is shown in at most LATER_LINES
# lines the same way: a far suspect is less likely the fault, and a budget spent on a few whole
# long functions leaves the next suspects out (fixtures/realbugs: tomlkit's 185-line
# Container.append, eighth). 240 lines is about half the default context_tokens.
WHOLE_LINES = 240
LATER_LINES = 40
SIGNATURE_LINES = 30  # of a long function shown far from its def line, at most
LEAD = 10  # lines shown before the first suspicious line of a long function's window
CLASS_PREAMBLE_LINES = 30  # a class's header and attributes shown with a method, at most
MODULE_TABLE_LINES = 40  # a module-level assignment a suspect reads is shown when no longer
DEF_TYPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def relevant(localisation: Localisation, group: Sequence[str]) -> List[SuspectFunction]:
    """The suspects the group's failing tests ran (all of them when the line data names no test),
    each followed by its copies and callers (``Localisation.copies``, ``callers``: functions no
    failing test ran that repeat its lines, or whose call of it no failing test ran).
    Module-level code and class bodies are left out while a function is suspect: every test runs
    them at import, so they are no evidence."""
    wanted = set(group)
    ran = [f for f in localisation.functions if f.tests & wanted] or [
        f for f in localisation.functions if not f.tests
    ]
    functions = [f for f in ran if f.kind == "function"] or ran
    quoted = [s for s in localisation.speakers if (s.path, s.name) not in _keys(functions[:1])]
    ordered = (
        functions[:1] + quoted + [f for f in functions[1:] if (f.path, f.name) not in _keys(quoted)]
    )
    shown: Dict[Tuple[str, str], SuspectFunction] = {}
    for fn in ordered[:MAX_SUSPECTS]:
        for one in [fn, *localisation.copies, *localisation.callers]:
            if one is fn or fn.name in (one.copy_of, one.calls):
                shown.setdefault((one.path, one.name), one)
    return list(shown.values())[:MAX_SUSPECTS]


def _keys(functions: Sequence[SuspectFunction]) -> Set[Tuple[str, str]]:
    return {(f.path, f.name) for f in functions}


def suspect_pieces(files: Files, suspects: Sequence[SuspectFunction]) -> List[Piece]:
    """Pieces for ``suspects`` in rank order (``distance`` is the rank; the first one is protected),
    each with its class header and the imports it uses."""
    pieces: List[Piece] = []
    shown: Dict[str, Set[str]] = {}  # the lines shown of each suspect, stripped
    used = 0  # lines shown so far
    for rank, fn in enumerate(suspects):
        if not (files.root / fn.path).is_file():
            continue
        if fn.copy_of:
            fn = _where_copied(fn, files.get(fn.path).lines, shown.get(fn.copy_of, set()))
        anchor = fn.lines[0] if fn.lines else fn.start
        body = _body(files, fn, anchor, rank, LONG_FUNCTION if used < WHOLE_LINES else LATER_LINES)
        used += len(body.code.text.splitlines())
        shown.setdefault(fn.name, {line.strip() for line in body.code.text.splitlines()})
        pieces.append(body)
        pieces += _context(files, fn, rank)
    return pieces


def _where_copied(copy: SuspectFunction, lines: Sequence[str], shown: Set[str]) -> SuspectFunction:
    """``copy`` with the lines that repeat what its suspect shows first, as its most suspicious:
    a long copy is then shown where it repeats the code shown of the suspect."""
    inside = [n for n in copy.lines if 0 < n <= len(lines) and lines[n - 1].strip() in shown]
    if not inside:
        return copy
    rest = [n for n in copy.lines if n not in inside]
    return replace(copy, lines=tuple(inside + rest), top_lines=len(inside))


def _body(files: Files, fn: SuspectFunction, anchor: int, rank: int, limit: int) -> Piece:
    source = files.get(fn.path)
    if fn.kind == "module":
        start, end, _ = source.window(anchor, MODULE_WINDOW, "<module>")
        name = "<module>"
    elif fn.end - fn.start + 1 > limit:
        code = _long_slice(fn, source.lines, limit)
        return Piece(replace(code, name=code.name + _why(fn)), anchor, rank, protected=rank == 0)
    else:
        start, end, name = fn.start, fn.end, fn.name
    code = CodeSlice(fn.path, start, end, name + _why(fn), source.text(start, end))
    return Piece(code, anchor, rank, protected=rank == 0)


def _why(fn: SuspectFunction) -> str:
    """Why a function no failing test ran is shown, for its slice's name ("" for a suspect)."""
    if fn.copy_of:
        return f" (repeats lines of {fn.copy_of}; no failing test runs it)"
    if fn.calls:
        return f" (calls {fn.calls} in a line no failing test runs)"
    if fn.via:
        return f" (reads {fn.via}, whose text {fn.says!r} is in the failure)"
    if fn.says:
        return f" (its text {fn.says!r} is in the failure)"
    return ""


def _long_slice(fn: SuspectFunction, lines: Sequence[str], limit: int) -> CodeSlice:
    """A long function as ``limit`` lines: from its def line when that shows as many of its
    most suspicious lines (those with its score), each with LEAD lines after it, as any window;
    else its signature (decorators to the line before the body, at most SIGNATURE_LINES), a
    comment line saying which lines are left out, and the window holding most of them, from LEAD
    lines before the first it holds (earlier when the function ends sooner). The slice spans the
    lines it shows; its name says what is left out."""
    text = "\n".join(lines[fn.start - 1 : fn.end])
    top = sorted(fn.lines[: fn.top_lines]) or [fn.start]
    signature_end = min(_header_end(text, fn.start), fn.start + SIGNATURE_LINES - 1)
    room = limit - (signature_end - fn.start + 1) - 1  # lines left for the window

    def held(first: int, last: int) -> int:
        return sum(first <= line <= last for line in top)

    start = max(
        (max(signature_end + 2, line - LEAD) for line in top),
        key=lambda first: (held(first, first + room - 1), -first),
    )
    start = max(signature_end + 2, min(start, fn.end - room + 1))  # a window ending at the end
    head = min(fn.end, fn.start + limit - 1)
    if held(fn.start, head - LEAD) >= held(start, start + room - 1):
        name = f"{fn.name} (lines {fn.start}-{head} of {fn.start}-{fn.end}: the rest not shown)"
        return CodeSlice(fn.path, fn.start, head, name, "\n".join(lines[fn.start - 1 : head]))
    end = min(fn.end, start + room - 1)
    body = lines[signature_end] if signature_end < len(lines) else ""
    indent = body[: len(body) - len(body.lstrip())] or "    "
    gap = f"{indent}# ... lines {signature_end + 1}-{start - 1} not shown ..."
    shown = [*lines[fn.start - 1 : signature_end], gap, *lines[start - 1 : end]]
    name = (
        f"{fn.name} (lines {fn.start}-{signature_end} and {start}-{end} of {fn.start}-{fn.end}: "
        "the rest not shown)"
    )
    return CodeSlice(fn.path, fn.start, end, name, "\n".join(shown))


def _context(files: Files, fn: SuspectFunction, rank: int) -> List[Piece]:
    """Small pieces around a suspect: its class's header (with the class's attributes, docstring
    first, when they come before the methods and are short), the module-level imports it uses, and
    the module-level assignments it reads by name (a table, a pattern, a constant) when short, its
    module's or another project module's it imports (``_imported_tables``)."""
    source = files.get(fn.path)
    pieces: List[Piece] = []
    owner = source.find(fn.name.rsplit(".", 1)[0]) if "." in fn.name else None
    if owner is not None and owner.is_class:
        text = source.text(owner.start, owner.end)
        header = _header_end(text, owner.start)
        preamble = _preamble_end(text, owner.start)
        end = preamble if preamble - owner.start < CLASS_PREAMBLE_LINES else header
        name = f"class {owner.name} (header{' and attributes' if end > header else ''})"
        code = CodeSlice(fn.path, owner.start, end, name, source.text(owner.start, end))
        pieces.append(Piece(code, owner.start, rank, protected=rank == 0))
    used = _names(source.text(fn.start, fn.end))
    for start, end in sorted({span for name, span in source.import_lines.items() if name in used}):
        code = CodeSlice(fn.path, start, end, "import", source.text(start, end))
        pieces.append(Piece(code, start, rank, protected=rank == 0))
    tables = _assignments("\n".join(source.lines))
    for name, (start, end) in sorted(tables.items(), key=lambda item: item[1]):
        if name in used and end - start < MODULE_TABLE_LINES and fn.kind != "module":
            code = CodeSlice(fn.path, start, end, f"module-level {name}", source.text(start, end))
            pieces.append(Piece(code, start, rank, protected=False))
    if fn.kind != "module":
        pieces += _imported_tables(files, fn, used, rank)
    return pieces


def _imported_tables(files: Files, fn: SuspectFunction, used: Set[str], rank: int) -> List[Piece]:
    """The short module-level assignments of other project modules that ``fn`` reads under a name
    its module imports (``from isodate.isotzinfo import TZ_REGEX``): a pattern built in one module
    and used in another."""
    source, pieces = files.get(fn.path), []
    for name in sorted(used & set(source.imports)):
        module, _, attr = source.imports[name].rpartition(".")
        path = files.module_path(module) if module else None
        if path is None or path == fn.path:
            continue
        other = files.get(path)
        span = _assignments("\n".join(other.lines)).get(attr)
        if span is not None and span[1] - span[0] < MODULE_TABLE_LINES:
            start, end = span
            code = CodeSlice(path, start, end, f"module-level {attr}", other.text(start, end))
            pieces.append(Piece(code, start, rank, protected=False))
    return pieces


@lru_cache(maxsize=8)
def _assignments(text: str) -> Dict[str, Tuple[int, int]]:
    """The lines of each module-level assignment of ``text`` by the name it binds (``NAME = ...``,
    ``NAME: T = ...``); cached, every suspect of a file asks."""
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return {}
    spans: Dict[str, Tuple[int, int]] = {}
    for node in body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name):
                spans[target.id] = (node.lineno, node.end_lineno or node.lineno)
    return spans


def _preamble_end(text: str, start: int) -> int:
    """The last line of a class's leading statements that are not definitions (its docstring and
    attributes), or of its header when its body starts with a definition."""
    header = _header_end(text, start)
    try:
        node = ast.parse(_dedented(text)).body[0]
    except (SyntaxError, ValueError, IndexError):
        return header
    end = header
    for statement in getattr(node, "body", []):
        if isinstance(statement, DEF_TYPES):
            break
        end = start + (statement.end_lineno or statement.lineno) - 1
    return end


def _header_end(text: str, start: int) -> int:
    """The last line of a class or def statement's header, decorators included (``class
    X(Base):`` and a signature may span lines): the line before the first one of its body."""
    try:
        node = ast.parse(_dedented(text)).body[0]
    except (SyntaxError, ValueError, IndexError):
        return start
    if not isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) or not node.body:
        return start
    return start + max(0, node.body[0].lineno - 2)


def _names(text: str) -> Set[str]:
    try:
        tree = ast.parse(_dedented(text))
    except (SyntaxError, ValueError):
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _dedented(text: str) -> str:
    """``text`` (a definition, decorators first) moved to column 0: its first line's indentation
    taken off every line that has it. A line with less is inside a string (a docstring's
    continued line at column 0) and stays as it is, so the definition still parses."""
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), "")
    indent = first[: len(first) - len(first.lstrip())]
    return "\n".join(line[len(indent) :] if line.startswith(indent) else line for line in lines)
