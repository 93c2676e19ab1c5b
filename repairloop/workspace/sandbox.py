"""The sandbox that test runs go through: bubblewrap (``bwrap``) on Linux, or an honest
"unconfined".

Candidate code is untrusted (DESIGN.md, "Workspace, sandbox and side
effects"): a model's answer, or text in the repository steering it, can put
code at module level of the file under test, and the project's tests execute
it. ``open_sandbox(policy)`` returns a :class:`Sandbox`; the loop gives it to the
runner as a command wrapper (the runner never imports this module), so every
test run, the final proof and the offline engine's scratch copies run as::

    bwrap --ro-bind / /            the whole file system read-only (the project's venv included)
          --dev /dev --proc /proc  private devices; a /proc of the new PID namespace only
          --tmpfs /tmp             a private, size-limited temporary directory
          --tmpfs /run             the host's Unix sockets (docker, D-Bus...) out of reach
          --tmpfs <hidden>         credential stores and the user's project tree made empty
          --ro-bind <needed>       the interpreter's venv and PYTHONPATH entries, if hidden above
          --bind <tree>            the workspace (or scratch copy) under test: writable, so that
                                   what a run changes there is seen afterwards (``fingerprint``:
                                   a rewritten test rejects the candidate); the reported patch is
                                   the kept candidates' own edits, so files tests write never ride
                                   along
          --ro-bind <tests>        the test files and the files that configure them, unwritable
          --bind <outputs>         the runner's result files, coverage data and JUnit XML
          --unshare-all            new user, PID, network (loopback only), IPC, UTS namespaces
          --die-with-parent --new-session --cap-drop ALL
          /bin/sh -c 'ulimit -v MEM; ulimit -f DISK; exec "$@"' ...   memory and file-size limits

PID namespace: when the command ends (or is killed), the namespace's init ends
and the kernel kills every process left in it, ``setsid`` and double-forked
ones included. Network: a new network namespace has only its own loopback, so
no listener on the host's 127.0.0.1 is reachable (``sandbox_network = true``
shares the host's network instead). The environment is filtered by the caller
(``confinement.filter_environment``); which bwrap runs, and the probe that checks
it confines, is ``confinement.open_sandbox``.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, replace
from pathlib import Path
from typing import List, Mapping, Optional, Sequence, Tuple

from repairloop.types import SandboxStatus
from repairloop.workspace.credential_stores import credential_stores

# Runs the command with memory (KiB of address space) and file-size (512-byte blocks,
# POSIX sh) limits; `exec` keeps the command's exit status and signals as they are.
_LIMITS = 'ulimit -v {mem} && ulimit -f {fsize} && exec "$@"'
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
RESOLVER_DIR = (
    "/run/systemd/resolve"  # systemd-resolved's resolv.conf (Ubuntu's /etc/resolv.conf target)
)


@dataclass(frozen=True)
class SandboxPolicy:
    """What the settings ask for: ``mode`` ``auto`` | ``bwrap`` | ``none``; ``network`` opens the
    host's network; ``memory_mb`` and ``disk_mb`` (MiB, 0 = no limit) bound a test run's
    address space per process, the private /tmp and any one file it writes."""

    mode: str = "auto"
    network: bool = False
    memory_mb: int = 8192
    disk_mb: int = 2048
    hidden: Tuple[
        Path, ...
    ] = ()  # trees shown empty (the user's repository), besides the credential stores
    readable: Tuple[
        Path, ...
    ] = ()  # kept readable inside a hidden tree or /tmp (the project's virtualenvs)
    project: Optional[Path] = (
        None  # the user's project, inside ``hidden``: what ``Sandbox.showing`` shows
    )


class Sandbox:
    """Wraps a test command (an argv) so that it runs confined; or, unconfined, leaves it as it is.

    ``status`` says which, and why (it goes into the RunResult, the console, the
    CI summary and the report). Call it as the runner's command wrapper.
    """

    def __init__(
        self,
        status: SandboxStatus,
        policy: SandboxPolicy,
        bwrap: Optional[str] = None,
        *,
        sized_tmp: bool = True,
    ) -> None:
        self.status = status
        self.policy = policy
        self.bwrap = bwrap
        self.sized_tmp = sized_tmp

    def showing(self) -> "Sandbox":
        """This sandbox with the user's project (``policy.project``) readable instead of hidden, and
        every git directory still hidden (a CI checkout's ``.git/config`` holds its token; the rest
        of a repository the project is a part of stays hidden): the user's own world, before any
        candidate."""
        tree = self.policy.project
        if tree is None:
            return self
        hidden = tuple(p for p in self.policy.hidden if p != tree) + (tree / ".git",)
        policy = replace(self.policy, hidden=hidden, readable=self.policy.readable + (tree,))
        return Sandbox(self.status, policy, self.bwrap, sized_tmp=self.sized_tmp)

    def __call__(
        self,
        argv: Sequence[str],
        *,
        tree: Path,
        outputs: Sequence[Path],
        env: Mapping[str, str],
        readonly: Sequence[Path] = (),
    ) -> List[str]:
        """The argv that runs ``argv`` in ``tree`` confined (unchanged when unconfined).

        ``tree`` is writable except the ``readonly`` files in it (the tests and
        their configuration: a write there fails); ``outputs`` (files or
        directories) are bound writable. Every other path is read-only, and /tmp is
        private. ``env`` is the command's environment (its PATH and PYTHONPATH
        say what must stay readable).
        """
        if self.bwrap is None:
            return list(argv)
        return [
            self.bwrap,
            *self.arguments(tree, outputs, env, program_path(argv), readonly),
            "--",
            *self._limited(argv),
        ]

    def arguments(
        self,
        tree: Path,
        outputs: Sequence[Path],
        env: Mapping[str, str],
        program: Sequence[str] = (),
        readonly: Sequence[Path] = (),
    ) -> List[str]:
        """bwrap's options for one run (see the module docstring for the layout); ``program`` is the
        command's interpreter (``program_path``), kept readable where /tmp covers it."""
        args = ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        if self.sized_tmp and self.policy.disk_mb:
            args += ["--size", str(self.policy.disk_mb * 1024 * 1024)]
        args += ["--tmpfs", "/tmp"]
        # /run holds the host's Unix sockets (docker, D-Bus, systemd, databases, ssh agents in
        # /run/user): a read-only mount does not stop connect(), hiding the directory does.
        for run in _run_dirs():
            args += ["--tmpfs", run]
        if self.policy.network and os.path.isdir(RESOLVER_DIR):  # /etc/resolv.conf may point there
            args += ["--ro-bind", RESOLVER_DIR, RESOLVER_DIR]
        hidden = hidden_paths(env, self.policy.hidden)
        for path in hidden:
            if path.is_dir() and not path.is_symlink():
                args += ["--tmpfs", str(path)]
            elif path.is_file() and not path.is_symlink():
                args += ["--ro-bind", "/dev/null", str(path)]
        bound = needed_paths(env, hidden, self.policy.readable, program)
        for path in bound:
            args += ["--ro-bind", str(path), str(path)]
        for (
            path
        ) in hidden:  # hidden again where a bind above shows a tree holding it (the project's .git)
            if path.is_dir() and not path.is_symlink() and any(b in path.parents for b in bound):
                args += ["--tmpfs", str(path)]
        args += ["--bind", str(tree), str(tree)]
        for path in (
            readonly
        ):  # the tests and their configuration: the candidate's code may not rewrite them
            if path.is_file() and not path.is_symlink():
                args += ["--ro-bind", str(path), str(path)]
        for path in outputs:
            args += ["--bind", str(path), str(path)]
        args += ["--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
        if self.policy.network:
            args.append("--share-net")
        return args + ["--setenv", "TMPDIR", "/tmp", "--chdir", str(tree)]

    def _limited(self, argv: Sequence[str]) -> List[str]:
        mem, disk = self.policy.memory_mb, self.policy.disk_mb
        if not mem and not disk:
            return list(argv)
        script = _LIMITS.format(
            mem=mem * 1024 if mem else "unlimited", fsize=disk * 2048 if disk else "unlimited"
        )
        return ["/bin/sh", "-c", script, "sh", *argv]


def _run_dirs() -> List[str]:
    """``/run``, and ``/var/run`` when it is a directory of its own rather than a link to it."""
    return [d for d in ("/run", "/var/run") if os.path.isdir(d) and not os.path.islink(d)]


def program_path(argv: Sequence[str]) -> List[str]:
    """The absolute path of the program the command runs (``/x/venv/bin/python -m pytest``, or the
    first word of an ``sh -c`` script after its ``VAR=value`` assignments), if it names one that
    exists: kept readable where /tmp covers it. Nothing else the command names (arguments, test ids:
    the project's words) is ever bound into the sandbox."""
    words = list(argv[:1])
    if len(argv) >= 3 and os.path.basename(argv[0]) in ("sh", "bash", "dash") and argv[1] == "-c":
        try:
            words = [w for w in shlex.split(argv[2]) if not _ASSIGNMENT.match(w)][:1]
        except ValueError:  # unbalanced quotes: the shell will say so
            words = []
    return [w for w in words if os.path.isabs(w) and os.path.exists(w)]


def hidden_paths(env: Mapping[str, str], trees: Sequence[Path] = ()) -> List[Path]:
    """Existing credential stores (``credential_stores``: under ``$HOME``, and where the
    environment's variables put them), the CI runner's own files, and ``trees`` (files or
    directories; never ``/`` or ``$HOME`` itself).

    The runner's files: ``$RUNNER_TEMP`` on GitHub Actions (the event, the step's output and
    environment files, a checkout's persisted credentials). Which places hold secrets is a list, so
    a heuristic: the README says so.
    """
    home = env.get("HOME") or ""
    paths: List[Path] = credential_stores(env)
    # A store that is a symbolic link (a dotfile manager's ``~/.ssh -> ~/dotfiles/ssh``) is hidden
    # where it leads, when that is inside $HOME: bwrap would follow the link, and hiding a
    # system directory a link names (``/etc/...``) could break the tests.
    for store in list(paths):
        target = store.resolve() if store.is_symlink() else None
        if target is not None and home and Path(home) in target.parents and target.exists():
            paths.append(target)
    runner = [Path(env["RUNNER_TEMP"])] if os.path.isabs(env.get("RUNNER_TEMP") or "") else []
    for tree in [*trees, *runner]:
        under_tmp = Path("/tmp") in tree.parents  # /tmp is private in the sandbox anyway
        if (
            os.path.lexists(tree)
            and not under_tmp
            and tree not in (Path("/"), Path(home or "/"))
            and tree not in paths
        ):
            paths.append(tree)
    return paths


def needed_paths(
    env: Mapping[str, str],
    hidden: Sequence[Path],
    trusted: Sequence[Path] = (),
    program: Sequence[str] = (),
) -> List[Path]:
    """Directories that must stay readable although /tmp or a hidden tree covers them.

    ``trusted`` are bound wherever they lie (the project's virtualenvs, repairloop's choice); the
    program's virtualenv (found by its ``pyvenv.cfg``) or directory, and those of each PATH and
    PYTHONPATH entry, only where /tmp covers them and never inside a hidden tree: a path the
    command or its environment names must not unhide a credential store, a runner's files or a
    checkout's ``.git``. Never ``/`` nor ``/tmp`` itself.
    """
    covered = [Path("/tmp"), *hidden]
    found: List[Path] = [
        p for p in trusted if p.exists() and any(p == c or c in p.parents for c in covered)
    ]
    entries = [
        *program,
        *(env.get("PATH") or "").split(os.pathsep),
        *(env.get("PYTHONPATH") or "").split(os.pathsep),
    ]
    for entry in entries:
        if not entry or not os.path.isabs(entry) or not os.path.exists(entry):
            continue
        path = _venv_root(Path(entry)) or (
            Path(entry) if Path(entry).is_dir() else Path(entry).parent
        )
        inside_trusted = any(path == t or t in path.parents for t in trusted)
        under_hidden = any(path == h or h in path.parents or path in h.parents for h in hidden)
        if (
            path in found
            or path in (Path("/"), Path("/tmp"))
            or (under_hidden and not inside_trusted)
        ):
            continue
        if Path("/tmp") in path.parents:
            found.append(path)
    return found


def _venv_root(path: Path) -> Optional[Path]:
    for parent in (path, *path.parents):
        if (parent / "pyvenv.cfg").is_file():
            return parent
    return None
