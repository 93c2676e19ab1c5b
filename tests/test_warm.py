"""The warm test process: a forked child brings the candidate's modules up to date, or says why it
cannot.

Real pytest servers on small projects written inline; each candidate is
written into the tree the way the offline engine and the loop write theirs,
and what the warm child says is compared with a fresh ``run_tests`` of the
same tree. Every case where the reload cannot represent the change must
answer None with its reason (the caller then runs the tests fresh).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import pytest
from runner_helpers import PYTEST, write_project

from repairloop.runner import run_tests
from repairloop.runner.warm import WarmProcess
from repairloop.types import TestReport

CALC = {
    "calc/__init__.py": """
        from calc.ops import add, scale, tally

        FACTORS = [scale(i) for i in range(3)]
    """,
    "calc/ops.py": """
        import functools


        def logged(func):
            @functools.wraps(func)
            def wrapper(*args):
                return func(*args)
            return wrapper


        def add(a, b):
            return a - b


        def scale(x):
            return x * 2


        @logged
        def tally(xs):
            return sum(xs) + 1


        class Base:
            def size(self):
                return 1


        class Box(Base):
            def size(self):
                return super().size() + 0

            @staticmethod
            def kind():
                return "box"

            @property
            def label(self):
                return "B"
    """,
    "tests/test_calc.py": """
        from calc import FACTORS, add, tally
        from calc.ops import Box


        def test_add():
            assert add(2, 2) == 4


        def test_tally():
            assert tally([1, 2]) == 3


        def test_box():
            assert (Box().size(), Box.kind(), Box().label) == (2, "crate", "C")


        def test_factors():
            assert FACTORS == [0, 2, 4]
    """,
}
IDS = (
    "tests/test_calc.py::test_add",
    "tests/test_calc.py::test_tally",
    "tests/test_calc.py::test_box",
    "tests/test_calc.py::test_factors",
)


def outcomes(report: TestReport) -> Dict[str, str]:
    return {r.test_id: r.outcome.value for r in report.results}


@pytest.fixture(scope="module")
def calc_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Path, WarmProcess]]:
    root = write_project(tmp_path_factory.mktemp("calc"), CALC)
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        yield root, warm


@pytest.fixture
def calc(calc_server: Tuple[Path, WarmProcess]) -> Iterator[Tuple[Path, WarmProcess]]:
    """One server for the module's tests (a start costs a fresh run); each test's candidate is
    reverted after it."""
    root, warm = calc_server
    assert warm.ready(), warm.refused
    yield root, warm
    for extra in ("calc/extra.py",):
        (root / extra).unlink(missing_ok=True)
    write_project(root, CALC)


def candidate(root: Path, path: str, old: str, new: str) -> str:
    """Write the candidate (``old`` replaced by ``new`` in ``path``); return the original text."""
    original = (root / path).read_text()
    assert old in original
    (root / path).write_text(original.replace(old, new))
    return original


def both_ways(
    root: Path, warm: WarmProcess, changed: Sequence[str], ids: Sequence[str] = IDS
) -> Dict[str, str]:
    """The warm outcomes, asserted equal to a fresh run's."""
    report = warm.run(ids, changed, 60)
    assert report is not None, warm.why
    assert report.complete
    fresh = run_tests(root, PYTEST, test_ids=ids, timeout=60)
    assert outcomes(report) == outcomes(fresh)
    return outcomes(report)


@pytest.mark.parametrize(
    ("old", "new", "passing"),
    [
        ("return a - b", "return a + b", {"test_add"}),  # imported by name into two modules
        (
            "return sum(xs) + 1",
            "return sum(xs)",
            {"test_tally"},
        ),  # behind a project decorator (functools.wraps)
        ('return "box"', 'return "crate"', set()),  # a staticmethod
        ('return "B"', 'return "C"', set()),  # a property
        (
            "return super().size() + 0",
            "return super().size() + 1",
            set(),
        ),  # super(): the class cell is kept
    ],
)
def test_a_body_change_runs_the_new_code_everywhere_it_is_referenced(
    calc: Tuple[Path, WarmProcess], old: str, new: str, passing: set
) -> None:  # type: ignore[type-arg]
    root, warm = calc
    candidate(root, "calc/ops.py", old, new)
    seen = both_ways(root, warm, ["calc/ops.py"])
    assert {t.split("::")[1] for t, o in seen.items() if o == "passed"} == passing | {
        "test_factors"
    }


