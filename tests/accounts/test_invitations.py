"""A lead invites annotators from a pasted list: accounts are created (or reused), seated,
and each gets a mail naming the study and the inviter with a link to set a password; the
link works once and for INVITATION_DAYS days, and says which when it does not."""

from __future__ import annotations

import re
import time

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client
from django.urls import reverse

from annotation.models import Kind, Membership, Role
from tests.factories import make_group, make_user

pytestmark = pytest.mark.django_db

LINK = re.compile(r"http://testserver(/accounts/invitation/[^/\s]+/)")


def _invite(client, study, people: str, **extra):
    data = {"people": people, "kind": "student", **extra}
    return client.post(reverse("members_invite", args=[study.slug]), data)


def _link(message) -> str:
    return LINK.search(message.body)[1]


@pytest.fixture
def lead_client(client, lead):
    lead.first_name, lead.last_name = "Grace", "Hopper"
    lead.save()
    client.force_login(lead)
    return client


def test_it_invites_a_list_end_to_end(lead_client, study):
    group = make_group(study, "G1", kind=Kind.EXPERT)
    people = "dana, dana@lab.org\n\n# a comment\nEve Moss <Eve@Lab.org>\n"

    response = _invite(lead_client, study, people, kind="expert", group=group.pk)

    assert response.status_code == 302
    User = get_user_model()
    dana, eve = User.objects.get(username="dana"), User.objects.get(username="Eve")
    assert (eve.email, eve.first_name, eve.last_name) == ("eve@lab.org", "Eve", "Moss")
    assert not dana.has_usable_password()
    assert set(group.annotators.all()) == {dana, eve}
    m = Membership.objects.get(study=study, user=dana)
    assert (m.role, m.kind) == (Role.ANNOTATOR, Kind.EXPERT)
    assert [m.to for m in mail.outbox] == [["dana@lab.org"], ["eve@lab.org"]]
    first = mail.outbox[0]
    assert "S1" in first.subject and "Grace Hopper" in first.subject
    assert "Grace Hopper invites you" in first.body and '"S1"' in first.body
    assert "Your username: dana" in first.body

    # dana follows her link, chooses a password and lands on the study, logged in
    dana_client = Client()
    page = dana_client.get(_link(first))
    assert page.status_code == 200 and "dana" in page.content.decode()
    form = {"new_password1": "a-long-secret-1", "new_password2": "a-long-secret-1"}
    response = dana_client.post(_link(first), form)
    assert response.status_code == 302
    assert response["Location"] == reverse("study", args=[study.slug])
    assert dana_client.get(response["Location"]).status_code == 200
    assert Client().login(username="dana", password="a-long-secret-1")


def test_a_used_link_says_so_and_sets_nothing(lead_client, study):
    _invite(lead_client, study, "dana, dana@lab.org")
    link = _link(mail.outbox[0])
    form = {"new_password1": "a-long-secret-1", "new_password2": "a-long-secret-1"}
    Client().post(link, form)

    again = Client().post(link, {"new_password1": "other-pw-22", "new_password2": "other-pw-22"})

    assert again.status_code == 410
    assert "already used" in again.content.decode()
    assert Client().login(username="dana", password="a-long-secret-1")


def test_an_expired_link_says_so_and_a_resent_one_works(lead_client, study, monkeypatch, settings):
    settings.INVITATION_DAYS = 7
    _invite(lead_client, study, "dana, dana@lab.org")
    old = _link(mail.outbox[0])
    now = time.time()
    monkeypatch.setattr("django.core.signing.time.time", lambda: now + 8 * 86400)

    response = Client().get(old)

    assert response.status_code == 410
    body = response.content.decode()
    assert "expired" in body and "7 days" in body and "Grace Hopper" in body
    monkeypatch.undo()

    dana = get_user_model().objects.get(username="dana")
    page = lead_client.get(reverse("members", args=[study.slug])).content.decode()
    assert "invited, no password yet" in page
    lead_client.post(reverse("member_resend", args=[study.slug, dana.pk]))
    assert len(mail.outbox) == 2
    fresh = _link(mail.outbox[1])
    assert Client().get(fresh).status_code == 200
    form = {"new_password1": "a-long-secret-1", "new_password2": "a-long-secret-1"}
    assert Client().post(fresh, form).status_code == 302
    # setting the password spent every link sent before
    assert "already used" in Client().get(old).content.decode()
    lead_client.post(reverse("member_resend", args=[study.slug, dana.pk]), follow=True)
    assert len(mail.outbox) == 2  # nothing more to send


