"""The session page of an episode group (issue 21 point 2): who may open it, the whole
session with its extracted episodes, recording a missed episode (turn range, goal, quotes
located in the stored text, every refusal naming its field, nothing half-written), and the
coverage rating (refused until every extracted episode is opened or judged; a new rating
keeps the old row). The blindness rules are tested in tests/access/test_episode_session.py."""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import IntegrityError
from django.urls import reverse

from annotation.actions import episodes as actions
from annotation.models import (
    Conversation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    EpisodeSeen,
    EvidenceQuote,
    Job,
    JobKind,
    Source,
)
from tests.factories import HTMX, make_user

from . import session_world
from .session_world import session_url

pytestmark = pytest.mark.django_db

User = get_user_model()


@pytest.fixture
def world(agents, tmp_path, alice, bob):
    return session_world.build(agents, tmp_path, alice, bob)


def _page(client, world, conversation=None, **query) -> str:
    response = client.get(session_url(world, conversation), query)
    assert response.status_code == 200, response.content[:300]
    return response.content.decode()


def _open_all(client, world, conversation=None) -> None:
    conversation = conversation or world["s1"]
    for e in Episode.objects.filter(conversation=conversation, run__isnull=False):
        url = session_url(world, conversation, "episode_session_episode", e.pk)
        assert client.get(url, **HTMX).status_code == 200


# --- who may open it -------------------------------------------------------------------------


def test_only_the_groups_annotators_open_the_session(client, world, alice):
    url = session_url(world)
    assert client.get(url).status_code == 302  # log in first
    stranger = make_user("stranger")
    for user, status in (
        (stranger, 404),  # not a member: the study does not exist for them
        (world["lena"], 404),  # a lead who does not annotate it
        (world["moe"], 404),  # the group's moderator: not an annotator of the session
        (alice, 200),
    ):
        client.force_login(user)
        assert client.get(url).status_code == status, user.username


def test_a_turn_group_annotator_is_told_why(client, world):
    client.force_login(world["carol"])
    response = client.get(session_url(world, world["s2"]))
    assert response.status_code == 403
    assert "turn by turn, not by episodes" in response.content.decode()
    # and s1, not assigned to carol's group, does not exist for her
    assert client.get(session_url(world)).status_code == 404


def test_another_group_named_or_another_studys_session_is_404(client, world, alice):
    client.force_login(alice)
    assert client.get(session_url(world), {"group": world["turn_group"].pk}).status_code == 404
    assert client.get(session_url(world), {"group": "x"}).status_code == 404
    other = reverse("episode_session", args=["s1", world["s1"].pk])  # the study s1's
    assert client.get(other).status_code == 404


def test_every_post_is_closed_to_non_annotators(client, world):
    client.force_login(world["lena"])
    for name in ("episode_session_quote", "episode_session_create", "episode_session_coverage"):
        response = client.post(session_url(world, None, name), {"coverage": "1", "goal": "g"})
        assert response.status_code == 404, name
    assert not CoverageRating.objects.exists()
    assert not Episode.objects.filter(run__isnull=True).exists()


# --- what the page shows ---------------------------------------------------------------------


def test_the_page_shows_every_turn_and_the_extracted_episodes(client, world, alice):
    client.force_login(alice)
    body = _page(client, world)
    for i in range(1, 5):
        assert f"Turn {i} of 4" in body
    assert body.count('class="turn session-turn"') == 4
    assert "rm -rf tests/" in body  # the tool call, as the card renders it
    e1, e2 = world["extracted"]
    assert f'id="episode-{e1.pk}"' in body and f'id="episode-{e2.pk}"' in body
    assert "Turns 1–2" in body and "Turns 3–4" in body and "keep the API" in body
    assert body.count("not yet opened") == 2


def test_the_page_links_the_episode_card_once_it_exists(world, alice):
    from annotation.views.episode_session import card_url

    group = world["group"]
    try:
        url = reverse("episode_card", args=["ag", world["extracted"][0].pk])
    except Exception:  # noqa: BLE001 - the card is another helper's page
        assert card_url("ag", world["extracted"][0].pk, group) == ""
    else:
        assert card_url("ag", world["extracted"][0].pk, group) == f"{url}?group={group.pk}"


