"""The credential stores the sandbox shows empty, against real bwrap and a real pytest run: git's
XDG credentials, libpq's password file, Vault's token, cargo's and Terraform's credentials,
Hugging Face tokens, shell histories, and files the environment's variables name."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import Dict, Iterator, Sequence

import pytest
from conftest import init_repo

from repairloop.loop import suite as suites
from repairloop.settings import Settings
from repairloop.workspace.credential_stores import credential_stores

# Each file with what it would leak; all under a $HOME outside /tmp (the sandbox's /tmp is private,
# so a home there would be hidden whatever the list says).
STORES = {
    ".config/git/credentials": "https://me:ghp-xdg-cred-1@github.com",
    ".pgpass": "db:5432:app:app:pgpass-secret-2",
    ".vault-token": "hvs.vault-token-3",
    ".cargo/credentials": "[registry]\ntoken = cargo-token-4",
    ".cargo/credentials.toml": "[registry]\ntoken = cargo-token-5",
    ".terraform.d/credentials.tfrc.json": '{"credentials": {"app.terraform.io": "tf-token-6"}}',
    ".cache/huggingface/token": "hf-token-7",
    ".huggingface/token": "hf-token-8",
    ".bash_history": "export API_TOKEN=history-token-9",
    ".zsh_history": ": 1700000000:0;mysql -pzsh-history-10",
    ".python_history": "login(password='python-history-11')",
    ".my.cnf": "[client]\npassword=mycnf-12",
    ".config/pip/pip.conf": "[global]\nindex-url = https://u:pip-index-13@pypi.example/simple",
}


@pytest.fixture
def home() -> Iterator[Path]:
    root = Path("/var/tmp") / f"rl-home-{uuid.uuid4().hex[:8]}"
    try:
        for rel, text in STORES.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text)
        (root / "elsewhere").mkdir()
        (root / "elsewhere" / "gcp.json").write_text('{"private_key": "gcp-key-14"}')
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_the_stores_are_found_in_home_and_where_variables_point(home: Path) -> None:
    env: Dict[str, str] = {
        "HOME": str(home),
        "GOOGLE_APPLICATION_CREDENTIALS": str(home / "elsewhere" / "gcp.json"),
        "PIP_CONFIG_FILE": "/dev/null",  # no store: never hidden
    }
    found = {str(p.relative_to(home)) for p in credential_stores(env)}
    directories = {
        ".config/pip/pip.conf": ".config/pip",
        ".terraform.d/credentials.tfrc.json": ".terraform.d",
    }
    expected = {directories.get(rel, rel) for rel in STORES} | {"elsewhere/gcp.json"}
    assert found == expected


def sandboxed_reads(home: Path, tmp_path: Path, stores: Sequence[str]) -> str:
    """The failure message of a sandboxed test that reads each of ``stores`` under ``$HOME`` and
    shows what it got (the text, or the error)."""
    root = tmp_path / "proj"
    (root / "tests").mkdir(parents=True)
    (root / "tests" / "test_read.py").write_text(
        "import os\n\n\ndef test_read():\n"
        "    shown = []\n"
        "    for rel in os.environ['RL_STORES'].split(','):\n"
        "        path = os.path.join(os.path.expanduser('~'), rel)\n"
        "        try:\n"
        "            shown.append(rel + '=' + open(path).read())\n"
        "        except OSError as err:\n"
        "            shown.append(rel + ':' + type(err).__name__)\n"
        "    assert False, ' | '.join(shown)\n"
    )
    init_repo(root)
    environ = {**os.environ, "HOME": str(home), "RL_STORES": ",".join(stores)}
    suite = suites.TestSuite.for_project(Settings(sandbox="bwrap"), root, environ, lambda: 120.0)
    return suite.run(root).results[0].message or ""


def test_candidate_code_reads_no_store_in_the_sandbox(home: Path, tmp_path: Path) -> None:
    message = sandboxed_reads(home, tmp_path, list(STORES))
    assert ".pgpass" in message and ".bash_history" in message  # the test did look
    for rel, text in STORES.items():
        assert text not in message, rel


def test_a_store_that_is_a_symbolic_link_is_hidden_where_it_leads(tmp_path: Path) -> None:
    home = Path("/var/tmp") / f"rl-home-{uuid.uuid4().hex[:8]}"
    try:
        (home / "dotfiles" / "ssh").mkdir(parents=True)
        (home / "dotfiles" / "ssh" / "id_ed25519").write_text("ssh-key-behind-a-link-16")
        (home / ".ssh").symlink_to(home / "dotfiles" / "ssh")
        message = sandboxed_reads(home, tmp_path, [".ssh/id_ed25519"])
        assert ".ssh/id_ed25519" in message and "ssh-key-behind-a-link-16" not in message
    finally:
        shutil.rmtree(home, ignore_errors=True)
