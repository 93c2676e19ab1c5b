"""Configuration layers, unknown keys, and configs/default.toml kept equal to the code."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from repairloop.errors import ConfigError
from repairloop.settings import Settings, load_settings, model_chain

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

DEFAULTS = Path(__file__).resolve().parent.parent / "configs" / "default.toml"


def test_default_toml_equals_code_defaults() -> None:
    documented = tomllib.loads(DEFAULTS.read_text(encoding="utf-8"))
    code = Settings().model_dump()
    unset = {k for k, v in code.items() if v is None}
    assert documented == {k: v for k, v in code.items() if k not in unset}
    text = DEFAULTS.read_text(encoding="utf-8")
    for key in unset:
        assert f"# {key} = (unset)" in text


def test_layers_flags_beat_env_beat_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.repairloop]\nmax_iterations = 3\npatience = 2\nmax_cost = 0.5\n"
    )
    env = {"REPAIRLOOP_MAX_ITERATIONS": "4", "REPAIRLOOP_MODELS": "openai/a, openai/b"}
    s = load_settings(tmp_path, {"max_cost": 0.25, "timeout": None}, environ=env)
    assert (s.max_iterations, s.patience, s.max_cost, s.models) == (
        4,
        2,
        0.25,
        ["openai/a", "openai/b"],
    )
    assert s.timeout == Settings().timeout  # a flag not given does not override


def test_repairloop_toml_wins_over_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.repairloop]\nmax_iterations = 3\n")
    (tmp_path / "repairloop.toml").write_text("max_iterations = 6\n")
    assert load_settings(tmp_path, environ={}).max_iterations == 6


def test_unknown_key_names_key_and_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.repairloop]\nmax_iteratons = 3\n")
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, environ={})
    assert "max_iteratons" in err.value.message and "pyproject.toml" in err.value.message


def test_bad_value_in_env_names_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, environ={"REPAIRLOOP_MAX_ITERATIONS": "many"})
    assert "max_iterations" in err.value.message and "REPAIRLOOP_" in err.value.message


def test_broken_toml_is_a_config_error(tmp_path: Path) -> None:
    (tmp_path / "repairloop.toml").write_text("max_iterations = = 3\n")
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path, environ={})


def test_a_pyproject_table_in_repairloop_toml_says_where_the_keys_go(tmp_path: Path) -> None:
    (tmp_path / "repairloop.toml").write_text("[tool.repairloop]\nmax_iterations = 3\n")
    with pytest.raises(ConfigError) as err:
        load_settings(tmp_path, environ={})
    assert (
        "unknown key 'tool'" in err.value.message
        and "drop the [tool.repairloop] line" in err.value.hint
    )


def test_chain_is_builtin_alone_without_model_or_key() -> None:
    assert model_chain(Settings(), environ={}) == ["builtin"]


def test_chain_uses_provider_key_then_builtin() -> None:
    assert model_chain(Settings(), environ={"OPENAI_API_KEY": "x"}) == [
        "openai/gpt-4o-mini",
        "builtin",
    ]


def test_chain_without_builtin_fallback() -> None:
    s = Settings(models=["openai/m"], fallback_to_builtin=False)
    assert model_chain(s, environ={}) == ["openai/m"]
    with pytest.raises(ConfigError):
        model_chain(Settings(fallback_to_builtin=False), environ={})
