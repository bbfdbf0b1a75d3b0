"""Annotating in rounds: assignments, labels (`Annotation`), each card's state in its group
(`CardState`, the one round state machine), comments, skips and time on a card."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from taxonomy.models import TaxonomyVersion, Type

from ..evidence import PARTS as EVIDENCE_PARTS
from ..evidence import EvidenceSpan
from ..limits import TextLimit
from .corpus import Conversation, Turn
from .evolution import carried_and_retired
from .queue import mark_done, mark_put_off, sync_states
from .study import Group, Study

if TYPE_CHECKING:
    from .decisions import Consensus


class Source(models.TextChoices):
    BROWSER = "browser"
    IMPORT = "import"
    API = "api"
    PROPOSAL = "proposal"  # old rows only: a mapped proposal once relabelled (no longer)
    # round-1 labels an expert gave as free tags in an open sort, mapped at the freeze through
    # the board's one tag-to-type mapping (annotation/opensort): derived from their own tags only
    OPEN_SORT = "open_sort"
    # a machine judge's label, written by a judge run (annotation/models/judges.py)
    JUDGE = "judge"


class CardStatus(models.TextChoices):
    OPEN = "open"  # round 1 under way: blind
    DISPUTED = "disputed"  # label sets differed: discussion round(s) under way
    ESCALATED = "escalated"  # still different after the discussion rounds: the moderator's
    AGREED = "agreed"  # a consensus exists


class Assignment(models.Model):
    """A conversation assigned to a group: the group labels every turn of it. Several groups
    may share a conversation (a calibration set, an overlap share); each runs its own rounds
    and consensus on it."""

    # db_index=False on both: the unique (conversation, group) and the (group, conversation)
    # indexes serve lookups by either
    conversation = models.ForeignKey(
        Conversation, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    group = models.ForeignKey(
        Group, on_delete=models.CASCADE, related_name="assignments", db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["conversation", "group"], name="uniq_assignment")
        ]
        indexes = [models.Index(fields=["group", "conversation"])]

    def __str__(self) -> str:
        return f"{self.conversation_id} -> {self.group_id}"


class AnnotationQuerySet(models.QuerySet):
    def current(self):
        return self.filter(is_current=True)


class Annotation(models.Model):
    """(turn, annotator, round) -> a set of types. An empty set is "no smell"; no row at all
    is "not yet annotated". Never overwritten: a revision inserts a new row and clears
    `is_current` on the old one, so the history stays."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="annotations")
    # db_index=False: the (annotator, round, is_current) index serves lookups by annotator;
    # a second index would only slow down every insert (the label import's above all)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, db_index=False
    )
    round = models.PositiveSmallIntegerField(default=1)
    types = models.ManyToManyField(Type, blank=True, related_name="annotations")
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    # limits (annotation/limits.py) are validators: nothing stored before them is refused
    note = models.TextField(blank=True, validators=[TextLimit("note")])
    evidence = models.TextField(blank=True, validators=[TextLimit("evidence")])
    # where `evidence` is quoted from (annotation/evidence.py): a turn of the card's
    # conversation up to the card, its user message or reply, [start, end) in the stored
    # text; all null for free-text evidence (or none)
    evidence_turn = models.ForeignKey(
        Turn, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    evidence_part = models.CharField(
        max_length=11, null=True, blank=True, choices=[(p, p) for p in EVIDENCE_PARTS]
    )
    # a reply part's position in the turn's reply_parts (thinking, tool call or result)
    evidence_part_index = models.PositiveSmallIntegerField(null=True, blank=True)
    evidence_start = models.PositiveIntegerField(null=True, blank=True)
    evidence_end = models.PositiveIntegerField(null=True, blank=True)
    confidence = models.PositiveSmallIntegerField(null=True, blank=True)
    source = models.CharField(max_length=10, choices=Source.choices, default=Source.BROWSER)
    is_current = models.BooleanField(default=True)
    created_at = models.DateTimeField(default=timezone.now)
    # Taxonomy evolution (annotation/evolution/). A study moving to a new version retires
    # its current rows (`retired_by` the move: the old version's labels as they stood) and
    # carries each to a new row under the new version (`carried_from`). A label of a split
    # type waits for its annotator to choose the side(s): `split_pending` names the old
    # codes waiting ("" none), and until then the row is no record of any statistic.
    # db_index=False: the partial index below serves the old version's report.
    carried_from, retired_by = carried_and_retired()
    split_pending = models.CharField(max_length=500, blank=True, default="", db_default="")

    objects = AnnotationQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["turn", "annotator", "round"],
                condition=Q(is_current=True),
                name="uniq_current_annotation",
            )
        ]
        indexes = [
            models.Index(fields=["annotator", "round", "is_current"]),
            models.Index(
                fields=["retired_by"],
                condition=Q(retired_by__isnull=False),
                name="annotation_retired_by",
            ),
            # an annotator's labels waiting for a split side (the study page says how many):
            # a seek on the few, not a count over their every label (issue 25)
            models.Index(
                fields=["annotator"],
                condition=Q(is_current=True) & ~Q(split_pending=""),
                name="annotation_split_pending",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.annotator} on {self.turn} r{self.round}"

    @classmethod
    def record(
        cls,
        *,
        turn: Turn,
        annotator,
        types: list[Type],
        round: int = 1,
        note: str = "",
        evidence: str = "",
        confidence: int | None = None,
        source: str = Source.BROWSER,
        taxonomy_version: TaxonomyVersion | None = None,
        span: EvidenceSpan | None = None,
    ) -> Annotation:
        """Save a new revision of (turn, annotator, round); the previous one stays as
        history. Two concurrent saves both land, one after the other, and neither is lost."""
        version = taxonomy_version or turn.conversation.study.taxonomy_version
        for attempt in range(3):
            try:
                with transaction.atomic():
                    previous = (
                        cls.objects.filter(
                            turn=turn, annotator=annotator, round=round, is_current=True
                        )
                        .prefetch_related("types")
                        .first()
                    )
                    if (
                        previous is not None
                        and not previous.split_pending
                        and previous.same_as(types, note, evidence, confidence, span)
                    ):
                        # a double-submitted form changes nothing the second time
                        return previous
                    if previous is not None:
                        cls.objects.filter(pk=previous.pk).update(is_current=False)
                    annotation = cls.objects.create(
                        turn=turn,
                        annotator=annotator,
                        round=round,
                        taxonomy_version=version,
                        note=note,
                        evidence=evidence,
                        confidence=confidence,
                        source=source,
                        **(span.fields() if span else {}),
                    )
                    annotation.types.add(*types)  # a new row: set() would read its types first
                    if round == 1:  # the card is done in its annotator's queue
                        mark_done(annotation.annotator_id, [turn.pk])
                return annotation
            except IntegrityError:
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")

    def same_as(self, types, note: str, evidence: str, confidence: int | None, span=None) -> bool:
        return (
            self.codes == frozenset(t.code for t in types)
            and (self.note, self.evidence, self.confidence) == (note, evidence, confidence)
            and self.span == span
        )

    @property
    def span(self) -> EvidenceSpan | None:
        """Where the evidence is quoted from, or None (free-text evidence, or none)."""
        if self.evidence_turn_id is None:
            return None
        return EvidenceSpan(
            self.evidence_turn_id,
            self.evidence_part,
            self.evidence_start,
            self.evidence_end,
            self.evidence_part_index,
        )

    @property
    def codes(self) -> frozenset[str]:
        """The label set as type codes (codes are stable across taxonomy versions)."""
        return frozenset(t.code for t in self.types.all())

    @classmethod
    def submit(cls, *, turn: Turn, group: Group, annotator, round: int = 1, **fields) -> Annotation:
        """What every entry point (page, API, import) calls: check that `round` is open for
        this card, record the labels, and move the card on (agreed, disputed, escalated).
        The card's state row is locked first, so two annotators submitting at the same
        moment are seen one after the other and the card never misses its transition."""
        from .proposals import Proposal

        with transaction.atomic():
            state = CardState.lock(turn, group)
            state.check_open_for(round)
            annotation = cls.record(turn=turn, annotator=annotator, round=round, **fields)
            state.advance()
            # the card's state and round in its annotators' queues (models/queue.py)
            sync_states([(turn.pk, group.pk)])
            # their own answer to a type an expert's decision suggested to them here
            Proposal.objects.answer(annotator, turn)
        return annotation


class RoundClosed(Exception):
    """Labels for a round this card is not in (round 1 after it closed, round 2 too early)."""


class AlreadyDecided(Exception):
    def __init__(self, consensus: Consensus):
        self.consensus = consensus
        who = consensus.decided_by or "its annotators"
        super().__init__(
            f"This card already has a consensus ({consensus.method}, by {who}, "
            f"{consensus.decided_at:%Y-%m-%d %H:%M} UTC): nothing was changed."
        )


class NotDecidable(Exception):
    """A consensus asked for on a card that is not disputed or escalated (still in round 1,
    or nobody has labelled it): its annotators have not disagreed yet."""


class RoundOutOfRange(ValueError):
    """A round asked for past the last one the card can have (the input is wrong)."""


class CardStateQuerySet(models.QuerySet):
    def round_of(self, turn, group) -> CardRound:
        """The round the card is in for `group` (groups sharing a card run their rounds
        apart), as the server decides it: one query."""
        return CardRound(self.filter(turn=turn, group=group).first(), group.study)

    def counts_by_group(self, study: Study) -> dict[int, dict[str, int]]:
        """{group id: {status: cards}}; cards nobody has labelled yet have no row and are
        counted as open by the caller (total turns minus the rest)."""
        out: dict[int, dict[str, int]] = {}
        rows = (
            self.filter(group__study=study)
            .values_list("group_id", "status")
            .annotate(n=models.Count("pk"))
            .order_by()
        )
        for group_id, status, n in rows:
            out.setdefault(group_id, {})[status] = n
        return out

    def with_labelled_by(self, user):
        """Annotate `labelled`: whether `user` has a current label in the round under way,
        so an annotator's "to discuss" queue splits into their turn and waiting for others."""
        mine = Annotation.objects.filter(
            turn_id=OuterRef("turn_id"), annotator=user, round=OuterRef("round"), is_current=True
        )
        return self.annotate(labelled=Exists(mine))

    def involving_type(self, code: str):
        """Cards on which any annotation, in any round, current or revised away, used `code`."""
        used = Annotation.objects.filter(turn_id=OuterRef("turn_id"), types__code=code)
        return self.filter(Exists(used))


class CardRound:
    """A card's round in one group: `round` (1 until the card has a state), and `last`, the
    last open round it can have: 1 + the study's discussion rounds, or one more where an
    accepted proposal sent an escalated card back."""

    def __init__(self, state: CardState | None, study: Study):
        self.state = state
        self.round = state.round if state is not None else 1
        self.study_last = 1 + study.discussion_rounds
        self.last = max(self.study_last, self.round)

    def check_asked(self, asked: int) -> None:
        """The client's round is only checked against the server's: RoundOutOfRange past the
        last round (bad input), RoundClosed for any other round than the card's."""
        if asked > self.last:
            where = "study" if self.last == self.study_last else "card"
            raise RoundOutOfRange(f"this {where} has rounds 1 to {self.last}")
        if asked == self.round:
            return
        if self.state is None:
            raise RoundClosed(f"Round {asked} is not open for this card: it is in round 1 (open).")
        self.state.check_open_for(asked)
        raise RoundClosed(
            f"This card is in round {self.state.round} ({self.state.status}), not round {asked}."
        )


class RoundRules:
    """The round rule on a card's `status` and `round`, in one place: CardState applies it
    to its row, and the batched label import (importers/label_batch.py) to the same values
    in memory, so a submit and an imported record move a card alike."""

    status: str
    round: int

    def check_open_for(self, round: int) -> None:
        if round == 1 and self.status != CardStatus.OPEN:
            raise RoundClosed(
                "This card has left round 1: every annotator of its group has labelled it, "
                "so round-1 labels can no longer change."
            )
        if round > 1 and (self.status != CardStatus.DISPUTED or round != self.round):
            if self.status == CardStatus.DISPUTED:
                raise RoundClosed(f"This card is in round {self.round}, not round {round}.")
            raise RoundClosed(f"Round {round} is not open for this card (it is {self.status}).")

    def step(
        self, n_annotators: int, label_sets: list[frozenset[str]], discussion_rounds: int
    ) -> tuple[bool, str | None]:
        """The rule of `advance` on plain values, so a batched import applies exactly the
        same one: given the group's size and the current label sets of the round under way,
        move status and round in memory. Returns (moved, consensus method or None)."""
        from .decisions import Method

        if self.status not in (CardStatus.OPEN, CardStatus.DISPUTED):
            return False, None
        # an empty group waits for its annotators
        if n_annotators < 1 or len(label_sets) < n_annotators:
            return False, None
        if len(set(label_sets)) == 1:
            self.status = CardStatus.AGREED
            if n_annotators == 1:
                return True, Method.SINGLE
            return True, Method.UNANIMOUS if self.round == 1 else Method.DISCUSSION
        if self.round - 1 >= discussion_rounds:
            self.status = CardStatus.ESCALATED
        else:
            self.status, self.round = CardStatus.DISPUTED, self.round + 1
        return True, None


class CardState(RoundRules, models.Model):
    """Where a card stands in its group. Kept up to date on every submit and decision, so
    queues and per-state counts are indexed lookups, never a scan over labels."""

    # db_index=False on both: the unique (turn, group) and the (group, status) indexes serve
    # lookups by either
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="states", db_index=False)
    group = models.ForeignKey(
        Group, on_delete=models.CASCADE, related_name="card_states", db_index=False
    )
    status = models.CharField(max_length=10, choices=CardStatus.choices, default=CardStatus.OPEN)
    round = models.PositiveSmallIntegerField(default=1, help_text="the round under way")
    updated_at = models.DateTimeField(auto_now=True)

    objects = CardStateQuerySet.as_manager()

    class Meta:
        indexes = [models.Index(fields=["group", "status"])]
        # a card shared by several groups has one state in each
        constraints = [models.UniqueConstraint(fields=["turn", "group"], name="uniq_card_state")]

    def __str__(self) -> str:
        return f"{self.turn_id}: {self.status} (round {self.round})"

    @classmethod
    def lock(cls, turn: Turn, group: Group) -> CardState:
        """The card's state row, created on first use and locked for this transaction."""
        cls.objects.get_or_create(turn=turn, group=group)
        state = (
            cls.objects.select_for_update()
            .select_related("group__study")
            .get(turn=turn, group=group)
        )
        state.turn = turn
        return state

    @property
    def revealed(self) -> bool:
        """Once round 1 is over, the group's labels are no longer blind to each other."""
        return self.status != CardStatus.OPEN

    def current_labels(self, round: int | None = None) -> dict[int, Annotation]:
        """{annotator id: current annotation} of the group's annotators in `round`."""
        annotations = (
            Annotation.objects.current()
            .filter(
                turn_id=self.turn_id,
                round=round or self.round,
                annotator__in=self.group.annotators.all(),
            )
            .prefetch_related("types")
        )
        return {a.annotator_id: a for a in annotations}

    def advance(self) -> Consensus | None:
        """Move on once every annotator of the group has labelled the round under way:
        identical sets -> consensus (unanimous in round 1, discussion later); different ->
        round 2 opens, or after the study's discussion rounds, escalated to the moderator.
        A group of one annotator has no rounds: the labels are its consensus (`single`)."""
        from .decisions import Consensus

        if self.status not in (CardStatus.OPEN, CardStatus.DISPUTED):
            return None
        labels = self.current_labels()
        if any(a.split_pending for a in labels.values()):
            # a label of a split type waits for its annotator's side: nothing is guessed
            return None
        moved, method = self.step(
            self.group.annotators.count(),
            [a.codes for a in labels.values()],
            self.group.study.discussion_rounds,
        )
        if not moved:
            return None
        consensus = None
        if method is not None:
            consensus = Consensus.create_for(self, method, next(iter(labels.values())).types.all())
        self.save(update_fields=["status", "round", "updated_at"])
        return consensus

    @classmethod
    def decide(cls, turn: Turn, group: Group, moderator, types, rationale: str = "") -> Consensus:
        """The moderator's word on a disputed or escalated card. Two moderators deciding at
        the same moment: the row lock makes the second wait and then find the card decided
        (AlreadyDecided); the partial unique index on current consensus is the backstop.
        A card still in round 1 is refused (NotDecidable): deciding it would end round 1 for
        its annotators without their labels. Every entry point comes through here."""
        from .decisions import Consensus, Method

        with transaction.atomic():
            state = cls.lock(turn, group)
            existing = Consensus.objects.current().filter(turn=turn, group=group).first()
            if existing is not None:
                raise AlreadyDecided(existing)
            if state.status not in (CardStatus.DISPUTED, CardStatus.ESCALATED):
                raise NotDecidable(
                    "Round 1 is still open for this card: its annotators label it blind "
                    "first; a consensus is decided only on a disputed or escalated card. "
                    "Nothing was changed."
                    if state.status == CardStatus.OPEN
                    else f"This card is {state.status}: a consensus is decided only on a "
                    "disputed or escalated card. Nothing was changed."
                )
            try:
                with transaction.atomic():
                    consensus = Consensus.create_for(
                        state, Method.MODERATOR, types, decided_by=moderator, rationale=rationale
                    )
            except IntegrityError:
                current = Consensus.objects.current().get(turn=turn, group=group)
                raise AlreadyDecided(current) from None
            state.status = CardStatus.AGREED
            state.save(update_fields=["status", "updated_at"])
            sync_states([(turn.pk, group.pk)])
        return consensus

    def reopen(self) -> None:
        """Send a decided or escalated card back to its annotators for one more round (a
        proposal accepted on it): the consensus stays in the history, no longer current."""
        from .decisions import Consensus

        Consensus.objects.current().filter(turn_id=self.turn_id, group_id=self.group_id).update(
            is_current=False
        )
        if self.status != CardStatus.OPEN:
            self.status, self.round = CardStatus.DISPUTED, self.round + 1
            self.save(update_fields=["status", "round", "updated_at"])
            sync_states([(self.turn_id, self.group_id)])


