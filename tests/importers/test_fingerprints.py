"""Re-importing adds nothing twice (issue 10): every conversation carries a fingerprint of
what the import read (format, id, position in the file, content; not the file name), and
the writer skips the records whose fingerprint the study already holds."""

from __future__ import annotations

import itertools
import json
import re
import shutil
import tempfile
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.db.options import WriterOptions
from annotation.importers import import_files
from annotation.importers import writer as writer_module
from annotation.importers.base import BuiltConversation, BuiltTurn
from annotation.models import Conversation, Job, JobKind, Turn
from tests.factories import make_study

pytestmark = pytest.mark.django_db


def native(cid: str, *pairs: tuple[str, str], system: str = "") -> dict:
    messages = [{"role": "system", "content": system}] if system else []
    for user, reply in pairs:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return {"id": cid, "messages": messages, "metadata": {}}


def wildchat(digest: str, *pairs: tuple[str, str]) -> dict:
    conversation = []
    for i, (user, reply) in enumerate(pairs):
        conversation += [
            {"role": "user", "content": user, "turn_identifier": i},
            {"role": "assistant", "content": reply, "turn_identifier": i},
        ]
    return {"conversation_hash": digest, "conversation": conversation, "turn": len(pairs)}


def openai(*pairs: tuple[str, str]) -> dict:
    messages = []
    for user, reply in pairs:
        messages += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return {"messages": messages}


def stored(study) -> list[tuple]:
    """What the study holds, as a multiset: every conversation with its turns."""
    rows = []
    for c in Conversation.objects.filter(study=study).order_by("id"):
        turns = tuple(Turn.objects.filter(conversation=c).values_list("user_text", "reply_text"))
        rows.append((c.source_format, c.external_id, c.source_line, c.system_prompt, turns))
    return sorted(rows)


def test_it_adds_nothing_when_the_same_file_is_imported_again(study, files):
    path = files.jsonl(
        "a.jsonl", native("c1", ("hi", "hello")), native("c2", ("a", "b"), ("c", "d"))
    )
    first = import_files(study, [path])
    before = stored(study)
    again = import_files(study, [path])
    assert (first.conversations, first.already_imported) == (2, 0)
    assert (again.conversations, again.turns, again.rejected) == (0, 0, 0)
    assert again.already_imported == 2
    assert "already imported: 2" in again.summary_line()
    assert again.as_dict()["already_imported"] == 2
    assert stored(study) == before


def test_a_copy_under_another_name_adds_nothing_even_where_ids_come_from_the_name(
    study, files, tmp_path
):
    # OpenAI records have no id: it is made from the file name and line ("a.jsonl:1"),
    # and the fingerprint leaves such an id out
    path = files.jsonl("a.jsonl", openai(("hi", "hello")), openai(("hi", "hello")))
    assert import_files(study, [path]).conversations == 2
    renamed = tmp_path / "upload-tmp-8f3a.jsonl"
    shutil.copy(path, renamed)
    report = import_files(study, [renamed])
    assert (report.conversations, report.already_imported) == (0, 2)
    assert Conversation.objects.count() == 2


def test_the_same_file_twice_in_one_import_is_imported_once(study, files):
    path = files.jsonl("a.jsonl", wildchat("f" * 32, ("hi", "hello")))
    report = import_files(study, [path, path])
    assert (report.conversations, report.already_imported) == (1, 1)


def test_a_changed_record_is_new_and_the_unchanged_ones_are_not(study, files):
    one = files.jsonl("a.jsonl", native("c1", ("hi", "hello")), native("c2", ("a", "b")))
    import_files(study, [one])
    two = files.jsonl("b.jsonl", native("c1", ("hi", "hello")), native("c2x", ("a", "b")))
    report = import_files(study, [two])
    assert (report.conversations, report.already_imported) == (1, 1)


def built(**changes) -> BuiltConversation:
    fields = {
        "external_id": "c1",
        "source_format": "wildchat",
        "source_file": "a.jsonl",
        "source_line": 3,
        "location": "a.jsonl:3",
        "system_prompt": "",
        "preamble": [],
        "metadata": {"model": "gpt-4"},
        "turns": [BuiltTurn(index=1, user_text="hi", reply_text="hello", reply_missing=False)],
        "check_duplicate": False,
    }
    return BuiltConversation(**{**fields, **changes})


