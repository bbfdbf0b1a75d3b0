"""Splitting a multi-topic conversation into single-topic ones (issue 10, point 3), and
undoing it.

A split before turns k1 < k2 < ... makes parts: new conversations of the same study, turns
1..k1-1, k1..k2-1, ..., each re-indexed from 1, with `split_from` = the original and
`split_first_turn` = the original's index of the part's turn 1, external id (and key)
"<original's key>#<part number>" (its key: two originals may share an external id).
Source fields, metadata and the system prompt are copied to every part; an import's
preamble (assistant messages before the first user message) stays with part 1, where it
was. The original keeps its turns and stays as provenance, set aside
(SetAside.SPLIT): the exports name it on every row of its parts.

Dropped turns (issue 20, point 3: the study removed unrelated interleaved turns) belong to
no part: a part is its range of turns without them, re-indexed from 1, and a range left
with no turn makes no part. A split may drop turns without any split point: one part, the
original without them. The original keeps every turn, the dropped ones too.

Who split, and where, is recorded as applied SplitProposal rows: an LLM's proposal at a
chosen point (or dropped turn, kind DROP) becomes applied, any other gets a proposal of
source "lead". Undoing reopens the LLM's and drops the lead's. The applied DROP rows are
what `original_turns` reads to map a part's turns back to the original's.

Labels live on turns, so a conversation whose cards someone has labelled (or that a group
has been given) is never split, and parts that have been are never merged back."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from ..models import (
    Annotation,
    Assignment,
    Comment,
    Consensus,
    Conversation,
    Proposal,
    SetAside,
    SplitProposal,
    StudyGold,
    Turn,
)

logger = logging.getLogger(__name__)

LEAD = "lead"  # SplitProposal.source of a point the lead chose
# what on a card stops its conversation from being split, in the words of the refusal
USES = (
    (Annotation, "label"),
    (Consensus, "consensus"),
    (StudyGold, "study gold decision"),
    (Comment, "discussion comment"),
    (Proposal, "proposal of a new type"),
)


class SplitRefused(ValueError):
    """A split or an undo that cannot be done as asked; nothing was changed."""


def part_id(original: Conversation | str, k: int) -> str:
    """The external id of part `k` (1-based) of `original` (a conversation, or its key)."""
    key = original if isinstance(original, str) else original.key
    return f"{key}#{k}"


def part_ranges(n_turns: int, before_turns: Iterable[int]) -> list[tuple[int, int]]:
    """The original's turns (first, last) of each part, for a split before `before_turns`
    (checked: see check_points)."""
    points = check_points(n_turns, before_turns)
    return _ranges(n_turns, points)


def _ranges(n_turns: int, points: list[int]) -> list[tuple[int, int]]:
    starts = [1, *points]
    ends = [p - 1 for p in points] + [n_turns]
    return list(zip(starts, ends, strict=True))


def _turn_numbers(raw_values: Iterable, what: str) -> list[int]:
    out = []
    for raw in raw_values:
        try:
            out.append(int(raw))
        except (TypeError, ValueError):
            raise SplitRefused(f"{what} {raw!r} is not a turn number.") from None
    return out


def check_points(n_turns: int, before_turns: Iterable[int], allow_none: bool = False) -> list[int]:
    """The split points sorted, duplicates merged; SplitRefused for none (unless
    `allow_none`), or for one that is not a turn index from 2 to `n_turns` (a split before
    turn 1 or after the last turn would make an empty part)."""
    points = _turn_numbers(before_turns, "Split point")
    for point in points:
        if not 2 <= point <= n_turns:
            raise SplitRefused(
                f"Cannot split before turn {point}: a split point must be a turn from 2 to "
                f"{n_turns} (the conversation has {n_turns} turn{'s' if n_turns != 1 else ''}), "
                "so that every part keeps at least one turn."
            )
    if not points and not allow_none:
        raise SplitRefused("No split point given: choose the turn(s) a new topic starts at.")
    return sorted(set(points))


def check_drops(n_turns: int, drop_turns: Iterable[int]) -> list[int]:
    """The turns to drop sorted, duplicates merged; SplitRefused for one that is not a turn
    from 1 to `n_turns`."""
    drops = _turn_numbers(drop_turns, "Dropped turn")
    for turn in drops:
        if not 1 <= turn <= n_turns:
            raise SplitRefused(
                f"Cannot drop turn {turn}: the conversation has turns 1 to {n_turns}."
            )
    return sorted(set(drops))


@dataclass(frozen=True)
class PartPlan:
    """One part of a split: its range of the original's turns, and the ones it keeps."""

    first: int
    last: int
    turns: tuple[int, ...]

    @property
    def dropped(self) -> tuple[int, ...]:
        return tuple(k for k in range(self.first, self.last + 1) if k not in self.turns)


