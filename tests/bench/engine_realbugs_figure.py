"""Figure 16: the offline engine alone on real bugs, and whether what it reports is the right fix.

Figure 14's offline-engine way, on its 32 real bugs (``fidelity_figure.FIDELITY_CASES``): each
buggy project materialised as its repository has it, repaired by ``python -m repairloop run
--json`` with no model, ``--max-iterations 3`` and 120 s, two runs at a time. A patch that ends
``fixed`` is then judged against the bug's own reference fix (the reverse of its ``bug.patch``):

* ``right``: applied to the buggy project, every Python file either patch touches has the
  reference version's syntax tree (comments and layout aside);
* ``same tests``: written otherwise, but with the project's whole test suite (the case's test
  command with each test path cut to its top directory: every test the trimmed sdist holds)
  every test that passes with the reference fix passes with it too;
* ``wrong``: some test of the whole suite passes with the reference fix and not with it (the
  tests of the case's own command passed: the others are its hidden tests).

``BENCH_ENGINE_CASES=NAME,...`` measures only those cases (a subset, named in the figure).
``BENCH_ENGINE_BEFORE=REV`` also measures the repairloop of git revision ``REV`` (a detached
worktree of this repository) on the same cases, each case's two runs side by side so both see
the same machine load. ``make bench`` measures the figure only with ``BENCH_ENGINE=1`` or
``--only 16`` (about 30 minutes a revision on two cores).

``python tests/bench/engine_realbugs_figure.py [--checkout DIR] [CASE ...]`` prints one JSON row
per case instead, for a quick look at a few cases.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from figure import Check, Figure, median

REPO = Path(__file__).resolve().parents[2]
WORKERS = 2
Row = Dict[str, Any]


def _syntax(path: Path) -> Optional[str]:
    """The file's syntax tree as text; None when it is missing or does not parse."""
    try:
        return ast.dump(ast.parse(path.read_text(encoding="utf-8")))
    except (OSError, SyntaxError, ValueError):
        return None


def _touched(patch: str) -> List[str]:
    """The Python files a unified diff changes (its ``+++ b/PATH`` lines)."""
    return [
        line[6:].strip()
        for line in patch.splitlines()
        if line.startswith("+++ b/") and line.strip().endswith(".py")
    ]


def judge_patch(case: Any, project: Path, patch: str, work: Path) -> str:
    """``right`` when ``patch`` applied to ``project`` (the buggy materialisation, left unchanged
    by the run) gives every touched Python file the reference fix's syntax tree, else ``same
    tests`` or ``wrong: ...`` on the whole test suite (module docstring); ``unjudged: WHY`` when
    the patch does not apply."""
    import realbugs

    fixed = realbugs.materialise(case, work / "reference", fixed=True)
    applied = subprocess.run(
        ["git", "apply", "--whitespace=nowarn", "-"],
        cwd=project,
        input=patch,
        text=True,
        capture_output=True,
    )
    if applied.returncode:
        return "unjudged: the patch does not apply: " + applied.stderr.strip()[:100]
    reference = realbugs.parse_unified_diff(case.bug_patch.read_text(encoding="utf-8"))
    paths = set(_touched(patch)) | {d.path for d in reference if d.path.endswith(".py")}
    if all(_syntax(project / p) == _syntax(fixed / p) for p in sorted(paths)):
        return "right"
    whole = dataclasses.replace(case, test_cmd=whole_suite(case.test_cmd))
    passing = {t for t, o in realbugs.run_tests(whole, fixed).outcomes.items() if o == "PASSED"}
    ours = {t for t, o in realbugs.run_tests(whole, project).outcomes.items() if o == "PASSED"}
    lost = sorted(passing - ours)
    return f"wrong: fails {len(lost)} the reference passes ({lost[0]})" if lost else "same tests"


def whole_suite(test_cmd: str) -> str:
    """``test_cmd`` with each test path (``dir/test_x.py``, ``dir/test_x.py::name``) cut to its top
    directory; the path after ``--deselect`` is kept."""
    words = shlex.split(test_cmd)
    out: List[str] = []
    for index, word in enumerate(words):
        kept = index and words[index - 1] == "--deselect"
        if not kept and not word.startswith("-") and "/" in word and ".py" in word:
            word = word.split("/", 1)[0]
        if word not in out or word.startswith("-"):
            out.append(word)
    return shlex.join(out)


