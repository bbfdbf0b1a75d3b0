"""Seats changed on the study's pages keep the round rules: an annotator who has labelled a
group's card stays in it (removing or moving them would drop their round-1 labels from its
rounds, or count them in another group's), nothing anyone does on these pages creates,
changes or deletes a label, and a refusal says who, where and why."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.accounts.seats import move_annotator, seat_annotator, unseat_annotator
from annotation.models import Annotation, Conversation, Group, Membership, Role, SeatRefused
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db


def _post(client, study, user, **data):
    return client.post(reverse("member_move", args=[study.slug, user.pk]), data, follow=True)


def test_it_moves_an_annotator_who_has_not_labelled(client, study, lead, alice):
    a, b = make_group(study, "A", [alice]), make_group(study, "B")
    client.force_login(lead)
    body = _post(client, study, alice, source=a.pk, target=b.pk).content.decode()
    assert "alice is moved to B" in body
    assert list(b.annotators.all()) == [alice] and not a.annotators.exists()


def test_it_refuses_to_move_or_remove_one_who_has_labelled(client, study, lead, alice, bob):
    a, b = make_group(study, "A", [alice, bob]), make_group(study, "B")
    turn = make_conversation(study, "c1", group=a).turns.first()
    label(turn, alice, "code_rollback")
    before = list(Annotation.objects.values_list("pk", "turn", "annotator", "round"))
    client.force_login(lead)

    for data in ({"source": a.pk, "target": b.pk}, {"source": a.pk}):
        body = _post(client, study, alice, **data).content.decode()
        assert "Nothing changed: &#x27;alice&#x27; has labelled 1 card of group &#x27;A&#x27;" in (
            body
        )
    # the groups page's remove button keeps the same rule
    client.post(
        reverse("lead_group_members", args=[study.slug, a.pk]),
        {"action": "remove", "username": "alice"},
    )
    assert set(a.annotators.all()) == {alice, bob} and not b.annotators.exists()
    assert list(Annotation.objects.values_list("pk", "turn", "annotator", "round")) == before


def test_a_moderator_manages_the_annotators_of_their_groups_only(client, study, lead, alice):
    mod, carol = make_user("mod"), make_user("carol")
    a, b = make_group(study, "A", [alice], moderator=mod), make_group(study, "B", moderator=mod)
    other = make_group(study, "C", [carol])
    client.force_login(mod)

    assert (
        "alice is moved to B"
        in _post(client, study, alice, source=a.pk, target=b.pk).content.decode()
    )
    # a group they do not moderate is no choice: the form refuses it
    body = _post(client, study, alice, source=b.pk, target=other.pk).content.decode()
    assert "Nothing changed" in body and list(b.annotators.all()) == [alice]
    assert _post(client, study, carol, source=other.pk).status_code == 200
    assert list(other.annotators.all()) == [carol]
    # nor a lead or moderator, nor roles, nor invitations
    response = client.post(reverse("member_move", args=[study.slug, lead.pk]), {"target": a.pk})
    assert response.status_code == 403 and not a.annotators.filter(pk=lead.pk).exists()
    response = client.post(
        reverse("member_role", args=[study.slug, alice.pk]), {"role": "lead", "kind": "expert"}
    )
    assert response.status_code == 403 and study.role_of(alice) == Role.ANNOTATOR
    assert client.get(reverse("members", args=[study.slug])).status_code == 200


def test_an_annotator_does_not_open_the_members_page(client, study, alice):
    make_group(study, "A", [alice])
    client.force_login(alice)
    response = client.get(reverse("members", args=[study.slug]))
    assert response.status_code == 403
    assert "Leads and moderators only" in response.content.decode()


def test_the_last_lead_stays_a_lead(client, study, lead):
    client.force_login(lead)
    url = reverse("member_role", args=[study.slug, lead.pk])
    body = client.post(url, {"role": "annotator", "kind": "expert"}, follow=True).content.decode()
    assert "the study&#x27;s only lead" in body
    client.post(reverse("member_remove", args=[study.slug, lead.pk]))
    assert study.role_of(lead) == Role.LEAD


def test_a_moderator_needs_a_group_and_gets_its_seat(client, study, lead, alice):
    a = make_group(study, "A")
    study.add_member(alice, Role.ANNOTATOR)
    client.force_login(lead)
    url = reverse("member_role", args=[study.slug, alice.pk])
    body = client.post(url, {"role": "moderator", "kind": "expert"}, follow=True)
    assert "choose the group" in body.content.decode() and study.role_of(alice) == Role.ANNOTATOR
    client.post(url, {"role": "moderator", "kind": "expert", "group": a.pk})
    a.refresh_from_db()
    assert a.moderator == alice and study.role_of(alice) == Role.MODERATOR
    assert Membership.objects.get(study=study, user=alice).kind == "expert"


def test_a_member_who_has_labelled_is_not_removed(client, study, lead, alice):
    a = make_group(study, "A", [alice])
    label(make_conversation(study, "c1", group=a).turns.first(), alice, "code_rollback")
    client.force_login(lead)
    body = client.post(reverse("member_remove", args=[study.slug, alice.pk]), follow=True)
    assert "has labelled cards of group &#x27;A&#x27;" in body.content.decode()
    assert study.role_of(alice) == Role.ANNOTATOR and a.annotators.filter(pk=alice.pk).exists()


# -- the rule, over any sequence of changes -----------------------------------------------------

PEOPLE = ["p1", "p2", "p3"]
GROUPS = ["A", "B", "C"]  # A and B share conversation "ab"; C has its own
OPS = st.one_of(
    st.tuples(st.just("label"), st.sampled_from(PEOPLE), st.sampled_from(["ab", "a", "c"])),
    st.tuples(st.just("seat"), st.sampled_from(PEOPLE), st.sampled_from(GROUPS)),
    st.tuples(st.just("unseat"), st.sampled_from(PEOPLE), st.sampled_from(GROUPS)),
    st.tuples(
        st.just("move"), st.sampled_from(PEOPLE), st.sampled_from(GROUPS), st.sampled_from(GROUPS)
    ),
)


def _counting_group(annotation) -> int | None:
    """The group whose rounds count `annotation`: the one of the card's groups in which its
    annotator sits as an annotator (one at most: Group.check_seat)."""
    groups = Group.objects.filter(
        assignments__conversation_id=annotation.turn.conversation_id,
        annotators=annotation.annotator_id,
    )
    ids = list(groups.values_list("pk", flat=True))
    assert len(ids) <= 1, ids
    return ids[0] if ids else None


def _labels() -> set:
    return set(
        Annotation.objects.values_list("pk", "turn_id", "annotator_id", "round", "is_current")
    )


@pytest.fixture
def sharing(study):
    people = {n: make_user(n) for n in PEOPLE}
    groups = {n: make_group(study, n) for n in GROUPS}
    # seated from the start, so that labels come early in a sequence
    groups["A"].annotators.add(people["p1"])
    groups["C"].annotators.add(people["p2"])
    convs = {
        "ab": make_conversation(study, "ab", n_turns=2, group=groups["A"]),
        "a": make_conversation(study, "a", n_turns=2, group=groups["A"]),
        "c": make_conversation(study, "c", n_turns=2, group=groups["C"]),
    }
    Conversation.objects.filter(pk=convs["ab"].pk).assign(groups["B"])
    return people, groups, convs


def _apply(op, people, groups, convs, given_in: dict) -> None:
    kind, who = op[0], people[op[1]]
    if kind == "label":
        conversation = convs[op[2]]
        group = conversation.groups.filter(annotators=who).first()
        turn = conversation.turns.first()
        if group is None or Annotation.objects.filter(turn=turn, annotator=who).exists():
            return
        label(turn, who, "code_rollback", group=group)
        given_in[Annotation.objects.get(turn=turn, annotator=who, round=1).pk] = group.pk
    elif kind == "seat":
        seat_annotator(groups[op[2]], who)
    elif kind == "unseat":
        unseat_annotator(groups[op[2]], who)
    else:
        source, target = groups[op[2]], groups[op[3]]
        if source.annotators.filter(pk=who.pk).exists():
            move_annotator(who, source, target)


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ops=st.lists(OPS, min_size=1, max_size=14))
def test_no_seat_change_ever_moves_or_drops_a_label(sharing, ops):
    people, groups, convs = sharing
    with transaction.atomic():
        given_in: dict[int, int] = {}
        for op in ops:
            labels = _labels()
            try:
                _apply(op, people, groups, convs, given_in)
            except SeatRefused:
                pass
            if op[0] != "label":
                assert _labels() == labels, op  # no seat change touches a label
            for annotation in Annotation.objects.select_related("turn"):
                assert _counting_group(annotation) == given_in[annotation.pk], (op, ops)
        transaction.set_rollback(True)
