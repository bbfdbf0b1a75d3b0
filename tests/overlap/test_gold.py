"""The study-level gold of a shared card (views/gold.py, exports): the groups' consensus when
they agree (`groups_agree`), else the lead's decision on the gold queue, which only leads open."""

from __future__ import annotations

import pytest
from django.urls import reverse

from annotation.exports import gold_rows
from annotation.models import Method, StudyGold
from tests.factories import label

pytestmark = pytest.mark.django_db


def test_it_lets_the_lead_decide_the_study_gold_where_groups_differ(
    client, study, lead, alice, bob, shared
):
    a, b, carol, dave, turn = shared
    for user in (alice, bob):
        label(turn, user, "code_rollback", group=a)
    for user in (carol, dave):
        label(turn, user, "must_do_omission", group=b)
    client.force_login(lead)
    queue = client.get(reverse("lead_gold", args=[study.slug]))
    assert [t.pk for t, _ in queue.context["page"]] == [turn.pk]
    url = reverse("lead_gold_decide", args=[study.slug, turn.pk])
    client.post(url, {"types": ["code_rollback"], "rationale": "A read the reply right"})
    gold = StudyGold.objects.current().get(turn=turn)
    assert (gold.codes, gold.decided_by, gold.rationale) == (
        {"code_rollback"},
        lead,
        "A read the reply right",
    )
    # a second decision changes nothing; the queue is empty
    client.post(url, {"types": ["must_do_omission"], "rationale": "no"})
    assert StudyGold.objects.filter(turn=turn).count() == 1
    assert list(client.get(reverse("lead_gold", args=[study.slug])).context["page"]) == []
    row = next(iter(gold_rows(study)))
    assert (row["study_gold"], row["study_gold_method"], row["study_gold_decided_by"]) == (
        ["code_rollback"],
        "lead",
        "lead",
    )


def test_it_refuses_the_gold_queue_to_non_leads(client, study, alice, shared):
    client.force_login(alice)  # a member: told it is for leads
    assert client.get(reverse("lead_gold", args=[study.slug])).status_code == 403


def test_it_gives_groups_agree_when_every_groups_consensus_is_the_same(study, alice, bob, shared):
    a, b, carol, dave, turn = shared
    for group, users in ((a, (alice, bob)), (b, (carol, dave))):
        for user in users:
            label(turn, user, "code_rollback", group=group)
    rows = list(gold_rows(study))
    assert {r["study_gold_method"] for r in rows} == {"groups_agree"}
    assert rows[0]["study_gold"] == ["code_rollback"]
    assert {r["method"] for r in rows} == {Method.UNANIMOUS}
