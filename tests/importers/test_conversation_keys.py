"""A conversation's key (issue 20, defect 1): WildChat's conversation_hash repeats, so two
conversations of a study may share an external id. Each gets a key unique in the study: the
id itself for the first, `id~2`, `id~3`, ... for the later ones in import order (file, then
line), and an import never changes a key given before. On SQLite (bulk_create) and
PostgreSQL (COPY, with and without the writer thread)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation import conversation_keys
from annotation.db.options import WriterOptions
from annotation.importers import import_files
from annotation.importers import writer as writer_module
from annotation.models import Conversation
from tests.factories import make_study

from .test_wildchat import wildchat

SLUGS = itertools.count()


def keys(study) -> list[tuple[str, str]]:
    rows = Conversation.objects.filter(study=study).order_by("pk")
    return list(rows.values_list("external_id", "key"))


def two_of_x(files, name: str = "w.jsonl", question: str = "q"):
    return files.jsonl(
        name,
        wildchat("x", [(f"{question} one", "a")]),
        wildchat("x", [(f"{question} two", "b")]),
        wildchat("y", [(f"{question} three", "c")]),
    )


def check_keys_of_two_imports(study, files, options: WriterOptions | None = None) -> None:
    report = import_files(study, [two_of_x(files)], writer_options=options)
    assert (report.conversations, report.rejected) == (3, 0)
    assert keys(study) == [("x", "x"), ("x", "x~2"), ("y", "y")]
    # a second file: a third x, and a y, take the next free keys; nothing earlier changes
    report = import_files(
        study, [two_of_x(files, "more.jsonl", question="other")], writer_options=options
    )
    assert report.conversations == 3
    assert keys(study) == [
        ("x", "x"),
        ("x", "x~2"),
        ("y", "y"),
        ("x", "x~3"),
        ("x", "x~4"),
        ("y", "y~2"),
    ]


@pytest.mark.django_db
def test_two_records_with_one_id_get_two_keys_and_a_later_import_adds_the_next(study, files):
    check_keys_of_two_imports(study, files)


@pytest.mark.django_db
def test_an_id_that_looks_like_a_key_keeps_its_id_and_the_repeat_skips_it(study, files):
    path = files.jsonl(
        "w.jsonl",
        wildchat("x~2", [("literal", "a")]),
        wildchat("x", [("one", "a")]),
        wildchat("x", [("two", "a")]),
    )
    import_files(study, [path])
    assert keys(study) == [("x~2", "x~2"), ("x", "x"), ("x", "x~3")]
    # and the other way round: the literal id comes after the key it spells
    import_files(study, [files.jsonl("late.jsonl", wildchat("x~3", [("late", "a")]))])
    assert keys(study)[-1] == ("x~3", "x~3~2")


@pytest.mark.django_db
def test_a_key_is_never_given_twice_in_one_batch(study, files, monkeypatch):
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)
    records = [wildchat("x", [(f"q{i}", "a")]) for i in range(5)]
    import_files(study, [files.jsonl("w.jsonl", *records)])
    assert [k for _, k in keys(study)] == ["x", "x~2", "x~3", "x~4", "x~5"]


@pytest.mark.django_db
def test_a_dry_run_gives_no_key_and_writes_nothing(study, files):
    import_files(study, [two_of_x(files)], dry_run=True)
    assert keys(study) == []


@pytest.mark.postgres
@pytest.mark.parametrize("threaded", [False, True])
def test_postgres_copy_gives_the_same_keys(transactional_db, files, monkeypatch, threaded):
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)
    options = WriterOptions.for_connection(copy=True, thread=threaded)
    check_keys_of_two_imports(make_study(f"pg-{threaded}".lower()), files, options)


@pytest.mark.postgres
def test_postgres_orm_path_gives_the_same_keys(db, files, monkeypatch):
    options = WriterOptions.for_connection(copy=False)
    check_keys_of_two_imports(make_study("pg-orm"), files, options)


@pytest.mark.django_db
def test_a_key_taken_meanwhile_by_another_writer_is_given_again(study, files, monkeypatch):
    """Two imports into one study at once: the key this batch was given is taken before it
    is written. The record is written with the next free key, not refused."""
    real = writer_module.Writer._write_batch

    def another_import_first(self, batch, payload=None):
        Conversation.objects.create(study=study, external_id="x", source_format="native")
        return real(self, batch, payload)

    monkeypatch.setattr(writer_module.Writer, "_write_batch", another_import_first)
    report = import_files(study, [files.jsonl("w.jsonl", wildchat("x", [("q", "a")]))])
    assert (report.conversations, report.rejected) == (1, 0), report.errors
    assert sorted(k for _, k in keys(study)) == ["x", "x~2"]


# -- the rule, over any order of imports -------------------------------------------------

IDS = st.sampled_from(["a", "b", "a~2", "a~3", "a~2~2", "a~1"])


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=st.lists(st.lists(IDS, min_size=1, max_size=5), min_size=1, max_size=4))
def test_keys_are_unique_stable_and_name_every_conversation(db, batches):
    study = make_study(f"keys-{next(SLUGS)}")
    given_before: dict[int, str] = {}
    for batch in batches:
        known_ids = set(
            Conversation.objects.filter(study=study).values_list("external_id", flat=True)
        )
        known_keys = set(Conversation.objects.filter(study=study).values_list("key", flat=True))
        rows = Conversation.objects.bulk_create(
            Conversation(study=study, external_id=i, source_format="native") for i in batch
        )
        earlier = known_ids | known_keys
        for row in rows:  # an id new to the study whose spelling is no key yet is its key
            if row.external_id not in earlier and not row.external_id.endswith("~1"):
                assert row.key == row.external_id
            assert not row.key.endswith("~1")  # that spelling names the first of an id
            earlier |= {row.external_id, row.key}
        stored = dict(Conversation.objects.filter(study=study).values_list("pk", "key"))
        # stable: no key given before has changed
        assert {pk: stored[pk] for pk in given_before} == given_before
        given_before = stored
    rows = list(Conversation.objects.filter(study=study).values_list("pk", "external_id", "key"))
    assert len({key for _, _, key in rows}) == len(rows)  # unique in the study
    names = [key for _, _, key in rows] + [key + "~1" for _, _, key in rows]
    found = {
        name: [n.pk for n in named] for name, named in conversation_keys.match(names, rows).items()
    }
    for pk, external_id, key in rows:
        # every conversation has a name that finds it alone: its key, or (the first of a
        # repeated id, whose key is the plain id) its key with ~1
        named = found[key] if found[key] == [pk] else found[key + "~1"]
        assert named == [pk], (external_id, key, found[key], found[key + "~1"])
    for external_id in {e for _, e, _ in rows}:
        sharing = sorted(pk for pk, e, _ in rows if e == external_id)
        suffixed = [pk for pk, e, k in rows if k == external_id and e != external_id]
        base = external_id.removesuffix("~1")
        alias = base != external_id and sum(e == base for _, e, _ in rows) > 1
        # a repeated plain id is ambiguous (but a key the tool made, or x~1 where x repeats,
        # names one)
        if len(sharing) > 1 and not suffixed and not alias:
            named = conversation_keys.match([external_id], rows)[external_id]
            assert sorted(n.pk for n in named) == sharing
