"""Which environment variables hold secrets: the name rule and the providers' key variables."""

from __future__ import annotations

import re
from typing import List, Mapping, Tuple

from repairloop.redact.known_formats import url_passwords

MIN_SECRET_CHARS = 8
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|_PAT$|DSN", re.I)
# Names that look secret by the rule above but are not: the shell's working directories.
# ``REPAIRLOOP_API_KEY_ENV`` holds the *name* of the variable with the key, not a key.
NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD", "REPAIRLOOP_API_KEY_ENV"})
# Words that make a key in code, configuration or output name a secret (``password = ...``,
# ``"api_key": ...``, ``X-Auth-Token: ...``, ``--client-secret=...``), after the keyword lists of
# detect-secrets' KeywordDetector and gitleaks' generic-api-key rule. Heuristic.
SECRET_WORDS = (
    r"passw(?:or)?d|passphrase|pwd|secret|token|credentials?|authorization|dsn"
    r"|(?:api|access|private|secret|auth|session|signing|encryption|master|account)[_.\-]?key"
)
_SECRET_WORD = re.compile(SECRET_WORDS, re.I)
# Parts of a name that make it say something about a secret rather than hold one: its digest, its
# URL or file, its field, type, header or length (``password_hash``, ``token_url``,
# ``PASSWORD_FIELD``, ``api_key_env``, ``max_tokens``, ``tokenizer``). Heuristic.
NOT_SECRET_PARTS = frozenset(
    {"hash", "hashed", "digest", "sha", "sha1", "sha256", "md5", "checksum", "fingerprint"}
    | {"url", "uri", "endpoint", "path", "file", "dir", "type", "name", "field", "header"}
    | {"prefix", "suffix", "env", "var", "length", "len", "count", "min", "max", "limit", "ttl"}
    | {"timeout", "expiry", "expires", "regex", "pattern", "format", "label", "help", "prompt"}
    | {"message", "msg", "policy", "id", "ids", "uuid", "tokens", "tokenizer", "hint", "column"}
    | {"attr", "kind", "template", "placeholder", "validator", "strength"}
)
_NAME_PARTS = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")


def is_secret_key(name: str) -> bool:
    """True for a key in code or text whose value is a secret: ``name`` holds one of SECRET_WORDS
    and none of NOT_SECRET_PARTS (split at separators and camelCase humps, compared in lower
    case)."""
    if not _SECRET_WORD.search(name):
        return False
    parts = {part.lower() for part in _NAME_PARTS.split(name) if part}
    return not parts & NOT_SECRET_PARTS


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


def is_secret_name(name: str) -> bool:
    """True for an environment variable whose value should never leave the machine."""
    upper = name.upper()
    return upper in PROVIDER_VARIABLES or (
        upper not in NOT_SECRET_NAMES and bool(SECRET_NAME.search(name))
    )


def secret_values(environ: Mapping[str, str]) -> List[str]:
    """Values of ``environ``'s secret-looking variables (``is_secret_name``), and the password of
    every URL in any variable's value (``DATABASE_URL=postgres://app:pw@db/app``: its password as
    written and percent-decoded, ``known_formats.url_passwords``), longest first.

    Values shorter than MIN_SECRET_CHARS characters are left out; duplicates once.
    """
    values = {v.strip() for k, v in environ.items() if is_secret_name(k)}
    values |= {p for v in environ.values() if "://" in v for p in url_passwords(v)}
    return sorted((v for v in values if len(v) >= MIN_SECRET_CHARS), key=lambda v: (-len(v), v))
