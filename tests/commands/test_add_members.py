"""add_members SLUG USERNAME... --role annotator|moderator|lead --kind expert|student
[--group NAME] [--create-users]: the members and groups pages' seats, from the command line
(issue 20, point 4)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.db import transaction
from django.urls import reverse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Conversation, Group, Kind, Membership, Role
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db


def add(*args) -> str:
    out = StringIO()
    call_command("add_members", "s1", *args, stdout=out)
    return out.getvalue()


def member(study, user) -> tuple[str, str] | None:
    m = Membership.objects.filter(study=study, user=user).first()
    return (m.role, m.kind) if m else None


def test_it_seats_experts_in_a_group(study, alice, bob):
    group = make_group(study, "E1", kind=Kind.EXPERT)
    out = add("alice", "bob", "--role", "annotator", "--kind", "expert", "--group", "E1")
    assert member(study, alice) == member(study, bob) == (Role.ANNOTATOR, Kind.EXPERT)
    assert set(group.annotators.all()) == {alice, bob}
    assert "alice: added as annotator (expert); annotator of group E1" in out
    assert "bob: added as annotator (expert)" in out


def test_an_expert_member_decides_proposals_a_student_does_not(client, study, alice, bob):
    # issue 20: everyone imported was a student, so the study's experts got a 403
    add("alice", "--role", "annotator", "--kind", "expert")
    add("bob", "--role", "annotator", "--kind", "student")
    client.force_login(alice)
    assert client.get(reverse("proposals", args=[study.slug])).status_code == 200
    client.force_login(bob)
    assert client.get(reverse("proposals", args=[study.slug])).status_code == 403


def test_running_it_twice_says_already_a_member_and_changes_nothing(study, alice):
    group = make_group(study, "G1")
    add("alice", "--role", "annotator", "--kind", "student", "--group", "G1")
    out = add("alice", "--role", "annotator", "--kind", "student", "--group", "G1")
    assert "alice: already a member (annotator, student); already an annotator of group G1" in out
    assert Membership.objects.filter(study=study).count() == 1
    assert list(group.annotators.all()) == [alice]


def test_it_refuses_unknown_users_naming_them_all_and_adds_nobody(study, alice):
    with pytest.raises(CommandError, match="no user named 'ghost', 'phantom'.*--create-users"):
        add("alice", "ghost", "phantom", "--role", "annotator", "--kind", "student")
    assert not Membership.objects.filter(study=study).exists()


def test_it_creates_unknown_users_with_no_usable_password(study, alice):
    out = add("alice", "dora", "--role", "annotator", "--kind", "student", "--create-users")
    dora = get_user_model().objects.get(username="dora")
    assert not dora.has_usable_password()
    assert member(study, dora) == (Role.ANNOTATOR, Kind.STUDENT)
    assert "dora: created user (no usable password); added as annotator (student)" in out


def test_it_refuses_a_name_that_cannot_be_a_username(study):
    with pytest.raises(CommandError, match="'no good!' cannot be a username"):
        add("no good!", "--role", "annotator", "--kind", "student", "--create-users")
    assert not get_user_model().objects.exists()


def test_it_seats_a_moderator_and_the_one_replaced_is_an_annotator_again(study, alice, bob):
    group = make_group(study, "G1")
    add("alice", "--role", "moderator", "--kind", "expert", "--group", "G1")
    group.refresh_from_db()
    assert group.moderator == alice
    assert member(study, alice) == (Role.MODERATOR, Kind.EXPERT)
    out = add("bob", "--role", "moderator", "--kind", "expert", "--group", "G1")
    group.refresh_from_db()
    assert group.moderator == bob
    assert "bob: added as moderator (expert); moderator of group G1, replacing alice" in out
    assert member(study, alice) == (Role.ANNOTATOR, Kind.EXPERT)  # no seat, no role


def test_a_group_gets_one_moderator(study, alice, bob):
    group = make_group(study, "G1")
    with pytest.raises(CommandError, match="a group has one moderator"):
        add("alice", "bob", "--role", "moderator", "--kind", "expert", "--group", "G1")
    group.refresh_from_db()
    assert group.moderator is None and not Membership.objects.filter(study=study).exists()


def test_a_new_moderator_needs_a_group(study, alice):
    with pytest.raises(CommandError, match="a moderator moderates a group: name the group"):
        add("alice", "--role", "moderator", "--kind", "expert")
    assert member(study, alice) is None


def test_it_makes_a_lead_who_opens_the_lead_pages(client, study, lead, alice):
    out = add("alice", "--role", "lead", "--kind", "expert")
    assert member(study, alice) == (Role.LEAD, Kind.EXPERT)
    assert "alice: added as lead (expert)" in out
    client.force_login(alice)
    assert client.get(reverse("lead_conversations", args=[study.slug])).status_code == 200


def test_a_lead_in_a_group_annotates_there_and_stays_lead(study, lead):
    group = make_group(study, "E1", kind=Kind.EXPERT)
    add("lead", "--role", "lead", "--kind", "expert", "--group", "E1")
    assert member(study, lead) == (Role.LEAD, Kind.EXPERT)
    assert list(group.annotators.all()) == [lead]


def test_it_changes_an_existing_members_role_and_kind(study, alice):
    study.add_member(alice, Role.ANNOTATOR, Kind.STUDENT)
    make_group(study, "G1")
    out = add("alice", "--role", "moderator", "--kind", "expert", "--group", "G1")
    assert member(study, alice) == (Role.MODERATOR, Kind.EXPERT)
    assert "role annotator -> moderator" in out and "kind student -> expert" in out


def test_the_only_lead_stays_a_lead(study, lead):
    with pytest.raises(CommandError, match="'lead' is the study's only lead"):
        add("lead", "--role", "annotator", "--kind", "expert")
    assert member(study, lead) == (Role.LEAD, Kind.EXPERT)


def test_a_refused_seat_names_the_person_and_rolls_back_everyone(study, alice, bob):
    # alice labels in G1; G2 shares G1's conversation: seated there too she would see the
    # other group's round-1 labels on a card she labels herself
    g1 = make_group(study, "G1", [alice])
    g2 = make_group(study, "G2")
    conversation = make_conversation(study, "c1", group=g1)
    Conversation.objects.filter(pk=conversation.pk).assign(g2)
    label(conversation.turns.first(), alice, group=g1)
    with pytest.raises(CommandError, match="alice: .*nothing changed"):
        add("bob", "alice", "--role", "annotator", "--kind", "student", "--group", "G2")
    assert member(study, bob) is None
    assert not g2.annotators.exists()


def test_it_refuses_an_annotator_of_another_kind_than_the_group(study, alice):
    make_group(study, "S1", kind=Kind.STUDENT)
    with pytest.raises(CommandError, match="group 'S1' is a group of students"):
        add("alice", "--role", "annotator", "--kind", "expert", "--group", "S1")
    assert member(study, alice) is None


def test_it_refuses_an_unknown_group_naming_the_known_ones(study, alice):
    make_group(study, "G1")
    with pytest.raises(CommandError, match="unknown group 'G9'.*groups: G1"):
        add("alice", "--role", "annotator", "--kind", "student", "--group", "G9")


def test_it_refuses_an_unknown_study(db, alice):
    with pytest.raises(CommandError, match="unknown study 's1'"):
        add("alice", "--role", "annotator", "--kind", "student")


def test_it_refuses_a_missing_role_or_kind(study, alice):
    with pytest.raises(CommandError, match="--role"):
        add("alice", "--kind", "student")
    with pytest.raises(CommandError, match="--kind"):
        add("alice", "--role", "annotator")
    with pytest.raises(CommandError, match="invalid choice: 'boss'"):
        add("alice", "--role", "boss", "--kind", "student")


# -- any sequence of calls ----------------------------------------------------------------

PEOPLE = ["lead", "alice", "bob", "carol"]
call = st.tuples(
    st.lists(st.sampled_from(PEOPLE), min_size=1, max_size=3),
    st.sampled_from(Role.values),
    st.sampled_from(Kind.values),
    st.sampled_from(["", "E1", "S1"]),
)


def _state(study) -> tuple:
    memberships = frozenset(
        Membership.objects.filter(study=study).values_list("user__username", "role", "kind")
    )
    seats = frozenset(
        (g.name, u.username) for g in Group.objects.filter(study=study) for u in g.annotators.all()
    )
    moderators = frozenset(
        Group.objects.filter(study=study).values_list("name", "moderator__username")
    )
    return memberships, seats, moderators


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@pytest.mark.slow
@given(calls=st.lists(call, min_size=1, max_size=5))
def test_each_call_does_all_it_says_or_nothing_and_again_nothing(study, lead, calls):
    for name in PEOPLE:
        make_user(name)
    with transaction.atomic():
        make_group(study, "E1", kind=Kind.EXPERT)
        make_group(study, "S1", kind=Kind.STUDENT)
        for people, role, kind, group in calls:
            args = [*people, "--role", role, "--kind", kind] + (["--group", group] if group else [])
            before = _state(study)
            try:
                add(*args)
            except CommandError:
                assert _state(study) == before  # refused: nothing changed
                continue
            for name in people:
                user = get_user_model().objects.get(username=name)
                assert member(study, user) == (role, kind)
                if group:
                    g = Group.objects.get(study=study, name=group)
                    if role == Role.MODERATOR:
                        assert g.moderator == user
                    else:
                        assert g.annotators.filter(pk=user.pk).exists()
            after = _state(study)
            again = add(*args)
            assert _state(study) == after
            assert again.count("already a member") == len(set(people))
            # every moderator moderates a group; the study never loses its last lead
            for username, r, _ in after[0]:
                if r == Role.MODERATOR:
                    assert study.groups.filter(moderator__username=username).exists()
            assert any(r == Role.LEAD for _, r, _ in after[0])
        transaction.set_rollback(True)
