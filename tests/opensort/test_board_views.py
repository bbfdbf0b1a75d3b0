"""The board's pages (views/opensort.py): who may open them (the blind rule), the htmx
answers of each operation, the freeze's confirmation, the provenance page and the report on
the consolidated types."""

from __future__ import annotations

import pytest
from django.urls import reverse
from django.utils import timezone

from annotation.agreement.data import compute_study_report
from annotation.agreement.render import fmt
from annotation.models import (
    Annotation,
    BoardEvent,
    BoardType,
    FreeTag,
    Job,
    JobKind,
    JobStatus,
    Kind,
    Role,
    Study,
    TagSet,
)
from annotation.opensort import board as ops
from annotation.tasks import run_agreement
from tests.factories import HTMX, label, make_user

from .board_factories import make_open_sort, tag_six_cards
from .test_freeze import consolidate

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def queued(monkeypatch) -> list[int]:
    """The agreement jobs the freeze starts (no worker runs in these tests)."""
    jobs: list[int] = []
    monkeypatch.setattr(run_agreement, "delay", jobs.append)
    return jobs


@pytest.fixture
def world(study):
    w = make_open_sort(study)
    tag_six_cards(w)
    return w


def url(name: str, study) -> str:
    return reverse(name, args=[study.slug])


def as_user(client, user):
    client.force_login(user)
    return client


# -- who may open the board -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["board", "provenance", "board_freeze"])
def test_the_lead_opens_the_pages(client, study, world, name):
    assert as_user(client, world["lead"]).get(url(name, study)).status_code == 200


def test_an_expert_who_tagged_every_card_opens_the_board(client, study, world):
    client = as_user(client, world["experts"][0])
    response = client.get(url("board", study))  # asked first: the board locks her tags
    assert response.status_code == 200 and "unclear request" not in response.text
    assert "Open the board and lock my tags" in response.text
    response = client.get(url("board", study) + "?confirm=1")
    assert response.status_code == 200
    assert "unclear request" in response.text  # bob's tag: alice has tagged all her cards


def test_an_expert_with_cards_left_is_refused_with_the_reason(client, study, world):
    alice, bob = world["experts"]
    TagSet.objects.filter(annotator=alice, turn=world["turns"][5]).delete()
    for name in ("board", "provenance"):
        response = as_user(client, alice).get(url(name, study))
        assert response.status_code == 403
        assert "You still have 1 card to tag in the open sort" in response.text
        assert "unclear request" not in response.text
    response = client.post(url("board_do", study), {"action": "create_type", "name": "X"}, **HTMX)
    assert response.status_code == 403
    assert not BoardType.objects.exists()
    assert as_user(client, bob).get(url("board", study)).status_code == 200


def test_a_lead_who_annotates_with_cards_left_is_refused_whatever_their_role(client, study, world):
    """The lead joins the open sort: the board shows others' tags, so it closes for them."""
    lead = world["lead"]
    world["group"].annotators.add(lead)
    response = as_user(client, lead).get(url("board", study))
    assert response.status_code == 403
    assert "6 cards to tag" in response.text


def test_a_student_annotator_is_refused_and_an_outsider_gets_404(client, study, world):
    student = make_user("sam")
    study.add_member(student, Role.ANNOTATOR, Kind.STUDENT)
    response = as_user(client, student).get(url("board", study))
    assert response.status_code == 403 and "Leads and experts only" in response.text
    assert as_user(client, make_user("eve")).get(url("board", study)).status_code == 404


def test_only_a_lead_freezes(client, study, world):
    consolidate(study, world["lead"])
    alice = world["experts"][0]
    assert as_user(client, alice).get(url("board_freeze", study)).status_code == 403
    assert as_user(client, alice).post(url("board_freeze", study)).status_code == 403
    assert not Annotation.objects.exists()


# -- operations through the page --------------------------------------------------------------


def test_each_operation_answers_htmx_with_the_board(client, study, world):
    c = as_user(client, world["lead"])
    response = c.post(
        url("board_do", study),
        {"action": "create_type", "name": "Vague", "category": "Intent"},
        **HTMX,
    )
    assert response.status_code == 200
    assert 'id="board"' in response.text and "<html" not in response.text
    assert "Saved: Created type &#x27;Vague&#x27; in &#x27;Intent&#x27;." in response.text
    bt = BoardType.objects.get()
    tag = FreeTag.objects.get(name="vague ask")
    c.post(url("board_do", study), {"action": "set_type", "tag": tag.pk, "type": bt.pk}, **HTMX)
    assert FreeTag.objects.get(pk=tag.pk).board_type == bt
    target = FreeTag.objects.get(name="unclear request")
    c.post(
        url("board_do", study),
        {"action": "merge", "tag": target.pk, "target": f"vague ask #{tag.pk}"},
        **HTMX,
    )
    assert FreeTag.objects.get(pk=target.pk).merged_into_id == tag.pk


