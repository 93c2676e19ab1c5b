"""Building the proposers of a run's model chain (part of the loop layer).

Proposer modules are imported only when a link of the chain is first used, so
an offline run never imports litellm (about 3 s; TECH-NOTES section 1.2).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

from repairloop import errors
from repairloop.errors import ConfigError, ProposerError
from repairloop.journal import Journal, ProposalErrorEvent, ProposalEvent
from repairloop.loop.prefilter import journalled_warm
from repairloop.patch.dropped import drops_input
from repairloop.settings import Settings, edit_format_for
from repairloop.textutil import REDACTION_MARKER
from repairloop.types import (
    CUT_OFF_REASONS,
    Budget,
    Proposal,
    ProposalRequest,
    Proposer,
    TestFiles,
    TestReport,
    TestRunner,
)

BUILTIN = "builtin"
RecordedAnswer = Union[ProposalEvent, ProposalErrorEvent]  # what a resumed run replays


@dataclass
class ChainState:
    """Where the run is in its model chain. Only the session changes it (``advance``, ``drop``).

    ``since`` is the number of iterations made before the current link took
    over; ``dropped`` holds "model: why" for each link left for good.
    """

    links: Tuple[str, ...]
    index: int = 0
    since: int = 0
    dropped: List[str] = field(default_factory=list)
    stepped_down: bool = False

    @property
    def current(self) -> str:
        """The current link's name, "(none)" when the chain is used up."""
        return self.links[self.index] if self.index < len(self.links) else "(none)"

    def advance(self, iterations: int) -> None:
        """Go on with the next link (which may be none) after ``iterations`` iterations."""
        self.index += 1
        self.since = iterations

    def drop(self, why: str, iterations: int) -> None:
        """Leave the current link for the rest of the run and go on with the next."""
        self.dropped.append(f"{self.current}: {why}")
        self.advance(iterations)


def build_proposer(
    name: str,
    settings: Settings,
    root: Path,
    suite: TestRunner,
    journal: Journal,
    test_files: TestFiles,
) -> Proposer:
    """The proposer for one chain link: ``builtin`` (offline engine) or a litellm model name.

    ``suite`` is the loop's TestRunner (runs the project's tests in any copy; the engine's copies
    too); ``journal`` records the model's events (retries, errors; ``types.model_events``);
    ``test_files`` are the run's test files (never mutated by the offline engine).
    """
    if name == BUILTIN:
        from repairloop.localise import localise
        from repairloop.propose.builtin import BuiltinProposer

        def run_tests(
            copy: Path, test_ids: Sequence[str], timeout: float, coverage: bool
        ) -> TestReport:
            return suite.run(copy, test_ids, coverage=coverage, timeout=timeout)

        return BuiltinProposer(
            project_root=root,
            run_tests=run_tests,
            test_files=test_files,
            localiser=localise,
            workers=settings.workers,
            max_candidates=settings.builtin_candidates,
            candidate_timeout=settings.builtin_candidate_timeout,
            extra_search_share=settings.builtin_extra_search,
            open_warm=journalled_warm(suite, journal, BUILTIN) if settings.warm else None,
            scratch_dir=suite.scratch_dir,  # its copies go where the run's scratch is registered
            distrusted=lambda old, new: drops_input(old, new, test_files),
        )
    from repairloop.propose.llm import LLMProposer

    return LLMProposer(
        name,
        api_base=settings.api_base,
        api_key_env=settings.api_key_env,
        timeout=settings.model_timeout,
        max_retries=settings.model_retries,
        backoff_base=settings.model_backoff,
        max_completion_tokens=settings.max_completion_tokens,
        edit_format=edit_format_for(settings, name),
        on_event=journal.record,
        price=settings.model_prices.get(name),
    )


