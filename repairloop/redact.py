"""Secrets stay home: values of secret-looking environment variables and well-known
credential formats are replaced by a marker before text goes to a model or a journal.

Two sources, both applied by ``redact``:

1. The values of environment variables whose names look secret (``*KEY*``,
   ``*TOKEN*``, ``*SECRET*``, ``*PASS*``, ``*PWD*`` but not the shell's
   ``PWD``, ``*CREDENTIAL*``, ``*_PAT``, ``*DSN*``) and of the providers' key
   variables, found by ``secret_values(environ)``, in every form text may carry
   them (``encodings``: escaped, JSON, percent, hex, base64), and their
   fragments where an output cap cut them. A test that prints its environment, or an
   assertion that shows a configured value, then leaks nothing: the exact
   value is known. Values shorter than MIN_SECRET_CHARS are left alone (a
   ``TOKENIZERS_PARALLELISM=false`` must not blank every "false").
2. Well-known formats (``FORMATS``): cloud access keys, forge and registry
   tokens, model-provider keys, JWTs, bearer and basic authorization values,
   passwords in URLs of any scheme (``redis://:pw@host`` too), private key blocks. Patterns follow
   the prefixes the issuers document and the rules of Yelp's detect-secrets plugins and of gitleaks'
   default configuration.

Why a compact table and not detect-secrets (1.5, the well-kept Python
scanner): it brings ``requests`` and ``pyyaml``, its API scans files and lines
under a global settings context (``transient_settings``) and reports findings
rather than rewriting text, and its default high-entropy detectors would blank
hashes and identifiers in the code shown to the model. The formats a repair
tool meets in test output are a dozen prefixes; they are listed here with
their sources so they can be reviewed and extended.

The marker is ``[REDACTED]`` for an environment value and ``[REDACTED:<kind>]``
for a format. Stdlib only; nothing happens at import time but compiling regexes.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import re
import urllib.parse
from typing import Any, Callable, Iterable, List, Mapping, Optional, Pattern, Sequence, Tuple

from repairloop.types import Feedback, RepairContext

MARKER = "[REDACTED]"
MIN_SECRET_CHARS = 8
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|_PAT$|DSN", re.I)
# Names that look secret by the rule above but are not: the shell's working directories.
NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
# Text that marks where an output, message or capture was cut: a secret split there leaves a
# fragment.
CUT_MARKS = re.compile(r"\n?\[\.\.\. repairloop: \d+ bytes of output dropped \.\.\.\]\n?|\.\.\.|…")
MIN_FRAGMENT_CHARS = 6
# Provider key variables (litellm's provider docs); most match SECRET_NAME, listed so none is
# missed.
PROVIDER_VARIABLES: Tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "AZURE_API_KEY",
    "AZURE_OPENAI_API_KEY",
    "AZURE_AD_TOKEN",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "VERTEXAI_CREDENTIALS",
    "MISTRAL_API_KEY",
    "COHERE_API_KEY",
    "GROQ_API_KEY",
    "DEEPSEEK_API_KEY",
    "XAI_API_KEY",
    "TOGETHERAI_API_KEY",
    "FIREWORKS_AI_API_KEY",
    "OPENROUTER_API_KEY",
    "PERPLEXITYAI_API_KEY",
    "REPLICATE_API_TOKEN",
    "HUGGINGFACE_API_KEY",
    "HF_TOKEN",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
    "WATSONX_APIKEY",
    "DATABRICKS_TOKEN",
    "CLOUDFLARE_API_KEY",
    "LITELLM_API_KEY",
    "LITELLM_MASTER_KEY",
)

# (kind, pattern, group to replace: 0 the whole match, 1 the value after a kept prefix).
FORMATS: Tuple[Tuple[str, str, int], ...] = (
    # PEM/OpenSSH/PGP private keys, a block cut short by an output cap included (detect-secrets
    # PrivateKeyDetector).
    (
        "private-key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        0,
    ),
    # AWS access key ids (AWS IAM "unique identifiers" prefixes; gitleaks aws-access-token).
    ("aws-access-key", r"\b(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b", 0),
    # AWS secret access keys: 40 characters after a name that says so.
    (
        "aws-secret-key",
        r"(?i)aws.{0,20}?(?:secret|private).{0,20}?[\"']?\s*[:=]\s*[\"']?"
        r"([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+])",
        1,
    ),
    # GitHub: ghp_/gho_/ghu_/ghs_/ghr_ and fine-grained github_pat_ (GitHub's token formats, 2021).
    ("github-token", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b", 0),
    # GitLab personal, deploy, runner, pipeline-trigger tokens (GitLab token overview).
    ("gitlab-token", r"\bgl(?:pat|dt|rt|ptt|soat|cbt|ft)-[A-Za-z0-9_\-]{20,}", 0),
    ("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}", 0),
    # OpenAI (sk-, sk-proj-, sk-svcacct-) and Anthropic (sk-ant-) keys.
    ("model-provider-key", r"\bsk-(?:proj-|svcacct-|admin-|ant-)?[A-Za-z0-9_\-]{20,}", 0),
    ("google-api-key", r"\bAIza[0-9A-Za-z_\-]{35}", 0),
    ("stripe-key", r"\b(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{16,}", 0),
    ("pypi-token", r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_\-]{20,}", 0),
    ("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", 0),
    ("huggingface-token", r"\bhf_[A-Za-z0-9]{30,}\b", 0),
    ("jwt", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}", 0),
    # Authorization header values (RFC 6750 bearer, RFC 7617 basic, GitHub's "token").
    (
        "bearer-token",
        r"(?i)(?:\bauthorization[\"']?\s*[:=]\s*[\"']?(?:bearer|token|basic)\s+|\bbearer\s+)"
        r"([A-Za-z0-9\-._~+/]{12,}=*)",
        1,
    ),
    # scheme://user:password@host (detect-secrets BasicAuthDetector).
    ("url-password", r"\b[a-zA-Z][a-zA-Z0-9+.\-]*://[^/\s:@\"']*:([^/\s@\"']+)@", 1),
)

_COMPILED: List[Tuple[str, Pattern[str], int]] = [(k, re.compile(p), g) for k, p, g in FORMATS]


def is_secret_name(name: str) -> bool:
    """True for an environment variable whose value should never leave the machine."""
    upper = name.upper()
    return upper in PROVIDER_VARIABLES or (
        upper not in NOT_SECRET_NAMES and bool(SECRET_NAME.search(name))
    )


def secret_values(environ: Mapping[str, str]) -> List[str]:
    """Values of ``environ``'s secret-looking variables (``is_secret_name``), longest first.

    Values shorter than MIN_SECRET_CHARS characters are left out; duplicates once.
    """
    values = {
        v.strip()
        for k, v in environ.items()
        if is_secret_name(k) and len(v.strip()) >= MIN_SECRET_CHARS
    }
    return sorted(values, key=lambda v: (-len(v), v))


def _replace_group(kind: str, group: int) -> Callable[["re.Match[str]"], str]:
    marker = f"[REDACTED:{kind}]"

    def sub(match: "re.Match[str]") -> str:
        if group == 0:
            return marker
        whole, start, end = (
            match.group(0),
            match.start(group) - match.start(0),
            match.end(group) - match.start(0),
        )
        return whole[:start] + marker + whole[end:]

    return sub


def encodings(value: str) -> List[str]:
    """The forms of a secret value that text may carry: itself, escaped (``repr``, JSON,
    ``unicode_escape``), percent-encoded, hex (both cases), and base64 (standard and URL-safe, at
    each of the three byte offsets it can have inside a longer encoded text). Forms shorter than
    MIN_SECRET_CHARS are left out."""
    raw = value.encode("utf-8")
    forms = {
        value,
        repr(value)[1:-1],
        json.dumps(value)[1:-1],
        value.encode("unicode_escape").decode("ascii"),
        urllib.parse.quote(value, safe=""),
        raw.hex(),
        raw.hex().upper(),
    }
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for offset in range(3):
            text = encode(b"\0" * offset + raw).decode("ascii").rstrip("=")
            core = text[4 if offset else 0 :]  # the first group mixes in the bytes before the value
            if len(raw) + offset > 3:
                core = core[: len(core) - (len(core) % 4 or 4)] if (len(raw) + offset) % 3 else core
            forms.add(core)
    return sorted((f for f in forms if len(f) >= MIN_SECRET_CHARS), key=lambda f: (-len(f), f))


class Redactor:
    """``text -> text`` with every known secret value and well-known format replaced.

    ``Redactor(secret_values(os.environ))`` is the run's redactor; calling it
    on text without secrets returns the text unchanged. Each value is masked in
    all its ``encodings``, and a fragment of it (at least MIN_FRAGMENT_CHARS
    and half of it) is masked where text starts or ends or was cut
    (``CUT_MARKS``): output caps keep a head and a tail, and a value split there
    would leave a piece of itself on each side.
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        self._secrets = sorted(
            {s for s in secrets if len(s) >= MIN_SECRET_CHARS}, key=lambda v: (-len(v), v)
        )
        forms = sorted({f for s in self._secrets for f in encodings(s)}, key=lambda v: (-len(v), v))
        self._values: Optional[Pattern[str]] = (
            re.compile("|".join(re.escape(v) for v in forms)) if forms else None
        )

    def __call__(self, text: str) -> str:
        if not text:
            return text
        if self._values is not None:
            text = self._values.sub(MARKER, text)
            text = self._fragments(text)
        for kind, pattern, group in _COMPILED:
            text = pattern.sub(_replace_group(kind, group), text)
        return text

    def _fragments(self, text: str) -> str:
        """Mask a secret's tail at the start of ``text`` or after a cut, and its head at the end or
        before one."""
        cuts = [(m.start(), m.end()) for m in CUT_MARKS.finditer(text)]
        ends = [0] + [end for _, end in cuts]  # where a secret's tail could begin
        starts = [len(text)] + [start for start, _ in cuts]  # where a secret's head could end
        spans: List[Tuple[int, int]] = []
        for secret in self._secrets:
            shortest = max(MIN_FRAGMENT_CHARS, len(secret) // 2)
            for size in range(len(secret) - 1, shortest - 1, -1):
                tail, head = secret[-size:], secret[:size]
                spans += [(at, at + size) for at in ends if text.startswith(tail, at)]
                spans += [
                    (at - size, at) for at in starts if at >= size and text.endswith(head, 0, at)
                ]
        for begin, end in sorted(set(spans), reverse=True):
            if MARKER not in text[max(begin - len(MARKER), 0) : end + len(MARKER)]:
                text = text[:begin] + MARKER + text[end:]
        return text


def redact(text: str, secrets: Sequence[str]) -> str:
    """``text`` with the given secret values and every well-known credential format masked."""
    return Redactor(secrets)(text)


def redact_context(context: RepairContext, redactor: Callable[[str], str]) -> RepairContext:
    """The context with every text a proposer could send redacted: every string field of it, however
    deep (``redact_record``), so a field added later is never sent unredacted."""
    redacted: RepairContext = redact_record(context, redactor)
    return redacted


def redact_feedback(feedback: Feedback, redactor: Callable[[str], str]) -> Feedback:
    """A structural-retry message with its answer and error redacted (errors quote file text)."""
    redacted: Feedback = redact_record(feedback, redactor)
    return redacted


__all__ = [
    "FORMATS",
    "MARKER",
    "Redactor",
    "is_secret_name",
    "redact",
    "redact_context",
    "redact_feedback",
    "secret_values",
]


def redact_record(value: Any, redactor: Callable[[str], str]) -> Any:
    """``value`` with every string inside it redacted, the same shape back.

    Walks dataclasses (frozen ones are rebuilt with ``dataclasses.replace``),
    tuples, lists and dict values; enums, numbers and None are returned as
    they are. Used on what leaves a run for the user's screen, ``--json`` and
    CI summaries (a RunResult, classified failures), as the journal already is.
    """
    if isinstance(value, enum.Enum) or value is None or isinstance(value, (int, float, bool)):
        return value
    if isinstance(value, str):
        return redactor(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        changes = {
            f.name: redact_record(getattr(value, f.name), redactor)
            for f in dataclasses.fields(value)
            if f.init
        }
        return dataclasses.replace(value, **changes)
    if isinstance(value, tuple):
        return tuple(redact_record(item, redactor) for item in value)
    if isinstance(value, list):
        return [redact_record(item, redactor) for item in value]
    if isinstance(value, dict):
        return {key: redact_record(item, redactor) for key, item in value.items()}
    return value
