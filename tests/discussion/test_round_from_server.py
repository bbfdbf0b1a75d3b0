"""The server decides which round a label lands in, never the form: the posted `round` is
only the round the form was shown for, compared to catch a stale form (409, nothing saved)."""

from __future__ import annotations

import pytest

from annotation.models import Annotation, CardState
from tests.factories import HTMX, label, study_url

pytestmark = pytest.mark.django_db


def post(client, user, turn, round, htmx=False, codes=("code_rollback",)):
    client.force_login(user)
    data = {"types": list(codes), "round": round}
    return client.post(study_url("discussion", turn), data, **(HTMX if htmx else {}))


def rows(turn) -> list[tuple[str, int, bool]]:
    found = Annotation.objects.filter(turn=turn).select_related("annotator")
    return sorted((a.annotator.username, a.round, a.is_current) for a in found)


@pytest.mark.parametrize("htmx", [False, True])
def test_it_refuses_round_0_on_an_agreed_card(client, alice, bob, turns_a, htmx):
    turn = turns_a[0]
    label(turn, alice, "code_rollback")
    label(turn, bob, "code_rollback")
    before = rows(turn)

    response = post(client, alice, turn, "0", htmx=htmx, codes=("must_do_omission",))

    assert response.status_code == 409
    assert "nothing was saved" in response.content.decode()
    assert rows(turn) == before
    assert not Annotation.objects.filter(round=0).exists()


@pytest.mark.parametrize("posted", ["0", "-1", "1", "3", "two", "99999999999999999999"])
def test_it_refuses_a_form_for_another_round_on_a_disputed_card(client, alice, disputed, posted):
    before = rows(disputed)

    response = post(client, alice, disputed, posted)

    assert response.status_code == 409, response.content.decode()[:300]
    html = response.content.decode()
    assert "This form was for round" in html and "the card is in round 2" in html
    assert rows(disputed) == before
    assert CardState.objects.get(turn=disputed).round == 2


def test_it_saves_in_the_round_under_way_without_a_token(client, alice, disputed):
    client.force_login(alice)

    response = client.post(study_url("discussion", disputed), {"types": ["code_rollback"]})

    assert response.status_code == 302
    mine = Annotation.objects.get(turn=disputed, annotator=alice, is_current=True, round=2)
    assert mine.codes == frozenset({"code_rollback"})


def test_it_saves_the_form_for_the_round_under_way(client, alice, disputed):
    response = post(client, alice, disputed, "2", htmx=True)

    assert response.status_code == 200
    assert ("alice", 2, True) in rows(disputed)
