"""The episodes in the agreement report: the job stores the section, the page shows it, the
downloads carry it, a moderator reads no machine's verdict, and `--by` repeats it per
stratum of a conversation metadata field (FIELD:month: per month of a date)."""

from __future__ import annotations

import csv
import io
import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from annotation.access import report_result
from annotation.agreement.data import compute_study_report
from annotation.agreement.render import to_text
from annotation.agreement.spec import taxonomy_entries
from annotation.episodes import measures
from annotation.models import Conversation, Group, Job, JobKind, Role
from tests.factories import make_user

from .test_episode_measures import study  # noqa: F401  (the fixture)

pytestmark = pytest.mark.django_db


def _report(study, **kw) -> dict:  # noqa: F811
    return compute_study_report(study, n_boot=0, **kw)


def _saved(study, *args) -> Job:  # noqa: F811
    call_command("agreement", "ag", "--save", "--bootstrap", "0", *args, stdout=StringIO())
    return Job.objects.filter(study=study, kind=JobKind.AGREEMENT).latest("pk")


def test_the_job_stores_the_episode_section(study):  # noqa: F811
    episodes = _saved(study).result["episodes"]
    gpt = episodes["overall"]["runs"]["gpt"]
    assert (gpt["extracted"], gpt["valid"], gpt["invalid"], gpt["retention"]) == (4, 1, 1, 0.25)
    assert gpt["precision"]["value"] == 0.5
    assert (gpt["precision"]["low"], gpt["precision"]["high"]) == measures.wilson(1, 2)
    coverage = episodes["overall"]["coverage"]
    # s1 rated 2 and 2, s2 rated 1: the sessions' mean (2 + 1) / 2
    assert coverage["rating"]["mean"] == 1.5
    assert coverage["matched_share"] == 1.0  # the person's s2 1-2 by gpt's s2 1-3 (IoU 2/3)
    assert episodes["overall"]["agreement"]["exact_match_all_axes"] == pytest.approx(1 / 3)
    (comparison,) = episodes["comparisons"]
    assert (comparison["run_a"], comparison["run_b"]) == ("claude", "gpt")
    # s1 1-2 = 1-2 and 3-4 ~ 2-4 (IoU 2/3); s2 1-3 vs 3-3 is 1/3, under 0.5
    assert comparison["matched"] == 2 and "pairs" not in comparison


def test_a_study_without_episodes_has_no_section(db):
    from tests.factories import make_study

    assert "episodes" not in _report(make_study("plain"))


def test_by_modality_repeats_every_figure_per_stratum(study):  # noqa: F811
    episodes = _saved(study, "--by", "modality").result["episodes"]
    assert episodes["by"] == "modality"
    assert set(episodes["strata"]) == {"cli", "ide"}
    cli, ide = episodes["strata"]["cli"], episodes["strata"]["ide"]
    # s1 (cli): gpt's valid and invalid episodes; s2 (ide): the disputed one
    assert (cli["runs"]["gpt"]["valid"], cli["runs"]["gpt"]["invalid"]) == (1, 1)
    assert ide["runs"]["gpt"]["disputed"] == 1 and ide["runs"]["gpt"]["precision"]["value"] is None
    assert cli["coverage"]["rating"]["mean"] == 2.0 and ide["coverage"]["rating"]["mean"] == 1.0
    assert Job.objects.filter(study=study).latest("pk").params["by"] == "modality"


def test_by_month_of_a_date_field(study):  # noqa: F811
    dates = {"s1": "2025-03-14T09:30:00Z", "s2": "2025-04-01"}
    for c in Conversation.objects.filter(study=study):
        c.metadata = c.metadata | {"started": dates[c.external_id]}
        c.save()
    strata = _report(study, by="started:month")["episodes"]["strata"]
    assert set(strata) == {"2025-03", "2025-04"}
    assert measures.strata_of({1: {"d": "soon"}, 2: {}}, "d:month") == {
        1: measures.NOT_A_DATE,
        2: measures.NONE,
    }


def test_by_refuses_a_bad_field(study):  # noqa: F811
    with pytest.raises(CommandError, match="--by"):
        call_command("agreement", "ag", "--by", "model:week", stdout=StringIO())


def test_the_job_form_passes_by(client, study):  # noqa: F811
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD)
    client.force_login(lead)
    from unittest import mock

    with mock.patch("annotation.views.jobs.enqueue") as enqueue:
        client.post(reverse("job_agreement", args=["ag"]), {"round": 1, "by": "modality"})
    assert enqueue.call_args.args[3]["by"] == "modality"


