"""The expert phase without the pages (issue 20, point 5): export_tags writes every tag set,
import_tags reads them back through the card's rules (all or nothing, each bad line named),
freeze_board groups the tags from a mapping file and freezes as the board's button does."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from annotation.models import (
    Annotation,
    BoardEvent,
    BoardType,
    BoardVisit,
    Phase,
    Study,
    TagSet,
)
from tests.opensort.helpers import make_open_sort

pytestmark = pytest.mark.django_db


def export(slug: str = "s1") -> list[dict]:
    out = StringIO()
    call_command("export_tags", slug, stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def write(tmp_path, name: str, rows) -> str:
    path = tmp_path / name
    if isinstance(rows, dict):
        path.write_text(json.dumps(rows), encoding="utf-8")
    else:
        path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows))
    return str(path)


def test_export_then_import_gives_back_the_same_tag_sets(tmp_path):
    w = make_open_sort()
    before = export()
    assert len(before) == 7  # alice 3, bob 3, ed 1
    first = before[0]
    assert (first["conversation"], first["turn"], first["group"], first["annotator"]) == (
        "c1",
        1,
        "E",
        "alice",
    )
    assert [t["name"] for t in first["tags"]] == ["=cmd()", "vague"]
    assert [r["no_smell"] for r in before if r["annotator"] == "alice"] == [False, False, True]
    path = write(tmp_path, "tags.jsonl", before)
    TagSet.objects.filter(group__study=w["study"]).delete()
    out = StringIO()
    call_command("import_tags", "s1", path, stdout=out)
    assert "7 tag set(s) saved." in out.getvalue()
    assert export() == before


def test_a_bad_file_names_every_line_and_saves_nothing(tmp_path):
    w = make_open_sort()
    TagSet.objects.filter(group__study=w["study"]).delete()
    good = {"conversation": "c1", "turn": 1, "group": "E", "annotator": "alice", "tags": ["x"]}
    path = write(
        tmp_path,
        "bad.jsonl",
        [
            good,
            {**good, "conversation": "nope"},
            {**good, "annotator": "sam"},  # not in group E
            {**good, "tags": "x"},
            {**good, "turn": 9},
            "{not json",
            {**good, "group": "S", "conversation": "c3", "annotator": "sam"},  # closed sort
        ],
    )
    with pytest.raises(CommandError) as caught:
        call_command("import_tags", "s1", path)
    message = str(caught.value)
    assert "nothing was saved" in message
    assert f"{path}:1:" not in message
    assert f"{path}:2: conversation: no conversation 'nope'" in message
    assert f"{path}:3: annotator: sam is not an annotator of E" in message
    assert f"{path}:4: tags: a list of tags" in message
    assert f"{path}:5: turn: conversation 'c1' has no turn 9" in message
    assert f"{path}:6: not JSON" in message
    assert f"{path}:7: tag: Group S is not in the open sort" in message  # the card's own rule
    assert not TagSet.objects.exists()


def test_tags_locked_by_a_board_visit_are_refused_as_on_the_card(tmp_path):
    w = make_open_sort()
    BoardVisit.objects.create(study=w["study"], user=w["alice"])
    path = write(
        tmp_path,
        "t.jsonl",
        [{"conversation": "c1", "turn": 3, "group": "E", "annotator": "alice", "tags": ["new"]}],
    )
    with pytest.raises(CommandError, match=r"t.jsonl:1: tag: Your tags are locked"):
        call_command("import_tags", "s1", path)
    assert TagSet.objects.get(turn=w["turns"][2], annotator=w["alice"]).tags.count() == 0


MAPPING = {
    "types": [{"name": "Injection", "category": "Security", "definition": "runs input"}],
    "tags": {"=cmd()": "Injection"},
}


def test_freeze_board_groups_the_tags_and_freezes_as_the_button(tmp_path):
    w = make_open_sort()
    out = StringIO()
    call_command("freeze_board", "s1", "--mapping", write(tmp_path, "m.json", MAPPING), "--by",
                 "lena", stdout=out)  # fmt: skip
    assert "tag sets became round-1 labels" in out.getvalue()
    study = Study.objects.get(slug="s1")
    assert study.phase == Phase.CLOSED_SORT
    label = Annotation.objects.get(turn=w["turns"][0], annotator=w["alice"], round=1)
    assert {t.name for t in label.types.all()} == {"Ambiguous", "Injection"}
    actions = list(BoardEvent.objects.filter(study=study).order_by("pk").values_list("action"))
    assert actions == [("create_type",), ("set_type",), ("freeze",)]
    assert {e.actor.username for e in BoardEvent.objects.filter(study=study)} == {"lena"}


@pytest.mark.parametrize(
    "mapping, message",
    [
        ({**MAPPING, "tags": {"=cmd()": "Nowhere"}}, "tags[0]: type: no type 'Nowhere'"),
        ({**MAPPING, "tags": {"missing": "Injection"}}, "tags[0]: tag: no tag 'missing'"),
        (
            {
                **MAPPING,
                "tags": [
                    {"tag": "=cmd()", "type": "Injection"},
                    {"tag": "=CMD()", "type": "Ambiguous"},
                ],
            },  # fmt: skip
            "tags[1]: tag: '=CMD()' is mapped to 'Injection' too",
        ),
        ({"types": [], "tags": {"unclear": "Ambiguous"}}, "1 tag(s) used on cards have no type"),
        ({"types": [{"category": "x"}], "tags": {}}, "types[0]: name: a name is required"),
    ],
)
def test_a_mapping_that_cannot_be_frozen_changes_nothing(tmp_path, mapping, message):
    w = make_open_sort()
    with pytest.raises(CommandError) as caught:
        call_command("freeze_board", "s1", "--mapping", write(tmp_path, "m.json", mapping))
    assert message in str(caught.value)
    assert list(BoardType.objects.filter(study=w["study"]).values_list("name", flat=True)) == [
        "Ambiguous"
    ]
    assert not BoardEvent.objects.exists()
    assert not Annotation.objects.exists()


def test_two_conversations_with_one_id_round_trip_by_key(tmp_path):
    """WildChat repeats ids (issue 20, defect 1): a second c1, key c1~2, in group E. The
    export names each tag set's conversation_key; the import puts each back on its own
    conversation, and a plain c1 with no key is ambiguous, naming both keys."""
    from annotation.models import FreeTag
    from tests.factories import make_conversation

    w = make_open_sort()
    twin = make_conversation(w["study"], "c1", n_turns=1, group=w["group"])
    assert twin.key == "c1~2"
    other = FreeTag.objects.create(study=w["study"], author=w["alice"], name="other")
    TagSet.objects.create(turn=twin.turns.get(), group=w["group"], annotator=w["alice"]).tags.set(
        [other]
    )
    before = export()
    assert {(r["conversation"], r["conversation_key"]) for r in before if r["group"] == "E"} == {
        ("c1", "c1"),
        ("c1", "c1~2"),
    }
    path = write(tmp_path, "tags.jsonl", before)
    TagSet.objects.filter(group__study=w["study"]).delete()
    call_command("import_tags", "s1", path, stdout=StringIO())
    assert export() == before

    plain = {"conversation": "c1", "turn": 1, "group": "E", "annotator": "bob", "tags": []}
    with pytest.raises(CommandError) as caught:
        call_command("import_tags", "s1", write(tmp_path, "plain.jsonl", [plain]))
    assert "plain.jsonl:1: conversation: id 'c1' is ambiguous" in str(caught.value)
    assert "c1~1 (key c1) or c1~2" in str(caught.value)
