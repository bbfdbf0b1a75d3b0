from __future__ import annotations

from django.urls import reverse

from annotation.models import Group, Kind, Membership, Role
from tests.factories import make_conversation, make_group, make_user


def _login(client) -> None:
    client.login(username="lead", password="pw-secret")


def test_it_creates_a_group(client, study, lead):
    _login(client)
    url = reverse("lead_groups", args=[study.slug])
    response = client.post(url, {"name": "Experts A", "kind": "expert"})
    assert response.status_code == 302
    group = Group.objects.get(study=study, name="Experts A")
    assert group.kind == Kind.EXPERT
    assert "Experts A" in client.get(url).content.decode()


def test_it_refuses_a_duplicate_group_name(client, study, lead):
    make_group(study, "G1")
    _login(client)
    response = client.post(
        reverse("lead_groups", args=[study.slug]), {"name": "G1", "kind": "student"}
    )
    assert response.status_code == 200
    assert "study s1 already has a group named &#x27;G1&#x27;" in response.content.decode()
    assert study.groups.count() == 1


def test_it_adds_an_annotator_who_becomes_a_member(client, study, lead, alice):
    group = make_group(study, "G1", kind=Kind.EXPERT)
    _login(client)
    url = reverse("lead_group_members", args=[study.slug, group.pk])
    response = client.post(url, {"action": "add", "username": "alice"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    body = response.content.decode()
    assert f'id="group-{group.pk}"' in body and "alice" in body
    assert "<html" not in body  # only the group's box
    assert list(group.annotators.all()) == [alice]
    membership = Membership.objects.get(study=study, user=alice)
    assert (membership.role, membership.kind) == (Role.ANNOTATOR, Kind.EXPERT)


def test_it_keeps_an_existing_members_role(client, study, lead):
    group = make_group(study, "G1")
    _login(client)
    client.post(
        reverse("lead_group_members", args=[study.slug, group.pk]),
        {"action": "add", "username": "lead"},
    )
    assert Membership.objects.get(study=study, user=lead).role == Role.LEAD
    assert group.annotators.filter(pk=lead.pk).exists()


def test_it_refuses_an_unknown_username(client, study, lead):
    group = make_group(study, "G1")
    _login(client)
    url = reverse("lead_group_members", args=[study.slug, group.pk])
    response = client.post(url, {"action": "add", "username": "nobody"}, HTTP_HX_REQUEST="true")
    assert "No user named &#x27;nobody&#x27;" in response.content.decode()
    assert not group.annotators.exists()
    # plain POST: the error comes back as a message on the groups page
    response = client.post(url, {"action": "add", "username": "nobody"}, follow=True)
    assert "No user named" in response.content.decode()


def test_it_removes_an_annotator(client, study, lead, alice, bob):
    group = make_group(study, "G1", annotators=[alice, bob])
    _login(client)
    response = client.post(
        reverse("lead_group_members", args=[study.slug, group.pk]),
        {"action": "remove", "username": "alice"},
    )
    assert response.status_code == 302
    assert list(group.annotators.all()) == [bob]


def test_it_sets_a_moderator(client, study, lead, alice, charlie):
    group = make_group(study, "G1", annotators=[alice])
    study.add_member(charlie, Role.ANNOTATOR)  # an annotator elsewhere moves up
    _login(client)
    url = reverse("lead_group_moderator", args=[study.slug, group.pk])
    response = client.post(url, {"username": "charlie"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 200
    group.refresh_from_db()
    assert group.moderator == charlie
    assert Membership.objects.get(study=study, user=charlie).role == Role.MODERATOR


def test_it_makes_a_new_moderator_a_member_and_keeps_a_lead_a_lead(client, study, lead):
    group = make_group(study, "G1")
    dave = make_user("dave")
    _login(client)
    url = reverse("lead_group_moderator", args=[study.slug, group.pk])
    client.post(url, {"username": "dave"})
    assert Membership.objects.get(study=study, user=dave).role == Role.MODERATOR
    client.post(url, {"username": "lead"})
    group.refresh_from_db()
    assert group.moderator == lead
    assert Membership.objects.get(study=study, user=lead).role == Role.LEAD


def test_it_refuses_a_moderator_who_annotates_in_the_group(client, study, lead, alice):
    group = make_group(study, "G1", annotators=[alice])
    _login(client)
    url = reverse("lead_group_moderator", args=[study.slug, group.pk])
    response = client.post(url, {"username": "alice"}, HTTP_HX_REQUEST="true")
    assert "is an annotator of group &#x27;G1&#x27;, so cannot be the moderator" in (
        response.content.decode()
    )
    group.refresh_from_db()
    assert group.moderator is None


def test_it_shows_members_moderator_and_assigned_work(client, study, lead, alice, bob, charlie):
    group = make_group(study, "G1", annotators=[alice, bob], moderator=charlie)
    make_conversation(study, "c1", n_turns=3, group=group)
    make_conversation(study, "c2", n_turns=4, group=group)
    make_conversation(study, "c3", n_turns=5)
    _login(client)
    body = client.get(reverse("lead_groups", args=[study.slug])).content.decode()
    assert "alice" in body and "bob" in body
    assert 'value="charlie"' in body
    assert "2 conversations, 7 turns assigned" in body


def test_it_refuses_a_judge_as_an_annotator_of_the_same_group(client, study, lead, alice):
    group = make_group(study, "G1")
    judge = make_user("gpt-judge")
    group.judges.add(judge)
    _login(client)
    url = reverse("lead_group_members", args=[study.slug, group.pk])
    response = client.post(url, {"action": "add", "username": "gpt-judge"}, HTTP_HX_REQUEST="true")
    assert "is a judge of group &#x27;G1&#x27;, so cannot be an annotator of it" in (
        response.content.decode()
    )
    assert not group.annotators.exists()
