"""Configuration: packaged defaults < config file < environment < flags.

Sources, lowest precedence first (STYLE.md habit 7):

1. the defaults written on the fields of :class:`Settings` (``configs/default.toml``
   documents them and a test keeps the two equal);
2. ``[tool.repairloop]`` in the project's ``pyproject.toml``, or a
   ``repairloop.toml`` at the project root (which wins if both exist);
3. environment variables ``REPAIRLOOP_<FIELD>`` (lists comma-separated);
4. command-line flags (a flag not given stays unset and does not override).

The record is ``settings.model``; loading it is ``settings.layers``.
"""

from repairloop.settings.layers import (
    check_flags,
    edit_format_for,
    load_settings,
    model_chain,
    read_env_layer,
    read_file_layer,
    unknown_env_warnings,
)
from repairloop.settings.model import (
    DEFAULT_MODEL_BY_KEY,
    EDIT_FORMATS,
    ENV_PREFIX,
    FIELD_NAMES,
    INTERNAL_ENV,
    KEYS_DOC,
    Settings,
)

__all__ = [
    "DEFAULT_MODEL_BY_KEY", "EDIT_FORMATS", "ENV_PREFIX", "FIELD_NAMES", "INTERNAL_ENV", "KEYS_DOC", "Settings",
    "check_flags", "edit_format_for", "load_settings", "model_chain", "read_env_layer", "read_file_layer",
    "unknown_env_warnings",
]
