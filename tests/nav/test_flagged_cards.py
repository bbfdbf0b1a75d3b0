"""The lead's list of flagged cards: card, conversation, turn, annotator, reason, when, and
whether the annotator has labelled it since; never anyone's labels."""

from __future__ import annotations

import pytest

from annotation.models import CardSkip, SkipKind
from tests.factories import label, make_conversation, make_user

from .conftest import url

pytestmark = pytest.mark.django_db


def put_off(turn, user, reason="", kind=SkipKind.FLAG):
    return CardSkip.objects.create(turn=turn, annotator=user, kind=kind, reason=reason)


def test_the_lead_sees_the_flags_and_whether_they_were_labelled(
    client, study, lead, alice, bob, turns
):
    put_off(turns[0], alice, "Is a refusal a smell?")
    put_off(turns[2], bob, "<script>alert(1)</script>")
    put_off(turns[1], bob, kind=SkipKind.SKIP)  # a skip is not a flag
    label(turns[0], alice, "code_rollback", note="alice-secret-note")
    client.force_login(lead)
    r = client.get(url("lead_flags", study))
    html = r.content.decode()
    assert r.status_code == 200
    rows = {(f.annotator.username, f.turn.index): f for f in r.context["page"]}
    assert set(rows) == {("alice", 1), ("bob", 3)}
    assert rows["alice", 1].labelled and not rows["bob", 3].labelled
    assert "Is a refusal a smell?" in html and "conv-a" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert" not in html
    assert "labelled" in html and "not labelled yet" in html
    # never anyone's labels or notes
    assert "Code Rollback" not in html and "alice-secret-note" not in html
    assert url("discussion", study, turns[0]) in html


@pytest.mark.parametrize("who", ["alice", "moderator"])
def test_only_leads_see_the_flags(client, study, alice, moderator, turns, who):
    put_off(turns[0], alice, "why")
    client.force_login(make_user(who))
    r = client.get(url("lead_flags", study))
    assert r.status_code == 403 and "Leads only" in r.text and "why" not in r.text


def test_the_study_page_links_to_the_flags_with_their_count(client, study, lead, alice, turns):
    put_off(turns[0], alice, "one")
    put_off(turns[1], alice, "two")
    put_off(turns[2], alice, kind=SkipKind.SKIP)
    client.force_login(lead)
    html = client.get(url("study", study)).content.decode()
    assert f'<a href="{url("lead_flags", study)}">Flagged cards</a> (2)' in html
    client.force_login(alice)
    assert url("lead_flags", study) not in client.get(url("study", study)).content.decode()


def test_the_flags_page_costs_the_same_queries_however_many_flags(
    client, study, lead, alice, group, turns, django_assert_max_num_queries
):
    put_off(turns[0], alice, "one")
    client.force_login(lead)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as small:
        client.get(url("lead_flags", study))
    for i in range(10):
        for t in make_conversation(study, f"more-{i}", n_turns=2, group=group).turns.all():
            put_off(t, alice, f"reason {i}")
    with django_assert_max_num_queries(len(small)):
        r = client.get(url("lead_flags", study))
    assert r.context["page"].paginator.count == 21


def test_a_lead_who_annotates_the_card_does_not_read_a_flag_on_it_in_round_1(
    client, study, lead, alice, turns, group
):
    """A reason may give a judgment away: like the labels and notes, it stays hidden from
    whoever annotates the card until round 1 is over."""
    group.annotators.add(lead)
    put_off(turns[0], alice, "secret-judgment: rollback?")
    put_off(turns[1], lead, "my own reason")
    client.force_login(lead)
    html = client.get(url("lead_flags", study)).content.decode()
    assert "secret-judgment" not in html
    assert "hidden while you annotate this card in round 1" in html
    assert "my own reason" in html
    assert url("discussion", study, turns[0]) not in html
    # once round 1 is over, the reason shows
    for user in group.annotators.all():
        label(turns[0], user)
    html = client.get(url("lead_flags", study)).content.decode()
    assert "secret-judgment: rollback?" in html
