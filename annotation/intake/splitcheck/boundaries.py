"""The split check over boundaries (`--unit boundaries`): the cards are the split points of
another study.

A split point is an original conversation (set aside as split) and the boundary between
two consecutive parts of it: `before_turn`, the original's turn where the second part
starts. One card per drawn point, on the `split-check` preset; the card page shows the
original (boundary marked) beside the two parts (`card_context`).

The draw is reproducible across databases: the points are put in a stable order (the
original's external id, source file and line, fingerprint, then the boundary; the database
id only breaks a tie left after those), `random.Random(seed)` picks `n` of them, and the
picked ones keep that stable order, which becomes the new study's card order.

Accuracy: the share of checked split points whose label is "Right split", for the
consensus and for each annotator (annotation/agreement/splitcheck.py)."""

from __future__ import annotations

from dataclasses import dataclass

from ...models import Conversation, SetAside, Study, Turn
from ...splitcheck_codes import BOUNDARIES_PRESET
from .common import Card, Size, check_slug, draw, new_study, size

PRESET = BOUNDARIES_PRESET
EMPTY = "no conversation of it is split yet"
NOUN = "split points"


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


def draw_points(points: list[SplitPoint], n: int, seed: int) -> list[SplitPoint]:
    """`n` of the points (given in the stable order) drawn with `seed`, in the stable order."""
    return draw(points, n, seed, NOUN, EMPTY)


def card_text(point: SplitPoint) -> str:
    """The card's own text (what My cards searches and an export with text carries)."""
    first, second = point.parts
    return (
        f"Is the split of {point.original_external_id} before turn {point.before_turn} right? "
        f"Part {first.index}: turns {first.first_turn}-{first.last_turn}; "
        f"part {second.index}: turns {second.first_turn}-{second.last_turn} "
        f"(of {point.original_n_turns})."
    )


def create(
    source: Study,
    slug: str,
    *,
    n: int | None,
    seed: int,
    confidence: float | None = None,
    margin: float | None = None,
    name: str = "",
    created_by=None,
) -> Study:
    """A new study on the split-check preset with one card per drawn split point of
    `source`; call inside a transaction (splitcheck.create_split_check)."""
    check_slug(slug)
    points = split_points(source)
    drawn = size(n, len(points), confidence, margin, noun=NOUN, empty=EMPTY)
    methods = methods_text(source, drawn, len(points), seed)
    cards = [
        Card(
            f"{p.original_external_id} @ turn {p.before_turn}", p.as_metadata(source), card_text(p)
        )
        for p in draw_points(points, drawn.n, seed)
    ]
    return new_study(
        source, slug, preset=PRESET, name=name, methods=methods, cards=cards,
        population=len(points), drawn=drawn, seed=seed, created_by=created_by,
    )  # fmt: skip


def methods_text(source: Study, drawn: Size, population: int, seed: int) -> str:
    return (
        f"Split check of study {source.slug}: {drawn.n:,} of its {population:,} split points, "
        f"drawn with seed {seed}{drawn.said()}."
    )


# -- the card ---------------------------------------------------------------------------------


def card_context(check: dict) -> dict:
    """What the card shows of a split point (`check`, its metadata): {"split_check": {...}}
    with the original's turns (each knowing its side of the boundary) and each part's turns.
    Two queries. A part or an original gone since (the split was undone) is named as missing
    rather than failing the card."""
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