def test_opening_an_episode_records_it_seen_and_shows_its_quotes(client, world, alice):
    client.force_login(alice)
    e1 = world["extracted"][0]
    url = session_url(world, None, "episode_session_episode", e1.pk)
    body = client.get(url, **HTMX).content.decode()
    assert "do not touch the API" in body and 'class="opened-episode"' in body
    assert EpisodeSeen.objects.filter(episode=e1, annotator=alice).count() == 1
    client.get(url, **HTMX)
    assert EpisodeSeen.objects.filter(episode=e1, annotator=alice).count() == 1
    # without htmx: the page, at the episode
    response = client.get(url)
    assert response.status_code == 302 and response.url.endswith(f"#episode-{e1.pk}")
    # another session's episode is not this session's
    other = session_url(world, None, "episode_session_episode", world["s2_episode"].pk)
    assert client.get(other, **HTMX).status_code == 404


def test_the_sessions_list(client, world, alice):
    client.force_login(alice)
    EpisodeJudgement.objects.create(
        episode=world["extracted"][0], annotator=alice, group=world["group"], valid=True,
        taxonomy_version=world["study"].taxonomy_version, source=Source.BROWSER,
    )  # fmt: skip
    body = client.get(reverse("episode_sessions", args=["ag"])).content.decode()
    assert session_url(world) + f"?group={world['group'].pk}" in body
    assert "<td>2</td>\n    <td>1</td>" in body  # s1: two extracted, one judged by me
    client.force_login(world["carol"])  # a turn group's annotator has none
    assert (
        "You annotate no session"
        in client.get(reverse("episode_sessions", args=["ag"])).content.decode()
    )


def test_the_sessions_list_comes_a_page_at_a_time(client, world, alice, monkeypatch):
    """Issue 25: the list was every session on one page. Each page holds SESSIONS_PAGE, in
    the list's order, with the same counts as on one page, and says how many there are."""
    from annotation.views import episode_session

    client.force_login(alice)
    url = reverse("episode_sessions", args=["ag"])
    whole = client.get(url).content.decode()
    rows = re.findall(r"<tr>\s*<td><a href=.*?</tr>", whole, flags=re.S)
    assert len(rows) >= 2 and "sessions-pages" not in whole
    monkeypatch.setattr(episode_session, "SESSIONS_PAGE", 1)
    paged = []
    for n in range(1, len(rows) + 1):
        body = client.get(url, {"page": n}).content.decode()
        assert f"page {n} of {len(rows)} ({len(rows)} sessions)" in body
        paged += re.findall(r"<tr>\s*<td><a href=.*?</tr>", body, flags=re.S)
    assert paged == rows


# --- recording a missed episode --------------------------------------------------------------


def _quote(client, world, **selection):
    url = session_url(world, None, "episode_session_quote")
    return client.post(url, selection, **HTMX)


def test_a_selection_is_located_in_the_stored_text(client, world, alice):
    client.force_login(alice)
    # rendered Markdown drops the ** and the blank line: the stored span keeps them
    response = _quote(client, world, quote="changed the API of", turn="2", part="reply", hint="2")
    assert response.status_code == 200
    body = response.content.decode()
    assert 'name="quote_text" value="changed** the API\n\nof"' in body
    assert 'data-quote-where="2:reply:4-25"' in body


def test_a_tool_part_can_be_quoted(client, world, alice):
    client.force_login(alice)
    response = _quote(
        client, world, quote="rm -rf tests/", turn="3", part="tool_call", part_index="1"
    )
    assert response.status_code == 200, response.content
    body = response.content.decode()
    assert 'name="quote_part" value="tool_call"' in body
    assert 'name="quote_part_index" value="1"' in body
    assert "Turn 3&#x27;s tool call (part 2)" in body
    refused = _quote(
        client, world, quote="rm -rf tests/", turn="3", part="tool_call", part_index="0"
    )
    assert refused.status_code == 422  # part 0 is the thinking, not a tool call
    assert "evidence: turn 3&#x27;s tool call (part 1) is not a part of this session" in (
        refused.content.decode()
    )


