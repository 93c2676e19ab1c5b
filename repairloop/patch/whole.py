"""Whole-code answers: complete functions, methods, classes or files, as FileEdits.

Models that cannot write diffs answer with the corrected code itself (aider
keeps a "whole" edit format for them). Rules, strict by design:

- a fenced Python block whose definitions all exist in the code the prompt
  showed (or, under a file's path, in that file) replaces each of them (a
  method given bare or inside its class; a class given with all its members
  replaces the class, with some of them just those, and so does a class that
  gives only methods under a bare ``class Name:`` or without the class code
  the file's class has); definitions equal to the current ones change nothing;
- a definition of a block under no path that the code shown does not have is
  looked up in the whole project (``lookup.py``): the one definition of that
  name outside the test files is replaced, and the edit names it
  (``FileEdit.located``); several are refused as ambiguous, candidates listed;
  one only in a test file is refused (tests are read-only); under a file's
  path that does not define it, the refusal says where it is;
- a block under a file's path that holds every top-level definition of that
  file and code the file does not have is the whole new file; under a path
  that does not exist, a new file;
- refused, with the reason: a name that is in neither the code shown nor
  the project, or shown more than once; two different versions of one
  definition; a definition whose body is only ``...``; new module-level code
  next to definitions (an import, a constant: send a diff); a Python block
  that does not parse.

Demo code beside the definitions (``if __name__ == "__main__":``, a bare
``print(...)`` call) and placeholders outside the replaced definitions
elide nothing that is changed and are ignored; placeholders inside them are
refused by ``elision.py`` once the new texts are known.
"""

from __future__ import annotations

import ast
import difflib
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Tuple

from repairloop.errors import PatchError
from repairloop.patch.changes import FileEdit
from repairloop.patch.fences import CodeBlock, code_blocks
from repairloop.patch.guards import resolve_inside
from repairloop.patch.indentstyle import restyler
from repairloop.patch.lookup import ProjectDefs, locate, read_target
from repairloop.patch.outline import (
    DEF_TYPES,
    Definition,
    DefNode,
    describe,
    first_new,
    is_demo,
    is_stub,
    members,
    parse_module,
    shown_span,
    statement_keys,
    syntax_error,
)
from repairloop.patch.replace import BlockPlan, Target, def_edits, file_edits, reindent
from repairloop.types import CodeSlice, TestFiles

HINT = (
    "give each function or method you change complete, in a ```python block with its file path on "
    "the line above, named as in the code shown; or answer with a unified diff"
)


@dataclass
class _Answer:
    """What an answer's blocks are matched against, and what they ask for so far.

    ``targets`` are the shown files, then each file a block names or a
    definition was located in (``def_edits`` takes every edited file from there).
    """

    root: Path
    targets: Dict[str, Target]
    project: ProjectDefs
    plan: BlockPlan = field(default_factory=BlockPlan)


def parse_whole(
    text: str,
    root: Path,
    shown: Optional[Sequence[CodeSlice]],
    is_test: Optional[Callable[[str], bool]] = None,
) -> List[FileEdit]:
    """FileEdits for the whole-code blocks of ``text`` (``\\n`` newlines); [] when there is none.

    ``shown`` is the code the prompt showed (None: unknown, then every
    definition of a block under no path is looked up in the project).
    ``is_test`` says which project-relative paths are test files (default: the
    default ``test_globs``); a definition only they have is not located there.
    Raises PatchError for the refusals listed in the module docstring.
    """
    blocks = [b for b in code_blocks(text) if b.python]
    if not blocks:
        return []
    answer = _Answer(
        root, _shown_targets(root, shown or ()), ProjectDefs(root, is_test or TestFiles().is_test)
    )
    for block in blocks:
        _plan_block(block, answer)
    plan, targets = answer.plan, answer.targets
    edits = file_edits(plan, targets) + def_edits(plan, targets)
    if not edits and (plan.defs or plan.files):
        raise PatchError(
            "the answer's code is the same as the current code: nothing would change",
            hint="change the code that makes the failing tests fail",
        )
    if not edits and plan.fragments:
        raise PatchError(
            f"the code block at line {plan.fragments[0]} of the answer is a fragment, not a "
            "complete function, method or class",
            hint=HINT,
        )
    return edits


def _read(root: Path, path: str) -> Optional[Target]:
    """The file a prompt or an answer names, read where it resolves inside ``root`` (GuardError
    outside)."""
    base = root.resolve()
    real = resolve_inside(root, path)
    target = read_target(base, real.relative_to(base).as_posix()) if real != base else None
    return None if target is None else replace(target, path=path)


def _shown_targets(root: Path, shown: Sequence[CodeSlice]) -> Dict[str, Target]:
    spans: Dict[str, List[Tuple[int, int]]] = {}
    for piece in shown:
        if piece.path.endswith(".py"):
            spans.setdefault(piece.path, []).append((piece.start_line, piece.end_line))
    targets = {}
    for path, ranges in spans.items():
        target = _read(root, path) if resolve_inside(root, path).is_file() else None
        if target is not None:
            target.shown = {q for q, d in target.defs.items() if shown_span(ranges, d)}
            targets[path] = target
    return targets


