"""Whoever loses a role loses what it opened at once, on their very next request: no role is
cached in the session or anywhere else; every check reads the membership or the seat. Each
case is one change made on the study's pages by a lead, then every page, partial, API answer
and download the role opened is asked for again."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from annotation.agreement.data import compute_study_report
from annotation.models import Consensus, Job, JobKind, JobStatus, Kind, Role
from tests.factories import HTMX, label, make_conversation, make_group, make_user, token_client

pytestmark = pytest.mark.django_db


def test_it_closes_the_report_to_a_moderator_the_lead_unseats(client, study, lead, charlie):
    group = make_group(study, "G1")
    client.force_login(lead)
    url = reverse("lead_group_moderator", args=[study.slug, group.pk])
    client.post(url, {"username": "charlie"})
    moderator = Client()
    moderator.force_login(charlie)
    report = reverse("report", args=[study.slug])
    assert moderator.get(report).status_code == 200

    client.post(url, {"username": ""})

    assert moderator.get(report).status_code == 403


@pytest.fixture
def world(study, lead, media):
    """lead2 (who makes the changes), mod (moderates A), ann (annotates B, not labelled yet),
    alice and bob (annotate A: an escalated card), an agreement and an export job done."""
    lead2 = make_user("lead2")
    study.add_member(lead2, Role.LEAD, Kind.EXPERT)
    mod, ann, alice, bob = (make_user(n) for n in ("mod", "ann", "alice", "bob"))
    a = make_group(study, "A", [alice, bob], moderator=mod)
    b = make_group(study, "B", [ann])
    escalated = make_conversation(study, "ca", n_turns=1, group=a).turns.get()
    for round in (1, 2):
        label(escalated, alice, "code_rollback", round=round)
        label(escalated, bob, "must_do_omission", round=round)
    card = make_conversation(study, "cb", n_turns=1, group=b).turns.get()
    agreement = Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        params={"round": 1},
        result=compute_study_report(study, n_boot=5),
        finished_at=timezone.now(),
    )
    (media / "exports").mkdir()
    (media / "exports" / "gold.csv").write_text("turn,labels\n")
    export = Job.objects.create(
        study=study,
        kind=JobKind.EXPORT,
        status=JobStatus.DONE,
        params={"format": "csv"},
        result={"rows": 1},
        result_file="exports/gold.csv",
        finished_at=timezone.now(),
    )
    return dict(
        lead=lead, lead2=lead2, mod=mod, ann=ann, a=a, b=b, escalated=escalated, card=card,
        agreement=agreement, export=export,
    )  # fmt: skip


def _lead_requests(w) -> list[tuple]:
    s = "s1"
    return [
        ("get", reverse("lead_conversations", args=[s]), {}, {}),
        ("get", reverse("lead_conversations", args=[s]) + "?partial=counts", {}, HTMX),
        ("get", reverse("lead_groups", args=[s]), {}, {}),
        ("get", reverse("lead_browse", args=[s]), {}, {}),
        ("get", reverse("lead_gold", args=[s]), {}, {}),
        ("get", reverse("lead_flags", args=[s]), {}, {}),
        ("get", reverse("job_list", args=[s]), {}, HTMX),
        ("get", reverse("job_detail", args=[s, w["agreement"].pk]), {}, {}),
        ("get", reverse("job_download", args=[s, w["export"].pk]), {}, {}),
        ("get", reverse("members", args=[s]), {}, {}),
        ("get", reverse("proposals", args=[s]), {}, {}),
        ("get", reverse("report", args=[s]), {}, {}),
        ("get", reverse("report_download", args=[s, "csv"]), {}, {}),
        ("api", f"/api/studies/{s}/annotations/", {}, {}),
        ("api", f"/api/studies/{s}/agreement/", {}, {}),
        ("api", f"/api/studies/{s}/jobs/{w['export'].pk}/", {}, {}),
    ]


def _moderator_requests(w) -> list[tuple]:
    s, t = "s1", w["escalated"].pk
    return [
        ("get", reverse("moderate_queue", args=[s]), {}, {}),
        ("get", reverse("moderate_queue", args=[s]), {}, HTMX),
        ("get", reverse("discussion", args=[s, t]), {}, {}),
        ("get", reverse("discussion", args=[s, t]), {}, HTMX),
        ("get", reverse("card_timeline", args=[s, t]), {}, {}),
        ("get", reverse("members", args=[s]), {}, {}),
        ("get", reverse("report", args=[s]), {}, {}),
        ("get", reverse("report_download", args=[s, "json"]), {}, {}),
    ]


def _annotator_requests(w) -> list[tuple]:
    s, t = "s1", w["card"].pk
    return [
        ("get", reverse("study", args=[s]), {}, {}),
        ("get", reverse("my_cards", args=[s]), {}, {}),
        ("get", reverse("card", args=[s, t]), {}, {}),
        ("get", reverse("card", args=[s, t]), {}, HTMX),
        ("get", reverse("card_context", args=[s, t]), {}, HTMX),
        ("api", f"/api/studies/{s}/cards/", {}, {}),
        ("api", f"/api/studies/{s}/cards/{t}/", {}, {}),
        ("api", f"/api/studies/{s}/taxonomy/", {}, {}),
    ]


def _statuses(user, requests) -> dict[str, int]:
    client, api = Client(), token_client(user)
    client.force_login(user)
    out = {}
    for method, url, data, headers in requests:
        if method == "api":
            response = api.get(url, data)
        else:
            response = getattr(client, method)(url, data, **headers)
        out[f"{method} {url}{' htmx' if headers else ''}"] = response.status_code
    return out


def _change(w, how: str, who) -> None:
    """A lead (lead2) makes the change on the study's pages."""
    client = Client()
    client.force_login(w["lead2"])
    s = "s1"
    if how == "annotator role":
        data = {"role": "annotator", "kind": "student"}
        client.post(reverse("member_role", args=[s, who.pk]), data)
    elif how == "removed":
        client.post(reverse("member_remove", args=[s, who.pk]))
    elif how == "unseated":
        client.post(reverse("lead_group_moderator", args=[s, w["a"].pk]), {"username": ""})


CASES = [
    ("lead", "annotator role", _lead_requests),
    ("lead", "removed", _lead_requests),
    ("mod", "annotator role", _moderator_requests),
    ("mod", "unseated", _moderator_requests),
    ("mod", "removed", _moderator_requests),
    ("ann", "removed", _annotator_requests),
]


@pytest.mark.parametrize("who, how, requests", CASES)
def test_it_takes_a_lost_roles_access_away_at_once(world, who, how, requests):
    user = world[who]
    api = token_client(user)  # a token made before the change must not outlive it either
    before = _statuses(user, requests(world))
    assert {k: v for k, v in before.items() if v != 200} == {}

    _change(world, how, user)

    after = _statuses(user, requests(world))
    opened = {k: v for k, v in after.items() if v not in (403, 404)}
    assert opened == {}
    listed = api.get("/api/studies/").content.decode()
    assert ('"slug":"s1"' in listed) == (how != "removed")


def test_a_moderator_made_annotator_decides_nothing(world):
    mod, card = world["mod"], world["escalated"]
    _change(world, "annotator role", mod)
    client = Client()
    client.force_login(mod)
    response = client.post(
        reverse("decide", args=["s1", card.pk]), {"types": ["code_rollback"], "rationale": "x"}
    )
    assert response.status_code in (403, 404)
    world["a"].refresh_from_db()
    assert world["a"].moderator is None
    assert not Consensus.objects.filter(turn=card).exists()
