"""Issue 24 point 6: no name breaks a statistic. An account named `ann|bob` (an earlier import
created such names; Django's rules refuse them now) made every agreement job of its study
fail ("'|' is reserved for pair keys"). The study's report keys a pair by the two ids (user
ids; group ids between groups), and each pair entry names both: {"a": {"id", "name"}, "b":
{...}}, a before b in the order of their names. The page, the downloads and the command
show the names."""

from __future__ import annotations

import csv
import io
from io import StringIO

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.agreement.data import compute_study_report
from annotation.agreement.stats import agreement_report
from annotation.models import Annotation, Conversation
from tests.factories import make_conversation, make_group, make_user

from .helpers import G1_LABELS, done_job, label

pytestmark = pytest.mark.django_db

ANN, CARL = "ann|bob", "=cmd|calc"


@pytest.fixture
def piped(study):
    ann, carl = make_user(ANN), make_user(CARL)
    group = make_group(study, "x|y", [ann, carl])
    label(study, group, [carl, ann], G1_LABELS, "c1")
    return {"ann": ann, "carl": carl, "group": group}


def plain_report(rows) -> dict:
    """The same labels under plain names, through the library path (names as keys)."""
    records = pd.DataFrame(
        [
            {"card": i, "annotator": who, "group": "g", "labels": frozenset(codes)}
            for i, pair in enumerate(rows)
            for who, codes in zip(("p", "q"), pair, strict=True)
        ]
    )
    return agreement_report(records, CODES, n_boot=50, seed=0)


CODES: list[str] = []


def test_a_pipe_in_a_name_breaks_no_statistic_and_pairs_are_keyed_by_ids(study, piped):
    CODES[:] = study.taxonomy_version.types_by_code()
    result = compute_study_report(study, n_boot=50, seed=0)
    axis = result["axes"]["smell"]
    carl, ann = piped["carl"], piped["ann"]
    key = f"{carl.pk}|{ann.pk}"  # "=cmd|calc" sorts before "ann|bob"
    pairs = axis["report"]["pairs"]
    assert list(pairs) == [key]
    pair = pairs[key]
    assert pair["a"] == {"id": carl.pk, "name": CARL}
    assert pair["b"] == {"id": ann.pk, "name": ANN}
    expected = plain_report(G1_LABELS)["pairs"]["p|q"]
    assert {k: v for k, v in pair.items() if k not in ("a", "b")} == expected
    assert axis["report"]["groups"]["x|y"]["cohen_kappa"] == expected["cohen_kappa"]
    confusion = axis["extras"]["confusion"]
    assert list(confusion) == [key]
    assert (confusion[key]["a"], confusion[key]["b"]) == (pair["a"], pair["b"])
    assert axis["extras"]["pairs_by_group"] == {"x|y": [key]}
    # the annotators' own entries stay keyed by name: no separator there
    assert set(axis["versus_consensus"]) == {ANN, CARL}


def test_groups_with_a_pipe_are_compared_by_ids_between_groups(study):
    one, two = make_user("solo1"), make_user("solo2")
    first, second = make_group(study, "A|1", [one]), make_group(study, "B|2", [two])
    conversation = make_conversation(study, "k", n_turns=3, group=first)
    Conversation.objects.filter(pk=conversation.pk).assign(second)
    types = study.taxonomy_version.types_by_code()
    for turn in conversation.turns.all():
        Annotation.submit(turn=turn, group=first, annotator=one, types=[types["code_rollback"]])
        Annotation.submit(turn=turn, group=second, annotator=two, types=[])
    between = compute_study_report(study, n_boot=0)["axes"]["smell"]["between_groups"]
    key = f"{first.pk}|{second.pk}"
    assert between["n_cards"] == 3 and list(between["pairs"]) == [key]
    assert between["pairs"][key]["a"] == {"id": first.pk, "name": "A|1"}
    assert between["pairs"][key]["b"] == {"id": second.pk, "name": "B|2"}
    assert between["pairs"][key]["percent_agreement"] == 0.0


def test_the_page_downloads_and_command_show_the_names(client, study, lead, piped):
    done_job(study, compute_study_report(study, n_boot=50, seed=0))
    client.force_login(lead)
    page = client.get(reverse("report", args=[study.slug]))
    assert page.status_code == 200
    html = page.content.decode()
    assert f"{CARL} · {ANN}" in html  # the pairs table and the confusion heatmap's title
    assert f'data-pair="{CARL}|{ANN}"' in html
    text = client.get(reverse("report_download", args=[study.slug, "csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    pair_rows = [r for r in rows if r["scope"] == "pair" and r["statistic"] == "cohen_kappa"]
    assert [r["name"] for r in pair_rows] == [f"'{CARL}|{ANN}"]  # a formula neutralised
    md = client.get(reverse("report_download", args=[study.slug, "md"])).content.decode()
    assert "=cmd\\|calc · ann\\|bob" in md
    out = StringIO()
    call_command("agreement", study.slug, "--bootstrap", "0", stdout=out)
    assert f"{CARL}|{ANN}" in out.getvalue()


def test_a_result_stored_before_the_change_still_shows_its_names(client, study, lead):
    """A job finished before pairs were keyed by ids keyed them "alice|bob": still shown."""
    from .helpers import labelled_study, make_report_job

    labelled_study(study)
    job = make_report_job(study)
    assert "alice|bob" in job.result["axes"]["smell"]["report"]["pairs"]
    client.force_login(lead)
    html = client.get(reverse("report", args=[study.slug])).content.decode()
    assert "alice · bob" in html and 'data-pair="alice|bob"' in html
