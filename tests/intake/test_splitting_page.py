"""The lead's Splitting page (issue 20, point 3): the study's numbers, the form with the
parameters of split_conversations (worked examples uploaded, each bad line named), "Apply
all open proposals" as one job; on the conversation page, dropped turns proposed, applied
through the confirmation and shown. Leads only, POSTs with CSRF."""

from __future__ import annotations

import json
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils.html import escape

from annotation.intake.llm import SYSTEM_PROMPT
from annotation.intake.splitting import split
from annotation.judges.client import digest_of
from annotation.models import Conversation, Job, JobKind, SetAside, SplitProposal
from annotation.tasks import run_split_proposals
from tests.factories import make_conversation, make_group, make_user

pytestmark = pytest.mark.django_db

EXAMPLE = {
    "turns": [{"user": "sort", "assistant": "sorted()"}, {"user": "SQL?", "assistant": "SELECT"}],
    "splits": [{"before_turn": 2, "reason": "SQL"}],
    "drop_turns": [],
}


@pytest.fixture
def lead_client(client, lead, settings):
    settings.CARDSORT_LLM_BASE_URL = "http://llm.test/v1"
    settings.CARDSORT_LLM_MODEL = "fake-model"
    client.force_login(lead)
    return client


def page(study) -> str:
    return reverse("lead_splitting", args=[study.slug])


def start(study) -> str:
    return reverse("lead_splitting_start", args=[study.slug])


def apply_url(study) -> str:
    return reverse("lead_splitting_apply", args=[study.slug])


def form(**changes) -> dict:
    return {"min_turns": "2", "temperature": "0", "prompt": SYSTEM_PROMPT, **changes}


def test_the_page_shows_the_studys_splitting_and_the_defaults(lead_client, study):
    for name in ("a", "b", "c"):
        make_conversation(study, name, n_turns=4)
    make_conversation(study, "one", n_turns=1)
    split(Conversation.objects.get(external_id="c"), [3], drop_turns=[4])
    SplitProposal.objects.create(
        conversation=Conversation.objects.get(external_id="a"), turn_index=2
    )
    text = lead_client.get(page(study)).text
    assert '<dd data-count="askable">2 ' in text  # a and b: not one turn, not a part
    assert '<dd data-count="split">1 conversation into 2 parts</dd>' in text
    assert '<dd data-count="dropped">1</dd>' in text
    assert '<dd data-count="open">in 1 conversation</dd>' in text
    assert f">{escape(SYSTEM_PROMPT)}</textarea>" in text
    assert 'name="temperature" min="0" max="2" step="any" value="0"' in text
    assert 'placeholder="fake-model"' in text
    assert "Apply all open proposals (1 conversation)" in text
    # every lead page links it
    assert (
        f'href="{page(study)}"' in lead_client.get(reverse("lead_browse", args=[study.slug])).text
    )


def test_starting_queues_a_job_with_every_parameter(
    lead_client, study, django_capture_on_commit_callbacks
):
    upload = SimpleUploadedFile("ex.jsonl", (json.dumps(EXAMPLE) + "\n").encode())
    data = form(temperature="1.0", seed="7", max="10", model="other", apply="on", examples=upload)
    data["prompt"] = "Split it, the study's way."
    with mock.patch("annotation.views.split.run_split_proposals.delay") as delay:
        with django_capture_on_commit_callbacks(execute=True):
            response = lead_client.post(start(study), data)
    assert response.status_code == 302 and response["Location"] == page(study)
    job = Job.objects.get()
    delay.assert_called_once_with(job.pk)
    assert job.kind == JobKind.SPLIT
    p = job.params
    assert (p["temperature"], p["seed"], p["max"], p["model"], p["apply"]) == (
        1.0,
        7,
        10,
        "other",
        True,
    )
    assert p["prompt"] == "Split it, the study's way."
    assert p["examples"] == [EXAMPLE] and p["examples_digest"] == digest_of([EXAMPLE])
    text = lead_client.get(page(study)).text
    assert f'id="job-{job.pk}"' in text
    assert "Splitting the study's conversations, then applying the proposals" in text


def test_a_bad_examples_file_is_refused_line_by_line_and_nothing_is_queued(lead_client, study):
    lines = [json.dumps(EXAMPLE), "nope", json.dumps({**EXAMPLE, "splits": [{"before_turn": 9}]})]
    upload = SimpleUploadedFile("ex.jsonl", "\n".join(lines).encode())
    response = lead_client.post(start(study), form(examples=upload))
    assert response.status_code == 422
    assert "ex.jsonl:2: (line): not JSON" in response.text
    assert "ex.jsonl:3: splits[0].before_turn: 9 is not a turn from 2 to 2" in response.text
    assert not Job.objects.exists()


@pytest.mark.parametrize(
    "changes, said",
    [
        ({"temperature": "2.5"}, "Temperature"),
        ({"min_turns": "1"}, "Minimum turns"),
        ({"prompt": "   "}, "System prompt"),
    ],
)
def test_bad_parameters_are_refused_and_nothing_is_queued(lead_client, study, changes, said):
    response = lead_client.post(start(study), form(**changes))
    assert response.status_code == 422
    assert f"<p>{said}: " in response.text
    assert not Job.objects.exists()


def test_while_off_the_page_says_so_and_starts_nothing(lead_client, study, settings):
    settings.CARDSORT_LLM_BASE_URL = ""
    assert (
        "LLM split proposals are off: set CARDSORT_LLM_BASE_URL"
        in lead_client.get(page(study)).text
    )
    response = lead_client.post(start(study), form())
    assert response.status_code == 422 and "LLM split proposals are off" in response.text
    assert not Job.objects.exists()