def test_the_fingerprint_is_what_was_read_and_not_the_file_name():
    base = built().compute_fingerprint()
    assert re.fullmatch(r"[0-9a-f]{64}", base), base  # a SHA-256 hex digest
    assert built(source_file="other.jsonl", location="x").compute_fingerprint() == base
    assert built(metadata={"model": "other"}).compute_fingerprint() == base
    turn = BuiltTurn(index=1, user_text="hi", reply_text="hello!", reply_missing=False)
    for different in (
        built(source_line=4),
        built(external_id="c2"),
        built(source_format="lmsys"),
        built(system_prompt="be brief"),
        built(preamble=[{"role": "assistant", "content": "welcome"}]),
        built(turns=[turn]),
        built(turns=[BuiltTurn(index=1, user_text="hi", reply_text="hello")]),  # missing
        # the pieces are length-prefixed: moving text between fields changes the hash
        built(turns=[BuiltTurn(index=1, user_text="hih", reply_text="ello")]),
    ):
        assert different.compute_fingerprint() != base, different
    # a made-up id (OpenAI: the file name and line) is left out
    made_up = built(external_id="a.jsonl:3", id_from_data=False)
    assert built(external_id="b.jsonl:3", id_from_data=False).compute_fingerprint() == (
        made_up.compute_fingerprint()
    )


def test_it_checks_with_one_query_per_batch(study, files, monkeypatch):
    monkeypatch.setattr(writer_module, "BATCH_SIZE", 2)
    path = files.jsonl("a.jsonl", *[native(f"c{i}", ("q", f"a{i}")) for i in range(6)])
    with CaptureQueriesContext(connection) as queries:
        import_files(study, [path])
    checks = [q["sql"] for q in queries if "fingerprint" in q["sql"] and "SELECT" in q["sql"]]
    assert len(checks) == 3


def test_it_stores_the_fingerprint_and_the_job(study, files):
    job = Job.objects.create(study=study, kind=JobKind.IMPORT)
    path = files.jsonl("a.jsonl", native("c1", ("hi", "hello")), native("c2", ("a", "b")))
    import_files(study, [path], job=job)
    rows = list(Conversation.objects.values_list("fingerprint", "import_job_id"))
    assert len(rows) == 2 and len({f for f, _ in rows}) == 2
    assert all(len(f) == 64 and j == job.pk for f, j in rows)


def test_the_command_says_already_imported_and_does_not_fail(study, files, capsys):
    path = files.jsonl("a.jsonl", native("c1", ("hi", "hello")))
    call_command("import_conversations", study.slug, str(path))
    call_command("import_conversations", study.slug, str(path))
    out = capsys.readouterr().out.splitlines()
    assert "Imported 1 conversations" in out[0]
    assert "Imported 0 conversations" in out[1] and "already imported: 1" in out[1]
    assert Conversation.objects.count() == 1


# -- any file, twice ---------------------------------------------------------------------------

TEXT = st.sampled_from(["", "hi", "fix it", "def f(): pass", "ça va ✓"])
PAIRS = st.lists(st.tuples(TEXT, TEXT), min_size=0, max_size=3)
# few ids, so that ids repeat: WildChat imports both, native rejects the later one
LINE = st.one_of(
    st.builds(lambda i, p: native(f"n{i}", *p), st.integers(0, 2), PAIRS),
    st.builds(lambda i, p: wildchat(f"{i:032x}", *p), st.integers(0, 2), PAIRS),
    st.builds(lambda p: openai(*p), PAIRS),
    st.sampled_from(["not json", "", '{"id": "x", "messages": 5}']),
)
WRITERS = ["default", "bulk_create"]
EXAMPLES = itertools.count()  # default: COPY on PostgreSQL


@pytest.mark.parametrize("writer", WRITERS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(LINE, max_size=12), as_array=st.booleans())
def test_importing_any_file_twice_equals_importing_it_once(writer, lines, as_array):
    options = WriterOptions.for_connection(copy=False) if writer == "bulk_create" else None
    records = [x for x in lines if isinstance(x, dict)]
    with tempfile.TemporaryDirectory() as tmp:
        if as_array:
            path = Path(tmp) / "f.json"
            path.write_text(json.dumps(records), encoding="utf-8")
        else:
            path = Path(tmp) / "f.jsonl"
            text = "".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines)
            path.write_text(text, encoding="utf-8")
        n = next(EXAMPLES)
        once, twice = make_study(f"once-{n}"), make_study(f"twice-{n}")
        first = import_files(once, [path], writer_options=options)
        import_files(twice, [path], writer_options=options)
        again = import_files(twice, [path], writer_options=options)
        assert stored(twice) == stored(once)
        assert (again.conversations, again.turns) == (0, 0)
        assert again.already_imported == first.conversations
        # what was rejected once is rejected again, for the same reasons
        assert again.errors == first.errors
