"""Small text helpers that modules of different layers need alike: fences, USD, numstat, equal ends.

This module sits at the bottom of the import graph beside ``types`` and imports
nothing from the package (STYLE.md, "Who may import whom"). Each helper here had
copies in modules that may not import one another: the prompt (``propose``), the
reports read from journals (``reports``) and the CI summary (``integrations``)
all fence text; the workspace and the CI branch both read ``git apply
--numstat``; the patch module and the offline engine both trim equal lines and
read doctest examples; the parser (``patch``) and the proposer's check for
answers that are only thinking (``propose``) set thinking aside alike
(``split_thinking``).
``types`` holds records and enums, not text helpers, so they live here.
"""

from __future__ import annotations

import ast
import doctest
import re
import warnings
from collections import Counter
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

# What redaction (``repairloop.redact``) puts where a secret was: "[REDACTED]" or
# "[REDACTED:<kind>]".
# Masked text is never content: a candidate or a patch that adds it is refused (``patch.guards``,
# ``--apply``).
REDACTION_MARKER = "[REDACTED"


def listed(items: Sequence[str], limit: int = 5) -> str:
    """The first ``limit`` of ``items`` joined by ", ", and "and N more" for the rest."""
    more = len(items) - limit
    return ", ".join(items[:limit]) + (f" and {more} more" if more > 0 else "")


def adds_marker(old: Optional[str], new: Optional[str]) -> bool:
    """True when ``new`` holds more redaction markers than ``old`` (None: no text)."""
    return (new or "").count(REDACTION_MARKER) > (old or "").count(REDACTION_MARKER)


def fence(text: str, language: str = "") -> str:
    """``text`` in a Markdown code fence that nothing inside it can close.

    The fence has more backticks than the longest run of backticks in ``text``
    (at least three), so a diff of a Markdown file or a model's own fences stay
    inside. ``text`` is kept as given; no newline follows the closing fence.
    """
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{language}\n{text}\n{ticks}"


def usd(cost: Optional[float], unknown: str = "unknown") -> str:
    """A cost in USD with four decimals (``$0.0123``); ``unknown`` for None (a model with no known
    price)."""
    return unknown if cost is None else f"${cost:.4f}"


def numstat_paths(output: str) -> List[str]:
    """The paths named by ``git apply --numstat -z`` output, sorted, each once.

    Each record is ``added<TAB>removed<TAB>path<NUL>``; for a rename the path is
    empty and the old and the new name follow as two NUL-terminated fields
    (git-apply(1), ``-z``). Both names of a rename are returned.
    """
    items = output.split("\0")
    paths: List[str] = []
    i = 0
    while i < len(items):
        fields = items[i].split("\t", 2)
        i += 1
        if len(fields) == 3 and fields[2]:
            paths.append(fields[2])
        elif len(fields) == 3:  # a rename: the old and the new name follow
            paths.extend(items[i : i + 2])
            i += 2
    return sorted(set(paths))


def common_ends(old: Sequence[str], new: Sequence[str]) -> Tuple[int, int]:
    """(prefix, suffix): how many items are equal at the start and, not overlapping, at the end of
    both."""
    prefix = 0
    limit = min(len(old), len(new))
    while prefix < limit and old[prefix] == new[prefix]:
        prefix += 1
    suffix = 0
    while suffix < limit - prefix and old[-1 - suffix] == new[-1 - suffix]:
        suffix += 1
    return prefix, suffix


