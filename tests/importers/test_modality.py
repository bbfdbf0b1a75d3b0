"""Modality (issue 21 point 6): importers record `modality` (ide or cli) and `tool` in the
conversation's metadata where the log tells it; the lead can set both for a whole import."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotation.importers import import_files, modality
from annotation.models import Conversation

from .agent_files import (
    SESSION,
    SPECSTORY_LEGACY,
    SPECSTORY_V2,
    claude_code_session,
    codex_rollout,
)
from .test_swechat import session_rows


def _told(conversation) -> tuple:
    return conversation.metadata.get("modality"), conversation.metadata.get("tool")


def test_claude_code_is_a_cli(study, files):
    import_files(study, [files.jsonl(f"{SESSION}.jsonl", *claude_code_session())])
    assert _told(Conversation.objects.get()) == ("cli", "Claude Code")


def test_codex_is_a_cli(study, files):
    import_files(study, [files.jsonl("rollout.jsonl", *codex_rollout())])
    assert _told(Conversation.objects.get()) == ("cli", "Codex")


def test_specstory_tells_it_by_its_provider(study, files):
    import_files(study, [files.raw("a.md", SPECSTORY_V2), files.raw("b.md", SPECSTORY_LEGACY)])
    by_file = {c.metadata["file"]: _told(c) for c in Conversation.objects.all()}
    # v2's provider is "Claude Code" (a CLI), the legacy export's is "cursor" (an IDE)
    assert by_file == {"a.md": ("cli", "Claude Code"), "b.md": ("ide", "cursor")}


def test_swechat_tells_it_by_its_source_field_else_its_agent(study, files):
    rows = session_rows("s-a") + [dict(r, source="vscode") for r in session_rows("s-b")]
    import_files(study, [files.jsonl("conversations.jsonl", *rows)])
    told = {c.external_id: _told(c) for c in Conversation.objects.all()}
    assert told == {"s-a": ("cli", "claude-code"), "s-b": ("ide", "claude-code")}


def test_the_lead_sets_it_for_a_whole_import_over_what_the_log_says(study, files, capsys):
    path = files.jsonl(f"{SESSION}.jsonl", *claude_code_session())
    call_command("import_conversations", study.slug, str(path), "--modality", "ide",
                 "--tool", "VS Code")  # fmt: skip
    assert _told(Conversation.objects.get()) == ("ide", "VS Code")
    with pytest.raises(CommandError, match="modality"):
        call_command("import_conversations", study.slug, str(path), "--modality", "web")


@pytest.mark.parametrize(
    ("name", "expected"),
    [("Cursor IDE", "ide"), ("cursor", "ide"), ("Claude Code", "cli"), ("Codex CLI", "cli"),
     ("cursor-agent", "cli"), ("VS Code", "ide"), ("Something", None), ("", None)],
)  # fmt: skip
def test_a_tools_name_tells_its_modality(name, expected):
    assert modality.of_tool(name) == expected


def test_the_import_form_sets_it_for_a_whole_import(
    client, study, lead, settings, media, django_capture_on_commit_callbacks
):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    from annotation.models import Job, JobStatus

    settings.CELERY_TASK_ALWAYS_EAGER = True
    client.force_login(lead)
    url = reverse("lead_import", args=[study.slug])
    upload = SimpleUploadedFile("cc.md", SPECSTORY_V2.encode())  # the log says cli
    data = {"format": "auto", "files": [upload], "modality": "ide", "tool": "VS Code"}
    with django_capture_on_commit_callbacks(execute=True):
        assert client.post(url, data).status_code == 302
    job = Job.objects.get()
    assert job.status == JobStatus.DONE, job.error
    assert _told(Conversation.objects.get()) == ("ide", "VS Code")
    # a modality that is neither is refused, naming the field; nothing is queued
    upload = SimpleUploadedFile("cc2.md", SPECSTORY_V2.encode())
    response = client.post(url, {"format": "auto", "files": [upload], "modality": "web"},
                           follow=True)  # fmt: skip
    assert "Modality: modality &#x27;web&#x27;: give ide or cli." in response.text
    assert Job.objects.count() == 1
