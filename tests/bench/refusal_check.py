"""False refusals: right fixes the guards refuse (figure 15's second half), checked in-process.

A right fix is a bench case's ``reference.patch`` (``fixtures/bench``) or a
recorded answer of ``fixtures/answers`` that the parser must accept (no
``error.txt``). Each is screened the way the loop screens a candidate before
its tests run (``loop/candidate.py``'s ``_Screen``): ``apply_answer``, then
``check_guards`` with the run's policy, ``check_syntax``, ``check_hardcoded``
with the failing tests' literals and inputs. The run's policy needs the files
the baseline collected tests from and the failing test ids: one unconfined test
run of each bench case gives both; the answer corpus has no tests, so its
policy is the default one and no test literal is in play.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import List, Optional, Sequence, Tuple

import answer_corpus

from repairloop.errors import PatchError
from repairloop.integrations.bench import find_cases
from repairloop.integrations.bench.cases import copy_project
from repairloop.patch import GuardPolicy, apply_answer, check_guards, check_syntax
from repairloop.patch.overfit import check_hardcoded
from repairloop.patch.testliterals import assertion_literals, failing_inputs
from repairloop.runner import default_test_command, run_tests
from repairloop.types import CodeSlice, TestFiles

BENCH = Path(__file__).resolve().parents[2] / "fixtures" / "bench"
# the installed pytest-cov and xdist would add a quarter second to each baseline and change nothing
LEAN_ENV = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


@dataclass(frozen=True)
class Screening:
    """One right fix through the guards: refused or not, and why."""

    source: str  # "bench" or "answers"
    name: str
    refusal: str  # the guard's message; "" when the fix passed


def screen(
    answer: str,
    root: Path,
    test_files: TestFiles,
    failing: Sequence[str] = (),
    shown: Optional[Sequence[CodeSlice]] = None,
) -> str:
    """The loop's screening of ``answer`` against the project at ``root``: "" when it passes,
    else the refusal (the PatchError's message). A fix that does not apply counts as refused too:
    the loop could not run it either."""
    try:
        applied = apply_answer(answer, root, shown=shown, is_test=test_files.is_test)
        screened = check_guards(applied, root, GuardPolicy(test_files=test_files))
        check_syntax(screened.applied)
        literals = assertion_literals(root, failing)
        check_hardcoded(screened.applied, literals, test_files, failing_inputs(failing))
    except PatchError as err:
        return err.message
    return ""


def bench_references(work: Path) -> List[Screening]:
    """Every bench case's reference fix, screened after one baseline run of the case."""
    found = []
    for case in find_cases(BENCH):
        if case.reference is None:
            continue
        root = copy_project(case, work / case.name)
        baseline = run_tests(root, default_test_command(root), timeout=120, env=LEAN_ENV)
        test_files = TestFiles().with_collected(baseline)
        why = screen(
            case.reference.read_text(encoding="utf-8"),
            root,
            test_files,
            failing=tuple(baseline.failing_ids),
        )
        found.append(Screening("bench", case.name, why))
    return found


def corpus_answers(work: Path) -> List[Screening]:
    """Every answer of the corpus the parser must accept, screened against its project."""
    found = []
    for case in answer_corpus.CASES:
        if answer_corpus.refusal(case) is not None:
            continue  # the parser must refuse it: not a fix
        root = answer_corpus.project(case, work / case.name)
        answer = (case / "answer.md").read_bytes().decode()
        why = screen(answer, root, TestFiles(), shown=answer_corpus.shown(case, root))
        found.append(Screening("answers", case.name, why))
    return found


def false_refusals(work: Optional[Path] = None) -> Tuple[List[Screening], List[Screening]]:
    """(bench reference fixes, corpus answers), each screened; ``work`` holds the copies."""
    if work is not None:
        return bench_references(work / "bench"), corpus_answers(work / "answers")
    with tempfile.TemporaryDirectory(prefix="repairloop-refusals-") as tmp:
        return false_refusals(Path(tmp))