def engine_run(case: Any, work: Path, checkout: Path) -> Row:
    """One real bug repaired by the offline engine of ``checkout``: ``outcome``, ``seconds``,
    ``detail`` (why it was not fixed) and ``judged`` (``judge_patch``, "" when not fixed)."""
    import fidelity_figure as ff
    import realbugs
    from context_figure import cli_json, loop_test_cmd, why_not_fixed

    env = {**ff.child_env(), "PYTHONPATH": str(checkout)}
    project = realbugs.materialise(case, work / "engine")
    ff.as_in_its_repository(project)
    argv = [sys.executable, "-m", "repairloop", "run", str(project), "--max-iterations", "3"]
    argv += ["--timeout", f"{ff.ENGINE_TIMEOUT:.0f}", "--test-cmd"]
    argv += [loop_test_cmd(case.test_cmd), "--json"]
    began = time.perf_counter()
    summary, err = cli_json(argv, project, env, ff.ENGINE_TIMEOUT)
    seconds = time.perf_counter() - began
    outcome = str(summary.get("outcome") or "error")
    patch = str(summary.get("patch") or "")
    judged = judge_patch(case, project, patch, work) if outcome == "fixed" and patch else ""
    evidence = summary.get("evidence") or {}
    proof = evidence.get("proof") or {}
    return {
        "name": case.name,
        "outcome": outcome,
        "seconds": seconds,
        "detail": why_not_fixed(summary, err)[:200],
        "judged": judged,
        # the behaviour check's verdict on the reported patch (README "The behaviour check")
        "behaviour_flagged": any("changes_passing_behaviour" in f for f in proof.get("flags", [])),
        "other_paths": len(proof.get("other_paths") or []),
        # the deletion flags (README "Only flagged")
        "drops_input": any(f.startswith("drops_input") for f in evidence.get("flags", [])),
        "deletes_code": any(f.startswith("deletes_code") for f in evidence.get("flags", [])),
        # a wrong patch, kept for figure 17's set e (fixtures/behaviour/realbugs)
        "wrong_patch": patch if judged.startswith("wrong") else "",
    }


def engine_on_realbugs(
    names: Sequence[str], work: Path, checkouts: Dict[str, Path], workers: int = WORKERS
) -> Dict[str, List[Row]]:
    """Every case of ``names`` (from both real-bug corpora) run once per checkout (label ->
    repairloop source directory), ``workers`` runs at a time, a case's runs next to each other.
    Rows by label, in the order of ``names``."""
    import fidelity_figure as ff
    import realbugs

    known = {c.name: c for c in realbugs.load_cases() + realbugs.load_cases(ff.HELDOUT)}
    jobs = [(label, name) for name in names for label in checkouts]

    def one(job: Tuple[str, str]) -> Row:
        label, name = job
        return engine_run(known[name], work / label / name, checkouts[label])

    with ThreadPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(one, jobs))
    by_label: Dict[str, List[Row]] = {label: [] for label in checkouts}
    for (label, _), row in zip(jobs, rows):
        by_label[label].append(row)
    return by_label


def _cell(row: Row) -> str:
    judged = f", {row['judged'].split(' (')[0]}" if row["judged"] else ""
    return f"{row['outcome']}{judged} ({row['seconds']:.0f} s)"


def _tally(rows: Sequence[Row]) -> Tuple[int, int, int]:
    """(fixed, right or the same on the whole suite, wrong) counts."""
    fixed = [r for r in rows if r["outcome"] == "fixed"]
    return (
        len(fixed),
        sum(r["judged"] in ("right", "same tests") for r in fixed),
        sum(r["judged"].startswith("wrong") for r in fixed),
    )


def _flag_counts(rows: Sequence[Row]) -> str:
    """How many right and wrong fixes the behaviour check flagged, how many changed the paths
    of passing tests that run the suspicious code (``other_paths``, not flagged), and how many
    were flagged ``drops_input`` or ``deletes_code``."""
    fixed = [r for r in rows if r["outcome"] == "fixed" and r["judged"]]
    parts = []
    for label, picked in (
        ("right", [r for r in fixed if not r["judged"].startswith("wrong")]),
        ("wrong", [r for r in fixed if r["judged"].startswith("wrong")]),
    ):
        flagged = sum(bool(r.get("behaviour_flagged")) for r in picked)
        moved = sum(bool(r.get("other_paths")) for r in picked)
        dropped = sum(bool(r.get("drops_input") or r.get("deletes_code")) for r in picked)
        parts.append(
            f"{label} fixes {flagged} of {len(picked)} (other paths of tests running the "
            f"suspicious code: {moved}; deletion flags: {dropped})"
        )
    return "; ".join(parts)


