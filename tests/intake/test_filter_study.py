"""The coding filter over a study's current conversations, after the import (issue 20,
point 2: the study filters again after splitting): the non-coding ones are set aside as
`filtered`, reversibly; one already set aside is never read; a dry run counts exactly what
the real run does."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import Conversation, SetAside, Turn
from tests.factories import make_conversation, make_group

pytestmark = pytest.mark.django_db


def chat(study, external_id: str, text: str = "what a lovely day for a walk") -> Conversation:
    conversation = Conversation.objects.create(
        study=study, external_id=external_id, source_format="native", n_turns=1
    )
    Turn.objects.create(conversation=conversation, index=1, user_text=text, reply_text="indeed")
    return conversation


@pytest.fixture
def corpus(study, alice):
    group = make_group(study, "g1", [alice])
    make_conversation(study, "code-1", n_turns=2)  # ```python fences: coding
    chat(study, "chat-1")
    chat(study, "chat-2", "let's go to the park, then swift home")  # near misses only
    chat(study, "chat-assigned")
    Conversation.objects.filter(external_id="chat-assigned").assign(group)
    chat(study, "original").__class__.objects.filter(external_id="original").update(
        set_aside=SetAside.SPLIT
    )
    return study


def run(*args: str) -> str:
    out = StringIO()
    call_command("filter_study", "s1", "--filter", "coding", *args, stdout=out)
    return out.getvalue()


def aside(study) -> dict[str, str]:
    rows = Conversation.objects.filter(study=study).exclude(set_aside=SetAside.NO)
    return dict(rows.values_list("external_id", "set_aside"))


def test_a_dry_run_counts_what_the_real_run_does_and_changes_nothing(corpus):
    dry = run("--dry-run")
    assert aside(corpus) == {"original": "split"}  # nothing set aside
    assert "1 of 4 conversations match, 3 dropped." in dry  # the split original not read
    assert "2 would be set aside (reason: filtered)" in dry
    assert "1 dropped by the rules but kept: assigned to a group already (chat-assigned)" in dry

    real = run()
    assert real.splitlines()[0] == dry.splitlines()[0]
    assert "2 set aside (reason: filtered)" in real
    assert aside(corpus) == {"original": "split", "chat-1": "filtered", "chat-2": "filtered"}
    # the set no longer holds them: a second run reads only what is left
    assert "1 of 2 conversations match, 1 dropped." in run("--dry-run")


def test_bring_back_returns_the_filtered_conversations_only(corpus):
    run()
    assert "2 filtered conversation(s) back" in run("--bring-back")
    assert aside(corpus) == {"original": "split"}


def test_the_command_names_what_is_wrong(corpus):
    with pytest.raises(CommandError, match="no study with slug 'nope'"):
        call_command("filter_study", "nope", "--filter", "coding")
    with pytest.raises(CommandError, match="invalid choice: 'language'"):
        call_command("filter_study", "s1", "--filter", "language")
    with pytest.raises(CommandError, match="do not go together"):
        run("--bring-back", "--dry-run")
