"""The lead's members page in a browser: invite two people from a pasted list, one of them
follows the mailed link, sets a password and lands in the study; the lead then moves an
annotator between groups and is refused, with the reason, once she has labelled. The page
has no keyboard hints of its own: its forms are plain controls, driven here by the keyboard
(Tab to a control, type, Enter)."""

from __future__ import annotations

import re

import pytest
from django.core import mail

from tests.browser.test_annotate_flow import log_in
from tests.factories import label, make_conversation, make_group

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_invites_and_the_invited_sets_a_password(browser, live_server, study, lead):
    group = make_group(study, "Students A")
    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/s1/members/")
    page.focus("#id_people")
    page.keyboard.type("dana, dana@lab.org")
    page.keyboard.press("Enter")
    page.keyboard.type("Eve Moss <eve@lab.org>")
    page.select_option('select[name="group"]', str(group.pk))
    page.focus('#invite button[type="submit"]')
    page.keyboard.press("Enter")
    page.wait_for_selector(".messages li.success")
    assert "Invited 2 (2 new accounts): dana, eve" in page.inner_text(".messages")
    assert page.locator("#member-" + str(group.annotators.get(username="dana").pk)).count() == 1

    link = re.search(r"http://\S+/accounts/invitation/\S+/", mail.outbox[0].body)[0]
    guest = browser.new_context()
    invited = guest.new_page()
    invited.goto(link)
    assert "invites you to the study" in invited.inner_text("main")
    invited.focus('input[name="new_password1"]')
    invited.keyboard.type("a-long-secret-1")
    invited.keyboard.press("Tab")
    invited.keyboard.type("a-long-secret-1")
    invited.keyboard.press("Enter")
    invited.wait_for_url(f"{live_server.url}/s/s1/")
    assert "Welcome, dana" in invited.inner_text(".messages")
    invited.goto(link)
    assert "Invitation already used" in invited.inner_text("h1")
    guest.close()
    assert errors == []
    context.close()


def test_a_lead_moves_an_annotator_until_she_has_labelled(browser, live_server, study, lead, alice):
    a, b = make_group(study, "A", [alice]), make_group(study, "B")
    turn = make_conversation(study, "c1", group=a).turns.first()
    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/s1/members/")
    move = page.locator(f"#seats-{a.pk} form").first
    move.locator("select").select_option(str(b.pk))
    move.locator("button").focus()
    page.keyboard.press("Enter")
    page.wait_for_selector(".messages li.success")
    assert "alice is moved to B" in page.inner_text(".messages")
    assert "alice" in page.inner_text(f"#seats-{b.pk}")

    label(make_conversation(study, "c2", group=b).turns.first(), alice, "code_rollback")
    move = page.locator(f"#seats-{b.pk} form").first
    move.locator("select").select_option(str(a.pk))
    move.locator("button").click()
    page.wait_for_selector(".messages li.error")
    assert "has labelled 1 card of group 'B'" in page.inner_text(".messages")
    assert "alice" in page.inner_text(f"#seats-{b.pk}")
    assert turn.annotations.count() == 0
    assert errors == []
    context.close()