def test_a_refusal_says_why_and_changes_nothing(client, study, world):
    c = as_user(client, world["lead"])
    response = c.post(url("board_do", study), {"action": "create_type", "name": ""}, **HTMX)
    assert response.status_code == 422
    assert "Type name: required." in response.text
    response = c.post(
        url("board_do", study), {"action": "merge", "tag": "1", "target": "nope"}, **HTMX
    )
    assert response.status_code == 422
    assert "Merge into &#x27;nope&#x27;: no tag of that name" in response.text
    assert not BoardEvent.objects.exists()


def test_a_stale_undo_answers_409_and_undoes_nothing(client, study, world):
    alice, bob = world["experts"]
    mine = ops.create_type(study, alice, "A")
    ops.create_type(study, bob, "B")
    response = as_user(client, alice).post(
        url("board_do", study), {"action": "undo", "event": mine.pk}, **HTMX
    )
    assert response.status_code == 409
    assert "by bob. Nothing was undone" in response.text
    assert BoardType.objects.count() == 2


def test_undo_through_the_page(client, study, world):
    c = as_user(client, world["lead"])
    event = ops.create_type(study, world["lead"], "A")
    response = c.post(url("board_do", study), {"action": "undo", "event": event.pk}, **HTMX)
    assert response.status_code == 200 and "Undone: Created type" in response.text
    assert not BoardType.objects.exists()


# -- freeze, provenance, report ---------------------------------------------------------------


def test_the_confirmation_says_what_will_happen_and_the_post_freezes(
    client, study, world, queued, django_capture_on_commit_callbacks
):
    consolidate(study, world["lead"])
    c = as_user(client, world["lead"])
    page = c.get(url("board_freeze", study)).text
    assert "2 types in 2 categories" in page
    assert "12 tag sets</strong> become round-1 labels of alice, bob" in page
    with django_capture_on_commit_callbacks(execute=True):
        response = c.post(url("board_freeze", study))
    assert response.status_code == 302 and response["Location"] == url("provenance", study)
    assert Annotation.objects.filter(round=1).count() == 12
    # the agreement on the consolidated types starts in the background
    job = Job.objects.get(kind=JobKind.AGREEMENT)
    assert queued == [job.pk] and job.params["round"] == 1
    again = c.post(url("board_freeze", study))
    assert again.status_code == 409 and "already frozen" in again.text
    assert Annotation.objects.filter(round=1).count() == 12


def test_the_confirmation_lists_the_tags_without_a_type_and_offers_no_button(client, study, world):
    ops.create_type(study, world["lead"], "A")
    page = as_user(client, world["lead"]).get(url("board_freeze", study)).text
    assert 'id="untyped-tags"' in page and "vague ask" in page
    assert "Freeze:" not in page


def test_each_type_lists_its_source_tags(client, study, world):
    FreeTag.objects.filter(name="vague ask").update(description="the user was vague")
    consolidate(study, world["lead"])
    c = as_user(client, world["lead"])
    c.post(url("board_freeze", study))
    page = c.get(url("provenance", study)).text
    section = page[page.index('id="provenance-ambiguous_ask"') :]
    section = section[: section.index("</section>")]
    # board name, author's name, author, description of each source tag
    assert "<td>Ambiguous ask</td><td>unclear request</td><td>bob</td>" in section
    assert "<td>vague ask" in section and "<td>alice</td><td>the user was vague</td>" in section
    assert "broke constraint" not in section
    # alice's "vague ask" on cards 1, 3 and 5, bob's "unclear request" on 1 and 3
    assert section.count("<li><a href=") == 3


def test_after_the_freeze_an_expert_who_still_labels_a_card_blind_waits(client, study, world):
    """alice never tagged card 5; after the freeze she labels it in round 1, and bob's tags
    on it are on the board: the board and the provenance stay closed to her until she has
    labelled it, then list the card."""
    alice = world["experts"][0]
    turn = world["turns"][4]
    TagSet.objects.filter(annotator=alice, turn=turn).delete()
    consolidate(study, world["lead"])
    as_user(client, world["lead"]).post(url("board_freeze", study))
    for name in ("board", "provenance"):
        response = as_user(client, alice).get(url(name, study))
        assert response.status_code == 403
        assert "You label 1 card still in round 1 on which others" in response.text
    label(turn, alice)
    page = as_user(client, alice).get(url("provenance", study)).text
    assert "c1: please write function number 5" in page
    assert "not shown" not in page


def test_the_report_shows_the_experts_kappa_on_the_consolidated_types(client, study, world):
    consolidate(study, world["lead"])
    c = as_user(client, world["lead"])
    c.post(url("board_freeze", study))
    result = compute_study_report(Study.objects.get(pk=study.pk), n_boot=50)
    Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        result=result,
        finished_at=timezone.now(),
    )
    html = c.get(url("report", study)).text
    kappa = result["axes"]["type"]["report"]["groups"]["experts"]["cohen_kappa"]
    assert kappa is not None
    assert fmt(kappa) in html
    assert "Ambiguous ask" in html
