"""The episode card (issue 21 point 2): who may open it, the questions in order, the round
rules on the server (blind round 1, a discussion round after a disagreement, consensus), the
at-most-2 rule of `cause` refused with the types named, and a run's own verdict never shown."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from annotation.importers.episodes import import_episodes
from annotation.models import Conversation, Episode, EpisodeJudgement, Role, Unit
from tests.factories import HTMX, make_group, make_user

from .conftest import episode, write_jsonl

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(agents, tmp_path):
    alice, bob, carl = make_user("alice"), make_user("bob"), make_user("carl")
    mod, lead, stranger = make_user("mod"), make_user("lead"), make_user("stranger")
    group = make_group(agents, "E1", annotators=[alice, bob], moderator=mod)
    group.unit = Unit.EPISODE
    group.save()
    other = make_group(agents, "E2", annotators=[carl])
    other.unit = Unit.EPISODE
    other.save()
    agents.add_member(lead, Role.LEAD)
    agents.add_member(stranger, Role.ANNOTATOR)  # a member in no group
    make_user("outsider")  # no member of the study
    Conversation.objects.filter(external_id="s1").assign(group)
    Conversation.objects.filter(external_id="s2").assign(other)
    tool = {"turn": 2, "part": "tool_result", "quote": "removed 12 files"}
    records = [
        episode(first=1, last=2, evidence=[{"turn": 1, "part": "user",
                "quote": "do not touch the API"}, tool],
                valid=False, invalid_reason="normative_prior_bias",
                labels={"symptom": ["scope_overreach"]}),
        episode(first=3, last=4),
        episode("s2", 1, 2),
    ]  # fmt: skip
    import_episodes(agents, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    e1, e2, e3 = Episode.objects.order_by("conversation__external_id", "first_turn")
    return {"study": agents, "group": group, "e1": e1, "e2": e2, "e3": e3}


def client_of(username: str) -> Client:
    client = Client()
    client.force_login(make_user(username))
    return client


def url(e, name="episode_card") -> str:
    return reverse(name, args=["ag", e.pk])


def post(username, e, round=1, **data) -> object:
    data = {"round": str(round), **data}
    return client_of(username).post(url(e), data)


def types_of(study, axis: str) -> list[str]:
    return [t.code for t in study.taxonomy_version.type_list() if t.axis.code == axis]


def test_who_opens_the_card_and_its_partial(world):
    e1 = world["e1"]
    expected = {"alice": 200, "bob": 200, "mod": 200, "lead": 200, "carl": 404, "stranger": 404}
    expected["outsider"] = 404
    for name in (url(e1), url(e1, "episode_context")):
        got = {who: client_of(who).get(name, **HTMX).status_code for who in expected}
        assert got == expected, name
        assert Client().get(name).status_code == 302
    # a moderator reads, never judges: told so
    response = post("mod", e1, valid="1")
    assert response.status_code == 403 and b"Only the episode&#x27;s annotators" in response.content
    assert post("carl", e1, valid="1").status_code == 404
    assert not EpisodeJudgement.objects.exists()


def test_the_questions_come_in_order_and_the_keys_are_shown(world):
    page = client_of("alice").get(url(world["e1"])).content.decode()
    valid = page.index("1. Is the episode valid (supported by its evidence)?")
    why = page.index("2. Why is it invalid?")
    axes = page.index("2. The episode on the taxonomy's axes")
    assert valid < why < axes
    assert re.search(r'data-hotkey="p"[^>]*>\s*<kbd>p</kbd> Yes, valid', page)
    assert re.search(r'data-hotkey="n"[^>]*>\s*<kbd>n</kbd> No, invalid', page)
    assert "Show the rest of the session <kbd>c</kbd>" in page
    # the sub-reason under its reason
    assert 'class="reason sub-reason"' in page and "invisible agent action" in page
    # the goal and the run, never its confidence (it would anchor the judgement, as on the
    # session page)
    assert "keep the API" in page and "<code>gpt</code>." in page
    assert "confidence" not in page and "0.90" not in page


def test_each_quote_is_marked_in_place_and_its_tool_part_unfolded(world):
    page = client_of("alice").get(url(world["e1"])).content.decode()
    assert "<mark>do not touch the API</mark>" in page
    assert re.search(r'<details class="part" data-kind="tool_result" open data-quoted>', page)
    assert re.search(r"<mark>[^<]*removed 12 files[^<]*</mark>", page)
    # a part without a quote stays folded
    assert re.search(r'<details class="part" data-kind="tool_call">', page)


def test_the_rest_of_the_session_comes_one_request_away(world):
    body = client_of("alice").get(url(world["e1"], "episode_context"), **HTMX).content.decode()
    assert "Turn 3 of 4" in body and "Turn 4 of 4" in body and "Turn 1 of 4" not in body
    assert 'id="session-after"' in body and 'hx-swap-oob="true"' in body


def test_round_1_is_blind_then_a_disagreement_opens_a_discussion_round(world):
    e1 = world["e1"]
    response = post("alice", e1, valid="0", invalid_reason="observational_blind_spot")
    assert response.status_code == 302
    # bob sees nothing of alice's judgement, not even that there is one
    page = client_of("bob").get(url(e1)).content.decode()
    assert "alice" not in page and "The judgements" not in page
    # alice revises while round 1 is open: one current row
    post("alice", e1, valid="0", invalid_reason="other")
    assert EpisodeJudgement.objects.filter(episode=e1, is_current=True).count() == 1
    symptom = types_of(world["study"], "symptom")[0]
    response = post("bob", e1, valid="1", types=[f"symptom:{symptom}"])
    assert response.status_code == 302 and response.url == url(e1)  # it awaits bob again
    for who, other in (("alice", "bob"), ("bob", "alice")):
        page = client_of(who).get(url(e1)).content.decode()
        assert f'data-annotator="{other}"' in page and "Round 2: a discussion round" in page
        assert "submit for round 2" in page
    # round 1 is closed: a round-1 submit is refused, and says where the episode stands
    response = post("alice", e1, round=1, valid="1")
    assert response.status_code == 409
    assert b"now in round 2 (disputed), not in round 1" in response.content
    # both judge round 2 alike: consensus
    post("alice", e1, round=2, valid="1", types=[f"symptom:{symptom}"])
    assert b"Consensus (" not in client_of("alice").get(url(e1)).content
    post("bob", e1, round=2, valid="1", types=[f"symptom:{symptom}"])
    page = client_of("alice").get(url(e1)).content.decode()
    assert "Consensus (discussion): valid: Symptom:" in page and "Consensus reached." in page
    assert "episode-questions" not in page  # judgements are closed
    assert client_of("mod").get(url(e1)).content.decode().count("data-consensus") == 1


def test_a_third_cause_tick_is_refused_with_the_axis_and_types_named(world):
    causes = types_of(world["study"], "cause")[:3]
    assert len(causes) == 3
    response = post("alice", world["e1"], valid="1", types=[f"cause:{c}" for c in causes])
    assert response.status_code == 422
    text = response.content.decode()
    assert re.search(
        r"Not saved: Cause: at most 2 types; you ticked 3 \([^)]+\)\. Untick one", text
    )
    assert "cause:" not in text.split("Not saved:")[1].split("</p>")[0]  # names, not codes
    assert not EpisodeJudgement.objects.exists()
    # the page keeps the ticks sent back, to be corrected, and says the axis's rule
    assert text.count('name="types"') > 3 and 'data-max="2"' in text


def test_an_axis_out_of_its_condition_is_refused_as_the_cards_refuse_it(world):
    """An axis with a condition (the preset's damage locus: only when the severity is DS2
    or DS3) is refused on the card when the condition does not hold, naming both axes."""
    conditional = [a for a in world["study"].taxonomy_version.axes.all() if a.when]
    assert conditional, "the preset has conditional axes"
    axis = conditional[0]
    (other, allowed), *_ = axis.when.items()
    other_codes = types_of(world["study"], other)
    refused = next(c for c in other_codes if c not in allowed)
    mine = types_of(world["study"], axis.code)[0]
    response = post(
        "alice", world["e1"], valid="1", types=[f"{other}:{refused}", f"{axis.code}:{mine}"]
    )
    assert response.status_code == 422
    text = response.content.decode()
    assert "Not saved:" in text and axis.name in text.split("Not saved:")[1]
    assert not EpisodeJudgement.objects.exists()
    response = post(
        "alice", world["e1"], valid="1", types=[f"{other}:{allowed[0]}", f"{axis.code}:{mine}"]
    )
    assert response.status_code == 302
    assert EpisodeJudgement.objects.get().labels == {other: [allowed[0]], axis.code: [mine]}


@pytest.mark.parametrize(
    "data, message",
    [
        ({}, "Is the episode valid? Answer yes or no first."),
        ({"valid": "0"}, "Why is the episode invalid? Choose a reason."),
        ({"valid": "0", "invalid_reason": "nope"}, "Unknown reason"),
        ({"valid": "1", "invalid_reason": "other"}, "A reason is for an invalid episode"),
        ({"valid": "1", "types": ["symptom:nope"]}, "Unknown type"),
    ],
)
def test_bad_input_is_refused_and_named(world, data, message):
    response = post("alice", world["e1"], **data)
    assert response.status_code == 422 and message in response.content.decode()
    assert not EpisodeJudgement.objects.exists()


def test_a_runs_own_verdict_and_labels_never_show(world):
    e1 = world["e1"]
    assert e1.run_valid is False and e1.run_labels
    post("alice", e1, valid="1")
    post("bob", e1, valid="1")
    symptom_name = next(
        t.name for t in world["study"].taxonomy_version.type_list() if t.code == "scope_overreach"
    )
    for who in ("alice", "bob", "mod", "lead"):
        page = client_of(who).get(url(e1)).content.decode()
        outside_form = re.sub(r"<form class=\"episode-questions\".*?</form>", "", page, flags=re.S)
        assert "Normative prior bias" not in outside_form, who
        assert symptom_name not in outside_form, who
        assert "run_valid" not in page and "run_labels" not in page


def test_the_queue_leads_to_the_next_episode_awaiting_me(world):
    client = client_of("alice")
    e1, e2 = world["e1"], world["e2"]
    assert client.get(reverse("queue", args=["ag"])).url == url(e1)
    response = post("alice", e1, valid="0", invalid_reason="other")
    assert response.url == url(e2)  # on to the next one
    assert client.get(reverse("queue", args=["ag"])).url == url(e2)
    post("alice", e2, valid="1")
    # none left for alice: the queue's done page, never a turn card of an episode group
    response = client.get(reverse("queue", args=["ag"]))
    assert response.status_code == 200 and b"cards/" not in response.content.split(b"<main")[-1]
    # bob disagrees on e1: it comes back to alice for round 2
    post("bob", e1, valid="1")
    assert client.get(reverse("queue", args=["ag"])).url == url(e1)


def test_the_study_page_counts_my_episodes_not_cards(world):
    home = reverse("study", args=["ag"])
    page = client_of("alice").get(home).content.decode()
    assert "0 of 2 episodes judged" in page and "Start judging" in page
    assert "Your cards" not in page and "No cards are assigned" not in page
    post("alice", world["e1"], valid="1")
    post("bob", world["e1"], valid="0", invalid_reason="other")
    page = client_of("alice").get(home).content.decode()
    assert "1 of 2 episodes judged · 1 in a discussion round waiting for you" in page


def test_another_annotators_recorded_episode_stays_hidden_until_i_rated_coverage(world):
    """The session page's rule (access.session_episodes) holds on the card and in the queue:
    an episode alice recorded (one the extractor missed) is hers alone until bob has rated
    the session's coverage, so what the extractor missed stays his own judgement. Before the
    fix bob's queue led him to it, and its card showed him its goal, right after his last
    judgement (tests/browser/test_episode_study_flow.py found it)."""
    from annotation.models import CoverageRating

    group, e1, e2 = world["group"], world["e1"], world["e2"]
    alice, bob = group.annotators.get(username="alice"), group.annotators.get(username="bob")
    hers = Episode.objects.create(
        conversation=e1.conversation, first_turn=3, last_turn=4, created_by=alice,
        goal="alice's missed episode",
    )  # fmt: skip
    client = client_of("bob")
    for e in (e1, e2):
        client.post(url(e), {"round": "1", "valid": "0", "invalid_reason": "other"})
    response = client.get(reverse("queue", args=["ag"]))
    assert f"/episodes/{hers.pk}/" not in response.get("Location", "")
    assert client.get(url(hers)).status_code == 404
    assert client.get(url(hers, "episode_context")).status_code == 404
    # once bob has rated the session's coverage, it is his to see (and judge)
    CoverageRating.objects.create(
        conversation=e1.conversation, annotator=bob, group=group, rating=1
    )
    page = client.get(url(hers))
    assert page.status_code == 200 and b"alice&#x27;s missed episode" in page.content
    queue = client.get(reverse("queue", args=["ag"]))
    assert queue.get("Location", "").startswith(url(hers))
    # its author opens it whenever she likes
    assert client_of("alice").get(url(hers)).status_code == 200
