from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client

from annotation.demo import ANSWER_KEY, CONVERSATIONS, demo_conversations, native_records
from annotation.importers import native
from annotation.importers.base import build_conversation
from annotation.models import Annotation, Conversation, Group, Membership, Study, Turn
from taxonomy.models import Taxonomy

USERNAMES = ["lead", "moderator", "alice", "bob", "carol", "dave"]


def run_demo(*args: str) -> str:
    out = StringIO()
    call_command("demo", *args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_it_creates_users_who_log_in_with_demo():
    run_demo()
    for username in USERNAMES:
        assert Client().login(username=username, password="demo"), username
    assert not Client().login(username="alice", password="wrong")


@pytest.mark.django_db
def test_it_gives_members_their_roles():
    run_demo()
    study = Study.objects.get(slug="demo")
    assert study.name == "Interaction smells demo"
    assert study.taxonomy_version.taxonomy.slug == "interaction-smells"
    roles = {
        m.user.username: (m.role, m.kind)
        for m in Membership.objects.filter(study=study).select_related("user")
    }
    assert roles == {
        "lead": ("lead", "expert"),
        "moderator": ("moderator", "expert"),
        "alice": ("annotator", "student"),
        "bob": ("annotator", "student"),
        "carol": ("annotator", "student"),
        "dave": ("annotator", "student"),
    }


@pytest.mark.django_db
def test_it_sets_up_the_three_groups():
    run_demo()
    groups = {
        g.name: (
            g.kind,
            sorted(u.username for u in g.annotators.all()),
            g.moderator.username if g.moderator else None,
        )
        for g in Group.objects.filter(study__slug="demo")
    }
    assert groups == {
        "Students A": ("student", ["alice", "bob"], "moderator"),
        "Students B": ("student", ["carol", "dave"], "moderator"),
        "Experts": ("expert", ["lead", "moderator"], None),
    }
    for group in Group.objects.filter(study__slug="demo"):
        assert group.conversations.count() == 12
    assert not Conversation.objects.filter(study__slug="demo", assignments=None).exists()


@pytest.mark.django_db
def test_it_gives_every_annotator_every_turn_of_their_group():
    run_demo()
    study = Study.objects.get(slug="demo")
    for group in study.groups.all():
        expected = set(
            Turn.objects.filter(conversation__assignments__group=group).values_list("pk", flat=True)
        )
        assert len(expected) >= 24
        for user in group.annotators.all():
            cards = set(Turn.objects.for_annotator(study, user).values_list("pk", flat=True))
            assert cards == expected, (group.name, user.username)


@pytest.mark.django_db
def test_it_imports_the_conversations_through_the_importer():
    run_demo()
    study = Study.objects.get(slug="demo")
    demo = {c.external_id: c for c in demo_conversations()}
    stored = {c.external_id: c for c in study.conversations.all()}
    assert stored.keys() == demo.keys()
    for external_id, conversation in stored.items():
        assert conversation.source_format == "native"
        turns = list(conversation.turns.order_by("index"))
        assert conversation.n_turns == len(turns) == len(demo[external_id].turns)
        for turn, expected in zip(turns, demo[external_id].turns, strict=True):
            assert (turn.user_text, turn.reply_text) == (expected.user, expected.reply)


def test_it_ships_realistic_coding_chats_showing_every_smell(db):
    conversations = demo_conversations()
    assert len(conversations) == 36
    assert {len(c.turns) for c in conversations} <= {2, 3, 4, 5}
    assert len({c.language for c in conversations}) >= 8
    assert all("```" in c.turns[0].reply for c in conversations)
    assert any(
        len(line) > 120 for c in conversations for t in c.turns for line in t.user.splitlines()
    )
    shown = {s for c in conversations for t in c.turns for s in t.smells}
    preset = set(Taxonomy.load_preset("interaction-smells").types_by_code())
    assert shown == preset
    clean = [t for c in conversations for t in c.turns if not t.smells]
    assert len(clean) > len(conversations)
    no_pandas = next(c for c in conversations if "Don't use pandas" in c.turns[0].user)
    assert "import pandas" in no_pandas.turns[1].reply


def test_it_reads_every_record_of_the_data_file_as_a_native_record_with_turns():
    lines = [line for line in CONVERSATIONS.read_text(encoding="utf-8").splitlines() if line]
    records = native_records()
    assert len(records) == len(lines) == 36
    key = json.loads(ANSWER_KEY.read_text(encoding="utf-8"))
    assert [r["id"] for r in records] == list(key)
    for record in records:
        parsed = native.parse(record, fallback_id="")
        _, preamble, turns, warnings = build_conversation(parsed)
        assert len(turns) >= 1 and not preamble and not warnings, record["id"]
        assert len(turns) == len(key[record["id"]]), record["id"]
        # the answer key stays out of what is imported: the card page shows the metadata
        assert set(record["metadata"]) == {"title", "language", "source"}, record["id"]


@pytest.mark.django_db
def test_it_gives_each_group_every_smell():
    run_demo()
    smells_of = {
        c.external_id: {s for t in c.turns for s in t.smells} for c in demo_conversations()
    }
    for group in Group.objects.filter(study__slug="demo"):
        ids = group.conversations.values_list("external_id", flat=True)
        assert len(set().union(*(smells_of[i] for i in ids))) == 9, group.name


@pytest.mark.django_db
def test_it_is_idempotent():
    run_demo()
    study = Study.objects.get(slug="demo")
    before = (study.pk, Conversation.objects.count(), Turn.objects.count(), Group.objects.count())
    out = run_demo()
    assert "already exists" in out
    after = (
        Study.objects.get(slug="demo").pk,
        Conversation.objects.count(),
        Turn.objects.count(),
        Group.objects.count(),
    )
    assert after == before
    assert Study.objects.filter(slug="demo").count() == 1


@pytest.mark.django_db
def test_it_resets_the_demo_study():
    run_demo()
    study = Study.objects.get(slug="demo")
    turn = Turn.objects.filter(conversation__study=study).first()
    alice = study.groups.get(name="Students A").annotators.get(username="alice")
    Annotation.record(turn=turn, annotator=alice, types=[])
    n_turns = Turn.objects.count()

    out = run_demo("--reset")

    assert "Deleted" in out and "Created" in out
    new = Study.objects.get(slug="demo")
    assert new.pk != study.pk
    assert not Annotation.objects.exists()
    assert Turn.objects.count() == n_turns
    assert Client().login(username="alice", password="demo")


@pytest.mark.django_db
def test_it_prints_the_url_users_and_password():
    out = run_demo()
    assert "http://127.0.0.1:8000/" in out
    lines = out.splitlines()
    roles = {}
    for username in USERNAMES:
        row = next(line for line in lines if line.split()[:2] == [username, "demo"])
        roles[username] = row.split()[2]
    assert roles == {
        "lead": "lead",
        "moderator": "moderator",
        "alice": "annotator",
        "bob": "annotator",
        "carol": "annotator",
        "dave": "annotator",
    }
    alice_row = next(line for line in lines if line.split()[:1] == ["alice"])
    assert "Students A" in alice_row
    # the table is printed again when the demo already exists: `make run` shows it every time
    assert "alice" in run_demo() and "http://127.0.0.1:8000/" in run_demo()


@pytest.mark.django_db
def test_the_printed_address_follows_the_port():
    # `make run PORT=8061` passes its port to the demo, which prints where the server really is
    out = run_demo("--port", "8061")
    assert "Open http://127.0.0.1:8061/ and log in" in out
    assert ":8000" not in out