def test_all_three_method_changes_together_fix_test_box(calc: Tuple[Path, WarmProcess]) -> None:
    root, warm = calc
    text = (root / "calc/ops.py").read_text()
    text = text.replace('return "box"', 'return "crate"').replace('return "B"', 'return "C"')
    (root / "calc/ops.py").write_text(
        text.replace("return super().size() + 0", "return super().size() + 1")
    )
    assert both_ways(root, warm, ["calc/ops.py"])["tests/test_calc.py::test_box"] == "passed"


def test_each_child_starts_from_the_start_state(calc: Tuple[Path, WarmProcess]) -> None:
    root, warm = calc
    original = candidate(root, "calc/ops.py", "return a - b", "return a + b")
    assert both_ways(root, warm, ["calc/ops.py"])["tests/test_calc.py::test_add"] == "passed"
    (root / "calc/ops.py").write_text(original)  # reverted, as the engine and the loop do
    assert both_ways(root, warm, ["calc/ops.py"])["tests/test_calc.py::test_add"] == "failed"


def test_line_numbers_of_tracebacks_follow_the_new_source(calc: Tuple[Path, WarmProcess]) -> None:
    root, warm = calc
    candidate(
        root,
        "calc/ops.py",
        "def add(a, b):\n    return a - b",
        'def add(a, b):\n\n\n    raise ValueError("x")',
    )
    report = warm.run(IDS[:1], ["calc/ops.py"], 60)
    fresh = run_tests(root, PYTEST, test_ids=IDS[:1], timeout=60)
    assert report is not None and report.results[0].frames[-1] == fresh.results[0].frames[-1]


def refused(warm: WarmProcess, changed: Sequence[str], ids: Sequence[str] = IDS) -> str:
    report = warm.run(ids, changed, 60)
    assert report is None, outcomes(report)
    return warm.why


@pytest.mark.parametrize(
    ("path", "old", "new", "why"),
    [
        ("calc/ops.py", "return x * 2", "return x * 3", "scale ran while the suite was imported"),
        (
            "calc/ops.py",
            "def add(a, b):",
            "LIMIT = 3\n\n\ndef add(a, b):",
            "changed outside function bodies",
        ),
        ("calc/ops.py", "def add(a, b):", "def add(a, b=1):", "changed outside function bodies"),
        ("calc/ops.py", "@logged\ndef tally", "def tally", "changed outside function bodies"),
        (
            "calc/ops.py",
            "class Box(Base):",
            "class Box(object):",
            "changed outside function bodies",
        ),
        # a constant's new value, but a test module read FACTORS at import (collected from the old
        # value)
        (
            "calc/__init__.py",
            "FACTORS = [scale(i) for i in range(3)]",
            "FACTORS = [0, 2, 4]",
            "FACTORS read when test_calc.py",
        ),
        (
            "tests/test_calc.py",
            "assert add(2, 2) == 4",
            "assert add(2, 2) == 0",
            "is a test module",
        ),
    ],
)
def test_a_change_the_reload_cannot_represent_runs_fresh(
    calc: Tuple[Path, WarmProcess], path: str, old: str, new: str, why: str
) -> None:
    root, warm = calc
    candidate(root, path, old, new)
    assert why in refused(warm, [path])
    assert not warm.stale  # the server stays: only this candidate goes fresh


def test_a_method_that_starts_using_super_runs_fresh(calc: Tuple[Path, WarmProcess]) -> None:
    root, warm = calc
    # super() needs the class cell as a free variable: the old function has no closure to give it.
    candidate(
        root,
        "calc/ops.py",
        "def size(self):\n        return 1",
        "def size(self):\n        return super().__sizeof__()",
    )
    assert "uses different enclosing variables" in refused(warm, ["calc/ops.py"])


def test_a_nested_function_comes_with_its_new_enclosing_body(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "p",
        {
            "mod.py": "def outer():\n    k = 1\n\n    def inner():\n        return 1\n    return "
            "inner\n",
            "tests/test_m.py": "from mod import outer\n\n\ndef test_inner():\n    assert outer()() "
            "== 2\n",
        },
    )
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready()
        candidate(root, "mod.py", "return 1\n    return inner", "return k + 1\n    return inner")
        assert both_ways(root, warm, ["mod.py"], ["tests/test_m.py::test_inner"]) == {
            "tests/test_m.py::test_inner": "passed"
        }


