"""Secrets stay home: values of secret-looking environment variables and well-known credential
formats are replaced by a marker before text goes to a model or a journal.

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

Modules: ``names`` (which variables are secret), ``known_formats`` (the format table),
``forms`` (the encodings of a known value), ``redactor`` (``Redactor`` and the record walkers).
"""

from repairloop.redact.forms import encodings
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
