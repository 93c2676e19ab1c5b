"""Every classification fixture (``fixtures/classify/``), run for real, gets the kind its report
implies.

Each case is a project modelled on a public bug report and is run as its user
ran it (``classify_cases.run_case``: the product's own classify path, re-runs
for flaky tests included). ``make bench`` reports the share right over the
same cases (``tests/bench/classify_figure.py``).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
from classify_cases import CASES_DIR, load_cases, run_case

from repairloop.types import FailureKind

CASES = load_cases()


def test_there_are_forty_cases_covering_every_kind_each_with_its_public_report() -> None:
    assert len(CASES) >= 40
    kinds = Counter(case.expected_kind for case in CASES)
    assert set(kinds) == {k.value for k in FailureKind}, kinds
    for case in CASES:
        assert re.match(
            r"https://github\.com/[\w.-]+/[\w.-]+/(issues|pull)/\d+", case.spec["source"]
        ), case.name
        assert case.spec.get("summary") and case.spec.get("expected_hint"), case.name
        assert list((case.path / "tests").rglob("*.py")), case.name
    assert sorted(p.name for p in CASES_DIR.iterdir() if p.is_dir()) == [c.name for c in CASES]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fixture_is_classified_as_its_report_says(case, tmp_path: Path) -> None:
    outcome = run_case(case, tmp_path)
    assert outcome.kind == case.expected_kind, outcome.failures
    assert not outcome.missing_hints, (outcome.missing_hints, outcome.failures)
