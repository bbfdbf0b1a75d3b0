"""The split check: a study whose cards are the split points of another study.

A split point is an original conversation (set aside as split) and the boundary between
two consecutive parts of it: `before_turn`, the original's turn where the second part
starts. `create_split_check` draws `n` of a source study's split points with a seed and
makes a new study on the `split-check` preset with one conversation per point; its single
turn is the card, which the card page shows as the original (boundary marked) beside the two
parts (`card_context`). What a card checks is stored in its conversation's metadata
(`{"split_check": {...}}`), so the card and any export can name it.

The draw is reproducible across databases: the points are put in a stable order (the
original's external id, source file and line, fingerprint, then the boundary; the database
id only breaks a tie left after those), `random.Random(seed)` picks `n` of them, and the
picked ones keep that stable order, which becomes the new study's card order.

Accuracy: the share of checked split points whose label is "Right split", for the
consensus and for each annotator (`accuracy`); the agreement job adds it to its result when
the study's taxonomy has that type (annotation/agreement/data.py), and the report's tables
print it (annotation/agreement/tables.py)."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction

from taxonomy.models import Taxonomy

from ..models import Conversation, Membership, Role, Sample, SetAside, Study, Turn

PRESET = "split-check"
RIGHT_SPLIT = "right_split"
SOURCE_FORMAT = "split_check"
METADATA_KEY = "split_check"


class SplitCheckError(ValueError):
    """A split check that cannot be made; the message says what and why."""


@dataclass(frozen=True)
class Part:
    id: int
    external_id: str
    first_turn: int  # the original's turn index of the part's turn 1
    n_turns: int
    index: int  # the part's place among the original's parts, 1-based

    @property
    def last_turn(self) -> int:
        return self.first_turn + self.n_turns - 1

    def as_metadata(self) -> dict:
        return {
            "id": self.id,
            "external_id": self.external_id,
            "index": self.index,
            "first_turn": self.first_turn,
            "last_turn": self.last_turn,
            "n_turns": self.n_turns,
        }


@dataclass(frozen=True)
class SplitPoint:
    original_id: int
    original_external_id: str
    original_n_turns: int
    before_turn: int
    parts: tuple[Part, Part]
    # the original's stable identity, for the order: (source file, line, fingerprint)
    provenance: tuple[str, int, str]

    def sort_key(self) -> tuple:
        return (self.original_external_id, *self.provenance, self.before_turn, self.original_id)

    def as_metadata(self, source: Study) -> dict:
        return {
            "study": source.slug,
            "original_id": self.original_id,
            "original_external_id": self.original_external_id,
            "original_n_turns": self.original_n_turns,
            "before_turn": self.before_turn,
            "parts": [p.as_metadata() for p in self.parts],
        }


def split_points(study: Study) -> list[SplitPoint]:
    """Every split point of the study, in the stable order (see the module's doc): one per
    pair of consecutive parts of each original set aside as split."""
    originals = {
        row["id"]: row
        for row in Conversation.objects.filter(study=study, set_aside=SetAside.SPLIT).values(
            "id", "external_id", "n_turns", "source_file", "source_line", "fingerprint"
        )
    }
    parts: dict[int, list[dict]] = {}
    rows = Conversation.objects.filter(
        study=study, split_from_id__in=list(originals), split_first_turn__isnull=False
    ).values("id", "external_id", "split_from_id", "split_first_turn", "n_turns")
    for row in rows:
        parts.setdefault(row["split_from_id"], []).append(row)
    points = []
    for original_id, its_parts in parts.items():
        original = originals[original_id]
        its_parts.sort(key=lambda p: (p["split_first_turn"], p["id"]))
        made = [
            Part(p["id"], p["external_id"], p["split_first_turn"], p["n_turns"], i)
            for i, p in enumerate(its_parts, 1)
        ]
        provenance = (
            original["source_file"],
            original["source_line"] or 0,
            original["fingerprint"],
        )
        for first, second in zip(made, made[1:], strict=False):
            points.append(
                SplitPoint(
                    original_id=original_id,
                    original_external_id=original["external_id"],
                    original_n_turns=original["n_turns"],
                    before_turn=second.first_turn,
                    parts=(first, second),
                    provenance=provenance,
                )
            )
    points.sort(key=SplitPoint.sort_key)
    return points


def count_split_points(study: Study) -> int:
    """len(split_points(study)), in two counts: each original of k parts has k - 1."""
    parts = Conversation.objects.filter(
        study=study, split_from__set_aside=SetAside.SPLIT, split_first_turn__isnull=False
    )
    return parts.count() - parts.values("split_from_id").distinct().count()


def draw(points: list[SplitPoint], n: int, seed: int) -> list[SplitPoint]:
    """`n` of the points (given in the stable order) drawn with `seed`, in the stable order."""
    if n < 1:
        raise SplitCheckError(f"--n must be at least 1 (got {n})")
    if n > len(points):
        raise SplitCheckError(
            f"asked for {n} split points, the source study has {len(points)}"
            + ("" if points else " (no conversation of it is split yet)")
        )
    picked = sorted(random.Random(seed).sample(range(len(points)), n))
    return [points[i] for i in picked]


def card_text(point: SplitPoint) -> str:
    """The card's own text (what My cards searches and an export with text carries)."""
    first, second = point.parts
    return (
        f"Is the split of {point.original_external_id} before turn {point.before_turn} right? "
        f"Part {first.index}: turns {first.first_turn}-{first.last_turn}; "
        f"part {second.index}: turns {second.first_turn}-{second.last_turn} "
        f"(of {point.original_n_turns})."
    )


@transaction.atomic
def create_split_check(
    source: Study, slug: str, *, n: int, seed: int, name: str = "", created_by=None
) -> Study:
    """A new study on the split-check preset with one card per drawn split point of
    `source`; the source study's leads lead it. Nothing is written when it fails."""
    try:
        validate_slug(slug)
    except ValidationError:
        raise SplitCheckError(
            f"{slug!r} is not a valid slug: use letters, digits, '-' and '_' only"
        ) from None
    if Study.objects.filter(slug=slug).exists():
        raise SplitCheckError(f"a study with slug {slug!r} already exists")
    points = split_points(source)
    drawn = draw(points, n, seed)
    study = Study.objects.create(
        slug=slug,
        name=name or f"Split check of {source.name}",
        description=methods_text(source, n, len(points), seed),
        taxonomy_version=Taxonomy.load_preset(PRESET),
    )
    leads = Membership.objects.filter(study=source, role=Role.LEAD)
    Membership.objects.bulk_create(
        Membership(study=study, user_id=m.user_id, role=Role.LEAD, kind=m.kind) for m in leads
    )
    conversations = Conversation.objects.bulk_create(
        Conversation(
            study=study,
            external_id=f"{p.original_external_id} @ turn {p.before_turn}"[-255:],
            source_format=SOURCE_FORMAT,
            source_file=f"study {source.slug}",
            n_turns=1,
            metadata={METADATA_KEY: p.as_metadata(source)},
        )
        for p in drawn
    )
    Turn.objects.bulk_create(
        Turn(conversation=c, index=1, user_text=card_text(p))
        for c, p in zip(conversations, drawn, strict=True)
    )
    Sample.objects.create(
        study=study,
        population=len(points),
        n=n,
        seed=seed,
        methods=study.description,
        created_by=created_by,
    )
    return study


def methods_text(source: Study, n: int, population: int, seed: int) -> str:
    return (
        f"Split check of study {source.slug}: {n:,} of its {population:,} split points, "
        f"drawn with seed {seed}."
    )


# -- the card ---------------------------------------------------------------------------------


def check_of(conversation: Conversation) -> dict | None:
    """What the conversation's card checks, or None for any other conversation."""
    check = (conversation.metadata or {}).get(METADATA_KEY)
    return check if isinstance(check, dict) else None


def turn_context(turn: Turn) -> dict:
    """What the card's turn panel needs (card and discussion page): its conversation and,
    on a split-check card, what `card_context` gives."""
    return {"conversation": turn.conversation, **card_context(turn.conversation)}


def card_context(conversation: Conversation) -> dict:
    """What the card shows of a split point: {"split_check": {...}} with the original's
    turns (each knowing its side of the boundary) and each part's turns, or {} for a card of
    any other study. Two queries. A part or an original gone since (the split was undone)
    is named as missing rather than failing the card."""
    check = check_of(conversation)
    if check is None:
        return {}
    before = check["before_turn"]
    parts_meta = check["parts"]
    ids = [check["original_id"], *(p["id"] for p in parts_meta)]
    found = Conversation.objects.filter(pk__in=ids, study__slug=check["study"]).only(
        "id", "external_id", "n_turns", "system_prompt"
    )
    found = {c.pk: c for c in found}
    turns: dict[int, list[Turn]] = {}
    for turn in Turn.objects.filter(conversation_id__in=list(found)).order_by(
        "conversation_id", "index"
    ):
        turns.setdefault(turn.conversation_id, []).append(turn)
    first, second = parts_meta
    original = []
    for turn in turns.get(check["original_id"], []):
        if first["first_turn"] <= turn.index < before:
            turn.side = "before"
        elif before <= turn.index <= second["last_turn"]:
            turn.side = "after"
        else:
            turn.side = "outside"  # a turn of another part of a split in three or more
        original.append(turn)
    parts = []
    for meta in parts_meta:
        part_turns = turns.get(meta["id"], [])
        for turn in part_turns:
            turn.original_index = meta["first_turn"] + turn.index - 1
        parts.append({**meta, "conversation": found.get(meta["id"]), "turns": part_turns})
    return {
        "split_check": {
            **check,
            "original": found.get(check["original_id"]),
            "original_turns": original,
            "parts": parts,
        }
    }


# -- accuracy ---------------------------------------------------------------------------------


def _share(labels: Iterable[frozenset], right: str) -> dict:
    sets = list(labels)
    n_right = sum(1 for s in sets if s == frozenset({right}))
    out: dict = {"n_cards": len(sets), "n_right": n_right}
    if sets:
        out["accuracy"] = n_right / len(sets)
    else:
        out["accuracy"] = None
        out["accuracy_reason"] = "undefined: no card labelled"
    return out


def accuracy(
    consensus: Iterable[frozenset],
    annotators: Mapping[str, Iterable[frozenset]],
    *,
    judges: Iterable[str] = (),
    right: str = RIGHT_SPLIT,
) -> dict:
    """The share of checked split points labelled exactly {right} ("Right split"): over the
    cards with a consensus, and over each annotator's labelled cards. An empty set ("no
    smell") or a set of another type counts as not right. JSON-able."""
    judges = set(judges)
    consensus_share = _share(consensus, right)
    if consensus_share["accuracy"] is None:
        consensus_share["accuracy_reason"] = "undefined: no card has a consensus yet"
    return {
        "right": right,
        "consensus": consensus_share,
        "annotators": {
            who: {**_share(sets, right), "judge": who in judges}
            for who, sets in sorted(annotators.items())
        },
    }
