"""The corpus of recorded answers (``fixtures/answers/``): loading a case and judging the parser on
it.

Shared by ``tests/test_patch.py`` (every case must pass) and ``tests/bench/answer_shapes.py``
(the share that does). A case's expected outcome is either the files in ``after/`` (plus
``expect.json``) or the refusal substrings of ``error.txt``; ``shown.json`` lists the code
slices the prompt showed ("path:start-end"), by default every non-test ``.py`` file whole.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from repairloop.errors import PatchError
from repairloop.patch import AppliedPatch, apply_answer
from repairloop.types import CodeSlice

ANSWERS = Path(__file__).resolve().parent.parent / "fixtures" / "answers"
CASES = sorted(d for d in ANSWERS.iterdir() if d.is_dir() and not d.name.startswith("_"))


def project(case: Path, tmp_path: Path) -> Path:
    """A copy of the case's project (``before/``, else ``_base/``) under ``tmp_path``."""
    source = case / "before" if (case / "before").is_dir() else ANSWERS / "_base"
    root = tmp_path / "project"
    shutil.copytree(source, root)
    return root


def shown(case: Path, root: Path) -> Tuple[CodeSlice, ...]:
    """The code the prompt showed for ``case``, read from the copy at ``root``."""
    spec = case / "shown.json"
    if spec.exists():
        wanted = [str(s) for s in json.loads(spec.read_text())]
    else:
        files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py"))
        wanted = [
            f"{f}:1-{max(len((root / f).read_text().splitlines()), 1)}"
            for f in files
            if not Path(f).name.startswith("test_")
        ]
    pieces = []
    for item in wanted:
        path, _, span = item.partition(":")
        start, _, end = span.partition("-")
        lines = (root / path).read_text().splitlines()
        pieces.append(
            CodeSlice(path, int(start), int(end), "", "\n".join(lines[int(start) - 1 : int(end)]))
        )
    return tuple(pieces)


def expect(case: Path) -> Dict[str, object]:
    path = case / "expect.json"
    return dict(json.loads(path.read_text())) if path.exists() else {}


def after(case: Path) -> Dict[str, str]:
    folder = case / "after"
    if not folder.is_dir():
        return {}
    return {
        p.relative_to(folder).as_posix(): p.read_bytes().decode()
        for p in folder.rglob("*")
        if p.is_file()
    }


def refusal(case: Path) -> Optional[List[str]]:
    """The substrings the refusal must name, or None for a case that must succeed."""
    path = case / "error.txt"
    return path.read_text().splitlines() if path.exists() else None


def run(case: Path, root: Path) -> Tuple[Optional[AppliedPatch], Optional[PatchError]]:
    """Apply the case's answer to ``root`` the way the loop does (with the code shown)."""
    try:
        return apply_answer(
            (case / "answer.md").read_bytes().decode(), root, shown=shown(case, root)
        ), None
    except PatchError as err:
        return None, err


@dataclass(frozen=True)
class Verdict:
    """Whether the parser gave the expected candidate or refusal, and what went wrong otherwise."""

    right: bool
    detail: str = ""


def judge(case: Path, tmp_path: Path) -> Verdict:
    """Run ``case`` on a fresh copy and compare with its expected outcome."""
    root = project(case, tmp_path)
    applied, error = run(case, root)
    needles = refusal(case)
    if needles is not None:
        if error is None:
            return Verdict(False, "accepted, expected a refusal")
        missing = [n for n in needles if n not in str(error)]
        if missing or not error.hint:
            return Verdict(False, f"refused without naming {missing or 'a hint'}: {error}")
        return Verdict(True)
    if applied is None:
        return Verdict(False, f"refused: {error}")
    return _compare(case, applied)


def _compare(case: Path, applied: AppliedPatch) -> Verdict:
    want, spec = after(case), expect(case)
    deleted = [str(p) for p in spec.get("deleted", [])]  # type: ignore[attr-defined]
    got = {c.path: c for c in applied.changes}
    if sorted(got) != sorted([*want, *deleted]):
        return Verdict(False, f"changed {sorted(got)}, expected {sorted([*want, *deleted])}")
    for path, text in want.items():
        if got[path].new_text != text:
            return Verdict(False, f"{path}: new text differs from after/{path}")
    for path in deleted:
        if got[path].new_text is not None:
            return Verdict(False, f"{path} not deleted")
    for path, match in dict(spec.get("match", {})).items():  # type: ignore[call-overload]
        if got[path].match != match:
            return Verdict(False, f"{path} located {got[path].match}, expected {match}")
    if "format" in spec and applied.format != spec["format"]:
        return Verdict(False, f"format {applied.format}, expected {spec['format']}")
    if list(applied.located) != list(spec.get("located", [])):  # type: ignore[call-overload]
        return Verdict(
            False, f"located {list(applied.located)}, expected {spec.get('located', [])}"
        )
    return Verdict(True)
