"""The test suite's settings (pytest.ini): config.settings as a development run has them, with
DEBUG on at import unless the environment says otherwise (the development key; no HTTPS
redirect, no Secure cookies over the test client's plain HTTP). pytest-django still runs each
test with DEBUG off. A process a test starts inherits this module and DEBUG=1 unless its
environment says otherwise; the production settings are tested in processes started with the
production environment (tests/security/test_production_settings.py).

Under pytest-xdist (`make test-fast`) each worker process gets a data folder of its own,
CARDSORT_DATA_DIR/<worker id> (gw0, gw1, ...): the filesystem broker's queue, the SQLite test
database and the uploads live there, so a Celery worker one test starts never takes a job
another worker's test queued. The environment carries the folder to the processes a test
starts (they inherit it, and do not nest it again)."""

import os
import sys
from pathlib import Path

os.environ.setdefault("DEBUG", "1")

_worker = os.environ.get("PYTEST_XDIST_WORKER")
if _worker and "_pytest" in sys.modules:
    _root = Path(__file__).resolve().parent.parent
    _base = Path(os.environ.get("CARDSORT_DATA_DIR", _root / "var"))
    if _base.name != _worker:
        os.environ["CARDSORT_DATA_DIR"] = str(_base / _worker)

from config.settings import *  # noqa: E402, F403