def plan(n_turns: int, before_turns: Iterable, drop_turns: Iterable = ()) -> list[PartPlan]:
    """The parts a split before `before_turns` dropping `drop_turns` makes, in order (a
    range whose every turn is dropped makes none). SplitRefused for a point or a dropped
    turn out of range, for neither a point nor a dropped turn, and when every turn would
    be dropped."""
    drops = set(check_drops(n_turns, drop_turns))
    points = check_points(n_turns, before_turns, allow_none=bool(drops))
    if not points and not drops:  # pragma: no cover - check_points refused it
        raise SplitRefused("Nothing to do.")
    parts = [
        PartPlan(first, last, tuple(k for k in range(first, last + 1) if k not in drops))
        for first, last in _ranges(n_turns, points)
    ]
    parts = [p for p in parts if p.turns]
    if not parts:
        raise SplitRefused(
            f"Cannot drop every turn (1 to {n_turns}): a split keeps at least one turn."
        )
    return parts


def original_turns(part: Conversation) -> list[int]:
    """The original's indices of a part's turns 1..n, in order (the dropped turns of the
    original skipped); for a conversation that is no part, its own 1..n."""
    if part.split_from_id is None or part.split_first_turn is None:
        return list(range(1, part.n_turns + 1))
    dropped = set(
        SplitProposal.objects.filter(
            conversation_id=part.split_from_id,
            kind=SplitProposal.Kind.DROP,
            status=SplitProposal.Status.APPLIED,
        ).values_list("turn_index", flat=True)
    )
    out, k = [], part.split_first_turn
    while len(out) < part.n_turns:
        if k not in dropped:
            out.append(k)
        k += 1
    return out


def _in_use(conversations) -> str:
    """Why these conversations' turns may not be moved ("" when they may): assigned to a
    group, or carrying labels, a consensus, a study gold, a comment or a type proposal."""
    conversations = list(conversations)
    ids = [c.pk for c in conversations]
    names = {c.pk: c.key for c in conversations}
    groups = (
        Assignment.objects.filter(conversation_id__in=ids)
        .order_by("conversation_id", "group__name")
        .values_list("conversation_id", "group__name")
    )
    for conversation_id, group in groups:
        return (
            f"{names[conversation_id]} is assigned to group {group!r}: a conversation given "
            "to annotators keeps its cards as they are; remove the assignment first."
        )
    # one query: the first turn carrying any of them, and which
    uses = {
        f"has_{i}": Exists(model.objects.filter(turn_id=OuterRef("pk")))
        for i, (model, _) in enumerate(USES)
    }
    carrying = Q()
    for name in uses:
        carrying |= Q(**{name: True})
    turn = (
        Turn.objects.filter(conversation_id__in=ids)
        .annotate(**uses)
        .filter(carrying)
        .order_by("conversation_id", "index")
        .values("conversation_id", "index", *uses)
        .first()
    )
    if turn is not None:
        what = next(what for i, (_, what) in enumerate(USES) if turn[f"has_{i}"])
        return (
            f"{names[turn['conversation_id']]} turn {turn['index']} has a {what}: labels and "
            "their record belong to the cards as they are, so its turns cannot move."
        )
    return ""


def why_not_split(conversation: Conversation) -> str:
    """Why `conversation` cannot be split at all, whatever the points ("" when it can)."""
    name = conversation.key
    if conversation.set_aside == SetAside.SPLIT:
        return f"{name} is already split; undo that split to split it otherwise."
    if conversation.split_from_id is not None:
        return (
            f"{name} is a part of {conversation.split_from.key}: undo that split and "
            "split the original at every point at once, so each part names the original."
        )
    if conversation.set_aside:
        return (
            f"{name} is not in the study's set ({conversation.get_set_aside_display()}): only "
            "conversations of the set are split."
        )
    if conversation.n_turns < 2:
        return f"{name} has one turn: there is nothing to split."
    if why := _in_use([conversation]):
        return f"Cannot split {name}: {why}"
    return ""


