"""The episode card's submit and the judgement import obey one round rule (issue 21 point
2; annotation/episodes/rounds.py): the same steps, sent one by one through the page's action
and as one file through `import_annotations`, are accepted and refused alike and leave the
same judgements and the same state."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.actions.episode_judgements import Posted, submit
from annotation.episodes import rounds
from annotation.models import (
    Conversation,
    Episode,
    EpisodeJudgement,
    RoundClosed,
    Unit,
)
from tests.factories import make_group, make_user

from .conftest import write_jsonl

JUDGEMENTS = [
    {"valid": True, "labels": {}},
    {"valid": True, "labels": {"symptom": ["scope_overreach"]}},
    {"valid": False, "invalid_reason": "other"},
]
STEP = st.tuples(st.sampled_from(["ann", "bob"]), st.integers(1, 3), st.integers(0, 2))


@pytest.fixture
def seated(agents):
    group = make_group(agents, "E1", annotators=[make_user("ann"), make_user("bob")])
    group.unit = Unit.EPISODE
    group.save()
    Conversation.objects.filter(external_id="s1").assign(group)
    return group


def _outcome(episode, group):
    rows = EpisodeJudgement.objects.filter(episode=episode, is_current=True)
    judged = {
        (j.annotator.username, j.round): rounds.agreement_key(j.valid, j.invalid_reason, j.labels)
        for j in rows.select_related("annotator")
    }
    state = rounds.state_of(episode.pk, group)
    return judged, (state.status, state.round, state.method)


def _by_page(episode, group, steps) -> list[bool]:
    accepted = []
    users = {u.username: u for u in group.annotators.all()}
    for who, round, pick in steps:
        j = JUDGEMENTS[pick]
        posted = Posted(j["valid"], j.get("invalid_reason", ""), j.get("labels", {}))
        try:
            submit(episode, group, users[who], round, posted)
        except RoundClosed:
            accepted.append(False)
        else:
            accepted.append(True)
    return accepted


def _by_import(episode, steps, tmp_path) -> list[bool]:
    records = [
        {"episode": episode.pk, "annotator": who, "group": "E1", "round": round} | JUDGEMENTS[p]
        for who, round, p in steps
    ]
    path = write_jsonl(tmp_path / f"steps-{episode.pk}.jsonl", records)
    out, err = StringIO(), StringIO()
    try:
        call_command("import_annotations", "ag", path, stdout=out, stderr=err)
    except CommandError:  # every record refused
        return [False] * len(steps)
    refused = {
        int(line.split(":")[1]) for line in err.getvalue().splitlines() if ": round:" in line
    }
    return [i + 1 not in refused for i in range(len(steps))]


@pytest.mark.slow  # walks the round rules' state machine, 30 examples of database writes
@pytest.mark.django_db
@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(STEP, min_size=1, max_size=8))
def test_the_page_and_the_import_apply_one_round_rule(seated, tmp_path, steps):
    conversation = Conversation.objects.get(external_id="s1")
    by_page = Episode.objects.create(conversation=conversation, first_turn=1, last_turn=2)
    by_file = Episode.objects.create(conversation=conversation, first_turn=1, last_turn=2)
    seated.study.refresh_from_db()

    accepted_page = _by_page(by_page, seated, steps)
    accepted_file = _by_import(by_file, steps, tmp_path)

    assert accepted_page == accepted_file
    assert _outcome(by_page, seated) == _outcome(by_file, seated)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "steps, page_accepts, status",
    [
        # round 1 open: each judges, revises; different -> disputed, round 2 opens
        ([("ann", 1, 0), ("ann", 1, 2), ("bob", 1, 0)], [True, True, True], ("disputed", 2)),
        # round 2 asked too early, round 1 asked after it closed
        ([("ann", 2, 0), ("ann", 1, 0), ("bob", 1, 1), ("bob", 1, 0)],
         [False, True, True, False], ("disputed", 2)),
        # the same in round 2: consensus by discussion; then nothing is open
        ([("ann", 1, 0), ("bob", 1, 1), ("ann", 2, 1), ("bob", 2, 1), ("ann", 2, 0)],
         [True, True, True, True, False], ("agreed", 2)),
        # still different after the study's one discussion round: escalated
        ([("ann", 1, 0), ("bob", 1, 1), ("ann", 2, 0), ("bob", 2, 1), ("ann", 3, 1)],
         [True, True, True, True, False], ("escalated", 2)),
    ],
)  # fmt: skip
def test_the_rule_in_a_table(seated, tmp_path, steps, page_accepts, status):
    conversation = Conversation.objects.get(external_id="s1")
    by_page = Episode.objects.create(conversation=conversation, first_turn=1, last_turn=2)
    by_file = Episode.objects.create(conversation=conversation, first_turn=1, last_turn=2)

    assert _by_page(by_page, seated, steps) == page_accepts
    assert _by_import(by_file, steps, tmp_path) == page_accepts
    assert _outcome(by_page, seated)[1][:2] == status
    assert _outcome(by_page, seated) == _outcome(by_file, seated)
