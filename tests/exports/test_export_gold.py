"""`export_gold`: one row per card with its consensus and provenance, each annotator's
labels, in JSONL, CSV and Parquet; streamed in chunks; never a partial file."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from io import StringIO
from pathlib import Path

import pandas as pd
import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotation import exports
from annotation.models import Annotation, CardState, Consensus, Conversation, Source
from tests.factories import label, make_conversation, make_group, make_study, make_user

pytestmark = pytest.mark.django_db

AMBIGUOUS, INCOMPLETE, ROLLBACK = "ambiguous_instruction", "incomplete_instruction", "code_rollback"


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def export(slug: str, path: Path, fmt: str, *args: str) -> str:
    out = StringIO()
    call_command("export_gold", slug, "--format", fmt, "--output", str(path), *args, stdout=out)
    return out.getvalue()


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def types(study, *codes):
    by_code = study.taxonomy_version.types_by_code()
    return [by_code[c] for c in codes]


@pytest.fixture
def two_groups(study, alice, bob, charlie):
    dave = make_user("dave")
    g1 = make_group(study, "g1", [alice, bob], moderator=make_user("mod"))
    g2 = make_group(study, "g2", [charlie, dave])
    c1 = make_conversation(study, "c1", n_turns=4, group=g1)
    c2 = make_conversation(study, "c2", n_turns=3, group=g2)
    make_conversation(study, "unassigned", n_turns=2)
    return g1, g2, c1, c2


def test_it_marks_unanimous_exactly_where_round_1_sets_are_identical(tmp_path, two_groups):
    # the records of both groups, round 1: identical sets (also in another order and both
    # empty), different sets (also empty vs not), one card labelled by one annotator only
    records = [
        {"conversation": "c1", "turn": 1, "annotator": "alice", "labels": [AMBIGUOUS, ROLLBACK]},
        {"conversation": "c1", "turn": 1, "annotator": "bob", "labels": [ROLLBACK, AMBIGUOUS]},
        {"conversation": "c1", "turn": 2, "annotator": "alice", "labels": [AMBIGUOUS]},
        {"conversation": "c1", "turn": 2, "annotator": "bob", "labels": [INCOMPLETE]},
        {"conversation": "c1", "turn": 3, "annotator": "alice", "labels": []},
        {"conversation": "c1", "turn": 3, "annotator": "bob", "labels": []},
        {"conversation": "c1", "turn": 4, "annotator": "alice", "labels": [ROLLBACK]},
        {"conversation": "c2", "turn": 1, "annotator": "charlie", "labels": []},
        {"conversation": "c2", "turn": 1, "annotator": "dave", "labels": [INCOMPLETE]},
        {"conversation": "c2", "turn": 2, "annotator": "charlie", "labels": [INCOMPLETE]},
        {"conversation": "c2", "turn": 2, "annotator": "dave", "labels": [INCOMPLETE]},
        {"conversation": "c2", "turn": 3, "annotator": "dave", "labels": [AMBIGUOUS]},
        {"conversation": "c2", "turn": 3, "annotator": "charlie", "labels": [ROLLBACK]},
    ]
    group_of = {"c1": "g1", "c2": "g2"}
    for r in records:
        r.update(round=1, group=group_of[r["conversation"]])
    annotations = write_jsonl(tmp_path / "labels.jsonl", records)
    call_command("import_annotations", "s1", str(annotations), stdout=StringIO())

    out = export("s1", tmp_path / "gold.jsonl", "jsonl")

    assert "7 cards written" in out
    rows = read_jsonl(tmp_path / "gold.jsonl")
    # the expectation, from the input file alone
    given: dict[tuple[str, int], dict[str, set[str]]] = {}
    for r in records:
        given.setdefault((r["conversation"], r["turn"]), {})[r["annotator"]] = set(r["labels"])
    assert [(r["conversation"], r["turn"]) for r in rows] == [
        ("c1", 1), ("c1", 2), ("c1", 3), ("c1", 4), ("c2", 1), ("c2", 2), ("c2", 3),
    ]  # fmt: skip
    unanimous_cards = []
    for row in rows:
        sets = list(given[(row["conversation"], row["turn"])].values())
        identical = len(sets) == 2 and sets[0] == sets[1]
        if identical:
            unanimous_cards.append((row["conversation"], row["turn"]))
            assert row["consensus"] == sorted(sets[0])
            assert (row["method"], row["from_round"], row["status"]) == ("unanimous", 1, "agreed")
            assert row["taxonomy_version"] == "interaction-smells v1"
            assert row["decided_by"] is None
            datetime.fromisoformat(row["decided_at"])
        else:
            assert (row["consensus"], row["method"], row["decided_at"]) == (None, None, None)
            assert row["status"] == ("disputed" if len(sets) == 2 else "open")
        for name in ("alice", "bob", "charlie", "dave"):
            labels = given[(row["conversation"], row["turn"])].get(name)
            assert row[f"labels_{name}"] == (sorted(labels) if labels is not None else None)
    # the fixture really has both kinds, incl. an agreed "no smell"
    assert unanimous_cards == [("c1", 1), ("c1", 3), ("c2", 2)]
    assert rows[2]["consensus"] == []
    assert {r["study"] for r in rows} == {"s1"}
    assert [r["group"] for r in rows] == ["g1"] * 4 + ["g2"] * 3


def test_it_tells_no_record_from_no_smell(tmp_path, study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    turn1, turn2 = make_conversation(study, "c1", n_turns=2, group=group).turns.all()
    label(turn1, alice)  # "no smell"; bob has not labelled yet

    export("s1", tmp_path / "gold.jsonl", "jsonl")

    first, second = read_jsonl(tmp_path / "gold.jsonl")
    assert (first["labels_alice"], first["labels_bob"], first["consensus"]) == ([], None, None)
    assert first["status"] == "open"
    # nobody touched the second card: no state row, still open
    assert (second["labels_alice"], second["labels_bob"], second["status"]) == (None, None, "open")


@pytest.fixture
def decided(study, alice, bob):
    """c1#1 escalated and decided by the moderator, c1#2 unanimous on "no smell", c1#3
    labelled by alice only."""
    group = make_group(study, "g1", [alice, bob], moderator=make_user("mod"))
    turn1, turn2, turn3 = make_conversation(study, "c1", n_turns=3, group=group).turns.all()
    label(turn1, alice, ROLLBACK)
    label(turn1, bob)
    label(turn1, alice, ROLLBACK, AMBIGUOUS, round=2)
    label(turn1, bob, INCOMPLETE, round=2)
    CardState.decide(turn1, group, group.moderator, types(study, AMBIGUOUS, ROLLBACK), "why")
    label(turn2, alice)
    label(turn2, bob)
    label(turn3, alice, INCOMPLETE, AMBIGUOUS)
    return group


def test_it_shows_the_moderators_decision(tmp_path, decided):
    export("s1", tmp_path / "gold.jsonl", "jsonl")

    row = read_jsonl(tmp_path / "gold.jsonl")[0]
    assert row["consensus"] == [AMBIGUOUS, ROLLBACK]
    assert (row["method"], row["decided_by"], row["from_round"]) == ("moderator", "mod", 2)
    assert row["status"] == "agreed"
    assert datetime.fromisoformat(row["decided_at"]).tzinfo is not None
    # the labels columns are round 1's unless asked otherwise
    assert (row["labels_alice"], row["labels_bob"]) == ([ROLLBACK], [])


def test_it_exports_another_rounds_labels_on_request(tmp_path, decided):
    export("s1", tmp_path / "gold.jsonl", "jsonl", "--round", "2")

    rows = read_jsonl(tmp_path / "gold.jsonl")
    assert (rows[0]["labels_alice"], rows[0]["labels_bob"]) == ([AMBIGUOUS, ROLLBACK], [INCOMPLETE])
    assert rows[1]["labels_alice"] is None  # agreed in round 1: no round-2 labels


def test_it_round_trips_csv_through_pandas(tmp_path, decided):
    export("s1", tmp_path / "gold.csv", "csv")

    df = pd.read_csv(tmp_path / "gold.csv", dtype=str, keep_default_na=False)
    assert list(df.columns) == [*exports.GOLD_COLUMNS, "labels_alice", "labels_bob"]
    assert df["consensus"].tolist() == [f"{AMBIGUOUS}|{ROLLBACK}", "-", ""]
    assert df["method"].tolist() == ["moderator", "unanimous", ""]
    assert df["decided_by"].tolist() == ["mod", "", ""]
    assert df["labels_bob"].tolist() == ["-", "-", ""]  # [] vs null
    assert df["labels_alice"].tolist() == [ROLLBACK, "-", f"{AMBIGUOUS}|{INCOMPLETE}"]
    assert df["turn"].tolist() == ["1", "2", "3"]
    assert df["from_round"].tolist() == ["2", "1", ""]


def test_it_round_trips_parquet_through_pandas(tmp_path, decided):
    export("s1", tmp_path / "gold.parquet", "parquet")

    df = pd.read_parquet(tmp_path / "gold.parquet")
    assert list(df.columns) == [*exports.GOLD_COLUMNS, "labels_alice", "labels_bob"]

    def as_lists(column):
        return [None if v is None else list(v) for v in df[column]]

    assert as_lists("consensus") == [[AMBIGUOUS, ROLLBACK], [], None]
    assert as_lists("labels_bob") == [[], [], None]
    assert as_lists("labels_alice") == [[ROLLBACK], [], [AMBIGUOUS, INCOMPLETE]]
    assert df["decided_by"].tolist()[:1] == ["mod"]
    assert df["turn"].tolist() == [1, 2, 3]
    assert df["from_round"].tolist()[:2] == [2, 1] and pd.isna(df["from_round"].iloc[2])


def test_it_writes_parquet_in_one_row_group_per_chunk(tmp_path, decided):
    import pyarrow.parquet as pq

    n = exports.write_gold(decided.study, tmp_path / "gold.parquet", "parquet", chunk_size=2)

    assert n == 3
    assert pq.ParquetFile(tmp_path / "gold.parquet").metadata.num_row_groups == 2


def test_it_exports_every_revision_with_raw(tmp_path, study, alice, bob):
    group = make_group(study, "g1", [alice, bob])
    turn = make_conversation(study, "c1", n_turns=1, group=group).turns.get()
    label(turn, alice, ROLLBACK)
    label(turn, alice)  # revised before bob labelled: the first stays as history

    out = export("s1", tmp_path / "raw.jsonl", "jsonl", "--raw")

    assert "2 annotation rows written" in out
    first, second = read_jsonl(tmp_path / "raw.jsonl")
    assert (first["labels"], first["is_current"]) == ([ROLLBACK], False)
    assert (second["labels"], second["is_current"]) == ([], True)
    assert (second["annotator"], second["round"], second["source"]) == ("alice", 1, Source.BROWSER)
    assert (second["conversation"], second["turn"], second["group"]) == ("c1", 1, "g1")
    assert datetime.fromisoformat(second["created_at"]) >= datetime.fromisoformat(
        first["created_at"]
    )


def test_it_writes_raw_csv_with_the_same_list_encoding(tmp_path, decided):
    exports.write_raw(decided.study, tmp_path / "raw.csv", "csv", round=2)

    df = pd.read_csv(tmp_path / "raw.csv", dtype=str, keep_default_na=False)
    assert df["labels"].tolist() == [f"{AMBIGUOUS}|{ROLLBACK}", INCOMPLETE]
    assert df["round"].tolist() == ["2", "2"]


def test_it_leaves_no_partial_file_when_the_export_fails(tmp_path, decided, monkeypatch):
    target = tmp_path / "out" / "gold.jsonl"
    target.parent.mkdir()
    target.write_text("the previous export\n")
    # called once a chunk of cards: chunk_size=2 makes the 3 cards two chunks
    real_chunk, calls = exports.gold._consensus_columns, []

    def failing_chunk(*args):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("database went away")
        return real_chunk(*args)

    monkeypatch.setattr(exports.gold, "_consensus_columns", failing_chunk)

    with pytest.raises(RuntimeError, match="went away"):
        exports.write_gold(decided.study, target, "jsonl", chunk_size=2)

    assert len(calls) == 2  # it failed mid-way, after the first chunk's rows were written
    assert target.read_text() == "the previous export\n"
    assert [p.name for p in target.parent.iterdir()] == ["gold.jsonl"]
    target.unlink()
    for fmt in ("csv", "parquet"):
        calls.clear()
        with pytest.raises(RuntimeError):
            exports.write_gold(decided.study, target, fmt, chunk_size=2)
        assert list(target.parent.iterdir()) == []


def test_it_reads_a_constant_number_of_queries_per_chunk(study, alice, bob):
    group = make_group(study, "g1", [alice, bob], moderator=make_user("mod"))
    turns = []
    for c in range(3):
        turns += make_conversation(study, f"c{c}", n_turns=6, group=group).turns.all()
    for i, turn in enumerate(turns):
        label(turn, alice, ROLLBACK, AMBIGUOUS)
        label(turn, bob, *([ROLLBACK, AMBIGUOUS] if i % 2 else [INCOMPLETE]))

    def queries(chunk_size: int) -> int:
        with CaptureQueriesContext(connection) as ctx:
            rows = list(exports.gold_rows(study, chunk_size=chunk_size))
        assert len(rows) == 18
        return len(ctx.captured_queries)

    one, two, three = queries(18), queries(9), queries(6)
    per_chunk = two - one
    # cards, labels, consensus, states, seats (groups, labellers), the lead's study gold
    assert 0 < per_chunk <= 7
    assert three - one == 2 * per_chunk
    # twice the cards in one chunk: not one query more
    for c in range(3, 6):
        make_conversation(study, f"c{c}", n_turns=6, group=group)
    with CaptureQueriesContext(connection) as ctx:
        assert len(list(exports.gold_rows(study, chunk_size=36))) == 36
    assert len(ctx.captured_queries) == one


def test_it_refuses_an_unknown_study_or_directory(tmp_path, study):
    with pytest.raises(CommandError, match="unknown study 'nope'"):
        export("nope", tmp_path / "gold.jsonl", "jsonl")
    with pytest.raises(CommandError, match="does not exist"):
        export("s1", tmp_path / "missing" / "gold.jsonl", "jsonl")


def test_it_exports_only_the_given_study(tmp_path, study, alice, bob):
    other = make_study("s2")
    make_conversation(other, "elsewhere", n_turns=2, group=make_group(other, "g", [alice, bob]))
    make_conversation(study, "c1", n_turns=1, group=make_group(study, "g1", [alice, bob]))

    export("s1", tmp_path / "gold.jsonl", "jsonl")

    assert [r["conversation"] for r in read_jsonl(tmp_path / "gold.jsonl")] == ["c1"]


def test_it_gives_the_same_rows_whatever_the_chunks(study, alice, bob, charlie):
    # two groups sharing c2 (a card in each), a removed annotator's labels, a decision, an
    # unassigned conversation between assigned ones: chunks cut anywhere, rows the same
    dave, erin = make_user("dave"), make_user("erin")
    g1 = make_group(study, "g1", [alice, bob, erin], moderator=make_user("mod"))
    g2 = make_group(study, "g2", [charlie, dave])
    c1 = make_conversation(study, "c1", n_turns=3, group=g1)
    make_conversation(study, "lost", n_turns=3)
    c2 = make_conversation(study, "c2", n_turns=2, group=g1)
    Conversation.objects.filter(pk=c2.pk).assign(g2)
    for turn in [*c1.turns.all(), *c2.turns.all()]:
        # erin disagrees on c1 (disputed), all agree on c2 (unanimous in g1)
        theirs = {erin: [INCOMPLETE if turn.conversation == c1 else ROLLBACK]}
        for user in (erin, alice, bob):
            codes = theirs.get(user, [ROLLBACK])
            Annotation.submit(turn=turn, group=g1, annotator=user, types=types(study, *codes))
    g1.annotators.remove(erin)
    for turn in c2.turns.all():
        for user in (charlie, dave):
            Annotation.submit(turn=turn, group=g2, annotator=user, types=types(study, ROLLBACK))
    disputed = c1.turns.get(index=2)
    CardState.decide(disputed, g1, g1.moderator, types(study, AMBIGUOUS), "why")

    whole = list(exports.gold_rows(study, chunk_size=100, with_text=True))

    assert [(r["conversation"], r["turn"], r["group"]) for r in whole] == [
        ("c1", 1, "g1"), ("c1", 2, "g1"), ("c1", 3, "g1"),
        ("c2", 1, "g1"), ("c2", 1, "g2"), ("c2", 2, "g1"), ("c2", 2, "g2"),
    ]  # fmt: skip
    assert whole[1]["consensus"] == [AMBIGUOUS] and whole[1]["rationale"] == "why"
    assert (whole[4]["labels_charlie"], whole[4]["labels_alice"]) == ([ROLLBACK], None)
    assert whole[4]["study_gold_method"] == "groups_agree"  # c2#1: both groups ROLLBACK
    assert whole[0]["labels_erin"] == [INCOMPLETE]
    for chunk_size in (1, 2, 3, 4):
        assert list(exports.gold_rows(study, chunk_size=chunk_size, with_text=True)) == whole


def test_it_writes_times_as_isoformat_does(tmp_path, decided):
    moments = [
        datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC),  # no microseconds: none written
        datetime(2025, 3, 4, 5, 6, 7, 500000, tzinfo=UTC),
        datetime(2025, 3, 4, 5, 6, 7, 123456, tzinfo=UTC),
    ]
    for consensus, moment in zip(Consensus.objects.order_by("pk"), moments, strict=False):
        Consensus.objects.filter(pk=consensus.pk).update(decided_at=moment)

    for fmt in ("jsonl", "parquet"):
        exports.write_gold(decided.study, tmp_path / f"gold.{fmt}", fmt)
    rows = read_jsonl(tmp_path / "gold.jsonl")
    written = [r["decided_at"] for r in rows if r["decided_at"] is not None]
    assert written == [m.isoformat() for m in moments[:2]]
    assert written == ["2025-03-04T05:06:07+00:00", "2025-03-04T05:06:07.500000+00:00"]
    frame = pd.read_parquet(tmp_path / "gold.parquet")
    assert frame["decided_at"].dropna().tolist() == written


def test_it_orders_the_label_columns_as_python_sorts_the_names(study):
    # a database collation would put "alice" before "Zoe" and ignore the underscore
    people = [make_user(name) for name in ("alice", "Zoe", "bob_2", "bob2")]
    group = make_group(study, "g1", people)
    make_conversation(study, "c1", n_turns=1, group=group)

    columns = exports.gold_columns(study)

    names = ["Zoe", "alice", "bob2", "bob_2"]
    assert columns[len(exports.GOLD_COLUMNS) :] == [f"labels_{n}" for n in names]
    assert list(next(exports.gold_rows(study))) == columns
