"""Import names to PyPI distributions, and whether a module is installed for an interpreter."""

from __future__ import annotations

import functools
import importlib.util
import json
from dataclasses import dataclass
from typing import Optional

from repairloop.types import InterpreterQuery

# Import name -> PyPI distribution, where they differ (or where the casing is
# the usual stumbling block). Sources: each project's PyPI page, and the
# common "pip install <import name>" confusions.
_DISTRIBUTIONS = {
    "yaml": "PyYAML",
    "cv2": "opencv-python",
    "sklearn": "scikit-learn",
    "PIL": "Pillow",
    "bs4": "beautifulsoup4",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "magic": "python-magic",
    "serial": "pyserial",
    "usb": "pyusb",
    "git": "GitPython",
    "OpenSSL": "pyOpenSSL",
    "Crypto": "pycryptodome",
    "Cryptodome": "pycryptodomex",
    "attr": "attrs",
    "google.protobuf": "protobuf",
    "skimage": "scikit-image",
    "fitz": "PyMuPDF",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "telegram": "python-telegram-bot",
    "MySQLdb": "mysqlclient",
    "psycopg2": "psycopg2-binary",
    "Levenshtein": "python-Levenshtein",
    "zmq": "pyzmq",
    "win32api": "pywin32",
    "win32con": "pywin32",
    "gi": "PyGObject",
    "wx": "wxPython",
    "Bio": "biopython",
    "multipart": "python-multipart",
    "jose": "python-jose",
    "slugify": "python-slugify",
    "ldap": "python-ldap",
    "socks": "PySocks",
    "nacl": "PyNaCl",
    "snappy": "python-snappy",
    "kafka": "kafka-python",
    "markdown": "Markdown",
    "jinja2": "Jinja2",
    "pkg_resources": "setuptools",
    "sentry_sdk": "sentry-sdk",
    "google.cloud.storage": "google-cloud-storage",
    "googleapiclient": "google-api-python-client",
    "tomli_w": "tomli-w",
    "faiss": "faiss-cpu",
    "umap": "umap-learn",
    "Xlib": "python-xlib",
}


def distribution_for(module: str) -> str:
    """The PyPI distribution that provides import name ``module`` ("cv2" -> "opencv-python").

    A dotted name matches its longest known prefix ("google.protobuf.message"
    -> "protobuf"); an unknown name maps to its top-level module name.
    """
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        dist = _DISTRIBUTIONS.get(".".join(parts[:end]))
        if dist:
            return dist
    return parts[0]


@dataclass(frozen=True)
class ModuleInfo:
    """Whether a module is importable, and the distribution (and version) that provides it."""

    found: bool
    dist: Optional[str] = None
    version: Optional[str] = None


# Runs in the project's interpreter. The current directory is dropped from
# sys.path so that the project's own modules do not count as installed.
_PROBE = """
import json, sys
sys.path = [p for p in sys.path if p not in ("", ".")]
import importlib.util
mod, dist, version = sys.argv[1], sys.argv[2], None
try:
    found = importlib.util.find_spec(mod) is not None
except Exception:
    found = False
try:
    import importlib.metadata as md
    try:
        dist = (md.packages_distributions().get(mod.split(".")[0]) or [dist])[0]
    except AttributeError:  # Python < 3.10
        pass
    version = md.version(dist)
except Exception:
    pass
print(json.dumps({"found": found, "dist": dist, "version": version}))
"""


def _probe_here(module: str) -> ModuleInfo:
    dist = distribution_for(module)
    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    try:
        import importlib.metadata as md

        return ModuleInfo(found, dist, md.version(dist))
    except Exception:
        return ModuleInfo(found, dist, None)


@functools.lru_cache(maxsize=256)
def probe_module(module: str, interpreter: Optional[InterpreterQuery] = None) -> ModuleInfo:
    """Is top-level ``module`` importable by the project's interpreter (None: this process)?

    ``interpreter`` runs a short query confined like a test run (at most 60 seconds); results
    are cached per (module, interpreter). Never raises: a probe that fails reports "not found".
    """
    if interpreter is None:
        return _probe_here(module)
    dist_guess = distribution_for(module)
    out = interpreter(["-c", _PROBE, module, dist_guess], 60.0)
    try:
        data = json.loads((out or "").strip().splitlines()[-1])
        return ModuleInfo(bool(data["found"]), data.get("dist"), data.get("version"))
    except (ValueError, IndexError, KeyError, TypeError, AttributeError):
        return ModuleInfo(False, dist_guess, None)
