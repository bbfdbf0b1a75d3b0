from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotation.models import Annotation, Conversation, Group, Kind, Membership, Role, Source
from tests.factories import make_conversation, make_group, make_study


def write_jsonl(path: Path, *lines: dict | str) -> Path:
    path.write_text(
        "\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n",
        encoding="utf-8",
    )
    return path


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("import_annotations", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def labels_of(turn, annotator, round: int = 1) -> list[str]:
    annotation = Annotation.objects.get(
        turn=turn, annotator=annotator, round=round, is_current=True
    )
    return sorted(annotation.types.values_list("code", flat=True))


def record(**fields) -> dict:
    base = {"conversation": "c1", "turn": 1, "annotator": "alice", "labels": [], "group": "g1"}
    return {**base, **fields}


@pytest.fixture
def setup(study, alice, bob):
    group = make_group(study, "g1", annotators=[alice, bob])
    conversation = make_conversation(study, "c1", n_turns=3, group=group)
    return group, conversation


def test_it_imports_records_and_prints_a_summary(tmp_path, study, alice, bob, setup):
    group, conversation = setup
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(labels=["ambiguous_instruction", "incomplete_instruction"]),
        record(annotator="bob", labels=["ambiguous_instruction"], note="vague", confidence=4),
        record(turn=2, labels=[]),
    )

    out, err = run("s1", str(path))

    assert "3 records imported, 0 rejected" in out
    assert err == ""
    turn1, turn2 = conversation.turns.get(index=1), conversation.turns.get(index=2)
    assert labels_of(turn1, alice) == ["ambiguous_instruction", "incomplete_instruction"]
    assert labels_of(turn1, bob) == ["ambiguous_instruction"]
    # an empty list is "no smell", a row with no types
    assert labels_of(turn2, alice) == []
    bobs = Annotation.objects.get(turn=turn1, annotator=bob)
    assert (bobs.round, bobs.note, bobs.confidence, bobs.source) == (1, "vague", 4, Source.IMPORT)
    assert bobs.taxonomy_version == study.taxonomy_version


def test_it_reports_each_bad_record_and_imports_the_rest(tmp_path, study, alice, setup):
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(conversation="nope"),
        record(turn=9),
        record(labels=["ambiguous_instruction", "made_up"]),
        record(labels="ambiguous_instruction"),
        "{not json",
        "",
        "   ",
        {"conversation": "c1", "turn": 1, "labels": [], "group": "g1"},
        record(turn=0),
        record(confidence=9),
        record(round="two"),
        "[1, 2]",
        record(turn=3, labels=["ambiguous_instruction"]),
        '{"conversation": "c1", "turn": 2, "annot',
    )

    out, err = run("s1", str(path))

    lines = err.splitlines()
    assert lines == [
        f"{path}:1: conversation: unknown conversation id 'nope' in study s1",
        f"{path}:2: turn: 9 out of range (conversation 'c1' has 3 turns)",
        f"{path}:3: labels: unknown type code 'made_up' for taxonomy interaction-smells v1",
        f"{path}:4: labels: must be a list of type codes, got str",
        f"{path}:5: invalid JSON: Expecting property name enclosed in double quotes at column 2",
        f"{path}:8: annotator: missing field",
        f"{path}:9: turn: must be a positive integer, got 0",
        f"{path}:10: confidence: must be an integer from 1 to 5 or null, got 9",
        f"{path}:11: round: must be a positive integer, got 'two'",
        f"{path}:12: record must be a JSON object, got list",
        f"{path}:14: invalid JSON: Unterminated string starting at column 35",
    ]
    assert "1 records imported, 11 rejected" in out
    assert Annotation.objects.count() == 1


def test_it_rejects_an_ambiguous_conversation_id(tmp_path, study, alice, setup):
    group, _ = setup
    # WildChat's conversation_hash repeats: two conversations may share an external id
    make_conversation(study, "dup", group=group)
    make_conversation(study, "dup", group=group)
    path = write_jsonl(tmp_path / "a.jsonl", record(conversation="dup"), record())

    out, err = run("s1", str(path))

    assert err.startswith(f"{path}:1: conversation: id 'dup' is ambiguous")
    assert "1 records imported, 1 rejected" in out


def test_it_refuses_unknown_members_without_create_members(tmp_path, study, alice, setup):
    charlie = get_user_model().objects.create(username="charlie")
    make_conversation(study, "c2")
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(annotator="dora"),
        record(conversation="c2", group="g9"),
        record(annotator="charlie"),
        record(),
    )

    out, err = run("s1", str(path))

    assert err.splitlines() == [
        f"{path}:1: annotator: unknown user 'dora' (use --create-members to create it)",
        f"{path}:2: group: unknown group 'g9' in study s1 (use --create-members to create it)",
        f"{path}:3: annotator: 'charlie' is not an annotator of group 'g1' "
        "(use --create-members to add them)",
    ]
    assert not get_user_model().objects.filter(username="dora").exists()
    assert not Group.objects.filter(name="g9").exists()
    assert not Conversation.objects.get(external_id="c2").groups.exists()
    assert study.role_of(charlie) is None


