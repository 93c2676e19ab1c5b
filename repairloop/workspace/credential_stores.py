"""Where credentials live on a developer's machine or a CI runner: the places the sandbox shows
empty (``sandbox.hidden_paths``). Lists, so heuristics: a secret kept anywhere else that the user
can read, candidate code can read too (the README says so).

Why not hide ``$HOME`` whole and show back only what the tests need: the tests of a project
read their own world there, and none of it can be told from a credential by its path alone: the
interpreter and its packages (pyenv, uv, conda and pipx keep them under ``$HOME``; the user site
``~/.local/lib``), programs on ``PATH`` (``~/.local/bin``, ``~/.cargo/bin``), git's identity for
tests that commit (``~/.gitconfig``), the caches a run without network needs (models, data sets,
``~/.cache/huggingface/hub``, ``~/nltk_data``). Each one missed would make the copy fail tests the
user's tree passes, and the fidelity check would stop the run. So the stores are named one by one,
as the tools that keep them document them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import List, Mapping, Tuple

# Relative to $HOME. A directory is shown as an empty one, a file as an empty file.
HIDDEN_IN_HOME: Tuple[str, ...] = (
    # keys and agents; cloud, container and cluster command-line tools
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".oci",
    ".config/doctl",
    ".config/hcloud",
    ".docker",
    ".config/containers/auth.json",
    ".kube",
    ".s3cfg",
    ".boto",
    ".config/rclone",
    ".databrickscfg",
    # forges and git's credential helpers (git-credential-store: ~/.git-credentials and
    # $XDG_CONFIG_HOME/git/credentials)
    ".netrc",
    ".git-credentials",
    ".config/git/credentials",
    ".config/gh",
    ".config/hub",
    # package registries: upload tokens, and index URLs that carry one
    ".pypirc",
    ".config/pip",
    ".pip",
    ".config/pypoetry/auth.toml",
    ".condarc",
    ".npmrc",
    ".yarnrc.yml",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".gem/credentials",
    ".m2/settings.xml",
    ".m2/settings-security.xml",
    ".gradle/gradle.properties",
    ".config/composer/auth.json",
    ".composer/auth.json",
    # databases (libpq's password file, MySQL's option and login files), HashiCorp Vault's token
    # helper, Terraform's CLI credentials
    ".pgpass",
    ".my.cnf",
    ".mylogin.cnf",
    ".vault-token",
    ".terraform.d",
    ".terraformrc",
    # Hugging Face tokens (huggingface_hub: $HF_HOME/token, stored_tokens; the older ~/.huggingface)
    ".cache/huggingface/token",
    ".cache/huggingface/stored_tokens",
    ".huggingface/token",
    # keyrings and password managers
    ".local/share/keyrings",
    ".password-store",
    ".config/op",
    # shell and client histories: a command typed with a password or a token in it
    ".bash_history",
    ".zsh_history",
    ".histfile",
    ".sh_history",
    ".local/share/fish/fish_history",
    ".python_history",
    ".ipython/profile_default/history.sqlite",
    ".node_repl_history",
    ".psql_history",
    ".mysql_history",
    ".sqlite_history",
    ".rediscli_history",
    ".irb_history",
    ".lesshst",
)

# Variables that name a credential file or directory elsewhere (each tool's documentation):
# hidden wherever they point, as long as that is an absolute path other than / and $HOME.
CREDENTIAL_PATH_VARIABLES: Tuple[str, ...] = (
    "GOOGLE_APPLICATION_CREDENTIALS",
    "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_CONFIG_FILE",
    "AZURE_CONFIG_DIR",
    "CLOUDSDK_CONFIG",
    "KUBECONFIG",
    "DOCKER_CONFIG",
    "REGISTRY_AUTH_FILE",
    "NETRC",
    "PGPASSFILE",
    "MYSQL_TEST_LOGIN_FILE",
    "VAULT_CONFIG_PATH",
    "TF_CLI_CONFIG_FILE",
    "HF_TOKEN_PATH",
    "PIP_CONFIG_FILE",
    "NPM_CONFIG_USERCONFIG",
    "GNUPGHOME",
    "PASSWORD_STORE_DIR",
    "HISTFILE",
)
# Variables that move a tool's whole directory; the credential files are then found inside it.
_MOVED: Tuple[Tuple[str, Tuple[str, ...]], ...] = (
    ("XDG_CONFIG_HOME", ("git/credentials", "gcloud", "gh", "hub", "pip", "rclone", "op")),
    ("HF_HOME", ("token", "stored_tokens")),
    ("CARGO_HOME", ("credentials", "credentials.toml")),
)


def credential_stores(env: Mapping[str, str]) -> List[Path]:
    """The credential stores that exist on this machine for the environment ``env``: those of
    HIDDEN_IN_HOME under ``$HOME``, the paths CREDENTIAL_PATH_VARIABLES name (``KUBECONFIG`` may
    name several), and the stores inside directories ``XDG_CONFIG_HOME``, ``HF_HOME`` and
    ``CARGO_HOME`` move. Never ``/`` nor ``$HOME`` itself, nor a path under ``/dev``, ``/proc``
    or ``/sys``; each once, in that order."""
    home = env.get("HOME") or ""
    found: List[Path] = []
    if home and os.path.isdir(home) and Path(home) != Path("/"):
        found += [Path(home) / rel for rel in HIDDEN_IN_HOME]
    for name in CREDENTIAL_PATH_VARIABLES:
        found += [Path(p) for p in (env.get(name) or "").split(os.pathsep) if os.path.isabs(p)]
    for name, inside in _MOVED:
        if os.path.isabs(env.get(name) or ""):
            found += [Path(env[name]) / rel for rel in inside]
    kept = [p for p in found if os.path.lexists(p) and p not in (Path("/"), Path(home or "/"))]
    # devices and kernel files are no stores (PIP_CONFIG_FILE=/dev/null is common)
    system = (Path("/dev"), Path("/proc"), Path("/sys"))
    return list(dict.fromkeys(p for p in kept if not any(s in p.parents for s in system)))
