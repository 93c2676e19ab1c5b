"""Where known secrets come from besides secret-looking variables: the passwords of URLs in any
environment variable, the project's ``.env`` files and the literals its code assigns to
secret-looking names."""

from __future__ import annotations

import base64
import urllib.parse
from pathlib import Path

from repairloop.loop.driver import run_redactor
from repairloop.redact import MARKER, Redactor, project_secrets, redact, secret_values
from repairloop.redact.envfiles import env_file_secrets
from repairloop.redact.literals import code_secrets
from repairloop.settings import Settings

DB_PASSWORD = "Xq7#pL2@vR9!kT"  # as a user writes it; percent-encoded in the URL
DATABASE_URL = f"postgresql://app:{urllib.parse.quote(DB_PASSWORD, safe='')}@db.internal:5432/app"


def test_the_password_of_every_url_is_masked_whatever_it_holds() -> None:
    for url, password in (
        ("postgres://app:p@ss@db.internal:5432/app", "p@ss"),  # an "@" written as it is
        ("redis://:Tz9-cache-pw@cache:6379/0", "Tz9-cache-pw"),  # no user
        ("mongodb+srv://u:m0ng0%2Fpw@cluster0.example.net/db", "m0ng0%2Fpw"),
    ):
        masked = redact(f"connecting to {url} failed", [])
        expected = url.replace(f":{password}@", ":[REDACTED:url-password]@")
        assert masked == f"connecting to {expected} failed", masked


def test_the_password_of_a_url_in_any_variable_is_a_known_secret_in_every_form() -> None:
    secrets = secret_values({"DATABASE_URL": DATABASE_URL, "HOME": "/home/someone"})
    assert DB_PASSWORD in secrets and urllib.parse.quote(DB_PASSWORD, safe="") in secrets
    redactor = Redactor(secrets)
    for leak in (
        DB_PASSWORD,
        urllib.parse.quote(DB_PASSWORD, safe=""),
        base64.b64encode(DB_PASSWORD.encode()).decode(),
        DB_PASSWORD[::-1],
    ):
        masked = redactor(f"E   AssertionError: got {leak!s} from the settings")
        assert leak not in masked and MARKER in masked, leak


def test_a_url_password_that_is_also_its_user_or_host_is_not_a_known_secret() -> None:
    environ = {"DATABASE_URL": "postgres://postgres:postgres@localhost/postgres"}
    assert secret_values(environ) == []
    text = "import postgres_driver; engine = 'postgres'"
    assert Redactor(secret_values(environ))(text) == text


# --- the project's own files -----------------------------------------------------------------

ENV_FILE = """\
# local settings
export DB_PASSWORD="pg-\\"quoted\\"-Pw7"
API_TOKEN='tok-single-Q8z'
WEBHOOK_SIGNATURE=whsec_9fK2mQ7xL1pZ  # under a plain name, but random
DATABASE_URL=postgres://app:Url-Pw-9911@db:5432/app
DEBUG=True
DJANGO_SETTINGS_MODULE=config.settings.local
REDIS_URL=redis://redis:6379/0
ALLOWED_HOSTS=localhost,127.0.0.1
AWS_REGION=us-east-1
SECRET_KEY=changeme
"""
ENV_SECRETS = ['pg-"quoted"-Pw7', "tok-single-Q8z", "whsec_9fK2mQ7xL1pZ", "Url-Pw-9911"]

SETTINGS_MODULE = """\
import os

API_KEY = "ak-live-7Hq2Lm9Xv3"
SECRET_KEY = 'django-insecure-k#8v!q2z@m$w'
DB_PASSWORD = os.getenv("DB_PASSWORD", "Pg-dev-pw-2024")
USER, PASSWORD = "app", "tuple-pw-3344"
PASSWORD_FIELD = "password_hash"
SESSION_KEY = "_auth_user_id"
API_KEY_ENV = "OPENAI_API_KEY"
ERRORS = {"token": "invalid token given"}


class Client:
    def __init__(self, token="Tk_default_99xx"):
        self.token = "inst-tok-8812abc"
        self.config = {"api_key": "dict-key-55Zq", "region": "eu-west-1"}

    def connect(self, db):
        return db.connect(host="localhost", password="kw-pass-7788!")
"""
CODE_SECRETS = [
    "ak-live-7Hq2Lm9Xv3",
    "django-insecure-k#8v!q2z@m$w",
    "Pg-dev-pw-2024",
    "tuple-pw-3344",
    "Tk_default_99xx",
    "inst-tok-8812abc",
    "dict-key-55Zq",
    "kw-pass-7788!",
]


def test_an_env_file_gives_its_secret_values_and_keeps_plain_settings() -> None:
    assert sorted(env_file_secrets(ENV_FILE)) == sorted(ENV_SECRETS)


def test_code_gives_the_literals_it_assigns_to_secret_looking_names() -> None:
    assert sorted(code_secrets(SETTINGS_MODULE)) == sorted(CODE_SECRETS)
    assert code_secrets("API_KEY = 'unterminated") == []


def _project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "app").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / ".env").write_text(ENV_FILE)
    (root / ".env.test").write_text("STRIPE_KEY=envtest-Zk9-value\n")
    (root / "app" / "settings.py").write_text(SETTINGS_MODULE)
    (root / "tests" / "test_login.py").write_text(
        'def test_x():\n    login(password="Test-pw-12ab")\n'
    )
    (root / ".venv").mkdir()
    (root / ".venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    (root / ".venv" / "site.py").write_text('API_KEY = "venv-key-88Qz"\n')
    outside = tmp_path / "outside.py"
    outside.write_text('API_KEY = "linked-key-77Qa"\n')
    (root / "app" / "linked.py").symlink_to(outside)
    (root / "app" / ".env.local").symlink_to(tmp_path / "outside.env")
    (tmp_path / "outside.env").write_text("API_TOKEN=linked-tok-66Qb\n")
    return root


def test_a_project_gives_its_env_files_and_code_literals_but_not_tests_links_or_venvs(
    tmp_path: Path,
) -> None:
    root = _project(tmp_path)
    found = project_secrets(root, lambda rel: rel.startswith("tests/"))
    assert sorted(found) == sorted(ENV_SECRETS + CODE_SECRETS + ["envtest-Zk9-value"])


def test_the_runs_redactor_masks_the_projects_secrets_in_every_form(tmp_path: Path) -> None:
    root = _project(tmp_path)
    redactor = run_redactor(Settings(), root, {"DATABASE_URL": DATABASE_URL})
    for secret in ["ak-live-7Hq2Lm9Xv3", "whsec_9fK2mQ7xL1pZ", "kw-pass-7788!", DB_PASSWORD]:
        for leak in (secret, secret[::-1], base64.b64encode(secret.encode()).decode()):
            assert leak not in redactor(f"got {leak}\n"), leak
    # a test file's literal is test data, not a known secret; plain settings are no secrets
    kept = "login('alice', 'Test-pw-12ab') DEBUG=True config.settings.local localhost us-east-1"
    assert redactor(kept) == kept