def _resolve(label: str, root: Path, targets: Dict[str, Target]) -> str:
    """The project path a block's label means: itself, else the one shown file it is the tail of."""
    label = label[2:] if label.startswith("./") else label
    if resolve_inside(root, label).is_file():
        return label
    tails = [p for p in targets if p == label or p.endswith("/" + label)]
    return tails[0] if len(tails) == 1 else label


def _plan_block(block: CodeBlock, answer: _Answer) -> None:
    root, targets, plan = answer.root, answer.targets, answer.plan
    tree = parse_module(block.code)
    if tree is None and not block.language and not block.label:
        return  # an unmarked block that is not Python: output, a shell session
    if tree is None:
        raise PatchError(
            f"the Python code block at line {block.line} of the answer does not parse: "
            f"{syntax_error(block.code)}",
            hint=HINT,
        )
    if not any(isinstance(s, DEF_TYPES) for s in tree.body) and not block.label:
        plan.fragments.append(block.line)
        return
    candidates = list(targets.values())
    path = ""
    if block.label:
        path = _resolve(block.label, root, targets)
        if not resolve_inside(root, path).is_file():
            if path.endswith(".py"):  # a new module; the guards decide whether it may stay
                plan.files.setdefault(path, []).append((block.code, block.line))
                return
            path = ""
    if block.label and path:
        target = targets.get(path) or _read(root, path)
        if target is None:
            raise PatchError(
                f"the code block at line {block.line} names {path}, which is not Python "
                "code that parses",
                hint=HINT,
            )
        targets.setdefault(path, target)
        if _whole_file(block, tree, target):
            for node in tree.body:
                if isinstance(node, DEF_TYPES):
                    _check_stubs(node, node.name, target, block)
            plan.files.setdefault(path, []).append((block.code, block.line))
            return
        # Under its file's path a definition is named unambiguously: any definition of that file may
        # be replaced, shown or not (a function the shown one calls, say). Unlabelled, only the
        # shown ones.
        candidates = [replace(target, shown=set(target.defs))]
    _plan_definitions(block, tree, candidates, answer, path)


def _whole_file(block: CodeBlock, tree: ast.Module, target: Target) -> bool:
    """True for a block that is the whole new file; raise when it is neither that nor
    definitions."""
    new = [k for k in statement_keys(tree.body) if k not in statement_keys(target.tree.body)]
    if not new:
        return False
    names = {n.name for n in tree.body if isinstance(n, DEF_TYPES)}
    missing = [n.name for n in target.tree.body if isinstance(n, DEF_TYPES) and n.name not in names]
    if not missing:
        return True
    if is_demo(tree, new):
        return False
    raise PatchError(
        f"the code block at line {block.line} for {target.path} is not the whole file (it leaves "
        f"out {', '.join(missing[:5])}) and holds module code the file does not have "
        f"({first_new(tree, new)})",
        hint=HINT,
    )


def _plan_definitions(
    block: CodeBlock, tree: ast.Module, candidates: List[Target], answer: _Answer, label: str
) -> None:
    """Plan each definition of the block; ``label`` is the file the block is under ("" for none)."""
    touched: Set[str] = set()
    for node in tree.body:
        if isinstance(node, DEF_TYPES):
            touched |= _plan_def(node, "", block, candidates, answer, label)
    known = [k for path in sorted(touched) for k in statement_keys(answer.targets[path].tree.body)]
    new = [k for k in statement_keys(tree.body) if k not in known]
    if new and not is_demo(tree, new):
        raise PatchError(
            f"the code block at line {block.line} holds module code beside its definitions that "
            f"the file does not have ({first_new(tree, new)}); whole definitions only replace "
            "definitions",
            hint="send the change as a unified diff, or only complete definitions",
        )


def _find(
    node: DefNode,
    container: str,
    candidates: List[Target],
    block: CodeBlock,
    answer: _Answer,
    label: str,
) -> Tuple[Target, Definition]:
    name = node.name
    if container:
        hits = [
            (t, t.defs[f"{container}.{name}"])
            for t in candidates
            if f"{container}.{name}" in t.defs
        ]
    else:
        # Every shown definition of that name, at the top or in a class: more than one is ambiguous.
        # A class counts as shown when any of its members is (a big class is shown as a window).
        hits = [
            (t, t.defs[q])
            for t in candidates
            for q in sorted(t.defs)
            if (q == name or q.endswith("." + name)) and _shown(t, q, node)
        ]
    where = f"`{container + '.' if container else ''}{node.name}` (code block at line {block.line})"
    found = None if hits or container else locate(answer.project, name, where, label)
    if found is not None:  # a member of a class is looked for in its class only
        target = answer.targets.setdefault(found.target.path, found.target)
        answer.plan.located.add((target.path, found.definition.qualname))
        return target, target.defs[found.definition.qualname]
    if not hits:
        shown = sorted({q for t in candidates for q in t.shown}, key=lambda q: (q.count("."), q))
        close = difflib.get_close_matches(
            name, [q.rsplit(".", 1)[-1] for q in shown], n=1, cutoff=0.5
        )
        listed = (
            f"did you mean `{next(q for q in shown if q.rsplit('.', 1)[-1] == close[0])}`?"
            if close
            else "shown: " + (", ".join(shown[:8]) or "no function")
        )
        raise PatchError(
            f"the answer defines {where}, which is not in the code shown ({listed}); "
            "a new name makes the answer ambiguous",
            hint=HINT,
        )
    if len(hits) > 1 and not container:
        hits = _by_first_parameter(node, hits)
    if len(hits) > 1:
        places = ", ".join(f"{t.path}: {d.qualname}" for t, d in hits[:4])
        raise PatchError(
            f"the answer's {where} matches {len(hits)} definitions in the code shown ({places}); "
            "it is ambiguous",
            hint="give a method inside its class (`class Name:` then the method)",
        )
    return hits[0]


