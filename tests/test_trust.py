"""Who may set which key (``settings.trust``): the project's files never choose how a run is
confined, where requests go or what runs on the host, nor, on a pull-request event, what it spends.

Every key of the trust table is tried both ways: set by the project (ignored with a notice when it
may not set it) and set by the user's layers (honoured), which shows the filter can fail.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest
from conftest import git, init_repo

from repairloop.cli import main
from repairloop.errors import ConfigError
from repairloop.settings import FIELD_NAMES, TRUST, Settings, Trust, load_layers, user_config_file

# A valid value other than the default for every key the project may not always set.
SAMPLE: Dict[str, Any] = {
    "junit_xml": "reports/junit.xml",
    "api_base": "http://127.0.0.1:9/v1",
    "api_key_env": "GITHUB_TOKEN",
    "sandbox": "none",
    "sandbox_bwrap": "/opt/bwrap",
    "sandbox_network": True,
    "sandbox_env_allow": ["GITHUB_TOKEN"],
    "sandbox_memory_mb": 0,
    "sandbox_disk_mb": 0,
    "allow_unconfined_pr": True,
    "allow_capabilities": ["import:os"],
    "models": ["openai/gpt-4o"],
    "max_cost": 50.0,
    "max_tokens": 9_000_000,
    "model_prices": {"openai/gpt-4o": [0.0, 0.0]},
    "max_iterations": 99,
    "timeout": 86_400.0,
    "max_completion_tokens": 60_000,
    "context_tokens": 90_000,
    "downgrade_at": 1.0,
    "model_timeout": 3600.0,
    "model_retries": 50,
    "model_backoff": 60.0,
    "workers": 64,
    "final_runs": 1000,
}
PULL_REQUEST = {"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "pull_request"}
USER_KEYS = sorted(k for k, t in TRUST.items() if t is Trust.USER)
SPEND_KEYS = sorted(k for k, t in TRUST.items() if t is Trust.SPEND)


def toml_value(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def project_with(tmp_path: Path, values: Dict[str, Any], name: str = "proj") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "repairloop.toml").write_text(
        "".join(f"{k} = {toml_value(v)}\n" for k, v in values.items())
    )
    return root


def environ(tmp_path: Path, **extra: str) -> Dict[str, str]:
    """A user's environment whose configuration directory is empty unless a test writes one."""
    return {"HOME": str(tmp_path / "home"), **extra}


def test_every_settings_key_has_a_trust_class() -> None:
    assert set(TRUST) == set(FIELD_NAMES), set(FIELD_NAMES) ^ set(TRUST)


def test_every_key_a_project_may_not_always_set_is_tried_below() -> None:
    assert set(SAMPLE) == set(USER_KEYS) | set(SPEND_KEYS)
    for key, value in SAMPLE.items():
        assert getattr(Settings(**{key: value}), key) != getattr(Settings(), key), key


@pytest.mark.parametrize("key", USER_KEYS)
@pytest.mark.parametrize("event", [{}, PULL_REQUEST])
def test_a_project_file_never_sets_a_user_key(
    tmp_path: Path, key: str, event: Dict[str, str]
) -> None:
    project = project_with(tmp_path, {key: SAMPLE[key]})
    layers = load_layers(project, None, environ(tmp_path, **event))
    assert getattr(layers.settings, key) == getattr(Settings(), key)
    (notice,) = layers.notices
    assert f"'{key}' in {project / 'repairloop.toml'} is ignored" in notice
    assert (
        f"REPAIRLOOP_{key.upper()}" in notice
        and str(tmp_path / "home/.config/repairloop/config.toml") in notice
    )


@pytest.mark.parametrize("key", USER_KEYS + SPEND_KEYS)
def test_the_users_layers_set_every_key_even_on_a_pull_request(tmp_path: Path, key: str) -> None:
    home = tmp_path / "home"
    config = home / ".config" / "repairloop" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text(f"{key} = {toml_value(SAMPLE[key])}\n")
    project = project_with(tmp_path, {})
    from_file = load_layers(project, None, environ(tmp_path, **PULL_REQUEST))
    assert getattr(from_file.settings, key) == SAMPLE[key] and from_file.notices == ()
    from_flag = load_layers(project, {key: SAMPLE[key]}, environ(tmp_path, **PULL_REQUEST)).settings
    assert getattr(from_flag, key) == SAMPLE[key]


@pytest.mark.parametrize("key", SPEND_KEYS)
def test_a_project_sets_what_a_run_spends_except_on_a_pull_request(
    tmp_path: Path, key: str
) -> None:
    project = project_with(tmp_path, {key: SAMPLE[key]})
    assert (
        getattr(
            load_layers(project, None, environ(tmp_path, GITHUB_EVENT_NAME="push")).settings, key
        )
        == SAMPLE[key]
    )
    for event in (
        PULL_REQUEST,
        {"GITHUB_EVENT_NAME": "pull_request_target"},
        {"GITLAB_CI": "true", "CI_PIPELINE_SOURCE": "merge_request_event"},
    ):
        layers = load_layers(project, None, environ(tmp_path, **event))
        assert getattr(layers.settings, key) == getattr(Settings(), key), event
        assert (
            "on a pull-request event the pull request does not choose what the run spends"
            in layers.notices[0]
        )


