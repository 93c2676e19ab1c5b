"""The reported patch is the union of kept candidates, proven alone on a fresh copy of the start
state."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Iterator

import pytest

from repairloop.errors import GuardError, PatchError
from repairloop.journal import Journal
from repairloop.loop import stop
from repairloop.loop.proof import prove, union
from repairloop.loop.suite import TestSuite
from repairloop.loop.validation import ValidationSetup
from repairloop.patch import AppliedPatch, FileChange, GuardPolicy
from repairloop.patch.effect import check_effective
from repairloop.patch.overfit import check_hardcoded, overfitting_flags
from repairloop.patch.testliterals import assertion_literals
from repairloop.runner import is_pytest_command
from repairloop.settings import Settings
from repairloop.types import Outcome, StopReason
from repairloop.workspace import open_workspace
from repairloop.workspace.fresh import start_copy

FAILING = ("tests/test_lists.py::test_last_n",)
BUGGY = "    return items[-n - 1:]\n"


def change(
    root: Path, new_line: str, old_line: str = BUGGY, path: str = "calc/lists.py"
) -> FileChange:
    old = (root / path).read_text()
    return FileChange(path, old, old.replace(old_line, new_line), "exact", 1.0)


@pytest.fixture()
def setup(make_project, tmp_path: Path) -> Iterator[ValidationSetup]:
    project = make_project("off_by_one")
    settings = Settings()
    with open_workspace(
        project, run_id="proof", registry_dir=project / ".repairloop" / "worktrees"
    ) as ws:
        suite = TestSuite.for_project(settings, project, {}, lambda: 600.0)
        policy = GuardPolicy()
        yield ValidationSetup(
            workspace=ws,
            suite=suite,
            journal=Journal(tmp_path / "run"),
            policy=policy,
            test_files=policy.test_files,
            final_runs=2,
            targeted=is_pytest_command(suite.command),
            interpreter=None,
            guarded=policy.guards_verdict,
        )


def proof_of(setup: ValidationSetup, patch: AppliedPatch) -> stop.Ending:
    proof = prove(setup, patch, FAILING, FAILING)
    ending = stop.Ending(StopReason.SUCCESS, "every failing test passes", Outcome.FIXED)
    return stop.proven(ending, proof.passed, proof.detail)


def test_the_right_patch_holds_up_every_final_run(setup: ValidationSetup) -> None:
    patch = AppliedPatch((change(setup.workspace.root, "    return items[-n:]\n"),), "union")
    proof = prove(setup, patch, FAILING, FAILING)
    assert proof.passed and proof.held == proof.required == 2 and proof.guards


def test_a_patch_that_only_worked_in_the_workspace_fails_the_proof(setup: ValidationSetup) -> None:
    # In the workspace a file left by an earlier run made this pass; on a fresh copy nothing is left
    # over.
    leans = (
        "    import os\n    if os.path.exists(os.path.join(os.path.dirname(__file__), 'warm')):\n"
        "        return items[-n:]\n" + BUGGY
    )
    (setup.workspace.root / "calc" / "warm").write_text("left by a test")
    # its capabilities (os, __file__) allowed: the proof is what this test is about
    setup = dataclasses.replace(
        setup, policy=dataclasses.replace(setup.policy, allowed_capabilities=frozenset({"*"}))
    )
    ending = proof_of(setup, AppliedPatch((change(setup.workspace.root, leans),), "union"))
    assert ending.reason is StopReason.PROOF_FAILED and ending.outcome is Outcome.NOT_FIXED
    assert "test_last_n did not pass" in ending.detail


def test_the_proof_copy_is_the_start_state_whatever_the_workspace_holds(
    setup: ValidationSetup,
) -> None:
    root = setup.workspace.root
    (root / "calc" / "lists.py").write_text("broken by a candidate")
    (root / "stray.txt").write_text("written by a test")
    with start_copy(setup.workspace) as copy:
        assert "def last_n" in (copy / "calc" / "lists.py").read_text()
        assert not (copy / "stray.txt").exists() and (copy / "tests" / "test_lists.py").is_file()
    assert not copy.exists()


def test_the_patch_is_the_union_of_kept_candidates() -> None:
    first = FileChange("m.py", "a = 1\nb = 2\n", "a = 10\nb = 2\n", "exact", 1.0)
    second = FileChange("m.py", "a = 10\nb = 2\n", "a = 10\nb = 20\n", "exact", 1.0)
    undone = FileChange("n.py", "x = 1\n", "x = 2\n", "exact", 1.0)
    back = FileChange("n.py", "x = 2\n", "x = 1\n", "exact", 1.0)
    patch = union([first, undone, second, back])
    assert [(c.path, c.old_text, c.new_text) for c in patch.changes] == [
        ("m.py", "a = 1\nb = 2\n", "a = 10\nb = 20\n")
    ]


def test_a_guard_on_the_whole_patch_fails_the_proof(setup: ValidationSetup) -> None:
    test_file = "tests/test_lists.py"
    weakened = change(
        setup.workspace.root,
        "    assert last_n([1, 2, 3, 4], 2)\n",
        "    assert last_n([1, 2, 3, 4], 2) == [3, 4]\n",
        test_file,
    )
    proof = prove(setup, AppliedPatch((weakened,), "union"), FAILING, FAILING)
    assert not proof.passed and not proof.guards and "a test file" in proof.detail


@pytest.mark.parametrize(
    "new, expect_refused",
    [
        (
            '"""Lists."""\n\n\ndef last_n(items, n):\n    # take the tail\n    return items[-n - '
            "1:]\n",
            True,
        ),
        (
            '"""Lists, reworded."""\n\n\ndef last_n(items, n):\n    return  items[ -n - 1 : ]\n',
            True,
        ),
        ('"""Lists."""\n\n\ndef last_n(items, n):\n    return items[-n:]\n', False),
    ],
)
def test_a_candidate_that_changes_no_code_is_refused(new: str, expect_refused: bool) -> None:
    old = '"""Lists."""\n\n\ndef last_n(items, n):\n    return items[-n - 1:]\n'
    patch = AppliedPatch((FileChange("calc/lists.py", old, new, "exact", 1.0),), "unified_diff")
    if expect_refused:
        with pytest.raises(PatchError, match="changes no executable code"):
            check_effective(patch)
    else:
        check_effective(patch)


def test_hard_coded_answers_are_refused_and_computed_inputs_are_seen(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_lists.py").write_text(
        "from calc import last_n\n\n\ndef test_last_n():\n    assert last_n([1, 2, 3, 4], 2) == "
        "[3, 4]\n"
    )
    literals = assertion_literals(tmp_path, list(FAILING))
    assert "10" in literals  # sum([1, 2, 3, 4]): a value a special case could compute
    old = "def last_n(items, n):\n    return items[-n - 1:]\n"

    def patch(body: str) -> AppliedPatch:
        return AppliedPatch(
            (
                FileChange(
                    "calc/lists.py",
                    old,
                    old.replace("    return", body + "    return"),
                    "exact",
                    1.0,
                ),
            ),
            "search_replace",
        )

    for cheat in (
        "    if sum(items) == 10:\n        return [3, 4]\n",
        "    if items == [1, 2, 3, 4]:\n        return [3, 4]\n",
    ):
        with pytest.raises(GuardError, match="hard-codes the failing test's answer"):
            check_hardcoded(patch(cheat), literals)
    compares_only = patch("    if len(items) == 4:\n        items = list(items)\n")
    check_hardcoded(compares_only, literals)  # not an answer: only flagged
    assert overfitting_flags(compares_only, literals)


def test_the_fingerprint_sees_a_test_rewritten_with_its_old_mtime(setup: ValidationSetup) -> None:
    from repairloop.workspace.fingerprint import changed_files, fingerprint

    root = setup.workspace.root
    before = fingerprint(root, setup.guarded)
    test = root / "tests" / "test_lists.py"
    stat = test.stat()
    test.write_text(test.read_text().replace("== [3, 4]", "== [2, 3, 4]"))
    import os

    os.utime(test, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    (root / "calc" / "not_guarded.txt").write_text("free")
    assert changed_files(before, fingerprint(root, setup.guarded)) == ["tests/test_lists.py"]
