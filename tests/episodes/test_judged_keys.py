"""rounds.judged_of keys each current judgement by what two must share to agree
(rounds.agreement_key), decoding each distinct verdict once (issue 25): whatever the labels
and however their axes are ordered, its key is agreement_key's of the judgement itself."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.episodes import rounds
from annotation.models import Conversation, Episode, EpisodeJudgement, Source
from tests.factories import make_user

pytestmark = pytest.mark.django_db

AXES = ["symptom", "cause", "impact"]
CODES = ["a", "b", "c"]
labels = st.dictionaries(
    st.sampled_from(AXES), st.lists(st.sampled_from(CODES), max_size=3, unique=True), max_size=3
)
verdicts = st.tuples(st.booleans(), st.sampled_from(["", "other", "normative_prior_bias"]), labels)


@settings(max_examples=30, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(verdicts, min_size=1, max_size=12))
def test_each_judgements_key_is_agreement_keys(agents, given_verdicts):
    from annotation.models import ExtractionRun, Group, Unit

    group, _ = Group.objects.get_or_create(study=agents, name="E1", unit=Unit.EPISODE)
    run, _ = ExtractionRun.objects.get_or_create(study=agents, name="keys")
    conversation = Conversation.objects.get(study=agents, external_id="s1")
    EpisodeJudgement.objects.filter(group=group).delete()
    expected = {}
    for i, (valid, reason, given_labels) in enumerate(given_verdicts):
        e = Episode.objects.create(conversation=conversation, run=run, first_turn=1, last_turn=2)
        who = make_user(f"u{i % 3}")
        # the axes written in reverse order for every other judgement: the same labels
        ordered = dict(reversed(given_labels.items())) if i % 2 else given_labels
        row = EpisodeJudgement.objects.create(
            episode=e, group=group, annotator=who, round=1, valid=valid,
            invalid_reason="" if valid else (reason or "other"), labels=ordered if valid else {},
            taxonomy_version=agents.taxonomy_version, source=Source.IMPORT,
        )  # fmt: skip
        expected[(e.pk, group.pk)] = {
            (who.pk, 1): (row.pk, rounds.agreement_key(row.valid, row.invalid_reason, ordered))
        }
    got = rounds.judged_of(None, [group.pk])
    assert {k: dict(v) for k, v in got.items() if k in expected} == expected