def test_a_selection_not_in_the_text_is_refused_by_name(client, world, alice):
    client.force_login(alice)
    response = _quote(client, world, quote="words nobody wrote", turn="1", part="user")
    assert response.status_code == 422
    assert (
        "evidence: “words nobody wrote” is not in the stored text of turn 1&#x27;s user message"
        in (response.content.decode())
    )
    assert _quote(client, world, quote="x", turn="9", part="user").status_code == 422
    assert _quote(client, world, quote="x", turn="", part="").status_code == 422


def _post_episode(client, world, **fields):
    data = {"first_turn": "2", "last_turn": "3", "goal": "keep the tests"} | fields
    return client.post(session_url(world, None, "episode_session_create"), data)


USER_QUOTE = {  # turn 1's user message, characters 38-58
    "quote_turn": "1", "quote_part": "user", "quote_part_index": "", "quote_start": "38",
    "quote_end": "58", "quote_text": "do not touch the API",
}  # fmt: skip


def test_an_episode_is_saved_with_its_quotes(client, world, alice):
    client.force_login(alice)
    call = {
        "quote_turn": "3", "quote_part": "tool_call", "quote_part_index": "1",
        "quote_start": "16", "quote_end": "29", "quote_text": "rm -rf tests/",
    }  # fmt: skip
    data = {k: [USER_QUOTE[k], call[k]] for k in USER_QUOTE}
    response = _post_episode(client, world, **data)
    assert response.status_code == 302, response.content.decode()[:2000]
    episode = Episode.objects.get(run__isnull=True)
    assert (episode.created_by, episode.first_turn, episode.last_turn) == (alice, 2, 3)
    assert episode.goal == "keep the tests" and episode.confidence is None
    quotes = list(episode.evidence.select_related("turn").order_by("order"))
    assert [(q.turn.index, q.part, q.part_index, q.start, q.end, q.quote) for q in quotes] == [
        (1, "user", None, 38, 58, "do not touch the API"),
        (3, "tool_call", 1, 16, 29, "rm -rf tests/"),
    ]
    page = client.get(response.url).content.decode()
    assert "Saved: your episode on turns 2-3 (2 quotes)." in page
    assert 'id="my-episodes"' in page and "keep the tests" in page


@pytest.mark.parametrize(
    ("fields", "field", "why"),
    [
        ({"first_turn": "0"}, "first_turn", "turn 0 is not a turn of this session (1-4)."),
        ({"first_turn": "two"}, "first_turn", "choose a turn of this session (1-4)."),
        ({"last_turn": "9"}, "last_turn", "turn 9 is not a turn of this session (1-4)."),
        ({"first_turn": "3", "last_turn": "2"}, "last_turn", "turn 2 is before the first turn, 3."),
        ({"goal": "   "}, "goal", "write what the developer wanted (the alignment goal)."),
        (
            USER_QUOTE | {"quote_start": "37"},
            "evidence[1]",
            "the quote is not the text at characters 37-58 of turn 1&#x27;s user message",
        ),
        (
            USER_QUOTE | {"quote_turn": "7"},
            "evidence[1]",
            "turn 7 is not a turn of this session (1-4).",
        ),
        (
            USER_QUOTE | {"quote_part": "tool_call", "quote_part_index": "0"},
            "evidence[1]",
            "turn 1&#x27;s tool call (part 1) is not a part of this session.",
        ),
        (
            USER_QUOTE | {"quote_end": "9999"},
            "evidence[1]",
            "characters 38-9999 are not a span of turn 1&#x27;s user message",
        ),
        (
            USER_QUOTE | {"quote_start": "x"},
            "evidence[1]",
            "its turn and characters must be whole numbers.",
        ),
        ({"quote_text": "orphan"}, "evidence", "the quotes came incomplete; add them again."),
    ],
)
def test_bad_input_is_refused_naming_the_field(client, world, alice, fields, field, why):
    client.force_login(alice)
    response = _post_episode(client, world, **fields)
    assert response.status_code == 422
    body = response.content.decode()
    assert f"Not saved: {field}: {why}" in body
    assert not Episode.objects.filter(run__isnull=True).exists()
    assert 'value="keep the tests"' not in body or "keep the tests</textarea>" in body


