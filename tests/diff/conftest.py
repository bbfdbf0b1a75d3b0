"""The browser tests of the diff use the suite's headless Chromium (tests/browser)."""

from __future__ import annotations

from tests.browser.conftest import browser  # noqa: F401  (a fixture, shared)
