"""Moderation and discussion of episodes (issue 21: everything that works on cards works on
episodes): the group's moderator decides an escalated episode (append-only, one current
decision, under the annotators' rules, refused on an episode that is not escalated), the
decision counts everywhere (the card, the queues, the measures, the report); the episode's
discussion thread opens once round 1 is over, never to an annotator who has not judged it,
and closes once the episode is agreed or decided. Moderators never see an extraction run's
verdict, labels or confidence."""

from __future__ import annotations

import re

import pytest
from django.test import Client, override_settings
from django.urls import reverse

from annotation.episodes import measures, rounds
from annotation.episodes.queue import awaiting
from annotation.episodes.reasons import INVALID_REASONS
from annotation.episodes.report import episode_measures, load
from annotation.importers.episodes import import_episodes
from annotation.models import (
    CardStatus,
    Conversation,
    Episode,
    EpisodeComment,
    EpisodeDecision,
    EpisodeJudgement,
    Role,
    Unit,
)
from tests.factories import HTMX, make_group, make_user

from .conftest import episode, write_jsonl

pytestmark = pytest.mark.django_db

# what the extraction run said of e1 (its own verdict, reason, labels, confidence): never
# shown to annotators or moderators
RUN_REASON, RUN_LABEL, RUN_CONFIDENCE = "normative_prior_bias", "scope_overreach", "0.37"


@pytest.fixture
def world(agents, tmp_path):
    alice, bob, carl = make_user("alice"), make_user("bob"), make_user("carl")
    mod, lead = make_user("mod"), make_user("lead")
    group = make_group(agents, "E1", annotators=[alice, bob], moderator=mod)
    group.unit = Unit.EPISODE
    group.save()
    other = make_group(agents, "E2", annotators=[carl])
    other.unit = Unit.EPISODE
    other.save()
    agents.add_member(lead, Role.LEAD)
    Conversation.objects.filter(external_id="s1").assign(group)
    Conversation.objects.filter(external_id="s2").assign(other)
    records = [
        episode(first=1, last=2, confidence=float(RUN_CONFIDENCE), valid=False,
                invalid_reason=RUN_REASON, labels={"symptom": [RUN_LABEL]}),
        episode(first=3, last=4),
    ]  # fmt: skip
    import_episodes(agents, write_jsonl(tmp_path / "gpt.jsonl", records), "gpt")
    e1, e2 = Episode.objects.order_by("first_turn")
    return {"study": agents, "group": group, "e1": e1, "e2": e2}


def client_of(username: str) -> Client:
    client = Client()
    client.force_login(make_user(username))
    return client


def card_url(e, group=None) -> str:
    url = reverse("episode_card", args=["ag", e.pk])
    return f"{url}?group={group.pk}" if group else url


def judge(username, e, round, **data):
    data = {"round": str(round), **data}
    response = client_of(username).post(card_url(e), data)
    assert response.status_code == 302, response.content.decode()[:2000]


VALID = {"valid": "1"}
INVALID = {"valid": "0", "invalid_reason": "other"}


def escalate(e):
    """alice valid, bob invalid in round 1 and again in round 2 (one discussion round)."""
    for r in (1, 2):
        judge("alice", e, r, **VALID)
        judge("bob", e, r, **INVALID)


def decide(username, e, group, htmx=False, **data):
    url = reverse("episode_decide", args=["ag", e.pk]) + f"?group={group.pk}"
    return client_of(username).post(url, data, **(HTMX if htmx else {}))


def comment(username, e, text, group=None):
    url = reverse("episode_comment", args=["ag", e.pk])
    if group is not None:
        url += f"?group={group.pk}"
    return client_of(username).post(url, {"text": text}, **HTMX)


def page(username, e, group=None) -> str:
    response = client_of(username).get(card_url(e, group))
    assert response.status_code == 200
    return response.content.decode()


