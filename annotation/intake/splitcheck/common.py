"""What the two units of the split check share: the draw, the new study and its cards.

A split-check study has one card per drawn unit: a conversation of one turn (the question,
`card_text`) whose metadata names what it checks (`{"split_check": {...}}`), so the card and
any export can name it. The study's leads are the source study's; the draw is kept as its
Sample (population, n, seed, and the confidence and margin of an `auto` size)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass

from django.core.exceptions import ValidationError
from django.core.validators import validate_slug

from taxonomy.models import Taxonomy

from ...models import Conversation, Membership, Role, Sample, Study, Turn
from ..sampling import percent, size_for

SOURCE_FORMAT = "split_check"
METADATA_KEY = "split_check"
DEFAULT_CONFIDENCE = 0.95
DEFAULT_MARGIN = 0.05


class SplitCheckError(ValueError):
    """A split check that cannot be made; the message says what and why."""


@dataclass(frozen=True)
class Card:
    """One card of the new study: its conversation's external id, metadata and text."""

    external_id: str
    metadata: dict
    text: str


@dataclass(frozen=True)
class Size:
    """How many units to draw: `n`, or Cochran's size for `confidence` and `margin` when
    `auto` (sampling.size_for, the finite population correction, rounded up)."""

    n: int
    auto: bool = False
    confidence: float | None = None
    margin: float | None = None

    def said(self) -> str:
        if not self.auto:
            return ""
        return (
            f"; n is Cochran's sample size with the finite population correction for "
            f"{percent(self.confidence)} confidence and a ±{percent(self.margin)} margin"
        )


def size(
    n: int | None,
    population: int,
    confidence: float | None = None,
    margin: float | None = None,
    *,
    noun: str = "units",
    empty: str = "",
) -> Size:
    """`n` as given, or (None: `--n auto`) Cochran's size for `population`; `noun` and
    `empty` name the units and why there are none, for the refusal of an empty population."""
    if n is not None:
        return Size(n)
    confidence = DEFAULT_CONFIDENCE if confidence is None else confidence
    margin = DEFAULT_MARGIN if margin is None else margin
    try:
        computed = size_for(population, confidence, margin)
    except ValueError as exc:
        raise SplitCheckError(f"--n auto: {exc}") from None
    if computed.n == 0:
        raise SplitCheckError(
            f"--n auto: the source study has no {noun}" + (f" ({empty})" if empty else "")
        )
    return Size(computed.n, auto=True, confidence=confidence, margin=margin)


def draw(units: Sequence, n: int, seed: int, noun: str, empty: str) -> list:
    """`n` of the units (given in their stable order) drawn with `seed`, in that order.
    `noun` names the units in the refusal ("split points"), `empty` says why there are none."""
    if n < 1:
        raise SplitCheckError(f"--n must be at least 1 (got {n})")
    if n > len(units):
        raise SplitCheckError(
            f"asked for {n} {noun}, the source study has {len(units)}"
            + ("" if units else f" ({empty})")
        )
    picked = sorted(random.Random(seed).sample(range(len(units)), n))
    return [units[i] for i in picked]


def check_slug(slug: str) -> None:
    try:
        validate_slug(slug)
    except ValidationError:
        raise SplitCheckError(
            f"{slug!r} is not a valid slug: use letters, digits, '-' and '_' only"
        ) from None
    if Study.objects.filter(slug=slug).exists():
        raise SplitCheckError(f"a study with slug {slug!r} already exists")


def new_study(
    source: Study,
    slug: str,
    *,
    preset: str,
    name: str,
    methods: str,
    cards: Sequence[Card],
    population: int,
    drawn: Size,
    seed: int,
    created_by=None,
) -> Study:
    """The split-check study with one card each; call inside a transaction."""
    study = Study.objects.create(
        slug=slug,
        name=name or f"Split check of {source.name}",
        description=methods,
        taxonomy_version=Taxonomy.load_preset(preset),
    )
    leads = Membership.objects.filter(study=source, role=Role.LEAD)
    Membership.objects.bulk_create(
        Membership(study=study, user_id=m.user_id, role=Role.LEAD, kind=m.kind) for m in leads
    )
    limit = Conversation._meta.get_field("external_id").max_length
    conversations = Conversation.objects.bulk_create(
        Conversation(
            study=study,
            external_id=card.external_id[-limit:],
            source_format=SOURCE_FORMAT,
            source_file=f"study {source.slug}",
            n_turns=1,
            metadata={METADATA_KEY: card.metadata},
        )
        for card in cards
    )
    Turn.objects.bulk_create(
        Turn(conversation=c, index=1, user_text=card.text)
        for c, card in zip(conversations, cards, strict=True)
    )
    Sample.objects.create(
        study=study,
        population=population,
        n=drawn.n,
        seed=seed,
        confidence=drawn.confidence,
        margin=drawn.margin,
        methods=methods,
        created_by=created_by,
    )
    return study


def check_of(conversation: Conversation) -> dict | None:
    """What the conversation's card checks, or None for any other conversation."""
    check = (conversation.metadata or {}).get(METADATA_KEY)
    return check if isinstance(check, dict) else None
