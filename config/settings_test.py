"""The test suite's settings (pytest.ini): config.settings as a development run has them, with
DEBUG on at import unless the environment says otherwise (the development key; no HTTPS
redirect, no Secure cookies over the test client's plain HTTP). pytest-django still runs each
test with DEBUG off. A process a test starts inherits this module and DEBUG=1 unless its
environment says otherwise; the production settings are tested in processes started with the
production environment (tests/security/test_production_settings.py)."""

import os

os.environ.setdefault("DEBUG", "1")

from config.settings import *  # noqa: E402, F403