def test_the_moderator_decides_an_escalated_episode_and_it_is_decided_everywhere(world):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    assert rounds.state_of(e1.pk, group).status == CardStatus.ESCALATED
    # the moderation queue's episode tab lists it, the card shows every round and the form
    queue = client_of("mod").get(reverse("moderate_episodes", args=["ag"])).content.decode()
    assert f'data-episode-id="{e1.pk}" data-status="escalated"' in queue
    html = page("mod", e1, group)
    assert 'id="episode-decide"' in html
    assert 'data-round="1"' in html and 'data-round="2"' in html
    assert html.count('data-annotator="alice"') == 2 and html.count('data-annotator="bob"') == 2
    # annotators have no such form
    assert 'id="episode-decide"' not in page("alice", e1)

    symptom = next(t for t in world["study"].taxonomy_version.type_list()
                   if t.axis.code == "symptom")  # fmt: skip
    response = decide("mod", e1, group, valid="1", types=[f"symptom:{symptom.code}"],
                      rationale="The quote shows the API changed.")  # fmt: skip
    assert response.status_code == 302
    decision = EpisodeDecision.objects.get()
    assert (decision.valid, decision.labels, decision.decided_by.username) == (
        True, {"symptom": [symptom.code]}, "mod",
    )  # fmt: skip
    assert decision.from_round == 2 and decision.is_current
    state = rounds.state_of(e1.pk, group)
    assert (state.status, state.method, state.decided) == (CardStatus.AGREED, "moderator", True)

    # the card: decided, the decision to the annotators who judged it, no form, no comment box
    for who in ("alice", "bob", "mod"):
        html = page(who, e1, group if who == "mod" else None)
        assert "Decided by the group's moderator" in html
        assert "data-decision" in html and "The quote shows the API changed." in html
        assert 'id="episode-decide"' not in html and 'name="text"' not in html
    # the queues: nobody's any more
    queue = client_of("mod").get(reverse("moderate_episodes", args=["ag"])).content.decode()
    assert f'data-episode-id="{e1.pk}"' not in queue
    assert e1.pk not in [e for e, _ in awaiting(make_user("alice"), world["study"])]
    # a later judgement never reopens it
    response = client_of("alice").post(card_url(e1), {"round": "2", **INVALID})
    assert response.status_code == 409
    assert "This episode is now decided by its moderator" in response.content.decode()

    # the measures: the decision is the episode's consensus and gold, round 3
    data = load(world["study"])
    assert measures.consensus_validity(data["judgements"])[e1.pk] == "valid"
    assert measures.deciding_rounds(data["judgements"])[e1.pk] == 3
    assert measures.gold_labels(data["judgements"], data["voters"]) == {
        e1.pk: {"symptom": [symptom.code]}
    }
    run = episode_measures(world["study"])["overall"]["runs"]["gpt"]
    assert (run["valid"], run["invalid"], run["disputed"]) == (1, 0, 0)
    # round-1 agreement is the annotators' alone
    pairs = episode_measures(world["study"])["overall"]["agreement"]["pairs"]
    assert [(p["a"], p["b"], p["episodes"]) for p in pairs] == [("alice", "bob", 1)]


def test_an_invalid_decision_counts_its_reason(world):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    response = decide("mod", e1, group, valid="0", invalid_reason="other", rationale="no")
    assert response.status_code == 302
    run = episode_measures(world["study"])["overall"]["runs"]["gpt"]
    assert (run["valid"], run["invalid"]) == (0, 1)
    assert run["invalid_reasons"]["codes"] == {"other": {"count": 1, "share": 1.0}}
    assert measures.gold_labels(load(world["study"])["judgements"]) == {}


