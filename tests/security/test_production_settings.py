"""Production settings fail closed (issue 12): the settings are read at import, so each case
is a process started with the environment under test, DEBUG taken out of it unless the case
sets it, as an operator following docs/production.md would start one."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
GUNICORN = Path(sys.executable).parent / "gunicorn"


def production_env(tmp_path: Path, **extra: str) -> dict:
    """What docs/production.md sets, on a SQLite file of the test's own."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    env.pop("DATABASE_URL", None)
    env.update(
        DJANGO_SETTINGS_MODULE="config.settings",
        CARDSORT_DATA_DIR=str(tmp_path),
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="cardsort.example.org,127.0.0.1",
        LOG_LEVEL="WARNING",
    )
    env.update(extra)
    return env


def manage(env: dict, *args: str) -> subprocess.CompletedProcess:
    command = [sys.executable, "manage.py", *args]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def settings_of(env: dict, *names: str) -> list[str]:
    code = "import django; django.setup(); from django.conf import settings as s; "
    code += f"print(*[repr(getattr(s, n, None)) for n in {names!r}], sep='\\n')"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout.splitlines()[-len(names) :]


def test_without_debug_the_app_is_not_in_debug_and_https_is_on(tmp_path):
    names = ("DEBUG", "SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE")
    names += ("SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER")
    assert settings_of(production_env(tmp_path), *names) == [
        "False",
        "True",
        "True",
        "True",
        "31536000",
        "None",
    ]


def test_each_https_switch_has_its_variable_for_a_proxy_in_front(tmp_path):
    env = production_env(
        tmp_path,
        SECURE_SSL_REDIRECT="0",
        SECURE_HSTS_SECONDS="0",
        SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https",
    )
    assert settings_of(
        env, "SECURE_SSL_REDIRECT", "SECURE_HSTS_SECONDS", "SECURE_PROXY_SSL_HEADER"
    ) == [
        "False",
        "0",
        "('HTTP_X_FORWARDED_PROTO', 'https')",
    ]


@pytest.mark.parametrize("debug", [None, "0", "false"])
def test_outside_debug_it_refuses_to_start_without_a_secret_key(tmp_path, debug):
    env = production_env(tmp_path)
    del env["SECRET_KEY"]
    if debug is not None:
        env["DEBUG"] = debug
    out = manage(env, "check")
    assert out.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is not set" in out.stderr
    assert "Set the SECRET_KEY environment variable" in out.stderr


@pytest.mark.parametrize(
    "key, why",
    [
        ("abc", "it has 3 characters, fewer than 50"),
        ("dev-only-insecure-key-change-me", "it is the development key"),
        # .env.example's placeholder, left as it is
        ("change-me-to-a-long-random-string", "it has 33 characters"),
        ("x" * 60, "fewer than 5 distinct characters"),
        ("django-insecure-" + "k3y" * 20, "django-insecure-"),
    ],
)
def test_outside_debug_it_refuses_to_start_with_a_weak_key_naming_it(tmp_path, key, why):
    out = manage(production_env(tmp_path, SECRET_KEY=key), "check")
    assert out.returncode != 0
    assert "ImproperlyConfigured: SECRET_KEY is too weak" in out.stderr, out.stderr[-2000:]
    assert why in out.stderr
    assert "secrets.token_urlsafe(50)" in out.stderr
    # the key itself is never written to a log
    assert key not in out.stderr.replace("django-insecure-", "")


def test_in_debug_a_short_key_is_still_accepted(tmp_path):
    env = production_env(tmp_path, DEBUG="1", SECRET_KEY="abc")
    assert settings_of(env, "DEBUG", "SECRET_KEY") == ["True", "'abc'"]


def test_a_proxy_header_written_wrong_is_refused_naming_it(tmp_path):
    out = manage(production_env(tmp_path, SECURE_PROXY_SSL_HEADER="X-Forwarded-Proto"), "check")
    assert out.returncode != 0
    assert "SECURE_PROXY_SSL_HEADER='X-Forwarded-Proto'" in out.stderr


def test_in_debug_the_development_key_still_serves_make_run(tmp_path):
    env = production_env(tmp_path, DEBUG="1")
    del env["SECRET_KEY"]
    assert settings_of(env, "DEBUG", "SECURE_SSL_REDIRECT", "SECRET_KEY") == [
        "True",
        "False",
        "'dev-only-insecure-key-change-me'",
    ]


def test_check_deploy_is_clean_with_the_production_environment(tmp_path):
    out = manage(production_env(tmp_path), "check", "--deploy", "--fail-level", "WARNING")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "System check identified no issues" in out.stdout, out.stdout + out.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str, headers: dict):
    request = urllib.request.Request(url, headers=headers)
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(request, timeout=60) as response:
            return response.status, dict(response.headers), response.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read().decode()


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@pytest.fixture
def production_server(tmp_path):
    """gunicorn with docs/production.md's environment behind a TLS-terminating proxy, on a
    database nobody migrated: the first query fails, as a real fault would."""
    port = _free_port()
    env = production_env(tmp_path, SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https")
    log = (tmp_path / "gunicorn.log").open("w")
    command = [str(GUNICORN), "config.wsgi:application", "--bind", f"127.0.0.1:{port}"]
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            _get(f"{base}/accounts/login/", {})
            break
        except OSError:
            assert process.poll() is None, (tmp_path / "gunicorn.log").read_text()
            time.sleep(0.2)
    yield base
    process.terminate()
    process.wait(timeout=20)
    log.close()


def test_a_server_error_in_production_shows_no_debug_page(production_server):
    # a session cookie makes the login check read the (missing) session table: a 500
    proxied = {"Host": "cardsort.example.org", "X-Forwarded-Proto": "https"}
    status, headers, body = _get(
        f"{production_server}/", {**proxied, "Cookie": f"sessionid={'x' * 32}"}
    )
    assert status == 500
    assert "Traceback" not in body and "DEBUG = True" not in body and "settings" not in body
    assert "Server Error (500)" in body
    # the answers carry the policy and HSTS; plain http is sent to https
    policy = headers["Content-Security-Policy"].split("; ")
    assert {"default-src 'self'", "script-src 'self'", "style-src 'self'"} <= set(policy)
    assert headers["Strict-Transport-Security"] == "max-age=31536000; includeSubDomains"
    status, headers, _ = _get(f"{production_server}/", {"Host": "cardsort.example.org"})
    assert (status, headers["Location"]) == (301, "https://cardsort.example.org/")


def test_the_api_rates_and_login_limits_come_from_the_environment(tmp_path):
    env = production_env(
        tmp_path, API_THROTTLE_USER="7/second", AXES_FAILURE_LIMIT="4", AXES_COOLOFF_MINUTES="30"
    )
    rates, limit, cool_off = settings_of(
        env, "REST_FRAMEWORK", "AXES_FAILURE_LIMIT", "AXES_COOLOFF_TIME"
    )
    assert "'user': '7/second'" in rates
    assert (limit, cool_off) == ("4", "datetime.timedelta(seconds=1800)")
