"""Who may sit in a group as what: one person, one seat (annotator, judge or moderator)."""

from __future__ import annotations

import pytest

from annotation.models import Membership, Role, Seat, SeatRefused
from tests.factories import make_group

pytestmark = pytest.mark.django_db


def test_it_seats_an_annotator_and_makes_them_a_member(study, alice):
    group = make_group(study, "g1")
    group.seat(alice, Seat.ANNOTATOR)
    group.seat(alice, Seat.ANNOTATOR)  # twice changes nothing
    assert list(group.annotators.all()) == [alice]
    assert Membership.objects.get(study=study, user=alice).role == Role.ANNOTATOR


@pytest.mark.parametrize(
    "held, asked, words",
    [
        (
            "moderator",
            Seat.ANNOTATOR,
            "'charlie' is the moderator of group 'g1', so cannot be an annotator of it",
        ),
        (
            "judge",
            Seat.ANNOTATOR,
            "'charlie' is a judge of group 'g1', so cannot be an annotator of it",
        ),
        (
            "annotator",
            Seat.JUDGE,
            "'charlie' is an annotator of group 'g1', so cannot be a judge of it",
        ),
        (
            "annotator",
            Seat.MODERATOR,
            "'charlie' is an annotator of group 'g1', so cannot be the moderator of it",
        ),
        (
            "judge",
            Seat.MODERATOR,
            "'charlie' is a judge of group 'g1', so cannot be the moderator of it",
        ),
    ],
)
def test_it_refuses_a_second_seat_in_the_same_group(study, charlie, held, asked, words):
    group = make_group(study, "g1")
    group.seat(charlie, held)
    with pytest.raises(SeatRefused) as e:
        group.seat(charlie, asked)
    assert str(e.value) == words
    group.refresh_from_db()
    seats = (
        group.annotators.filter(pk=charlie.pk).exists(),
        group.judges.filter(pk=charlie.pk).exists(),
        group.moderator == charlie,
    )
    assert sum(seats) == 1


def test_a_moderator_becomes_a_moderator_member_and_a_lead_stays_a_lead(study, lead, charlie):
    group = make_group(study, "g1")
    group.seat(charlie, Seat.MODERATOR)
    assert Membership.objects.get(study=study, user=charlie).role == Role.MODERATOR
    group.seat(lead, Seat.MODERATOR)
    group.refresh_from_db()
    assert group.moderator == lead
    assert Membership.objects.get(study=study, user=lead).role == Role.LEAD
