"""Pull requests through a real HTTP server on 127.0.0.1 that speaks GitHub's and GitLab's few
endpoints."""

from __future__ import annotations

from typing import Any, Dict, List, Tuple

import pytest
from fake_github import FakeForge

from repairloop.integrations.forge import (
    KEY_MARKER,
    ForgeError,
    GitHub,
    GitLab,
    body_with_key,
    ensure_pull_request,
)
from repairloop.journal import event_to_json

Notes = List[Tuple[str, Dict[str, Any]]]


def github(forge: FakeForge, timeout: float = 10.0, token: str = "t0ken") -> GitHub:
    return GitHub(forge.base_url, forge.repository, token, timeout)


def ensure(
    client: Any, notes: Notes, key: str = "acme/widgets@abc#fp1", body: str = "summary"
) -> Any:
    return ensure_pull_request(
        client,
        head="repairloop/fp1",
        base="main",
        title="repairloop: fix",
        body=body,
        key=key,
        note=lambda event: notes.append((event.kind.value, event_to_json(event))),
    )


def test_creates_once_then_finds_the_same_pull_request() -> None:
    notes: Notes = []
    with FakeForge() as forge:
        first = ensure(github(forge), notes)
        second = ensure(github(forge), notes)
        pulls = forge.open_pulls()
    assert first.operation == "created" and second.operation == "unchanged"
    assert first.number == second.number == 1 and len(pulls) == 1
    assert pulls[0]["head"]["ref"] == "repairloop/fp1" and pulls[0]["base"]["ref"] == "main"
    assert KEY_MARKER.format(key="acme/widgets@abc#fp1") in pulls[0]["body"]
    assert [event for event, _ in notes] == ["intent", "done"]  # the second run created nothing


def test_timeout_after_creation_looks_before_retrying_and_yields_one() -> None:
    notes: Notes = []
    with FakeForge(hang_after_create=1) as forge:
        pr = ensure(github(forge, timeout=1.0), notes)
        posts = [r for r in forge.requests if r[0] == "POST"]
        pulls = forge.open_pulls()
    assert len(pulls) == 1 and pr.number == 1 and pr.url.endswith("/pull/1")
    assert len(posts) == 1  # the look found it: no second create
    assert [event for event, _ in notes] == ["intent", "note", "done"]
    assert "timed out" in notes[1][1]["unknown"] or "timeout" in notes[1][1]["unknown"].lower()


def test_a_create_that_did_not_land_is_retried_after_looking() -> None:
    notes: Notes = []
    with FakeForge(fail_creates=1) as forge:
        pr = ensure(github(forge), notes)
        posts = [r for r in forge.requests if r[0] == "POST"]
        pulls = forge.open_pulls()
    assert len(pulls) == 1 and len(posts) == 2 and pr.operation == "created"
    methods = [m for m, _ in forge.requests]
    assert methods == ["GET", "POST", "GET", "POST"]  # looked between the two creates
    assert [event for event, _ in notes] == ["intent", "note", "done"]


def test_already_exists_answer_is_resolved_by_looking_again() -> None:
    notes: Notes = []
    with FakeForge(stale_lists=1) as forge:
        forge.add_pull(
            "repairloop/fp1", "main", "old", body_with_key("old body", "acme/widgets@abc#fp1")
        )
        pr = ensure(github(forge), notes)  # the first list is stale: create -> 422 -> look again
        pulls = forge.open_pulls()
    assert len(pulls) == 1 and pr.number == 1


def test_an_open_pull_request_for_an_older_commit_is_updated_not_duplicated() -> None:
    with FakeForge() as forge:
        forge.add_pull(
            "repairloop/fp1", "main", "old", body_with_key("old body", "acme/widgets@old#fp1")
        )
        pr = ensure(github(forge), [], key="acme/widgets@new#fp1", body="new body")
        pulls = forge.open_pulls()
    assert pr.operation == "updated" and len(pulls) == 1
    assert "new body" in pulls[0]["body"] and "acme/widgets@new#fp1" in pulls[0]["body"]


def test_a_bad_token_is_a_clear_error() -> None:
    with FakeForge() as forge:
        with pytest.raises(ForgeError) as info:
            ensure(github(forge, token="wrong"), [])
    assert "401" in info.value.message and "token" in info.value.hint


def test_gitlab_merge_requests_are_idempotent_too() -> None:
    with FakeForge(repository="group/widgets", hang_after_create=1) as forge:
        client = GitLab(forge.base_url + "/api/v4", "42", "t0ken", timeout=1.0)
        first = ensure(client, [])
        second = ensure(client, [])
        pulls = forge.open_pulls()
    assert len(pulls) == 1 and first.number == second.number == 1
    assert second.operation == "unchanged" and "merge_requests/1" in first.url
