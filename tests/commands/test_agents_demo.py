"""`demo --study agents`: the agent-misalignment demo, built through the real importers,
whose saved agreement job already shows precision, coverage, retention and the two runs
compared (issue 21)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.test import Client
from django.urls import reverse

from annotation.episodes import measures
from annotation.models import Episode, Job, JobKind, Study


def run_demo(*args: str) -> str:
    out = StringIO()
    call_command("demo", "--study", "agents", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def report(db) -> dict:
    out = run_demo()
    assert "Created the demo study 'agents-demo'" in out
    study = Study.objects.get(slug="agents-demo")
    return Job.objects.get(study=study, kind=JobKind.AGREEMENT).result


def test_the_report_has_precision_retention_per_run(report):
    runs = report["episodes"]["overall"]["runs"]
    assert set(runs) == {"full", "truncated"}
    full, truncated = runs["full"], runs["truncated"]
    # full: 12 extracted, 1 under 0.5; alice and bob: 8 valid, 2 invalid, 1 disputed
    assert (full["extracted"], full["dropped_confidence"], full["imported"]) == (12, 1, 11)
    assert (full["valid"], full["invalid"], full["disputed"]) == (8, 2, 1)
    assert full["retention"] == 8 / 12
    assert full["precision"]["value"] == 0.8
    assert (full["precision"]["low"], full["precision"]["high"]) == measures.wilson(8, 10)
    assert set(full["invalid_reasons"]["reasons"]) == {
        "observational_blind_spot",
        "normative_prior_bias",
    }
    # truncated: 7 extracted, 1 under 0.5; 4 valid, 2 invalid (one with two reasons: the
    # verdict is the consensus, the reasons split), none disputed
    assert (truncated["extracted"], truncated["valid"], truncated["invalid"]) == (7, 4, 2)
    assert truncated["disputed"] == 0 and truncated["precision"]["value"] == 4 / 6


def test_the_report_has_coverage_and_the_runs_compared(report):
    coverage = report["episodes"]["overall"]["coverage"]
    assert coverage["rating"]["n"] == 6
    assert coverage["rating"]["mean"] == pytest.approx((2 + 1.5 + 2 + 1 + 2 + 1.5) / 6)
    assert coverage["rating"]["low"] <= coverage["rating"]["mean"] <= coverage["rating"]["high"]
    # alice's 1-4/4-5 of session 1 is the full run's; her session-5 one nobody found
    assert (coverage["people_episodes"], coverage["matched_by_extracted"]) == (2, 1)
    (comparison,) = report["episodes"]["comparisons"]
    assert (comparison["run_a"], comparison["run_b"]) == ("full", "truncated")
    assert comparison["episodes_a"] == 11 and comparison["episodes_b"] == 6
    # four ranges alike, and the full run's 3-5 of session 3 cut to 3-4 (IoU 2/3)
    assert comparison["matched"] == 5
    assert comparison["iou_mean"] == pytest.approx((4 + 2 / 3) / 5)
    agreement = report["episodes"]["overall"]["agreement"]
    assert 0 < agreement["exact_match_all_axes"] < 1
    # the preset's finer axes are labelled too, so their agreement is there per sub-axis
    (pair,) = agreement["pairs"]
    for axis in ("damage_severity", "damage_locus", "resolution_status", "resolver"):
        assert pair["axes"][axis]["n"] > 0, axis


def test_the_lead_sees_it_on_the_report_page(report):
    client = Client()
    assert client.login(username="lead", password="demo")
    page = client.get(reverse("report", args=["agents-demo"])).content.decode()
    assert 'data-table="episode-runs"' in page and 'data-table="episode-compare"' in page


def test_a_second_run_changes_nothing_and_reset_rebuilds(report):
    assert "already exists" in run_demo()
    n = Episode.objects.count()
    run_demo("--reset")
    assert Episode.objects.count() == n


def test_the_demos_annotators_open_its_episodes_on_the_episode_card(report):
    """Every episode of the demo opens on the card for each annotator of its group, the
    queue leads to one awaiting them or to the done page, and no run's own verdict shows."""
    from annotation.access import annotates
    from annotation.episodes.reasons import INVALID_REASONS
    from annotation.models import Group, Unit

    study = Study.objects.get(slug="agents-demo")
    groups = list(Group.objects.filter(study=study, unit=Unit.EPISODE))
    assert groups
    for group in groups:
        for user in group.annotators.all():
            client = Client()
            client.force_login(user)
            queue = client.get(reverse("queue", args=[study.slug]))
            assert queue.status_code in (200, 302)
            episodes = Episode.objects.filter(conversation__assignments__group=group)
            for episode in episodes:
                assert annotates(user, group)
                page = client.get(reverse("episode_card", args=[study.slug, episode.pk]))
                assert page.status_code == 200, (user.username, episode.pk)
                form = page.content.decode().split('<form class="episode-questions"')
                shown = form[0] + (form[1].split("</form>", 1)[1] if len(form) > 1 else "")
                people = set(episode.judgements.values_list("invalid_reason", flat=True))
                if episode.run_invalid_reason and episode.run_invalid_reason not in people:
                    assert INVALID_REASONS[episode.run_invalid_reason] not in shown
