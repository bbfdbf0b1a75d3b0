"""A study's episodes through dump_study and load_study --as (issue 21): its extraction runs,
episodes, evidence quotes, judgements, coverage ratings and seen marks come back, each
pointing at the copy's rows, ids kept inside JSON too (a run's judge run and answered
sessions, a judge run's extraction run and sessions), so that a resumed judge run of the
copy finds its own run and sessions, never the original's."""

from __future__ import annotations

import pytest
from django.core.management import call_command

from annotation.models import (
    Conversation,
    CoverageRating,
    Episode,
    EpisodeJudgement,
    EpisodeSeen,
    EvidenceQuote,
    ExtractionRun,
    JudgeRun,
)
from tests.backup.rich import build


@pytest.fixture
def copied(db, media, tmp_path):
    build("rich")
    path = tmp_path / "rich.jsonl.gz"
    call_command("dump_study", "rich", str(path))
    call_command("load_study", str(path), "--as", "copy")


def _of(slug: str) -> dict:
    return {
        "runs": ExtractionRun.objects.filter(study__slug=slug),
        "episodes": Episode.objects.filter(conversation__study__slug=slug),
        "quotes": EvidenceQuote.objects.filter(episode__conversation__study__slug=slug),
        "judgements": EpisodeJudgement.objects.filter(episode__conversation__study__slug=slug),
        "ratings": CoverageRating.objects.filter(conversation__study__slug=slug),
        "seen": EpisodeSeen.objects.filter(episode__conversation__study__slug=slug),
    }


def test_every_episode_row_comes_back_in_the_copy(copied):
    original, copy = _of("rich"), _of("copy")
    for name in original:
        assert original[name].count() == copy[name].count() > 0, name
    quote = copy["quotes"].get()
    assert quote.turn.conversation.study.slug == "copy"
    assert quote.episode.conversation.study.slug == "copy"
    judgement = copy["judgements"].get()
    assert judgement.group.study.slug == "copy" and judgement.labels == {"ax": ["newt"]}
    extracted = copy["episodes"].get(run__isnull=False)
    assert extracted.run.study.slug == "copy" and extracted.run_labels == {"ax": ["newt"]}
    assert (extracted.confidence, extracted.run_invalid_reason) == (0.8, "other")
    assert copy["episodes"].get(run__isnull=True).created_by.username == "ann"
    assert copy["seen"].get().group.study.slug == "copy"


def test_the_ids_kept_in_json_point_at_the_copys_rows(copied):
    run = ExtractionRun.objects.get(study__slug="copy")
    judge_run = JudgeRun.objects.get(study__slug="copy")
    part = Conversation.objects.get(
        study__slug="copy", pk__in=run.parameters["answered_without_episodes"]
    )
    assert run.parameters["judge_run"] == judge_run.pk
    assert run.parameters["validator"] == {"judge_run": judge_run.pk}
    assert judge_run.params["extraction_run_id"] == run.pk
    assert judge_run.params["conversation_ids"] == [part.pk]
    assert run.parameters["t"] == 1 and judge_run.params["sample"] == 2
