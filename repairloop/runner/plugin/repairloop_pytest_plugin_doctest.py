"""What a failed doctest says (part of the pytest plugin: standard library only, Python 3.8+).

pytest's doctest items fail with ``doctest.DocTestFailure`` (the output
differs), ``doctest.UnexpectedException`` (an example raised) or, with
``--doctest-continue-on-failure``, pytest's ``MultipleDoctestFailures`` holding
several. Their ``str()`` is a bare ``<DocTest pkg.f from pkg/m.py:4 (2
examples)>`` and their traceback holds only pytest's and doctest's machinery,
so a report built from them names no line of the project. ``describe_doctest``
gives the failing example, what it expected and what it got (or the exception it
raised), and a frame at the example's line in the module or text file, so the
failure points at the code whose docstring holds it.
"""

from __future__ import annotations

import os
import traceback
from typing import Any, Dict, List, Optional

EXAMPLE_LIMIT = 600  # characters of an example's source, expected or got text
DOCTEST_ATTR = "repairloop_doctest"  # "module" or "text" on the reports of a doctest item


def doctest_kind(item: Any) -> str:
    """``module`` for a doctest collected from a Python module's docstrings, ``text`` for one from a
    text file (``--doctest-glob``), "" for any other test item."""
    if type(item).__name__ != "DoctestItem":
        return ""
    return "module" if type(getattr(item, "parent", None)).__name__ == "DoctestModule" else "text"


def _first_failure(exc: BaseException) -> Optional[Any]:
    failures = getattr(exc, "failures", None)  # pytest's MultipleDoctestFailures
    if isinstance(failures, (list, tuple)) and failures:
        return failures[0]
    if (
        hasattr(exc, "test")
        and hasattr(exc, "example")
        and (hasattr(exc, "got") or hasattr(exc, "exc_info"))
    ):
        return exc
    return None


def _cut(text: str) -> str:
    text = text.rstrip("\n")
    return text if len(text) <= EXAMPLE_LIMIT else text[: EXAMPLE_LIMIT - 3] + "..."


def _indented(text: str) -> str:
    return "\n".join("    " + line for line in _cut(text).splitlines()) or "    (nothing)"


def describe_doctest(exc: BaseException, frames_of: Any) -> Optional[Dict[str, Any]]:
    """``{exc_type, exc_module, message, frames}`` for a failed doctest, None for any other
    exception.

    ``frames_of(traceback)`` is the recorder's frame list builder. The message
    reads like doctest's own report (``Failed example:``, ``Expected:``,
    ``Got:``); an example that raised is described by that exception (its type
    becomes the record's ``exc_type``, its frames follow the example's).
    """
    failure = _first_failure(exc)
    if failure is None:
        return None
    test, example = failure.test, failure.example
    frames: List[List[Any]] = []
    if test.filename and test.lineno is not None:
        # DocTest.lineno and Example.lineno are 0-based: the docstring's first line, the example
        # within it.
        name = test.name.rsplit(".", 1)[-1]
        frames.append([os.path.abspath(test.filename), test.lineno + example.lineno + 1, name])
    lines = ["Failed example:", _indented(example.source)]
    exc_info = getattr(failure, "exc_info", None)
    if exc_info:
        raised = exc_info[1]
        lines += [
            "Exception raised:",
            _indented("".join(traceback.format_exception_only(exc_info[0], raised))),
        ]
        frames += frames_of(exc_info[2])
        return {
            "exc_type": exc_info[0].__name__,
            "exc_module": exc_info[0].__module__,
            "message": "\n".join(lines),
            "frames": frames,
        }
    lines += ["Expected:", _indented(example.want), "Got:", _indented(getattr(failure, "got", ""))]
    return {
        "exc_type": "DocTestFailure",
        "exc_module": "doctest",
        "message": "\n".join(lines),
        "frames": frames,
    }