@pytest.mark.parametrize("stage", ["open", "disputed", "agreed"])
def test_a_decision_on_an_episode_not_escalated_is_refused(world, stage):
    e1, group = world["e1"], world["group"]
    if stage in ("open", "disputed"):
        judge("alice", e1, 1, **VALID)
    if stage == "disputed":
        judge("bob", e1, 1, **INVALID)
    if stage == "agreed":
        judge("alice", e1, 1, **VALID)
        judge("bob", e1, 1, **VALID)
    response = decide("mod", e1, group, htmx=True, rationale="r", **VALID)
    assert response.status_code == 409
    words = {"open": "in round 1", "disputed": "in discussion round 2",
             "agreed": "agreed by its annotators"}[stage]  # fmt: skip
    body = response.content.decode()
    assert f"Only an escalated episode is decided by its moderator: this one is {words}" in body
    assert not EpisodeDecision.objects.exists()


def test_a_second_decision_is_refused_and_says_who_decided(world):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    assert decide("mod", e1, group, rationale="first", **VALID).status_code == 302
    response = decide("lead", e1, group, htmx=True, rationale="second", **INVALID)
    assert response.status_code == 409
    assert "already decided (by mod" in response.content.decode()
    assert EpisodeDecision.objects.count() == 1


def test_who_decides(world):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    assert decide("alice", e1, group, rationale="mine", **VALID).status_code == 403
    assert decide("carl", e1, group, rationale="mine", **VALID).status_code == 404
    assert decide("lead", e1, group, rationale="lead's", **VALID).status_code == 302


@pytest.mark.parametrize(
    "data, status, message",
    [
        ({"valid": "1"}, 422, "Rationale: say why you decide so (required)."),
        ({"rationale": "r"}, 422, "Is the episode valid? Answer yes or no first."),
        ({"valid": "0", "rationale": "r"}, 422, "Why is the episode invalid? Choose a reason."),
        ({"valid": "1", "types": ["cause:nope"], "rationale": "r"}, 422, "Unknown type"),
    ],
)
def test_bad_input_is_refused_named_and_kept(world, data, status, message):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    response = decide("mod", e1, group, htmx=True, **data)
    assert response.status_code == status
    body = response.content.decode()
    assert message in body and 'id="episode-decide"' in body
    if data.get("rationale"):
        assert f">{data['rationale']}</textarea>" in body  # what was typed comes back
    assert not EpisodeDecision.objects.exists()


def test_the_axes_rules_of_the_annotators_hold_for_the_moderator(world):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    causes = [t for t in world["study"].taxonomy_version.type_list() if t.axis.code == "cause"]
    ticks = [f"cause:{t.code}" for t in causes[:3]]
    response = decide("mod", e1, group, htmx=True, valid="1", types=ticks, rationale="r")
    assert response.status_code == 422
    assert "at most 2 types; you ticked 3" in response.content.decode()
    # the condition (Axis.when) as on the card: damage locus only with a severity DS2/DS3
    types = world["study"].taxonomy_version.type_list()
    locus = [t for t in types if t.axis.when]
    if locus:
        tick = f"{locus[0].axis.code}:{locus[0].code}"
        response = decide("mod", e1, group, htmx=True, valid="1", types=[tick], rationale="r")
        assert response.status_code == 422
    assert not EpisodeDecision.objects.exists()


def test_a_decision_over_the_rationale_limit_is_refused(world):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    with override_settings(CARDSORT_MAX_COMMENT_CHARS=10):
        response = decide("mod", e1, group, htmx=True, rationale="x" * 11, **VALID)
    assert response.status_code == 422
    assert "Rationale: at most 10 characters (yours has 11)." in response.content.decode()