class Comment(models.Model):
    """The discussion thread of a disputed card: annotators and the moderator."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="comments")
    # the group whose discussion this is: groups sharing a card discuss apart
    group = models.ForeignKey(
        Group, null=True, blank=True, on_delete=models.CASCADE, related_name="comments"
    )
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    round = models.PositiveSmallIntegerField()
    text = models.TextField(validators=[TextLimit("comment")])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["created_at", "id"]

    def __str__(self) -> str:
        return f"{self.author} on {self.turn_id}"


class SkipKind(models.TextChoices):
    SKIP = "skip", "skipped"
    FLAG = "flag", "flagged"


class CardSkip(models.Model):
    """An annotator put a card off: skipped it, or flagged it for later with a reason. Either
    way the card comes back at the end of their queue; flags are listed for the lead. One row
    per annotator and card: the latest skip or flag replaces the one before."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="skips")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="card_skips"
    )
    kind = models.CharField(max_length=4, choices=SkipKind.choices, default=SkipKind.SKIP)
    reason = models.TextField(blank=True, validators=[TextLimit("flag")])
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "turn"], name="one_skip_per_card")
        ]

    def __str__(self) -> str:
        return f"{self.annotator} {self.kind} {self.turn_id}"

    @classmethod
    def put_off(cls, turn: Turn, annotator, kind: str, reason: str = "") -> CardSkip:
        """Record a skip or flag now, in place of the annotator's earlier one on the card."""
        with transaction.atomic():
            row, _ = cls.objects.update_or_create(
                turn=turn,
                annotator=annotator,
                defaults={"kind": kind, "reason": reason, "created_at": timezone.now()},
            )
            mark_put_off(row.annotator_id, row.turn_id, row.created_at)
        return row


class CardTime(models.Model):
    """Active time an annotator spent on a card: the tab visible and input within the last
    minute. The browser reports it in small increments, added with F() so two tabs never
    lose each other's time."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="times")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="card_times"
    )
    active_ms = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["annotator", "turn"], name="one_time_per_card")
        ]

    def __str__(self) -> str:
        return f"{self.annotator} {self.active_ms} ms on {self.turn_id}"
