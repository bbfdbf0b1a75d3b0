"""Splitting from the lead's conversation page: "Split before turn N" shows the parts for
confirmation and changes nothing until confirmed; the parts and the original link both ways;
undo; split proposals applied or dismissed; the LLM button, or why it is off. Every action
a POST with CSRF, for leads only (403 with the reason for members, 404 for outsiders)."""

from __future__ import annotations

from unittest import mock

import pytest
from django.test import Client
from django.urls import reverse

from annotation.intake.splitting import split
from annotation.models import Conversation, Job, JobKind, SetAside, SplitProposal
from tests.factories import make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def lead_client(client, lead):
    client.force_login(lead)
    return client


@pytest.fixture
def c1(study):
    return make_conversation(study, "c1", n_turns=5)


def page_url(conversation) -> str:
    return reverse("lead_conversation", args=[conversation.study.slug, conversation.pk])


def split_url(conversation) -> str:
    return reverse("lead_split", args=[conversation.study.slug, conversation.pk])


def unsplit_url(conversation) -> str:
    return reverse("lead_unsplit", args=[conversation.study.slug, conversation.pk])


def test_each_turn_but_the_first_has_a_split_button(lead_client, c1):
    page = lead_client.get(page_url(c1)).text
    assert f'<form id="split-form" method="post" action="{split_url(c1)}">' in page
    for k in range(2, 6):
        assert f'form="split-form" name="before" value="{k}"' in page
        assert f"Split before turn {k}</button>" in page
    assert "Split before turn 1<" not in page


def test_the_confirmation_names_the_turns_of_each_part_and_changes_nothing(lead_client, c1):
    response = lead_client.post(split_url(c1), {"before": ["4", "2"]})
    assert response.status_code == 200
    text = response.text
    assert "Split c1 into 3 conversations?" in text
    assert "<strong>c1#1</strong>: the original's turn 1</li>" in text
    assert "<strong>c1#2</strong>: the original's turns 2-3</li>" in text
    assert "<strong>c1#3</strong>: the original's turns 4-5</li>" in text
    assert Conversation.objects.count() == 1
    # the confirm button sends exactly those points
    confirm = text.split('id="split-preview"')[1].split("</form>")[0]
    assert confirm.count('name="before"') == 2 and 'name="confirm" value="1"' in confirm


def test_confirming_splits_and_links_parts_and_original_both_ways(lead_client, c1):
    response = lead_client.post(split_url(c1), {"before": "3", "confirm": "1"}, follow=True)
    assert "Split c1 into 2 parts (c1#1: turns 1-2; c1#2: turns 3-5)." in response.text
    parts = list(c1.split_parts.order_by("split_first_turn"))
    assert [p.external_id for p in parts] == ["c1#1", "c1#2"]
    c1.refresh_from_db()
    assert c1.set_aside == SetAside.SPLIT
    # the original's page: its parts, undo, no split buttons any more
    page = response.text
    for part, turns in zip(parts, ["turns 1-2", "turns 3-5"], strict=True):
        assert f'<a href="{page_url(part)}">{part.external_id}</a>: {turns}' in page
    assert f'action="{unsplit_url(c1)}"' in page
    assert "Undo the split (deletes c1#1, c1#2)" in page
    assert 'form="split-form"' not in page
    # a part's page: its original
    part_page = lead_client.get(page_url(parts[1])).text
    assert f'the original <a href="{page_url(c1)}">c1</a>, its turns 3-5.' in part_page


def test_a_refused_split_says_why_and_changes_nothing(lead_client, c1, study, alice):
    Conversation.objects.filter(pk=c1.pk).assign(make_group(study, "g1", [alice]))
    page = lead_client.get(page_url(c1)).text
    assert "Not splittable: Cannot split c1: c1 is assigned to group &#x27;g1&#x27;" in page
    assert 'form="split-form"' not in page
    response = lead_client.post(split_url(c1), {"before": "3", "confirm": "1"}, follow=True)
    assert "c1 is assigned to group &#x27;g1&#x27;" in response.text
    assert Conversation.objects.count() == 1


def test_a_point_out_of_range_is_refused(lead_client, c1):
    response = lead_client.post(split_url(c1), {"before": "9", "confirm": "1"}, follow=True)
    assert "Cannot split before turn 9: a split point must be a turn from 2 to 5" in response.text
    assert Conversation.objects.count() == 1


def test_undo_from_the_page(lead_client, c1):
    split(c1, [3])
    response = lead_client.post(unsplit_url(c1), follow=True)
    assert "Undid the split of c1: its 2 parts are deleted" in response.text
    assert Conversation.objects.count() == 1
    c1.refresh_from_db()
    assert c1.set_aside == SetAside.NO
    again = lead_client.post(unsplit_url(c1), follow=True)
    assert "c1 is not split: there is nothing to undo." in again.text


