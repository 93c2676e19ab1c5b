"""What a failure was: exception type, message, frames, causes, endpoint (part of the pytest
plugin).

Runs in the project's own pytest process with the plugin (see
``repairloop_pytest_plugin``): standard library only, Python 3.8+.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from typing import Any, Dict, List, Optional

from repairloop_pytest_plugin_doctest import describe_doctest

LONGREPR_TAIL = 4000  # characters of pytest's failure text kept per record
MESSAGE_LIMIT = 2000  # characters of an exception message
FRAME_LIMIT = 60  # frames kept per exception (outermost 10, innermost 50)
# "E   SomeError: message"; the suffix keeps "E   Expected: 3" from reading as a type.
_E_LINE = re.compile(
    r"^E\s+([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt|Failed|Failure|Timeout)):"
    r"\s?(.*)$"
)


def _internal_dirs() -> List[str]:
    """pytest's and pluggy's own directories: their frames are machinery, not the project."""
    dirs = []
    for name in ("_pytest", "pluggy", "importlib"):
        module = sys.modules.get(name)
        path = getattr(module, "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return dirs


def _frames(tb: Any) -> List[List[Any]]:
    """``[path, line, function]`` for each traceback entry outside pytest's machinery."""
    internal = _internal_dirs()
    frames: List[List[Any]] = []
    for frame, lineno in traceback.walk_tb(tb):
        path = frame.f_code.co_filename
        if path.startswith("<frozen importlib"):
            continue  # import machinery; a frozen stdlib module such as "<frozen os>" is kept
        if not path.startswith("<"):
            path = os.path.abspath(path)
            if any(path.startswith(prefix) for prefix in internal):
                continue
        frames.append([path, lineno, frame.f_code.co_name])
    if len(frames) > FRAME_LIMIT:
        frames = frames[:10] + frames[-(FRAME_LIMIT - 10) :]
    return frames


def capped(value: Any, limit: int) -> str:
    """``str(value)`` capped at ``limit`` characters; never raises."""
    try:
        text = str(value)
    except Exception as error:  # a broken __str__ must not break the run
        text = f"<unprintable {type(value).__name__}: {type(error).__name__}>"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _chain(exc: BaseException) -> List[BaseException]:
    """``exc`` and the exceptions it was raised from or while handling, outermost first (at most
    8)."""
    chain: List[BaseException] = []
    current: Any = exc
    while current is not None and len(chain) < 8 and all(current is not seen for seen in chain):
        chain.append(current)
        current = current.__cause__ or (
            None if current.__suppress_context__ else current.__context__
        )
    return chain


def _endpoint(chain: List[BaseException]) -> str:
    """``host:port`` a failed connection tried, from the locals of the frames that tried it ("" if
    unknown).

    Only for a chain with an OSError (refused, reset, name resolution,
    unreachable): the message of ``socket.connect`` names no address.
    """
    if not any(isinstance(e, OSError) for e in chain):
        return ""
    for exc in reversed(chain):  # the innermost exception is nearest the socket
        frames = [frame for frame, _ in traceback.walk_tb(exc.__traceback__)]
        for frame in reversed(frames):
            found = _address_in(frame.f_locals)
            if found:
                return found
    return ""


def _address_in(names: Dict[str, Any]) -> str:
    for key in ("address", "sa", "socket_address", "addr", "sockaddr"):
        value = names.get(key)
        if (
            isinstance(value, tuple)
            and len(value) >= 2
            and isinstance(value[0], str)
            and isinstance(value[1], int)
        ):
            return f"{value[0]}:{value[1]}"
    host = names.get("host") or names.get("hostname")
    port = names.get("port")
    if isinstance(host, str) and host and isinstance(port, int):
        return f"{host}:{port}"
    return ""


def describe(exc: BaseException) -> Dict[str, Any]:
    """exc_type, message and frames of one exception (the cause, for collection errors).

    ``causes`` names the exceptions it was raised from (``__cause__``, else
    ``__context__``), outermost first; ``endpoint`` is the address a failed
    connection tried, when the frames hold it. A failed doctest is its example, what it expected and
    what it got, at the example's line (``repairloop_pytest_plugin_doctest``).
    """
    doctest_failure: Optional[Dict[str, Any]] = describe_doctest(exc, _frames)
    if doctest_failure is not None:
        return doctest_failure
    cause = exc.__cause__
    if type(exc).__name__ == "CollectError" and cause is not None:
        exc = cause  # pytest wraps import and syntax errors of test modules
    frames = _frames(exc.__traceback__)
    if isinstance(exc, SyntaxError) and exc.filename:
        # The broken file never appears as a frame: it failed to compile.
        frames.append([os.path.abspath(exc.filename), exc.lineno or 0, ""])
    chain = _chain(exc)
    summary: Dict[str, Any] = {
        "exc_type": type(exc).__name__,
        "exc_module": type(exc).__module__,
        "message": capped(exc, MESSAGE_LIMIT),
        "frames": frames,
        "causes": [f"{type(e).__module__}.{type(e).__name__}: {capped(e, 300)}" for e in chain[1:]],
    }
    try:
        summary["endpoint"] = _endpoint(chain)
    except Exception:  # locals of odd frames must not break the recording
        pass
    return summary


def from_longrepr(report: Any) -> Dict[str, Any]:
    """exc_type and message from the last ``E   Type: message`` line, when no exception was seen."""
    longrepr = report.longrepr
    errorstring = getattr(longrepr, "errorstring", None)  # FixtureLookupErrorRepr
    if errorstring:
        filename = getattr(longrepr, "filename", None)
        frames = []
        if filename:  # the test that asked for the fixture (firstlineno is 0-based)
            frames.append([os.path.abspath(str(filename)), longrepr.firstlineno + 1, ""])
        message = capped(errorstring, MESSAGE_LIMIT).split("\n")[0]
        return {"exc_type": "FixtureLookupError", "message": message, "frames": frames}
    for line in reversed(capped(longrepr, 10 * LONGREPR_TAIL).splitlines()):
        match = _E_LINE.match(line)
        if match:
            exc_type = match.group(1).split(".")[-1]
            return {"exc_type": exc_type, "message": match.group(2), "frames": []}
    return {}
