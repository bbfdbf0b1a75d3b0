from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import label, make_conversation, make_group

pytestmark = pytest.mark.django_db


@pytest.fixture
def groups(study, alice, bob, charlie):
    g1 = make_group(study, "Students A", [alice, bob])
    g2 = make_group(study, "Students B", [charlie])
    c1 = make_conversation(study, "c1", n_turns=3, group=g1)
    make_conversation(study, "c2", n_turns=2, group=g2)
    t1, t2, _ = c1.turns.all()
    label(t1, alice)
    label(t1, bob)  # agreed
    label(t2, alice, "code_rollback")
    label(t2, bob)  # disputed
    return g1, g2


def test_the_lead_sees_cards_per_state_for_each_group(client, study, lead, groups):
    client.force_login(lead)
    r = client.get(reverse("study", args=[study.slug]))
    rows = {row["group"].name: row for row in r.context["progress"]}
    assert {k: rows["Students A"][k] for k in ("cards", "open", "disputed", "agreed")} == {
        "cards": 3,
        "open": 1,
        "disputed": 1,
        "agreed": 1,
    }
    assert (rows["Students B"]["cards"], rows["Students B"]["open"]) == (2, 2)
    assert "Progress per group" in r.content.decode()


def test_an_annotator_sees_only_their_own_progress(client, study, alice, groups):
    client.force_login(alice)
    r = client.get(reverse("study", args=[study.slug]))
    html = r.content.decode()
    assert "Progress per group" not in html and "Students B" not in html
    assert "2 of 3 cards labelled" in html


def test_the_study_page_costs_the_same_queries_as_groups_fill_up(client, study, lead, groups):
    client.force_login(lead)
    url = reverse("study", args=[study.slug])
    with CaptureQueriesContext(connection) as small:
        client.get(url)
    g1, _ = groups
    for i in range(30):
        make_conversation(study, f"more-{i}", n_turns=2, group=g1)
    with CaptureQueriesContext(connection) as big:
        client.get(url)
    assert len(big) == len(small)


def test_the_study_page_points_annotators_to_their_discussions(client, study, alice, groups):
    client.force_login(alice)
    r = client.get(reverse("study", args=[study.slug]))
    assert r.context["to_discuss"] == 1
    assert "To discuss (1 waiting for you)" in r.content.decode()
    assert not r.context["moderates"]


def test_moderators_and_leads_get_the_moderation_queue(client, study, lead, groups):
    client.force_login(lead)
    r = client.get(reverse("study", args=[study.slug]))
    assert r.context["moderates"]
    assert reverse("moderate_queue", args=[study.slug]) in r.content.decode()


def test_the_lead_menu_links_every_lead_page(client, study, lead, groups):
    """Issue 20, defect 8: Browse, Sample, Coding filter and Study gold are linked from the
    study page, and the board once a group is in the open sort."""
    from annotation.models import Group, Phase

    client.force_login(lead)
    html = client.get(reverse("study", args=[study.slug])).content.decode()
    for name in ("lead_browse", "lead_sample", "lead_filter", "lead_gold"):
        assert f'href="{reverse(name, args=[study.slug])}"' in html, name
    board = f'href="{reverse("board", args=[study.slug])}"'
    assert board not in html  # no open sort in this study
    Group.objects.filter(pk=groups[0].pk).update(phase=Phase.OPEN_SORT)
    assert board in client.get(reverse("study", args=[study.slug])).content.decode()


def test_a_set_aside_conversation_is_not_listed_as_unassigned(client, study, lead):
    from annotation.models import Conversation, SetAside

    make_conversation(study, "original", n_turns=2)
    Conversation.objects.filter(external_id="original").update(set_aside=SetAside.SPLIT)
    client.force_login(lead)
    for page in ("lead_conversations", "lead_browse"):
        html = client.get(reverse(page, args=[study.slug])).content.decode()
        row = html[html.index(">original<") :]
        row = row[: row.index("</tr>")]
        assert "unassigned" not in row, page
        assert "set aside" in row and SetAside.SPLIT.label in row, page
