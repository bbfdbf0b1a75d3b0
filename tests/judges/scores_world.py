"""A labelled study (tests/report/helpers.labelled_study: G1 alice and bob, moderator mona;
G2 charlie and dave) with two judge runs on G1's conversation, written as a judge run
writes them: a pseudo-user seated as G1's judge, its round-1 labels (source JUDGE) and the
run's scores. Built from rows directly, without the judge-run code."""

from __future__ import annotations

from annotation.models import Annotation, JudgeRun, JudgeRunStatus, JudgeScore, Source, Study
from tests.factories import make_user
from tests.report.helpers import labelled_study

# per card of G1's conversation: the detector's scores {type: score}; a label at >= 0.5
DETECTOR_SCORES = [
    {"must_do_omission": 0.9},
    {"must_do_omission": 0.7, "code_rollback": 0.6},
    {"code_rollback": 0.2},
    {},
    {"signature_mismatch": 0.8},
    {"repetitive_response": 0.4},
]
# the LLM judge's labels on the first four cards (it did not read the others: it wrote
# nothing there, yet they are in its conversation, so they count as "no smell")
LLM_LABELS = [{"must_do_omission"}, set(), set(), {"ambiguous_instruction"}]


def judge_run(study: Study, group, name: str, judge: str, version: str, **fields) -> JudgeRun:
    user = make_user(name)
    group.judges.add(user)
    return JudgeRun.objects.create(
        study=study,
        group=group,
        judge=judge,
        version=version,
        user=user,
        **{"status": JudgeRunStatus.DONE, **fields},
    )


def write_labels(run: JudgeRun, turns, label_sets) -> None:
    types = run.study.taxonomy_version.types_by_code()
    for turn, codes in zip(turns, label_sets, strict=False):
        Annotation.record(
            turn=turn,
            annotator=run.user,
            types=[types[c] for c in sorted(codes)],
            source=Source.JUDGE,
        )


def judged_study(study: Study) -> dict:
    world = labelled_study(study)
    g1_turns = world["turns"][:6]
    detector = judge_run(
        study, world["g1"], "det-code-rollback@1", "code-rollback", "1", threshold=0.5
    )
    types = study.taxonomy_version.types_by_code()
    JudgeScore.objects.bulk_create(
        JudgeScore(run=detector, turn=turn, type=types[code], score=score)
        for turn, scores in zip(g1_turns, DETECTOR_SCORES, strict=True)
        for code, score in scores.items()
    )
    write_labels(
        detector,
        g1_turns,
        [{c for c, s in scores.items() if s >= 0.5} for scores in DETECTOR_SCORES],
    )
    llm = judge_run(
        study,
        world["g1"],
        "llm-gpt-x@3fa2c1",
        "llm-annotate",
        "3fa2c1",
        model="gpt-x",
        prompt_text="Label the card.",
        prompt_digest="3fa2c1" + "0" * 58,
        params={"temperature": 0.0, "seed": 1},
    )
    write_labels(llm, g1_turns, LLM_LABELS)
    return {**world, "g1_turns": g1_turns, "detector": detector, "llm": llm}
