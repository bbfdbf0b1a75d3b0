"""A small labelled study and a done agreement job built from it, for the report tests.

The job's result has the shape annotation.agreement.data.compute_study_report stores; it is
assembled here from annotation.agreement.stats and annotation.agreement.extras directly, so these
tests do not depend on the job code."""

from __future__ import annotations

import pandas as pd
from django.utils import timezone

from annotation.agreement.data import data_stamp
from annotation.agreement.extras import build_extras
from annotation.agreement.stats import agreement_reports
from annotation.models import Annotation, Consensus, Job, JobKind, JobStatus, Role, Study, Turn
from tests.factories import make_conversation, make_group, make_user

# card index -> (first annotator's codes, second annotator's codes), per group
G1_LABELS = [
    ({"must_do_omission"}, {"must_do_omission"}),
    ({"must_do_omission", "code_rollback"}, {"must_do_omission"}),
    (set(), set()),
    ({"ambiguous_instruction"}, {"incomplete_instruction"}),
    ({"signature_mismatch"}, {"signature_mismatch"}),
    (set(), {"repetitive_response"}),
]
G2_LABELS = [
    ({"must_not_violation"}, {"must_not_violation"}),
    ({"cross_turn_inconsistency"}, set()),
    (set(), set()),
    ({"must_do_omission"}, {"must_do_omission"}),
]


def label(study: Study, group, annotators, rows, external_id: str) -> list[Turn]:
    conversation = make_conversation(study, external_id, n_turns=len(rows), group=group)
    types = study.taxonomy_version.types_by_code()
    turns = list(conversation.turns.order_by("index"))
    for turn, codes_pair in zip(turns, rows, strict=True):
        for user, codes in zip(annotators, codes_pair, strict=True):
            Annotation.submit(
                turn=turn, group=group, annotator=user, types=[types[c] for c in sorted(codes)]
            )
    return turns


def labelled_study(study: Study) -> dict:
    """Groups G1 (alice, bob; moderator mona) and G2 (charlie, dave), labelled in round 1."""
    alice, bob, charlie, dave = (make_user(n) for n in ("alice", "bob", "charlie", "dave"))
    mona = make_user("mona")
    g1 = make_group(study, "G1", [alice, bob], moderator=mona)
    g2 = make_group(study, "G2", [charlie, dave])
    turns = label(study, g1, [alice, bob], G1_LABELS, "c1")
    turns += label(study, g2, [charlie, dave], G2_LABELS, "c2")
    return {"g1": g1, "g2": g2, "turns": turns, "moderator": mona}


def records_of(study: Study, round: int = 1) -> dict:
    """{axis: (records, codes, consensus)} of the study's current labels in `round`."""
    annotations = Annotation.objects.filter(
        turn__conversation__study=study, round=round, is_current=True
    ).select_related("annotator", "turn__conversation")
    rows = [
        {
            "card": a.turn_id,
            "annotator": a.annotator.username,
            "group": a.turn.conversation.groups.get().name,
            "labels": a.codes,
            "conversation": a.turn.conversation_id,
        }
        for a in annotations.prefetch_related("types")
    ]
    consensus = {
        c.turn_id: c.codes
        for c in Consensus.objects.current().filter(group__study=study).prefetch_related("types")
    }
    codes = list(study.taxonomy_version.types_by_code())
    return {"smell": (pd.DataFrame(rows), codes, consensus)}


def make_report_job(study: Study, n_boot: int = 200, round: int = 1) -> Job:
    axes = records_of(study, round)
    reports = agreement_reports(axes, n_boot=n_boot, seed=0)
    result = {
        "study": study.slug,
        "round": round,
        "taxonomy_version": str(study.taxonomy_version),
        "computed_at": timezone.now().isoformat(),
        "axes": {
            axis: {"report": reports[axis], "extras": build_extras(*spec)}
            for axis, spec in axes.items()
        },
    }
    result["data_stamp"] = data_stamp(study)
    return done_job(study, result)


def done_job(study: Study, result: dict) -> Job:
    """A finished agreement job holding `result`."""
    return Job.objects.create(
        study=study,
        kind=JobKind.AGREEMENT,
        status=JobStatus.DONE,
        result=result,
        finished_at=timezone.now(),
    )


def add_lead(study: Study, username: str = "lead"):
    user = make_user(username)
    study.add_member(user, Role.LEAD)
    return user


def pair_name(pair: dict) -> str:
    """A study report's pair (keyed by ids, naming both) as the names' key "alice|bob"."""
    return f"{pair['a']['name']}|{pair['b']['name']}"


def named(pairs: dict) -> dict:
    """A study report's pairs keyed by the names, as the library path (stats, extras on a
    DataFrame of names) keys them: {"alice|bob": entry without its a and b}."""
    return {
        pair_name(p): {k: v for k, v in p.items() if k not in ("a", "b")} for p in pairs.values()
    }


def named_report(report: dict) -> dict:
    return {**report, "pairs": named(report["pairs"])}


def named_extras(extras: dict) -> dict:
    names = {key: pair_name(p) for key, p in extras["confusion"].items()}
    by_group = {g: [names[k] for k in keys] for g, keys in extras["pairs_by_group"].items()}
    return {**extras, "confusion": named(extras["confusion"]), "pairs_by_group": by_group}
