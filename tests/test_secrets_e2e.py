"""Secrets never reach a prompt, a journal or a summary, end to end.

A real git repository (the ``off_by_one`` fixture) with a ``.env`` file and a settings module that
hard-codes keys; a database URL and a token in the environment, let through to the tests
(``sandbox_env_allow``, as a user whose tests need them would); ``repairloop run`` as a process,
the real pytest in the real sandbox, litellm against the scripted server. Three tests fail on the
one bug, each with a message that carries every secret of one group (environment, env file, code)
its code can reach in every form a leak takes (percent-encoded, base64, base32, reversed, rot13,
split across lines, spaced and colon-separated hex, one character at a time), and keys no rule
knows beforehand (a random value under ``session_token``, a bare random run): the prompt shows the
three messages whole (one message would be cut at 2,000 characters). Nothing of them may be in any
request the server received, in the journal, in ``summary.json``, in any other file of the run or
in ``--json``. The same run has credential files in ``$HOME`` (outside ``/tmp``, which the sandbox
hides anyway), and its first candidate prints them into its failure (the second is right).
"""

from __future__ import annotations

import base64
import codecs
import difflib
import json
import os
import shutil
import subprocess
import sys
import urllib.parse
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, List, Sequence, Tuple

import pytest
from conftest import PROJECTS, git, init_repo
from scripted_server import ScriptedServer
from test_e2e_run import RIGHT

pytestmark = pytest.mark.slow

DB_PASSWORD = "Xq7#pL2@vR9!kTm"
DATABASE_URL = f"postgresql://app:{urllib.parse.quote(DB_PASSWORD, safe='')}@db.internal:5432/app"
SERVICE_TOKEN = "svc-tok-Hy4Qn8Wm2Tc6"
ENV_FILE = 'STRIPE_SECRET="stripe-Zk9-qW3-vL7"\nexport WEBHOOK_SIGNATURE=whsec_9fK2mQ7xL1pZ\n'
SETTINGS = """\
API_KEY = "ak-live-7Hq2Lm9Xv3pQ"
SECRET_KEY = 'dj-k#8v!q2z@m$wR4'
CONFIG = {"api_key": "cfg-Zq81-key-Lm3"}


def connect(db):
    return db.connect(host="db", password="kw-Pass-7788!x")
"""
# Keys nothing knows before the run: a random value under a secret-looking key, and a bare random
# run of 48 base64 characters (over detect-secrets' 4.5 bits a character).
ASSIGNED = "Rt5vYh8KpQ2wLz"
BARE = "q3VbX0kTz9LmR2wYc7HfN5pJd8sGa4Ue1oKiW6tBn-Ay_QhE"

GROUPS = {
    "environment": [DB_PASSWORD, SERVICE_TOKEN],
    "env file": ["stripe-Zk9-qW3-vL7", "whsec_9fK2mQ7xL1pZ"],
    "code": ["ak-live-7Hq2Lm9Xv3pQ", "dj-k#8v!q2z@m$wR4", "cfg-Zq81-key-Lm3", "kw-Pass-7788!x"],
}

# calc/leak.py: project code that gathers each group's secrets where the tests' code finds them;
# each group's failing test shows LEAKS[group] as its assertion's message. The markers are built at
# run time, so they are in the message only, never in the code.
GATHER = """
import base64 as _b64, codecs as _codecs, os as _os, urllib.parse as _up


def _forms(v):
    h = v.encode().hex()
    return [v, _up.quote(v, safe=""), _b64.b64encode(v.encode()).decode(), v[::-1],
            _codecs.encode(v, "rot13"), _b64.b32encode(v.encode()).decode(),
            "\\n".join(v[i:i + 5] for i in range(0, len(v), 5)),
            " ".join(h[i:i + 2] for i in range(0, len(h), 2)),
            ":".join(h[i:i + 2] for i in range(0, len(h), 2)), " ".join(v)]


def _found(group):
    if group == "environment":
        return [_up.unquote(_up.urlsplit(_os.environ["DATABASE_URL"]).password),
                _os.environ["MY_SERVICE_TOKEN"]]
    if group == "env file":
        here = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
        return [line.split("=", 1)[1].strip().strip('"')
                for line in open(_os.path.join(here, ".env"))]
    from calc import settings as _s

    class _DB:
        def connect(self, **kw):
            return kw

    return [_s.API_KEY, _s.SECRET_KEY, _s.CONFIG["api_key"], _s.connect(_DB())["password"]]


# built at run time: a literal under "session_token" would be one of the project's known secrets
UNKNOWN = {"session_token": "%(head)s" + "%(tail)s", "blob": "%(bare)s"}
LEAKS = {g: ("LEAK-" + "BEGIN " + g + ": " + " | ".join(f for v in _found(g) for f in _forms(v))
             + " session_token=" + UNKNOWN["session_token"] + " " + UNKNOWN["blob"] + " LEAK-"
             + "END " + g)
         for g in %(groups)r}
"""