def check_cost_limit(settings: Settings, chain: Sequence[str]) -> None:
    """Refuse a cost limit the run could not keep: ``max_cost`` set by the user (a flag, the
    environment, the configuration file; not the default) with a model that has no price, neither
    in ``model_prices`` nor in litellm's price map, whose calls would then cost "unknown".

    Raises ConfigError (exit 2) before any call is made; needs litellm's price map only then.
    """
    if "max_cost" not in settings.model_fields_set:
        return
    from repairloop.propose.litellm_env import price_usd

    unpriced = [
        m
        for m in chain
        if m != BUILTIN and m not in settings.model_prices and price_usd(m, 1, 1) is None
    ]
    if unpriced:
        raise ConfigError(
            f"a cost limit (max_cost ${settings.max_cost:g}) cannot be kept with "
            f"{', '.join(unpriced)}: "
            "litellm has no price for it, so what its calls cost would be unknown",
            hint=f'give its price in USD per million tokens (model_prices = {{"{unpriced[0]}" = '
            f"[PROMPT, COMPLETION]}} "
            f'in [tool.repairloop], or REPAIRLOOP_MODEL_PRICES="{unpriced[0]}=PROMPT/COMPLETION"), '
            "or drop the cost limit (--max-cost, max_cost)",
        )


def warm_up(chain: Sequence[str]) -> None:
    """Import litellm in the background when the chain has a model (about 3 s, TECH-NOTES 1.2).

    The import then overlaps the baseline test run instead of delaying the
    first prompt; a later import simply waits for it (Python's import lock).
    """
    if not any(m != BUILTIN for m in chain):
        return

    def load() -> None:
        from repairloop.propose.litellm_env import load_litellm

        try:
            load_litellm()
        except Exception:  # the real call will fail with a clear error where it matters
            pass

    threading.Thread(target=load, name="repairloop-litellm-import", daemon=True).start()


def token_counter(chain: Sequence[str]) -> Callable[[str], int]:
    """Count prompt tokens with litellm's offline counter for the first model of the chain.

    With only the offline engine in the chain, a characters/4 estimate is used
    so that litellm is never imported for an offline run.
    """
    models = [m for m in chain if m != BUILTIN]
    if not models:
        return lambda text: len(text) // 4
    model = models[0]

    def count(text: str) -> int:
        from repairloop.propose.litellm_env import count_tokens

        return count_tokens(model, text)

    return count


class ReplayProposer:
    """A chain link that answers from a resumed run's journal before asking its real proposer.

    ``recorded`` maps (iteration, round) to the run's journalled answer or
    model error; ``build`` makes the real proposer, only when a
    question has no recorded answer (so a resume never pays twice).
    """

    def __init__(
        self,
        name: str,
        recorded: Dict[Tuple[int, int], RecordedAnswer],
        build: Callable[[], Proposer],
    ) -> None:
        self.name = name
        self.engine = "builtin" if name == BUILTIN else "llm"
        self._recorded = recorded
        self._build = build
        self._real: Optional[Proposer] = None

    @property
    def real(self) -> Proposer:
        if self._real is None:
            self._real = self._build()
            self.engine = getattr(self._real, "engine", self.engine)
        return self._real

    def propose(self, request: ProposalRequest) -> Proposal:
        record = self._recorded.get((request.iteration, 1 if request.feedback else 0))
        if record is None or record.model != self.name:
            return self.real.propose(request)
        if isinstance(record, ProposalEvent) and REDACTION_MARKER in record.answer:
            return self.real.propose(request)  # masked text is never content: ask again
        if isinstance(record, ProposalErrorEvent):
            raise _recorded_error(record)
        notes = dict(record.notes, replayed=True)
        return Proposal(
            answer=record.answer,
            engine=record.engine or self.engine,
            model=self.name,
            usage=record.usage,
            notes=notes,
            candidates=record.candidates,
            degraded=record.degraded,
            cut_off=record.notes.get("finish_reason") in CUT_OFF_REASONS,  # never applied again
        )


def asking(link: str, recorded: Optional[RecordedAnswer]) -> str:
    """What an iteration does with the chain's current link: a resumed run replays the answer it
    recorded."""
    if recorded is not None and recorded.model == link:
        return f"replaying {link}'s recorded answer (not asked again)"
    return f"asking {link}"


def _recorded_error(record: ProposalErrorEvent) -> ProposerError:
    """Rebuild the model-side error a run recorded, so a replay takes the same path."""
    kind = getattr(errors, record.error_class, None)
    message = record.message or "recorded model error"
    if kind is errors.BudgetExhausted:
        return errors.BudgetExhausted(
            message, budget=record.budget or Budget.TOKENS, usage=record.usage
        )
    if not (isinstance(kind, type) and issubclass(kind, ProposerError)):
        kind = errors.ModelError
    return kind(
        message,
        usage=record.usage,
        attempts=record.attempts,
        candidates=record.candidates,
        degraded=record.degraded,
    )
