"""Candidate ordering and the parallel search over them.

Candidates are single mutations ordered by suspiciousness x operator prior
with stable tie-breaks (line rank, family order, offsets, text), so the same
input always gives the same order. When the singles are exhausted and time is
left, two-edit combinations of the most promising singles follow: those that
made some of the failing tests pass first.
"""

from __future__ import annotations

import ast
import itertools
import warnings
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Callable, Dict, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from repairloop.propose.builtin.edits import Edit, apply_to_files, diff_files, edit_size
from repairloop.propose.builtin.filemodel import FileModel
from repairloop.propose.builtin.mutate import mutations_at
from repairloop.propose.builtin.mutation import FAMILY_ORDER, Mutation
from repairloop.propose.builtin.scratch import Verdict
from repairloop.types import LineKey, Suspect

MAX_LINES = 40  # suspicious lines mutated; deeper ones almost never hold a one-line fix
PAIR_POOL = 12  # singles combined pairwise when the singles are exhausted


@dataclass(frozen=True)
class Candidate:
    """One or two mutations to try together; ``order`` is the position in the search order."""

    mutations: Tuple[Mutation, ...]
    suspiciousness: float
    prior: float
    order: int

    @property
    def operator(self) -> str:
        return "+".join(m.operator for m in self.mutations)

    @property
    def edits(self) -> Tuple[Edit, ...]:
        return tuple(m.edit for m in self.mutations)

    def to_json(self) -> Dict[str, object]:
        first = self.mutations[0]
        return {
            "operator": self.operator,
            "path": first.path,
            "line": first.line,
            "lines": [m.line for m in self.mutations],
            "description": "; ".join(m.description for m in self.mutations),
            "suspiciousness": round(self.suspiciousness, 4),
            "prior": round(self.prior, 4),
        }


@dataclass(frozen=True)
class Result:
    """A tried candidate, its verdict, and (for plausible ones) its diff and edit size."""

    candidate: Candidate
    verdict: Verdict
    diff: str = ""
    size: Tuple[int, int] = (0, 0)
    # Per-test line data about the edited lines (``Search.reach``): how many of the failing tests
    # do not run them, and whether none of the tests a partial fix leaves failing runs them.
    unshared: int = 0
    unrelated: bool = False
    # A reader would distrust it (``Search.distrusted``: the loop's ``drops_input`` check).
    distrusted: bool = False

    @property
    def plausible(self) -> bool:
        return self.verdict.status == "plausible"

    def choice_key(self) -> Tuple[int, int, bool, int, int, float, int, float, float, int]:
        """Fewest failing tests left failing, then fewest of the repaired group, then one a
        reader would not distrust (``distrusted``: a function that stops reading an input
        loses to a fix that keeps reading them), then edits
        at the statements the failing tests share (fewest of them not running an edited
        line), then fewest changed lines, the search's own belief (suspiciousness x prior), fewest
        changed characters, suspiciousness, prior, search order.

        Between two one-line patches the character count is a weak signal and picks
        overfitting ones (``mid + 1`` to ``mid + 2`` over ``hi = mid`` to ``hi = mid - 1``);
        the ranking already weighs how often each kind of edit is the fix. ``unrelated`` is
        not in the key: a second edit that fixes nothing would make such a partial fix look
        related (a junk edit on a line the still-failing test runs); the engine searches on
        instead of answering one (``BuiltinProposer.propose``).
        """
        c, v = self.candidate, self.verdict
        lines, chars = self.size
        return (
            v.missed,
            v.missed_group,
            self.distrusted,
            self.unshared,
            lines,
            -round(c.suspiciousness * c.prior, 6),
            chars,
            -round(c.suspiciousness, 9),
            -round(c.prior, 9),
            c.order,
        )

    def to_json(self) -> Dict[str, object]:
        record = self.candidate.to_json()
        record.update(
            outcome=self.verdict.status,
            reason=self.verdict.reason,
            seconds=round(self.verdict.seconds, 3),
        )
        return record