def forms(value: str) -> List[str]:
    """The forms GATHER's ``_forms`` gives ``value``."""
    raw, hexed = value.encode(), value.encode().hex()
    pairs = [hexed[i : i + 2] for i in range(0, len(hexed), 2)]
    return [
        value,
        urllib.parse.quote(value, safe=""),
        base64.b64encode(raw).decode(),
        value[::-1],
        codecs.encode(value, "rot13"),
        base64.b32encode(raw).decode(),
        "\n".join(value[i : i + 5] for i in range(0, len(value), 5)),
        " ".join(pairs),
        ":".join(pairs),
        " ".join(value),
    ]


def candidate(project: Path, code: str) -> str:
    """A diff that appends ``code`` to calc/lists.py and makes last_n raise with its ``_LEAK``."""
    path = project / "calc" / "lists.py"
    old = path.read_text()
    new = old.replace(
        "        return []\n    return items[-n - 1:]",
        "        return []\n    raise RuntimeError(_LEAK)",
    )
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        (new + code).splitlines(keepends=True),
        "a/calc/lists.py",
        "b/calc/lists.py",
    )
    return "```diff\n" + "".join(lines) + "```\n"


def strings(value: Any) -> Iterator[str]:
    """Every string inside a decoded JSON value, keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def run(
    project: Path, tmp_path: Path, answers: Sequence[str], env: Dict[str, str]
) -> Tuple[Dict[str, Any], List[str], List[str]]:
    """``repairloop run`` answered with ``answers`` in turn; returns the --json document, every
    text that left the run (each request's messages, each journal line's and summary.json's
    strings, decoded, every file of the run directory as it is, and stdout), and the messages of
    the requests alone."""
    with ScriptedServer([("ok", answer) for answer in answers]) as srv:
        done = subprocess.run(
            [sys.executable, "-m", "repairloop", "run", str(project), "--model", "openai/scripted"]
            + ["--api-base", srv.base_url, "--no-builtin", "--json"],
            capture_output=True,
            text=True,
            env={
                **env,
                "NO_COLOR": "1",
                "REPAIRLOOP_SANDBOX": "bwrap",
                "REPAIRLOOP_ALLOW_CAPABILITIES": "*",  # they prove the redaction, not the guards
            },
            cwd=tmp_path,
            timeout=300,
        )
    assert done.stdout, done.stderr
    doc = json.loads(done.stdout)
    run_dir = Path(doc["run_dir"])
    journal = [json.loads(line) for line in (run_dir / "journal.jsonl").read_text().splitlines()]
    summary = json.loads((run_dir / "summary.json").read_text())
    prompts = [m["content"] for body in srv.requests for m in body["messages"]]
    texts = prompts + [s for event in journal for s in strings(event)] + list(strings(summary))
    texts += [p.read_text(errors="replace") for p in run_dir.rglob("*") if p.is_file()]
    return doc, texts + [done.stdout], prompts


def leak_project(project: Path) -> Dict[str, str]:
    """Add to the fixture ``project`` the settings module, the ``.env`` file, ``calc/leak.py`` and
    one failing test per group showing the group's leak; return the environment of the run."""
    (project / "calc" / "settings.py").write_text(SETTINGS)
    (project / "calc" / "leak.py").write_text(
        GATHER
        % {"groups": sorted(GROUPS), "head": ASSIGNED[:7], "tail": ASSIGNED[7:], "bare": BARE}
    )
    test = project / "tests" / "test_lists.py"
    failing = "def test_last_n():\n    assert last_n([1, 2, 3, 4], 2) == [3, 4]\n"
    text = test.read_text()
    assert failing in text
    tests = [
        f"def test_last_n_{i}():\n    assert last_n([1, 2, 3, 4], 2) == [3, 4], LEAKS[{g!r}]\n"
        for i, g in enumerate(sorted(GROUPS))
    ]
    test.write_text("from calc.leak import LEAKS\n" + text.replace(failing, "\n\n".join(tests)))
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "settings and a test that shows what it finds")
    (project / ".env").write_text(ENV_FILE)  # untracked, not ignored: in the workspace too
    return {
        **os.environ,
        "DATABASE_URL": DATABASE_URL,
        "MY_SERVICE_TOKEN": SERVICE_TOKEN,
        "REPAIRLOOP_SANDBOX_ENV_ALLOW": "DATABASE_URL,MY_SERVICE_TOKEN",
        "REPAIRLOOP_CONFIRM_RUNS": "0",
    }


