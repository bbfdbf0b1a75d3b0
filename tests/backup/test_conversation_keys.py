"""load_study and the conversation key (issue 20, defect 1): a study file keeps each
conversation's key, and a file written before keys existed (no `key` field) gets them on
load, as migration 0018 gives them, in the order of the file."""

import gzip
import json

import pytest
from django.core.management import call_command

from annotation.models import Conversation
from tests.backup.rich import build


@pytest.fixture
def dumped(db, media, tmp_path):
    build("rich")
    # the rich study's two conversations, given one external id as WildChat repeats them
    rows = Conversation.objects.filter(study__slug="rich").order_by("pk")
    assert rows.count() == 2
    first, second = rows
    second.external_id = first.external_id
    second.key = f"{first.external_id}~2"
    second.save()
    path = tmp_path / "rich.jsonl.gz"
    call_command("dump_study", "rich", str(path))
    return path


def keys(slug: str) -> list[tuple[str, str]]:
    rows = Conversation.objects.filter(study__slug=slug).order_by("pk")
    return list(rows.values_list("external_id", "key"))


def test_a_study_file_keeps_the_keys(dumped):
    call_command("load_study", str(dumped), "--as", "copy")
    assert keys("copy") == keys("rich")
    assert keys("copy")[1][1].endswith("~2")


def test_a_file_without_keys_gets_them_on_load(dumped):
    lines = [json.loads(line) for line in gzip.open(dumped, "rt").read().splitlines()]
    block = None
    for line in lines:
        if isinstance(line, dict) and "model" in line:
            block = line if line["model"] == "annotation.Conversation" else None
            if block is not None:
                at = block["fields"].index("key")
                del block["fields"][at]
        elif block is not None and isinstance(line, list):
            del line[at + 1]
    with gzip.open(dumped, "wt") as out:
        out.writelines(json.dumps(line) + "\n" for line in lines)

    call_command("load_study", str(dumped), "--as", "copy")

    assert keys("copy") == keys("rich")
