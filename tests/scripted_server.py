"""A scripted OpenAI-compatible chat-completions server for offline tests (stdlib only).

STYLE.md habit 2: drive the real proposer, through the real litellm, against a
real HTTP server on 127.0.0.1 (port 0) that answers what the test scripts.

Script items are consumed one per request; when the script is exhausted the
last item repeats. An item is a tuple, or a callable ``(body) -> item`` for
answers that depend on the request:

* ``("ok", content[, finish_reason[, usage[, message_fields]]])`` -- a normal answer; usage
  defaults to ``prompt_tokens = characters of the messages // 4`` and
  ``completion_tokens = len(content) // 4`` so tests can assert budgets;
  ``message_fields`` are added to the message (``{"reasoning_content": ...}``);
* ``("status", code, message[, headers[, error_fields]])`` -- an OpenAI-style error body,
  ``error_fields`` added to its ``error`` object (``{"param": "temperature"}``);
* ``("hang", seconds)`` -- sleep (capped, ended early by ``close()``), then answer "late";
* ``("garbage",)`` -- 200 with a malformed JSON body;
* ``("empty",)`` -- a normal answer whose content is "";
* ``("html",)`` -- 200 with a text/html body (a proxy's error page);
* ``("close",)`` -- drop the connection without answering.

Usage::

    with ScriptedServer([("status", 429, "slow down", {"Retry-After": "1"}), ("ok", "diff")]) as
    srv:
        litellm.completion(model="openai/scripted", api_base=srv.base_url, api_key="k", ...)
        assert len(srv.requests) == 2

Also runnable by hand: ``python tests/scripted_server.py --port 0 --answer-file F``
serves the file's text as every answer and prints the base URL.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, Union

Item = Tuple[Any, ...]
ScriptEntry = Union[Item, Callable[[Dict[str, Any]], Item]]

MAX_HANG = 60.0  # seconds: a forgotten hang must never keep a test run alive
PATHS = ("/v1/chat/completions", "/chat/completions")


def _prompt_chars(body: Dict[str, Any]) -> int:
    """Characters of every message's content: the basis of the fake prompt_tokens."""
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        total += len(content) if isinstance(content, str) else len(json.dumps(content))
    return total


def completion_body(
    body: Dict[str, Any],
    content: str,
    finish_reason: str = "stop",
    usage: Optional[Dict[str, int]] = None,
    message_fields: Optional[Dict[str, Any]] = None,
) -> Dict[str, Any]:
    """An OpenAI chat.completion JSON document answering ``body`` with ``content``."""
    if usage is None:
        prompt, completion = _prompt_chars(body) // 4, len(content) // 4
        usage = {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        }
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "scripted"),
        "choices": [
            {
                "index": 0,
                "finish_reason": finish_reason,
                "message": {"role": "assistant", "content": content, **(message_fields or {})},
            }
        ],
        "usage": usage,
    }


class ScriptedServer:
    """Serve ``script`` on 127.0.0.1, port 0, in daemon threads; a context manager.

    ``base_url`` is ``http://127.0.0.1:PORT/v1``; ``requests`` holds every parsed
    request body in arrival order, ``headers`` each request's HTTP headers
    (names lower-cased) in the same order. ``close()`` (or leaving the ``with``) stops it.
    """

    def __init__(self, script: Sequence[ScriptEntry], port: int = 0) -> None:
        if not script:
            raise ValueError("a script needs at least one item")
        self._script: List[ScriptEntry] = list(script)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.requests: List[Dict[str, Any]] = []
        self.headers: List[Dict[str, str]] = []
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _make_handler(self))
        self._httpd.daemon_threads = True
        self.port: int = self._httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, daemon=True, kwargs={"poll_interval": 0.05}
        )
        self._thread.start()

    def next_item(self, body: Dict[str, Any], headers: Optional[Dict[str, str]] = None) -> Item:
        """Record ``body`` (and ``headers``) and return the script item that answers it."""
        with self._lock:
            self.requests.append(body)
            self.headers.append({k.lower(): v for k, v in (headers or {}).items()})
            entry = self._script.pop(0) if len(self._script) > 1 else self._script[0]
        return entry(body) if callable(entry) else entry

    def wait(self, seconds: float) -> None:
        """Sleep up to ``seconds`` (capped at MAX_HANG); return early when closed."""
        self._stop.wait(min(seconds, MAX_HANG))

    def close(self) -> None:
        """Stop serving and release the port; idempotent."""
        if self._stop.is_set():
            return
        self._stop.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> "ScriptedServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _make_handler(server: ScriptedServer) -> type:
    """A handler class bound to ``server`` (http.server instantiates it per request)."""
    return type("BoundHandler", (_Handler,), {"scripted": server})


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    scripted: ScriptedServer  # set by _make_handler

    def log_message(self, format: str, *args: Any) -> None:
        pass  # tests must see no server chatter

    def handle(self) -> None:
        try:
            super().handle()
        except OSError:  # broken pipe, reset, socket timeout
            pass  # the client gave up (its timeout): not an error of the server

    def _send(
        self,
        code: int,
        payload: Union[bytes, Dict[str, Any]],
        ctype: str = "application/json",
        headers: Optional[Dict[str, str]] = None,
    ) -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, str(value))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.rstrip("/") not in PATHS:
            self._send(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
            return
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        self._answer(self.scripted.next_item(body, dict(self.headers.items())), body)

    def _answer(self, item: Item, body: Dict[str, Any]) -> None:
        kind = item[0]
        if kind == "ok":
            finish = item[2] if len(item) > 2 else "stop"
            usage = item[3] if len(item) > 3 else None
            fields = item[4] if len(item) > 4 else None
            self._send(200, completion_body(body, item[1], finish, usage, fields))
        elif kind == "empty":
            self._send(200, completion_body(body, ""))
        elif kind == "status":
            error = {
                "error": {
                    "message": item[2],
                    "type": "scripted_error",
                    "code": None,
                    **(item[4] if len(item) > 4 else {}),
                }
            }
            self._send(item[1], error, headers=item[3] if len(item) > 3 else None)
        elif kind == "hang":
            self.scripted.wait(float(item[1]))
            self._send(200, completion_body(body, "late answer"))
        elif kind == "garbage":
            self._send(200, b'{"id": "x", "choices": [ {not json')
        elif kind == "html":
            self._send(200, b"<html><body>502 proxy error</body></html>", ctype="text/html")
        elif kind == "close":
            self.close_connection = True
            self.connection.shutdown(socket.SHUT_RDWR)
        else:
            self._send(500, {"error": {"message": f"bad script item {item!r}"}})


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Serve one fixed answer until interrupted (for trying the proposer by hand)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (0: a free one)")
    parser.add_argument(
        "--answer-file", type=Path, required=True, help="text served as every answer"
    )
    args = parser.parse_args(argv)
    answer = args.answer_file.read_text(encoding="utf-8")
    with ScriptedServer([("ok", answer)], port=args.port) as srv:
        print(srv.base_url, flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
