"""Invitations: a lead's list of people becomes accounts (or reuses existing ones, by email,
then username) seated in the study, and each person without a password gets a link to set
one. The link is a signed token (django.core.signing) that names the user, the study and the
inviter, expires after INVITATION_DAYS, and holds a digest of the account's password state,
so it works once: setting the password spends it (and every other link sent before)."""

from __future__ import annotations

import smtplib
from dataclasses import dataclass, field
from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.mail import EmailMessage, get_connection
from django.db import transaction
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.crypto import salted_hmac

from ..models import Group, Kind, Role, SeatRefused, Study
from .roster import Invitee, read_roster
from .seats import seat_annotator

SALT = "cardsort.accounts.invitation"


class InvitationRefused(Exception):
    """A link that does not open the set-password form; `why` is one of USED, EXPIRED,
    INVALID, and the message says what to do."""

    def __init__(self, why: str, message: str):
        self.why = why
        super().__init__(message)


USED, EXPIRED, INVALID = "used", "expired", "invalid"


def _password_state(user) -> str:
    # a digest, never the hash itself: the token's payload is readable by whoever holds it
    return salted_hmac(SALT, f"{user.pk}:{user.password}:{user.last_login}").hexdigest()[:20]


def make_token(user, study: Study, inviter) -> str:
    payload = {"u": user.pk, "s": study.pk, "by": inviter.pk, "p": _password_state(user)}
    return signing.dumps(payload, salt=SALT, compress=True)


def max_age() -> timedelta:
    return timedelta(days=settings.INVITATION_DAYS)


@dataclass
class Invitation:
    user: object
    study: Study | None
    inviter: object | None


def check_token(token: str) -> Invitation:
    """The invitation a link carries, or InvitationRefused saying why: used (the account has
    set its password since), expired, or not a link we sent."""
    User = get_user_model()
    try:
        data = signing.loads(token, salt=SALT, max_age=None)
        user = User.objects.filter(pk=data["u"], is_active=True).first()
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        user = None
    if user is None:
        raise InvitationRefused(
            INVALID,
            "This invitation link is not valid: check that it was copied whole, or ask the "
            "study's lead to send it again.",
        )
    invitation = Invitation(
        user,
        Study.objects.filter(pk=data.get("s")).first(),
        User.objects.filter(pk=data.get("by")).first(),
    )
    if data.get("p") != _password_state(user):
        raise InvitationRefused(
            USED,
            f"This invitation was already used: {user.username!r} has set a password. Log in, "
            "or use 'Forgot your password?' on the login page.",
        )
    try:
        signing.loads(token, salt=SALT, max_age=max_age())
    except signing.SignatureExpired:
        who = _name(invitation.inviter) if invitation.inviter else "the study's lead"
        raise InvitationRefused(
            EXPIRED,
            f"This invitation has expired (a link lasts {settings.INVITATION_DAYS} days). Ask "
            f"{who} to send it again.",
        ) from None
    return invitation


def _name(user) -> str:
    return user.get_full_name() or user.username


# -- inviting a list of people


@dataclass
class InviteResult:
    errors: list[str] = field(default_factory=list)
    created: list = field(default_factory=list)
    reused: list = field(default_factory=list)
    mail_error: str = ""

    @property
    def people(self) -> list:
        return self.created + self.reused


def _resolve(person: Invitee):
    """(the existing account this line names, or None, error): by email, then username."""
    User = get_user_model()
    if not person.email:  # a bare username: that account, or nobody
        named = User.objects.filter(username__iexact=person.username).first()
        if named is None:
            return None, (
                f"line {person.line}: no account named {person.username!r}: give an email "
                "to create one ('name, email')"
            )
        return named, ""
    by_email = list(User.objects.filter(email__iexact=person.email))
    if len(by_email) == 1:
        return by_email[0], ""
    named = User.objects.filter(username__iexact=person.username).first()
    if by_email and named not in by_email:
        return None, (
            f"line {person.line}: several accounts have the email {person.email!r}: give the "
            "username of the one to invite"
        )
    if named is not None and named.email and named.email.lower() != person.email:
        return None, (
            f"line {person.line}: the username {person.username!r} is taken by an account "
            "with another email: give another name"
        )
    return named, ""


def _account(person: Invitee):
    User = get_user_model()
    first, last = person.first_last
    user = User(username=person.username, email=person.email, first_name=first, last_name=last)
    user.set_unusable_password()
    user.save()
    return user


def invite(
    study: Study, inviter, text: str, kind: str = Kind.STUDENT, group: Group | None = None
) -> InviteResult:
    """Read `text` (roster.py), then, only if every line is good, create or reuse each
    person's account, make them annotators of the study (of `group` too, when given) and
    mail them. Any bad line or refused seat: nothing is created, every error is named."""
    people, errors = read_roster(text)
    result = InviteResult(errors=errors)
    found = []
    for person in people:
        user, error = _resolve(person)
        if error:
            result.errors.append(error)
        found.append((person, user))
    if result.errors:
        return result
    try:
        with transaction.atomic():
            for person, user in found:
                _join(study, person, user, kind, group, result)
    except _LineRefused as e:
        result.errors.append(str(e))
        result.created, result.reused = [], []
    return result


class _LineRefused(Exception):
    pass


def _join(study, person: Invitee, user, kind, group, result: InviteResult) -> None:
    if user is None:
        user = _account(person)
        result.created.append(user)
    else:
        if not user.email and person.email:
            user.email = person.email
            user.save(update_fields=["email"])
        result.reused.append(user)
    study.add_member(user, Role.ANNOTATOR, kind)
    if group is not None:
        try:
            seat_annotator(group, user)
        except SeatRefused as e:
            raise _LineRefused(f"line {person.line}: {e}") from None


def invitation_message(request, study: Study, inviter, user) -> EmailMessage:
    """The mail one person gets: the study and the inviter named; a set-password link for an
    account without a password, else the login page's."""
    ctx = {
        "study": study,
        "inviter": _name(inviter),
        "user": user,
        "days": settings.INVITATION_DAYS,
        "login_url": request.build_absolute_uri(reverse("login")),
        "study_url": request.build_absolute_uri(reverse("study", args=[study.slug])),
    }
    if not user.has_usable_password():
        path = reverse("accept_invitation", args=[make_token(user, study, inviter)])
        ctx["link"] = request.build_absolute_uri(path)
    subject = render_to_string("accounts/invitation_subject.txt", ctx).strip()
    body = render_to_string("accounts/invitation_email.txt", ctx)
    return EmailMessage(subject, body, to=[user.email])


def send_invitations(request, study: Study, inviter, users) -> str:
    """Mail everyone in `users` over one connection; "" or what went wrong (the accounts
    stay: the lead sends again from the members page)."""
    messages = [invitation_message(request, study, inviter, u) for u in users if u.email]
    try:
        with get_connection() as connection:
            connection.send_messages(messages)
    except (smtplib.SMTPException, OSError) as e:
        return f"The mail could not be sent ({e.__class__.__name__}: {e}); send it again later."
    return ""
