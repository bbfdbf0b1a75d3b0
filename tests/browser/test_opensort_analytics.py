"""The open sort's analytics in Chromium, keyboard only: the lead reads the co-occurrence
and similarity matrices (scrollable regions the keyboard reaches, focus visible) and the
dendrogram, refreshes them through htmx, and a hostile tag name never runs; axe-core finds no
serious violation."""

from __future__ import annotations

import pytest

from annotation.models import FreeTag, TagSet
from tests.browser.a11y import assert_no_serious_violations, tab_through
from tests.browser.pages import htmx_ready, log_in
from tests.opensort.helpers import make_open_sort

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

HOSTILE = "<img src=x onerror='window.pwned = 1'><script>window.pwned = 2</script>"


def test_the_lead_reads_and_refreshes_the_analytics_with_the_keyboard(browser, live_server):
    w = make_open_sort()
    study, alice = w["study"], w["alice"]
    tag = FreeTag.objects.create(study=study, author=alice, name=HOSTILE)
    TagSet.objects.get(turn=w["turns"][2], annotator=alice).tags.add(tag)
    context, page, errors = log_in(browser, live_server, "lena")
    page.goto(f"{live_server.url}/s/{study.slug}/lead/board/analytics/")
    section = page.locator("#board-analytics")
    assert "4 cards sorted by 3 experts" in section.inner_text()
    assert page.locator("table.matrix.cooc th", has_text="onerror").count() == 2  # shown as text
    assert page.locator("figure.dendrogram svg text.leaf").count() == 4
    assert_no_serious_violations(page, "open-sort analytics")

    reached = tab_through(page)
    regions = [r for r in reached if r["tag"] == "div"]
    assert len(regions) == 2, reached  # both matrices scroll from the keyboard
    assert all(r["visible"] for r in reached), [r for r in reached if not r["visible"]]

    # a tag used on a card since the page loaded: Refresh (Enter) shows it, via htmx
    late = FreeTag.objects.create(study=study, author=w["bob"], name="late-tag")
    TagSet.objects.get(turn=w["turns"][1], annotator=w["bob"]).tags.add(late)
    htmx_ready(page, "#board-analytics button")
    page.get_by_role("button", name="Refresh").focus()
    page.keyboard.press("Enter")
    page.locator("table.matrix.cooc th", has_text="late-tag").first.wait_for()
    assert page.url.endswith("/lead/board/analytics/")  # swapped in place, no page load
    assert page.evaluate("window.pwned") is None
    assert errors == []
    context.close()
