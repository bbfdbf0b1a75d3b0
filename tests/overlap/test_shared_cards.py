"""A conversation shared by two groups: each runs its own rounds on it, round 1 stays blind
across groups on every channel, one person labels it in one group only, and the lead assigns
overlap shares and calibration sets (the study-level gold: test_gold.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.exports import gold_rows
from annotation.models import (
    Conversation,
    SeatConflict,
)
from tests.factories import label, make_conversation, make_group

pytestmark = pytest.mark.django_db


def test_it_keeps_group_bs_round_1_labels_from_group_a_before_they_submit(
    client, study, alice, bob, shared
):
    a, b, carol, dave, turn = shared
    label(turn, carol, "code_rollback", group=b)
    label(turn, dave, "must_do_omission", group=b)  # B's card is disputed: B's labels revealed in B
    client.force_login(alice)
    card = client.get(reverse("card", args=[study.slug, turn.pk]))
    assert card.status_code == 200 and card.context["locked"] is False
    assert "code_rollback" not in card.content.decode().split('name="types"')[0]
    for name in ("discussion", "card_timeline"):
        url = reverse(name, args=[study.slug, turn.pk])
        # alice labels the card: told it is still in round 1, whichever group she names
        assert client.get(url).status_code == 403
        assert client.get(url, {"group": b.pk}).status_code == 403
    api = client.get(f"/api/studies/{study.slug}/cards/{turn.pk}/")
    assert "code_rollback" not in api.content.decode()
    # after alice and bob submit, A's discussion shows A's labels only, never B's
    label(turn, alice, "ambiguous_instruction", group=a)
    label(turn, bob, "incomplete_instruction", group=a)
    page = client.get(reverse("discussion", args=[study.slug, turn.pk]))
    assert page.status_code == 200 and page.context["card"].group == a
    people = {c["annotator"].username for r in page.context["rounds"] for c in r["columns"]}
    assert people == {"alice", "bob"}


def test_it_runs_separate_rounds_and_consensus_per_group(study, alice, bob, shared):
    a, b, carol, dave, turn = shared
    for user in (alice, bob):
        label(turn, user, "code_rollback", group=a)
    assert turn.states.get(group=a).status == "agreed"
    assert not turn.states.filter(group=b).exists()  # B's round 1 untouched by A's
    label(turn, carol, "code_rollback", group=b)
    label(turn, dave, "must_do_omission", group=b)
    assert turn.states.get(group=b).status == "disputed"
    assert turn.consensus.filter(is_current=True).get().group == a


def test_it_refuses_a_seat_in_two_groups_sharing_a_conversation(study, alice, shared):
    a, b, carol, dave, turn = shared
    with pytest.raises(SeatConflict, match="alice already sits in group 'A'"):
        b.check_seat(alice)
    # nor may two groups with a common member start sharing a conversation
    c = make_group(study, "C", [alice])
    other = make_conversation(study, "c2", n_turns=1, group=a)
    with pytest.raises(SeatConflict, match="alice would sit in both"):
        Conversation.objects.filter(pk=other.pk).assign(c)


def test_it_refuses_the_lead_page_seat_with_a_clear_error(client, study, lead, alice, shared):
    a, b, *_ = shared
    client.force_login(lead)
    url = reverse("lead_group_members", args=[study.slug, b.pk])
    response = client.post(url, {"username": "alice"}, HTTP_HX_REQUEST="true")
    assert "shares conversations" in response.content.decode()
    assert not b.annotators.filter(pk=alice.pk).exists()


def test_it_assigns_an_overlap_share_to_two_groups_with_a_seed(client, study, lead):
    a, b = make_group(study, "A"), make_group(study, "B")
    for i in range(6):
        make_conversation(study, f"x{i}", n_turns=1)
    client.force_login(lead)
    data = {"how": "count", "group": [a.pk, b.pk], "count": 3, "seed": 7}
    client.post(reverse("lead_assign", args=[study.slug]), data)
    in_a = set(a.conversations.values_list("pk", flat=True))
    assert len(in_a) == 3 and in_a == set(b.conversations.values_list("pk", flat=True))


def test_it_assigns_a_calibration_set_to_every_chosen_group(client, study, lead):
    a, b = make_group(study, "A"), make_group(study, "B")
    conversation = make_conversation(study, "c1", n_turns=1, group=a)
    client.force_login(lead)
    data = {"how": "calibration", "group": [a.pk, b.pk], "conversation": [conversation.pk]}
    client.post(reverse("lead_assign", args=[study.slug]), data)
    assert set(conversation.groups.values_list("name", flat=True)) == {"A", "B"}


def test_it_exports_one_row_per_card_and_group_and_the_study_gold(study, alice, bob, shared):
    a, b, carol, dave, turn = shared
    for user in (alice, bob):
        label(turn, user, "code_rollback", group=a)
    for user in (carol, dave):
        label(turn, user, "must_do_omission", group=b)
    rows = list(gold_rows(study))
    assert [(r["group"], r["consensus"]) for r in rows] == [
        ("A", ["code_rollback"]),
        ("B", ["must_do_omission"]),
    ]
    # another group's annotators stay null in this group's row
    assert rows[0]["labels_carol"] is None and rows[1]["labels_alice"] is None
    assert {r["study_gold_method"] for r in rows} == {"pending"}
    assert rows[0]["study_gold"] is None
