"""The secrets of a project's own files, read from the user's tree when a run starts: the values
of its environment files (``envfiles``) and the literals its code gives to secret-looking names
(``literals``). They join the environment's secrets, so each is masked in every form.

The tree is walked without following a symbolic link, leaving out what a copy of the project
leaves out (``types.NOT_COPIED``: ``.git``, virtual environments, caches, ``node_modules``) and
any virtual environment; each file is opened without following a link at any step
(``types.read_inside``). Test files are not read for literals: a test's password or token is test
data the model must see to repair the code that checks it, and a real key there has a known format
or a random shape the text rules catch. Bounded: MAX_FILE_BYTES a file, MAX_PROJECT_BYTES in all,
MAX_WALKED files looked at and MAX_PROJECT_SECRETS values, environment files first, then modules
whose names say settings or configuration, then the rest in path order.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Callable, List, Tuple

from repairloop.redact.envfiles import env_file_secrets, is_env_file
from repairloop.redact.literals import code_secrets
from repairloop.redact.names import SECRET_WORDS
from repairloop.types import copy_ignore, read_inside

MAX_FILE_BYTES = 1_000_000
MAX_PROJECT_BYTES = 8_000_000
MAX_WALKED = 20_000
MAX_PROJECT_SECRETS = 256
# Module names that usually hold settings: read first, so the caps never leave them out.
_SETTINGS_NAME = re.compile(r"settings|config|conf|secret|credential|env|local|prod", re.I)
_MENTIONS_SECRET = re.compile(SECRET_WORDS, re.I)


def _walk(root: Path) -> Tuple[List[str], List[str]]:
    """Project-relative paths of the environment files and of the ``.py`` files under ``root``,
    each in reading order; at most MAX_WALKED files looked at."""
    envs: List[str] = []
    modules: List[str] = []
    seen = 0
    for folder, dirs, files in os.walk(root):  # never into a linked directory
        dirs[:] = sorted(
            d
            for d in dirs
            if not copy_ignore(folder, [d])
            and not os.path.exists(os.path.join(folder, d, "pyvenv.cfg"))
        )
        for name in sorted(files):
            seen += 1
            if seen > MAX_WALKED:
                return envs, modules
            rel = Path(folder, name).relative_to(root).as_posix()
            if is_env_file(rel):
                envs.append(rel)
            elif name.endswith(".py"):
                modules.append(rel)
    modules.sort(key=lambda rel: (not _SETTINGS_NAME.search(rel.rsplit("/", 1)[-1]), rel))
    return envs, modules


def project_secrets(root: Path, is_test: Callable[[str], bool] = lambda rel: False) -> List[str]:
    """The secrets of the project at ``root`` (see the module docstring), in reading order, once
    each; ``is_test`` says which project-relative paths are test files (left out of the literals).
    Unreadable files are skipped; nothing here raises for a file."""
    envs, modules = _walk(root)
    env_files = set(envs)
    found: List[str] = []
    budget = MAX_PROJECT_BYTES
    for rel in envs + [m for m in modules if not is_test(m)]:
        if budget <= 0 or len(found) >= MAX_PROJECT_SECRETS:
            break
        text = read_inside(root, rel, MAX_FILE_BYTES)
        if text is None:
            continue
        budget -= len(text)
        if rel in env_files:
            found += env_file_secrets(text)
        elif _MENTIONS_SECRET.search(text):  # most modules name no secret: no need to parse them
            found += code_secrets(text)
    return list(dict.fromkeys(found))[:MAX_PROJECT_SECRETS]
