"""Source material for a context: parsed files, enclosing definitions, slices of code.

Everything is read from the project root with ``ast`` (1-based, inclusive
lines, decorators included). A file that does not parse (the syntax-error case)
is shown as a window of lines around the frame.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from repairloop.types import CodeSlice, Failure, Frame, TestFiles, is_project_path, read_inside

WINDOW = 25  # lines either side of the frame line when a slice is shrunk (trim step 4)
SMALL_CLASS_LINES = 40  # a method of a class this small is shown with its whole class
MODULE_WINDOW = 8  # lines either side of a module-level frame (an import, a constant)
MAX_CALLEES = 6  # project functions the failing test calls, at most


def code_frames(frames: Sequence[Frame], test_files: TestFiles) -> List[Frame]:
    """The frames in the project's non-test code, outermost first."""
    return [f for f in frames if is_project_path(f.path) and not test_files.is_test(f.path)]


@dataclass(frozen=True)
class _Def:
    start: int  # first decorator line
    end: int
    name: str  # qualified: Class.method
    is_class: bool
    parent: Optional["_Def"] = None


class _Source:
    """One file's lines and definitions; the outline is cached by text (``_outline``)."""

    def __init__(self, root: Path, path: str) -> None:
        # Never through a link out of the tree (a committed one could name ~/.ssh/id_rsa) nor a
        # device.
        text = read_inside(root, path) or ""
        self.lines = text.splitlines()
        defs, imports, spans = _outline(text)
        self.defs: List[_Def] = list(defs)
        # local name -> dotted "module" or "module.name"
        self.imports: Dict[str, str] = dict(imports)
        # local name -> its module-level import's lines
        self.import_lines: Dict[str, Tuple[int, int]] = dict(spans)

    def enclosing(self, line: int) -> Tuple[int, int, str]:
        """(start, end, name) of what to show for ``line``: its function, else a window."""
        inner = [d for d in self.defs if d.start <= line <= d.end]
        if not inner:
            return self.window(line, MODULE_WINDOW, "<module>")
        best = min(inner, key=lambda d: d.end - d.start)
        if best.is_class and best.end - best.start + 1 > SMALL_CLASS_LINES:
            return self.window(line, WINDOW, best.name)
        parent = best.parent
        if (
            parent is not None
            and parent.is_class
            and parent.end - parent.start + 1 <= SMALL_CLASS_LINES
        ):
            best = parent
        return best.start, best.end, best.name

    def find(self, qualname: str) -> Optional[_Def]:
        return next((d for d in self.defs if d.name == qualname), None)

    def window(self, line: int, size: int, name: str) -> Tuple[int, int, str]:
        return max(1, line - size), min(len(self.lines), line + size), name

    def text(self, start: int, end: int) -> str:
        return "\n".join(self.lines[start - 1 : end])


Outline = Tuple[
    Tuple[_Def, ...], Tuple[Tuple[str, str], ...], Tuple[Tuple[str, Tuple[int, int]], ...]
]


@lru_cache(maxsize=8)
def _outline(text: str) -> Outline:
    """(definitions, imports, the lines of each module-level import by the name it binds) of a
    module's text; cached because every iteration of a run reads the same test file and, until a
    candidate is kept, the same source files. A file that does not parse has none (it gets line
    windows only)."""
    defs: List[_Def] = []
    imports: Dict[str, str] = {}
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return (), (), ()
    _walk(body, None, defs, imports)
    spans = {
        a.asname or a.name.split(".")[0]: (node.lineno, node.end_lineno or node.lineno)
        for node in body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for a in node.names
    }
    return tuple(defs), tuple(imports.items()), tuple(spans.items())


def _walk(
    body: Sequence[ast.stmt], parent: Optional[_Def], defs: List[_Def], imports: Dict[str, str]
) -> None:
    for node in body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            name = f"{parent.name}.{node.name}" if parent else node.name
            item = _Def(
                start, node.end_lineno or node.lineno, name, isinstance(node, ast.ClassDef), parent
            )
            defs.append(item)
            _walk(node.body, item, defs, imports)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            imports.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names})
        elif isinstance(node, ast.Import):
            imports.update({a.asname or a.name: a.name for a in node.names})


