"""Loading the settings in layers: defaults < user file < project file (trusted keys) < environment
< flags.

Unknown keys are errors that name the key and the file they came from; unknown
``REPAIRLOOP_*`` variables are only warned about (:func:`unknown_env_warnings`).
"""

from __future__ import annotations

import difflib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, FrozenSet, List, Mapping, Optional, Tuple

from pydantic import ValidationError

from repairloop.errors import ConfigError
from repairloop.settings.schema import (
    DEFAULT_MODEL_BY_KEY,
    ENV_PREFIX,
    FIELD_NAMES,
    INTERNAL_ENV,
    KEYS_DOC,
    Settings,
)
from repairloop.settings.trust import (
    ignored_notice,
    project_may_set,
    pull_request_event,
    user_config_file,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.9/3.10 only
    import tomli as tomllib


def _validation_message(err: ValidationError, origin: str) -> str:
    parts = []
    for item in err.errors():
        key = ".".join(str(p) for p in item["loc"]) or "(root)"
        if item["type"] == "extra_forbidden":  # repr: a key is the file's text, newlines and all
            parts.append(f"unknown key {key!r} in {origin}")
        else:
            parts.append(f"{key!r} in {origin}: {item['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


def _validation_hint(err: ValidationError, origin: str) -> str:
    """The fix for the first error: the closest key, or what the key means and its default."""
    item = err.errors()[0]
    key = str(item["loc"][0]) if item["loc"] else ""
    if item["type"] == "extra_forbidden":
        if key == "tool" and origin.endswith("repairloop.toml"):
            return (
                f"{origin} takes the keys at its top level: drop the [tool.repairloop] line "
                "(that table is for pyproject.toml)"
            )
        close = difflib.get_close_matches(key, FIELD_NAMES, n=1)
        guess = f"did you mean '{close[0]}'? " if close else ""
        return f"{guess}fix or remove it in {origin}; every key is listed in {KEYS_DOC}"
    field = Settings.model_fields.get(key)
    if field is None:
        return f"fix it in {origin}; every key is listed in {KEYS_DOC}"
    default = field.get_default(call_default_factory=True)
    text = "unset" if default is None else repr(default)
    text = text if len(text) <= 60 else text[:57] + "..."  # the glob lists are long
    note = "" if "default" in str(field.description) else f" (default: {text})"
    where = f"the flag ({COMMAND_HELP} lists the flags)" if "flags" in origin else f"it in {origin}"
    return f"'{key}': {field.description}{note}; fix {where}"


# Where a bad flag's hint sends the user; the command line names the command it ran
# (``cli.common.project_settings``).
COMMAND_HELP = "the command's --help"


def _check(values: Mapping[str, Any], origin: str) -> Dict[str, Any]:
    """Validate a partial layer on its own so errors name where they came from."""
    try:
        Settings(**values)
    except ValidationError as err:
        raise ConfigError(
            _validation_message(err, origin), hint=_validation_hint(err, origin)
        ) from None
    return dict(values)


def check_flags(flags: Mapping[str, Any]) -> Dict[str, Any]:
    """The flags the user gave (None: not given), validated alone. Raises ConfigError naming the
    flag's key."""
    return _check({k: v for k, v in flags.items() if v is not None}, "the command-line flags")


def unknown_env_warnings(environ: Mapping[str, str]) -> List[str]:
    """One warning per ``REPAIRLOOP_*`` variable that is neither a setting nor one of INTERNAL_ENV.

    Such a variable is ignored, so a typo (``REPAIRLOOP_MAX_ITERATION``) would
    change nothing without a word; each warning names the closest known variable.
    (difflib, not rapidfuzz: rapidfuzz stays in patch and stop, STYLE.md's import table.)
    """
    known = [name.upper() for name in FIELD_NAMES]
    warnings = []
    for name in sorted(environ):
        rest = name[len(ENV_PREFIX) :]
        if not name.startswith(ENV_PREFIX) or rest in known or name in INTERNAL_ENV:
            continue
        # Compared without the prefix, which every name shares and which would make any two look
        # alike.
        close = difflib.get_close_matches(rest, known + ["DEBUG"], n=1)
        guess = f"; did you mean {ENV_PREFIX}{close[0]}?" if close else ""
        warnings.append(
            f"repairloop: warning: {name} is not a repairloop setting and is ignored{guess}"
        )
    return warnings


def _read_toml_table(path: Path, *, pyproject: bool) -> Optional[Dict[str, Any]]:
    """The settings table of ``path``: ``[tool.repairloop]`` of a pyproject.toml (None when it has
    none), else the file's top level. Raises ConfigError on unreadable TOML."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError, OSError) as err:
        raise ConfigError(f"cannot read {path}: {err}", hint="fix the TOML syntax") from None
    table = data.get("tool", {}).get("repairloop") if pyproject else data
    return dict(table) if isinstance(table, dict) else None


def read_project_layer(
    project: Path, environ: Mapping[str, str]
) -> Tuple[Dict[str, Any], List[str]]:
    """The keys of ``repairloop.toml`` (or else ``[tool.repairloop]`` of ``pyproject.toml``) that
    the project may set (``settings.trust``), and one notice per key ignored.

    Keys of class ``user`` are always ignored, keys of class ``spend`` on a pull-request event; they
    are dropped before validation, so a hostile value is ignored, not an error. Raises ConfigError
    on unreadable TOML, unknown keys or invalid values of the keys kept.
    """
    own = project / "repairloop.toml"
    pyproject = project / "pyproject.toml"
    for path in (own, pyproject):
        if not path.is_file():
            continue
        data = _read_toml_table(path, pyproject=path is pyproject)
        if data is None:
            continue
        origin = f"{path} [tool.repairloop]" if path is pyproject else str(path)
        return filter_project_values(data, origin, environ)
    return {}, []


def filter_project_values(
    values: Mapping[str, Any], origin: str, environ: Mapping[str, str]
) -> Tuple[Dict[str, Any], List[str]]:
    """``values`` from a project's file (``origin`` names it) without the keys it may not set,
    validated, and the notices for the keys dropped (``trust.ignored_notice``). Raises
    ConfigError."""
    pull_request = bool(pull_request_event(environ))
    user_file = user_config_file(environ) or Path("~/.config/repairloop/config.toml")
    kept = {k: v for k, v in values.items() if project_may_set(k, pull_request)}
    notices = [ignored_notice(k, origin, user_file) for k in values if k not in kept]
    return _check(kept, origin), notices


def read_user_layer(project: Path, environ: Mapping[str, str]) -> Tuple[Dict[str, Any], List[str]]:
    """The user's configuration file (``trust.user_config_file``): its keys, all of them trusted.

    A file that lies inside ``project`` (``HOME`` or ``XDG_CONFIG_HOME`` pointing into it) is the
    project's, not the user's: it is ignored with a notice. Raises ConfigError on unreadable TOML or
    unknown keys.
    """
    path = user_config_file(environ)
    if path is None or not path.is_file():
        return {}, []
    if _inside(path, project):
        return {}, [
            f"repairloop: notice: {path} is ignored: it lies inside the project under repair, "
            f"whose "
            "files never choose its settings; keep your configuration outside the project"
        ]
    data = _read_toml_table(path, pyproject=False) or {}
    return _check(data, str(path)), []


def _inside(path: Path, project: Path) -> bool:
    for form in {Path(os.path.abspath(path)), path.resolve()}:
        for root in {Path(os.path.abspath(project)), project.resolve()}:
            if form == root or root in form.parents:
                return True
    return False


def read_env_layer(environ: Mapping[str, str]) -> Dict[str, Any]:
    """``REPAIRLOOP_<FIELD>`` variables; list fields split on commas."""
    values: Dict[str, Any] = {}
    for name in FIELD_NAMES:
        raw = environ.get(ENV_PREFIX + name.upper())
        if raw is None:
            continue
        annotation = str(Settings.model_fields[name].annotation)
        # not a Dict of lists (model_prices)
        listed = annotation.startswith(("typing.List", "List", "list"))
        value = [p.strip() for p in raw.split(",") if p.strip()] if listed else raw
        # One variable at a time, so an error names the variable to fix.
        values.update(_check({name: value}, f"the environment variable {ENV_PREFIX}{name.upper()}"))
    return values


@dataclass(frozen=True)
class Layers:
    """The merged settings of a run, the keys some layer set, and the notices for project keys
    ignored."""

    settings: Settings
    given: FrozenSet[str]
    notices: Tuple[str, ...]


def load_layers(
    project: Path,
    flags: Optional[Mapping[str, Any]] = None,
    environ: Optional[Mapping[str, str]] = None,
    *,
    project_values: Optional[Tuple[Mapping[str, Any], str]] = None,
) -> Layers:
    """Merge, lowest first: the defaults, the user's configuration file, the project's file (the
    keys it may set), ``REPAIRLOOP_*`` variables, ``flags`` (only options the user gave; None: not
    given).

    ``project_values`` (values, origin) replaces the project's file (a resumed run's recorded
    settings, which lie in the project too). Raises ConfigError naming the key and its source on any
    invalid value.
    """
    environ = os.environ if environ is None else environ
    user, notices = read_user_layer(project, environ)
    if project_values is None:
        from_project, ignored = read_project_layer(project, environ)
    else:
        from_project, ignored = filter_project_values(project_values[0], project_values[1], environ)
    merged: Dict[str, Any] = {**user, **from_project, **read_env_layer(environ)}
    merged.update(check_flags(flags or {}))
    return Layers(Settings(**merged), frozenset(merged), tuple(notices + ignored))


def load_settings(
    project: Path,
    flags: Optional[Mapping[str, Any]] = None,
    environ: Optional[Mapping[str, str]] = None,
) -> Settings:
    """``load_layers(...).settings``: the merged settings, without the notices."""
    return load_layers(project, flags, environ).settings


def edit_format_for(settings: Settings, model: str) -> str:
    """The edit format asked of ``model``: its ``model_edit_formats`` entry, else
    ``edit_format``."""
    return settings.model_edit_formats.get(model, settings.edit_format)


def model_chain(settings: Settings, environ: Optional[Mapping[str, str]] = None) -> List[str]:
    """The ordered proposers for a run: configured models, else one per provider key, then builtin.

    With no model configured and no provider key in the environment, the
    offline engine is the whole chain (DESIGN.md, "Errors from the model side").
    """
    environ = os.environ if environ is None else environ
    chain = list(settings.models)
    if not chain:
        chain = [model for key, model in DEFAULT_MODEL_BY_KEY if environ.get(key)][:1]
    if settings.fallback_to_builtin and "builtin" not in chain:
        chain.append("builtin")
    if not chain:
        raise ConfigError(
            "the model chain is empty",
            hint="pass --model NAME, or drop --no-builtin so the offline engine can run",
        )
    return chain
