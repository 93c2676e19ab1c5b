"""Which environment variables hold secrets: the name rule and the providers' key variables."""

from __future__ import annotations

import re
from typing import List, Mapping, Tuple

from repairloop.redact.known_formats import url_passwords

MIN_SECRET_CHARS = 8
SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS|PWD|CREDENTIAL|_PAT$|DSN", re.I)
# Names that look secret by the rule above but are not: the shell's working directories.
NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})
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
