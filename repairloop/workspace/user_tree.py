"""The only writes to the user's tree (``--apply``), and the check of whether a patch is there.

Both work on copies of the touched files outside any repository, so the user's
index, eol and whitespace settings play no part and nothing is half-written.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

from repairloop.errors import ProjectError, WorkspaceError
from repairloop.textutil import numstat_paths
from repairloop.types import within
from repairloop.workspace.gitcmd import GitFailed, hash_file, run_git
from repairloop.workspace.tree import StartState

# (bytes or symlink target, mode, is_symlink); None = the file does not exist.
_Content = Optional[Tuple[bytes, int, bool]]


def _read_content(path: Path) -> _Content:
    if path.is_symlink():
        return os.fsencode(os.readlink(path)), 0, True
    if path.is_file():
        return path.read_bytes(), path.stat().st_mode & 0o7777, False
    return None


def _put(path: Path, content: _Content) -> None:
    """Write (tmp file + os.replace, so a failed write leaves the old file) or delete."""
    if content is None:
        if path.is_symlink() or path.exists():
            path.unlink()
        return
    data, mode, is_link = content
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.repairloop-tmp")
    try:
        if is_link:
            os.symlink(os.fsdecode(data), tmp)
        else:
            tmp.write_bytes(data)
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    finally:
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()


def _scratch(tmp: Path, patch: str) -> Tuple[Path, Path]:
    """An empty ``tree/`` and ``fix.patch`` (the patch's bytes, newline-ended) in ``tmp``."""
    scratch, patch_file = tmp / "tree", tmp / "fix.patch"
    scratch.mkdir()
    data = patch.encode("utf-8", "surrogateescape")
    patch_file.write_bytes(data if data.endswith(b"\n") else data + b"\n")
    return scratch, patch_file


def _patch_paths(scratch: Path, patch_file: Path) -> List[str]:
    """The project-relative paths a patch touches (``git apply --numstat -z``)."""
    try:
        output = run_git(scratch, "apply", "--numstat", "-z", str(patch_file), strip=False)
    except GitFailed as exc:
        raise ProjectError(
            f"the patch cannot be read: {exc.stderr}",
            hint="check the patch file (it is kept in the run dir as fix.patch)",
        ) from exc
    return numstat_paths(output)


def _new_contents(
    project: Path, scratch: Path, patch_file: Path, paths: List[str]
) -> Dict[str, _Content]:
    """Apply the patch to copies of the touched files; their new contents by path."""
    for rel in paths:
        old = _read_content(project / rel)
        if old is not None:
            _put(scratch / rel, old)
    try:
        run_git(scratch, "apply", "--whitespace=nowarn", str(patch_file), workspace=True)
    except GitFailed as exc:
        raise ProjectError(
            f"the patch does not apply to the project: {exc.stderr}",
            hint="the patch is kept in the run dir as fix.patch",
        ) from exc
    return {rel: _read_content(scratch / rel) for rel in paths}


def apply_to_user_tree(project: Path, patch: str, start: StartState) -> List[str]:
    """Write ``patch`` (paths relative to the project) into the user's tree; all or nothing.

    Refuses with ProjectError, writing nothing, when a touched file differs from
    ``start`` (sha256) or the patch does not apply. New contents are computed
    first by ``git apply`` on copies outside any repository (byte-exact: CRLF and
    missing final newlines kept, no user whitespace or eol settings); if a write
    then fails, what was written is restored and WorkspaceError is raised.
    Never stages or commits. Returns the paths written (created, changed, deleted).
    """
    project = Path(project).absolute()
    with tempfile.TemporaryDirectory(prefix="repairloop-apply-") as tmp:
        scratch, patch_file = _scratch(Path(tmp), patch)
        paths = _patch_paths(scratch, patch_file)
        outside = [p for p in paths if ".." in p.split("/") or not within(project / p, project)]
        changed = [p for p in paths if hash_file(project / p) != start.files.get(p)]
        if outside or changed:
            raise ProjectError(
                f"not applied: "
                f"{'outside the project' if outside else 'changed since the run started'}"
                f": {', '.join(outside or changed)}",
                hint="the patch is kept in the run dir as fix.patch; "
                "review it and apply it by hand",
            )
        new = _new_contents(project, scratch, patch_file, paths)
    _write_all(project, new)
    return sorted(new)


def _write_all(project: Path, new: Dict[str, _Content]) -> None:
    backups = {rel: _read_content(project / rel) for rel in new}
    written: List[str] = []
    for rel in sorted(new):
        try:
            _put(project / rel, new[rel])
        except OSError as exc:
            for done in reversed(written):
                with contextlib.suppress(OSError):
                    _put(project / done, backups[done])
            raise WorkspaceError(
                f"could not write {rel} ({exc}); nothing was changed",
                hint="fix the cause; the patch is kept in the run dir as fix.patch",
            ) from exc
        written.append(rel)


def patch_state(project: Path, patch: str) -> str:
    """Is ``patch`` in the user's files? ``applied``, ``not_applied`` or ``unknown``.

    Checked on copies of the touched files outside any repository: the patch
    reverses cleanly (applied), or applies cleanly (not applied), or neither
    (the files were changed otherwise: a person must look). Used on resume for
    an apply intent without its done record (DESIGN.md, side effects).
    """
    project = Path(project).absolute()
    with tempfile.TemporaryDirectory(prefix="repairloop-check-") as tmp:
        scratch, patch_file = _scratch(Path(tmp), patch)
        for rel in _patch_paths(scratch, patch_file):
            old = _read_content(project / rel)
            if old is not None:
                _put(scratch / rel, old)
        for state, extra in (("applied", ("--reverse",)), ("not_applied", ())):
            try:
                run_git(scratch, "apply", "--check", *extra, str(patch_file), workspace=True)
                return state
            except GitFailed:
                continue
    return "unknown"
