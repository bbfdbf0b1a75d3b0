"""Who gets what from every API endpoint (issue 12): anonymous, an annotator of the card's
group, an annotator of another group, the group's moderator, a lead, a lead who annotates in
the group and a member of another study, each endpoint, the status the pages' rules give;
and round-1 blindness: whoever labels a card never gets another's round-1 labels, notes,
evidence or time on it, nor an agreement result counting them, before round 1 is over in
their group, nor anything of a group they are not in. Every answer's body is read (a
download's file too), for every role and every author (issue 24): tests/access/world.py."""

from __future__ import annotations

import pytest

from annotation.models import Conversation
from tests.access import world as matrix
from tests.factories import AMBIGUOUS, label, make_group, make_user, token_client

pytestmark = pytest.mark.django_db

ROLES = matrix.ROLES
SIGNATURE = "signature_mismatch"  # bob's label on card 3 (matrix.SECRETS)


@pytest.fixture
def world(study, lead, alice, bob, media):
    """tests/access/world.py: g1 (alice, bob, then lena; moderator `mod`) on c1, card 1
    disputed, card 2 agreed, card 3 open (bob and lena labelled it); g2: dora on c2; a
    proposal, a finished agreement job and two finished exports (the lead's, lena's)."""
    return matrix.build(study, lead, alice, bob)


def _client(world, role: str):
    return matrix.api_client(world, role)


def _url(world, template: str) -> str:
    t1, _, t3 = world["turns"]
    return template.format(
        t1=t1.pk,
        t3=t3.pk,
        u1=world["u1"].pk,
        v1=world["v1"].pk,
        c1=world["c1"].pk,
        export=world["export"].pk,
        lena_export=world["lena_export"].pk,
        agreement=world["agreement"].pk,
        times=world["times"].pk,
        s="/api/studies/s1",
    )


# (url, expected status for: anonymous, annotator, other_group, moderator, lead,
# lead_annotating, other_study)
GETS = [
    ("{s}/", 401, 200, 200, 200, 200, 200, 404),
    ("{s}/taxonomy/", 401, 200, 200, 200, 200, 200, 404),
    ("{s}/conversations/", 401, 404, 404, 404, 200, 200, 404),
    ("{s}/conversations/{c1}/turns/", 401, 404, 404, 404, 200, 200, 404),
    ("{s}/groups/", 401, 403, 403, 200, 200, 200, 404),
    ("{s}/cards/", 401, 200, 200, 200, 200, 200, 404),
    ("{s}/cards/{t1}/", 401, 200, 404, 404, 404, 200, 404),
    ("{s}/cards/{t3}/", 401, 200, 404, 404, 404, 200, 404),
    ("{s}/cards/{u1}/", 401, 404, 200, 404, 404, 404, 404),
    ("{s}/cards/{v1}/", 401, 404, 200, 404, 404, 200, 404),
    ("{s}/cards/{v1}/discussion/", 401, 404, 403, 404, 200, 403, 404),
    ("{s}/annotations/", 401, 404, 404, 404, 200, 200, 404),
    ("{s}/disputes/", 401, 200, 200, 200, 200, 200, 404),
    ("{s}/cards/{t1}/discussion/", 401, 200, 404, 200, 200, 200, 404),
    ("{s}/cards/{t3}/discussion/", 401, 403, 404, 200, 200, 403, 404),
    ("{s}/consensus/", 401, 404, 404, 404, 200, 200, 404),
    # the moderator is one of the study's experts (make_group seats them as one)
    ("{s}/proposals/", 401, 403, 403, 200, 200, 200, 404),
    # lena labels card 3 blind: the agreement results count the others' labels on it
    ("{s}/agreement/", 401, 404, 404, 404, 200, 403, 404),
    ("{s}/jobs/", 401, 404, 404, 404, 200, 200, 404),
    ("{s}/jobs/{agreement}/", 401, 404, 404, 404, 200, 200, 404),
    ("{s}/jobs/{agreement}/download/", 401, 404, 404, 404, 404, 403, 404),
    ("{s}/jobs/{export}/", 401, 404, 404, 404, 200, 200, 404),
    # time per card's kept tables: everyone's times, bob's on card 3 too; withheld from lena
    # (its result null), no file
    ("{s}/jobs/{times}/", 401, 404, 404, 404, 200, 200, 404),
    ("{s}/jobs/{times}/download/", 401, 404, 404, 404, 404, 403, 404),
    # the lead's export shows the others' labels on card 3: not lena's to have
    ("{s}/jobs/{export}/download/", 401, 404, 404, 404, 200, 403, 404),
    ("{s}/jobs/{lena_export}/download/", 401, 404, 404, 404, 200, 200, 404),
    # the machine judges' runs (issue 22): the leads', not while the agreement lock applies
    ("{s}/judge-runs/", 401, 404, 404, 404, 200, 403, 404),
]


