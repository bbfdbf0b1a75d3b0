"""docker-compose.yml, the Dockerfile and .env.example, checked by reading them (this machine
has no Docker engine; CI runs the same processes directly, scripts/smoke-e2e): no secret in
the files, every long-running service with a health check, named volumes only, a non-root
image with a HEALTHCHECK, and every variable the app is given read by config/settings.py."""

from __future__ import annotations

import re
from pathlib import Path

import yaml  # PyYAML, requirements-dev.txt

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
SERVICES = COMPOSE["services"]
APP_SERVICES = ["migrate", "web", "worker"]  # the image of this repo, with x-app's environment
INTERPOLATION = re.compile(r"\$\{(\w+)(?::?[-?][^}]*)?\}")
SECRETISH = re.compile(r"PASSWORD|SECRET|KEY|TOKEN", re.I)


def environment(service: dict) -> dict[str, str]:
    env = service.get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) for item in env)
    return {k: str(v) for k, v in env.items()}


def test_every_service_has_a_health_check_and_web_and_worker_check_themselves():
    for name, service in SERVICES.items():
        assert "healthcheck" in service, f"service {name} has no healthcheck"
        check = service["healthcheck"]
        if check.get("disable"):
            assert service.get("restart") == "no", f"{name}: only a one-shot may skip it"
            continue
        assert check["test"], f"service {name}: empty healthcheck test"
    assert SERVICES["web"]["healthcheck"]["test"][-2:] == ["scripts/healthcheck", "web"]
    assert SERVICES["worker"]["healthcheck"]["test"][-2:] == ["scripts/healthcheck", "worker"]
    for name in ("web", "worker"):
        needs = SERVICES[name]["depends_on"]
        assert needs["migrate"]["condition"] == "service_completed_successfully"
    # x-app's own depends_on is replaced by the service's (a merge key is shallow): the
    # database and the broker are waited for by migrate, which the others wait for
    assert set(SERVICES["migrate"]["depends_on"]) == {"db", "redis"}


def test_no_secret_is_written_in_the_compose_file():
    for name, service in SERVICES.items():
        for key, value in environment(service).items():
            if SECRETISH.search(key) and value:
                match = INTERPOLATION.fullmatch(value)
                assert match, f"{name}.{key} is a literal, not ${{...}} from .env"
                # an empty default (an optional key) is fine, a written-in one is not
                assert not re.search(r":-[^}]", value), f"{name}.{key} has a default: {value}"
            for user_password in re.findall(r"://[^:/@]+:([^@]+)@", value):
                assert INTERPOLATION.fullmatch(user_password), (
                    f"{name}.{key}: a password written in the URL: {user_password}"
                )
    assert "SECRET_KEY" in environment(SERVICES["web"])


def test_cookies_are_secure_by_default_and_debug_is_off():
    env = environment(SERVICES["web"])
    assert env["DEBUG"] == "0"
    for key in ("SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"):
        assert env[key] in ("1", f"${{{key}:-1}}"), f"{key} is not secure by default: {env[key]}"


def test_volumes_are_named_and_declared():
    declared = set(COMPOSE["volumes"])
    used = set()
    for name, service in SERVICES.items():
        for volume in service.get("volumes", []):
            source = volume.split(":", 1)[0] if isinstance(volume, str) else volume["source"]
            assert not source.startswith((".", "/", "~")), f"{name}: bind mount {source}"
            assert source in declared, f"{name}: volume {source} is not declared"
            used.add(source)
    assert {"pgdata", "media"} <= used
    assert used == declared


def test_every_variable_given_to_the_app_is_read_by_the_settings():
    settings_text = (ROOT / "config" / "settings.py").read_text()
    # dj_database_url.config() reads DATABASE_URL itself
    assert "dj_database_url.config(" in settings_text
    settings_text += '"DATABASE_URL"'
    for name in APP_SERVICES:
        for key in environment(SERVICES[name]):
            assert f'"{key}"' in settings_text, f"{name}.{key} is not read by config/settings.py"


def test_env_example_names_every_variable_the_compose_file_takes_from_env():
    text = (ROOT / "docker-compose.yml").read_text()
    wanted = set(INTERPOLATION.findall(text))
    required = set(re.findall(r"\$\{(\w+):\?", text))
    example = {}
    for line in (ROOT / ".env.example").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            example[key.strip()] = value.strip()
    assert wanted - {"CARDSORT_LLM_TIMEOUT"} <= set(example), wanted - set(example)
    for key in required:
        assert example[key].startswith("change-me") or key == "ALLOWED_HOSTS", (
            f".env.example gives {key} a value that looks real: {example[key]}"
        )
    for ignore in (".gitignore", ".dockerignore"):
        assert ".env" in (ROOT / ignore).read_text().split(), f"{ignore} does not leave out .env"


def dockerfile() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined and comments dropped."""
    text = re.sub(r"\\\n", " ", (ROOT / "Dockerfile").read_text())
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            instruction, _, args = line.partition(" ")
            out.append((instruction.upper(), args.strip()))
    return out


def test_the_image_runs_as_a_non_root_user_with_a_healthcheck():
    steps = dockerfile()
    users = [args for instruction, args in steps if instruction == "USER"]
    assert users, "the Dockerfile has no USER"
    last_user = users[-1].split(":")[0]
    assert last_user not in ("root", "0"), "the image runs as root"
    # the user is created in the image, and nothing runs as root after USER but the command
    assert any(instruction == "RUN" and last_user in args for instruction, args in steps)
    after_user = steps[[s for s, _ in steps].index("USER") :]
    assert not [a for i, a in after_user if i == "RUN"], "RUN after USER"
    checks = [args for instruction, args in steps if instruction == "HEALTHCHECK"]
    assert len(checks) == 1 and "scripts/healthcheck" in checks[0] and "web" in checks[0]
    assert (ROOT / "scripts" / "healthcheck").stat().st_mode & 0o111, "not executable"


def test_the_image_collects_its_static_files_with_a_key_the_settings_accept():
    # collectstatic runs with DEBUG=0, where a key under 50 characters stops the build
    runs = [args for instruction, args in dockerfile() if instruction == "RUN"]
    collect = next(args for args in runs if "collectstatic" in args)
    key = re.search(r"SECRET_KEY=(\"[^\"]*\"|\S+)", collect)[1]
    assert "secrets.token_urlsafe(50)" in key or len(key) >= 50, key
