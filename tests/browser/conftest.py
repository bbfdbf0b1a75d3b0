"""Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by Python
playwright (never `playwright install`: CI has no browser downloads)."""

from __future__ import annotations

import os
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


@pytest.fixture
def alice_page(browser, live_server, alice):
    """alice logged in; the test fails if her page logged a JavaScript error."""
    from tests.browser.pages import log_in

    context, page, errors = log_in(browser, live_server, "alice")
    yield page
    assert errors == []
    context.close()
