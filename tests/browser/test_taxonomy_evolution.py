"""Taxonomy evolution in a browser: the lead merges and splits types, reads the confirmation
(what changes, how many labels move) and confirms with the keyboard; an annotator then
answers the split question on their own label with the keyboard alone."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, Kind, Role, Study, TaxonomyMove
from tests.browser.a11y import assert_no_serious_violations
from tests.browser.pages import log_in
from tests.factories import label, make_conversation, make_group, make_study, make_user

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def tab_to(page, selector: str, most: int = 200) -> None:
    for _ in range(most):
        page.keyboard.press("Tab")
        if page.evaluate("s => document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"Tab never reached {selector}")


@pytest.fixture
def world(alice, bob):
    study = make_study()
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD, Kind.EXPERT)
    group = make_group(study, "g1", [alice, bob])
    t1, t2 = make_conversation(study, "conv", n_turns=2, group=group).turns.all()
    label(t1, alice, "code_rollback")
    label(t1, bob, "must_do_omission")
    label(t2, alice, "must_not_violation")
    return study


def test_the_lead_merges_and_splits_and_confirms_after_reading_what_moves(
    browser, live_server, world
):
    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/s1/taxonomy/")
    assert_no_serious_violations(page, "taxonomy page")
    page.select_option('select[name="merge-must_do_omission"]', "A")
    page.select_option('select[name="merge-must_not_violation"]', "A")
    page.fill('input[name="merge-name-A"]', "Constraint violation")
    page.fill(
        'textarea[name="split-code_rollback"]',
        "Fix rollback: reintroduces a fixed defect\nFeature rollback: removes a working feature",
    )
    page.get_by_role("button", name="Review the changes").click()
    page.wait_for_selector("#evolve-summary")
    assert_no_serious_violations(page, "taxonomy confirmation")
    summary = page.inner_text("#evolve-summary")
    assert "Must-Do Omission (must_do_omission) + Must-Not Violation" in summary
    assert (
        "Code Rollback (code_rollback) → Fix rollback (fix_rollback) / Feature rollback" in summary
    )
    assert "3 current annotations carried" in page.inner_text("#count-annotations")
    assert "1 label of a split type on 1 card queued" in page.inner_text("#count-pending")
    # nothing happened yet
    assert Study.objects.get().taxonomy_version.number == 1 and not TaxonomyMove.objects.exists()
    # the confirm button has the focus: Enter confirms
    assert page.evaluate("document.activeElement.id") == "confirm-evolve"
    page.keyboard.press("Enter")
    page.wait_for_url(f"{live_server.url}/s/s1/taxonomy/")
    assert "The study moved to interaction-smells v2" in page.inner_text(".messages")
    assert Study.objects.get().taxonomy_version.number == 2
    assert errors == []
    context.close()


def test_an_annotator_answers_the_split_question_with_the_keyboard(
    browser, live_server, world, alice
):
    from annotation.evolution import evolve

    evolve(
        world,
        {"split": [{"code": "code_rollback",
                    "into": [{"name": "Fix rollback", "definition": "a fixed defect again"},
                             {"name": "Feature rollback", "definition": "a feature gone"}]}]},
    )  # fmt: skip
    context, page, errors = log_in(browser, live_server, "alice")
    page.goto(f"{live_server.url}/s/s1/")
    page.get_by_role("link", name="Taxonomy changes: 1 label of yours waits").click()
    page.wait_for_selector(".split-question")
    assert_no_serious_violations(page, "taxonomy changes page")
    assert "You labelled this card “Code Rollback”, now split" in page.inner_text(".split-question")
    tab_to(page, 'input[name="side-code_rollback"][value="feature_rollback"]')
    page.keyboard.press("Space")
    tab_to(page, ".split-question button[type=submit]")
    page.keyboard.press("Enter")
    page.wait_for_selector("#no-split-questions")
    row = Annotation.objects.get(annotator=alice, turn__index=1, is_current=True)
    assert {t.code for t in row.types.all()} == {"feature_rollback"}
    assert row.split_pending == ""
    assert errors == []
    context.close()


def test_accepting_a_proposal_shows_what_changes_and_enter_confirms(
    browser, live_server, world, alice
):
    from annotation.models import Proposal

    turn = world.conversations.get().turns.get(index=1)
    proposal = Proposal.propose(
        study=world,
        turn=turn,
        proposer=alice,
        name="Silent retry",
        definition="The reply retries without saying so.",
        reason="None fits.",
    )
    context, page, errors = log_in(browser, live_server, "lead")
    page.goto(f"{live_server.url}/s/s1/proposals/")
    page.get_by_role("button", name="Accept: review the new version").click()
    box = page.locator(f"#confirm-{proposal.pk}")
    box.wait_for()
    text = box.inner_text()
    assert "Accepting creates interaction-smells v2" in text
    assert "Added: Silent retry (silent_retry, in Proposed)" in text
    assert "No label moves" in text
    proposal.refresh_from_db()
    assert proposal.status == "pending" and Study.objects.get().taxonomy_version.number == 1
    # the confirm button has the focus after the swap: Enter confirms
    page.wait_for_function("() => document.activeElement.textContent.startsWith('Confirm: create')")
    page.keyboard.press("Enter")
    page.locator(f"#proposal-{proposal.pk}.accepted").wait_for()
    proposal.refresh_from_db()
    assert proposal.status == "accepted" and Study.objects.get().taxonomy_version.number == 2
    assert errors == []
    context.close()
