"""Building the proposers of a run's model chain (part of the loop layer).

Proposer modules are imported only when a link of the chain is first used, so
an offline run never imports litellm (about 3 s; TECH-NOTES section 1.2).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Sequence

from repairloop.settings import Settings
from repairloop.types import Proposer

BUILTIN = "builtin"


def build_proposer(name: str, settings: Settings, root: Path, suite: Any, journal: Any) -> Proposer:
    """The proposer for one chain link: ``builtin`` (offline engine) or a litellm model name.

    ``suite`` is the loop's TestSuite (runs the project's tests in any copy);
    ``journal`` receives model retry events.
    """
    if name == BUILTIN:
        from repairloop.propose.builtin import BuiltinProposer

        def run_tests(copy: Path, test_ids: Sequence[str], timeout: float, coverage: bool) -> Any:
            return suite.run(copy, test_ids, coverage=coverage, timeout=timeout)

        return BuiltinProposer(
            project_root=root,
            run_tests=run_tests,
            test_globs=tuple(settings.test_globs),
            workers=settings.workers,
            max_candidates=settings.builtin_candidates,
            candidate_timeout=settings.builtin_candidate_timeout,
            extra_search_share=settings.builtin_extra_search,
        )
    from repairloop.propose.llm import LLMProposer

    def on_event(event: dict) -> None:
        details = {k: v for k, v in event.items() if k != "event"}
        journal.append(str(event.get("event", "model_event")), **{"model": name, **details})

    return LLMProposer(
        name,
        api_base=settings.api_base,
        timeout=settings.model_timeout,
        max_retries=settings.model_retries,
        max_completion_tokens=settings.max_completion_tokens,
        on_event=on_event,
    )


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
        from repairloop.propose.llm import count_tokens

        return count_tokens(model, text)

    return count
