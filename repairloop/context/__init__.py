"""The prompt's material: code slices around the failing frames, the failure, the last diff.

``group_failures`` sorts failures by root cause; ``build_context`` turns one
group into a ``RepairContext`` under a token budget. A slice is the enclosing
function (found with ``ast``, 1-based inclusive lines) of a traceback frame in
the project's non-test code, or of a project function the failing test calls
(an assertion failure has no such frame: the fault returned a wrong value).
The failing test itself is shown read-only. ``source.py`` reads the code.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Callable, FrozenSet, List, Mapping, Optional, Sequence, Set, Tuple

from repairloop.context.source import (
    WINDOW,
    Files,
    Piece,
    code_frames,
    collect,
    dedupe,
)
from repairloop.context.suspects import relevant, suspect_pieces
from repairloop.types import (
    CodeSlice,
    Failure,
    LastAttempt,
    Localisation,
    RepairContext,
    TestFiles,
    TestResult,
    is_project_path,
)

__all__ = ["build_context", "group_failures", "plain_text"]

MAX_OTHER_FAILING = 10  # names kept by trim step 1
MAX_MESSAGE_CHARS = 2000  # trim step 2
MAX_DIFF_LINES = 60  # trim step 5
SHARED_SUSPECTS = 3  # a failing test's most suspicious functions compared with another's


def group_failures(
    failures: Sequence[Failure], test_files: TestFiles, localisation: Optional[Localisation] = None
) -> List[Tuple[Failure, ...]]:
    """Failures grouped by root cause, largest group first, then by first test id.

    With per-test line data (``localisation``) failing tests are one task when they share a
    suspect: one of their ``SHARED_SUSPECTS`` most suspicious functions is the same, or their most
    suspicious functions lie in one file (the same fault copied into two functions of a module, or
    two functions of one change), whatever their exceptions. Otherwise the root cause is (exception
    type, innermost frame in project non-test code (not a test by ``test_files``) as (path,
    function)), the function falling back to the line when the frame has no name; a failure with
    no such frame (an assertion in the test) is a group of its own.
    """
    keys: List[FrozenSet[Tuple[str, ...]]] = []
    for failure in failures:
        code = code_frames(failure.frames, test_files)
        tops = localisation.top_functions(failure.test_id, SHARED_SUSPECTS) if localisation else []
        if tops:
            keys.append(
                frozenset([("file", tops[0].path)] + [("suspect", f.path, f.name) for f in tops])
            )
        elif code:
            frame = code[-1]
            keys.append(
                frozenset([(failure.exc_type or "", frame.path, frame.function or str(frame.line))])
            )
        else:
            keys.append(frozenset([("", "<test>", failure.test_id)]))
    ordered = [tuple(sorted(g, key=lambda f: f.test_id)) for g in _joined(failures, keys)]
    return sorted(ordered, key=lambda g: (-len(g), g[0].test_id))


def _joined(
    failures: Sequence[Failure], keys: Sequence[FrozenSet[Tuple[str, ...]]]
) -> List[List[Failure]]:
    """``failures`` in groups: two are in one group when their keys share an element, directly or
    through others (the connected components)."""
    groups: List[Tuple[Set[Tuple[str, ...]], List[Failure]]] = []
    for failure, key in zip(failures, keys):
        joined, members = set(key), [failure]
        for group in [g for g in groups if g[0] & key]:
            groups.remove(group)
            joined |= group[0]
            members = group[1] + members
        groups.append((joined, members))
    return [members for _, members in groups]


def _traceback(failure: Failure, files: Files) -> str:
    lines = []
    for frame in failure.frames:
        if not is_project_path(frame.path):
            continue
        function = frame.function
        if not function and (files.root / frame.path).is_file():
            function = files.get(frame.path).enclosing(frame.line)[2]
        lines.append(f"{frame.path}:{frame.line} in {function or '?'}")
    return "\n".join(lines)


def _message(group: Sequence[Failure], results: Mapping[str, TestResult]) -> str:
    parts = []
    for failure in group[:3]:
        text = failure.message.strip()
        output = results[failure.test_id].output.strip() if failure.test_id in results else ""
        if output:
            text += "\n\nCaptured output:\n" + output
        parts.append(f"{failure.test_id}:\n{text}" if len(group) > 1 else text)
    if len(group) > 3:
        parts.append(f"... and {len(group) - 3} more failing the same way")
    return "\n\n".join(parts)


def plain_text(ctx: RepairContext) -> str:
    """Every part of ``ctx`` concatenated: what the token budget measures when no renderer is
    given."""
    parts = ["\n".join(ctx.failing_tests), "\n".join(ctx.other_failing), ctx.message, ctx.traceback]
    parts += [f"{s.path}:{s.start_line}-{s.end_line} {s.name}\n{s.text}" for s in ctx.slices]
    if ctx.last_attempt is not None:
        parts += [ctx.last_attempt.diff, ctx.last_attempt.reason]
    return "\n\n".join(parts + list(ctx.notes))


def build_context(
    root: Path,
    group: Sequence[Failure],
    results: Mapping[str, TestResult],
    *,
    test_files: TestFiles,
    other_failing: Sequence[str] = (),
    last_attempt: Optional[LastAttempt] = None,
    token_budget: int = 6000,
    count_tokens: Callable[[str], int] = lambda s: len(s) // 4,
    render: Optional[Callable[[RepairContext], str]] = None,
    localisation: Optional[Localisation] = None,
) -> RepairContext:
    """The ``RepairContext`` for one group of failures (same root cause), within ``token_budget``.

    Slices, most telling first: with a ``localisation``, the functions it ranks most suspicious
    among those the group's tests ran, whole, with a method's class header and the imports they use
    (``suspects``); then the enclosing function of every traceback frame in project non-test code
    (paths relative to ``root``, not tests by ``test_files``, outside site-packages and venvs),
    innermost first, then each failing test (``read_only=True``), then project functions the test
    calls. ``results`` maps test ids to their latest results (for captured output). Tokens are
    ``count_tokens(render(ctx))`` (or of ``plain_text``). When over ``token_budget`` these trims
    apply in order, each only while still over, and are named in ``trimmed``:

    1. ``other_failing`` beyond 10 names;
    2. the message (captured output included) to 2,000 characters;
    3. slices farthest from the innermost frame, one at a time (the innermost
       frame's function and the tests are kept);
    4. remaining slices longer than 51 lines to +-25 lines around their frame line, after
       which a slice dropped in step 3 comes back, nearest first, where it fits again;
    5. the last attempt's diff to its first 60 lines.

    The result may still exceed the budget after step 5; ``tokens`` says by how much.
    """
    files = Files(Path(root))
    suspects = (
        suspect_pieces(files, relevant(localisation, [f.test_id for f in group]))
        if localisation
        else []
    )
    pieces = _after(suspects, collect(files, group, test_files))
    first = group[0] if group else None
    notes = tuple(dict.fromkeys(f.hint for f in group if f.hint))
    ctx = RepairContext(
        failing_tests=tuple(f.test_id for f in group),
        message=_message(group, results),
        traceback=_traceback(first, files) if first else "",
        slices=tuple(p.code for p in pieces),
        last_attempt=last_attempt,
        other_failing=tuple(other_failing),
        notes=notes,
        ranking=_ranking(localisation) if suspects else "",
    )
    show: Callable[[RepairContext], str] = render or plain_text

    def measure(c: RepairContext) -> int:
        return count_tokens(show(c))

    ctx, pieces = _trim(ctx, pieces, token_budget, measure)
    return replace(ctx, tokens=measure(ctx))


def _ranking(localisation: Optional[Localisation]) -> str:
    if localisation is None:
        return ""
    if localisation.method == "coverage":
        return "per-test coverage (the lines the failing tests ran and the passing tests did not)"
    return "the traceback (no per-test line data)"


def _after(first: List[Piece], rest: List[Piece]) -> List[Piece]:
    """``first`` (the suspects) ahead of ``rest``, whose distances move behind theirs; one piece per
    lines. A piece of ``rest`` overlapping a suspect's is left out: the suspect shows that code as
    it chose (a long function's signature and suspicious lines, not a window around a frame)."""
    if not first:
        return rest
    shift = max(p.distance for p in first) + 1
    rest = [p for p in rest if not any(_overlap(p.code, q.code) for q in first)]
    return sorted(
        dedupe(first + [replace(p, distance=p.distance + shift) for p in rest]),
        key=lambda p: p.distance,
    )


def _overlap(a: CodeSlice, b: CodeSlice) -> bool:
    return a.path == b.path and a.start_line <= b.end_line and b.start_line <= a.end_line


def _trim(
    ctx: RepairContext, pieces: List[Piece], budget: int, measure: Callable[[RepairContext], int]
) -> Tuple[RepairContext, List[Piece]]:
    trimmed: List[str] = []
    if measure(ctx) > budget and len(ctx.other_failing) > MAX_OTHER_FAILING:
        trimmed.append(f"other_failing: {len(ctx.other_failing)} -> {MAX_OTHER_FAILING} names")
        ctx = replace(ctx, other_failing=ctx.other_failing[:MAX_OTHER_FAILING])
    if measure(ctx) > budget and len(ctx.message) > MAX_MESSAGE_CHARS:
        trimmed.append(f"message: {len(ctx.message)} -> {MAX_MESSAGE_CHARS} characters")
        half = MAX_MESSAGE_CHARS // 2
        ctx = replace(ctx, message=ctx.message[:half] + "\n[...]\n" + ctx.message[-half:])
    ctx, pieces, notes = _trim_slices(ctx, pieces, budget, measure)
    trimmed += notes
    attempt = ctx.last_attempt
    if (
        measure(ctx) > budget
        and attempt is not None
        and len(attempt.diff.splitlines()) > MAX_DIFF_LINES
    ):
        trimmed.append(
            f"last attempt diff: {len(attempt.diff.splitlines())} -> {MAX_DIFF_LINES} lines"
        )
        diff = "\n".join(attempt.diff.splitlines()[:MAX_DIFF_LINES]) + "\n[... diff cut ...]\n"
        ctx = replace(ctx, last_attempt=replace(attempt, diff=diff))
    return replace(ctx, trimmed=tuple(trimmed)), pieces


def _trim_slices(
    ctx: RepairContext, pieces: List[Piece], budget: int, measure: Callable[[RepairContext], int]
) -> Tuple[RepairContext, List[Piece], List[str]]:
    """Trim steps 3 and 4 (``build_context``): the farthest unprotected slices dropped, then long
    slices shrunk, then the dropped ones taken back, nearest first, where they fit again. Returns
    the context, the pieces kept and what was trimmed."""
    # Pieces keep their places (the prompt's order); a dropped one is only marked, so that it can
    # come back once a shrink below has freed room.
    pieces, dropped = list(pieces), []

    def kept(without: Sequence[int]) -> Tuple[CodeSlice, ...]:
        return tuple(p.code for i, p in enumerate(pieces) if i not in without)

    for index in sorted(
        (i for i, p in enumerate(pieces) if not p.protected), key=lambda i: -pieces[i].distance
    ):
        if measure(ctx) <= budget:
            break
        dropped.append(index)
        ctx = replace(ctx, slices=kept(dropped))
    shrunk: List[str] = []
    for index, piece in enumerate(pieces):
        if measure(ctx) <= budget:
            break
        span = piece.code.end_line - piece.code.start_line + 1
        # a slice that already leaves lines out (a long suspect's signature and window) stays
        if index not in dropped and len(piece.code.text.splitlines()) == span > 2 * WINDOW + 1:
            pieces[index] = _window(piece)
            shrunk.append(
                f"slice shrunk: {piece.code.path} {piece.code.name} to lines "
                f"{pieces[index].code.start_line}-{pieces[index].code.end_line}"
            )
            ctx = replace(ctx, slices=kept(dropped))
    for index in sorted(dropped, key=lambda i: pieces[i].distance):  # nearest first
        fewer = [i for i in dropped if i != index]
        if measure(replace(ctx, slices=kept(fewer))) <= budget:
            dropped, ctx = fewer, replace(ctx, slices=kept(fewer))
    notes = [
        f"slice dropped: {p.code.path}:{p.code.start_line}-{p.code.end_line} {p.code.name}"
        for p in sorted((pieces[i] for i in dropped), key=lambda p: -p.distance)
    ]
    return ctx, [p for i, p in enumerate(pieces) if i not in dropped], notes + shrunk


def _window(piece: Piece) -> Piece:
    code = piece.code
    lines = code.text.splitlines()
    start = max(code.start_line, piece.anchor - WINDOW)
    end = min(code.end_line, piece.anchor + WINDOW)
    text = "\n".join(lines[start - code.start_line : end - code.start_line + 1])
    return replace(piece, code=replace(code, start_line=start, end_line=end, text=text))
