"""Issue 12: notes, evidence, comments, rationales and proposals' texts have maximum lengths
(annotation/limits.py) in the forms, the API and the models. A 45 MB note was accepted and
made the discussion page 88 MB. Over the limit: a clear error naming the field and the
limit, the text typed kept in the page, nothing saved."""

from __future__ import annotations

import io
import json

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator

from annotation.models import Annotation, Comment, Consensus, Proposal
from tests.api.test_cards import url
from tests.factories import HTMX, label, make_conversation, make_group, study_url, token_client

pytestmark = pytest.mark.django_db

NOTE_LIMIT = 10_000  # the defaults of config/settings.py
COMMENT_LIMIT = 20_000


def too_long(n: int) -> str:
    # a marker at the start, to find the text kept in the page
    return ("KEPT-" + "x" * n)[:n]


def test_the_card_refuses_a_note_over_the_limit_and_keeps_it_typed(client, study, alice):
    group = make_group(study, "g1", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    client.force_login(alice)
    note = too_long(NOTE_LIMIT + 1)
    data = {"types": ["code_rollback"], "note": note}
    response = client.post(study_url("card", turn), data, **HTMX)
    html = response.content.decode()
    assert "Note: at most 10,000 characters (yours has 10,001)." in html
    assert note in html  # still in the textarea, to shorten
    assert not Annotation.objects.exists()
    # at the limit it is saved
    client.post(study_url("card", turn), {**data, "note": note[:-1]}, **HTMX)
    assert Annotation.objects.get().note == note[:-1]


def test_the_limit_is_a_setting(client, study, alice, settings):
    settings.CARDSORT_MAX_NOTE_CHARS = 20
    group = make_group(study, "g1", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    client.force_login(alice)
    data = {"types": ["code_rollback"], "note": "n" * 21}
    html = client.post(study_url("card", turn), data, **HTMX).content.decode()
    assert "Note: at most 20 characters (yours has 21)." in html
    assert not Annotation.objects.exists()


def test_a_comment_over_the_limit_is_refused_naming_it(client, alice, disputed):
    client.force_login(alice)
    text = too_long(COMMENT_LIMIT + 1)
    response = client.post(study_url("comment", disputed), {"text": text}, **HTMX)
    assert response.status_code == 422
    html = response.content.decode()
    assert "Comment: at most 20,000 characters (yours has 20,001)." in html
    assert "Comment: Comment:" not in html
    assert text in html
    assert not Comment.objects.exists()


@pytest.mark.parametrize("field, limit", [("note", NOTE_LIMIT), ("evidence", COMMENT_LIMIT)])
def test_a_round_2_note_or_quote_over_the_limit_is_refused(client, alice, disputed, field, limit):
    client.force_login(alice)
    text = too_long(limit + 1)
    data = {"types": ["code_rollback"], "round": "2", field: text}
    response = client.post(study_url("discussion", disputed), data, **HTMX)
    assert response.status_code == 422
    html = response.content.decode()
    assert f"{field.capitalize()}: at most {limit:,} characters (yours has {limit + 1:,})." in html
    assert f"{field.capitalize()}: {field.capitalize()}:" not in html  # named once
    assert text in html
    assert not Annotation.objects.filter(turn=disputed, round=2).exists()


def test_a_rationale_over_the_limit_is_refused(client, moderator, disputed):
    client.force_login(moderator)
    text = too_long(COMMENT_LIMIT + 1)
    data = {"types": ["code_rollback"], "rationale": text}
    response = client.post(study_url("decide", disputed), data, **HTMX)
    assert response.status_code == 422
    html = response.content.decode()
    assert "Rationale: at most 20,000 characters (yours has 20,001)." in html
    assert "Rationale: Rationale:" not in html
    assert text in html
    assert not Consensus.objects.exists()


def test_a_proposals_definition_over_the_limit_is_refused(client, study, alice):
    group = make_group(study, "g1", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    client.force_login(alice)
    data = {"name": "Long one", "definition": too_long(COMMENT_LIMIT + 1), "reason": "r"}
    response = client.post(study_url("propose", turn), data, **HTMX)
    assert "Definition: at most 20,000 characters (yours has 20,001)." in response.content.decode()
    assert not Proposal.objects.exists()


def test_the_api_answers_400_naming_the_field(cards_setup, alice):
    _, c1, _ = cards_setup
    body = {"labels": [], "note": "n" * (NOTE_LIMIT + 1)}
    response = token_client(alice).put(url(c1.turns.first(), "annotation/"), body, "json")
    assert response.status_code == 400
    assert response.json() == {"note": ["Note: at most 10,000 characters (yours has 10,001)."]}
    assert not Annotation.objects.exists()
    body = {"labels": [], "evidence": "e" * (COMMENT_LIMIT + 1)}
    response = token_client(alice).put(url(c1.turns.first(), "annotation/"), body, "json")
    assert response.status_code == 400
    assert list(response.json()) == ["evidence"]


def test_the_schema_shows_the_limits(db):
    schema = SchemaGenerator().get_schema(request=None, public=True)
    fields = schema["components"]["schemas"]["AnnotationInput"]["properties"]
    assert fields["note"]["maxLength"] == NOTE_LIMIT
    assert fields["evidence"]["maxLength"] == COMMENT_LIMIT


def test_the_models_refuse_it_on_validation(study, alice):
    group = make_group(study, "g1", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    annotation = label(turn, alice, "code_rollback")
    annotation.note = "n" * (NOTE_LIMIT + 1)
    with pytest.raises(ValidationError) as e:
        annotation.full_clean()
    assert e.value.message_dict["note"] == ["Note: at most 10,000 characters (yours has 10,001)."]
    comment = Comment(turn=turn, author=alice, round=2, text="c" * (COMMENT_LIMIT + 1))
    with pytest.raises(ValidationError) as e:
        comment.full_clean()
    assert list(e.value.message_dict) == ["text"]


@pytest.mark.django_db(transaction=True)
def test_the_migration_changes_nothing_stored():
    """The limits are validators: their migration is no SQL on either database, so a note
    stored longer before it (45 MB) stays, whole."""
    out = io.StringIO()
    call_command("sqlmigrate", "annotation", "0015", stdout=out)
    statements = [
        line
        for line in out.getvalue().splitlines()
        if line.strip() and not line.startswith("--") and line.strip() not in ("BEGIN;", "COMMIT;")
    ]
    assert statements == []


def test_a_note_stored_before_the_limit_is_still_shown(client, study, alice):
    group = make_group(study, "g1", [alice])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    long_note = too_long(NOTE_LIMIT * 3)
    label(turn, alice, "code_rollback", note=long_note)
    client.force_login(alice)
    assert long_note in client.get(study_url("card", turn)).content.decode()
    assert Annotation.objects.get().note == long_note


def test_the_label_import_refuses_a_long_note_naming_file_line_and_field(tmp_path, study, alice):
    group = make_group(study, "g1", [alice])
    make_conversation(study, "c1", n_turns=2, group=group)
    base = {"conversation": "c1", "annotator": "alice", "labels": [], "group": "g1"}
    path = tmp_path / "labels.jsonl"
    lines = [
        base | {"turn": 1, "note": "fine"},
        base | {"turn": 2, "note": "n" * (NOTE_LIMIT + 1)},
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    out, err = io.StringIO(), io.StringIO()
    call_command("import_annotations", "s1", str(path), stdout=out, stderr=err)
    assert f"{path}:2: note: at most 10,000 characters (yours has 10,001)." in err.getvalue()
    assert "1 records imported, 1 rejected" in out.getvalue()
    assert list(Annotation.objects.values_list("turn__index", "note")) == [(1, "fine")]