def test_the_thread_opens_after_round_1_and_closes_with_the_episode(world):
    e1, group = world["e1"], world["group"]
    judge("alice", e1, 1, **VALID)
    # round 1: blind, no thread anywhere, a comment refused
    response = comment("alice", e1, "I think it is valid")
    assert response.status_code == 409 and "round 1 is over" in response.content.decode()
    assert 'id="episode-thread"' not in page("alice", e1)
    assert not EpisodeComment.objects.exists()
    # the moderator may already write? no: round 1 is blind for the thread too
    response = comment("mod", e1, "wait", group)
    assert response.status_code == 409 and "round 1 is over" in response.content.decode()

    judge("bob", e1, 1, **INVALID)  # a disagreement: discussion round 2
    response = comment("alice", e1, "The quote shows it: valid.")
    assert response.status_code == 200
    body = response.content.decode()
    assert "Comment sent (round 2)." in body and "The quote shows it: valid." in body
    assert comment("mod", e1, "Bob, what is missing?", group).status_code == 200
    html = page("bob", e1)
    assert 'id="episode-thread"' in html
    assert html.index("The quote shows it") < html.index("Bob, what is missing?")
    row = EpisodeComment.objects.get(author__username="alice")
    assert (row.round, row.group_id, row.episode_id) == (2, group.pk, e1.pk)
    # another group's annotator: no such episode
    assert comment("carl", e1, "hello").status_code == 404
    # the same text twice (a double submit) is kept once
    comment("alice", e1, "The quote shows it: valid.")
    assert EpisodeComment.objects.filter(author__username="alice").count() == 1

    judge("alice", e1, 2, **INVALID)
    judge("bob", e1, 2, **INVALID)  # agreed in discussion
    response = comment("bob", e1, "agreed")
    assert response.status_code == 409
    assert "The discussion is closed: this episode is agreed." in response.content.decode()
    html = page("bob", e1)
    assert "The quote shows it" in html and "The discussion is closed." in html


def test_a_comment_is_limited_and_named(world):
    e1 = world["e1"]
    judge("alice", e1, 1, **VALID)
    judge("bob", e1, 1, **INVALID)
    assert "Write a comment before sending it." in comment("alice", e1, "  ").content.decode()
    with override_settings(CARDSORT_MAX_COMMENT_CHARS=10):
        response = comment("alice", e1, "y" * 11)
    assert response.status_code == 422
    assert "Comment: at most 10 characters (yours has 11)." in response.content.decode()
    assert ">" + "y" * 11 + "</textarea>" in response.content.decode()
    assert comment("alice", e1, "a\x00b").status_code == 422
    assert not EpisodeComment.objects.exists()


def test_an_annotator_who_has_not_judged_never_reads_the_thread_or_the_decision(world):
    e1, group = world["e1"], world["group"]
    escalate(e1)
    comment("alice", e1, "SECRET-THREAD")
    decide("mod", e1, group, rationale="SECRET-RATIONALE", **VALID)
    dave = make_user("dave")
    world["study"].add_member(dave, Role.ANNOTATOR)
    group.annotators.add(dave)  # seated after the decision: it stays decided
    assert rounds.state_of(e1.pk, group).decided
    html = page("dave", e1)
    assert "SECRET-THREAD" not in html and "SECRET-RATIONALE" not in html
    assert "data-decision" not in html
    assert 'data-annotator="alice"' not in html and 'data-annotator="bob"' not in html
    response = comment("dave", e1, "let me in")
    assert response.status_code == 409 and "SECRET-THREAD" not in response.content.decode()


def test_moderators_never_see_the_runs_verdict_labels_or_confidence(world):
    """The run said e1 is invalid (normative prior bias) with a label and a confidence; the
    annotators said valid / invalid (other) without labels: nothing of the run's shows on
    any page or partial a moderator or a lead reads, outside the decide form's own choices."""
    e1, group = world["e1"], world["group"]
    escalate(e1)
    comment("alice", e1, "a comment")
    label_name = next(t.name for t in world["study"].taxonomy_version.type_list()
                      if t.code == RUN_LABEL)  # fmt: skip
    pages = {
        "card": page("mod", e1, group),
        "lead's card": page("lead", e1, group),
        "queue": client_of("mod").get(reverse("moderate_episodes", args=["ag"])).content,
        "thread": comment("mod", e1, "mine", group).content,
        "refused": decide("mod", e1, group, htmx=True, rationale="r").content,
    }
    for name, html in pages.items():
        html = html if isinstance(html, str) else html.decode()
        assert RUN_CONFIDENCE not in html, name
        shown = re.sub(r"<form.*?</form>", "", html, flags=re.S)  # the choices offered
        for said in (INVALID_REASONS[RUN_REASON], RUN_REASON, RUN_LABEL, label_name):
            assert said not in shown, (name, said)
    assert pages["card"].count("<tr data-annotator=") == 4  # the annotators' rows only
    assert "Extracted by run <code>gpt</code>." in pages["card"]  # its origin, not its verdict


