"""Mail goes to the console in the embedded run and over SMTP once EMAIL_HOST is set, with
the server, login and sender read from the environment (config/settings.py's last block)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
READ = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps([s.EMAIL_BACKEND, s.EMAIL_HOST, s.EMAIL_PORT, s.EMAIL_HOST_USER, "
    "s.EMAIL_HOST_PASSWORD, s.EMAIL_USE_TLS, s.DEFAULT_FROM_EMAIL]))"
)
NAMES = ("EMAIL_HOST", "EMAIL_PORT", "EMAIL_HOST_USER", "EMAIL_HOST_PASSWORD", "EMAIL_USE_TLS")
NAMES += ("DEFAULT_FROM_EMAIL", "EMAIL_BACKEND")


def _settings(tmp_path, **env) -> list:
    clean = {k: v for k, v in os.environ.items() if k not in NAMES}
    # DEBUG on: the development defaults, whatever production demands (a SECRET_KEY)
    clean.update(DJANGO_SETTINGS_MODULE="config.settings", CARDSORT_DATA_DIR=str(tmp_path))
    clean.update(DEBUG="1", **env)
    out = subprocess.run(
        [sys.executable, "-c", READ],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def test_mail_goes_to_the_console_by_default(tmp_path):
    assert _settings(tmp_path)[0] == "django.core.mail.backends.console.EmailBackend"


def test_mail_goes_over_smtp_once_configured(tmp_path):
    env = dict(
        EMAIL_HOST="smtp.lab.org",
        EMAIL_PORT="2525",
        EMAIL_HOST_USER="cardsort",
        EMAIL_HOST_PASSWORD="pw",
        EMAIL_USE_TLS="0",
        DEFAULT_FROM_EMAIL="Lab <noreply@lab.org>",
    )
    assert _settings(tmp_path, **env) == [
        "django.core.mail.backends.smtp.EmailBackend",
        "smtp.lab.org",
        2525,
        "cardsort",
        "pw",
        False,
        "Lab <noreply@lab.org>",
    ]