@pytest.mark.parametrize(
    ("files", "changed", "why"),
    [
        ({"conftest.py": "X = 1\n"}, "conftest.py", "configures the test run"),
        ({"data.json": "{}\n"}, "data.json", "is not Python source"),
        (
            {"calc/ops.cpython-39-x86_64-linux-gnu.so": ""},
            "calc/ops.py",
            "compiled extension stands beside",
        ),
    ],
)
def test_files_the_reload_cannot_stand_for_run_fresh(
    tmp_path: Path, files: Dict[str, str], changed: str, why: str
) -> None:
    root = write_project(tmp_path / "calc", {**CALC, **files})
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready(), warm.refused
        (root / changed).write_text((root / changed).read_text() + "\n")
        assert why in refused(warm, [changed])


def test_a_test_the_server_did_not_collect_runs_fresh(calc: Tuple[Path, WarmProcess]) -> None:
    _, warm = calc
    assert "not collected by the warm server: tests/test_calc.py::test_new" in refused(
        warm, [], ["tests/test_calc.py::test_new"]
    )


def test_files_changed_under_the_server_restart_it(tmp_path: Path) -> None:
    root = write_project(tmp_path / "calc", CALC)
    warm = WarmProcess(root, PYTEST, env=dict(os.environ))
    assert warm.ready()
    # kept, say: not this candidate's file
    candidate(root, "calc/ops.py", "return a - b", "return a + b")
    assert "files changed since the warm server started: calc/ops.py" in refused(
        warm, ["calc/__init__.py"]
    )
    assert warm.stale and not warm.running
    assert warm.ready()  # the new server imports the tree as it is now
    assert both_ways(root, warm, [])["tests/test_calc.py::test_add"] == "passed"
    warm.close()


def test_a_file_rewritten_with_its_own_text_is_no_change(calc: Tuple[Path, WarmProcess]) -> None:
    root, warm = calc
    (root / "calc/ops.py").write_text((root / "calc/ops.py").read_text())
    both_ways(root, warm, [])


def test_a_new_module_is_imported_from_disk(calc: Tuple[Path, WarmProcess]) -> None:
    root, warm = calc
    (root / "calc/extra.py").write_text("def plus(a, b):\n    return a + b\n")
    candidate(
        root, "calc/ops.py", "return a - b", "from calc.extra import plus\n    return plus(a, b)"
    )
    assert (
        both_ways(root, warm, ["calc/ops.py", "calc/extra.py"])["tests/test_calc.py::test_add"]
        == "passed"
    )


@pytest.mark.parametrize(
    ("command", "why"),
    [
        ("make test", "the test command is not pytest"),
        (PYTEST + ("-p", "xdist", "-n", "1"), "pytest-xdist distributes the tests"),
    ],
)
def test_a_suite_the_server_cannot_serve_is_refused_for_good(
    tmp_path: Path, command: object, why: str
) -> None:
    root = write_project(tmp_path / "calc", CALC)
    with WarmProcess(root, command, env=dict(os.environ)) as warm:  # type: ignore[arg-type]
        assert not warm.ready() and why in warm.refused
        assert not warm.ready()  # not started again
        assert warm.run(IDS, [], 60) is None and why in warm.why


def test_a_suite_that_starts_threads_at_import_is_refused(tmp_path: Path) -> None:
    root = write_project(
        tmp_path / "calc",
        {
            **CALC,
            "conftest.py": """
        import threading, time

        threading.Thread(target=time.sleep, args=(60,), daemon=True).start()
    """,
        },
    )
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert not warm.ready() and "started threads" in warm.refused


