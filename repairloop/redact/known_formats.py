"""Well-known credential formats: ``FORMATS`` and ``mask_formats``."""

from __future__ import annotations

import re
from typing import Callable, List, Pattern, Tuple

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


def mask_formats(text: str) -> str:
    """``text`` with every well-known format (``FORMATS``) replaced by ``[REDACTED:<kind>]``."""
    for kind, pattern, group in _COMPILED:
        text = pattern.sub(_replace_group(kind, group), text)
    return text
