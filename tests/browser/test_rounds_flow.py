"""The whole path of the rounds in a browser, with alice, bob and their moderator: a card
both tag alike is unanimous; a card they tag differently is discussed and one revises, so it
becomes `discussion`; a third stays different, is escalated, and the moderator decides it."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Consensus
from tests.browser.test_annotate_flow import log_in, submit_with_enter
from tests.factories import make_conversation, make_group, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# hotkeys of the interaction-smells preset
AMBIGUOUS, OMISSION = "1", "3"


def htmx_ready(page, selector: str) -> None:
    """Wait until htmx has wired up `selector` (a form just swapped in): a key pressed
    before that would submit the form natively, as a full page load."""
    page.wait_for_function(
        "s => document.querySelector(s)?.['htmx-internal-data']?.initHash", arg=selector
    )


def label_card(page, key: str) -> None:
    htmx_ready(page, "#card form")
    page.keyboard.press(key)
    if page.locator("[data-nav=next]").count():
        submit_with_enter(page)
    else:  # the last card: the queue's "all done" page follows
        page.keyboard.press("Enter")
        page.wait_for_url("**/queue/")


def open_discussion(page, base: str, turn) -> None:
    page.goto(f"{base}/s/s1/cards/{turn.pk}/discussion/")
    page.wait_for_selector("#discussion")


def save_round_2(page) -> None:
    """Click save and wait for htmx to swap in the new #discussion (no page load)."""
    htmx_ready(page, "#revise")
    page.evaluate("document.querySelector('#discussion').dataset.stale = '1'")
    page.get_by_role("button", name="Save labels for round 2").click()
    page.wait_for_function("() => !document.querySelector('#discussion').dataset.stale")
    assert page.locator("#discussion .errorlist").count() == 0


