"""Who gets what from every API endpoint (issue 12): anonymous, an annotator of the card's
group, an annotator of another group, the group's moderator, a lead and a member of another
study, each endpoint, the status the pages' rules give; and round-1 blindness: whoever labels
a card never gets another's round-1 labels on it before round 1 is over in their group, nor
anything of a group they are not in."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from annotation.models import Conversation, Job, JobKind, JobStatus, Proposal, Role
from tests.factories import (
    AMBIGUOUS,
    ROLLBACK,
    label,
    make_conversation,
    make_group,
    make_study,
    make_user,
    token_client,
)

pytestmark = pytest.mark.django_db

ROLES = ("anonymous", "annotator", "other_group", "moderator", "lead", "other_study")


@pytest.fixture
def world(study, lead, alice, bob, media):
    """g1: alice and bob, moderated by `mod`, on c1 (card 1 disputed, card 2 agreed, card 3
    labelled by bob only: open); g2: dora on c2; `stranger` leads another study. A proposal,
    a finished agreement job and a finished export with its file."""
    mod, dora, stranger = make_user("mod"), make_user("dora"), make_user("stranger")
    g1 = make_group(study, "g1", annotators=[alice, bob], moderator=mod)
    make_group(study, "g2", annotators=[dora])
    make_conversation(study, "c2", n_turns=2, group=study.groups.get(name="g2"))
    c1 = make_conversation(study, "c1", n_turns=3, group=g1)
    t1, t2, t3 = c1.turns.order_by("index")
    label(t1, alice, AMBIGUOUS, note="alice's note")
    label(t1, bob)
    label(t2, alice, ROLLBACK)
    label(t2, bob, ROLLBACK)
    label(t3, bob, ROLLBACK, note="bob's secret")
    make_study("s2").add_member(stranger, Role.LEAD)
    Proposal.propose(study=study, turn=t1, proposer=alice, name="N", definition="D", reason="R")
    Job.objects.create(study=study, kind=JobKind.AGREEMENT, status=JobStatus.DONE, params={})
    export = Job.objects.create(study=study, kind=JobKind.EXPORT, status=JobStatus.DONE)
    path = media / "exports" / "gold.csv"
    path.parent.mkdir()
    path.write_text("conversation,turn\n")
    export.result_file = "exports/gold.csv"
    export.save()
    users = {"annotator": alice, "other_group": dora, "moderator": mod}
    users |= {"lead": lead, "other_study": stranger}
    return {"users": users, "turns": (t1, t2, t3), "c1": c1, "export": export}


def _client(world, role: str) -> APIClient:
    return APIClient() if role == "anonymous" else token_client(world["users"][role])


def _url(world, template: str) -> str:
    t1, _, t3 = world["turns"]
    return template.format(
        t1=t1.pk, t3=t3.pk, c1=world["c1"].pk, export=world["export"].pk, s="/api/studies/s1"
    )


# (url, expected status for: anonymous, annotator, other_group, moderator, lead, other_study)
GETS = [
    ("{s}/", 401, 200, 200, 200, 200, 404),
    ("{s}/taxonomy/", 401, 200, 200, 200, 200, 404),
    ("{s}/conversations/", 401, 404, 404, 404, 200, 404),
    ("{s}/conversations/{c1}/turns/", 401, 404, 404, 404, 200, 404),
    ("{s}/groups/", 401, 403, 403, 200, 200, 404),
    ("{s}/cards/", 401, 200, 200, 200, 200, 404),
    ("{s}/cards/{t1}/", 401, 200, 404, 404, 404, 404),
    ("{s}/annotations/", 401, 404, 404, 404, 200, 404),
    ("{s}/disputes/", 401, 200, 200, 200, 200, 404),
    ("{s}/cards/{t1}/discussion/", 401, 200, 404, 200, 200, 404),
    ("{s}/cards/{t3}/discussion/", 401, 403, 404, 200, 200, 404),
    ("{s}/consensus/", 401, 404, 404, 404, 200, 404),
    # the moderator is one of the study's experts (make_group seats them as one)
    ("{s}/proposals/", 401, 403, 403, 200, 200, 404),
    ("{s}/agreement/", 401, 404, 404, 404, 200, 404),
    ("{s}/jobs/", 401, 404, 404, 404, 200, 404),
    ("{s}/jobs/{export}/", 401, 404, 404, 404, 200, 404),
    ("{s}/jobs/{export}/download/", 401, 404, 404, 404, 200, 404),
]


@pytest.mark.parametrize("row", GETS, ids=[g[0] for g in GETS])
def test_each_role_gets_what_the_pages_give_it(world, row):
    url, expected = _url(world, row[0]), dict(zip(ROLES, row[1:], strict=True))

    got = {role: _client(world, role).get(url).status_code for role in ROLES}

    assert got == expected, url


# writes: a body that would be valid, so that only access decides
POSTS = [
    ("{s}/exports/", {"format": "csv"}, 401, 404, 404, 404, 202, 404),
    (
        "{s}/cards/{t1}/proposals/",
        {"name": "n", "definition": "d", "reason": "r"},
        401,
        201,
        404,
        404,
        404,
        404,
    ),
    (
        "{s}/cards/{t1}/consensus/",
        {"labels": [AMBIGUOUS], "rationale": "because"},
        401,
        403,
        404,
        201,
        None,  # the moderator decided first: see the lead's test below
        404,
    ),
]


@pytest.mark.parametrize("row", POSTS, ids=[p[0] for p in POSTS])
def test_each_role_may_write_what_the_pages_let_it(world, row):
    url, body = _url(world, row[0]), row[1]
    expected = dict(zip(ROLES, row[2:], strict=True))

    got = {
        role: _client(world, role).post(url, body, format="json").status_code
        for role in ROLES
        if expected[role] is not None
    }

    assert got == {role: code for role, code in expected.items() if code is not None}, url


def test_a_lead_decides_a_card_nobody_decided_and_a_second_decision_is_409(world):
    url = _url(world, "{s}/cards/{t1}/consensus/")
    body = {"labels": [], "rationale": "no smell after all"}

    first = token_client(world["users"]["lead"]).post(url, body, format="json")
    second = token_client(world["users"]["moderator"]).post(url, body, format="json")

    assert (first.status_code, first.json()["labels"]) == (201, [])
    assert second.status_code == 409


# -- blindness ---------------------------------------------------------------------------------


def _text(response) -> str:
    return response.content.decode()


def test_an_annotator_gets_nothing_of_a_card_still_open_in_round_1(world):
    alice = token_client(world["users"]["annotator"])
    _, _, t3 = world["turns"]

    disputes = alice.get("/api/studies/s1/disputes/").json()
    card = alice.get(f"/api/studies/s1/cards/{t3.pk}/")

    assert [d["turn_id"] for d in disputes["results"]] == [world["turns"][0].pk]
    assert "bob's secret" not in _text(card) and ROLLBACK not in _text(card)


def test_an_annotator_of_another_group_gets_nothing_of_that_group(world):
    dora = token_client(world["users"]["other_group"])

    disputes = dora.get("/api/studies/s1/disputes/").json()

    assert disputes["count"] == 0
    for template in ("{s}/cards/{t1}/", "{s}/cards/{t1}/discussion/", "{s}/groups/"):
        assert dora.get(_url(world, template)).status_code in (403, 404)


def test_a_lead_who_annotates_a_card_open_in_round_1_gets_no_other_labels_on_it(world, lead):
    """The lead joins g1: card 3 (bob labelled it) is open for them too."""
    g1 = world["c1"].groups.get()
    g1.annotators.add(lead)
    api = token_client(lead)
    t1, _, t3 = world["turns"]

    annotations = api.get("/api/studies/s1/annotations/").json()["results"]
    discussion = api.get(f"/api/studies/s1/cards/{t3.pk}/discussion/")
    disputes = api.get("/api/studies/s1/disputes/").json()["results"]

    assert [a for a in annotations if a["turn_id"] == t3.pk] == []
    assert discussion.status_code == 403
    assert "bob's secret" not in _text(discussion)
    assert t3.pk not in [d["turn_id"] for d in disputes]


def test_a_card_shared_with_another_group_stays_blind_until_my_round_1_is_over(world, alice):
    """c1 is shared with g3 (eve and fay), who disagree on card 3: alice's g1 has not
    finished round 1 on it, so g3's discussion of it is closed to alice."""
    eve, fay = make_user("eve"), make_user("fay")
    g3 = make_group(world["c1"].study, "g3", annotators=[eve, fay])
    Conversation.objects.filter(pk=world["c1"].pk).assign(g3)
    _, _, t3 = world["turns"]
    label(t3, eve, AMBIGUOUS, note="eve's view", group=g3)
    label(t3, fay, group=g3)
    api = token_client(alice)

    response = api.get(f"/api/studies/s1/cards/{t3.pk}/discussion/", {"group": g3.pk})

    assert response.status_code == 403
    assert "eve's view" not in _text(response)
