"""Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by Python
playwright (never `playwright install`: CI has no browser downloads)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

# The sync playwright API runs an event loop in the test thread; Django would refuse the
# test's own ORM calls there, though they are plain synchronous code.
os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser():
    # Fail, not skip: a skipped browser test in CI would look like a passing one.
    if not Path(CHROMIUM).exists():
        pytest.fail(
            f"Chromium not found at {CHROMIUM}; install it with "
            "`apt-get install -y chromium` (never `playwright install`)."
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


class _Requests:
    """Counts the requests the live server is serving (Django's request signals)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.serving = 0
        self.last = time.monotonic()

    def started(self, **kwargs):
        if threading.current_thread() is threading.main_thread():
            return  # the test's own client, not the live server
        with self.lock:
            self.serving += 1
            self.last = time.monotonic()

    def finished(self, **kwargs):
        if threading.current_thread() is threading.main_thread():
            return
        with self.lock:
            self.serving -= 1
            self.last = time.monotonic()

    def wait_quiet(self, quiet: float = 0.3, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                if self.serving <= 0 and time.monotonic() - self.last >= quiet:
                    return
            time.sleep(0.05)
        raise AssertionError(f"the live server still served {self.serving} request(s)")


@pytest.fixture(autouse=True)
def _live_server_quiet(request):
    """A browser test ends only when its pages are gone and the live server is idle.

    A page that goes away reports its card's time (static/js/timer.js, a beacon on
    pagehide). Served after the test, that request would hit a database being emptied for
    the next test (on PostgreSQL the flush then failed, and the next test found the last
    one's rows). So, before the database is emptied: every page still open leaves for
    about:blank (its beacon goes out while it lives), every context closes, and the server
    must have served everything and been idle for a moment."""
    if "live_server" not in request.fixturenames:
        yield
        return
    from django.core.signals import request_finished, request_started

    request.getfixturevalue("transactional_db")  # torn down (emptied) after this fixture
    requests = _Requests()
    request_started.connect(requests.started, dispatch_uid="live-server-quiet-start")
    request_finished.connect(requests.finished, dispatch_uid="live-server-quiet-finish")
    try:
        yield
        if "browser" in request.fixturenames:
            for context in list(request.getfixturevalue("browser").contexts):
                for page in context.pages:
                    try:
                        page.goto("about:blank")
                    except Exception:  # noqa: BLE001 - a crashed page has nothing to send
                        pass
                context.close()
        requests.wait_quiet()
    finally:
        request_started.disconnect(dispatch_uid="live-server-quiet-start")
        request_finished.disconnect(dispatch_uid="live-server-quiet-finish")


@pytest.fixture
def alice_page(browser, live_server, alice):
    """alice logged in; the test fails if her page logged a JavaScript error. Her context
    is closed by _live_server_quiet."""
    from tests.browser.pages import log_in

    _context, page, errors = log_in(browser, live_server, "alice")
    yield page
    assert errors == []