def test_a_tampered_link_is_not_valid(lead_client, study):
    _invite(lead_client, study, "dana, dana@lab.org")
    link = _link(mail.outbox[0])
    response = Client().get(link[:-6] + "abcde/")
    assert response.status_code == 400
    assert "not valid" in response.content.decode()


def test_it_names_every_bad_line_and_creates_nobody(lead_client, study):
    make_user("taken").__class__.objects.filter(username="taken").update(email="t@other.org")
    people = "\n".join(
        [
            "ok, ok@lab.org",
            "no email here",
            "bad, not-an-email",
            "ok2, OK@lab.org",
            "taken, taken@lab.org",
            "has space <x y@lab.org>",
        ]
    )

    response = _invite(lead_client, study, people)

    assert response.status_code == 422
    body = response.content.decode()
    for line in ("line 2:", "line 3:", "line 4:", "line 5:", "line 6:"):
        assert line in body
    assert "line 1:" not in body
    assert "is on line 1 too" in body and "taken by an account with another email" in body
    assert "ok2, OK@lab.org" in body  # the paste comes back as it was
    assert not get_user_model().objects.filter(username__in=["ok", "ok2"]).exists()
    assert mail.outbox == []


def test_it_reuses_accounts_by_email_then_username(lead_client, study, alice, bob):
    get_user_model().objects.filter(pk=alice.pk).update(email="alice@lab.org")
    response = _invite(lead_client, study, "someone, ALICE@lab.org\nbob, bob@lab.org")
    assert response.status_code == 302
    assert get_user_model().objects.count() == 3  # lead, alice, bob
    bob.refresh_from_db()
    assert bob.email == "bob@lab.org"
    assert study.role_of(alice) == study.role_of(bob) == Role.ANNOTATOR
    # they have passwords: their mail points to the login page, with no set-password link
    assert all(LINK.search(m.body) is None for m in mail.outbox)
    assert all("log in at http://testserver/accounts/login/" in m.body for m in mail.outbox)


def test_a_refused_seat_names_its_line_and_creates_nobody(lead_client, study, alice):
    from annotation.models import Conversation
    from tests.factories import make_conversation

    a, b = make_group(study, "A", [alice]), make_group(study, "B")
    shared = make_conversation(study, "c1", group=a)
    Conversation.objects.filter(pk=shared.pk).assign(b)
    get_user_model().objects.filter(pk=alice.pk).update(email="alice@lab.org")

    response = _invite(lead_client, study, "new, new@lab.org\nalice, alice@lab.org", group=b.pk)

    assert response.status_code == 422
    assert "line 2: alice already sits in group" in response.content.decode()
    assert not get_user_model().objects.filter(username="new").exists()


def test_only_a_lead_invites(client, study, lead, alice, charlie):
    study.add_member(alice, Role.ANNOTATOR)
    for user, status in ((alice, 403), (charlie, 404)):
        client.force_login(user)
        assert _invite(client, study, "x, x@lab.org").status_code == status
    assert not get_user_model().objects.filter(username="x").exists()


def test_a_mail_that_fails_keeps_the_accounts_and_says_so(lead_client, study, settings):
    settings.EMAIL_BACKEND = "tests.accounts.failing_mail.Backend"
    response = _invite(lead_client, study, "dana, dana@lab.org")
    assert get_user_model().objects.filter(username="dana").exists()
    page = lead_client.get(response["Location"]).content.decode()
    assert "could not be sent" in page and "Resend" in page


def test_a_bad_field_is_named(lead_client, study):
    from tests.factories import make_study

    foreign = make_group(make_study("s2"), "G9")
    response = _invite(lead_client, study, "", group=foreign.pk)
    assert response.status_code == 422
    body = response.content.decode()
    assert "people: This field is required." in body and "group: Select a valid choice" in body


def test_a_bare_username_reuses_that_account_without_an_email(lead_client, study, alice, bob):
    """Issue 20, defect 8: a line with an existing username alone seats that account (the
    docs/leading.md: an existing account is reused by email, else username); an unknown one is named,
    and nobody is invited."""
    get_user_model().objects.filter(pk=bob.pk).update(email="bob@lab.org")
    response = _invite(lead_client, study, "alice\nBob")
    assert response.status_code == 302
    assert study.role_of(alice) == study.role_of(bob) == Role.ANNOTATOR
    assert get_user_model().objects.get(pk=alice.pk).email == ""  # nothing made up
    assert [m.to for m in mail.outbox] == [["bob@lab.org"]]  # alice has no email to mail

    response = _invite(lead_client, study, "carol\nnobody-here")
    assert response.status_code == 422
    body = response.content.decode()
    assert "line 1:" in body and "line 2:" in body and "no account named" in body
    assert not get_user_model().objects.filter(username__in=["carol", "nobody-here"]).exists()