def test_it_creates_members_and_groups_with_create_members(tmp_path, study):
    conversation = make_conversation(study, "c7", n_turns=2)
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(conversation="c7", annotator="dora", group="experts"),
        record(conversation="c7", turn=2, annotator="dora", group="experts"),
        record(conversation="c7", annotator="emil", group="experts"),
    )

    out, _ = run("s1", str(path), "--create-members")

    assert "3 records imported, 0 rejected, 2 annotators created, 1 groups created" in out
    dora = get_user_model().objects.get(username="dora")
    assert not dora.has_usable_password()
    group = Group.objects.get(study=study, name="experts")
    assert set(group.annotators.values_list("username", flat=True)) == {"dora", "emil"}
    assert Membership.objects.get(study=study, user=dora).role == Role.ANNOTATOR
    conversation.refresh_from_db()
    assert conversation.groups.get() == group


def test_create_members_kind_expert_seats_experts_who_may_decide_proposals(tmp_path, study):
    """Issue 20, point 4: with --kind expert the groups it creates are expert groups, and
    their members experts, so they may decide a proposal (everyone was a student)."""
    from annotation.access import is_expert

    make_conversation(study, "c7", n_turns=1)
    path = write_jsonl(tmp_path / "a.jsonl", record(conversation="c7", annotator="dora",
                                                    group="experts"))  # fmt: skip
    run("s1", str(path), "--create-members", "--kind", "expert")
    assert Group.objects.get(study=study, name="experts").kind == Kind.EXPERT
    dora = get_user_model().objects.get(username="dora")
    assert Membership.objects.get(study=study, user=dora).kind == Kind.EXPERT
    assert is_expert(study, dora, study.role_of(dora))
    with pytest.raises(CommandError, match="invalid choice: 'guru'"):
        run("s1", str(path), "--create-members", "--kind", "guru")


def test_it_keeps_an_existing_members_role_when_adding_them_to_a_group(
    tmp_path, study, lead, setup
):
    path = write_jsonl(tmp_path / "a.jsonl", record(annotator="lead"))

    run("s1", str(path), "--create-members")

    group, _ = setup
    assert group.annotators.filter(pk=lead.pk).exists()
    assert study.role_of(lead) == Role.LEAD


def test_it_rejects_a_second_group_on_a_conversation_when_they_share_an_annotator(
    tmp_path, study, alice, setup
):
    # groups may share a conversation, but one person labels it in one group only
    make_group(study, "g2", annotators=[alice])
    path = write_jsonl(tmp_path / "a.jsonl", record(group="g2"), record())

    out, err = run("s1", str(path), "--create-members")

    assert err.strip() == (
        f"{path}:1: group: groups 'g2' and 'g1' cannot share conversations: alice would sit "
        "in both (one person labels a shared card in one group only, so round 1 stays blind)"
    )
    assert Conversation.objects.get(external_id="c1").groups.get().name == "g1"


def test_it_makes_a_new_revision_on_reimport(tmp_path, study, alice, setup):
    _, conversation = setup
    first = write_jsonl(tmp_path / "a.jsonl", record(labels=["ambiguous_instruction"]))
    second = write_jsonl(tmp_path / "b.jsonl", record(labels=["incomplete_instruction"]))

    run("s1", str(first))
    run("s1", str(second))

    turn = conversation.turns.get(index=1)
    rows = Annotation.objects.filter(turn=turn, annotator=alice, round=1).order_by("id")
    assert [r.is_current for r in rows] == [False, True]
    assert list(rows[0].types.values_list("code", flat=True)) == ["ambiguous_instruction"]
    assert labels_of(turn, alice) == ["incomplete_instruction"]


def test_it_imports_later_rounds_through_the_same_states(tmp_path, study, alice, bob, setup):
    _, conversation = setup
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(labels=[], round=2),  # too early: the card is still in round 1
        record(labels=["ambiguous_instruction"]),
        record(annotator="bob", labels=[]),
        record(labels=[], round=2),
        record(annotator="bob", labels=[], round=2),
    )

    out, err = run("s1", str(path))

    assert "4 records imported, 1 rejected" in out
    assert f"{path}:1: round: Round 2 is not open for this card (it is open)." in err
    turn = conversation.turns.get(index=1)
    assert labels_of(turn, alice, round=1) == ["ambiguous_instruction"]
    assert labels_of(turn, alice, round=2) == []
    consensus = turn.consensus.get(is_current=True)
    assert (consensus.method, consensus.from_round) == ("discussion", 2)