def engine_realbugs_figure(by_label: Dict[str, List[Row]], seconds: float, labels: str) -> Figure:
    """Figure 16 from measured rows (``by_label``: "before"/"after" or "after" alone)."""
    after = by_label["after"]
    before = by_label.get("before")
    header = ["case"] + (["before"] if before else []) + ["after"]
    rows = [header]
    for index, row in enumerate(after):
        rows.append([row["name"]] + ([_cell(before[index])] if before else []) + [_cell(row)])
    fixed, right, _ = _tally(after)
    checks = (
        [Check("at least 30 real bugs", str(len(after)), len(after) >= 30)]
        if len(after) >= 30
        else []
    )
    notes = [
        f"{label}: fixed {f} of {len(rs)} ({f / max(1, len(rs)) * 100:.1f}%); the reference fix "
        f"or the same on the whole suite {r} of them, wrong on the whole suite {o}; right fixes "
        f"{r} of {len(rs)}; median "
        f"{median([x['seconds'] for x in rs]):.0f} s a case"
        for label, rs in by_label.items()
        for f, r, o in [_tally(rs)]
    ]
    if before:
        b_fixed, b_right, _ = _tally(before)
        checks.append(
            Check(
                "more right fixes than before",
                f"{b_right} before, {right} after",
                right > b_right,
            )
        )
        notes.append(f"fixed {b_fixed} before, {fixed} after")
    others = [f"{r['name']} ({r['judged']})" for r in after if r["judged"].startswith("wrong")]
    notes += [
        "Plausible but wrong on the whole test suite: "
        + (", ".join(others) if others else "none")
        + ".",
        "Flagged changes_passing_behaviour (after): " + _flag_counts(after) + ".",
        f"Revisions: {labels}. {len(after)} real bugs, {WORKERS} runs at a time: "
        f"{seconds / 60:.0f} minutes.",
    ]
    return Figure(
        16,
        "The offline engine alone on real bugs: fixed, and fixed right",
        "the offline engine with no model on figure 14's real bugs (120 s, 3 iterations, the "
        "project as its repository has it); a fix is right when its files have the reference "
        "fix's syntax trees, or every test of the project's whole suite that passes with the "
        "reference fix passes with it",
        rows,
        checks,
        notes,
        seconds,
    )


def _worktree(rev: str, dest: Path) -> Path:
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "-q", "--detach", str(dest), rev], check=True
    )
    return dest


def figure_engine_realbugs(work: Path) -> Figure:
    """Figure 16 for ``make bench``: this checkout ("after"), and ``BENCH_ENGINE_BEFORE``'s
    revision ("before") when it is set."""
    import fidelity_figure as ff

    began = time.perf_counter()
    checkouts = {"after": REPO}
    rev = os.environ.get("BENCH_ENGINE_BEFORE", "")
    if rev:
        checkouts = {"before": _worktree(rev, work / "before-checkout"), **checkouts}
    chosen = [n for n in os.environ.get("BENCH_ENGINE_CASES", "").split(",") if n.strip()]
    try:
        by_label = engine_on_realbugs(chosen or list(ff.FIDELITY_CASES), work, checkouts)
    finally:
        if rev:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(checkouts["before"])]
            )
    labels = (f"before {rev}, " if rev else "") + "after: this checkout"
    labels += f"; only the cases of BENCH_ENGINE_CASES ({len(chosen)})" if chosen else ""
    return engine_realbugs_figure(by_label, time.perf_counter() - began, labels)


def main(argv: Sequence[str]) -> int:
    """``[--checkout DIR] [CASE ...]``: one JSON row per case (default: figure 14's cases)."""
    import fidelity_figure as ff

    args = list(argv)
    checkout = REPO
    if args[:1] == ["--checkout"]:
        checkout, args = Path(args[1]).resolve(), args[2:]
    names = args or list(ff.FIDELITY_CASES)
    with tempfile.TemporaryDirectory(prefix="engine-realbugs-") as tmp:
        for row in engine_on_realbugs(names, Path(tmp), {"after": checkout})["after"]:
            print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.path[:0] = [str(Path(__file__).resolve().parent)]
    raise SystemExit(main(sys.argv[1:]))
