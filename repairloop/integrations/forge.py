"""Pull requests through the forges' REST APIs (GitHub; GitLab merge requests), idempotently.

Standard library only (``urllib.request``): no client library for three calls.
GitHub: ``GET /repos/{repo}/pulls?head=owner:branch&state=open``, ``POST
/repos/{repo}/pulls``, ``PATCH /repos/{repo}/pulls/{n}`` (REST API version
2022-11-28). GitLab: ``GET /projects/{id}/merge_requests?source_branch=…&state=opened``,
``POST`` and ``PUT /projects/{id}/merge_requests/{iid}``.

Creating is the one call that must not be repeated blindly: after a timeout,
a dropped connection or a 5xx the request may have landed, so
:func:`ensure_pull_request` looks for an open pull request on the head branch
before it tries again (DESIGN.md, "Workspace and side effects"), and journals
the intent before and the outcome after.
"""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple, Union

from repairloop.errors import RepairloopError
from repairloop.journal import DoneEvent, IntentEvent, NoteEvent

KEY_MARKER = "<!-- repairloop-key: {key} -->"
CREATE_ATTEMPTS = 3
READ_ATTEMPTS = 3
PAUSE = (
    1.0  # seconds before the n-th retry of a read: n * PAUSE (a transient 5xx or timeout gets room)
)

Note = Callable[[Union[IntentEvent, NoteEvent, DoneEvent]], None]  # the journal's ``record``


class ForgeError(RepairloopError):
    """The forge refused or never answered: bad token, missing permission, unknown repository (exit
    2)."""


class UnknownOutcome(Exception):
    """No usable answer (timeout, dropped connection, 5xx): the request may or may not have
    landed."""


@dataclass(frozen=True)
class PullRequest:
    """An open pull (merge) request; ``operation`` is created, updated or unchanged."""

    number: int
    url: str
    head: str
    base: str
    title: str
    body: str
    operation: str = "unchanged"


def _request(
    method: str,
    url: str,
    headers: Dict[str, str],
    payload: Optional[Dict[str, Any]],
    timeout: float,
) -> Tuple[int, Any]:
    """One HTTP exchange: (status, parsed JSON). Raises UnknownOutcome, or ForgeError for 4xx."""
    data = json.dumps(payload).encode("utf-8") if payload is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as answer:
            return answer.status, json.loads(answer.read().decode("utf-8") or "null")
    except urllib.error.HTTPError as exc:
        text = exc.read().decode("utf-8", "replace")[:500]
        if exc.code >= 500 or exc.code == 429:
            raise UnknownOutcome(f"{method} {url}: HTTP {exc.code}") from exc
        return exc.code, _parse(text)
    except (
        urllib.error.URLError,
        socket.timeout,
        TimeoutError,
        ConnectionError,
        http.client.HTTPException,
        ValueError,
    ) as exc:
        raise UnknownOutcome(f"{method} {url}: {exc}") from exc