def test_a_start_that_hangs_ends_at_the_time_the_run_has_left(tmp_path: Path) -> None:
    # Seen in the suite: a session hook that hung held the loop 60 s past its --timeout, because the
    # server's start was bounded by the suite's whole timeout, not by what was left of the run.
    root = write_project(
        tmp_path / "calc",
        {
            **CALC,
            "conftest.py": """
        import time


        def pytest_sessionstart(session):
            time.sleep(120)
    """,
        },
    )
    asked: List[float] = []

    def time_left() -> float:
        asked.append(time.monotonic())
        return 1.0

    began = time.monotonic()
    with WarmProcess(root, PYTEST, env=dict(os.environ), start_timeout=time_left) as warm:
        assert not warm.ready() and "did not start" in warm.refused
    assert (
        asked and time.monotonic() - began < 100
    )  # the hook's 120 s sleep was cut, not waited out


LATE_PLUGIN = """
import os


def pytest_terminal_summary(terminalreporter):
    import {module}  # imported only when a session ends, like hypothesis's plugin does
"""
LATE_MODULE = """
import os
{extra}
with open(os.environ["LATE_IMPORTS"], "a") as handle:
    handle.write(str(os.getpid()) + "\\n")
"""


def _late_importer(tmp_path: Path, extra: str) -> Tuple[Path, Dict[str, str]]:
    """A project, and an environment whose installed plugin imports a module (outside the project)
    at the session's end; that module notes each process that imports it in LATE_IMPORTS."""
    root = write_project(tmp_path / "calc", CALC)
    site = tmp_path / "site"
    site.mkdir()
    (site / "late_plugin.py").write_text(LATE_PLUGIN.format(module="late_module"))
    (site / "late_module.py").write_text(LATE_MODULE.format(extra=extra))
    env = {
        **os.environ,
        "PYTHONPATH": str(site),
        "PYTEST_PLUGINS": "late_plugin",
        "LATE_IMPORTS": str(tmp_path / "imports"),
    }
    return root, env


def test_what_a_sessions_end_imports_is_imported_once_by_the_server_not_by_every_child(
    tmp_path: Path,
) -> None:
    # Seen in make bench: hypothesis, installed but unused, is imported by its plugin's terminal
    # summary; every warm child paid that second again, so a warm candidate cost as much as a fresh
    # one.
    root, env = _late_importer(tmp_path, "")
    with WarmProcess(root, PYTEST, env=env) as warm:
        assert warm.ready(), warm.refused
        started = (tmp_path / "imports").read_text().split()
        assert len(started) == 2  # the rehearsal child that found it, then the server
        for _ in range(3):
            report = warm.run(IDS[:1], [], 30)
            assert report is not None and outcomes(report) == {IDS[0]: "failed"}
        assert (tmp_path / "imports").read_text().split() == started  # no child imported it again
    fresh = run_tests(root, PYTEST, test_ids=IDS[:1], env=env)
    assert outcomes(fresh) == {IDS[0]: "failed"}


def test_a_module_that_starts_a_thread_is_left_to_the_children(tmp_path: Path) -> None:
    root, env = _late_importer(
        tmp_path,
        "import threading, time\nthreading.Thread(target=time.sleep, args=(30,), "
        "daemon=True).start()",
    )
    with WarmProcess(root, PYTEST, env=env) as warm:
        assert warm.ready(), warm.refused
        assert len((tmp_path / "imports").read_text().split()) == 1  # the rehearsal child only
        report = warm.run(IDS[:1], [], 30)
        assert report is not None and outcomes(report) == {IDS[0]: "failed"}
        assert len((tmp_path / "imports").read_text().split()) == 2  # the child imported it itself


def test_a_hanging_candidate_times_out_and_the_server_goes_on(
    calc: Tuple[Path, WarmProcess],
) -> None:
    root, warm = calc
    original = candidate(root, "calc/ops.py", "return a - b", "while True:\n        pass")
    report = warm.run(IDS[:1], ["calc/ops.py"], 2)
    assert report is not None and report.timed_out and not report.green
    assert report.results[0].exc_type == "Timeout"
    (root / "calc/ops.py").write_text(original)
    assert both_ways(root, warm, [])["tests/test_calc.py::test_add"] == "failed"


