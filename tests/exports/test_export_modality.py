"""Gold and raw exports carry the conversation's `modality` (issue 21 point 6): `cli` for a
Claude Code session, what the lead set for a whole import, null when nothing told it."""

from __future__ import annotations

import json
from io import StringIO

import pandas as pd
import pytest
from django.core.management import call_command

from annotation import exports
from annotation.importers import import_files
from annotation.models import Conversation
from tests.factories import make_group
from tests.importers.agent_files import SESSION, claude_code_session
from tests.importers.test_wildchat import wildchat

pytestmark = pytest.mark.django_db


@pytest.fixture
def sessions(tmp_path, study, alice):
    session = tmp_path / f"{SESSION}.jsonl"
    session.write_text("".join(json.dumps(x) + "\n" for x in claude_code_session()))
    chat = tmp_path / "w.jsonl"
    chat.write_text(json.dumps(wildchat("w1", [("hello", "hi")])) + "\n")
    ide = tmp_path / "ide.jsonl"
    ide.write_text(json.dumps(wildchat("w2", [("hello again", "hi")])) + "\n")
    import_files(study, [session, chat])
    call_command("import_conversations", study.slug, str(ide), "--modality", "ide",
                 stdout=StringIO(), stderr=StringIO())  # fmt: skip
    group = make_group(study, "g1", [alice])
    Conversation.objects.filter(study=study).assign(group)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"conversation": c, "turn": 1, "annotator": "alice", "labels": [],
                        "group": "g1"}) + "\n"
            for c in (SESSION, "w1", "w2")
        )
    )  # fmt: skip
    call_command("import_annotations", study.slug, str(labels), stdout=StringIO())
    return study


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "parquet"])
def test_gold_and_raw_rows_name_the_sessions_modality(sessions, tmp_path, fmt):
    for write, name in ((exports.write_gold, "gold"), (exports.write_raw, "raw")):
        path = tmp_path / f"{name}.{fmt}"
        write(sessions, path, fmt)
        if fmt == "parquet":
            rows = pd.read_parquet(path)
        elif fmt == "csv":
            rows = pd.read_csv(path, dtype=str, keep_default_na=False)
        else:
            rows = pd.DataFrame([json.loads(line) for line in path.read_text().splitlines()])
        first = rows[rows["turn"].astype(int) == 1]
        pairs = zip(first["conversation"], first["modality"], strict=True)
        # null when nothing told it (an empty cell in CSV, NaN once pandas has the column)
        told = {c: (v if isinstance(v, str) and v else None) for c, v in pairs}
        assert told == {SESSION: "cli", "w1": None, "w2": "ide"}, name