def test_proposals_are_applied_through_the_confirmation_or_dismissed(lead_client, c1):
    keep = SplitProposal.objects.create(conversation=c1, turn_index=4, reason="SQL now")
    drop = SplitProposal.objects.create(conversation=c1, turn_index=2, reason="not really")
    page = lead_client.get(page_url(c1)).text
    assert (
        'Before turn <a href="#turn-4">4</a> <span class="muted">(llm, open)</span>: SQL now'
        in page
    )
    assert 'form="split-form" name="before" value="4">Apply: split before turn 4' in page

    dismiss = reverse("lead_split_dismiss", args=[c1.study.slug, drop.pk])
    response = lead_client.post(dismiss, follow=True)
    assert "Dismissed the split before turn 2." in response.text
    drop.refresh_from_db()
    assert drop.status == SplitProposal.Status.DISMISSED

    preview = lead_client.post(split_url(c1), {"before": "4"}).text
    assert "(proposed: SQL now)" in preview
    lead_client.post(split_url(c1), {"before": "4", "confirm": "1"})
    keep.refresh_from_db()
    assert keep.status == SplitProposal.Status.APPLIED
    assert [p.n_turns for p in c1.split_parts.order_by("split_first_turn")] == [3, 2]


def test_without_configuration_the_llm_feature_says_it_is_off(lead_client, c1, settings):
    settings.CARDSORT_LLM_BASE_URL = ""
    settings.CARDSORT_LLM_MODEL = ""
    page = lead_client.get(page_url(c1)).text
    assert "LLM split proposals are off: set CARDSORT_LLM_BASE_URL and CARDSORT_LLM_MODEL" in page
    assert "Ask the LLM" not in page
    ask = reverse("lead_split_ask", args=[c1.study.slug])
    response = lead_client.post(ask, {"conversation": c1.pk}, follow=True)
    assert "LLM split proposals are off" in response.text
    assert not Job.objects.exists()


def test_asking_the_llm_queues_a_split_job(
    lead_client, c1, study, settings, django_capture_on_commit_callbacks
):
    settings.CARDSORT_LLM_BASE_URL = "http://127.0.0.1:9/v1"
    settings.CARDSORT_LLM_MODEL = "m"
    c2 = make_conversation(study, "c2", n_turns=3)
    other_study = make_conversation(make_study("s2"), "x")
    page = lead_client.get(page_url(c1)).text
    assert "Ask the LLM where the topic changes" in page
    ask = reverse("lead_split_ask", args=[study.slug])
    with mock.patch("annotation.views.split.run_split_proposals.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            response = lead_client.post(ask, {"conversation": [c1.pk, c2.pk, other_study.pk]})
    assert response.status_code == 302 and response["Location"].endswith("/lead/browse/")
    job = Job.objects.get()
    assert job.kind == JobKind.SPLIT
    assert job.params == {"conversations": [c1.pk, c2.pk]}  # not another study's
    delay.assert_called_once_with(job.pk)
    # the job shows on the conversation page
    assert f'id="job-{job.pk}"' in lead_client.get(page_url(c1)).text
    browse = lead_client.get(reverse("lead_browse", args=[study.slug])).text
    assert "in the 2 conversations of this page" in browse


def actions(conversation, proposal) -> list[str]:
    slug = conversation.study.slug
    return [
        split_url(conversation),
        unsplit_url(conversation),
        reverse("lead_split_ask", args=[slug]),
        reverse("lead_split_dismiss", args=[slug, proposal.pk]),
    ]


@pytest.mark.parametrize("username, status", [("alice", 403), ("bob", 403), ("charlie", 404)])
def test_annotators_moderators_and_outsiders_cannot_split(client, study, c1, username, status):
    """alice annotates, bob moderates: told "Leads only"; charlie is no member: a 404."""
    alice, bob = make_user("alice"), make_user("bob")
    make_group(study, "g1", [alice], moderator=bob)
    proposal = SplitProposal.objects.create(conversation=c1, turn_index=3)
    client.force_login(make_user(username))
    for url in actions(c1, proposal):
        response = client.post(url, {"before": "3", "confirm": "1", "conversation": c1.pk})
        assert response.status_code == status, url
        if status == 403:
            assert "Leads only" in response.text
    assert client.get(page_url(c1)).status_code == status
    assert Conversation.objects.count() == 1 and not Job.objects.exists()
    proposal.refresh_from_db()
    assert proposal.status == SplitProposal.Status.OPEN


def test_anonymous_users_are_sent_to_log_in(client, c1):
    proposal = SplitProposal.objects.create(conversation=c1, turn_index=3)
    for url in actions(c1, proposal):
        response = client.post(url, {"before": "3", "confirm": "1"})
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_actions_are_post_only_and_need_the_csrf_token(lead, c1):
    proposal = SplitProposal.objects.create(conversation=c1, turn_index=3)
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    for url in actions(c1, proposal):
        assert client.get(url).status_code == 405, url
        assert client.post(url, {"before": "3", "confirm": "1"}).status_code == 403, url
    assert Conversation.objects.count() == 1


def test_another_studys_conversation_is_not_found(lead_client, c1):
    elsewhere = make_conversation(make_study("s2"), "x", n_turns=3)
    url = reverse("lead_split", args=["s1", elsewhere.pk])
    assert lead_client.post(url, {"before": "2", "confirm": "1"}).status_code == 404
    assert not elsewhere.split_parts.exists()
