"""The demo study (`manage.py demo`) puts the lead and the moderator in the Experts group as
annotators: neither may see the other's round-1 labels there, while the moderator still sees
the students' round-1 labels in the groups they moderate and do not annotate."""

from __future__ import annotations

import pytest

from annotation.management.commands.demo import create_demo
from annotation.models import Annotation, Role
from tests.access.probe import Secret, leaks, sees

pytestmark = pytest.mark.django_db


def test_it_keeps_every_demo_users_round_1_blind():
    study = create_demo()
    cards = []  # each annotator of each group labels a card of their own, blind
    codes = iter(t.code for t in study.taxonomy_version.type_list())  # one type per card
    for group in study.groups.prefetch_related("annotators"):
        turns = group.conversations.order_by("external_id").first().turns.order_by("index")
        for author, turn in zip(group.annotators.order_by("username"), turns, strict=False):
            secret = Secret(next(codes), f"{author}-secret-note", f"{author}-secret-evidence")
            types = [study.taxonomy_version.types_by_code()[secret.code]]
            Annotation.submit(
                turn=turn,
                group=group,
                annotator=author,
                types=types,
                note=secret.note,
                evidence=secret.evidence,
            )
            cards.append((group, author, turn, secret))

    leaking, hidden = [], []
    for membership in study.memberships.select_related("user"):
        user = membership.user
        for group, author, turn, secret in cards:
            if user == author:
                continue
            if group.annotators.filter(pk=user.pk).exists():
                cells = leaks(user, "demo", turn, secret)
                leaking += [(user.username, group.name, cell) for cell in cells]
            elif membership.role == Role.LEAD or group.moderator_id == user.pk:
                if not sees(user, "demo", turn, secret):
                    hidden.append((user.username, group.name))

    assert leaking == []
    assert hidden == []
