"""Round 1 is blind for whoever annotates a card, whatever other role they hold: a lead, a
moderator (of this group or another), a superuser who annotates in a group never sees a
fellow annotator's round-1 labels, notes, evidence or time on an open card, nor an agreement
result counting them, on any page, partial, POST reply, download or API answer (the jobs,
their files, the report and time per card included). A lead or moderator who does not
annotate the card does see them."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from annotation.models import CardTime, Job, JobKind, Kind, Role
from annotation.tasks import run_agreement, run_export, run_times
from tests.access.probe import Secret, leaks, sees, sees_elsewhere
from tests.factories import label, make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

# alice's time on the card, 4321.7 s: time per card shows it as is (her only one)
ALICE = Secret("signature_mismatch", "alice-secret-note", "alice-secret-evidence", 4_321_700)


def make_viewer(study, kind: str):
    """The user under test, with the role `kind` names, annotating nothing yet."""
    if kind == "superuser":
        user = make_user("root")
        user.is_superuser = True
        user.save()
        return user
    user = make_user(kind)
    role = {"lead": Role.LEAD, "annotator": Role.ANNOTATOR}.get(kind, Role.MODERATOR)
    study.add_member(user, role, Kind.EXPERT)
    return user


def card_of_group_a(study, viewer, kind: str, *, viewer_annotates: bool):
    """Group A: alice, zed (who labels last) and, if `viewer_annotates`, the viewer; its
    moderator is the viewer for "moderator_here", else mod-a. Group B is moderated by the
    viewer for "moderator_elsewhere". Alice has labelled A's first card blind."""
    alice, zed = make_user("alice"), make_user("zed")
    annotators = [alice, zed] + ([viewer] if viewer_annotates else [])
    moderator = viewer if kind == "moderator_here" else make_user("mod-a")
    group = make_group(study, "A", annotators, moderator=moderator)
    b_moderator = viewer if kind == "moderator_elsewhere" else make_user("mod-b")
    make_group(study, "B", [make_user("charlie"), make_user("dora")], moderator=b_moderator)
    turn = make_conversation(study, "conv-a", n_turns=2, group=group).turns.first()
    label(turn, alice, ALICE.code, note=ALICE.note, evidence=ALICE.evidence)
    CardTime.objects.create(turn=turn, annotator=alice, active_ms=ALICE.time_ms)
    run_jobs(study, viewer)
    return turn, zed


def run_jobs(study, viewer) -> None:
    """An agreement job counting alice's label, a raw export (her note in it) by a lead who
    annotates nothing, and one the viewer started (made blind for them), time per card's
    kept tables (her time in them), all finished."""
    olga = make_user("olga")
    study.add_member(olga, Role.LEAD)
    params = {"round": 1, "seed": 0, "n_boot": 20}
    run_agreement(Job.objects.create(study=study, kind=JobKind.AGREEMENT, params=params).pk)
    params = {"format": "csv", "raw": True, "round": None, "with_text": False}
    for by in (olga, viewer):
        run_export(
            Job.objects.create(study=study, kind=JobKind.EXPORT, params=params, created_by=by).pk
        )
    run_times(Job.objects.create(study=study, kind=JobKind.TIMES, created_by=olga).pk)


ANNOTATING = ["lead", "moderator_elsewhere", "moderator_here", "superuser"]
LEADS_SEE = [
    "time per card",
    "report",
    "agreement job page",
    "agreement job API",
    "times job API",
    "export download",
]


@pytest.mark.parametrize("kind", ANNOTATING)
def test_it_hides_round_1_from_an_annotator_whatever_their_other_role(study, media, kind):
    viewer = make_viewer(study, kind)
    turn, zed = card_of_group_a(study, viewer, kind, viewer_annotates=True)

    # before the viewer's own submit, and after it while zed has still to label
    assert leaks(viewer, "s1", turn, ALICE) == []
    label(turn, viewer, "code_rollback", note="viewer-note")
    assert leaks(viewer, "s1", turn, ALICE) == []

    # once every annotator has labelled, round 1 is over and the labels show; another
    # lead's export stays theirs (not made blind for the viewer)
    label(turn, zed, "must_do_omission")
    assert sees(viewer, "s1", turn, ALICE) != []
    elsewhere = sees_elsewhere(viewer, "s1", ALICE)
    # time per card's kept tables (everyone's times) stay closed while the viewer has a
    # card still in round 1 (the conversation's second); their page computes theirs live
    leads_see = [place for place in LEADS_SEE[:-1] if place != "times job API"]
    assert elsewhere == (leads_see if kind in ("lead", "superuser") else ["report"])
    second = turn.conversation.turns.exclude(pk=turn.pk).get()
    alice = get_user_model().objects.get(username="alice")
    for who in (viewer, zed, alice):
        label(second, who, "code_rollback")
    elsewhere = sees_elsewhere(viewer, "s1", ALICE)
    assert elsewhere == (LEADS_SEE[:-1] if kind in ("lead", "superuser") else ["report"])


@pytest.mark.parametrize("kind", ["lead", "moderator_here", "superuser"])
def test_it_shows_round_1_to_a_lead_or_moderator_who_does_not_annotate(study, media, kind):
    viewer = make_viewer(study, kind)
    turn, _ = card_of_group_a(study, viewer, kind, viewer_annotates=False)

    shown = sees(viewer, "s1", turn, ALICE)
    elsewhere = sees_elsewhere(viewer, "s1", ALICE)

    assert shown == ["discussion", "discussion htmx", "card_timeline", "card_timeline htmx"]
    # the leads' pages and the jobs; a moderator has the report only
    assert elsewhere == (["report"] if kind == "moderator_here" else LEADS_SEE)


def test_it_lists_round_1_in_the_api_for_a_lead_who_does_not_annotate(study, media):
    from tests.factories import token_client

    lead = make_viewer(study, "lead")
    turn, _ = card_of_group_a(study, lead, "lead", viewer_annotates=False)

    rows = token_client(lead).get("/api/studies/s1/annotations/").json()["results"]

    assert [(r["annotator"], r["note"], r["labels"]) for r in rows] == [
        ("alice", ALICE.note, [ALICE.code])
    ]


def test_it_lists_an_annotating_leads_own_rows_but_not_the_others(study, media):
    from tests.factories import token_client

    lead = make_viewer(study, "lead")
    turn, _ = card_of_group_a(study, lead, "lead", viewer_annotates=True)
    label(turn, lead, "code_rollback", note="lead-note")
    other = make_conversation(study, "conv-c", n_turns=1).turns.get()  # unassigned: no rows

    rows = token_client(lead).get("/api/studies/s1/annotations/").json()["results"]

    assert [(r["annotator"], r["note"]) for r in rows] == [("lead", "lead-note")]
    assert other.pk not in [r["turn_id"] for r in rows]
