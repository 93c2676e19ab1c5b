"""Thinking is not the answer: ``<think>``/``<thinking>``/``<reasoning>`` blocks set aside before
parsing.

Reasoning models served locally (DeepSeek-R1, Qwen3 through Ollama or vLLM)
write their chain of thought into the answer, often with draft diffs in it.
Shapes seen in the field and handled here:

- ``<think>...</think>`` then the answer (the common case);
- ``...</think>`` then the answer, the opening tag missing (the chat template
  put it in the prompt: open-webui/open-webui#9808, SciSharp/LLamaSharp#1090);
- ``<think>`` never closed (the completion limit cut the thought short:
  jundot/omlx#2607): everything after it is thinking;
- empty ``<think>\\n\\n</think>`` pairs in the middle of the text (Qwen3 with
  thinking switched off: Palm1r/QodeAssist#189).

Provider reasoning fields (``reasoning_content``) never reach the answer text;
``propose/llm.py`` keeps them apart.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_TAGS = "think|thinking|reasoning"
_BLOCK = re.compile(rf"<({_TAGS})>.*?</\1>", re.S | re.I)
_OPEN = re.compile(rf"<({_TAGS})>", re.I)
_CLOSE = re.compile(rf"</({_TAGS})>", re.I)


@dataclass(frozen=True)
class Thought:
    """An answer split into what the model said and what it thought (``\\n`` newlines)."""

    answer: str
    thinking: str  # every thinking block, joined; "" when there was none
    unclosed: bool = False  # a thinking block opened and never closed


def split_thinking(text: str) -> Thought:
    """Set the thinking of ``text`` aside; the rest is the answer to parse.

    Order: text up to a ``</think>`` that no ``<think>`` opened is thinking
    (the template opened it); then closed blocks; then an unclosed opening tag
    makes everything after it thinking.
    """
    thinking = []
    first_close, first_open = _CLOSE.search(text), _OPEN.search(text)
    if first_close is not None and (first_open is None or first_close.start() < first_open.start()):
        thinking.append(text[: first_close.start()])
        text = text[first_close.end() :]

    def keep(match: "re.Match[str]") -> str:
        thinking.append(match.group(0))
        return ""

    text = _BLOCK.sub(keep, text)
    unclosed = _OPEN.search(text)
    if unclosed is not None:
        thinking.append(text[unclosed.start() :])
        text = text[: unclosed.start()]
    return Thought(text, "\n".join(t for t in thinking if t), unclosed is not None)