def test_the_command_summary_and_downloads_carry_it(client, study):  # noqa: F811
    job = _saved(study, "--by", "modality")
    entries = taxonomy_entries(study.taxonomy_version)[0]
    text = to_text(job.result, entries)
    assert "run gpt: 4 extracted, 1 valid, 1 invalid, retention 25.00%, precision 0.500" in text
    assert "claude vs gpt: 2 matched" in text
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD)
    client.force_login(lead)
    get = lambda fmt: client.get(reverse("report_download", args=["ag", fmt])).content.decode()  # noqa: E731
    rows = list(csv.DictReader(io.StringIO(get("csv"))))
    precision = [r for r in rows if r["scope"] == "episode-run" and r["name"] == "gpt"
                 and r["statistic"] == "precision"]  # fmt: skip
    assert len(precision) == 1
    low, high = measures.wilson(1, 2)
    assert float(precision[0]["ci_low"]) == pytest.approx(low)
    assert float(precision[0]["ci_high"]) == pytest.approx(high)
    assert any(r["scope"] == "episode-run@modality=cli" for r in rows)
    assert any(r["scope"] == "episode-cooccurrence" for r in rows)
    md = get("md")
    assert "## Episodes" in md and "Robustness: two runs compared" in md
    assert "Coverage (modality = ide)" in md
    # validity first, then the taxonomy's axes in its order (not jsonb's by key length)
    agreement = md[md.index("Agreement on episodes, round 1") :]
    rows = [line.split("|")[1].strip() for line in agreement.splitlines()[4:11]]
    assert rows == [
        "validity",
        "symptom",
        "cause",
        "damage_severity",
        "damage_locus",
        "resolution_status",
        "resolver",
    ]
    assert json.loads(get("json"))["episodes"]["overall"]["runs"]["gpt"]["extracted"] == 4


def test_the_page_shows_the_section_with_heat_maps(client, study):  # noqa: F811
    _saved(study)
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD)
    client.force_login(lead)
    page = client.get(reverse("report", args=["ag"])).content.decode()
    assert 'id="episodes"' in page
    for table in ("episode-runs", "episode-coverage", "episode-agreement", "episode-compare",
                  "episode-symptom-x-cause"):  # fmt: skip
        assert f'data-table="{table}"' in page
    assert "Lift over the gold episodes" in page and "<svg" in page


def test_a_moderator_reads_no_machine_verdict(study):  # noqa: F811
    result = _saved(study).result
    mona = make_user("mona")
    study.add_member(mona, Role.MODERATOR)
    Group.objects.filter(study=study).update(moderator=mona)
    seen = report_result(mona, study, result)
    runs = seen["episodes"]["overall"]["runs"]
    assert runs["gpt"]["precision"] == result["episodes"]["overall"]["runs"]["gpt"]["precision"]
    assert all("run_verdict" not in r for r in runs.values())
    assert all("axes" not in c for c in seen["episodes"]["comparisons"])
    assert "run_verdict" in result["episodes"]["overall"]["runs"]["gpt"]  # the lead's copy
    lead = make_user("lead")
    study.add_member(lead, Role.LEAD)
    assert report_result(lead, study, result) == result


def test_the_methods_section_describes_the_pipeline(study):  # noqa: F811
    from annotation.methods import methods_of
    from annotation.methods.render import to_markdown

    _saved(study)
    (step,) = [s for s in methods_of(study)["steps"] if s["step"] == "episodes"]
    assert "Run gpt extracted 4 episodes (1 dropped for confidence)" in step["text"]
    assert "retention 25.0%, precision 0.500" in step["text"]
    assert "mean 1.500 of 2 over 2 sessions" in step["text"]
    assert "Runs claude and gpt compared: 2 episodes matched" in step["text"]
    assert "own validator" in step["text"]  # the command line reads the machine's too
    assert [r[0] for r in step["rows"]] == ["claude", "gpt"]
    assert "| gpt | 4 | 1 | 1 | 1 | 1 | 25.0% | 0.500 |" in to_markdown(methods_of(study))
    mona = make_user("mona")
    study.add_member(mona, Role.MODERATOR)
    (seen,) = [s for s in methods_of(study, mona)["steps"] if s["step"] == "episodes"]
    assert "own validator" not in seen["text"]


def test_an_infinite_odds_ratio_is_stored_as_null():
    """Fisher's odds ratio with a zero cell is infinite: the job's JSON cannot hold it."""
    gold = [{"symptom": ["a"], "cause": ["x"]}] * 3 + [{"symptom": ["b"], "cause": ["y"]}] * 3
    table = measures.cooccurrence(gold, "symptom", "cause", {"symptom": ["a", "b"],
                                                             "cause": ["x", "y"]})  # fmt: skip
    (cell,) = [c for c in table["cells"] if (c["row"], c["col"]) == ("a", "x")]
    assert (
        cell["test"] == "fisher" and cell["statistic"] is None and cell["p"] == pytest.approx(0.1)
    )
    assert cell["statistic_reason"]
    json.dumps(table, allow_nan=False)
