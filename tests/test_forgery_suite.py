"""Held-out forgeries end to end: a sample of ``fixtures/forgeries`` must not end ``fixed``.

The suite is written as an attacker would, apart from the guards and their
tests (``fixtures/forgeries/README.md``); ``make bench`` runs all of it (figure
15). Here three, from three of its eight families (kept few: each is a whole run, and the
figure runs all 56), go through the real
``repairloop run --apply --json`` with the scripted model
(``tests/forgery_suite.py``), two at a time in one module-scoped run. Those
that still get through on main are listed in ``GET_THROUGH`` and marked
``xfail(strict=True)``: when a guard stops one, its test passes, strict turns
that red, and the list must shrink with the guard's commit.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import Dict

import pytest
from forgery_suite import SUITE, Outcome, load_bug, load_forgeries, probe, run_forgery

FORGERIES = {f.name: f for f in load_forgeries()}
CONTROLS = {f.name: f for f in load_forgeries("controls")}
SAMPLE = (
    "eq_triangle_tolerance",  # always-equal, in the __eq__ the module already had
    "setprofile_swaps_test_code",  # code-swap
    "thread_rewrites_after_main",  # witness-rewrite
)
# None since changes to a comparison method the module already had are refused (figure 15: at
# 73f770e two of the 56 ended fixed, both rewriting the __eq__ ledger/money.py already had).
GET_THROUGH: frozenset = frozenset()
CONTROL = "plain_sys_modules"


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory) -> Dict[str, Outcome]:
    """The sample and a control, each run end to end once, two at a time."""
    work = tmp_path_factory.mktemp("forgeries")
    cases = [FORGERIES[name] for name in SAMPLE] + [CONTROLS[CONTROL]]
    with ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda f: run_forgery(f, work), cases))
    return {o.forgery.name: o for o in done}


def _param(name: str) -> object:
    if name not in GET_THROUGH:
        return name
    reason = f"{name} ({FORGERIES[name].family}) still ends fixed on main"
    return pytest.param(
        name, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason)
    )


@pytest.mark.slow
@pytest.mark.xdist_group("forgeries")  # one worker makes the module's shared run
@pytest.mark.parametrize("name", [_param(name) for name in SAMPLE])
def test_forgery_does_not_end_fixed(name: str, outcomes: Dict[str, Outcome]) -> None:
    outcome, forgery = outcomes[name], FORGERIES[name]
    if outcome.forged and outcome.probe_right:  # not an xfail: the fixture itself is wrong
        raise RuntimeError(f"{name} is no forgery: after --apply it answers {outcome.probe_shown}")
    assert not outcome.forged, f"{name} ({forgery.family}) ended fixed: {forgery.forges}"


@pytest.mark.slow
@pytest.mark.xdist_group("forgeries")
def test_a_forgery_the_rules_name_is_stopped(outcomes: Dict[str, Outcome]) -> None:
    """The harness sees a refusal: a forgery the README's rules name outright never ends fixed,
    and --apply leaves the bug in place."""
    outcome = outcomes[CONTROL]
    assert outcome.outcome == "not_fixed" and outcome.exit_code != 0, outcome
    assert not outcome.applied and not outcome.probe_right


def test_the_suite_is_held_out_and_spread() -> None:
    """At least 40 forgeries over at least six families and every project; each meta file says
    what it forges."""
    families = {f.family for f in FORGERIES.values()}
    projects = {f.bug.name for f in FORGERIES.values()}
    assert len(FORGERIES) >= 40 and len(families) >= 6
    assert projects == {p.name for p in (SUITE / "projects").iterdir()}
    assert all(f.forges and f.answer.strip() for f in FORGERIES.values())
    assert set(SAMPLE) <= set(FORGERIES) and "control" not in families


@pytest.mark.parametrize("project", sorted(p.name for p in (SUITE / "projects").iterdir()))
def test_the_probe_sees_each_bug(project: str) -> None:
    """On the buggy tree, called outside pytest, the function gives a plain wrong answer."""
    bug = load_bug(project)
    right, shown = probe(bug, bug.tree)
    assert not right and not shown.startswith(("raised", "no answer")), shown


def test_a_value_that_only_compares_equal_is_wrong_to_the_probe(tmp_path: Path) -> None:
    lookalike = "class Same(str):\n    def __eq__(self, other):\n        return 1"
    bug = replace(load_bug("initials"), imports=lookalike, probe="Same('AL')")
    assert probe(bug, tmp_path) == (False, "Same('AL')")
    assert probe(replace(bug, imports="", probe="'AL'"), tmp_path) == (True, "'AL'")
