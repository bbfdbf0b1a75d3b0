"""An annotator's judgement of an episode from the episode card (issue 21): read from the
posted form with messages that name the question and the types, and saved under the rounds'
one rule (annotation/episodes/rounds.py, the import's too), the server deciding the round."""

from __future__ import annotations

from dataclasses import dataclass

from django.db import transaction
from django.utils import timezone

from taxonomy.models import when_error

from ..episodes import rounds
from ..episodes.reasons import INVALID_REASONS
from ..models import Episode, EpisodeJudgement, Group, RoundClosed, Source

VALID, INVALID = "1", "0"


class JudgementError(ValueError):
    """Bad input on the episode card: what is wrong, in the page's words."""


@dataclass
class Posted:
    valid: bool
    reason: str
    labels: dict[str, list[str]]  # {axis code: [type codes]} in the taxonomy's order


def read(data, types: list) -> Posted:
    """The judgement posted: `valid` ("1" / "0"), `invalid_reason` (a reason code) when
    invalid, `types` ("axis:code", each a type of the study's taxonomy) when valid; each
    axis's rule (pick one, at most N) checked with the axis's and the types' names."""
    verdict = data.get("valid")
    if verdict not in (VALID, INVALID):
        raise JudgementError("Is the episode valid? Answer yes or no first.")
    valid = verdict == VALID
    reason = (data.get("invalid_reason") or "").strip()
    ticked = data.getlist("types") if hasattr(data, "getlist") else data.get("types", [])
    if not valid:
        if not reason:
            raise JudgementError("Why is the episode invalid? Choose a reason.")
        if reason not in INVALID_REASONS:
            raise JudgementError(f"Unknown reason {reason!r}: choose one of the reasons listed.")
        if ticked:
            raise JudgementError("Types are for a valid episode: untick them, or answer yes.")
        return Posted(False, reason, {})
    if reason:
        raise JudgementError("A reason is for an invalid episode: answer no, or clear it.")
    by_key = {f"{t.axis.code}:{t.code}": t for t in types}
    chosen = []
    for value in ticked:
        if value not in by_key:
            raise JudgementError(f"Unknown type {value!r}: reload the page.")
        if by_key[value] not in chosen:
            chosen.append(by_key[value])
    labels: dict[str, list[str]] = {}
    for t in sorted(chosen, key=types.index):
        labels.setdefault(t.axis.code, []).append(t.code)
    for axis_code, codes in labels.items():
        axis = next(t.axis for t in chosen if t.axis.code == axis_code)
        limit = axis.max_labels if axis.multi_select else 1
        if limit and len(codes) > limit:
            names = ", ".join(t.name for t in chosen if t.axis.code == axis_code)
            raise JudgementError(
                f"{axis.name}: at most {limit} type{'s' if limit > 1 else ''}; you ticked "
                f"{len(codes)} ({names}). Untick one. Nothing was saved."
            )
    # an axis's condition (Axis.when: damage locus only when the severity is DS2 or DS3),
    # the cards' and the imports' rule
    axes = {t.axis.code: t.axis for t in types}
    names = {code: axis.name for code, axis in axes.items()}
    for axis_code in labels:
        problem = when_error(axis_code, names[axis_code], axes[axis_code].when, labels, names)
        if problem:
            raise JudgementError(f"{problem} Nothing was saved.")
    return Posted(True, "", labels)


def submit(episode: Episode, group: Group, annotator, asked_round: int, posted: Posted):
    """Save `posted` as `annotator`'s judgement of `episode` in `group` for `asked_round`
    (the round the page showed) under the rounds' rule (episodes/rounds.decide, the
    import's): RoundClosed, nothing written, when that round is not open to them now
    (another annotator closed it meanwhile, or the episode is decided).
    Returns (what happened: rounds.SAME or rounds.WRITE, the episode's state after it).
    Submits on one episode are serialised by a lock on its row."""
    study = group.study
    with transaction.atomic():
        Episode.objects.select_for_update().filter(pk=episode.pk).first()
        judged = rounds.judged_of([episode.pk], [group.pk])[(episode.pk, group.pk)]
        voters = rounds.voters_of([group.pk])[group.pk]
        decided = bool(rounds.decided_of([episode.pk], [group.pk]))
        key = rounds.agreement_key(posted.valid, posted.reason, posted.labels)
        try:
            # the import's rule, to the letter (the same judgement again is no change)
            action, _ = rounds.decide(
                judged, voters, study.discussion_rounds, annotator.pk, asked_round, key, decided
            )
        except RoundClosed:
            state = rounds.replay(judged, voters, study.discussion_rounds, decided)
            now = f"in round {state.round} ({state.status})" if state.open_round else state.status
            now = "decided by its moderator" if state.decided else now
            raise RoundClosed(
                f"This episode is now {now}, not in round {asked_round}: the page shows "
                "where it stands."
            ) from None
        if action == rounds.WRITE:
            EpisodeJudgement.objects.filter(
                episode=episode, annotator=annotator, round=asked_round, is_current=True
            ).update(is_current=False)
            EpisodeJudgement.objects.create(
                episode=episode, annotator=annotator, group=group, round=asked_round,
                valid=posted.valid, invalid_reason=posted.reason, labels=posted.labels,
                taxonomy_version=study.taxonomy_version, source=Source.BROWSER,
                created_at=timezone.now(),
            )  # fmt: skip
        return action, rounds.replay(judged, voters, study.discussion_rounds, decided)