def _by_first_parameter(
    node: DefNode, hits: List[Tuple[Target, Definition]]
) -> List[Tuple[Target, Definition]]:
    """A bare function that several shown definitions are named like: one whose first parameter is
    ``self`` or ``cls`` is a method, any other the module-level function; the hits of that kind
    (more than one: still ambiguous, among those), or all of them when none is of that kind."""
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return hits
    params = node.args.posonlyargs + node.args.args
    method = bool(params) and params[0].arg in ("self", "cls")
    kind = [(t, d) for t, d in hits if ("." in d.qualname) == method]
    return kind or hits


def _shown(target: Target, qualname: str, node: DefNode) -> bool:
    if qualname in target.shown:
        return True
    return isinstance(node, ast.ClassDef) and any(
        q.startswith(qualname + ".") for q in target.shown
    )


def _plan_def(
    node: DefNode,
    container: str,
    block: CodeBlock,
    candidates: List[Target],
    answer: _Answer,
    label: str,
) -> Set[str]:
    target, old = _find(node, container, candidates, block, answer, label)
    _check_stubs(node, old.qualname, target, block)
    if isinstance(node, ast.ClassDef) and isinstance(old.node, ast.ClassDef):
        if _members_only(node, old):  # each method replaces its own
            _check_class_statements(node, old, block)
            touched = {target.path}
            for member in node.body:
                if isinstance(member, DEF_TYPES):
                    touched |= _plan_def(member, old.qualname, block, [target], answer, label)
            return touched
    lines = block.code.split("\n")
    new = describe(node, "", lines)
    restyle = restyler(lines, target.lines)  # tabs for a tab-indented file, and so on
    code = [restyle(line) for line in lines[new.start - 1 : new.end]]
    body = reindent(code, restyle(new.indent + "x")[:-1], old.indent)
    answer.plan.defs.setdefault((target.path, old.qualname), []).append((tuple(body), block.line))
    return {target.path}


def _members_only(node: ast.ClassDef, old: Definition) -> bool:
    """Whether the answer's class only carries methods to replace, rather than being the class.

    It carries methods when it lacks some of the class's members, or when it gives no class code
    (attributes, assignments) while the class has some, or when its header is a bare
    ``class Name:`` for a class with bases, keywords or decorators: replacing the class then
    would drop what the answer only left out (a base class, ``varname_prefix = '$'``).
    """
    assert isinstance(old.node, ast.ClassDef)
    given = {n.name for n in node.body if isinstance(n, DEF_TYPES)}
    if not set(members(old)) <= given:
        return True
    if _class_code(node):
        return False  # it writes class code: it is the whole class
    bare = not (node.bases or node.keywords or node.decorator_list)
    dressed = bool(old.node.bases or old.node.keywords or old.node.decorator_list)
    return bool(_class_code(old.node)) or (bare and dressed)


def _class_code(node: ast.ClassDef) -> List[ast.stmt]:
    """The statements of a class's body that are neither definitions nor its docstring."""
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    return [stmt for stmt in body if not isinstance(stmt, DEF_TYPES)]


def _check_stubs(node: DefNode, qualname: str, target: Target, block: CodeBlock) -> None:
    """Refuse a definition (or a member of a given class) whose body is only ``...`` where the
    code's is not."""
    old = target.defs.get(qualname)
    if old is not None and is_stub(node) and not is_stub(old.node):
        raise PatchError(
            f"the answer elides code: its `{qualname}` (code block at line {block.line}) has "
            "only `...` for a body",
            hint=HINT,
        )
    if isinstance(node, ast.ClassDef):
        for member in node.body:
            if isinstance(member, DEF_TYPES):
                _check_stubs(member, f"{qualname}.{member.name}", target, block)


def _check_class_statements(node: ast.ClassDef, old: Definition, block: CodeBlock) -> None:
    assert isinstance(old.node, ast.ClassDef)
    have = statement_keys(old.node.body)
    for stmt in node.body:
        if not isinstance(stmt, DEF_TYPES) and ast.dump(stmt) not in have:
            raise PatchError(
                f"the answer's class {old.qualname} (code block at line {block.line}) gives some "
                f"of its methods and class code the class does not have (its line {stmt.lineno})",
                hint="give the whole class, or only the methods you change",
            )
