"""The lead's pasted list of people to invite, one a line, read into invitees: `name, email`,
`name <email>`, a bare `email`, or the bare username of an existing account (no email: the
account is found by it, invitations.py). A name without spaces is the username; a full name
("Ada Lovelace <ada@lab.org>") is kept as the person's name and the username is the email's
local part. Every bad line is named with its number; blank lines and `#` comments are
skipped."""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.core.validators import validate_email

ANGLE = re.compile(r"^(?P<name>[^<>]*)<(?P<email>[^<>]+)>$")
MAX_PEOPLE = 200  # a paste of more is refused whole: invitations go out in the request
FORMS = "expected 'name, email', 'name <email>', an email address or an existing username"


@dataclass(frozen=True)
class Invitee:
    line: int
    username: str
    email: str  # "" for a bare username: an existing account, reused as it is
    full_name: str = ""

    @property
    def first_last(self) -> tuple[str, str]:
        first, _, last = self.full_name.partition(" ")
        return first[:150], last[:150]


NOT_A_USERNAME = "cannot be a username (letters, digits and @ . + - _ only, at most 150)"


def is_username(username: str) -> bool:
    """Whether Django's user model takes `username`: 1 to 150 letters, digits, @ . + - _."""
    try:
        if not username or len(username) > 150:
            raise ValidationError("length")
        UnicodeUsernameValidator()(username)
    except ValidationError:
        return False
    return True


def _split(text: str) -> tuple[str, str] | None:
    """(name, email) of one line, or None when it has neither form."""
    found = ANGLE.match(text)
    if found:
        return found["name"].strip().strip('"').strip(), found["email"].strip()
    if "," in text:
        name, _, email = text.rpartition(",")
        return name.strip().strip('"').strip(), email.strip()
    if " " not in text and "@" in text:
        return "", text
    return None


def _username(name: str, email: str) -> tuple[str, str]:
    """(username, full name): a one-word name is the username, else the email's local part."""
    if name and " " not in name:
        return name, ""
    local = re.sub(r"[^\w.@+-]", "", email.split("@", 1)[0])
    return local, name


def read_line(number: int, text: str) -> Invitee:
    """One non-blank line into an invitee; ValueError with the line's number and why."""
    parts = _split(text)
    if parts is None and not re.search(r"[\s,<>]", text):
        parts = (text, "")  # a bare username: the account must exist (invitations._resolve)
    if parts is None:
        raise ValueError(f"line {number}: {text[:80]!r}: {FORMS}")
    name, email = parts
    if email:
        try:
            validate_email(email)
        except ValidationError:
            raise ValueError(f"line {number}: {email[:80]!r} is not an email address") from None
        username, full_name = _username(name, email)
    else:
        username, full_name = name, ""
    if not is_username(username):
        raise ValueError(f"line {number}: {username[:80]!r} {NOT_A_USERNAME}")
    return Invitee(number, username, email.lower(), full_name)


def read_roster(text: str) -> tuple[list[Invitee], list[str]]:
    """Every invitee of the pasted `text`, and the errors naming their lines (a person twice,
    by email or username, is an error on the second line)."""
    people: list[Invitee] = []
    errors: list[str] = []
    seen: dict[str, int] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        try:
            person = read_line(number, line)
        except ValueError as e:
            errors.append(str(e))
            continue
        for key in filter(None, (person.email, person.username.lower())):
            if key in seen:
                errors.append(f"line {number}: {key!r} is on line {seen[key]} too")
                break
        else:
            seen[person.username.lower()] = number
            if person.email:
                seen[person.email] = number
            people.append(person)
    if not people and not errors:
        errors.append(f"Nobody to invite: paste one person a line ({FORMS}).")
    if len(people) > MAX_PEOPLE:
        errors.append(f"{len(people)} people: invite at most {MAX_PEOPLE} at a time.")
    return people, errors