def test_it_plays_the_rounds_from_round_1_to_the_moderators_word(
    browser, live_server, study, alice, bob
):
    moderator = make_user("moderator")
    group = make_group(study, "A", annotators=[alice, bob], moderator=moderator)
    t1, t2, t3 = (
        make_conversation(study, f"c{i}", n_turns=1, group=group).turns.get() for i in (1, 2, 3)
    )
    base = live_server.url

    # Round 1, blind: alice tags all three "ambiguous"; bob agrees on the first only.
    alice_ctx, alice_page, alice_errors = log_in(browser, live_server, "alice")
    alice_page.goto(f"{base}/s/s1/queue/")
    for _ in range(3):
        label_card(alice_page, AMBIGUOUS)
    bob_ctx, bob_page, bob_errors = log_in(browser, live_server, "bob")
    bob_page.goto(f"{base}/s/s1/queue/")
    for key in (AMBIGUOUS, OMISSION, OMISSION):
        label_card(bob_page, key)
    round_1 = {
        (a.pk, a.annotator.username, a.turn_id, a.codes)
        for a in Annotation.objects.filter(round=1).select_related("annotator")
    }
    assert len(round_1) == 6

    # Card 2: bob finds it in his queue, says why; alice reads it, revises; bob confirms.
    bob_page.goto(f"{base}/s/s1/discuss/")
    assert bob_page.locator(f'#your-turn tr[data-turn-id="{t2.pk}"]').count() == 1
    assert bob_page.locator(f'#your-turn tr[data-turn-id="{t3.pk}"]').count() == 1
    bob_page.locator(f'#your-turn tr[data-turn-id="{t2.pk}"] a').click()
    bob_page.wait_for_selector("#discussion")
    bob_page.fill("#thread textarea[name=text]", "The reply leaves out the required tests.")
    htmx_ready(bob_page, "#thread form")
    bob_page.get_by_role("button", name="Send comment").click()
    bob_page.wait_for_selector('#thread li.comment[data-author="bob"]')

    open_discussion(alice_page, base, t2)
    comment = alice_page.locator('#thread li.comment[data-author="bob"]')
    assert "The reply leaves out the required tests." in comment.inner_text()
    assert 'data-code="must_do_omission"' in alice_page.inner_html(
        '#rounds td[data-annotator="bob"]'
    )
    # prefilled with her round-1 labels; she swaps them by key
    assert alice_page.locator('#revise input[value="ambiguous_instruction"]').is_checked()
    alice_page.click("#state")
    alice_page.keyboard.press(AMBIGUOUS)
    alice_page.keyboard.press(OMISSION)
    assert alice_page.locator('#revise input[value="must_do_omission"]').is_checked()
    assert not alice_page.locator('#revise input[value="ambiguous_instruction"]').is_checked()
    save_round_2(alice_page)

    open_discussion(bob_page, base, t2)
    assert bob_page.locator('#revise input[value="must_do_omission"]').is_checked()
    save_round_2(bob_page)  # confirms his own labels
    assert bob_page.get_attribute("#consensus", "data-method") == "discussion"

    # Card 3: both confirm their own labels: escalated to the moderator.
    for page in (alice_page, bob_page):
        open_discussion(page, base, t3)
        save_round_2(page)
    assert bob_page.get_attribute("#discussion", "data-status") == "escalated"

    mod_ctx, mod_page, mod_errors = log_in(browser, live_server, "moderator")
    mod_page.goto(f"{base}/s/s1/moderate/")
    row = mod_page.locator(f'#queue tr[data-turn-id="{t3.pk}"]')
    assert row.get_attribute("data-status") == "escalated"
    assert mod_page.locator("#queue tbody tr[data-turn-id]").count() == 1
    # a second tab on the same card, left open while the first one decides
    stale_tab = mod_ctx.new_page()
    open_discussion(stale_tab, base, t3)
    row.locator("a").click()
    mod_page.wait_for_selector("#decide")
    mod_page.check('#decide input[value="must_do_omission"]')
    mod_page.fill("#decide textarea[name=rationale]", "Tests were required and are missing.")
    htmx_ready(mod_page, "#decide")
    mod_page.get_by_role("button", name="Decide").click()
    mod_page.wait_for_selector('#consensus[data-method="moderator"]')
    assert "by moderator" in mod_page.inner_text("#consensus")
    # deciding again from the stale tab changes nothing and says so (a 409 swapped in)
    stale_tab.check('#decide input[name="no_smell"]')
    stale_tab.fill("#decide textarea[name=rationale]", "late")
    htmx_ready(stale_tab, "#decide")
    stale_tab.get_by_role("button", name="Decide").click()
    stale_tab.wait_for_selector("#decide .errorlist")
    assert "already has a consensus (moderator, by moderator" in stale_tab.inner_text("#decide")
    assert stale_tab.get_attribute("#consensus", "data-method") == "moderator"

    assert alice_errors == [] and bob_errors == [] and mod_errors == []
    consensus = {c.turn_id: c for c in Consensus.objects.select_related("decided_by")}
    assert {t: (c.method, c.codes) for t, c in consensus.items()} == {
        t1.pk: ("unanimous", frozenset({"ambiguous_instruction"})),
        t2.pk: ("discussion", frozenset({"must_do_omission"})),
        t3.pk: ("moderator", frozenset({"must_do_omission"})),
    }
    assert consensus[t3.pk].decided_by == moderator
    assert consensus[t3.pk].rationale == "Tests were required and are missing."
    assert consensus[t1.pk].decided_by is None and consensus[t2.pk].decided_by is None
    # round 1 untouched: the same rows, the same labels, still current
    after = {
        (a.pk, a.annotator.username, a.turn_id, a.codes)
        for a in Annotation.objects.filter(round=1, is_current=True).select_related("annotator")
    }
    assert after == round_1
    assert Annotation.objects.filter(round=2).count() == 4

    for ctx in (alice_ctx, bob_ctx, mod_ctx):
        ctx.close()
