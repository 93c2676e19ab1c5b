"""The suspects' code for the prompt: the functions fault localisation ranks most suspicious, whole.

Each suspect function (``types.SuspectFunction``, most suspicious first) is shown
as its whole definition under its path, with line numbers as the file has them;
a method brings its class's header line, and any function the module-level
imports it uses (so a name in it is never a mystery). A function longer than
``LONG_FUNCTION`` lines is shown around its suspicious lines, the elision said in
the slice's name. Module-level suspects are shown as a window around their line.
"""

from __future__ import annotations

import ast
from typing import List, Sequence, Set, Tuple

from repairloop.context.source import MODULE_WINDOW, WINDOW, Files, Piece
from repairloop.types import CodeSlice, Localisation, SuspectFunction

MAX_SUSPECTS = 16  # functions shown at most (the token budget may drop the farthest)
# Longer functions are shown as LONG_FUNCTION lines around their most suspicious line, from the
# def line when that line is within reach. 120 lines is about 1,500 tokens, a quarter of the
# default context_tokens; the budget's trims may still shrink it (build_context, step 4).
LONG_FUNCTION = 120


def relevant(localisation: Localisation, group: Sequence[str]) -> List[SuspectFunction]:
    """The suspects the group's failing tests ran (all of them when the line data names no test).
    Module-level code and class bodies are left out while a function is suspect: every test runs
    them at import, so they are no evidence."""
    wanted = set(group)
    ran = [f for f in localisation.functions if f.tests & wanted] or [
        f for f in localisation.functions if not f.tests
    ]
    functions = [f for f in ran if f.kind == "function"]
    return (functions or ran)[:MAX_SUSPECTS]


def suspect_pieces(files: Files, suspects: Sequence[SuspectFunction]) -> List[Piece]:
    """Pieces for ``suspects`` in rank order (``distance`` is the rank; the first one is protected),
    each with its class header and the imports it uses."""
    pieces: List[Piece] = []
    for rank, fn in enumerate(suspects):
        if not (files.root / fn.path).is_file():
            continue
        anchor = fn.lines[0] if fn.lines else fn.start
        pieces.append(_body(files, fn, anchor, rank))
        pieces += _context(files, fn, rank)
    return pieces


def _body(files: Files, fn: SuspectFunction, anchor: int, rank: int) -> Piece:
    source = files.get(fn.path)
    if fn.kind == "module":
        start, end, _ = source.window(anchor, MODULE_WINDOW, "<module>")
        name = "<module>"
    elif fn.end - fn.start + 1 > LONG_FUNCTION:
        start, end = _long_window(fn, anchor)
        name = f"{fn.name} (lines {start}-{end} of {fn.start}-{fn.end}: the rest not shown)"
    else:
        start, end, name = fn.start, fn.end, fn.name
    code = CodeSlice(fn.path, start, end, name, source.text(start, end))
    return Piece(code, anchor, rank, protected=rank == 0)


def _long_window(fn: SuspectFunction, anchor: int) -> Tuple[int, int]:
    """LONG_FUNCTION lines of a long function around ``anchor``: from its def line when the anchor
    lies within LONG_FUNCTION - WINDOW lines of it (the signature names what the code uses), else
    from WINDOW lines before the anchor."""
    start = fn.start if anchor - fn.start <= LONG_FUNCTION - WINDOW else anchor - WINDOW
    return start, min(fn.end, start + LONG_FUNCTION - 1)


def _context(files: Files, fn: SuspectFunction, rank: int) -> List[Piece]:
    """The class header of a method, and the module-level imports the function uses, as small
    pieces."""
    source = files.get(fn.path)
    pieces: List[Piece] = []
    owner = source.find(fn.name.rsplit(".", 1)[0]) if "." in fn.name else None
    if owner is not None and owner.is_class:
        header = _header_end(source.text(owner.start, owner.end), owner.start)
        code = CodeSlice(
            fn.path,
            owner.start,
            header,
            f"class {owner.name} (header)",
            source.text(owner.start, header),
        )
        pieces.append(Piece(code, owner.start, rank, protected=rank == 0))
    used = _names(source.text(fn.start, fn.end))
    for start, end in sorted({span for name, span in source.import_lines.items() if name in used}):
        code = CodeSlice(fn.path, start, end, "import", source.text(start, end))
        pieces.append(Piece(code, start, rank, protected=rank == 0))
    return pieces


def _header_end(text: str, start: int) -> int:
    """The last line of a class statement's header (``class X(Base):`` may span lines)."""
    try:
        node = ast.parse(_dedented(text)).body[0]
    except (SyntaxError, ValueError, IndexError):
        return start
    if not isinstance(node, ast.ClassDef) or not node.body:
        return start
    return start + max(0, node.body[0].lineno - 2)


def _names(text: str) -> Set[str]:
    try:
        tree = ast.parse(_dedented(text))
    except (SyntaxError, ValueError):
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def _dedented(text: str) -> str:
    lines = text.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)
