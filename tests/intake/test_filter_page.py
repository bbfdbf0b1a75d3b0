"""The lead's coding filter page (lead/filter/): the rules as an editable table, validated
with errors naming the language and field, reset to the defaults; dry runs over the study's
conversations and over files, as jobs whose result shows the counts and examples; the import
page's "coding conversations only" and "dry run"; and who may do any of it."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from annotation.intake.coding_filter import FIELDS, default_rules
from annotation.models import Conversation, Job, JobKind, JobStatus, Role, Study, Turn
from annotation.tasks import run_filter_study
from tests.factories import HTMX, PASSWORD


def native(cid: str, *texts: str) -> dict:
    roles = ["user", "assistant"]
    return {
        "id": cid,
        "messages": [{"role": roles[i % 2], "content": t} for i, t in enumerate(texts)],
    }


CHATS = "".join(
    json.dumps(record) + "\n"
    for record in [
        native("go", "How do I write a web server in Go?", "Use net/http."),
        native("lets-go", "The weather is nice, let's go to the beach", "Have fun!"),
        native("py", "Sort a dict in python", "sorted(d.items())", "and in Ruby code?", "..."),
        native("poem", "Write a poem about autumn", "Leaves fall..."),
        native("fence", "fix this", "```rust\nfn main() {}\n```"),
    ]
).encode()


@pytest.fixture
def eager(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return settings


@pytest.fixture
def lead_client(client, lead):
    client.login(username="lead", password=PASSWORD)
    return client


def _form(rules: dict) -> dict:
    """The POST of the rules table showing `rules` (and its empty row for a new language)."""
    data = {"rows": len(rules["languages"]) + 1, "action": "save"}
    for i, entry in enumerate(rules["languages"]):
        data[f"lang-{i}-language"] = entry["language"]
        for key in FIELDS:
            data[f"lang-{i}-{key}"] = ", ".join(entry.get(key, []))
    for key in ("context_words", "lead_words"):
        data[key] = ", ".join(rules[key])
    data["context_window"] = rules["context_window"]
    return data


def _url(study, name="lead_filter"):
    return reverse(name, args=[study.slug])


def _stored(study) -> dict:
    return Study.objects.get(pk=study.pk).coding_rules


# -- access ----------------------------------------------------------------------------------


def _requests(study):
    return [
        ("get", _url(study), {}),
        ("post", _url(study), _form(default_rules())),
        ("post", _url(study), {"action": "reset"}),
        ("post", _url(study, "lead_filter_dry_run"), {}),
    ]


def test_it_tells_an_annotator_that_the_page_is_for_leads(client, study, lead, alice):
    study.add_member(alice, Role.ANNOTATOR)
    study.coding_rules = {"edited": "by the lead"}
    study.save()
    client.login(username="alice", password=PASSWORD)
    for method, url, data in _requests(study):
        response = getattr(client, method)(url, data)
        assert response.status_code == 403, url
        assert "Leads only" in response.content.decode()
    assert _stored(study) == {"edited": "by the lead"}
    assert not Job.objects.exists()


def test_charlie_should_have_no_access_to_the_studys_filter(client, study, lead, charlie):
    client.login(username="charlie", password=PASSWORD)
    for method, url, data in _requests(study):
        assert getattr(client, method)(url, data).status_code == 404, url
    assert not Job.objects.exists()


def test_it_sends_an_anonymous_visitor_to_log_in(client, study):
    response = client.get(_url(study))
    assert response.status_code == 302 and "login" in response["Location"]


# -- the rules -------------------------------------------------------------------------------


def test_it_shows_the_default_rules_as_a_table(lead_client, study):
    body = lead_client.get(_url(study)).content.decode()
    assert "These are the defaults." in body
    assert "TIOBE index of\n  January 2025" in body
    assert 'name="lang-6-language" value="Go"' in body
    assert 'name="lang-6-exact_case" value="Go"' in body
    assert 'name="lang-20-language" value=""' in body  # a row to add a language
    assert "Coding filter" in body  # in the lead's menu


def test_it_saves_edited_rules(lead_client, study):
    rules = default_rules()
    rules["languages"][6]["stop_phrases"].append("Go figure")
    response = lead_client.post(_url(study), _form(rules))
    assert response.status_code == 302
    assert _stored(study)["languages"][6]["stop_phrases"][-1] == "Go figure"
    assert _stored(study) == rules
    body = lead_client.get(_url(study)).content.decode()
    assert "These are this study's edited rules." in body


def test_it_adds_and_removes_a_language(lead_client, study):
    data = _form(default_rules())
    data.update(
        {"lang-20-language": "Kotlin", "lang-20-names": "Kotlin", "lang-20-extensions": ".kt, .kts"}
    )
    data["lang-19-remove"] = "1"  # COBOL
    lead_client.post(_url(study), data)
    languages = [entry["language"] for entry in _stored(study)["languages"]]
    assert languages[-1] == "Kotlin" and "COBOL" not in languages
    assert _stored(study)["languages"][-1]["extensions"] == [".kt", ".kts"]


def test_saving_the_defaults_unchanged_keeps_them_the_defaults(lead_client, study):
    lead_client.post(_url(study), _form(default_rules()))
    assert _stored(study) == {}


@pytest.mark.parametrize(
    "change, error",
    [
        ({"lang-6-exact_case": "GO"}, "Go: exact_case: &#x27;GO&#x27; is not one of its names or abbreviations"),
        ({"lang-0-extensions": "py"}, "Python: extensions: &#x27;py&#x27; is not a file extension"),
        ({"lang-3-names": ""}, "C: names: give at least one name"),
        ({"lang-20-names": "Kotlin"}, "languages[20]: language: give the language&#x27;s name"),
        ({"context_window": "wide"}, "context_window: must be a whole number of characters"),
        ({"context_window": "5000"}, "context_window: must be between 10 and 1000, not 5000"),
    ],
)  # fmt: skip
def test_it_refuses_bad_rules_naming_the_language_and_field(lead_client, study, change, error):
    study.coding_rules = {**default_rules(), "context_window": 50}
    study.save()
    data = {**_form(default_rules()), **change}
    response = lead_client.post(_url(study), data)
    assert response.status_code == 422
    body = response.content.decode()
    assert "Not saved" in body and error in body
    # what the lead typed stays in the table, and nothing was saved
    if "lang-6-exact_case" in change:
        assert 'name="lang-6-exact_case" value="GO"' in body
    assert _stored(study)["context_window"] == 50


def test_it_resets_the_rules_to_the_defaults(lead_client, study):
    study.coding_rules = {**default_rules(), "context_window": 50}
    study.save()
    response = lead_client.post(_url(study), {"action": "reset"}, follow=True)
    assert "The coding rules are the defaults again." in response.content.decode()
    assert _stored(study) == {}


# -- dry runs --------------------------------------------------------------------------------


def _conversation(study, external_id, *texts):
    conversation = Conversation.objects.create(
        study=study, external_id=external_id, source_format="native", n_turns=len(texts)
    )
    for i, (user, reply) in enumerate(texts, 1):
        Turn.objects.create(conversation=conversation, index=i, user_text=user, reply_text=reply)
    return conversation


def test_a_dry_run_over_the_studys_conversations_counts_without_changing_anything(
    lead_client, study, eager, django_capture_on_commit_callbacks
):
    _conversation(study, "go", ("hi", "hello"), ("How do I write a web server in Go?", "..."))
    _conversation(study, "lets-go", ("let's go to the beach", "ok"))
    _conversation(study, "poem", ("a poem please", "roses are red"))
    with django_capture_on_commit_callbacks(execute=True):
        response = lead_client.post(_url(study, "lead_filter_dry_run"))
    assert response.status_code == 302
    job = Job.objects.get()
    assert (job.kind, job.status, job.params) == (
        JobKind.FILTER,
        JobStatus.DONE,
        {"filter": "coding", "apply": False},
    )
    report = job.result["filter"]
    assert (report["scanned"], report["matched"], report["dropped"]) == (3, 1, 2)
    assert report["dropped_reasons"] == {"case": 1, "no language mentioned": 1}
    assert (job.progress, job.total) == (3, 3)
    assert Conversation.objects.count() == 3
    assert set(Conversation.objects.values_list("set_aside", flat=True)) == {""}

    body = lead_client.get(
        reverse("job_detail", args=[study.slug, job.pk]), **HTMX
    ).content.decode()
    assert "Coding filter over the study's conversations (dry run)" in body
    assert "<strong>1</strong> of <strong>3</strong> conversations match" in body
    assert "would be dropped" in body and "dropped, case: 1" in body
    assert "<code>go</code> turn 2 user: How do I write a web server in <mark>Go</mark>?" in body
    assert "let&#x27;s <mark>go</mark> to the beach" in body
    assert "&#x27;go&#x27; is not written &#x27;Go&#x27;; conversation dropped" in body
    assert "imported" not in body  # reads only: not an import's summary
    page = lead_client.get(_url(study)).content.decode()
    assert f'id="job-{job.pk}"' in page  # listed on the filter page


def test_a_dry_run_fails_with_the_rules_errors_when_the_rules_are_unusable(
    lead_client, study, eager, django_capture_on_commit_callbacks
):
    rules = default_rules()
    rules["languages"][6]["exact_case"] = ["GO"]
    study.coding_rules = rules
    study.save()
    with django_capture_on_commit_callbacks(execute=True):
        lead_client.post(_url(study, "lead_filter_dry_run"))
    job = Job.objects.get()
    assert job.status == JobStatus.FAILED
    assert job.error.startswith("The study's coding rules cannot be used: Go: exact_case: 'GO'")


def _import(client, study, dry_run, filter="coding", back=None):
    data = {"format": "auto", "files": [SimpleUploadedFile("my chats.jsonl", CHATS)]}
    if filter:
        data["filter"] = filter
    if dry_run:
        data["dry_run"] = "1"
    if back:
        data["back"] = back
    return client.post(reverse("lead_import", args=[study.slug]), data)


def test_the_import_pages_dry_run_writes_nothing_and_agrees_with_the_real_run(
    lead_client, study, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _import(lead_client, study, dry_run=True)
    assert response["Location"] == reverse("lead_conversations", args=[study.slug])
    dry = Job.objects.get()
    assert dry.status == JobStatus.DONE, dry.error
    assert dry.params["filter"] == "coding" and dry.params["dry_run"] is True
    assert not Conversation.objects.exists()
    assert (dry.result["conversations"], dry.result["turns"], dry.result["dropped"]) == (3, 4, 2)
    body = lead_client.get(
        reverse("job_detail", args=[study.slug, dry.pk]), **HTMX
    ).content.decode()
    assert "Dry run of an import (coding conversations only)" in body
    assert (
        "Dry run, nothing written. Would import 3 conversations (4 turns) from 1 file(s); "
        "rejected 0 records; dropped 2 by the filter; 5 records read." in body
    )
    assert "<code>go (my chats.jsonl:1)</code>" in body

    with django_capture_on_commit_callbacks(execute=True):
        _import(lead_client, study, dry_run=False)
    real = Job.objects.exclude(pk=dry.pk).get()
    assert real.status == JobStatus.DONE, real.error
    stored = sorted(Conversation.objects.values_list("external_id", flat=True))
    assert stored == ["fence", "go", "py"]
    for key in ("conversations", "turns", "rejected", "dropped"):
        assert real.result[key] == dry.result[key], key
    assert real.result["filter"] == dry.result["filter"]
    body = lead_client.get(
        reverse("job_detail", args=[study.slug, real.pk]), **HTMX
    ).content.decode()
    assert "Import (coding conversations only)" in body
    assert (
        "Imported 3 conversations (4 turns) from 1 file(s); rejected 0 records; dropped 2 by "
        "the filter; 5 records read." in body
    )


def test_the_file_dry_run_and_the_study_dry_run_agree_on_the_same_conversations(
    lead_client, study, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        _import(lead_client, study, dry_run=True)
        _import(lead_client, study, dry_run=False, filter="")  # everything, unfiltered
        lead_client.post(_url(study, "lead_filter_dry_run"))
    files, _, stored = Job.objects.order_by("pk")
    assert Conversation.objects.count() == 5
    a, b = files.result["filter"], stored.result["filter"]
    for key in ("scanned", "matched", "dropped", "dropped_reasons"):
        assert a[key] == b[key], key
    assert [(e["language"], e["conversations"], e["near_misses"]) for e in a["languages"]] == [
        (e["language"], e["conversations"], e["near_misses"]) for e in b["languages"]
    ]


def test_the_filter_pages_file_dry_run_comes_back_to_the_filter_page(
    lead_client, study, eager, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = _import(lead_client, study, dry_run=True, back="filter")
    assert response["Location"] == _url(study)
    page = lead_client.get(_url(study)).content.decode()
    assert "Dry run of an import (coding conversations only)" in page
    assert not Conversation.objects.exists()


def test_the_import_page_offers_the_filter_and_the_dry_run(lead_client, study):
    body = lead_client.get(reverse("lead_conversations", args=[study.slug])).content.decode()
    assert 'name="filter" value="coding"' in body and 'name="dry_run"' in body


def test_it_refuses_an_unknown_filter(lead_client, study, eager):
    response = _import(lead_client, study, dry_run=False, filter="poems")
    assert response.status_code == 302
    assert not Job.objects.exists()
    page = lead_client.get(response["Location"]).content.decode()
    assert "Unknown filter &#x27;poems&#x27;." in page


def test_a_redelivered_dry_run_of_a_finished_job_does_nothing(study, lead):
    job = Job.objects.create(
        study=study, kind=JobKind.FILTER, params={"filter": "coding"}, status=JobStatus.DONE
    )
    run_filter_study(job.pk)
    job.refresh_from_db()
    assert job.result == {}


def test_the_page_filters_the_study_and_brings_the_filtered_back(
    lead_client, study, eager, django_capture_on_commit_callbacks
):
    """Issue 20, point 2: the same action as filter_study on the lead's page, as a job whose
    report says what it set aside; Bring back undoes it."""
    _conversation(study, "go", ("How do I write a web server in Go?", "..."))
    _conversation(study, "poem", ("a poem please", "roses are red"))
    with django_capture_on_commit_callbacks(execute=True):
        lead_client.post(_url(study, "lead_filter_apply"))
    job = Job.objects.get()
    assert (job.kind, job.params["apply"], job.result["filter"]["set_aside"]) == (
        JobKind.FILTER,
        True,
        1,
    )
    assert dict(Conversation.objects.values_list("external_id", "set_aside")) == {
        "go": "",
        "poem": "filtered",
    }
    page = lead_client.get(_url(study)).content.decode()
    assert "Coding filter over the study's conversations #" in page
    assert "<strong>1</strong> set aside (reason: filtered)" in page
    assert "Bring back all 1" in page
    lead_client.post(_url(study, "lead_filter_bring_back"))
    assert set(Conversation.objects.values_list("set_aside", flat=True)) == {""}
    assert "Bring back all" not in lead_client.get(_url(study)).content.decode()
