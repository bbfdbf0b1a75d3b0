"""A conversation set aside by a sample (or a split) is out of the study's set: nothing
assigns it to a group, whether at random, by selection or as a calibration set."""

from __future__ import annotations

from django.urls import reverse

from annotation.intake.sampling import draw_sample
from annotation.models import Conversation, SetAside
from tests.factories import make_conversation, make_group


def _sampled(study, n_total: int = 10, n: int = 4):
    for i in range(n_total):
        make_conversation(study, f"c{i}", n_turns=2)
    draw_sample(study, n=n, seed=1)
    rows = Conversation.objects.filter(study=study)
    return rows.in_set(), rows.filter(set_aside=SetAside.SAMPLE)


def _assign(client, study, **data):
    client.login(username="lead", password="pw-secret")
    return client.post(reverse("lead_assign", args=[study.slug]), data, follow=True)


def test_unassigned_leaves_set_aside_conversations_out(study):
    drawn, aside = _sampled(study)
    unassigned = Conversation.objects.filter(study=study).unassigned()
    assert set(unassigned) == set(drawn)
    assert not unassigned.filter(pk__in=aside).exists()


def test_assigning_at_random_draws_only_from_the_set(client, study, lead):
    drawn, aside = _sampled(study)
    group = make_group(study, "G1")
    page = _assign(client, study, how="count", group=group.pk, count=5, seed=1).content.decode()
    assert "Asked for 5 conversations but only 4 are unassigned." in page
    _assign(client, study, how="count", group=group.pk, count=4, seed=1)
    assert set(group.conversations.all()) == set(drawn)


def test_assigning_a_selection_leaves_set_aside_ones_out_and_says_so(client, study, lead):
    drawn, aside = _sampled(study)
    group = make_group(study, "G1")
    chosen = [drawn[0].pk, aside[0].pk, aside[1].pk]
    page = _assign(client, study, how="selection", group=group.pk, conversation=chosen)
    text = page.content.decode()
    assert "Assigned 1 selected conversations to G1." in text
    assert "2 set-aside conversations were left out (not in the study&#x27;s set)." in text
    assert list(group.conversations.all()) == [drawn[0]]


def test_a_calibration_set_leaves_set_aside_ones_out(client, study, lead):
    drawn, aside = _sampled(study)
    g1, g2 = make_group(study, "G1"), make_group(study, "G2")
    chosen = [drawn[0].pk, aside[0].pk]
    page = _assign(client, study, how="calibration", group=[g1.pk, g2.pk], conversation=chosen)
    assert "1 set-aside conversations were left out" in page.content.decode()
    assert list(g1.conversations.all()) == list(g2.conversations.all()) == [drawn[0]]


def test_the_conversations_page_counts_the_set_aside(client, study, lead):
    _sampled(study)
    client.login(username="lead", password="pw-secret")
    page = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert "<strong>4</strong> unassigned" in page
    assert "<strong>0</strong> assigned" in page
    assert "<strong>6</strong> set aside" in page