CALENDAR = {
    "cal/__init__.py": "",
    "cal/days.py": """
        BASE = 1
        DAYS = [31, 29, 31]
        LIMIT = 3
        DERIVED = LIMIT * 2


        def build():
            return [BASE + i for i in range(3)]


        TABLE = build()


        def days_in(month):
            return DAYS[month - 1]


        def derived():
            return DERIVED


        def table():
            return TABLE
    """,
    "tests/test_days.py": """
        from cal.days import days_in, derived, table


        def test_february():
            assert days_in(2) == 28


        def test_derived():
            assert derived() == 6


        def test_table():
            assert table() == [1, 2, 3]
    """,
}
DAY_IDS = (
    "tests/test_days.py::test_february",
    "tests/test_days.py::test_derived",
    "tests/test_days.py::test_table",
)


@pytest.fixture(scope="module")
def calendar(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tuple[Path, WarmProcess]]:
    root = write_project(tmp_path_factory.mktemp("cal"), CALENDAR)
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready(), warm.refused
        yield root, warm


def test_a_module_constant_whose_value_alone_changed_is_bound_anew_warm(
    calendar: Tuple[Path, WarmProcess],
) -> None:
    # Seen in make bench: the offline engine's mutations of a module table (DAYS, a roman numeral
    # table) all went fresh, costing a pytest start each.
    root, warm = calendar
    original = candidate(root, "cal/days.py", "DAYS = [31, 29, 31]", "DAYS = [31, 28, 31]")
    try:
        assert (
            both_ways(root, warm, ["cal/days.py"], DAY_IDS)["tests/test_days.py::test_february"]
            == "passed"
        )
    finally:
        (root / "cal/days.py").write_text(original)
    assert (
        both_ways(root, warm, [], DAY_IDS)["tests/test_days.py::test_february"] == "failed"
    )  # the next child is clean


@pytest.mark.parametrize(
    ("old", "new", "why"),
    [
        (
            "LIMIT = 3",
            "LIMIT = 4",
            "LIMIT read when days.py is imported",
        ),  # DERIVED = LIMIT * 2 kept the old value
        (
            "BASE = 1",
            "BASE = 0",
            "which ran while the suite was imported",
        ),  # TABLE = build() read it
        (
            "DAYS = [31, 29, 31]",
            "DAYS = [31, 28, 31][5]",
            "a new module-level value raised IndexError",
        ),
        (
            "LIMIT = 3\n",
            "LIMIT = 3\nSEEN = vars()['DAYS'][1]\n",
            "changed outside function bodies",
        ),  # a new statement
        (
            "DAYS = [31, 29, 31]",
            "DAYS, MORE = [31, 28, 31], 1",
            "changed outside function bodies",
        ),  # other targets
    ],
)
def test_a_constant_that_import_time_code_read_runs_fresh(
    calendar: Tuple[Path, WarmProcess], old: str, new: str, why: str
) -> None:
    root, warm = calendar
    original = candidate(root, "cal/days.py", old, new)
    try:
        assert warm.run(DAY_IDS, ["cal/days.py"], 60) is None and why in warm.why, warm.why
    finally:
        (root / "cal/days.py").write_text(original)


@pytest.mark.parametrize(
    "reader",
    [
        "from cal.days import DAYS\n\nFEB = DAYS[1]\n",  # from-import
        "import cal.days\n\nFEB = cal.days.DAYS[1]\n",  # attribute
        "import cal.days\n\nFEB = getattr(cal.days, 'DAYS')[1]\n",  # a string
        # a function run then
        "import cal.days\n\n\ndef feb():\n    return vars(cal.days)['DAYS'][1]\n\n\nFEB = feb()\n",
    ],
)
def test_a_constant_another_module_read_at_import_runs_fresh(tmp_path: Path, reader: str) -> None:
    files = dict(CALENDAR, **{"cal/feb.py": reader})
    files["tests/test_days.py"] = (
        "from cal.feb import FEB\n\n\ndef test_february():\n    assert FEB == 28\n"
    )
    root = write_project(tmp_path / "cal", files)
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready(), warm.refused
        candidate(root, "cal/days.py", "DAYS = [31, 29, 31]", "DAYS = [31, 28, 31]")
        assert warm.run(DAY_IDS[:1], ["cal/days.py"], 60) is None and "DAYS read" in warm.why, (
            warm.why
        )
        assert outcomes(run_tests(root, PYTEST, test_ids=DAY_IDS[:1], timeout=60)) == {
            DAY_IDS[0]: "passed"
        }