def doctest_examples(text: Optional[str]) -> Counter[Tuple[str, str, str]]:
    """(owner, source, expected output) of every doctest example in the string literals of ``text``.

    ``owner`` is the qualified name of the def or class whose body holds the
    string (``<module>`` at module level); docstrings, ``__test__`` values and any
    other string count, erring towards "test content". Empty when ``text`` does not parse.
    """
    found: Counter[Tuple[str, str, str]] = Counter()
    try:
        with warnings.catch_warnings():  # a candidate's SyntaxWarning is not the user's business
            warnings.simplefilter("ignore")
            tree = ast.parse(text or "")
    except (SyntaxError, ValueError):
        return found
    parser = doctest.DocTestParser()

    def visit(node: ast.AST, owner: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                visit(child, child.name if owner == "<module>" else f"{owner}.{child.name}")
            elif (
                isinstance(child, ast.Constant)
                and isinstance(child.value, str)
                and ">>>" in child.value
            ):
                try:
                    examples = parser.get_examples(child.value)
                except ValueError:  # malformed examples (doctest's own error): compare the raw text
                    found[(owner, child.value, "")] += 1
                    continue
                found.update((owner, e.source, e.want) for e in examples)
            else:
                visit(child, owner)

    visit(tree, "<module>")
    return found


# --- thinking: set aside before parsing ---------------------------------------------------------
#
# Thinking is not the answer: ``<think>``/``<thinking>``/``<reasoning>`` blocks set aside before
# parsing.
#
# Reasoning models served locally (DeepSeek-R1, Qwen3 through Ollama or vLLM)
# write their chain of thought into the answer, often with draft diffs in it.
# Shapes seen in the field and handled here:
#
# - ``<think>...</think>`` then the answer (the common case);
# - ``...</think>`` then the answer, the opening tag missing (the chat template
#   put it in the prompt: open-webui/open-webui#9808, SciSharp/LLamaSharp#1090);
# - ``<think>`` never closed (the completion limit cut the thought short:
#   jundot/omlx#2607): everything after it is thinking;
# - empty ``<think>\\n\\n</think>`` pairs in the middle of the text (Qwen3 with
#   thinking switched off: Palm1r/QodeAssist#189);
# - gpt-oss's harmony channels written as text
#   (``<|channel|>analysis<|message|>...<|end|><|start|>assistant<|channel|>final<|message|>...``,
#   OpenAI's harmony response format): only the last ``final`` message is the
#   answer; ``analysis`` and ``commentary`` messages (drafts included) are thinking.
#
# Provider reasoning fields (``reasoning_content``) never reach the answer text;
# ``propose/llm.py`` keeps them apart.

_TAGS = "think|thinking|reasoning"
_BLOCK = re.compile(rf"<({_TAGS})>.*?</\1>", re.S | re.I)
_OPEN = re.compile(rf"<({_TAGS})>", re.I)
_CLOSE = re.compile(rf"</({_TAGS})>", re.I)
# One harmony message: its channel (the header may add `to=...` and `<|constrain|>...`), its text
# up to the next special token or the end (a message cut at the limit has no <|end|>).
_HARMONY = re.compile(
    r"<\|channel\|>\s*(\w+)[^<]*(?:<\|constrain\|>[^<]*)?<\|message\|>"
    r"(.*?)(?=<\|(?:end|return|call|start|channel)\|>|\Z)",
    re.S,
)


@dataclass(frozen=True)
class Thought:
    """An answer split into what the model said and what it thought (``\\n`` newlines)."""

    answer: str
    thinking: str  # every thinking block, joined; "" when there was none
    unclosed: bool = False  # a thinking block opened and never closed


def split_thinking(text: str) -> Thought:
    """Set the thinking of ``text`` aside; the rest is the answer to parse.

    Order: harmony channels (only the last ``final`` message stays); text up to a
    ``</think>`` that no ``<think>`` opened is thinking (the template opened it);
    then closed blocks; then an unclosed opening tag makes everything after it
    thinking.
    """
    thinking = []
    if "<|channel|>" in text:
        messages = [(m.group(1).lower(), m.group(2)) for m in _HARMONY.finditer(text)]
        finals = [body for channel, body in messages if channel == "final"]
        thinking += [body for channel, body in messages if channel != "final"] + finals[:-1]
        text = finals[-1] if finals else ""
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
