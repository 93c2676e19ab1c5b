"""Figure 12: warm validation (issue 16). Candidates validated per second warm and fresh, and their
verdicts.

The candidates are the offline engine's own single mutations of the module
that holds the bug, sampled over its whole order. Each one is written into the
project, its failing tests run once in a fresh process (what every candidate
paid before: interpreter, imports, collection, tests) and once in the warm
process (a fork of a server that collected the suite once), both through the
loop's own ``TestSuite`` (the project's command, its sandbox), then the file is
restored. Both verdicts are compared test by test. What the speed-up does to
the offline engine's repair rate within ``make bench``'s budget is figure 6
(``engine_figure.py``), which runs the bench cases both ways.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import projects
from figure import Check, Figure

from repairloop.loop.suite import TestSuite
from repairloop.runner.warm import WarmProcess
from repairloop.settings import Settings
from repairloop.types import TestReport

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: the engine's candidate sampler lives with its test
from test_warm import sample_candidates  # noqa: E402

TARGET_SPEEDUP = 10.0  # the target, on the 500-test project
CANDIDATES = 20  # sampled on the 500-test project
CASE_CANDIDATES = 12  # sampled on each fixtures/bench case
MODULES, TESTS_PER_MODULE = 10, 50  # the generated project's 500 passing tests

PRICING = '''"""Prices of the generated shop: the module with the one bug."""


def discount(price, percent):
    """``price`` less ``percent`` per cent."""
    if percent < 0 or percent > 100:
        raise ValueError("percent must be within 0..100")
    return price - price * percent / 10


def total(prices, percent=0):
    """The sum of ``prices``, discounted by ``percent``."""
    subtotal = 0
    for price in prices:
        subtotal += price
    return discount(subtotal, percent)


def cheapest(prices):
    """The lowest price, or None for none."""
    best = None
    for price in prices:
        if best is None or price < best:
            best = price
    return best
'''

PRICING_TESTS = """from shop.pricing import cheapest, discount, total


def test_discount():
    assert discount(200, 10) == 180


def test_total():
    assert total([50, 50], 50) == 50


def test_cheapest():
    assert cheapest([3, 1, 2]) == 1


def test_no_discount():
    assert discount(80, 0) == 80
