"""The studies page's "New study" form in Chromium, by keyboard alone: a user allowed to
create studies names the study, its taxonomy preset and phase, and lands on the study they
now lead; a taken slug comes back named at its field with what was typed. No serious
accessibility violation on the page, with or without errors."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission

from annotation.models import Kind, Membership, Phase, Role, Study
from tests.browser.a11y import axe_violations
from tests.browser.pages import log_in
from tests.factories import make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def dora(db):
    user = make_user("dora")
    user.user_permissions.add(Permission.objects.get(codename="add_study"))
    return user


def focused(page) -> str:
    return page.evaluate("document.activeElement.name || document.activeElement.textContent")


def test_a_user_allowed_to_creates_a_study_with_the_keyboard_and_leads_it(
    browser, live_server, dora
):
    context, page, errors = log_in(browser, live_server, "dora")
    assert axe_violations(page) == []
    page.get_by_label("Slug").focus()
    page.keyboard.type("smells-2025")
    page.keyboard.press("Tab")
    assert focused(page) == "name"
    page.keyboard.type("Smells 2025")
    page.keyboard.press("Tab")
    assert focused(page) == "taxonomy"
    page.keyboard.type("agent")  # a closed select picks the option its name starts with
    page.keyboard.press("Tab")
    assert focused(page) == "phase"
    page.keyboard.type("open")
    page.keyboard.press("Tab")
    assert focused(page).strip() == "Create study"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/s/smells-2025/")
    assert "Study smells-2025 created; you lead it." in page.inner_text("ul.messages")
    study = Study.objects.get(slug="smells-2025")
    assert study.name == "Smells 2025" and study.phase == Phase.OPEN_SORT
    assert study.taxonomy_version.taxonomy.slug == "agent-misalignment"
    membership = Membership.objects.get(study=study, user=dora)
    assert (membership.role, membership.kind) == (Role.LEAD, Kind.EXPERT)
    assert errors == []
    context.close()


def test_a_taken_slug_is_named_at_its_field_and_nothing_typed_is_lost(browser, live_server, dora):
    make_study("pilot")
    context, page, errors = log_in(browser, live_server, "dora")
    page.get_by_label("Slug").fill("pilot")
    page.get_by_label("Name").fill("My pilot")
    page.get_by_label("Name").press("Enter")  # Enter in a field submits the form
    page.wait_for_url(f"{live_server.url}/studies/new/")
    form = page.locator("#new-study-form")
    assert "a study with slug 'pilot' already exists" in form.inner_text()
    assert page.get_by_label("Name").input_value() == "My pilot"
    assert axe_violations(page) == []
    assert Study.objects.count() == 1 and not Membership.objects.filter(user=dora).exists()
    assert errors == []
    context.close()


def test_a_user_not_allowed_to_sees_no_form(browser, live_server, alice):
    context, page, errors = log_in(browser, live_server, "alice")
    assert page.locator("#new-study-form").count() == 0
    assert "A lead adds you to one" in page.inner_text("main")
    assert errors == []
    context.close()
