"""The issue's check: the demo study and a rich one (tests/backup/rich.py) dumped from one
database and loaded into a second, empty one (another SQLite file, or another PostgreSQL
database next to DATABASE_URL's), then every row of every study table compared, ids mapped
through natural keys, timestamps identical (tests/backup/canon.py). Each instance is its
own processes, with its own data folder, as two servers would be."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
SETUP = "import django; django.setup(); "


def _run(env: dict, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{args}: {done.stderr[-3000:]}"
    return done.stdout


@pytest.fixture
def instances(tmp_path):
    """Two empty migrated instances: (environment of the first, of the second)."""
    base = {k: v for k, v in os.environ.items() if k not in ("MEDIA_ROOT", "DATABASE_URL")}
    base["DJANGO_SETTINGS_MODULE"] = "config.settings"
    default = settings.DATABASES["default"]
    postgres = default["ENGINE"].endswith("postgresql")
    envs, names = [], []
    for n in (1, 2):
        data = tmp_path / f"instance{n}"
        data.mkdir()
        if postgres:
            # the server's database of DATABASE_URL, suffixed; pytest's own test database
            # is left alone
            name = f"{os.environ['DATABASE_URL'].rsplit('/', 1)[1]}{n}"
            names.append(name)
            url = f"{os.environ['DATABASE_URL'].rsplit('/', 1)[0]}/{name}"
        else:
            url = f"sqlite:///{data / 'db.sqlite3'}"
        envs.append({**base, "CARDSORT_DATA_DIR": str(data), "DATABASE_URL": url})
    if postgres:
        _psql(base, *(f"DROP DATABASE IF EXISTS {n}" for n in names), f"CREATE DATABASE {names[0]}")
    _run(envs[0], "manage.py", "migrate", "-v0")
    if postgres:  # the second instance: a copy of the first, empty and migrated
        _psql(base, f"CREATE DATABASE {names[1]} TEMPLATE {names[0]}")
    else:
        shutil.copy(tmp_path / "instance1" / "db.sqlite3", tmp_path / "instance2" / "db.sqlite3")
    yield envs
    if postgres:
        _psql(base, *(f"DROP DATABASE IF EXISTS {n}" for n in names))


def _psql(env: dict, *statements: str) -> None:
    import psycopg2

    url = os.environ["DATABASE_URL"].rsplit("/", 1)[0] + "/postgres"
    connection = psycopg2.connect(url)
    connection.autocommit = True
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)
    connection.close()


# each of its processes may take 600 s (_run) on a loaded machine
@pytest.mark.timeout(1800)
def test_demo_and_rich_study_load_identically_into_an_empty_instance(instances, tmp_path):
    source, target = instances
    _run(source, "manage.py", "demo")
    _run(source, "-c", SETUP + "from tests.backup.rich import build; build()")
    for slug in ("demo", "rich"):
        out = _run(source, "manage.py", "dump_study", slug, str(tmp_path / f"{slug}.gz"))
        assert f"dumped study {slug}" in out
        out = _run(target, "manage.py", "load_study", str(tmp_path / f"{slug}.gz"))
        assert f"loaded study {slug}" in out
    form = SETUP + "from tests.backup.canon import main; main(['demo', 'rich'])"
    before = json.loads(_run(source, "-c", form))
    after = json.loads(_run(target, "-c", form))
    assert before["demo"]["annotation.Turn"] and before["rich"]["annotation.Annotation"]
    for slug in ("demo", "rich"):
        for table, rows in before[slug].items():
            assert after[slug][table] == rows, f"{slug}: {table} differs"
    assert after == before
