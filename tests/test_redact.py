"""Secrets stay home: secret environment values and well-known credential formats are masked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from repairloop.journal import BaselineEvent, Journal, ProposalEvent, TestsSummary, read_journal
from repairloop.redact import (
    MARKER,
    Redactor,
    is_secret_name,
    redact,
    redact_context,
    redact_feedback,
    secret_values,
)
from repairloop.types import CodeSlice, Decision, Feedback, LastAttempt, RepairContext, Usage

PLANTED = "pl4nted-s3cret-value-0042"


def test_secret_looking_names_and_provider_variables() -> None:
    for name in (
        "OPENAI_API_KEY",
        "GITHUB_TOKEN",
        "DB_PASSWORD",
        "MY_SECRET",
        "GOOGLE_APPLICATION_CREDENTIALS",
        "SENTRY_DSN",
        "GITLAB_PAT",
        "hf_token",
        "WATSONX_APIKEY",
    ):
        assert is_secret_name(name), name
    for name in ("HOME", "PATH", "USER", "PYTHONPATH", "LANG"):
        assert not is_secret_name(name), name


def test_secret_values_skip_short_and_non_secret_variables() -> None:
    environ = {
        "MY_SERVICE_TOKEN": PLANTED,
        "TOKENIZERS_PARALLELISM": "false",
        "HOME": "/home/someone-long",
        "OPENAI_API_KEY": "sk-short",
        "AWS_SECRET_ACCESS_KEY": "x" * 40,
    }
    assert secret_values(environ) == ["x" * 40, PLANTED, "sk-short"]


SAMPLES = [
    ("aws-access-key", "key id AKIAIOSFODNN7EXAMPLE in the log", "AKIAIOSFODNN7EXAMPLE"),
    (
        "aws-secret-key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("github-token", "GH ghp_" + "a1B2" * 9, "ghp_" + "a1B2" * 9),
    (
        "github-token",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "github_pat_11ABCDEFG",
    ),
    ("gitlab-token", "glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789"),
    ("slack-token", "xoxb-123456789012-abcdefABCDEF", "xoxb-123456789012"),
    ("model-provider-key", "OPENAI sk-proj-abcdefghijklmnopqrstuvwxyz012345", "sk-proj-abcdefghij"),
    ("model-provider-key", "sk-ant-api03-abcdefghijklmnopqrstuvwxyz", "sk-ant-api03-abcdefghij"),
    ("google-api-key", "AIza" + "Sy" + "A" * 33, "AIzaSy"),
    ("pypi-token", "pypi-AgEIcHlwaS5vcmc" + "x" * 60, "pypi-AgEI"),
    (
        "jwt",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJhbGciOiJIUzI1NiJ9",
    ),
    ("bearer-token", "Authorization: Bearer abc.DEF-ghi_jkl~1234", "abc.DEF-ghi_jkl~1234"),
    (
        "bearer-token",
        "headers={'Authorization': 'token 0123456789abcdef0123'}",
        "0123456789abcdef0123",
    ),
    ("url-password", "postgres://app:hunter2hunter2@db.internal:5432/app", "hunter2hunter2"),
]


@pytest.mark.parametrize("kind, text, secret", SAMPLES)
def test_well_known_formats_are_masked(kind: str, text: str, secret: str) -> None:
    out = redact(text, [])
    assert secret not in out
    assert f"[REDACTED:{kind}]" in out


def test_private_key_blocks_whole_or_cut_short() -> None:
    block = (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\nAAAABG5vbmU=\n-----END "
        "OPENSSH PRIVATE KEY-----"
    )
    out = redact(f"before\n{block}\nafter", [])
    assert out == "before\n[REDACTED:private-key]\nafter"
    cut = redact("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7", [])
    assert "MIIEow" not in cut


def test_ordinary_code_and_output_pass_unchanged() -> None:
    text = (
        "token = get_token(user)\npassword = self.password_field\nsha "
        "3f786850e387550fdab836ed7e6dc881de23001b\n"
        "api_key='sk-no-key'\nthe bearer of bad news\nhttps://example.com/path?x=1\nassert "
        "last_n([1, 2], 1) == [2]\n"
    )
    assert redact(text, ["false", ""]) == text  # values too short to be secrets are ignored


def test_environment_values_are_masked_wherever_they_appear() -> None:
    redactor = Redactor([PLANTED])
    assert redactor(f"E   AssertionError: got {PLANTED}!") == f"E   AssertionError: got {MARKER}!"
    assert redactor(f"{PLANTED}{PLANTED}") == MARKER * 2


def test_every_text_a_proposer_is_shown_is_redacted() -> None:
    leak = f"key={PLANTED}"
    context = RepairContext(
        failing_tests=(f"tests/test_a.py::test_x[{PLANTED}]",),
        message=f"assert {leak}",
        traceback=leak,
        slices=(CodeSlice("a.py", 1, 2, "f", f"X = '{PLANTED}'\n"),),
        last_attempt=LastAttempt(diff=f"+{leak}", decision=Decision.REVERTED, reason=leak),
        other_failing=(leak,),
        notes=(leak,),
    )
    shown = redact_context(context, Redactor([PLANTED]))
    assert PLANTED not in repr(shown)
    assert shown.slices[0].text == f"X = '{MARKER}'\n" and shown.failing_tests[0].endswith(
        f"[{MARKER}]"
    )
    feedback = redact_feedback(
        Feedback(answer=leak, error=f"no match for {leak}"), Redactor([PLANTED])
    )
    assert PLANTED not in feedback.answer + feedback.error


def test_journal_with_a_redactor_writes_no_secret(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "run", redact=Redactor([PLANTED]))
    journal.record(
        BaselineEvent(
            TestsSummary(
                1,
                (f'tests/test_a.py::test["{PLANTED}"]',),
                0,
                1.0,
                output_tail=f"printing {PLANTED}\n",
            )
        )
    )
    journal.record(
        ProposalEvent(1, 0, "m", "llm", "diff", Usage(), {PLANTED: "AKIAIOSFODNN7EXAMPLE"})
    )
    journal.write_text("fix.patch", f"+ {PLANTED}\n")
    journal.write_json("summary.json", {"notes": [PLANTED]})
    for path in (tmp_path / "run").iterdir():
        text = path.read_text()
        assert PLANTED not in text and "AKIAIOSFODNN7EXAMPLE" not in text, path.name
    events, warnings = read_journal(tmp_path / "run")
    assert not warnings and events[0]["report"]["output_tail"] == f"printing {MARKER}\n"
    assert json.loads((tmp_path / "run" / "summary.json").read_text()) == {"notes": [MARKER]}


def test_redact_record_masks_every_string_and_keeps_the_shape() -> None:
    from dataclasses import dataclass
    from typing import Dict, Tuple

    from repairloop.redact import redact_record

    @dataclass(frozen=True)
    class Inner:
        text: str
        decision: Decision
        count: int

    @dataclass(frozen=True)
    class Outer:
        items: Tuple[Inner, ...]
        extra: Dict[str, object]
        nothing: object = None

    leak = "s3cr3t-value-0123456789"
    record = Outer((Inner(f"got {leak}", Decision.REVERTED, 3),), {"k": [leak, 1.5], "n": None})
    clean = redact_record(record, Redactor([leak]))
    assert clean == Outer(
        (Inner("got [REDACTED]", Decision.REVERTED, 3),), {"k": ["[REDACTED]", 1.5], "n": None}
    )
    assert clean.items[0].decision is Decision.REVERTED  # a str enum is not text to mask


@pytest.mark.parametrize("name", ["DB_PASS", "MYSQL_PWD", "SMTP_PASSPHRASE", "REDIS_PASSWORD"])
def test_password_variables_by_any_spelling_but_not_the_working_directory(name: str) -> None:
    assert is_secret_name(name)
    assert not is_secret_name("PWD") and not is_secret_name("OLDPWD")


def _forms(value: str) -> dict:
    import base64
    import urllib.parse

    raw = value.encode()
    return {
        "repr": repr("x" + value)[1:-1],
        "json": json.dumps({"k": value}),
        "percent": urllib.parse.quote(value, safe=""),
        "hex": raw.hex(),
        "HEX": raw.hex().upper(),
        "base64": base64.b64encode(raw).decode(),
        "base64 in a blob": base64.b64encode(b"header:" + raw + b":trailer").decode(),
        "urlsafe base64": base64.urlsafe_b64encode(b"!" + raw).decode(),
    }


@pytest.mark.parametrize("form", sorted(_forms("p@ss\"w0rd/with\\odd'chars")))
def test_each_encoding_of_a_secret_value_is_masked(form: str) -> None:
    secret = "p@ss\"w0rd/with\\odd'chars"
    text = _forms(secret)[form]
    masked = Redactor([secret])(f"value: {text} end")
    assert MARKER in masked and text not in masked


def test_a_secret_cut_by_an_output_cap_leaves_no_fragment() -> None:
    redactor = Redactor([PLANTED])
    head = ("log line\n" + PLANTED)[: len("log line\n") + 12]
    assert PLANTED[:12] not in redactor(head + "...")  # the plugin's message cap
    assert PLANTED[:12] not in redactor(
        head + "\n[... repairloop: 4096 bytes of output dropped ...]\nrest"
    )
    tail = PLANTED[9:] + " and the rest of the captured output"  # text[-N:] starts inside the value
    assert PLANTED[9:] not in redactor(tail)
    assert redactor("an ordinary ... ellipsis and text") == "an ordinary ... ellipsis and text"


def test_passwords_in_urls_of_any_scheme_even_without_a_user() -> None:
    for url in (
        "redis://:hunter2secret@cache:6379/0",
        "postgresql://app:hunter2secret@db/app",
        "amqp://guest:hunter2secret@mq//",
    ):
        masked = redact(url, [])
        assert "hunter2secret" not in masked and "[REDACTED:url-password]" in masked