def order_candidates(
    suspects: Sequence[Suspect],
    models: Mapping[str, FileModel],
    boosts: Optional[Mapping[str, float]] = None,
) -> List[Candidate]:
    """Single-mutation candidates of the top suspicious lines, in search order.

    ``boosts`` multiplies the prior of a family (``hints.family_boosts``: what the
    failing tests' exceptions point at).
    """
    boosts = boosts or {}
    found: List[Tuple[Mutation, float, int]] = []
    seen: Set[Tuple[str, int, int, str]] = set()
    for rank, suspect in enumerate(s for s in suspects if s.score > 0):
        if rank >= MAX_LINES:
            break
        model = models.get(suspect.path)
        if model is None:
            continue
        for mutation in mutations_at(model, suspect.line):
            key = (mutation.path, mutation.start, mutation.end, mutation.replacement)
            if key not in seen:
                seen.add(key)
                found.append((mutation, suspect.score, rank))

    def prior(m: Mutation) -> float:
        return m.prior * boosts.get(m.operator, 1.0)

    found.sort(
        key=lambda t: (
            -round(t[1] * prior(t[0]), 9),
            t[2],
            FAMILY_ORDER[t[0].operator],
            t[0].path,
            t[0].start,
            t[0].end,
            t[0].replacement,
        )
    )
    return [Candidate((m,), score, prior(m), i) for i, (m, score, _) in enumerate(found)]


def _overlap(a: Mutation, b: Mutation) -> bool:
    return a.path == b.path and (a.line == b.line or (a.start < b.end and b.start < a.end))


def pair_candidates(results: Sequence[Result], first_order: int) -> List[Candidate]:
    """Two-edit candidates from singles that ran (no timeout) and fixed not the whole group,
    partial fixes first (two halves of a two-edit fix are each plausible partial fixes)."""
    ran = [
        r
        for r in results
        if len(r.candidate.mutations) == 1
        and (
            r.verdict.status in ("failing", "broke_passing")
            or (r.verdict.status == "plausible" and not r.verdict.complete)
        )
    ]
    ran.sort(key=lambda r: (-r.verdict.fixed, r.candidate.order))
    pool = ran[:PAIR_POOL]
    pairs = []
    for a, b in itertools.combinations(pool, 2):
        ma, mb = a.candidate.mutations[0], b.candidate.mutations[0]
        if not _overlap(ma, mb):
            key = (
                -(a.verdict.fixed + b.verdict.fixed),
                a.candidate.order + b.candidate.order,
                a.candidate.order,
            )
            pairs.append((key, a.candidate, b.candidate))
    pairs.sort(key=lambda t: t[0])
    return [
        Candidate(
            a.mutations + b.mutations,
            min(a.suspiciousness, b.suspiciousness),
            a.prior * b.prior,
            first_order + i,
        )
        for i, (_, a, b) in enumerate(pairs)
    ]


def _fingerprint(changed: Dict[str, str]) -> Tuple[Tuple[str, int], ...]:
    """What the changed files mean: their ASTs (text when they do not parse)."""
    parts = []
    for path, text in sorted(changed.items()):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                meaning = ast.dump(ast.parse(text))
        except (SyntaxError, ValueError):
            meaning = text
        parts.append((path, hash(meaning)))
    return tuple(parts)


Validate = Callable[[Dict[str, str]], Verdict]
KeepGoing = Callable[["Search"], bool]