def test_every_refusal_is_said_at_once_and_the_input_comes_back(client, world, alice):
    client.force_login(alice)
    response = _post_episode(client, world, first_turn="9", goal="", **USER_QUOTE)
    body = response.content.decode()
    assert "Not saved: first_turn:" in body and "Not saved: goal:" in body
    assert 'name="first_turn" min="1" max="4" value="9"' in body
    assert 'name="quote_text" value="do not touch the API"' in body  # the quote stays


def test_nothing_is_half_written(client, world, alice, monkeypatch):
    client.force_login(alice)

    def broken(*args, **kwargs):
        raise IntegrityError("the quotes could not be written")

    monkeypatch.setattr(EvidenceQuote.objects, "bulk_create", broken)
    with pytest.raises(IntegrityError):
        _post_episode(client, world, **USER_QUOTE)
    assert not Episode.objects.filter(run__isnull=True).exists()


# --- the coverage rating ---------------------------------------------------------------------


def _rate(client, world, value, conversation=None):
    return client.post(
        session_url(world, conversation, "episode_session_coverage"), {"coverage": value}
    )


def test_coverage_is_refused_until_every_extracted_episode_is_opened_or_judged(
    client, world, alice
):
    client.force_login(alice)
    e1, e2 = world["extracted"]
    page = _page(client, world)
    assert "<fieldset disabled>" in page and "2 not yet seen (turns 1-2, turns 3-4)" in page
    response = _rate(client, world, "1")
    assert response.status_code == 409
    assert (
        "coverage: not saved. Open or judge every extracted episode of this session first: 2 "
        in (response.content.decode())
    )
    # a judgement counts as seen; opening the other one opens the question
    EpisodeJudgement.objects.create(
        episode=e1, annotator=alice, group=world["group"], valid=True,
        taxonomy_version=world["study"].taxonomy_version, source=Source.BROWSER,
    )  # fmt: skip
    assert "1 not yet seen (turns 3-4)" in _rate(client, world, "1").content.decode()
    assert not CoverageRating.objects.exists()
    client.get(session_url(world, None, "episode_session_episode", e2.pk), **HTMX)
    assert "<fieldset disabled>" not in _page(client, world)
    response = _rate(client, world, "1")
    assert response.status_code == 302
    page = client.get(response.url).content.decode()
    assert "Saved: coverage 1 (partly) for this session." in page
    assert "Your rating: 1 (partly)." in page


def test_opening_the_episode_card_counts_as_seen(client, world, alice):
    from django.urls import reverse

    client.force_login(alice)
    for e in world["extracted"]:
        card = reverse("episode_card", args=[world["study"].slug, e.pk])
        assert client.get(card, {"group": world["group"].pk}).status_code == 200
    assert "<fieldset disabled>" not in _page(client, world)
    assert _rate(client, world, "2").status_code == 302
    assert CoverageRating.objects.get(annotator=alice).rating == 2


def test_a_moderator_reading_the_card_records_nothing(client, world):
    from django.urls import reverse

    from annotation.models import EpisodeSeen

    client.force_login(world["moe"])
    e1 = world["extracted"][0]
    card = reverse("episode_card", args=[world["study"].slug, e1.pk])
    assert client.get(card, {"group": world["group"].pk}).status_code == 200
    assert not EpisodeSeen.objects.exists()


def test_a_new_rating_keeps_the_old_row(client, world, alice):
    client.force_login(alice)
    _open_all(client, world)
    _rate(client, world, "2")
    _rate(client, world, "2")  # the same again: nothing new
    _rate(client, world, "0")
    rows = CoverageRating.objects.filter(annotator=alice).order_by("pk")
    assert [(r.rating, r.is_current, r.source) for r in rows] == [
        (2, False, Source.BROWSER),
        (0, True, Source.BROWSER),
    ]


def test_a_rating_that_is_not_0_1_or_2_is_refused(client, world, alice):
    client.force_login(alice)
    _open_all(client, world)
    for value in ("3", "-1", "x", ""):
        response = _rate(client, world, value)
        assert response.status_code == 422
        assert "coverage: choose 0 (none), 1 (partly) or 2 (fully)" in response.content.decode()
    assert not CoverageRating.objects.exists()


def test_a_session_without_extracted_episodes_may_be_rated_at_once(client, world, alice):
    client.force_login(alice)
    Episode.objects.filter(conversation=world["s2"]).delete()
    assert _rate(client, world, "0", world["s2"]).status_code == 302


