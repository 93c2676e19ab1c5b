"""A known secret is masked in the forms a leak gives it: reversed, rot13, base32, split across
lines, spaced or colon-separated hex, one character at a time; and ordinary text is left alone."""

from __future__ import annotations

import base64
import codecs
import textwrap
from typing import Callable, Dict

import pytest

from repairloop.redact import MARKER, Redactor

SECRET = "Zq8-pL2m!Vx7RkT4wN"  # letters of both cases, digits and punctuation


def _lines(value: str) -> str:
    return "\n".join(textwrap.wrap(value, 5))


LEAKS: Dict[str, Callable[[str], str]] = {
    "reversed": lambda v: v[::-1],
    "rot13": lambda v: codecs.encode(v, "rot13"),
    "base32": lambda v: base64.b32encode(v.encode()).decode(),
    "base32 lower": lambda v: base64.b32encode(v.encode()).decode().lower(),
    "base32 inside a blob": lambda v: base64.b32encode(b"user=" + v.encode() + b";").decode(),
    "base64 at an odd offset": lambda v: base64.b64encode(b"ab" + v.encode()).decode(),
    "split across lines": _lines,
    "split across pytest's E lines": lambda v: _lines(v).replace("\n", "\nE       "),
    "split across a repr's escaped line breaks": lambda v: repr(_lines(v)),
    "spaced hex": lambda v: " ".join(f"{b:02x}" for b in v.encode()),
    "colon hex": lambda v: ":".join(f"{b:02X}" for b in v.encode()),
    "one character at a time": lambda v: " ".join(v),
    "a list of its characters": lambda v: str(list(v)),
    "joined by dashes": lambda v: "-".join(v),
    "joined by commas": lambda v: ",".join(v),
    "halves joined by a plus": lambda v: v[:9] + " + " + v[9:],
    "upper case": lambda v: v.upper(),  # a trial: a value shown by .upper() leaked
    "lower case": lambda v: v.lower(),
}


@pytest.mark.parametrize("form", sorted(LEAKS))
def test_each_derived_form_of_a_known_secret_is_masked(form: str) -> None:
    leak = LEAKS[form](SECRET)
    masked = Redactor([SECRET])(f"E   RuntimeError: leak {leak} end")
    assert MARKER in masked
    assert leak not in masked
    assert masked.endswith(" end") and masked.startswith("E   RuntimeError: leak ")


def test_escapes_other_encoders_write_are_masked() -> None:
    secret = "p/ss&w0rd<Zq8>"
    redactor = Redactor([secret])
    for leak in ("p%2fss%26w0rd%3cZq8%3e", "p%2Fss%26w0rd%3CZq8%3E", "p/ss&amp;w0rd&lt;Zq8&gt;"):
        assert redactor(f"[{leak}]") == f"[{MARKER}]", leak


def test_a_spread_secret_takes_only_its_own_span() -> None:
    text = "before 5 6 7\n" + " ".join(SECRET) + "\nafter 1 2 3"
    assert Redactor([SECRET])(text) == f"before 5 6 7\n{MARKER}\nafter 1 2 3"


@pytest.mark.parametrize(
    "secret, text",
    [
        ("12345678", "pages 1, 2, 3, 4, 5, 6, 7, 8 and 9"),  # one kind of character: too common
        ("aaaabbbb", "a-a-a-a-b-b-b-b"),  # too few different characters
    ],
)
def test_simple_values_are_not_looked_for_spread_out(secret: str, text: str) -> None:
    assert Redactor([secret])(text) == text


def test_code_and_output_around_a_known_secret_stay_as_they_are() -> None:
    text = (
        "def last_n(items, n):\n    return items[-n:]\n"
        "E   assert [2, 3, 4] == [3, 4]\n"
        "sha 3f786850e387550fdab836ed7e6dc881de23001b uuid 123e4567-e89b-12d3-a456-426614174000\n"
    )
    assert Redactor([SECRET, "hunter2-Extra9"])(text) == text


def test_a_secret_encoded_alone_goes_whole_padding_and_all() -> None:
    redactor = Redactor([SECRET])
    for encode in (base64.b64encode, base64.b32encode):
        alone = encode(SECRET.encode()).decode()
        assert redactor(f"({alone})") == f"({MARKER})", alone


def test_the_variable_that_names_the_key_variable_is_no_secret() -> None:
    """``REPAIRLOOP_API_KEY_ENV=STUB_KEY`` names where the key is; masking ``STUB_KEY`` made the
    console say "environment without REPAIRLOOP_API_KEY_ENV, [REDACTED]" (a trial)."""
    from repairloop.redact import is_secret_name

    assert not is_secret_name("REPAIRLOOP_API_KEY_ENV") and is_secret_name("STUB_KEY")