class Search:
    """The state of one search, continued across ``propose()`` calls.

    ``originals`` maps project-relative paths to the text the mutations were
    computed on; ``allowed(changed)`` is False for a candidate never worth a
    test run (it edits test content the loop's guards refuse). ``run`` validates candidates in
    order, ``workers`` at a time, while ``keep_going(self)`` says so; results accumulate in
    ``results``.
    """

    def __init__(
        self,
        candidates: Sequence[Candidate],
        originals: Dict[str, str],
        workers: int,
        allowed: Callable[[Dict[str, str]], bool] = lambda changed: True,
        ran_by: Optional[Mapping[LineKey, FrozenSet[str]]] = None,
        targets: Sequence[str] = (),
        distrusted: Callable[[Dict[str, str], Dict[str, str]], bool] = lambda old, new: False,
    ) -> None:
        self.queue: List[Candidate] = list(candidates)
        self.distrusted = distrusted  # (originals, changed files) -> a reader would distrust it
        self.originals = originals
        self.allowed = (
            allowed  # False for changed files a guard would refuse (a doctest's expected output)
        )
        self.ran_by, self.targets = (
            ran_by or {},
            frozenset(targets),
        )  # Localisation.ran_by: failing tests per line
        self.workers = max(1, workers)
        self.cursor = 0
        self.generated = len(self.queue)
        self.pairs_added = False
        self.results: List[Result] = []
        self.tried = 0
        self.found_at: Optional[Tuple[float, int]] = (
            None  # (clock, tried) at this run's first complete fix
        )
        self._seen: Set[Tuple[Tuple[str, int], ...]] = set()

    @property
    def exhausted(self) -> bool:
        return self.pairs_added and self.cursor >= len(self.queue)

    def _next(self, inflight: int) -> Optional[Tuple[Candidate, Dict[str, str]]]:
        while True:
            if self.cursor >= len(self.queue):
                if self.pairs_added or inflight:
                    return None  # pairs need every single's verdict first
                self.pairs_added = True
                self.queue.extend(pair_candidates(self.results, len(self.queue)))
                continue
            candidate = self.queue[self.cursor]
            self.cursor += 1
            try:
                changed = apply_to_files(self.originals, candidate.edits)
            except ValueError:
                continue
            if not self.allowed(changed):
                continue
            fingerprint = _fingerprint(changed)
            if fingerprint not in self._seen:  # two operators, same program (`(x)` and `x`)
                self._seen.add(fingerprint)
                return candidate, changed

    def _check_compiles(self, changed: Dict[str, str]) -> Optional[Verdict]:
        for path, text in sorted(changed.items()):
            try:
                with (
                    warnings.catch_warnings()
                ):  # a mutant's SyntaxWarning is not the user's business
                    warnings.simplefilter("ignore")
                    compile(text, path, "exec", dont_inherit=True)
            except (SyntaxError, ValueError) as exc:
                return Verdict("compile_error", f"does not compile: {exc}")
        return None

    def _record(
        self, candidate: Candidate, changed: Dict[str, str], verdict: Verdict, now: float
    ) -> None:
        diff, size = "", (0, 0)
        if verdict.status == "plausible":
            diff = diff_files(self.originals, changed)
            size = edit_size(self.originals, changed)
            unshared, unrelated = self.reach(candidate, verdict)
            if self.found_at is None and verdict.complete:
                self.found_at = (now, self.tried)
        self.results.append(
            Result(candidate, verdict, diff, size)
            if not diff
            else Result(
                candidate,
                verdict,
                diff,
                size,
                unshared,
                unrelated,
                self.distrusted(self.originals, changed),
            )
        )

    def reach(self, candidate: Candidate, verdict: Verdict) -> Tuple[int, bool]:
        """(how many failing targets do not run an edited line, the most over the edits; True for a
        partial fix whose edited lines none of the tests it leaves failing runs). (0, False) without
        per-test line data (the traceback fallback): nothing is known."""
        if not self.ran_by:
            return 0, False
        runs = [self.ran_by.get((m.path, m.line), frozenset()) for m in candidate.mutations]
        unshared = max(len(self.targets - ran) for ran in runs)
        return unshared, bool(verdict.still) and not any(ran & set(verdict.still) for ran in runs)

    def run(self, validate: Validate, keep_going: KeepGoing, clock: Callable[[], float]) -> None:
        """Validate candidates until ``keep_going`` says stop or none are left."""
        self.found_at = None
        with ThreadPoolExecutor(
            max_workers=self.workers, thread_name_prefix="repairloop-builtin"
        ) as pool:
            inflight: Dict["Future[Verdict]", Tuple[int, Candidate, Dict[str, str]]] = {}
            while True:
                while len(inflight) < self.workers and keep_going(self):
                    item = self._next(len(inflight))
                    if item is None:
                        break
                    self.tried += 1
                    failed = self._check_compiles(item[1])
                    if failed is not None:
                        self._record(item[0], item[1], failed, clock())
                        continue
                    inflight[pool.submit(validate, item[1])] = (self.tried, *item)
                if not inflight:
                    return
                done, _ = wait(list(inflight), return_when=FIRST_COMPLETED)
                for future in sorted(done, key=lambda f: inflight[f][0]):
                    _, candidate, changed = inflight.pop(future)
                    try:
                        verdict = future.result()
                    except Exception as exc:  # one broken validation must not end the search
                        verdict = Verdict(
                            "error", f"validation failed: {type(exc).__name__}: {exc}"
                        )
                    self._record(candidate, changed, verdict, clock())

    def plausible(self, exclude: Set[str]) -> List[Result]:
        """Plausible results whose diff is not in ``exclude``, best first."""
        found = [r for r in self.results if r.plausible and r.diff and r.diff not in exclude]
        return sorted(found, key=Result.choice_key)

    def counts(self) -> Dict[str, int]:
        """How many candidates were generated and tried, and tried per outcome."""
        counts: Dict[str, int] = {
            "generated": self.generated,
            "tried": self.tried,
            "pairs": len(self.queue) - self.generated,
        }
        for result in self.results:
            counts[result.verdict.status] = counts.get(result.verdict.status, 0) + 1
        return counts