def test_the_import_keeps_a_decided_episode_closed(world, tmp_path):
    """The judgement import obeys the decision like the card: a later record is refused."""
    from io import StringIO

    from django.core.management import call_command

    e1, group = world["e1"], world["group"]
    escalate(e1)
    decide("mod", e1, group, rationale="r", **VALID)
    record = {"episode": e1.pk, "annotator": "alice", "group": "E1", "round": 2}
    path = write_jsonl(tmp_path / "late.jsonl", [record | INVALID | {"valid": False}])
    out = StringIO()
    try:
        call_command("import_annotations", "ag", path, stdout=out, stderr=out)
    except Exception as e:  # a file with nothing imported is refused as a whole
        out.write(str(e))
    assert "round" in out.getvalue() and "decided" in out.getvalue()
    alice = EpisodeJudgement.objects.get(episode=e1, round=2, annotator__username="alice")
    assert alice.valid  # unchanged


def _disputed(world, n: int) -> None:
    """n more episodes of s1, judged apart in round 1 by alice and bob: in discussion."""
    from annotation.models import ExtractionRun, Source

    study, group = world["study"], world["group"]
    run = ExtractionRun.objects.create(study=study, name="many")
    conversation = Conversation.objects.get(study=study, external_id="s1")
    made = Episode.objects.bulk_create(
        Episode(conversation=conversation, run=run, first_turn=1, last_turn=1 + i % 3)
        for i in range(n)
    )
    alice, bob = make_user("alice"), make_user("bob")
    EpisodeJudgement.objects.bulk_create(
        EpisodeJudgement(episode=e, group=group, annotator=who, round=1, valid=who == alice,
                         invalid_reason="" if who == alice else "other",
                         taxonomy_version=study.taxonomy_version, source=Source.BROWSER)
        for e in made for who in (alice, bob)
    )  # fmt: skip


def test_the_episodes_tab_reads_the_rows_of_its_page_only(world):
    """Every waiting episode is counted and ordered, but only the page's are read whole
    (with their sessions and runs): issue 25, the tab read all of 100,000 for 50 rows."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from annotation.views.episode_moderation import PAGE_SIZE

    _disputed(world, PAGE_SIZE + 7)
    url = reverse("moderate_episodes", args=["ag"])
    with CaptureQueriesContext(connection) as queries:
        body = client_of("mod").get(url).content.decode()
    assert f"in discussion: {PAGE_SIZE + 7}." in body
    assert body.count("<tr data-episode-id=") == PAGE_SIZE
    whole = [
        q["sql"] for q in queries.captured_queries if '"annotation_episode"."goal"' in q["sql"]
    ]
    assert len(whole) == 1, whole
    (listed,) = re.findall(r'"annotation_episode"\."id" IN \(([^)]*)\)', whole[0])
    assert len(listed.split(",")) == PAGE_SIZE
    ids = [int(x) for x in re.findall(r'data-episode-id="(\d+)"', body)]
    assert ids == sorted(ids, key=lambda pk: (Episode.objects.get(pk=pk).last_turn, pk))
    second = client_of("mod").get(url + "?page=2").content.decode()
    assert second.count("<tr data-episode-id=") == 7