# --- the measures read what the page wrote ---------------------------------------------------


def test_a_page_created_episode_and_rating_flow_into_the_agreement_job(client, world, alice, bob):
    for user, rating in ((alice, "2"), (bob, "1")):
        client.force_login(user)
        _open_all(client, world)
        assert _rate(client, world, rating).status_code == 302
    client.force_login(alice)
    # turns 1-2: gpt's s1 1-2 matches it (IoU 1); turns 2-3 nothing (IoU 1/3 with either)
    assert (
        _post_episode(client, world, first_turn="1", last_turn="2", **USER_QUOTE).status_code == 302
    )
    assert _post_episode(client, world, first_turn="2", last_turn="3").status_code == 302
    call_command("agreement", "ag", "--save", "--bootstrap", "0", stdout=StringIO())
    job = Job.objects.filter(study=world["study"], kind=JobKind.AGREEMENT).latest("pk")
    coverage = job.result["episodes"]["overall"]["coverage"]
    assert coverage["rating"]["mean"] == 1.5  # s1: (2 + 1) / 2, the only rated session
    assert (coverage["people_episodes"], coverage["matched_by_extracted"]) == (2, 1)
    assert coverage["matched_share"] == 0.5


def test_the_actions_refuse_without_the_page_too(world, alice):
    """The domain operations check for themselves (the API or a command may call them)."""
    with pytest.raises(actions.CoverageRefused, match="2 not yet seen"):
        actions.rate_coverage(alice, world["group"], world["s1"], 1)
    with pytest.raises(actions.EpisodeRefused) as refused:
        actions.check_episode(world["s1"], _Post({"first_turn": "1", "last_turn": "1"}))
    assert refused.value.errors == {"goal": "write what the developer wanted (the alignment goal)."}


class _Post(dict):
    def getlist(self, key):
        return [self[key]] if key in self else []


def test_the_study_page_leads_an_episode_groups_annotator_to_the_sessions(client, world, alice):
    client.force_login(alice)
    body = client.get(reverse("study", args=["ag"])).content.decode()
    assert f'href="{reverse("episode_sessions", args=["ag"])}"' in body
    assert "Sessions of E1 (episodes, coverage)" in body
    client.force_login(world["carol"])  # a turn group's annotator: no such link
    assert "(episodes, coverage)" not in client.get(reverse("study", args=["ag"])).content.decode()


def test_two_first_ratings_at_once_keep_one(client, world, alice, monkeypatch):
    """Two tabs send a first rating at the same moment: the unique current rating keeps
    one; the other is told (409), not a server error."""
    client.force_login(alice)
    _open_all(client, world)
    create = CoverageRating.objects.create

    def raced(**fields):  # the other tab's rating lands first
        CoverageRating.objects.bulk_create([CoverageRating(**(fields | {"rating": 0}))])
        return create(**fields)

    monkeypatch.setattr(CoverageRating.objects, "create", raced)
    response = _rate(client, world, "2")
    assert response.status_code == 409
    assert "another rating of yours for this session was saved at the same moment" in (
        response.content.decode()
    )
    assert not CoverageRating.objects.filter(rating=2).exists()  # nothing of it written


def test_the_agents_demo_opens_on_the_session_page(client):
    """`demo --study agents`: bob, who judged and rated agents-01, opens it and sees its
    extracted episodes as judged and the episode alice recorded; nothing of the runs' own
    labels."""
    call_command("demo", "--study", "agents", stdout=StringIO())
    client.force_login(User.objects.get(username="bob"))
    sessions = client.get(reverse("episode_sessions", args=["agents-demo"])).content.decode()
    assert sessions.count('<tr>\n    <td><a href="/s/agents-demo/sessions/') == 6
    conversation = Conversation.objects.get(external_id="agents-01-flaky-tests")
    page = client.get(reverse("episode_session", args=["agents-demo", conversation.pk]))
    body = page.content.decode()
    assert page.status_code == 200 and "Your rating: 2 (fully)." in body
    assert "keep the flaky test and make it deterministic" in body and "by alice" in body
    assert "not yet opened" not in body and "developer_constraint_violation" not in body