def test_a_project_still_shapes_the_work_on_a_pull_request(tmp_path: Path) -> None:
    project = project_with(
        tmp_path, {"test_cmd": "python -m pytest -x", "test_globs": ["checks/*.py"], "warm": False}
    )
    layers = load_layers(project, None, environ(tmp_path, **PULL_REQUEST))
    assert (layers.settings.test_cmd, layers.settings.test_globs, layers.settings.warm) == (
        "python -m pytest -x",
        ["checks/*.py"],
        False,
    )
    assert layers.notices == ()


def test_pyproject_table_is_filtered_the_same_way(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.repairloop]\nsandbox = "none"\nmax_iterations = 3\n'
    )
    layers = load_layers(project, None, environ(tmp_path))
    assert layers.settings.sandbox == "auto" and layers.settings.max_iterations == 3
    assert layers.notices[0].startswith(
        f"repairloop: notice: 'sandbox' in {project / 'pyproject.toml'} [tool.repairloop]"
    )


def test_a_user_configuration_file_inside_the_project_is_the_projects(tmp_path: Path) -> None:
    """HOME (or XDG_CONFIG_HOME) pointing into the project must not turn a project file into the
    user's."""
    project = project_with(tmp_path, {})
    planted = project / ".config" / "repairloop" / "config.toml"
    planted.parent.mkdir(parents=True)
    planted.write_text('sandbox = "none"\n')
    for env in (
        {"HOME": str(project)},
        {"XDG_CONFIG_HOME": str(project / ".config"), "HOME": str(tmp_path)},
    ):
        layers = load_layers(project, None, env)
        assert layers.settings.sandbox == "auto"
        assert "lies inside the project under repair" in layers.notices[0]
    assert user_config_file({"XDG_CONFIG_HOME": "/etc/xdg", "HOME": "/root"}) == Path(
        "/etc/xdg/repairloop/config.toml"
    )
    assert user_config_file({"XDG_CONFIG_HOME": "relative", "HOME": "/root"}) == Path(
        "/root/.config/repairloop/config.toml"
    )


@pytest.mark.parametrize("value", ["/etc/passwd", "../outside.xml", "reports/../../x.xml"])
def test_junit_xml_outside_the_project_is_refused_even_from_the_user(
    tmp_path: Path, value: str
) -> None:
    with pytest.raises(ConfigError, match="must be a path inside the project"):
        load_layers(project_with(tmp_path, {}), {"junit_xml": value}, environ(tmp_path))


def test_the_cli_prints_one_notice_per_ignored_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    project = project_with(tmp_path, {"sandbox": "none", "api_base": "http://127.0.0.1:9/v1"})
    (project / "test_ok.py").write_text("def test_ok():\n    assert True\n")
    init_repo(project)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert main(["classify", str(project)]) == 0
    err = capsys.readouterr().err
    assert err.count("repairloop: notice:") == 2
    assert "'sandbox' in" in err and "'api_base' in" in err


def test_a_journal_planted_in_the_project_never_chooses_a_resumed_runs_confinement(
    make_project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run directory committed to a repository (or left in a tarball) is the project's data:
    resume takes the keys a project may not set from the user's layers now, and says which recorded
    values it drops."""
    from repairloop.journal import Journal, StartEvent
    from repairloop.loop.resume import load_recorded

    project = make_project("off_by_one")
    recorded = Settings(
        sandbox="none", sandbox_env_allow=["GITHUB_TOKEN"], max_iterations=2
    ).model_dump()
    journal = Journal(project / ".repairloop" / "runs" / "20260101-000000-aaaa")
    journal.record(
        StartEvent(
            run_id="20260101-000000-aaaa",
            project=str(project),
            chain=("builtin",),
            settings=recorded,
        )
    )
    found = load_recorded(project, None, environ(tmp_path))
    assert found.settings.sandbox == "auto" and found.settings.sandbox_env_allow == []
    assert (
        found.settings.max_iterations == 2
    )  # the project may set this one: the run goes on as recorded
    assert any("the recorded sandbox = 'none' is not reused" in w for w in found.warnings)
    with_user = load_recorded(project, None, environ(tmp_path, REPAIRLOOP_SANDBOX="none"))
    assert with_user.settings.sandbox == "none"  # the user's own layer still decides
    git(project, "add", "-f", ".repairloop")
    git(project, "commit", "-qm", "a run directory in the repository")
    assert (
        main(["resume", "--project", str(project)]) == 2
    )  # refused: the repository tracks .repairloop/


def test_the_readme_trust_table_is_the_codes() -> None:
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Configuration\n", 1)[1].split("\n## ", 1)[0]
    rows = {
        line.split("|")[1].strip(" `"): line.split("|")[3]
        for line in section.splitlines()
        if line.startswith("| `")
    }
    for trust in Trust:
        listed = {k.strip(" `") for k in rows[trust.value].split(",")}
        assert listed == {k for k, t in TRUST.items() if t is trust}, trust