Run = Tuple[Dict[str, Any], List[str], List[str]]


@pytest.fixture(scope="module")
def leak_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    """One run of the project whose three failing tests show the three groups' leaks, with the
    credential files in ``$HOME``: the hostile candidate that reads them, then the right one."""
    tmp_path = tmp_path_factory.mktemp("secrets")
    project = tmp_path / "off_by_one"
    shutil.copytree(PROJECTS / "off_by_one", project, ignore=shutil.ignore_patterns("__pycache__"))
    init_repo(project)
    env = leak_project(project)
    home = Path("/var/tmp") / f"rl-home-{uuid.uuid4().hex[:8]}"
    try:
        for rel, text in STORES.items():
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_text(text)
        hostile = candidate(project, READ_HOME % {"stores": list(STORES)})
        done = run(project, tmp_path, [hostile, RIGHT], {**env, "HOME": str(home)})
    finally:
        shutil.rmtree(home, ignore_errors=True)
    yield done


LEAK_RUN = pytest.mark.xdist_group("secrets_leak_run")  # the workers share the module's one run


@LEAK_RUN
@pytest.mark.parametrize("group", sorted(GROUPS))
def test_every_form_of_every_secret_is_masked_in_prompts_journal_and_summary(
    leak_run: Run, group: str
) -> None:
    doc, texts, prompts = leak_run
    assert doc["outcome"] == "fixed"
    begin, end = f"LEAK-BEGIN {group}: ", f"LEAK-END {group}"
    shown = [p[p.index(begin) : p.index(end)] for p in prompts if begin in p and end in p]
    assert shown  # the whole message reached the model: its redacted forms are there
    assert shown[0].count("[REDACTED") >= 10 * len(GROUPS[group])
    assert "session_token=[REDACTED:assigned-secret] [REDACTED:high-entropy]" in shown[0]
    for secret in GROUPS[group]:
        for form in forms(secret):
            assert not any(form in t for t in texts), (secret, form)
    for unknown in (ASSIGNED, BARE):
        assert not any(unknown in t for t in texts), unknown


# --- credential files in $HOME ------------------------------------------------------------------

STORES = {
    ".config/git/credentials": "https://me:xdg-cred-e2e-1@github.com",
    ".pgpass": "db:5432:app:app:pgpass-e2e-2",
    ".vault-token": "vault-token-e2e-3",
    ".cargo/credentials.toml": "token = cargo-e2e-4",
    ".terraform.d/credentials.tfrc.json": '{"token": "tf-e2e-5"}',
    ".cache/huggingface/token": "hf-e2e-6",
    ".bash_history": "export TOKEN=history-e2e-7",
    ".python_history": "login(password='pyhist-e2e-8')",
}

READ_HOME = """
import os as _os


def _read(rel):
    try:
        return rel + "=" + open(_os.path.join(_os.path.expanduser("~"), rel)).read().strip()
    except OSError as err:
        return rel + ":" + type(err).__name__


_LEAK = "LEAK-" + "BEGIN " + " | ".join(_read(r) for r in %(stores)r) + " LEAK-" + "END"
"""


@LEAK_RUN
def test_credential_files_in_home_never_reach_the_model(leak_run: Run) -> None:
    doc, texts, prompts = leak_run
    assert doc["outcome"] == "fixed"
    # the candidate looked: its report reached the model's second request (the first line of the
    # last attempt's error, capped) and the journal (whole)
    assert any("LEAK-BEGIN" in p and ".pgpass" in p for p in prompts)
    assert any("LEAK-BEGIN" in t and ".python_history" in t and "LEAK-END" in t for t in texts)
    for rel, text in STORES.items():
        assert not any(text in t for t in texts), rel
