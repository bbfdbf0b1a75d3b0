"""A rich study for the backup tests, written row by row so that every model of a study has
rows, with the awkward cases: a forward self reference (a tag merged into a later tag), a
split conversation, labels carried through a taxonomy move (two versions), evidence spans,
rounds, disputes, consensus, gold, proposals, open-sort board events naming a deleted board
type, a job with ids in its params and a file in the storage."""

from __future__ import annotations

import datetime as dt

from django.contrib.auth import get_user_model
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from annotation import models as m
from taxonomy.models import Axis, Category, Taxonomy, TaxonomyVersion, Type

T0 = dt.datetime(2026, 3, 4, 5, 6, 7, 123456, tzinfo=dt.UTC)


def at(minutes: int) -> dt.datetime:
    return T0 + dt.timedelta(minutes=minutes)


def build(slug: str = "rich") -> m.Study:
    User = get_user_model()
    users = {n: User.objects.get_or_create(username=n)[0] for n in ("ann", "ben", "mod", "lee")}
    v1 = Taxonomy.load_preset("interaction-smells")
    study = m.Study.objects.create(slug=slug, name="Rich", taxonomy_version=v1, discussion_rounds=2)
    old_types = list(v1.axes.first().types.order_by("pk")[:3])
    v2 = TaxonomyVersion.objects.create(
        taxonomy=v1.taxonomy,
        number=v1.taxonomy.versions.count() + 1,
        parent=v1,
        mapping={old_types[0].code: [old_types[1].code]},
    )
    ax2 = Axis.objects.create(version=v2, code="ax", name="Axis two", order=0)
    cat2 = Category.objects.create(axis=ax2, name="Cat", order=0)
    new_type = Type.objects.create(category=cat2, axis=ax2, code="newt", name="New type")
    for name, role in (
        ("ann", m.Role.ANNOTATOR),
        ("ben", m.Role.ANNOTATOR),
        ("mod", m.Role.MODERATOR),
        ("lee", m.Role.LEAD),
    ):
        study.add_member(users[name], role)
    group = m.Group.objects.create(study=study, name="G", moderator=users["mod"])
    group.annotators.add(users["ann"], users["ben"])
    group.judges.add(users["lee"])
    job = m.Job.objects.create(
        study=study,
        kind=m.JobKind.IMPORT,
        status=m.JobStatus.DONE,
        created_by=users["lee"],
        created_at=at(1),
        finished_at=at(2),
    )
    original = m.Conversation.objects.create(
        study=study,
        external_id="orig",
        source_format="native",
        n_turns=2,
        set_aside=m.SetAside.SPLIT,
        fingerprint="f" * 64,
        import_job=job,
        created_at=at(3),
        metadata={"model": "x"},
    )
    part = m.Conversation.objects.create(
        study=study,
        external_id="orig",
        source_format="native",
        n_turns=2,
        split_from=original,
        split_first_turn=1,
        created_at=at(4),
    )
    turns = [
        m.Turn.objects.create(
            conversation=c,
            index=i,
            user_text=f"u{c.pk}{i}",
            reply_text="r",
            reply_parts=[{"k": "tool"}],
        )
        for c in (original, part)
        for i in (1, 2)
    ]
    m.Assignment.objects.create(conversation=part, group=group, created_at=at(5))
    card = turns[2]
    m.CardState.objects.create(turn=card, group=group, status=m.CardStatus.AGREED, round=2)
    a1 = m.Annotation.objects.create(
        turn=card,
        annotator=users["ann"],
        taxonomy_version=v1,
        note="n",
        evidence="u",
        evidence_turn=turns[2],
        evidence_part="user",
        evidence_start=0,
        evidence_end=1,
        confidence=3,
        created_at=at(6),
        is_current=False,
    )
    a1.types.set(old_types[:2])
    a2 = m.Annotation.objects.create(
        turn=card,
        annotator=users["ben"],
        taxonomy_version=v1,
        created_at=at(7),
        round=2,
        is_current=False,
    )
    a2.types.set(old_types[2:])
    m.Comment.objects.create(
        turn=card, group=group, author=users["ann"], round=2, text="why", created_at=at(8)
    )
    k1 = m.Consensus.objects.create(
        turn=card,
        group=group,
        decided_by=users["mod"],
        decided_at=at(9),
        taxonomy_version=v1,
        method=m.Method.MODERATOR,
        from_round=2,
        rationale="r",
        is_current=False,
    )
    k1.types.set(old_types[:1])
    g1 = m.StudyGold.objects.create(
        study=study,
        turn=card,
        decided_by=users["lee"],
        decided_at=at(10),
        taxonomy_version=v1,
        method=m.GoldMethod.LEAD,
        is_current=False,
    )
    g1.types.set(old_types[:1])
    move = m.TaxonomyMove.objects.create(
        study=study,
        from_version=v1,
        to_version=v2,
        moved_by=users["lee"],
        moved_at=at(11),
        counts={"carried": 2},
    )
    m.Annotation.objects.filter(pk__in=[a1.pk, a2.pk]).update(retired_by=move)
    a3 = m.Annotation.objects.create(
        turn=card,
        annotator=users["ann"],
        taxonomy_version=v2,
        carried_from=a1,
        created_at=at(12),
        split_pending=old_types[0].code,
    )
    a3.types.set([new_type])
    k2 = m.Consensus.objects.create(
        turn=card,
        group=group,
        decided_at=at(13),
        taxonomy_version=v2,
        method=m.Method.UNANIMOUS,
        from_round=1,
        carried_from=k1,
        is_current=True,
    )
    k2.types.set([new_type])
    g2 = m.StudyGold.objects.create(
        study=study, turn=card, decided_at=at(13), taxonomy_version=v2, carried_from=g1
    )
    g2.types.set([new_type])
    m.Study.objects.filter(pk=study.pk).update(taxonomy_version=v2)
    m.CardSkip.objects.create(
        turn=turns[3], annotator=users["ben"], kind="flag", reason="odd", created_at=at(14)
    )
    m.CardTime.objects.create(turn=card, annotator=users["ann"], active_ms=12345)
    m.Proposal.objects.create(
        study=study,
        turn=card,
        proposer=users["ann"],
        name="P",
        axis=ax2,
        created_version=v2,
        new_version=v2,
        decided_by=users["lee"],
        decided_at=at(15),
        created_at=at(15),
    )
    m.Sample.objects.create(
        study=study,
        population=2,
        n=1,
        seed=7,
        confidence=0.95,
        margin=0.05,
        proportion=0.5,
        strata={"a": 1},
        created_by=users["lee"],
        created_at=at(16),
    )
    split_job = m.Job.objects.create(
        study=study,
        kind=m.JobKind.SPLIT,
        params={"conversations": [original.pk, part.pk]},
        result={"blind_for_id": users["lee"].pk},
        created_at=at(17),
    )
    m.SplitProposal.objects.create(
        conversation=original, turn_index=2, reason="topic", job=split_job, created_at=at(17)
    )
    kept = m.BoardType.objects.create(study=study, category="C", name="Kept", type=new_type)
    gone = m.BoardType.objects.create(study=study, category="C", name="Gone")
    early = m.FreeTag.objects.create(
        study=study, author=users["ann"], name="early", board_type=kept, created_at=at(18)
    )
    later = m.FreeTag.objects.create(
        study=study, author=users["ben"], name="later", created_at=at(19)
    )
    m.FreeTag.objects.filter(pk=early.pk).update(merged_into=later)
    tags = m.TagSet.objects.create(turn=card, group=group, annotator=users["ann"], note="t")
    tags.tags.set([early, later])
    tag_row = {"board_name": "", "merged_into_id": later.pk, "board_type_id": gone.pk}
    m.BoardEvent.objects.create(
        study=study,
        actor=users["lee"],
        action="delete_type",
        before={"tags": {str(early.pk): tag_row}, "types": {str(gone.pk): {"name": "Gone"}}},
        after={"tags": {}, "types": {str(gone.pk): None}},
        created_at=at(20),
    )
    m.BoardEvent.objects.create(
        study=study, action="freeze", after={"version": v2.pk, "annotations": 1}, created_at=at(21)
    )
    gone.delete()
    m.BoardVisit.objects.create(study=study, user=users["ann"], first_at=at(22))
    run = m.ExtractionRun.objects.create(
        study=study,
        name="gpt",
        source="gpt-5",
        parameters={"t": 1},
        counts={"read": 2},
        created_at=at(23),
    )
    extracted = m.Episode.objects.create(
        conversation=part,
        run=run,
        first_turn=1,
        last_turn=2,
        goal="g",
        confidence=0.8,
        run_valid=False,
        run_invalid_reason="other",
        run_labels={"ax": ["newt"]},
        source_line=1,
        created_at=at(23),
    )
    m.Episode.objects.create(
        conversation=part,
        created_by=users["ann"],
        first_turn=2,
        last_turn=2,
        goal="missed",
        created_at=at(24),
    )
    m.EvidenceQuote.objects.create(
        episode=extracted, turn=card, part="user", start=0, end=1, quote="u"
    )
    m.EpisodeJudgement.objects.create(
        episode=extracted,
        annotator=users["ann"],
        group=group,
        valid=True,
        labels={"ax": ["newt"]},
        taxonomy_version=v2,
        created_at=at(24),
    )
    m.CoverageRating.objects.create(
        conversation=part, annotator=users["ben"], group=group, rating=1, created_at=at(25)
    )  # fmt: skip
    m.EpisodeSeen.objects.create(
        episode=extracted, annotator=users["ben"], group=group, seen_at=at(25)
    )
    m.EpisodeDecision.objects.create(
        episode=extracted, group=group, decided_by=users["lee"], valid=True,
        labels={"ax": ["newt"]}, rationale="the quote", taxonomy_version=v2, from_round=2,
        decided_at=at(26),
    )  # fmt: skip
    m.EpisodeComment.objects.create(
        episode=extracted, group=group, author=users["ben"], round=2, text="why?",
        created_at=at(26),
    )  # fmt: skip
    m.EpisodeSkip.objects.create(
        episode=extracted, annotator=users["ben"], kind="flag", reason="cut?", created_at=at(25)
    )
    m.EpisodeTime.objects.create(episode=extracted, annotator=users["ann"], active_ms=42_000)
    judged = m.JudgeRun.objects.create(
        study=study,
        group=group,
        judge="code-rollback",
        version="1",
        user=users["lee"],
        params={"sample": 2, "seed": 1},
        threshold=0.4,
        status=m.JudgeRunStatus.DONE,
        job=job,
        counts={"units_done": 1},
        calls=0,
        created_by=users["lee"],
        created_at=at(26),
        started_at=at(26),
        finished_at=at(27),
    )
    m.JudgeScore.objects.create(
        run=judged,
        turn=card,
        type=new_type,
        score=0.75,
        evidence={"turns": [0, 1], "quotes": ["x"]},
    )
    m.JudgeScore.objects.create(  # an llm-validate verdict on an episode: no type
        run=judged,
        episode=extracted,
        score=0.0,
        evidence={"valid": False, "invalid_reason": "other", "rationale": "r"},
    )
    # ids kept in JSON (issue 21): the judge run that extracted and validated the run, the
    # sessions it answered without an episode; the run a judge run validates, its sessions
    m.ExtractionRun.objects.filter(pk=run.pk).update(
        parameters={
            "judge_run": judged.pk,
            "validator": {"judge_run": judged.pk},
            "answered_without_episodes": [part.pk],
            "t": 1,
        }
    )
    m.JudgeRun.objects.filter(pk=judged.pk).update(
        params={"sample": 2, "seed": 1, "extraction_run_id": run.pk, "conversation_ids": [part.pk]}
    )
    rejected = ContentFile(b"a.jsonl:1: bad\n" * 100)
    default_storage.save(f"imports/{job.pk}/rejected.txt", rejected)  # wherever files are kept
    m.Job.objects.filter(pk=job.pk).update(
        result_file=f"imports/{job.pk}/rejected.txt",
        params={"files": [{"path": f"imports/{job.pk}/1-a.jsonl", "name": "a.jsonl"}]},
    )
    return study
