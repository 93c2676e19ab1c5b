"""Configuration: defaults < user file < project file < environment < flags.

Sources, lowest precedence first (STYLE.md habit 7):

1. the defaults written on the fields of :class:`Settings` (``configs/default.toml``
   documents them and a test keeps the two equal);
2. the user's configuration file, ``~/.config/repairloop/config.toml``
   (``$XDG_CONFIG_HOME/repairloop/config.toml``);
3. ``[tool.repairloop]`` in the project's ``pyproject.toml``, or a
   ``repairloop.toml`` at the project root (which wins if both exist): only the
   keys a project may set (``settings.trust``), the others ignored with a notice;
4. environment variables ``REPAIRLOOP_<FIELD>`` (lists comma-separated);
5. command-line flags (a flag not given stays unset and does not override).

The record is ``settings.model``; loading it is ``settings.layers``; who may set
which key is ``settings.trust``.
"""

from repairloop.settings.layers import (
    Layers,
    check_flags,
    edit_format_for,
    load_layers,
    load_settings,
    model_chain,
    read_env_layer,
    read_project_layer,
    unknown_env_warnings,
)
from repairloop.settings.schema import (
    DEFAULT_MODEL_BY_KEY,
    EDIT_FORMATS,
    ENV_PREFIX,
    FIELD_NAMES,
    INTERNAL_ENV,
    KEYS_DOC,
    Settings,
)
from repairloop.settings.trust import TRUST, Trust, pull_request_event, user_config_file

__all__ = [
    "DEFAULT_MODEL_BY_KEY",
    "EDIT_FORMATS",
    "ENV_PREFIX",
    "FIELD_NAMES",
    "INTERNAL_ENV",
    "KEYS_DOC",
    "TRUST",
    "Layers",
    "Settings",
    "Trust",
    "check_flags",
    "edit_format_for",
    "load_layers",
    "load_settings",
    "model_chain",
    "pull_request_event",
    "read_env_layer",
    "read_project_layer",
    "unknown_env_warnings",
    "user_config_file",
]
