"""Well-known credential formats: ``FORMATS`` and ``mask_formats``."""

from __future__ import annotations

import re
import urllib.parse
from typing import Callable, List, Pattern, Tuple

# scheme://user:password@host, of any scheme, the user possibly empty (redis://:pw@host), after
# detect-secrets' BasicAuthDetector. The password runs to the last "@" before the host, so one
# holding an "@" written as it is goes whole; it stops at a "/" (RFC 3986 has it percent-encoded
# there) and at a quote or white space. Groups: 1 the user, 2 the password, 3 the host. The scheme
# starts where a word starts and has at most 41 characters (postgresql+psycopg2 has 19): unbounded,
# a long run of dotted words would cost quadratic time.
URL_PASSWORD = (
    r"(?<![a-zA-Z0-9+.\-])[a-zA-Z][a-zA-Z0-9+.\-]{0,40}://"
    r"([^/\s:@\"']*):([^/\s\"']+)@([^/\s:?#@\"']*)"
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
    ("url-password", URL_PASSWORD, 2),
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


def url_passwords(text: str) -> List[str]:
    """The passwords of the URLs in ``text`` (``URL_PASSWORD``), each as written and
    percent-decoded, in order of appearance, once each.

    A password that is also its URL's user, host or scheme
    (``postgres://postgres:postgres@postgres/db``, a local default) is left out: as a known secret
    it would blank that word wherever it stands; in the URL itself the ``url-password`` format
    masks it all the same.
    """
    found: List[str] = []
    for match in re.finditer(URL_PASSWORD, text):
        scheme = match.group(0).split("://", 1)[0]
        password = match.group(2)
        if password in (match.group(1), match.group(3), scheme):
            continue
        for form in (password, urllib.parse.unquote(password)):
            if form not in found:
                found.append(form)
    return found


def mask_formats(text: str) -> str:
    """``text`` with every well-known format (``FORMATS``) replaced by ``[REDACTED:<kind>]``."""
    for kind, pattern, group in _COMPILED:
        text = pattern.sub(_replace_group(kind, group), text)
    return text