def test_it_enforces_the_axis_selection_limits(tmp_path, alice):
    study = make_study("s2", taxonomy="agent-misalignment")
    group = make_group(study, "g1", annotators=[alice])
    make_conversation(study, "c1", group=group)
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(labels=["DS1", "DS2"]),
        record(labels=["DS1", "misread_project"]),
    )

    out, err = run("s2", str(path))

    assert err.strip() == (
        f"{path}:1: labels: Damage severity: at most 1 type(s) per card. "
        "Got DS1, DS2 (axis 'damage_severity')."
    )
    assert "1 records imported, 1 rejected" in out


def test_it_exits_non_zero_when_nothing_could_be_imported(tmp_path, study, alice, setup):
    path = write_jsonl(tmp_path / "a.jsonl", record(conversation="nope"), "{")

    with pytest.raises(CommandError, match="nothing could be imported"):
        run("s1", str(path))


def test_it_fails_clearly_for_an_unknown_study_or_file(tmp_path, study):
    path = write_jsonl(tmp_path / "a.jsonl", record())

    with pytest.raises(CommandError, match="unknown study 'nope'"):
        run("nope", str(path))
    with pytest.raises(CommandError, match="missing.jsonl: cannot read"):
        run("s1", str(tmp_path / "missing.jsonl"))


def test_it_seats_every_annotator_of_a_group_of_three_before_any_label(tmp_path, study):
    # issue 7: seated line by line, round 1 closed after dora and emil, and fay was refused
    conversation = make_conversation(study, "c7", n_turns=2)
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(conversation="c7", annotator="dora", group="trio", labels=["code_rollback"]),
        record(conversation="c7", annotator="emil", group="trio", labels=["code_rollback"]),
        record(conversation="c7", annotator="fay", group="trio", labels=[]),
        record(conversation="c7", turn=2, annotator="fay", group="trio", labels=[]),
    )

    out, err = run("s1", str(path), "--create-members")

    assert err == ""
    assert "4 records imported, 0 rejected, 3 annotators created, 1 groups created" in out
    turn = conversation.turns.get(index=1)
    # three annotators seated: fay's differing label makes the card disputed, not agreed
    assert turn.states.get().status == "disputed"
    assert not turn.consensus.exists()
    assert labels_of(turn, get_user_model().objects.get(username="fay")) == []
    assert conversation.turns.get(index=2).states.get().status == "open"


def test_it_refuses_to_seat_a_groups_moderator_as_its_annotator(
    tmp_path, study, alice, bob, charlie
):
    group = make_group(study, "g1", annotators=[alice, bob], moderator=charlie)
    make_conversation(study, "c1", n_turns=3, group=group)
    path = write_jsonl(
        tmp_path / "a.jsonl", record(annotator="charlie"), record(annotator="alice", turn=2)
    )

    out, err = run("s1", str(path), "--create-members")

    assert err.splitlines() == [
        f"{path}:1: annotator: 'charlie' is the moderator of group 'g1', "
        "so cannot be an annotator of it"
    ]
    assert "1 records imported, 1 rejected" in out
    assert not group.annotators.filter(pk=charlie.pk).exists()
    assert not Annotation.objects.filter(annotator=charlie).exists()


def test_it_prints_progress_every_n_records(tmp_path, study, alice, bob, setup):
    path = write_jsonl(
        tmp_path / "a.jsonl",
        *[record(annotator=who, turn=t) for t in (1, 2, 3) for who in ("alice", "bob")],
    )

    out, _ = run("s1", str(path), "--batch-size", "2", "--progress-every", "4")

    assert "4/6 records done" in out
    assert "6 records imported, 0 rejected" in out


def test_it_refuses_labels_for_a_group_in_the_open_sort(tmp_path, study, alice, bob, setup):
    """An open-sorting group's round-1 labels come from its annotators' own free tags at the
    freeze (annotation/opensort): an imported label would come before them."""
    group, conversation = setup
    group.phase = "open_sort"
    group.save(update_fields=["phase"])
    other = make_group(study, "g2", annotators=[alice, bob])
    make_conversation(study, "c2", n_turns=1, group=other)
    path = write_jsonl(
        tmp_path / "a.jsonl",
        record(labels=["ambiguous_instruction"]),
        record(conversation="c2", group="g2", labels=[]),
    )
    out, err = run("s1", str(path))
    assert err.splitlines() == [
        f"{path}:1: group: group 'g1' is in the open sort: its cards take free tags on the card "
        "page, which become round-1 labels at the freeze; no label is given before that"
    ]
    assert "1 records imported, 1 rejected" in out
    assert not Annotation.objects.filter(turn__conversation=conversation).exists()
