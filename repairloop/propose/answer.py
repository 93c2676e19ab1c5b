"""What a chat completion says: the answer, the model's reasoning apart from it, refusals, refused
parameters.

Reasoning comes two ways. Hosted reasoning models and servers that split it
(DeepSeek's API, vLLM's reasoning parsers, Ollama's ``reasoning`` field,
which litellm maps to ``reasoning_content``: measured with litellm 1.110.2
against a local server) return it beside the answer; local models served
without a parser write ``<think>...</think>`` into the answer itself. The
answer stays verbatim (the journal keeps it, redacted); ``visible`` is the
answer without inline thinking, used here to tell an answer from a refusal
or from thinking alone. The parser sets thinking aside by the same rules
(``textutil.split_thinking``, which both use).
"""

from __future__ import annotations

import json
import re
from typing import Any, Dict, Optional, Tuple

from repairloop.textutil import split_thinking

_PATCH_MARK = re.compile(r"^(---\s|\+\+\+\s|@@|diff --git|<{5,}\s*SEARCH|\s*```)", re.M)
_REFUSAL = re.compile(
    r"\b(I\s+can[’']?t|I\s+can\s?not|I[’']?m\s+(not\s+able|unable)\s+to|I\s+am\s+"
    r"(not\s+able|unable)\s+to|I\s+won[’']?t|I\s+will\s+not)\s+(help|assist|comply|"
    r"provide|do\s+that|fulfil|complete|continue|support)",
    re.I,
)
# "Unsupported parameter: 'temperature' is not supported with this model." / "Unsupported value:
# 'temperature' does not support 0 with this model." (OpenAI o-series; BerriAI/litellm#8242 shows
# drop_params missing such a model, BeehiveInnovations/pal-mcp-server#78 both wordings).
_REFUSED_PARAM = re.compile(
    r"Unsupported (?:parameter|value):\s*'(\w+)'|'(\w+)'\s+(?:is not supported|does not support)",
    re.I,
)


def answer_of(response: Any) -> Tuple[str, Optional[str], str]:
    """(content, finish_reason, reasoning) of a litellm completion; "" for what is missing."""
    try:
        choice = response.choices[0]
    except (AttributeError, IndexError, TypeError):
        return "", None, ""
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    reasoning = getattr(message, "reasoning_content", None)
    return (
        (content if isinstance(content, str) else ""),
        getattr(choice, "finish_reason", None),
        reasoning if isinstance(reasoning, str) else "",
    )


def tool_calls_text(response: Any) -> str:
    """The function calls of a litellm completion written as ``<tool_call>`` JSON blocks, the
    text ``patch/toolmarkup.py`` reads (so the journal keeps them as the answer); "" for none.
    Arguments the model sent as a JSON string are decoded when they parse and kept verbatim
    otherwise, for the parser to refuse."""
    try:
        calls = response.choices[0].message.tool_calls or []
    except (AttributeError, IndexError, TypeError):
        return ""
    blocks = []
    for call in calls:
        function = getattr(call, "function", None)
        name = getattr(function, "name", None) or ""
        raw = getattr(function, "arguments", None)
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
            arguments = raw
        body = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
        blocks.append(f"<tool_call>\n{body}\n</tool_call>")
    return "\n".join(blocks)


def visible(content: str) -> str:
    """``content`` without thinking (``textutil.split_thinking``: ``<think>`` blocks, an
    unclosed one running to the end, text before a ``</think>`` no tag opened, harmony channels
    other than the final one)."""
    return split_thinking(content).answer


def is_refusal(content: str) -> bool:
    """A refusal is an answer with no patch in it that says it will not help, near its start."""
    return not _PATCH_MARK.search(content) and bool(_REFUSAL.search(content[:600]))


def refused_param(exc: BaseException, sent: Dict[str, Any]) -> Optional[str]:
    """The request parameter a 400 says the model does not take, when it is one of ``sent``."""
    if getattr(exc, "status_code", None) not in (400, 422):
        return None
    named = getattr(exc, "param", None)
    if isinstance(named, str) and named in sent:
        return named
    match = _REFUSED_PARAM.search(str(exc))
    name = (match.group(1) or match.group(2)) if match else None
    return name if name in sent else None
