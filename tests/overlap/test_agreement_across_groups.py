"""Overlapping groups in the agreement report (AGREEMENT.md): pairs stay inside groups, the
study-wide measures span every annotator who rated a card, and the groups' consensus labels
are compared on the cards several groups decided."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import krippendorff
import numpy as np
import pytest
from django.core.management import call_command
from sklearn.metrics import cohen_kappa_score

from annotation.models import Assignment, CardState, Consensus, Method
from tests.agreement.test_worked_examples import KRIPPENDORFF_2011
from tests.factories import make_conversation
from tests.report.helpers import named

pytestmark = pytest.mark.django_db

# the example's four coders, two pairs in two groups, and a type code per value 1-5
CODERS = {"A": ("alice", "experts"), "B": ("bob", "experts")}
CODERS |= {"C": ("carol", "students"), "D": ("dave", "students")}
CODE = {
    1: "ambiguous_instruction",
    2: "incomplete_instruction",
    3: "must_do_omission",
    4: "must_not_violation",
    5: "signature_mismatch",
}


def write_records(path: Path, coders: dict[str, list], conversation: str = "k") -> Path:
    lines = []
    for coder, values in coders.items():
        annotator, group = CODERS[coder]
        for unit, value in enumerate(values, start=1):
            if value is not None:
                record = {"conversation": conversation, "turn": unit, "annotator": annotator}
                record |= {"labels": [CODE[value]], "group": group}
                lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def import_and_report(study, path: Path) -> dict:
    out = StringIO()
    call_command("import_annotations", study.slug, str(path), "--create-members", stdout=out)
    assert "0 rejected" in out.getvalue(), out.getvalue()
    out = StringIO()
    call_command("agreement", study.slug, "--json", "--bootstrap", "0", stdout=out)
    return json.loads(out.getvalue())["axes"]["smell"]


def test_it_reproduces_krippendorff_2011_with_two_groups_on_the_same_cards(tmp_path, study):
    make_conversation(study, "k", n_turns=12)
    report = import_and_report(study, write_records(tmp_path / "k.jsonl", KRIPPENDORFF_2011))

    # the import assigned the one conversation to both groups: each runs its own rounds
    assert set(Assignment.objects.values_list("group__name", flat=True)) == {"experts", "students"}
    alpha = report["report"]["krippendorff_alpha_nominal"]
    assert round(alpha, 3) == 0.743
    data = [[np.nan if v is None else v for v in vs] for vs in KRIPPENDORFF_2011.values()]
    assert abs(alpha - krippendorff.alpha(data, level_of_measurement="nominal")) < 1e-9
    assert report["report"]["n_annotators"] == 4
    # pair kappas only within the groups' pairs, equal to scikit-learn on their common cards
    pairs = named(report["report"]["pairs"])  # keyed by user ids, naming both
    assert set(pairs) == {"alice|bob", "carol|dave"}
    assert set(report["report"]["groups"]) == {"experts", "students"}
    for (x, y), key in ((("A", "B"), "alice|bob"), (("C", "D"), "carol|dave")):
        common = [
            (a, b)
            for a, b in zip(KRIPPENDORFF_2011[x], KRIPPENDORFF_2011[y], strict=True)
            if a is not None and b is not None
        ]
        expected = cohen_kappa_score([a for a, _ in common], [b for _, b in common])
        assert abs(pairs[key]["cohen_kappa"] - expected) < 1e-9
        assert pairs[key]["n_common_cards"] == len(common)


def test_it_runs_rounds_and_consensus_per_group_on_a_shared_card(tmp_path, study):
    make_conversation(study, "k", n_turns=12)
    import_and_report(study, write_records(tmp_path / "k.jsonl", KRIPPENDORFF_2011))

    # unit 6: alice 1, bob 2 (disputed in experts); carol 3, dave 4 (disputed in students);
    # unit 2: alice = bob = 2 (agreed in experts), carol 3 vs dave 2 (disputed in students)
    states = dict(CardState.objects.filter(turn__index=2).values_list("group__name", "status"))
    assert states == {"experts": "agreed", "students": "disputed"}
    consensus = Consensus.objects.current().get(turn__index=2)
    assert (consensus.group.name, consensus.method) == ("experts", Method.UNANIMOUS)


def test_it_compares_the_groups_consensus_labels_on_the_overlap(tmp_path, study):
    # two groups of one annotator each (no rounds: labels are the consensus, `single`)
    values = {"A": [1, 1, 2, 2, 1, 3, 1, 2], "C": [1, 2, 2, 2, 1, 3, 2, 2]}
    make_conversation(study, "k", n_turns=len(values["A"]))
    report = import_and_report(study, write_records(tmp_path / "k.jsonl", values))

    assert set(Consensus.objects.current().values_list("method", flat=True)) == {Method.SINGLE}
    between = report["between_groups"]
    assert between["n_cards"] == 8
    pair = named(between["pairs"])["experts|students"]
    codes = [[CODE[v]] for v in values["A"]], [[CODE[v]] for v in values["C"]]
    expected = cohen_kappa_score([c[0] for c in codes[0]], [c[0] for c in codes[1]])
    assert abs(pair["cohen_kappa"] - expected) < 1e-9
    for value, code in CODE.items():
        present = ([v == value for v in values["A"]], [v == value for v in values["C"]])
        if len(set(present[0]) | set(present[1])) > 1:
            expected = cohen_kappa_score(*present)
            assert abs(pair["per_label_kappa"][code] - expected) < 1e-9
    # the study-level gold (prevalence) counts only the cards where both groups agree
    agreed = [a for a, c in zip(values["A"], values["C"], strict=True) if a == c]
    share = sum(v == 1 for v in agreed) / len(agreed)
    assert abs(report["report"]["prevalence"][CODE[1]] - share) < 1e-9


def test_the_report_page_shows_the_agreement_between_the_groups(client, tmp_path, study, lead):
    from django.urls import reverse
    from django.utils import timezone

    from annotation.agreement.data import compute_study_report
    from annotation.models import Job, JobKind, JobStatus

    values = {"A": [1, 1, 2, 2, 1, 3, 1, 2], "C": [1, 2, 2, 2, 1, 3, 2, 2]}
    make_conversation(study, "k", n_turns=len(values["A"]))
    write_records(tmp_path / "k.jsonl", values)
    call_command("import_annotations", study.slug, str(tmp_path / "k.jsonl"), "--create-members")
    result = compute_study_report(study, round=1, n_boot=0, seed=0)  # what the job stores
    Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        params={"round": 1},
        result=result,
        finished_at=timezone.now(),
    )
    client.force_login(lead)
    html = client.get(reverse("report", args=[study.slug])).content.decode()
    assert "Between groups" in html
    row = html[html.index('data-pair="experts|students"') :].split("</tr>")[0]
    expected = cohen_kappa_score([CODE[v] for v in values["A"]], [CODE[v] for v in values["C"]])
    assert f"{expected:.3f}" in row
    assert "<td>8</td>" in row
