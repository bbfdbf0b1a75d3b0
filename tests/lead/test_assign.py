from __future__ import annotations

from django.urls import reverse

from annotation.models import Assignment, Conversation, Turn
from tests.factories import make_conversation, make_group


def _conversations(study, n: int) -> list[Conversation]:
    return [make_conversation(study, f"c{i}", n_turns=2) for i in range(n)]


def _assign(client, study, **data):
    client.login(username="lead", password="pw-secret")
    return client.post(reverse("lead_assign", args=[study.slug]), data, follow=True)


def _assigned_ids(group) -> set[str]:
    return set(group.conversations.values_list("external_id", flat=True))


def test_it_samples_the_same_conversations_for_the_same_seed(study):
    _conversations(study, 30)
    unassigned = Conversation.objects.filter(study=study).unassigned()
    first = set(unassigned.sample(10, seed=7).values_list("pk", flat=True))
    again = set(unassigned.sample(10, seed=7).values_list("pk", flat=True))
    other = set(unassigned.sample(10, seed=8).values_list("pk", flat=True))
    assert first == again
    assert first != other
    assert len(first) == 10


def test_it_assigns_by_count_reproducibly(client, study, lead):
    _conversations(study, 20)
    g1, g2 = make_group(study, "G1"), make_group(study, "G2")
    response = _assign(client, study, how="count", group=g1.pk, count=5, seed=42)
    assert "Assigned 5 conversations (10 turns) to G1 at random with seed 42" in (
        response.content.decode()
    )
    picked = _assigned_ids(g1)
    assert len(picked) == 5

    # the same draw on the same unassigned rows picks the same conversations
    Assignment.objects.filter(group=g1).delete()
    _assign(client, study, how="count", group=g2.pk, count=5, seed=42)
    assert _assigned_ids(g2) == picked


def test_it_assigns_every_turn_with_its_conversation(client, study, lead, alice):
    _conversations(study, 4)
    group = make_group(study, "G1", annotators=[alice])
    _assign(client, study, how="count", group=group.pk, count=2, seed=1)
    assert Turn.objects.for_annotator(study, alice).count() == 4


def test_it_refuses_more_than_are_unassigned(client, study, lead):
    _conversations(study, 3)
    group = make_group(study, "G1")
    make_conversation(study, "taken", group=group)
    response = _assign(client, study, how="count", group=group.pk, count=4, seed=1)
    assert "Asked for 4 conversations but only 3 are unassigned" in response.content.decode()
    assert group.conversations.count() == 1


def test_it_assigns_only_unassigned_conversations_by_count(client, study, lead):
    _conversations(study, 3)
    g1, g2 = make_group(study, "G1"), make_group(study, "G2")
    make_conversation(study, "taken", group=g1)
    _assign(client, study, how="count", group=g2.pk, count=3)
    assert _assigned_ids(g1) == {"taken"}
    assert _assigned_ids(g2) == {"c0", "c1", "c2"}


def test_it_assigns_a_selection(client, study, lead):
    convs = _conversations(study, 5)
    group = make_group(study, "G1")
    chosen = [convs[1].pk, convs[3].pk]
    response = _assign(client, study, how="selection", group=group.pk, conversation=chosen)
    assert "Assigned 2 selected conversations to G1" in response.content.decode()
    assert _assigned_ids(group) == {"c1", "c3"}


def test_it_leaves_already_assigned_conversations_in_their_group(client, study, lead):
    g1, g2 = make_group(study, "G1"), make_group(study, "G2")
    taken = make_conversation(study, "taken", group=g1)
    free = make_conversation(study, "free")
    response = _assign(
        client, study, how="selection", group=g2.pk, conversation=[taken.pk, free.pk]
    )
    assert "1 already had a group and stayed in it" in response.content.decode()
    assert _assigned_ids(g1) == {"taken"}
    assert _assigned_ids(g2) == {"free"}


def test_it_refuses_conversations_and_groups_of_another_study(client, study, lead):
    from tests.factories import make_study

    other = make_study("s2")
    foreign = make_conversation(other, "foreign")
    foreign_group = make_group(other, "Other")
    group = make_group(study, "G1")
    mine = make_conversation(study, "mine")
    response = _assign(client, study, how="selection", group=group.pk, conversation=[foreign.pk])
    assert "Nothing assigned" in response.content.decode()
    _assign(client, study, how="selection", group=foreign_group.pk, conversation=[mine.pk])
    foreign.refresh_from_db()
    mine.refresh_from_db()
    assert not foreign.groups.exists() and not mine.groups.exists()


def test_it_lists_conversations_with_checkboxes_and_counts(client, study, lead):
    group = make_group(study, "G1")
    make_conversation(study, "c-assigned", n_turns=3, group=group)
    unassigned = make_conversation(study, "c-free", n_turns=2)
    client.login(username="lead", password="pw-secret")
    body = client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert f'name="conversation" value="{unassigned.pk}"' in body
    assert "c-assigned" in body and "c-free" in body
    assert "<strong>2</strong> conversations" in body
    assert "<strong>5</strong> turns" in body
    assert "<strong>1</strong> assigned" in body and "<strong>1</strong> unassigned" in body