def test_apply_all_is_one_job_that_splits_every_open_proposal(
    lead_client, study, lead, django_capture_on_commit_callbacks, monkeypatch
):
    a = make_conversation(study, "a", n_turns=4)
    b = make_conversation(study, "b", n_turns=4)
    SplitProposal.objects.create(conversation=a, turn_index=3)
    SplitProposal.objects.create(conversation=b, turn_index=2, kind="drop")
    queued: list[int] = []
    monkeypatch.setattr(run_split_proposals, "delay", queued.append)
    with django_capture_on_commit_callbacks(execute=True):
        response = lead_client.post(apply_url(study), follow=True)
    assert "Applying the open proposals of 2 conversations" in response.text
    job = Job.objects.get()
    assert queued == [job.pk] and job.params == {"what": "apply"}
    run_split_proposals.apply(args=[job.pk])
    job.refresh_from_db()
    assert job.status == "done", job.error
    assert job.created_by == lead
    assert [p.n_turns for p in a.split_parts.order_by("split_first_turn")] == [2, 2]
    assert b.split_parts.get().n_turns == 3
    text = lead_client.get(page(study)).text
    assert "Applying the open split proposals" in text
    assert "split 2 conversations into 3 parts, 1 turn dropped, 0 refused." in text
    assert "No open proposal in the study's set." in text


def test_apply_all_with_nothing_open_queues_nothing(lead_client, study):
    make_conversation(study, "a", n_turns=4)
    response = lead_client.post(apply_url(study), follow=True)
    assert "No conversation of the study&#x27;s set has an open proposal." in response.text
    assert not Job.objects.exists()


def test_a_proposed_drop_is_applied_through_the_confirmation(lead_client, study):
    c = make_conversation(study, "c", n_turns=5)
    SplitProposal.objects.create(conversation=c, turn_index=4, reason="SQL now")
    SplitProposal.objects.create(conversation=c, turn_index=2, kind="drop")
    url = reverse("lead_conversation", args=[study.slug, c.pk])
    text = lead_client.get(url).text
    assert 'data-kind="drop">Drop turn <a href="#turn-2">2</a> (off every topic)' in text
    assert 'name="drop" value="2">Apply: drop turn 2</button>' in text
    assert "Proposed to drop: off every topic." in text
    assert "Apply all its open proposals" in text
    split_url = reverse("lead_split", args=[study.slug, c.pk])
    preview = lead_client.post(split_url, {"before": "4", "drop": "2"}).text
    assert "<strong>c#1</strong>: the original's turns 1, 3 (left out: turn 2)</li>" in preview
    assert "<strong>c#2</strong>: the original's turns 4-5</li>" in preview
    assert "Dropped, in no part (kept on c): turn 2." in preview
    assert (
        'type="checkbox" name="drop" value="2" checked> 2 <span class="muted">(proposed)' in preview
    )
    assert not c.split_parts.exists()
    lead_client.post(split_url, {"before": "4", "drop": "2", "confirm": "1"})
    c.refresh_from_db()
    assert c.set_aside == SetAside.SPLIT
    assert set(SplitProposal.objects.values_list("status", flat=True)) == {"applied"}
    text = lead_client.get(url).text
    assert "Dropped by the split: off every topic, in no part." in text
    assert "turns 1, 3</li>" in text
    part = c.split_parts.get(external_id="c#1")
    assert (
        "its turns 1, 3."
        in lead_client.get(reverse("lead_conversation", args=[study.slug, part.pk])).text
    )


@pytest.mark.parametrize("username, status", [("alice", 403), ("bob", 403), ("charlie", 404)])
def test_annotators_moderators_and_outsiders_cannot_use_it(client, study, username, status):
    alice, bob = make_user("alice"), make_user("bob")
    make_group(study, "g1", [alice], moderator=bob)
    c = make_conversation(study, "c", n_turns=4)
    SplitProposal.objects.create(conversation=c, turn_index=3)
    client.force_login(make_user(username))
    assert client.get(page(study)).status_code == status
    for url in (start(study), apply_url(study)):
        response = client.post(url, form())
        assert response.status_code == status, url
        if status == 403:
            assert "Leads only" in response.text
    assert not Job.objects.exists()


def test_anonymous_users_are_sent_to_log_in_and_posts_need_csrf(client, study, lead):
    for url in (page(study), start(study), apply_url(study)):
        response = client.post(url) if url != page(study) else client.get(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(lead)
    for url in (start(study), apply_url(study)):
        assert strict.get(url).status_code == 405
        assert strict.post(url, form()).status_code == 403
    assert not Job.objects.exists()


def test_past_the_cap_the_page_says_more_than_it_counted(lead_client, study, monkeypatch):
    """The conversations a job would ask about are counted up to ASKABLE_CAP (issue 25: the
    page read them all); past it the page says "more than", at it the number itself."""
    from annotation.intake import split_run

    for name in ("a", "b", "c"):
        make_conversation(study, name, n_turns=3)
    monkeypatch.setattr(split_run, "ASKABLE_CAP", 2)
    text = lead_client.get(page(study)).text
    assert '<dd data-count="askable">more than 2 ' in text
    Conversation.objects.filter(external_id="c").update(n_turns=1)
    text = lead_client.get(page(study)).text
    assert '<dd data-count="askable">2 ' in text
