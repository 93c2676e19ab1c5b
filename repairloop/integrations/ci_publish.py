"""``--push-branch`` and ``--open-pr``: the fix as one commit on ``repairloop/<fingerprint>``, then
a pull request.

Every effect outside the workspace is journalled as an intent before and done
after, and the world is looked at before anything is repeated: a branch that
already holds this exact commit is not pushed again, a branch somebody else
moved is never pushed over, an open pull request for the branch is reused.
The same patch on the same failing commit gives the same commit id (author,
date and message are fixed), so a second run finds its own work.
"""

from __future__ import annotations

import shlex
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, List, Optional, Tuple

from repairloop.integrations import branch as git
from repairloop.integrations.forge import ensure_pull_request
from repairloop.integrations.summary import markdown_summary
from repairloop.journal import DoneEvent, IntentEvent, Journal, PushRefusedEvent
from repairloop.loop.suite import RunnerFactory
from repairloop.settings import Settings
from repairloop.textutil import REDACTION_MARKER
from repairloop.types import Outcome, RunResult

# Files that steer CI itself: a patch touching them is never pushed (a fix must not change its own
# judge).
CI_CONFIG = (".github/workflows/", ".github/actions/", ".gitlab-ci.yml", ".gitlab-ci/")


@dataclass(frozen=True)
class PublishPlan:
    """What publishing needs, settled before the loop: the base branch and its remote tip then, the
    forge, and what re-runs the tests on the fix commit (``runner``: the loop's, None for
    ``TestSuite``)."""

    base: str
    base_tip: Optional[str]  # None when the base branch is not on the remote
    remote: str
    forge: Any  # forge.GitHub, forge.GitLab, or None without --open-pr
    repository: str  # for the idempotency key: "owner/name", else the remote's URL
    runner: Optional[RunnerFactory] = None


@dataclass
class Published:
    """What publishing did: the branch and pull request, lines for the summary, and refusals."""

    branch: str = ""
    url: str = ""
    actions: List[str] = field(default_factory=list)
    errors: List[str] = field(default_factory=list)


def touches_ci_config(paths: List[str]) -> List[str]:
    """The repository paths among ``paths`` that are CI configuration."""
    return [
        p for p in paths if any(p == c or (c.endswith("/") and p.startswith(c)) for c in CI_CONFIG)
    ]


def commit_message(result: RunResult, head: git.CommitInfo, fp: str) -> str:
    """The fix commit's message, ending with the trailer that marks repairloop's own commits."""
    failing = "\n".join(
        f"- {f.test_id} ({f.exc_type or f.kind.value})" for f in result.failures[:20]
    )
    subject = (
        f"repairloop: fix {result.failures[0].test_id}"
        if len(result.failures) == 1
        else f"repairloop: fix {len(result.failures)} failing tests"
    )
    return (
        f"{subject}\n\nProposed by repairloop for {head.sha[:12]}. The patch passes the test "
        f"suite:\n"
        f"plausible, not proven correct. Review it before merging.\n\nFailing tests:\n{failing}\n\n"
        f"{git.TRAILER}: {fp}\nRepairloop-Base: {head.sha}\n"
    )


def publish(
    plan: PublishPlan,
    settings: Settings,
    project: Path,
    repo: git.Repo,
    head: git.CommitInfo,
    result: RunResult,
    fp: str,
    author: Tuple[str, str],
    journal: Journal,
) -> Published:
    """Commit, verify, push and (when ``plan.forge``) open the pull request. Raises ForgeError,
    ProjectError."""
    out = Published()
    if result.outcome is not Outcome.FIXED or not result.patch:
        out.actions.append("not pushed: only a fixed run is pushed (the patch file is kept)")
        return out
    if any(line.startswith("+") and REDACTION_MARKER in line for line in result.patch.splitlines()):
        out.errors.append(
            "the patch writes a redaction placeholder (masked text is never content); not pushed"
        )
        return out
    touched = touches_ci_config(git.changed_paths(repo, result.patch))
    if touched:
        out.errors.append(f"the patch touches CI configuration ({', '.join(touched)}); not pushed")
        return out
    name = f"{git.BRANCH_PREFIX}{fp}"
    commit = git.make_commit(
        repo,
        head.sha,
        result.patch,
        author=author,
        date=head.date,
        message=commit_message(result, head, fp),
    )
    key = f"{plan.repository}@{head.sha}#{fp}"
    if git.remote_sha(repo, plan.remote, name) == commit:  # an earlier run pushed this very commit
        out.actions.append(f"branch {name} already holds this fix ({commit[:12]}); nothing pushed")
    elif not _checked_push(plan, settings, project, repo, name, commit, fp, key, journal, out):
        return out
    out.branch = name
    if plan.forge is not None:
        title = commit_message(result, head, fp).split("\n", 1)[0]
        body = markdown_summary(result, fingerprint_text=fp, actions=out.actions)
        pr = ensure_pull_request(
            plan.forge,
            head=name,
            base=plan.base,
            title=title,
            body=body,
            key=key,
            note=journal.record,
        )
        out.url = pr.url
        out.actions.append(f"pull request {pr.url} ({pr.operation})")
    return out