"""


def shop_project(dest: Path) -> Path:
    """A package of eleven modules with 500 passing tests and two failing ones
    (``shop/pricing.py``)."""
    files: Dict[str, str] = {
        "pyproject.toml": projects.PYPROJECT.format(name="shop"),
        "shop/pricing.py": PRICING,
        "tests/test_pricing.py": PRICING_TESTS,
        "shop/__init__.py": "".join(f"from shop import part_{m}\n" for m in range(MODULES)),
    }
    for m in range(MODULES):
        files[f"shop/part_{m}.py"] = "".join(
            f"def f_{k}(x):\n    return x * {k} + {m}\n\n\n" for k in range(TESTS_PER_MODULE)
        )
        files[f"tests/test_part_{m}.py"] = (
            f"from shop.part_{m} import *  # noqa: F403\n\n\n"
            + "".join(
                f"def test_f_{k}():\n    assert f_{k}(2) == {2 * k + m}\n\n\n"
                for k in range(TESTS_PER_MODULE)
            )
        )
    return projects.write_files(dest / "shop", files)


def outcomes(report: TestReport) -> Tuple[Dict[str, str], bool]:
    return {r.test_id: r.outcome.value for r in report.results}, report.timed_out


def failing_ids(suite: TestSuite, root: Path) -> List[str]:
    report = suite.run(root, timeout=300)
    return sorted(r.test_id for r in report.failing)


def race(root: Path, module: str, count: int) -> Dict[str, Any]:
    """Sampled candidates of ``module`` validated fresh and warm; seconds, fallbacks and
    verdicts."""
    suite = TestSuite.for_project(Settings(), root, dict(os.environ), lambda: 3600.0)
    ids = failing_ids(suite, root)
    source = (root / module).read_text(encoding="utf-8")
    sampled = sample_candidates(source, module, count)
    fresh_s, warm_s, agree, fallbacks, differ = 0.0, 0.0, 0, 0, []
    began = time.perf_counter()
    protect = [p.relative_to(root).as_posix() for p in root.glob("tests/*.py")]
    warm: WarmProcess = suite.warm(root, protect=protect)
    with warm:
        if not warm.ready():
            raise RuntimeError(f"the warm server did not start: {warm.refused}")
        start_s = time.perf_counter() - began
        for description, text in sampled:
            (root / module).write_text(text, encoding="utf-8")
            began = time.perf_counter()
            fresh = suite.run(root, ids, timeout=30, protect=protect)
            fresh_s += time.perf_counter() - began
            began = time.perf_counter()
            report: Optional[TestReport] = warm.run(ids, [module], 30)
            if report is None:  # the warm path refused: the candidate runs fresh, at fresh cost
                fallbacks += 1
                report = suite.run(root, ids, timeout=30, protect=protect)
            warm_s += time.perf_counter() - began
            if outcomes(report) == outcomes(fresh):
                agree += 1
            else:
                differ.append(description)
            (root / module).write_text(source, encoding="utf-8")
    return {
        "candidates": len(sampled),
        "tests": len(ids),
        "fresh_s": fresh_s,
        "warm_s": warm_s,
        "start_s": start_s,
        "agree": agree,
        "fallbacks": fallbacks,
        "differ": differ,
    }


def figure_warm(work: Path) -> Figure:
    """Figure 12: candidates per second warm against fresh (fixtures/bench and a 500-test project),
    and the verdicts compared."""
    began = time.perf_counter()
    fig = Figure(
        12,
        "Warm validation",
        "candidates validated per second when each candidate's failing tests "
        "run in a fresh process against a warm forked one (the offline engine's own candidates, "
        "sampled over its order, both ways through the loop's suite and "
        "sandbox), and whether both give every test the same outcome",
    )
    fig.rows.append(
        [
            "project",
            "tests",
            "candidates",
            "fresh: candidates/s",
            "warm: candidates/s",
            "speed-up",
            "warm start s",
            "went fresh",
            "same verdict",
        ]
    )
    shop = shop_project(work)
    races = [("generated shop (500 passing tests)", shop, "shop/pricing.py", CANDIDATES)]
    for name in ("binary_search_bound", "kadane_min_max"):
        root = projects.commit_all(
            Path(
                shutil.copytree(
                    projects.REPO / "fixtures" / "bench" / name,
                    work / name,
                    ignore=shutil.ignore_patterns("hidden_tests", "*.patch"),
                )
            )
        )
        module = next(p.name for p in root.glob("*.py"))
        races.append((f"fixtures/bench/{name}", root, module, CASE_CANDIDATES))
    results = []
    for label, root, module, count in races:
        r = race(root, module, count)
        results.append((label, r))
        fresh_rate, warm_rate = r["candidates"] / r["fresh_s"], r["candidates"] / r["warm_s"]
        fig.rows.append(
            [
                label,
                str(_count_tests(root)),
                str(r["candidates"]),
                f"{fresh_rate:.1f}",
                f"{warm_rate:.1f}",
                f"{warm_rate / fresh_rate:.1f}x",
                f"{r['start_s']:.2f}",
                str(r["fallbacks"]),
                f"{r['agree']}/{r['candidates']}",
            ]
        )
    shop_r = results[0][1]
    speedup = shop_r["fresh_s"] / shop_r["warm_s"]
    fig.checks.append(
        Check(
            f"warm validates at least {TARGET_SPEEDUP:.0f}x the candidates per second of fresh "
            "on the 500-test project",
            f"{speedup:.1f}x",
            speedup >= TARGET_SPEEDUP,
        )
    )
    agreed = sum(r["agree"] for _, r in results)
    total = sum(r["candidates"] for _, r in results)
    fig.checks.append(
        Check(
            "warm and fresh give the same outcome to every test of every sampled candidate",
            f"{agreed}/{total}",
            agreed == total,
        )
    )
    for label, r in results:
        if r["differ"]:
            fig.notes.append(f"{label}: verdicts differ for " + "; ".join(r["differ"][:5]) + ".")
    fig.notes.append(
        "Rates exclude the warm server's start (its own column: one pytest start, paid once per "
        "copy); a candidate the warm path refuses runs fresh and its fresh seconds count on the "
        "warm side. The full suite and the proof run are always fresh and are not in these rates."
    )
    fig.notes.append(
        "What this does to the offline engine's repair rate within `make bench`'s budget: figure 6."
    )
    fig.seconds = time.perf_counter() - began
    return fig


def _count_tests(root: Path) -> int:
    return sum(
        p.read_text(encoding="utf-8").count("\ndef test_")
        + p.read_text(encoding="utf-8").startswith("def test_")
        for p in root.glob("tests/test_*.py")
    )