@transaction.atomic
def split(
    conversation: Conversation, before_turns: Iterable[int], by=None, drop_turns: Iterable = ()
) -> list[Conversation]:
    """Split `conversation` before each of `before_turns`, leaving out `drop_turns`, into
    parts (see the module's docstring); returns the parts in order. SplitRefused, with
    nothing changed, when it is already split, is itself a part, is not in the study's set,
    is assigned or labelled, or a point or a dropped turn is out of range."""
    original = Conversation.objects.select_for_update().get(pk=conversation.pk)
    name = original.key
    if why := why_not_split(original):
        raise SplitRefused(why)
    parts_planned = plan(original.n_turns, before_turns, drop_turns)
    turns = list(original.turns.order_by("index"))
    if len(turns) != original.n_turns:
        raise SplitRefused(
            f"{name} says it has {original.n_turns} turns but {len(turns)} are stored; "
            "not splitting an inconsistent conversation."
        )
    _check_names(original, len(parts_planned))
    now = timezone.now()
    parts = []
    for k, planned in enumerate(parts_planned, 1):
        part = Conversation.objects.create(
            study_id=original.study_id,
            external_id=part_id(name, k),
            source_format=original.source_format,
            source_file=original.source_file,
            source_line=original.source_line,
            system_prompt=original.system_prompt,
            preamble=original.preamble if k == 1 else [],
            metadata=original.metadata,
            n_turns=len(planned.turns),
            created_at=now,
            split_from=original,
            split_first_turn=planned.turns[0],
        )
        Turn.objects.bulk_create(
            Turn(
                conversation=part,
                index=i,
                user_text=turn.user_text,
                reply_text=turn.reply_text,
                reply_parts=turn.reply_parts,
                reply_empty=turn.reply_empty,
                reply_missing=turn.reply_missing,
                metadata=turn.metadata,
            )
            for i, turn in enumerate((turns[index - 1] for index in planned.turns), 1)
        )
        parts.append(part)
    original.set_aside = SetAside.SPLIT
    original.save(update_fields=["set_aside"])
    points = check_points(original.n_turns, before_turns, allow_none=True)
    drops = check_drops(original.n_turns, drop_turns)
    _record_points(original, points, by, now)
    _record_points(original, drops, by, now, kind=SplitProposal.Kind.DROP)
    conversation.set_aside = original.set_aside
    logger.info(
        "%s split conversation %s before turns %s dropping %s",
        by or "someone",
        original.pk,
        points,
        drops,
    )
    return parts


def _check_names(original: Conversation, n_parts: int) -> None:
    """SplitRefused when a part's name (after the original's key) would be too long or is
    taken in the study, as an external id or as a key."""
    name = original.key
    longest = part_id(name, n_parts)
    limit = Conversation._meta.get_field("external_id").max_length
    if len(longest) > limit:
        raise SplitRefused(
            f"Cannot split {name[:40]}...: a part's name ({len(longest)} characters) would "
            f"pass the {limit} an external id may have."
        )
    names = [part_id(name, k) for k in range(1, n_parts + 1)]
    taken = {
        external_id if external_id in names else key
        for external_id, key in Conversation.objects.filter(study_id=original.study_id)
        .filter(Q(external_id__in=names) | Q(key__in=names))
        .values_list("external_id", "key")
    }
    if taken:
        raise SplitRefused(
            f"Cannot split {name}: the study already has a conversation named "
            f"{', '.join(sorted(taken))}, the name a part would get."
        )


def _record_points(
    original: Conversation, points: list[int], by, now, kind: str = SplitProposal.Kind.SPLIT
) -> None:
    """The open proposals at the chosen points (or dropped turns) become applied; the
    others get an applied proposal of the lead's."""
    proposals = SplitProposal.objects.filter(conversation=original, kind=kind)
    proposals.filter(turn_index__in=points, status=SplitProposal.Status.OPEN).update(
        status=SplitProposal.Status.APPLIED
    )
    applied = set(
        proposals.filter(status=SplitProposal.Status.APPLIED).values_list("turn_index", flat=True)
    )
    who = getattr(by, "username", None)
    SplitProposal.objects.bulk_create(
        SplitProposal(
            conversation=original,
            turn_index=point,
            reason=f"split by {who}" if who else "split by a lead",
            source=LEAD,
            kind=kind,
            status=SplitProposal.Status.APPLIED,
            created_at=now,
        )
        for point in points
        if point not in applied
    )


@transaction.atomic
def unsplit(original: Conversation, by=None) -> int:
    """Undo the split of `original`: delete its parts (and their turns) and put it back in
    the study's set; returns the number of parts deleted. SplitRefused, with nothing
    changed, when it is not split, or when a part is assigned or labelled."""
    locked = Conversation.objects.select_for_update().get(pk=original.pk)
    name = locked.key
    parts = list(locked.split_parts.order_by("split_first_turn"))
    if locked.split_from_id is not None:
        raise SplitRefused(
            f"{name} is a part of {locked.split_from.key}: undo the split from the original."
        )
    if locked.set_aside != SetAside.SPLIT or not parts:
        raise SplitRefused(f"{name} is not split: there is nothing to undo.")
    if why := _in_use(parts):
        raise SplitRefused(f"Cannot undo the split of {name}: {why}")
    Conversation.objects.filter(pk__in=[p.pk for p in parts]).delete()
    locked.set_aside = SetAside.NO
    locked.save(update_fields=["set_aside"])
    proposals = SplitProposal.objects.filter(
        conversation=locked, status=SplitProposal.Status.APPLIED
    )
    proposals.filter(source=LEAD).delete()
    proposals.update(status=SplitProposal.Status.OPEN)
    original.set_aside = locked.set_aside
    logger.info("%s undid the split of conversation %s", by or "someone", locked.pk)
    return len(parts)