def _checked_push(
    plan: PublishPlan,
    settings: Settings,
    project: Path,
    repo: git.Repo,
    name: str,
    commit: str,
    fp: str,
    key: str,
    journal: Journal,
    out: Published,
) -> bool:
    """Re-run the tests on ``commit``, refuse if the base moved meanwhile, then push. True when
    pushed."""
    green, detail = verify_commit(settings, project, repo, commit, plan.runner)
    out.actions.append(detail)
    if not green:
        out.errors.append(f"{detail}; not pushed")
        return False
    now = git.remote_sha(repo, plan.remote, plan.base)
    if now != plan.base_tip:
        out.errors.append(
            f"{plan.base} moved on {plan.remote} while the loop ran "
            f"({_short(plan.base_tip)} -> {_short(now)}); not pushing over it"
        )
        return False
    return _push_branch(repo, plan.remote, name, commit, fp, key, journal, out)


def _short(sha: Optional[str]) -> str:
    return sha[:12] if sha else "(none)"


def _push_branch(
    repo: git.Repo,
    remote: str,
    name: str,
    commit: str,
    fp: str,
    key: str,
    journal: Journal,
    out: Published,
) -> bool:
    """Push ``commit`` to ``name`` unless it is there already; never over someone else's commits."""
    tip = git.remote_sha(repo, remote, name)
    if tip == commit:
        return True  # it arrived meanwhile (a concurrent job): nothing to do
    if tip is not None and f"{git.TRAILER}: {fp}" not in git.remote_message(
        repo, remote, name, tip
    ):
        out.errors.append(
            f"branch {name} on {remote} has commits not made by repairloop; not pushing over it"
        )
        return False
    journal.record(
        IntentEvent(action="push", key=key, remote=remote, branch=name, commit=commit, expect=tip)
    )
    try:
        git.push(repo, remote, commit, name, tip)
    except git.GitCommandError:
        now = git.remote_sha(repo, remote, name)  # look before deciding what happened
        if now != commit:
            journal.record(PushRefusedEvent(key=key, found=now))
            out.errors.append(
                f"branch {name} moved on {remote} while pushing ({_short(tip)} -> {_short(now)}); "
                "not pushing over it"
            )
            return False
    journal.record(DoneEvent(action="push", key=key, commit=commit))
    out.actions.append(
        f"pushed {commit[:12]} to {name} on {remote}" + (" (updated)" if tip else "")
    )
    return True


def verify_commit(
    settings: Settings,
    project: Path,
    repo: git.Repo,
    commit: str,
    runner: Optional[RunnerFactory] = None,
) -> Tuple[bool, str]:
    """Re-run the test suite on ``commit`` in a throw-away worktree (through ``runner``, None: the
    loop's TestSuite): (green, what happened).

    The loop validated the patch already; this checks the exact commit to be
    pushed, since a push made with the CI's default token does not trigger CI
    again (TECH-NOTES 8.3). The test command is the loop's: the configured one,
    else the project's own interpreter (``.venv``) running pytest.
    """
    from repairloop.loop.driver import classify_project, default_test_command

    command = settings.test_cmd or shlex.join(default_test_command(project))
    with tempfile.TemporaryDirectory(prefix="repairloop-verify-") as tmp:
        tree = Path(tmp) / "tree"
        git.add_worktree(repo, tree, commit)
        try:
            report, _, kind = classify_project(
                settings.model_copy(update={"test_cmd": command}),
                tree / repo.prefix if repo.prefix else tree,
                runner=runner,
            )
        finally:
            git.remove_worktree(repo, tree)
    if report.green:
        return True, f"re-ran the tests on {commit[:12]}: {len(report.passed_ids)} passed"
    failing = ", ".join(report.failing_ids[:5]) or f"exit {report.exit_code}"
    return False, f"the tests fail on the fix commit {commit[:12]} ({kind}: {failing})"
