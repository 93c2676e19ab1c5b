"""Secrets stay home: every text that goes to a model, a journal, a run file or the screen is
redacted first (``Redactor``).

The run's known secrets (``Redactor(secrets)``; 8 characters or more) come from three places:

1. the environment (``secret_values``): the values of variables whose names look secret
   (``names.is_secret_name``: ``*KEY*``, ``*TOKEN*``, ``*SECRET*``, ``*PASS*``, ``*PWD*`` but
   not the shell's ``PWD``, ``*CREDENTIAL*``, ``*_PAT``, ``*DSN*``, the providers' key
   variables), and the password of a URL in any variable's value;
2. the project's own files, read from the user's tree when the run starts (``project_secrets``):
   the values of its ``.env`` files (``envfiles``) and the string literals its code gives to
   secret-looking names (``literals``);
3. the key under ``api_key_env`` (the loop adds it).

Each is masked as ``[REDACTED]`` in every form text may carry it (``forms.encodings``: escaped,
percent-encoded, hex, base64, base32, reversed, rot13), wherever its letters and digits stand in
order with other characters between them (``forms.Squeezed``: split across lines, spaced or
colon-separated hex, one character at a time), and as a fragment where an output cap cut it.

Besides, text is masked by rules that need no known value:

- well-known formats (``known_formats.FORMATS``) as ``[REDACTED:<kind>]``: cloud access keys,
  forge and registry tokens, model-provider keys, JWTs, bearer and basic authorization values,
  passwords in URLs of any scheme, private key blocks. Patterns follow the prefixes the issuers
  document and the rules of Yelp's detect-secrets plugins and of gitleaks' default
  configuration;
- shapes (``heuristics``, with ``shapes``): a random-looking value after a secret-looking key
  (``[REDACTED:assigned-secret]``) and a long random base64 run (``[REDACTED:high-entropy]``,
  detect-secrets' 4.5 bits a character). Heuristics: word lists and entropy figures, documented
  where they are defined; hex strings (hashes, digests), UUIDs, names and paths are never taken
  bare, so the code and expected values the model must read stay readable.

Why our own rules and not detect-secrets (1.5, the well-kept Python scanner; its forks and the
newer redaction packages are young and single-maintainer): it brings ``requests`` and ``pyyaml``,
its API scans files and lines under a global settings context (``transient_settings``) and reports
findings rather than rewriting text, and its default high-entropy detectors take any hex or base64
string over their limits, which would blank hashes and identifiers in the code shown to the model.
Its figures (the 4.5 and 3.0 limits) and its keyword list are what ours start from.

Stdlib only; nothing happens at import time but compiling regexes.
"""

from repairloop.redact.known_formats import FORMATS, mask_formats
from repairloop.redact.names import MIN_SECRET_CHARS, is_secret_name, secret_values
from repairloop.redact.project_secrets import project_secrets
from repairloop.redact.redactor import (
    MARKER,
    Redactor,
    redact,
    redact_context,
    redact_feedback,
    redact_record,
)

__all__ = [
    "FORMATS",
    "MARKER",
    "MIN_SECRET_CHARS",
    "Redactor",
    "encodings",
    "is_secret_name",
    "mask_formats",
    "project_secrets",
    "redact",
    "redact_context",
    "redact_feedback",
    "redact_record",
    "secret_values",
]