@dataclass(frozen=True)
class Piece:
    """A slice while the context is built: ``distance`` 0 is the innermost frame's function."""

    code: CodeSlice
    anchor: int  # the frame line (or the definition line of a called function)
    distance: int
    protected: bool  # the innermost frame's function and the test: never dropped


class Files:
    """Parsed project files by relative path, and module-name resolution (root, then src/)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._cache: Dict[str, _Source] = {}

    def get(self, path: str) -> _Source:
        if path not in self._cache:
            self._cache[path] = _Source(self.root, path)
        return self._cache[path]

    def module_path(self, module: str) -> Optional[str]:
        base = module.replace(".", "/")
        for prefix in ("", "src/"):
            for candidate in (f"{prefix}{base}.py", f"{prefix}{base}/__init__.py"):
                if (self.root / candidate).is_file():
                    return candidate
        return None

    def resolve(self, dotted: str, depth: int = 0) -> Optional[Tuple[str, _Def]]:
        """The file and definition that ``dotted`` (``pkg.mod.func``) names, following
        re-exports."""
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            path = self.module_path(".".join(parts[:cut]))
            if path is None:
                continue
            source, attr = self.get(path), ".".join(parts[cut:])
            found = source.find(attr)
            if found is not None:
                return path, found
            if attr in source.imports and depth < 3:
                return self.resolve(source.imports[attr], depth + 1)
            return None
        return None

    def piece(
        self, path: str, line: int, distance: int, protected: bool, read_only: bool = False
    ) -> Piece:
        start, end, name = self.get(path).enclosing(line)
        code = CodeSlice(path, start, end, name, self.get(path).text(start, end), read_only)
        return Piece(code, line, distance, protected)


def _split_test_id(test_id: str) -> Tuple[str, List[str]]:
    """``tests/t.py::TestA::test_x[1-2]`` -> (``tests/t.py``, [``TestA``, ``test_x``])."""
    base = test_id.split("[", 1)[0]
    parts = base.split("::")
    return parts[0], parts[1:]


def _test_piece(files: Files, test_id: str, test_files: TestFiles) -> Optional[Tuple[Piece, _Def]]:
    """The failing test's own definition (read-only), or for a doctest of a module the definition
    whose docstring holds it (``pkg/m.py::pkg.m.Class.method``: read-only only when that module is a
    test file)."""
    path, names = _split_test_id(test_id)
    if not names or not (files.root / path).is_file():
        return None
    source = files.get(path)
    found, read_only = source.find(".".join(names)), True
    if (
        found is None and len(names) == 1 and path.endswith(".py")
    ):  # a doctest id: the module's dotted name first
        parts = names[0].split(".")
        found = next(
            (d for d in (source.find(".".join(parts[k:])) for k in range(1, len(parts))) if d), None
        )
        read_only = test_files.is_test(path)
    if found is None:
        return None
    code = CodeSlice(
        path, found.start, found.end, found.name, source.text(found.start, found.end), read_only
    )
    return Piece(code, found.start, 0, True), found


def _callees(files: Files, path: str, test: _Def, test_files: TestFiles) -> List[Tuple[str, _Def]]:
    """Project functions and classes the test's body calls by an imported name (``f()``,
    ``mod.f()``)."""
    source = files.get(path)
    try:
        tree = ast.parse(_dedent(source.text(test.start, test.end)))
    except SyntaxError:
        return []
    found: List[Tuple[str, _Def]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        dotted = _call_name(node.func, source.imports)
        target = files.resolve(dotted) if dotted else None
        if target and target not in found and not test_files.is_test(target[0]):
            found.append(target)
    return found[:MAX_CALLEES]


def _call_name(func: ast.expr, imports: Mapping[str, str]) -> Optional[str]:
    if isinstance(func, ast.Name) and func.id in imports:
        return imports[func.id]
    if (
        isinstance(func, ast.Attribute)
        and isinstance(func.value, ast.Name)
        and func.value.id in imports
    ):
        return f"{imports[func.value.id]}.{func.attr}"
    return None


def _dedent(text: str) -> str:
    lines = text.splitlines()
    indent = min((len(line) - len(line.lstrip()) for line in lines if line.strip()), default=0)
    return "\n".join(line[indent:] for line in lines)


def collect(files: Files, group: Sequence[Failure], test_files: TestFiles) -> List[Piece]:
    """Slices of the group's traceback frames (innermost first), its tests, and the tests'
    callees."""
    pieces: List[Piece] = []
    deepest = 0
    for failure in group:
        code = [
            f for f in code_frames(failure.frames, test_files) if (files.root / f.path).is_file()
        ]
        for distance, frame in enumerate(reversed(code)):
            pieces.append(files.piece(frame.path, frame.line, distance, protected=distance == 0))
            deepest = max(deepest, distance + 1)
    for failure in group:
        test = _test_piece(files, failure.test_id, test_files)
        if test is None:
            continue
        pieces.append(test[0])
        for index, (path, found) in enumerate(
            _callees(files, test[0].code.path, test[1], test_files)
        ):
            # With no frame in project code (an assertion on a returned value) the first
            # called function is the best guess for the fault: keep it like a frame.
            piece = files.piece(
                path, found.start, deepest + index, protected=deepest == 0 and index == 0
            )
            pieces.append(piece)
    return dedupe(
        pieces + _uncovered_frames(files, group, pieces, test_files, deepest + MAX_CALLEES)
    )


def _uncovered_frames(
    files: Files,
    group: Sequence[Failure],
    pieces: Sequence[Piece],
    test_files: TestFiles,
    distance: int,
) -> List[Piece]:
    """Pieces for the frames of ``group`` that no piece shows yet: a helper in a test module (an
    ``assert_equal`` of the test suite), a doctest's example line, a text file's example (read-only
    when they are test files). The traceback the prompt shows names these lines; its code must be
    there too. The innermost one is kept like a frame of the code under test when the failure has
    none."""
    shown = [(p.code.path, p.code.start_line, p.code.end_line) for p in pieces]
    added: List[Piece] = []
    for failure in group:
        frames = [
            f for f in failure.frames if is_project_path(f.path) and (files.root / f.path).is_file()
        ]
        guard = not code_frames(failure.frames, test_files)
        for frame in reversed(frames):
            if any(path == frame.path and start <= frame.line <= end for path, start, end in shown):
                continue
            piece = files.piece(
                frame.path,
                frame.line,
                distance,
                protected=guard,
                read_only=test_files.is_test(frame.path),
            )
            shown.append((frame.path, piece.code.start_line, piece.code.end_line))
            added.append(piece)
            guard, distance = False, distance + 1
    return added


def dedupe(pieces: Sequence[Piece]) -> List[Piece]:
    """One piece per (path, lines): the closest distance and any protection win; nested ones
    dropped."""
    best: Dict[Tuple[str, int, int], Piece] = {}
    for piece in pieces:
        key = (piece.code.path, piece.code.start_line, piece.code.end_line)
        old = best.get(key)
        if old is None or piece.distance < old.distance:
            best[key] = replace(piece, protected=piece.protected or bool(old and old.protected))
        elif piece.protected:
            best[key] = replace(old, protected=True)
    kept = list(best.values())
    result = []
    for piece in kept:  # a piece inside another one folds into it (a method in a small class)
        outer = next((q for q in kept if q is not piece and _inside(piece, q)), None)
        if outer is None:
            result.append(piece)
        else:
            kept[kept.index(outer)] = replace(
                outer,
                distance=min(outer.distance, piece.distance),
                protected=outer.protected or piece.protected,
            )
    return [next(q for q in kept if q.code == p.code) for p in result]


def _inside(inner: Piece, outer: Piece) -> bool:
    a, b = inner.code, outer.code
    return (
        a.path == b.path
        and b.start_line <= a.start_line
        and a.end_line <= b.end_line
        and (a.start_line, a.end_line) != (b.start_line, b.end_line)
    )