def test_a_constant_imported_by_name_elsewhere_runs_fresh(tmp_path: Path) -> None:
    files = dict(CALENDAR)
    files["tests/test_days.py"] = (
        "from cal.days import DAYS, days_in\n\n\ndef test_february():\n    assert days_in(2) == "
        "DAYS[1]\n"
    )
    root = write_project(tmp_path / "cal", files)
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready(), warm.refused
        candidate(root, "cal/days.py", "DAYS = [31, 29, 31]", "DAYS = [31, 28, 31]")
        assert warm.run(DAY_IDS[:1], ["cal/days.py"], 60) is None
        assert "DAYS read when test_days.py is imported" in warm.why


def sample_candidates(source: str, path: str, count: int) -> List[Tuple[str, str]]:
    """``count`` single mutations of ``source`` from the offline engine's own operators, spread over
    its order."""
    from repairloop.propose.builtin.edits import Source, apply_to_files
    from repairloop.propose.builtin.filemodel import FileModel
    from repairloop.propose.builtin.search import order_candidates
    from repairloop.types import Suspect

    lines = range(1, source.count("\n") + 2)
    found = order_candidates(
        [Suspect(path, n, 1.0) for n in lines], {path: FileModel(Source(path, source))}
    )
    step = max(1, len(found) // count)
    texts = []
    for c in found[::step][:count]:
        try:
            texts.append(
                (c.mutations[0].description, apply_to_files({path: source}, c.edits)[path])
            )
        except ValueError:
            continue
    return texts


@pytest.mark.slow
def test_sampled_candidates_get_the_same_verdict_warm_and_fresh(tmp_path: Path) -> None:
    """The issue's check: engine candidates on a bench case, each run both ways, agree on every
    test."""
    from conftest import FIXTURES

    root = Path(shutil.copytree(FIXTURES / "bench" / "binary_search_bound", tmp_path / "case"))
    source = (root / "searching.py").read_text()
    ids = tuple(sorted({r.test_id for r in run_tests(root, PYTEST, timeout=60).results}))
    agreed, warm_runs = 0, 0
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready()
        # 5 s per run: a candidate that loops forever costs it twice; a sound one takes under 1 s
        for description, text in sample_candidates(source, "searching.py", 6):
            (root / "searching.py").write_text(text)
            report: Optional[TestReport] = warm.run(ids, ["searching.py"], 5)
            fresh = run_tests(root, PYTEST, test_ids=ids, timeout=5)
            if report is not None:
                warm_runs += 1
                assert (outcomes(report), report.timed_out) == (outcomes(fresh), fresh.timed_out), (
                    description
                )
                agreed += 1
        (root / "searching.py").write_text(source)
    assert warm_runs >= 5 and agreed == warm_runs


def test_the_engines_mutations_of_a_module_table_run_warm_with_the_fresh_verdict(
    tmp_path: Path,
) -> None:
    from conftest import FIXTURES

    from repairloop.propose.builtin.edits import Source, apply_to_files
    from repairloop.propose.builtin.filemodel import FileModel
    from repairloop.propose.builtin.search import order_candidates
    from repairloop.types import Suspect

    root = Path(shutil.copytree(FIXTURES / "bench" / "leap_year_boolean", tmp_path / "case"))
    source = (root / "leapyear.py").read_text()
    line = (
        source.splitlines().index(next(x for x in source.splitlines() if x.startswith("DAYS = ")))
        + 1
    )
    found = order_candidates(
        [Suspect("leapyear.py", line, 1.0)],
        {"leapyear.py": FileModel(Source("leapyear.py", source))},
    )
    ids = tuple(sorted({r.test_id for r in run_tests(root, PYTEST, timeout=60).results}))
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready()
        for c in found[:6]:
            (root / "leapyear.py").write_text(
                apply_to_files({"leapyear.py": source}, c.edits)["leapyear.py"]
            )
            report = warm.run(ids, ["leapyear.py"], 10)
            assert report is not None, (
                c.mutations[0].description,
                warm.why,
            )  # DAYS = [...]: bound anew
            assert outcomes(report) == outcomes(run_tests(root, PYTEST, test_ids=ids, timeout=10))
        (root / "leapyear.py").write_text(source)
    assert len(found) >= 6


# -- attacks: a candidate's child must not reach the server, later children, or the guarded files
# -------------


def test_a_child_that_poisons_memory_leaves_the_next_child_clean(
    calc: Tuple[Path, WarmProcess],
) -> None:
    root, warm = calc
    # The candidate changes the shared list every test reads, and the plugin's recorder, in its
    # child.
    original = candidate(
        root,
        "calc/ops.py",
        "return a - b",
        "import calc, sys\n    calc.FACTORS.append(9)\n"
        "    sys.modules['repairloop_pytest_plugin_recorder'].Recorder.emit = None\n    return a + "
        "b",
    )
    report = warm.run(IDS[:1], ["calc/ops.py"], 60)
    assert report is None or "test_add" not in {
        r.test_id for r in report.passed
    }  # its own run is broken
    (root / "calc/ops.py").write_text(original)
    assert both_ways(root, warm, [])["tests/test_calc.py::test_factors"] == "passed"


def test_a_child_that_rewrites_another_source_file_makes_the_server_restart(
    calc: Tuple[Path, WarmProcess],
) -> None:
    root, warm = calc
    original = candidate(
        root,
        "calc/ops.py",
        "return a - b",
        "open(__file__.replace('ops.py', '__init__.py'), 'a').write('\\nFACTORS = [0, 2, 4]\\n')\n"
        "    return a + b",
    )
    init = (root / "calc/__init__.py").read_text()
    assert warm.run(IDS[:1], ["calc/ops.py"], 60) is not None
    (root / "calc/ops.py").write_text(original)
    assert "files changed since the warm server started: calc/__init__.py" in refused(warm, [])
    assert warm.stale
    (root / "calc/__init__.py").write_text(init)  # what the loop's revert does


def test_in_the_sandbox_a_child_cannot_write_a_guarded_file_nor_leave_processes(
    tmp_path: Path,
) -> None:
    from repairloop.loop.suite import TestSuite
    from repairloop.settings import Settings

    root = write_project(tmp_path / "calc", CALC)
    mark = f"{os.getpid()}.{id(root) % 997}"
    suite = TestSuite.for_project(Settings(sandbox="bwrap"), root, dict(os.environ), lambda: 120.0)
    with suite.warm(root, protect=["tests/test_calc.py"]) as warm:
        assert warm.ready(), warm.refused
        candidate(
            root,
            "calc/ops.py",
            "return a - b",
            "import subprocess\n"
            f"    subprocess.Popen(['sleep', '{mark}'], start_new_session=True)\n"
            "    open(__file__.replace('calc/ops.py', 'tests/test_calc.py'), 'a').write('x = "
            "1\\n')\n    return a + b",
        )
        report = warm.run(IDS[:1], ["calc/ops.py"], 60)
        assert report is not None and report.results[0].outcome.value == "failed"
        assert report.results[0].exc_type in ("PermissionError", "OSError"), report.results[
            0
        ].message
        # The server still runs: what the child started was killed after it, not with the sandbox.
        assert warm.running and not _alive(mark)
    assert "x = 1" not in (root / "tests/test_calc.py").read_text()


def _alive(mark: str) -> List[str]:
    """Processes whose command line ends with `` mark``; a SIGKILLed one may take a moment to leave
    /proc."""
    for _ in range(100):
        found = [
            str(p)
            for p in Path("/proc").iterdir()
            if p.name.isdigit() and _cmdline(p).endswith(" " + mark)
        ]
        if not found:
            return []
        time.sleep(0.1)
    return found


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode().strip()
    except OSError:
        return ""


def test_a_child_that_kills_the_server_sends_the_run_fresh_and_the_server_restarts(
    tmp_path: Path,
) -> None:
    root = write_project(tmp_path / "calc", CALC)
    with WarmProcess(root, PYTEST, env=dict(os.environ)) as warm:
        assert warm.ready()
        original = candidate(
            root,
            "calc/ops.py",
            "return a - b",
            "import os, signal\n    os.kill(os.getppid(), signal.SIGKILL)\n    return a + b",
        )
        assert "the warm server stopped answering" in refused(warm, ["calc/ops.py"], IDS[:1])
        assert warm.stale and not warm.running
        (root / "calc/ops.py").write_text(original)
        assert warm.ready()  # a new server, from the tree as it is
        assert both_ways(root, warm, [])["tests/test_calc.py::test_add"] == "failed"
