"""Guards on a candidate patch: where it writes, whether it edits tests, how big it is.

Tests are the oracle (DESIGN.md): a candidate that edits them could make any
suite green, so it is refused unless the policy allows it. Test configuration,
CI and dependency pins are refused always, and so is content that weakens the
oracle in any file (``tamper.py``). New files are confined (``newfiles.py``).
These guards are code, not a request in the prompt: what a model was told by
text in the code or the test output can at most produce a candidate, and every
candidate comes through here.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import List, Tuple

from repairloop.errors import GuardError
from repairloop.patch.capabilities import CapabilityFinding, check_capabilities
from repairloop.patch.changes import AppliedPatch, FileChange, GuardPolicy
from repairloop.patch.effect import check_effective
from repairloop.patch.newfiles import check_new_files, split_scratch
from repairloop.patch.protected import protected_sections
from repairloop.patch.tamper import check_tamper
from repairloop.patch.testedits import doctest_edits, edited_tests
from repairloop.textutil import REDACTION_MARKER, adds_marker
from repairloop.types import matches_globs, project_relative

_PRIVATE = {
    ".git": "git's own data",
    ".repairloop": "repairloop's run data",
    "__pycache__": "compiled bytecode, which the interpreter would run instead of the source",
}


normalize_path = project_relative  # a model-written path as relative POSIX (patch.apply's name)


def resolve_inside(root: Path, path: str) -> Path:
    """``root / path`` resolved (symlinks followed), checked to stay inside ``root``.

    Raises GuardError for an absolute path, a path that escapes with ``..`` or
    through a symlink, and anything under ``.git/``, ``.repairloop/`` or ``__pycache__/``
    (compiled bytecode files are refused as binary files, ``check_guards``).
    """
    hint = "name project files by their path relative to the project root, e.g. src/pkg/module.py"
    if PurePosixPath(path).is_absolute() or PureWindowsPath(path).drive or path.startswith("~"):
        raise GuardError(f"the candidate edits {path}, an absolute path", hint=hint)
    rel = normalize_path(path)
    if rel in ("", "."):
        raise GuardError(f"the candidate edits {path!r}, which is not a file path", hint=hint)
    if rel == ".." or rel.startswith("../"):
        raise GuardError(
            f"the candidate edits {path}, which is outside the project root", hint=hint
        )
    for part in PurePosixPath(rel).parts:
        if part in _PRIVATE:
            raise GuardError(
                f"the candidate edits {path}, inside {part}/ ({_PRIVATE[part]})",
                hint="change only the project's source files",
            )
    base = root.resolve()
    target = (base / rel).resolve()
    if target != base and base not in target.parents:
        raise GuardError(
            f"the candidate edits {path}, which leads outside the project root through a symbolic "
            f"link",
            hint=hint,
        )
    return target


@dataclass(frozen=True)
class Screened:
    """A candidate that passed the guards.

    ``applied`` is what goes on to the tests: the candidate without
    ``dropped``, new files nothing in the project refers to (a scratch file
    the model invented next to its fix is not part of the patch).
    ``test_edits`` names the test files (or test functions) it changes, which
    only ``allow_test_edits`` lets through. ``capabilities`` are the capabilities it uses on
    changed lines (allowed ones and ones the file already used), for its flags.
    """

    applied: AppliedPatch
    dropped: Tuple[str, ...] = ()
    test_edits: Tuple[str, ...] = ()
    capabilities: Tuple[CapabilityFinding, ...] = ()


def check_guards(applied: AppliedPatch, root: Path, policy: GuardPolicy) -> Screened:
    """Refuse a candidate that breaks ``policy``; return what passes, scratch files dropped.

    Checks, first failure wins. Per file: the path stays inside ``root`` (no
    absolute path, no ``..`` escape, no symlink out, not ``.git/``/``.repairloop/``);
    not a protected file (``policy.protected_globs``: test configuration, CI,
    dependency pins) nor the test or dependency sections of ``pyproject.toml``/
    ``setup.cfg``; no test file (by ``policy.test_files``, or a changed ``test*``
    function found by content, or a changed doctest example of a module collected
    for its doctests) unless ``policy.allow_test_edits``; the content
    rules of ``tamper.check_tamper`` (no skip/xfail, exit, runner patch, fake
    summary, deleted assertion); no capability the file did not use (``check_capabilities``,
    unless in ``policy.allowed_capabilities``); no binary text (NUL byte, binary suffix). Then
    scratch files are dropped, new files must lie in the source directories
    (``check_new_files``), and ``max_files``, ``max_changed_lines`` (added +
    removed) and ``max_file_bytes`` hold for what is left.
    Raises GuardError whose message names the file and the rule, and PatchError
    when nothing but scratch files is left.
    """
    test_edits: List[str] = []
    for change in applied.changes:
        real = _real_path(root, change.path)
        judged_as = (
            [change]
            if real == normalize_path(change.path)
            else [change, replace(change, path=real)]
        )
        for judged in judged_as:  # by its name and by what it resolves to
            _check_protected(judged, policy)
            test_edits += _check_tests(judged, policy)
        check_tamper(change)  # the word rules first: fast, and their messages are precise
        _check_text(change)
    check_effective(applied, policy.test_files.has_doctests)
    kept, dropped = split_scratch(applied, root, policy.test_files.is_test)
    check_new_files(kept, root, policy, policy.test_files.is_test)
    created = {normalize_path(c.path) for c in kept.changes if c.old_text is None}
    capabilities: List[CapabilityFinding] = []
    for change in kept.changes:
        capabilities += check_capabilities(change, root, policy.allowed_capabilities, created)
    _check_sizes(kept, policy)
    return Screened(kept, dropped, tuple(test_edits), tuple(capabilities))


def _real_path(root: Path, path: str) -> str:
    """The project-relative path ``path`` resolves to (symbolic links followed); checks it stays
    inside."""
    target = resolve_inside(root, path)
    return (
        target.relative_to(root.resolve()).as_posix()
        if target != root.resolve()
        else normalize_path(path)
    )


def _check_protected(change: FileChange, policy: GuardPolicy) -> None:
    hint = (
        "change only the code under test; test configuration, CI and dependency pins decide the "
        "verdict"
    )
    if matches_globs(change.path, policy.protected_globs):
        raise GuardError(
            f"the candidate edits {change.path}, a protected file (test configuration, CI or "
            "dependency pins)",
            hint=hint,
        )
    sections = protected_sections(change)
    if sections:
        raise GuardError(f"the candidate changes {change.path}: {sections}", hint=hint)


def _check_tests(change: FileChange, policy: GuardPolicy) -> List[str]:
    """The test edits of ``change`` (allowed by the policy), or GuardError when not allowed."""
    hint = "change the code the failing tests exercise, not the tests"
    if policy.test_files.is_test(change.path):
        if not policy.allow_test_edits:
            raise GuardError(
                f"the candidate edits {change.path}, a test file; fix the code under test "
                "instead (tests are the oracle)",
                hint=hint,
            )
        return [change.path]
    tests = edited_tests(change)
    if tests and not policy.allow_test_edits:
        raise GuardError(
            f"the candidate edits the test {tests[0]} in {change.path}; fix the code under test "
            "instead (tests are the oracle)",
            hint=hint,
        )
    doctests = doctest_edits(change) if policy.test_files.has_doctests(change.path) else []
    if doctests and not policy.allow_test_edits:
        raise GuardError(
            f"the candidate edits the doctest examples of {doctests[0]} in {change.path} (their "
            f"code or "
            "expected output); the tests collect them, so they are tests: fix the code they run "
            "instead",
            hint=hint,
        )
    return [f"{change.path}::{name}" for name in tests] + [
        f"{change.path}::{name} (doctest)" for name in doctests
    ]


# Suffixes of files that are binary whatever they contain (compiled code, archives, images).
_BINARY_SUFFIXES = (
    ".pyc",
    ".pyo",
    ".pyd",
    ".so",
    ".dll",
    ".dylib",
    ".exe",
    ".bin",
    ".o",
    ".a",
    ".whl",
    ".zip",
    ".gz",
    ".tgz",
    ".bz2",
    ".xz",
    ".tar",
    ".jar",
    ".png",
    ".jpg",
    ".jpeg",
    ".gif",
    ".ico",
    ".pdf",
    ".sqlite",
    ".db",
)


def _check_text(change: FileChange) -> None:
    if adds_marker(change.old_text, change.new_text):
        raise GuardError(
            f"the candidate writes a redaction placeholder ({REDACTION_MARKER}...]) into "
            f"{change.path}; "
            "masked text is never content",
            hint="a value was masked because it looks secret; write code that does not need it",
        )
    binary = change.path.lower().endswith(_BINARY_SUFFIXES)
    for text in (change.old_text, change.new_text):
        if binary or (text is not None and "\x00" in text):
            raise GuardError(
                f"the candidate edits {change.path}, a binary file"
                + ("" if binary else " (it contains NUL bytes)"),
                hint="edit only text source files",
            )


def _check_sizes(applied: AppliedPatch, policy: GuardPolicy) -> None:
    hint = "make the smallest change that fixes the failing tests"
    if len(applied.changes) > policy.max_files:
        raise GuardError(
            f"the candidate touches {len(applied.changes)} files, more than the "
            f"{policy.max_files} allowed",
            hint=hint,
        )
    lines = applied.changed_lines
    if lines > policy.max_changed_lines:
        raise GuardError(
            f"the candidate changes {lines} lines (added + removed), more than the "
            f"{policy.max_changed_lines} allowed",
            hint=hint,
        )
    for change in applied.changes:
        size = len((change.new_text or "").encode("utf-8"))
        if size > policy.max_file_bytes:
            raise GuardError(
                f"the candidate makes {change.path} {size} bytes, more than the "
                f"{policy.max_file_bytes} allowed",
                hint=hint,
            )
