"""A tiny forge on 127.0.0.1 (port 0): the few GitHub and GitLab endpoints repairloop uses.

GitHub (REST 2022-11-28): ``GET /repos/{owner}/{name}/pulls?head=owner:branch&state=open``,
``POST /repos/{owner}/{name}/pulls`` (422 when an open one exists for the head,
like GitHub), ``PATCH /repos/{owner}/{name}/pulls/{number}``. GitLab v4:
``GET|POST /api/v4/projects/{id}/merge_requests`` (409 on a duplicate source
branch) and ``PUT /api/v4/projects/{id}/merge_requests/{iid}``.

Faults for idempotency tests: ``hang_after_create=N`` stores the next N
created pull requests and then holds the connection without answering (until
``close()``, at most ``MAX_HANG`` seconds); ``stale_lists=N`` answers the next
N list requests with an empty list (a replica that has not caught up);
``fail_creates=N`` answers the next N create requests with 502 without creating.
Every request is recorded in ``requests`` as (method, path).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

MAX_HANG = 30.0  # seconds: a forgotten hang never keeps a test run alive
HUNG: Dict[str, Any] = {}  # _create's answer when it hung up without answering


class FakeForge:
    """The server and its state; a context manager. ``pulls`` holds every pull request ever
    created."""

    def __init__(
        self,
        repository: str = "acme/widgets",
        token: str = "t0ken",
        *,
        hang_after_create: int = 0,
        stale_lists: int = 0,
        fail_creates: int = 0,
    ) -> None:
        self.repository = repository
        self.token = token
        self.hang_after_create = hang_after_create
        self.stale_lists = stale_lists
        self.fail_creates = fail_creates
        self.pulls: List[Dict[str, Any]] = []
        self.requests: List[Tuple[str, str]] = []
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def open_pulls(self, head: Optional[str] = None) -> List[Dict[str, Any]]:
        return [
            p
            for p in self.pulls
            if p["state"] == "open" and (head is None or p["head"]["ref"] == head)
        ]

    def add_pull(self, head: str, base: str, title: str, body: str) -> Dict[str, Any]:
        number = len(self.pulls) + 1
        pull = {
            "number": number,
            "iid": number,
            "state": "open",
            "title": title,
            "body": body,
            "description": body,
            "head": {"ref": head},
            "base": {"ref": base},
            "source_branch": head,
            "target_branch": base,
            "html_url": f"https://github.example/{self.repository}/pull/{number}",
            "web_url": f"https://gitlab.example/{self.repository}/-/merge_requests/{number}",
        }
        self.pulls.append(pull)
        return pull

    def close(self) -> None:
        self.stopping.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> "FakeForge":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(forge: FakeForge) -> type:
    class Handler(_Handler):
        pass

    Handler.forge = forge  # type: ignore[attr-defined]
    return Handler


class _Handler(BaseHTTPRequestHandler):
    forge: FakeForge

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, code: int, payload: Any) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self) -> Dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def _authorised(self) -> bool:
        token = self.forge.token
        if (
            self.headers.get("Authorization") == f"Bearer {token}"
            or self.headers.get("PRIVATE-TOKEN") == token
        ):
            return True
        self._send(401, {"message": "Bad credentials"})
        return False

    def _route(self, method: str) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        with self.forge.lock:
            self.forge.requests.append((method, self.path))
        if not self._authorised():
            return
        if method == "POST" and self.forge.fail_creates > 0:
            with self.forge.lock:
                self.forge.fail_creates -= 1
            self._send(502, {"message": "Bad Gateway"})
            return
        parts = url.path.strip("/").split("/")
        if parts[:1] == ["repos"] and len(parts) >= 4 and parts[3] == "pulls":
            self._github(method, parts[4:], query)
        elif (
            parts[:3] == ["api", "v4", "projects"]
            and len(parts) >= 5
            and parts[4] == "merge_requests"
        ):
            self._gitlab(method, parts[5:], query)
        else:
            self._send(404, {"message": "Not Found"})

    def _list(self, head: Optional[str]) -> List[Dict[str, Any]]:
        with self.forge.lock:
            if self.forge.stale_lists > 0:
                self.forge.stale_lists -= 1
                return []
            return self.forge.open_pulls(head)

    def _create(self, head: str, base: str, title: str, body: str) -> Optional[Dict[str, Any]]:
        """The new pull request, or None when one is open for ``head``; may hang after storing
        it."""
        with self.forge.lock:
            if self.forge.open_pulls(head):
                return None
            pull = self.forge.add_pull(head, base, title, body)
            hang = self.forge.hang_after_create > 0
            self.forge.hang_after_create -= 1 if hang else 0
        if hang:  # created, but the answer never comes: the client must look before retrying
            self.forge.stopping.wait(MAX_HANG)
            self.close_connection = True
            return HUNG
        return pull

    def _github(self, method: str, rest: List[str], query: Dict[str, str]) -> None:
        if method == "GET" and not rest:
            head = query.get("head", "").split(":", 1)[-1] or None
            self._send(200, self._list(head))
        elif method == "POST" and not rest:
            body = self._body()
            pull = self._create(body["head"], body["base"], body["title"], body.get("body", ""))
            if pull is HUNG:
                return
            if pull is None:
                self._send(
                    422,
                    {
                        "message": "Validation Failed",
                        "errors": [
                            {
                                "resource": "PullRequest",
                                "code": "custom",
                                "message": f"A pull request already exists for "
                                f"{self.forge.repository.split('/')[0]}:{body['head']}.",
                            }
                        ],
                    },
                )
            else:
                self._send(201, pull)
        elif method == "PATCH" and len(rest) == 1:
            self._update(int(rest[0]), self._body(), "body")
        else:
            self._send(404, {"message": "Not Found"})

    def _gitlab(self, method: str, rest: List[str], query: Dict[str, str]) -> None:
        if method == "GET" and not rest:
            self._send(200, self._list(query.get("source_branch")))
        elif method == "POST" and not rest:
            body = self._body()
            pull = self._create(
                body["source_branch"],
                body["target_branch"],
                body["title"],
                body.get("description", ""),
            )
            if pull is HUNG:
                return
            if pull is None:
                self._send(
                    409,
                    {
                        "message": [
                            "Another open merge request already exists for this source branch"
                        ]
                    },
                )
            else:
                self._send(201, pull)
        elif method == "PUT" and len(rest) == 1:
            self._update(int(rest[0]), self._body(), "description")
        else:
            self._send(404, {"message": "Not Found"})

    def _update(self, number: int, body: Dict[str, Any], text_key: str) -> None:
        with self.forge.lock:
            found = [p for p in self.forge.pulls if p["number"] == number]
            if not found:
                self._send(404, {"message": "Not Found"})
                return
            found[0]["title"] = body.get("title", found[0]["title"])
            if text_key in body:
                found[0]["body"] = found[0]["description"] = body[text_key]
            self._send(200, found[0])

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    def do_PATCH(self) -> None:
        self._route("PATCH")

    def do_PUT(self) -> None:
        self._route("PUT")