def _parse(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return {"message": text}


class _Api:
    """Shared plumbing: base URL, headers, timeouts, reads retried (they change nothing)."""

    def __init__(self, api_url: str, headers: Dict[str, str], timeout: float) -> None:
        self.api_url = api_url.rstrip("/")
        self.headers = {"User-Agent": "repairloop", **headers}
        self.timeout = timeout

    def call(
        self, method: str, path: str, payload: Optional[Dict[str, Any]] = None
    ) -> Tuple[int, Any]:
        return _request(method, self.api_url + path, self.headers, payload, self.timeout)

    def read(self, path: str) -> Any:
        last: Optional[UnknownOutcome] = None
        for attempt in range(READ_ATTEMPTS):
            time.sleep(attempt * PAUSE)
            try:
                status, data = self.call("GET", path)
            except UnknownOutcome as exc:
                last = exc
                continue
            self.check(status, data, "GET " + path)
            return data
        raise ForgeError(
            f"no answer from {self.api_url}: {last}", hint="check the API URL and the network"
        )

    def check(self, status: int, data: Any, what: str) -> None:
        if 200 <= status < 300:
            return
        message = data.get("message", data) if isinstance(data, dict) else data
        hint = {
            401: "the token is missing or invalid",
            403: "the token lacks permission (contents and "
            "pull-requests: write; on GitHub also allow Actions to create pull requests)",
            404: "check the repository name and that the token can see it",
        }.get(status, "see the message")
        raise ForgeError(f"{what} answered HTTP {status}: {message}", hint=hint)


class GitHub(_Api):
    """GitHub's pull requests for ``repository`` ("owner/name")."""

    def __init__(self, api_url: str, repository: str, token: str, timeout: float = 30.0) -> None:
        super().__init__(
            api_url,
            {
                "Authorization": f"Bearer {token}",
                "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28",
            },
            timeout,
        )
        self.repository = repository

    def _pr(self, data: Dict[str, Any], operation: str = "unchanged") -> PullRequest:
        return PullRequest(
            int(data["number"]),
            str(data.get("html_url") or data.get("url", "")),
            str(data["head"]["ref"]),
            str(data["base"]["ref"]),
            str(data.get("title") or ""),
            str(data.get("body") or ""),
            operation,
        )

    def find_open(self, head: str) -> Optional[PullRequest]:
        owner = self.repository.split("/")[0]
        query = urllib.parse.urlencode(
            {"head": f"{owner}:{head}", "state": "open", "per_page": "100"}
        )
        found = [
            p
            for p in self.read(f"/repos/{self.repository}/pulls?{query}")
            if p["head"]["ref"] == head
        ]
        return self._pr(found[0]) if found else None

    def create(self, head: str, base: str, title: str, body: str) -> Optional[PullRequest]:
        """The new pull request; None when GitHub says one already exists for ``head``."""
        status, data = self.call(
            "POST",
            f"/repos/{self.repository}/pulls",
            {"head": head, "base": base, "title": title, "body": body},
        )
        if status == 422 and "already exists" in json.dumps(data):
            return None
        self.check(status, data, "creating the pull request")
        return self._pr(data, "created")

    def update(self, pr: PullRequest, title: str, body: str) -> PullRequest:
        status, data = self.call(
            "PATCH", f"/repos/{self.repository}/pulls/{pr.number}", {"title": title, "body": body}
        )
        self.check(status, data, f"updating pull request #{pr.number}")
        return self._pr(data, "updated")


class GitLab(_Api):
    """GitLab's merge requests for project ``project`` (numeric id or "group/name")."""

    def __init__(self, api_url: str, project: str, token: str, timeout: float = 30.0) -> None:
        super().__init__(api_url, {"PRIVATE-TOKEN": token}, timeout)
        self.project = urllib.parse.quote(project, safe="")

    def _mr(self, data: Dict[str, Any], operation: str = "unchanged") -> PullRequest:
        return PullRequest(
            int(data["iid"]),
            str(data.get("web_url", "")),
            str(data["source_branch"]),
            str(data["target_branch"]),
            str(data.get("title") or ""),
            str(data.get("description") or ""),
            operation,
        )

    def find_open(self, head: str) -> Optional[PullRequest]:
        query = urllib.parse.urlencode({"source_branch": head, "state": "opened"})
        found = self.read(f"/projects/{self.project}/merge_requests?{query}")
        return self._mr(found[0]) if found else None

    def create(self, head: str, base: str, title: str, body: str) -> Optional[PullRequest]:
        status, data = self.call(
            "POST",
            f"/projects/{self.project}/merge_requests",
            {"source_branch": head, "target_branch": base, "title": title, "description": body},
        )
        if status == 409:  # "Another open merge request already exists for this source branch"
            return None
        self.check(status, data, "creating the merge request")
        return self._mr(data, "created")

    def update(self, pr: PullRequest, title: str, body: str) -> PullRequest:
        status, data = self.call(
            "PUT",
            f"/projects/{self.project}/merge_requests/{pr.number}",
            {"title": title, "description": body},
        )
        self.check(status, data, f"updating merge request !{pr.number}")
        return self._mr(data, "updated")


def body_with_key(body: str, key: str) -> str:
    """The body plus a hidden marker naming the idempotency key (repository@commit#fingerprint)."""
    return body.rstrip("\n") + "\n\n" + KEY_MARKER.format(key=key) + "\n"


def ensure_pull_request(
    forge: Any, *, head: str, base: str, title: str, body: str, key: str, note: Note
) -> PullRequest:
    """The one open pull request for ``head``: found, created, or updated; never a second one.

    An open one carrying ``key`` is left alone; one for an older key (same
    branch, an earlier failing commit) gets the new title and body. Creation is
    journalled (``note(IntentEvent|DoneEvent)``) and, after an unknown outcome,
    retried only once a look finds nothing. Raises ForgeError.
    """
    body = body_with_key(body, key)
    existing: Optional[PullRequest] = forge.find_open(head)
    if existing is not None:
        if KEY_MARKER.format(key=key) in existing.body:
            return existing
        updated: PullRequest = forge.update(existing, title, body)
        return updated
    note(IntentEvent(action="open_pr", key=key, head=head, base=base))
    for attempt in range(1, CREATE_ATTEMPTS + 1):
        time.sleep((attempt - 1) * PAUSE)
        try:
            created = forge.create(head, base, title, body)
        except UnknownOutcome as exc:
            note(NoteEvent(action="open_pr", key=key, attempt=attempt, unknown=str(exc)))
            created = None
        found: Optional[PullRequest] = created or forge.find_open(head)  # look before any retry
        if found is not None:
            note(DoneEvent(action="open_pr", key=key, number=found.number, url=found.url))
            return found
    raise ForgeError(
        f"could not open a pull request for {head} after {CREATE_ATTEMPTS} attempts",
        hint="the forge did not answer; run the job again (it looks before it creates)",
    )
