"""Definitions anywhere in the project: where a whole-function answer's unshown name lives.

A model that answers with whole functions often fixes one the prompt did not
show (the helper the shown function calls, a method of a class shown only in
part): in trials on real bugs, about half of the right whole-function answers.
Such a name is looked up in every Python file of the project (virtualenvs,
``.git``, caches and build output left out, ``types.copy_ignore``), each read
through ``types.read_inside`` (no link followed, size capped). A file is parsed
only when a cheap scan of its lines defines the name.

``locate`` applies the rule: the one definition of that name outside the
test files is the one the answer means; several are ambiguous, one only in a
test file is read-only, none is the caller's refusal.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Sequence

from repairloop.errors import PatchError
from repairloop.patch.outline import Definition, definitions, parse_module
from repairloop.patch.replace import Target
from repairloop.types import copy_ignore, read_inside

# Build output at the project root holds copies of the sources (``build/lib/pkg/``), which would
# make every name ambiguous; deeper down a directory of that name may be a package of the project.
_BUILD_DIRS = frozenset({"build", "dist", ".eggs"})
# Python files scanned at most (newfiles.MAX_SCANNED_FILES reads 3,000 for a lighter question); past
# it a single definition found is no proof that the name is unique, and nothing is located.
MAX_FILES = 10_000
_LISTED = 5  # candidates named in an ambiguity refusal
_DEFINES = re.compile(r"^[ \t]*(?:async[ \t]+)?(?:def|class)[ \t]+(\w+)", re.M)


def read_target(root: Path, rel: str) -> Optional[Target]:
    """The parsed Python file ``root/rel`` (no shown definitions), read with ``read_inside``.

    None when it cannot be read (a symbolic link, not a regular file, over
    ``MAX_SOURCE_BYTES``, not UTF-8) or does not parse.
    """
    text = read_inside(root, rel)
    if text is None:
        return None
    text = text.replace("\r\n", "\n")
    tree = parse_module(text)
    if tree is None:
        return None
    lines = text.split("\n")
    return Target(rel, lines, tree, definitions(tree, lines), set())


@dataclass(frozen=True)
class Found:
    """A definition found in the project: its file, itself, and whether that file is a test file."""

    target: Target
    definition: Definition
    test: bool

    @property
    def place(self) -> str:
        """``path::qualname``, as the journal and the refusals name it."""
        return f"{self.target.path}::{self.definition.qualname}"


class ProjectDefs:
    """The project's Python files under ``root``, scanned once for the names they define, parsed on
    demand.

    ``is_test`` says which project-relative paths are test files (the guards'
    ``TestFiles.is_test``). ``complete`` is False when the project has more
    than ``MAX_FILES`` Python files and the scan stopped.
    """

    def __init__(self, root: Path, is_test: Callable[[str], bool]) -> None:
        self.root, self.is_test = root, is_test
        self.complete = True
        self._names: Optional[Dict[str, List[str]]] = None
        self._parsed: Dict[str, Optional[Target]] = {}

    def find(self, name: str) -> List[Found]:
        """Every definition called ``name``, at the top of a module or in a class (``X.name``), by
        path."""
        found = []
        for path in sorted(self._index().get(name, [])):
            if path not in self._parsed:
                self._parsed[path] = read_target(self.root, path)
            target = self._parsed[path]
            if target is not None:
                found += [
                    Found(target, d, self.is_test(path))
                    for q, d in sorted(target.defs.items())
                    if q == name or q.endswith("." + name)
                ]
        return found

    def _index(self) -> Dict[str, List[str]]:
        if self._names is None:
            self._names = {}
            for count, path in enumerate(python_files(self.root)):
                if count >= MAX_FILES:
                    self.complete = False
                    break
                for name in set(_DEFINES.findall(read_inside(self.root, path) or "")):
                    self._names.setdefault(name, []).append(path)
        return self._names


def python_files(root: Path) -> Iterator[str]:
    """Project-relative POSIX paths of the ``.py`` files under ``root``, each directory's by name.

    Left out: linked directories, environments and caches (``copy_ignore``'s
    list, any directory holding a ``pyvenv.cfg``), build output at the root.
    """
    for folder, dirs, files in os.walk(root):  # does not descend into linked directories
        top = folder == os.fspath(root)
        dirs[:] = sorted(
            d
            for d in dirs
            if not copy_ignore(folder, [d])
            and not (top and d in _BUILD_DIRS)
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )
        for name in sorted(files):
            if name.endswith(".py"):
                yield Path(folder, name).relative_to(root).as_posix()


def locate(project: ProjectDefs, name: str, where: str, label: str = "") -> Optional[Found]:
    """The one definition outside the test files that an answer's unshown ``name`` means; None when
    the project has no definition of that name (the caller refuses as before).

    ``where`` names the answer's definition in messages; ``label`` is the file
    the block was given under, which does not define it. Raises PatchError
    when the block's label names another file than the one defining it (the
    message says where it is), when several files define it (at most five
    candidates listed, ``path::qualname``), when only test files do (tests are
    read-only), and when the project is too large to tell the name unique.
    """
    found = project.find(name)
    if not found:
        return None
    code = [f for f in found if not f.test]
    places = _places(code or found)
    if label:
        tests = " (a test file, read-only)" if not code else ""
        raise PatchError(
            f"the answer defines {where} under {label}, which has no such definition; it is in "
            f"{places}{tests}",
            hint="give the block under the path of the file that defines it",
        )
    if not code:
        raise PatchError(
            f"the answer defines {where}, which is not in the code shown and is defined only in a "
            f"test file ({places}); test files are read-only to a candidate",
            hint="change the code under test, not the tests",
        )
    hint = "give the block under the path of the file to change, on the line above the fence"
    if len(code) > 1:
        raise PatchError(
            f"the answer defines {where}, which is not in the code shown and matches {len(code)} "
            f"definitions in the project ({places}); it is ambiguous",
            hint=hint,
        )
    if not project.complete:
        raise PatchError(
            f"the answer defines {where}, which is not in the code shown; the project has more "
            f"than {MAX_FILES:,} Python files, too many to tell whether {places} is the only one",
            hint=hint,
        )
    return code[0]


def _places(found: Sequence[Found]) -> str:
    named = ", ".join(f"`{f.place}`" for f in found[:_LISTED])
    return named + (f" and {len(found) - _LISTED} more" if len(found) > _LISTED else "")
