"""After a decision the moderator goes on to the next escalated card, and the link says how
many escalated cards are left for them (the moderation queue shows it too); then to the
escalated episodes of the episode groups they moderate (issue 21), after the cards."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.models import CardState, Episode, EpisodeJudgement, Group, Source, Unit
from tests.factories import label, make_conversation, make_group, make_user

from .conftest import HTMX, url

pytestmark = pytest.mark.django_db


@pytest.fixture
def escalated(study, alice, bob, turns):
    """turns 1-3 escalated (no discussion round), the first longest waiting; 4 open."""
    study.discussion_rounds = 0
    study.save()
    for i, t in enumerate(turns[:3]):
        label(t, alice, "code_rollback")
        label(t, bob)
        when = timezone.now() - timedelta(hours=10 - i)
        CardState.objects.filter(turn=t).update(updated_at=when)
    return turns[:3]


def decide(client, study, turn, **headers):
    data = {"types": ["code_rollback"], "rationale": "the reply undoes the fix"}
    return client.post(url("decide", study, turn), data, **headers)


def test_after_a_decision_the_page_links_to_the_next_escalated_card(
    client, study, moderator, escalated
):
    client.force_login(moderator)
    r = decide(client, study, escalated[0], **HTMX)
    html = r.content.decode()
    assert r.status_code == 200
    link = (
        f'<a class="button" href="{url("next_escalated", study)}">Next escalated card (2 left)</a>'
    )
    assert link in html


def test_without_javascript_the_decision_leads_to_the_same_link(
    client, study, moderator, escalated
):
    client.force_login(moderator)
    r = decide(client, study, escalated[1])
    assert r.status_code == 302
    html = client.get(r["Location"]).content.decode()
    assert "Next escalated card (2 left)" in html


def test_the_last_decision_says_none_are_left(client, study, moderator, escalated):
    client.force_login(moderator)
    for t in escalated:
        r = decide(client, study, t, **HTMX)
    html = r.content.decode()
    assert "No escalated cards left for you." in html
    assert url("next_escalated", study) not in html


def test_next_opens_the_longest_waiting_escalated_card(client, study, moderator, escalated):
    client.force_login(moderator)
    r = client.get(url("next_escalated", study))
    group = escalated[0].conversation.groups.get()
    assert r["Location"] == url("discussion", study, escalated[0]) + f"?group={group.pk}"
    decide(client, study, escalated[0])
    r = client.get(url("next_escalated", study))
    assert r["Location"] == url("discussion", study, escalated[1]) + f"?group={group.pk}"


def test_next_with_none_left_goes_back_to_the_queue(client, study, moderator, turns):
    client.force_login(moderator)
    r = client.get(url("next_escalated", study), follow=True)
    assert r.redirect_chain[-1][0] == url("moderate_queue", study)
    assert "No escalated cards left for you." in r.content.decode()


def test_the_moderation_queue_shows_the_link_with_its_count(client, study, moderator, escalated):
    client.force_login(moderator)
    html = client.get(url("moderate_queue", study)).content.decode()
    assert f'href="{url("next_escalated", study)}">Next escalated card (3 left)</a>' in html


def test_the_count_leaves_out_other_moderators_groups_and_cards_i_annotate(
    client, study, lead, moderator, charlie, escalated
):
    other = make_group(study, "other", [charlie, lead])  # the lead annotates here
    t = make_conversation(study, "conv-o", n_turns=1, group=other).turns.get()
    label(t, charlie, "code_rollback")
    label(t, lead)
    assert CardState.objects.get(turn=t).status == "escalated"
    client.force_login(moderator)
    assert "(3 left)" in client.get(url("moderate_queue", study)).content.decode()
    client.force_login(lead)  # leads every group, but may not decide where they annotate
    assert "(3 left)" in client.get(url("moderate_queue", study)).content.decode()
    r = client.get(url("next_escalated", study))
    assert f"/cards/{escalated[0].pk}/discussion/" in r["Location"]


def test_an_annotator_has_no_next_escalated_card(client, study, alice, escalated):
    client.force_login(alice)
    r = client.get(url("next_escalated", study))
    assert r.status_code == 403 and "Leads and moderators only" in r.text


# -- escalated episodes (issue 21): after the cards, in session order ------------------------


@pytest.fixture
def escalated_episodes(study, moderator):
    """Two episodes of the episode group "eg" (moderated by "moderator"), escalated: its two
    annotators differ in round 1 and the study has no discussion round; a third agreed."""
    study.discussion_rounds = 0
    study.save()
    ea, eb = make_user("ea"), make_user("eb")
    eg = make_group(study, "eg", [ea, eb], moderator=moderator)
    Group.objects.filter(pk=eg.pk).update(unit=Unit.EPISODE)
    conversation = make_conversation(study, "conv-e", n_turns=3, group=eg)
    episodes = []
    for first in (1, 2, 3):
        e = Episode.objects.create(
            conversation=conversation, created_by=ea, first_turn=first, last_turn=first, goal="g"
        )
        for who, valid in ((ea, True), (eb, first == 3)):
            EpisodeJudgement.objects.create(
                episode=e, annotator=who, group=eg, valid=valid,
                invalid_reason="" if valid else "other",
                taxonomy_version=study.taxonomy_version, source=Source.BROWSER,
            )  # fmt: skip
        episodes.append(e)
    eg.refresh_from_db()
    return eg, episodes[:2]


def episode_url(study, episode, group) -> str:
    return reverse("episode_card", args=[study.slug, episode.pk]) + f"?group={group.pk}"


def test_with_no_escalated_card_next_opens_the_first_escalated_episode(
    client, study, moderator, turns, escalated_episodes
):
    group, (first, second) = escalated_episodes
    client.force_login(moderator)
    html = client.get(url("moderate_queue", study)).content.decode()
    assert "Next escalated card or episode (2 left)" in html
    assert client.get(url("next_escalated", study))["Location"] == episode_url(study, first, group)
    posted = {"valid": "0", "invalid_reason": "other", "rationale": "no evidence"}
    decide_url = reverse("episode_decide", args=[study.slug, first.pk]) + f"?group={group.pk}"
    assert client.post(decide_url, posted).status_code == 302
    assert client.get(url("next_escalated", study))["Location"] == episode_url(study, second, group)


def test_the_escalated_cards_come_first_and_the_count_says_episodes_too(
    client, study, moderator, escalated, escalated_episodes
):
    client.force_login(moderator)
    html = client.get(url("moderate_queue", study)).content.decode()
    assert (
        f'href="{url("next_escalated", study)}">Next escalated card or episode (5 left)</a>' in html
    )
    r = client.get(url("next_escalated", study))
    assert f"/cards/{escalated[0].pk}/discussion/" in r["Location"]
    html = decide(client, study, escalated[0], **HTMX).content.decode()
    assert "Next escalated card or episode (4 left)" in html


def test_no_one_is_led_to_an_episode_they_may_not_decide(
    client, study, lead, charlie, escalated_episodes
):
    group, (first, _) = escalated_episodes
    other = make_group(study, "other", [charlie], moderator=make_user("mo2"))
    client.force_login(other.moderator)  # moderates another group only
    r = client.get(url("next_escalated", study), follow=True)
    assert r.redirect_chain[-1][0] == url("moderate_queue", study)
    client.force_login(lead)  # a lead decides every group's
    assert client.get(url("next_escalated", study))["Location"] == episode_url(study, first, group)
    group.annotators.add(lead)  # not one where they judge
    r = client.get(url("next_escalated", study), follow=True)
    assert r.redirect_chain[-1][0] == url("moderate_queue", study)
