"""PostgreSQL's JIT is off on the app's connections (config/settings.py): with it, the kept
queue's rebuild over tables not yet analyzed spent 1-2 s compiling a query that runs in a
millisecond (the access matrix's world took minutes on PostgreSQL)."""

from __future__ import annotations

import pytest
from django.db import connection

pytestmark = [pytest.mark.postgres, pytest.mark.django_db]


def test_the_apps_connections_run_without_jit():
    with connection.cursor() as cursor:
        cursor.execute("SHOW jit")
        assert cursor.fetchone()[0] == "off"
