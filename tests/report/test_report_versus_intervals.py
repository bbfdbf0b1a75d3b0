"""The judge's measures against the consensus with their bootstrap intervals resampling
conversations (issue 20, point 6), from the study's rows to every output: the job's
result, the page, CSV, Markdown, LaTeX and the `agreement` command."""

from __future__ import annotations

import csv
import io
import random

import pandas as pd
import pytest
from django.core.management import call_command
from django.urls import reverse

from annotation.agreement.data import compute_study_report
from annotation.agreement.spec import fmt, fmt_ci
from annotation.agreement.versus import versus_reference
from annotation.models import Annotation, Consensus, StudyGold
from tests.factories import label, make_conversation, make_group, make_user, types_of

from .helpers import done_job

pytestmark = pytest.mark.django_db

CODES = ["ambiguous_instruction", "must_do_omission", "code_rollback"]
N_BOOT, SEED = 200, 3


@pytest.fixture
def judged(study):
    """Two students who agree on every card (so each card has a consensus) and an LLM
    judge, on 8 conversations of 4 cards; the judge is right more often in some
    conversations than in others."""
    rng = random.Random(11)
    alice, bob, judge = make_user("alice"), make_user("bob"), make_user("llm")
    group = make_group(study, "g", [alice, bob])
    group.judges.add(judge)
    for c in range(8):
        conversation = make_conversation(study, f"c{c}", n_turns=4, group=group)
        for turn in conversation.turns.all():
            truth = sorted(rng.sample(CODES, rng.randint(0, 2)))
            label(turn, alice, *truth)
            label(turn, bob, *truth)
            given = truth if rng.random() < 0.3 + 0.08 * c else sorted(rng.sample(CODES, 1))
            Annotation.record(turn=turn, annotator=judge, types=types_of(study, *given))
    return study


def _records(study) -> tuple[pd.DataFrame, dict]:
    """The round-1 records and the gold, read from the ORM (not the job's loader)."""
    rows = [
        {
            "card": a.turn_id,
            "annotator": a.annotator.username,
            "group": "g",
            "labels": frozenset(a.codes),
            "conversation": a.turn.conversation_id,
        }
        for a in Annotation.objects.filter(
            turn__conversation__study=study, round=1, is_current=True
        ).select_related("annotator", "turn")
    ]
    assert not StudyGold.objects.filter(study=study).exists()
    # one group: its consensus (the students agree on every card) is the study's gold
    gold = {
        k.turn_id: frozenset(k.codes)
        for k in Consensus.objects.current().filter(group__study=study)
    }
    assert len(gold) == 32
    return pd.DataFrame(rows), gold


def test_the_job_gives_each_annotator_intervals_over_conversations(judged):
    result = compute_study_report(judged, n_boot=N_BOOT, seed=SEED)
    versus = result["axes"]["smell"]["versus_consensus"]
    records, gold = _records(judged)
    codes = list(judged.taxonomy_version.types_by_code())
    assert versus == versus_reference(records, gold, codes, n_boot=N_BOOT, seed=SEED)
    llm = versus["llm"]
    assert (llm["n_cards"], llm["n_conversations"]) == (32, 8)
    lo, hi = llm["accuracy_ci"]
    assert lo < llm["accuracy"] < hi
    assert llm["cohen_kappa_ci"] is not None and llm["macro_f1_ci"] is not None
    # the same seed, the same intervals; the job's n_boot and seed decide them
    again = compute_study_report(judged, n_boot=N_BOOT, seed=SEED)["axes"]["smell"]
    assert again["versus_consensus"] == versus
    other = compute_study_report(judged, n_boot=N_BOOT, seed=SEED + 1)["axes"]["smell"]
    assert other["versus_consensus"]["llm"]["accuracy_ci"] != llm["accuracy_ci"]


def _download(client, lead, study, fmt_):
    client.force_login(lead)
    return client.get(reverse("report_download", args=[study.slug, fmt_])).content.decode()


def test_every_output_shows_the_judges_intervals(client, judged, lead):
    result = compute_study_report(judged, n_boot=N_BOOT, seed=SEED)
    done_job(judged, result)
    llm = result["axes"]["smell"]["versus_consensus"]["llm"]
    code = "must_do_omission"
    assert llm["precision_ci"][code] is not None

    client.force_login(lead)
    page = client.get(reverse("report", args=[judged.slug])).content.decode()
    table = page[page.index('data-table="versus"') :]
    row = table[table.index('<th scope="row">llm</th>') :]
    row = row[: row.index("</tr>")]
    for key in ("accuracy", "cohen_kappa", "macro_f1"):
        assert fmt(llm[key]) in row and fmt_ci(llm[f"{key}_ci"]) in row, key
    per_type = page[page.index("llm: precision, recall, F1 and κ per type") :]
    per_type = per_type[: per_type.index("</table>")]
    assert fmt_ci(llm["precision_ci"][code]) in per_type
    assert fmt_ci(llm["per_label_kappa_ci"][code]) in per_type

    rows = list(csv.DictReader(io.StringIO(_download(client, lead, judged, "csv"))))
    by = {(r["scope"], r["name"], r["statistic"], r["label"]): r for r in rows}
    for key in ("accuracy", "cohen_kappa", "macro_f1"):
        got = by[("versus", "llm", key, "")]
        assert [float(got["ci_low"]), float(got["ci_high"])] == llm[f"{key}_ci"], key
    for measure in ("precision", "recall", "f1", "per_label_kappa"):
        got = by[("versus", "llm", measure, code)]
        assert [float(got["ci_low"]), float(got["ci_high"])] == llm[f"{measure}_ci"][code]

    md = _download(client, lead, judged, "md").splitlines()
    header = next(line for line in md if line.startswith("| Annotator |"))
    assert header.startswith(
        "| Annotator | Cards | Conversations | Exact set | 95% CI | Cohen's κ |"
    )
    line = next(line for line in md if line.startswith("| llm |"))
    assert f"| {fmt(llm['accuracy'])} | {fmt_ci(llm['accuracy_ci'])} |" in line

    tex = _download(client, lead, judged, "tex")
    assert f"{fmt(llm['accuracy'])} & {fmt_ci(llm['accuracy_ci'])}" in tex

    out = io.StringIO()
    call_command("agreement", judged.slug, "--bootstrap", str(N_BOOT), "--seed", str(SEED),
                 stdout=out)  # fmt: skip
    text = out.getvalue()
    assert (
        f"llm: 32 cards, 8 conversations, exact set {fmt(llm['accuracy'])}, "
        f"95% CI {fmt_ci(llm['accuracy_ci'])}, kappa {fmt(llm['cohen_kappa'])}, "
        f"95% CI {fmt_ci(llm['cohen_kappa_ci'])}"
    ) in text
