"""Secrets no rule names exactly: a random-looking value under a secret-looking key, and a long
random run of base64 characters; and what must stay readable (hashes, digests, UUIDs, names)."""

from __future__ import annotations

import pytest

from repairloop.redact import redact
from repairloop.redact.shapes import entropy

# 48 characters of base64 from secrets.token_urlsafe, fixed here: 5.1 bits per character.
RANDOM = "q3VbX0kTz9LmR2wYc7HfN5pJd8sGa4Ue1oKiW6tBn-Ay_QhE"


@pytest.mark.parametrize(
    "text, value",
    [
        ('password="hunter2-Extra9!"', "hunter2-Extra9!"),
        ('{"password": "Zq8pL2mVx7"}', "Zq8pL2mVx7"),
        ("self.api_key = 'AbC123xYz789QwE'", "AbC123xYz789QwE"),
        ("X-Auth-Token: 9f8e7d6c5b4a39281706", "9f8e7d6c5b4a39281706"),
        ("--client-secret=AbC123xYz789QwE", "AbC123xYz789QwE"),
        ("GET /callback?token=AbC123xYz789QwEr&page=2", "AbC123xYz789QwEr"),
        ("auth_key: 0123456789abcdef0123456789abcdef", "0123456789abcdef0123456789abcdef"),
        ('SECRET_KEY = "django-insecure-k#8v!q2z@m$w"', "django-insecure-k#8v!q2z@m$w"),
        ("db_password := 'Tr0ub4dor&3x'", "Tr0ub4dor&3x"),
        ("PASSWORD=Tr0ub4dor#3xY;", "Tr0ub4dor#3xY"),
    ],
)
def test_a_random_looking_value_under_a_secret_looking_key_is_masked(text: str, value: str) -> None:
    masked = redact(text, [])
    assert value not in masked and "[REDACTED:assigned-secret]" in masked, masked


def test_a_long_random_run_is_masked_anywhere() -> None:
    assert entropy(RANDOM) > 4.5
    masked = redact(f"E   ValueError: unexpected {RANDOM} in the reply", [])
    assert masked == "E   ValueError: unexpected [REDACTED:high-entropy] in the reply"


@pytest.mark.parametrize(
    "text",
    [
        "token = get_token(user)",
        "password = self.password_field",
        "api_key=settings.OPENAI_API_KEY",
        'password=os.environ["DB_PASSWORD"]',
        "token: Optional[str] = None",
        'token == "AbC123xYz789QwEr"',  # a comparison, not an assignment
        'leak = " session_token=" + UNKNOWN["session_token"]',  # a string built in code
        "max_tokens=4096",
        "credentials.json: FileNotFoundError",
        'password_hash = "pbkdf2_sha256$260000$abc$def123XYZ"',  # the key says it is a hash
        'expected_token_sha = "3f786850e387550fdab836ed7e6dc881de23001b"',
        'token = "<your-token>"',
        "password: ${DB_PASSWORD}",
        "api_key='sk-no-key'",
        # bare: git hashes, digests in lock files, UUIDs, names, paths, short base64
        "commit 3f786850e387550fdab836ed7e6dc881de23001b",
        'version = "1.2.3"\nhash = "sha256:'
        'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"',  # a lock file
        '"integrity": "sha512-Z1crEsRo57Oaj4qlG6asdFAuG1YI+gyQ/REXKueB0kmazwmal21Ct95HLth899hL0pHPX'
        '=="',
        "run 123e4567-e89b-12d3-a456-426614174000 finished",
        "def test_TestQuickBrownFoxJumpsOverTheLazyDog1234567890():",
        "/usr/lib/python3.11/site-packages/SomePackage/Module2/thing.py",
        'assert b64("hello world!") == "aGVsbG8gd29ybGQh"',
        'assert digest(b"abc") == '
        '"ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"',  # expected hex
    ],
)
def test_code_hashes_and_identifiers_stay_readable(text: str) -> None:
    assert redact(text, []) == text


@pytest.mark.parametrize("unit", ["ab_", "a.b-", "token_", "x.y:"])
def test_a_long_run_of_name_characters_costs_linear_time(unit: str) -> None:
    """A key or a URL scheme found by an unbounded pattern made 10,000 such characters take
    seconds (quadratic); bounded, 60,000 take a blink (10 s is the most a loaded machine may
    need)."""
    import time

    text = unit * (60_000 // len(unit))
    started = time.monotonic()
    assert redact(text, ["a-known-Secret-42"]) == text
    assert time.monotonic() - started < 10
