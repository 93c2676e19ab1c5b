"""Where known secrets come from besides secret-looking variables: the passwords of URLs in any
environment variable, the project's ``.env`` files and the literals its code assigns to
secret-looking names."""

from __future__ import annotations

import base64
import urllib.parse

from repairloop.redact import MARKER, Redactor, redact, secret_values

DB_PASSWORD = "Xq7#pL2@vR9!kT"  # as a user writes it; percent-encoded in the URL
DATABASE_URL = f"postgresql://app:{urllib.parse.quote(DB_PASSWORD, safe='')}@db.internal:5432/app"


def test_the_password_of_every_url_is_masked_whatever_it_holds() -> None:
    for url, password in (
        ("postgres://app:p@ss@db.internal:5432/app", "p@ss"),  # an "@" written as it is
        ("redis://:Tz9-cache-pw@cache:6379/0", "Tz9-cache-pw"),  # no user
        ("mongodb+srv://u:m0ng0%2Fpw@cluster0.example.net/db", "m0ng0%2Fpw"),
    ):
        masked = redact(f"connecting to {url} failed", [])
        assert password not in masked and "[REDACTED:url-password]@" in masked, masked


def test_the_password_of_a_url_in_any_variable_is_a_known_secret_in_every_form() -> None:
    secrets = secret_values({"DATABASE_URL": DATABASE_URL, "HOME": "/home/someone"})
    assert DB_PASSWORD in secrets and urllib.parse.quote(DB_PASSWORD, safe="") in secrets
    redactor = Redactor(secrets)
    for leak in (
        DB_PASSWORD,
        urllib.parse.quote(DB_PASSWORD, safe=""),
        base64.b64encode(DB_PASSWORD.encode()).decode(),
        DB_PASSWORD[::-1],
    ):
        masked = redactor(f"E   AssertionError: got {leak!s} from the settings")
        assert leak not in masked and MARKER in masked, leak


def test_a_url_password_that_is_also_its_user_or_host_is_not_a_known_secret() -> None:
    environ = {"DATABASE_URL": "postgres://postgres:postgres@localhost/postgres"}
    assert secret_values(environ) == []
    text = "import postgres_driver; engine = 'postgres'"
    assert Redactor(secret_values(environ))(text) == text