@pytest.mark.parametrize("row", GETS, ids=[g[0] for g in GETS])
def test_each_role_gets_what_the_pages_give_it(world, row):
    url, expected = _url(world, row[0]), dict(zip(ROLES, row[1:], strict=True))

    got = {role: _client(world, role).get(url).status_code for role in ROLES}

    assert got == expected, url


# writes: a body that would be valid, so that only access decides
POSTS = [
    ("{s}/exports/", {"format": "csv"}, 401, 404, 404, 404, 202, 202, 404),
    (
        "{s}/cards/{t1}/proposals/",
        {"name": "n", "definition": "d", "reason": "r"},
        401,
        201,
        404,
        404,
        404,
        201,
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
        403,  # lena annotates the card: her own dispute is not hers to settle
        404,
    ),
]


@pytest.mark.parametrize("row", POSTS, ids=[p[0] for p in POSTS])
def test_each_role_may_write_what_the_pages_let_it(world, row):
    url, body = _url(world, row[0]), row[1]
    expected = dict(zip(ROLES, row[2:], strict=True))

    answers = {
        role: _client(world, role).post(url, body, format="json")
        for role in ROLES
        if expected[role] is not None
    }

    got = {role: response.status_code for role, response in answers.items()}
    assert got == {role: code for role, code in expected.items() if code is not None}, url
    for role, response in answers.items():
        leaked, _ = matrix.findings(role, [(f"API POST {url}", response, False)])
        assert leaked == [], role


def test_a_lead_decides_a_card_nobody_decided_and_a_second_decision_is_409(world):
    url = _url(world, "{s}/cards/{t1}/consensus/")
    body = {"labels": [], "rationale": "no smell after all"}

    first = token_client(world["users"]["lead"]).post(url, body, format="json")
    second = token_client(world["users"]["moderator"]).post(url, body, format="json")

    assert (first.status_code, first.json()["labels"]) == (201, [])
    assert second.status_code == 409


# -- blindness ---------------------------------------------------------------------------------


# what each role must find in the API's answers of each secret it may see (times and the
# open sort's tags are on the pages only: tests/access/test_page_matrix.py)
SEEN_IN_THE_API = {"labels": ("note", "evidence", "label"), "tags": ()}


@pytest.mark.parametrize("role", ROLES)
def test_no_answer_carries_a_secret_the_role_may_not_see(world, role):
    """Every GET of the table, its whole body (a download's file too), for every author's
    secret: labels, note, evidence, time, and the agreement result counting them."""
    api = _client(world, role)
    answers = [
        (f"API GET {row[0]}", api.get(_url(world, row[0])), row[0] == "{s}/taxonomy/")
        for row in GETS
    ]

    leaked, seen = matrix.findings(role, answers)

    assert leaked == []
    matrix.assert_seen(role, seen, SEEN_IN_THE_API, agreement=role == "lead")


def _text(response) -> str:
    return response.content.decode()


def test_an_annotator_gets_nothing_of_a_card_still_open_in_round_1(world):
    alice = token_client(world["users"]["annotator"])
    _, _, t3 = world["turns"]

    disputes = alice.get("/api/studies/s1/disputes/").json()
    card = alice.get(f"/api/studies/s1/cards/{t3.pk}/")

    assert [d["turn_id"] for d in disputes["results"]] == [world["turns"][0].pk]
    assert "bob-secret-note" not in _text(card) and SIGNATURE not in _text(card)


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
    assert "bob-secret-note" not in _text(discussion)
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
