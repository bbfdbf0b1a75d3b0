"""What a group or a study decided: a card's consensus in its group and the study's gold
label across groups."""

from __future__ import annotations

from django.conf import settings
from django.db import IntegrityError, models, transaction
from django.db.models import Exists, OuterRef, Q
from django.utils import timezone

from taxonomy.models import TaxonomyVersion, Type

from ..limits import TextLimit
from .corpus import Turn
from .evolution import carried_and_retired
from .rounds import Assignment, CardState
from .study import Group, Study


class Method(models.TextChoices):
    UNANIMOUS = "unanimous"
    DISCUSSION = "discussion"
    MODERATOR = "moderator"
    SINGLE = "single"  # a group of one annotator: their labels are the consensus


class GoldMethod(models.TextChoices):
    GROUPS_AGREE = "groups_agree"  # every group's consensus is the same set (derived, no row)
    LEAD = "lead"  # the groups' consensus labels differ: the lead decided


class ConsensusQuerySet(models.QuerySet):
    def current(self):
        return self.filter(is_current=True)


class Decision(models.Model):
    """What a consensus and a study-level gold label share: who decided, when, on which
    taxonomy version, why; append-only (a later decision keeps the old row, not current)."""

    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(default=timezone.now)
    taxonomy_version = models.ForeignKey(TaxonomyVersion, on_delete=models.PROTECT)
    rationale = models.TextField(blank=True, validators=[TextLimit("rationale")])
    is_current = models.BooleanField(default=True)
    # taxonomy evolution, as on Annotation: the row carried to the new version, and the move
    # that retired this one (the old version's decision as it stood)
    carried_from, retired_by = carried_and_retired()

    class Meta:
        abstract = True

    def __str__(self) -> str:
        return f"{self.turn_id}: {self.method}"

    @property
    def codes(self) -> frozenset[str]:
        return frozenset(t.code for t in self.types.all())


class Consensus(Decision):
    """The gold label of a card in its group, with its provenance. Append-only: a reopened
    card keeps its old consensus with is_current=False."""

    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="consensus")
    group = models.ForeignKey(Group, on_delete=models.CASCADE, related_name="consensus")
    types = models.ManyToManyField(Type, blank=True, related_name="consensus")
    method = models.CharField(max_length=12, choices=Method.choices)
    from_round = models.PositiveSmallIntegerField()

    objects = ConsensusQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "consensus"
        constraints = [
            # one current consensus per card and group: groups sharing a card decide apart
            models.UniqueConstraint(
                fields=["turn", "group"],
                condition=Q(is_current=True),
                name="uniq_current_consensus",
            )
        ]
        indexes = [
            models.Index(
                fields=["retired_by"],
                condition=Q(retired_by__isnull=False),
                name="consensus_retired_by",
            )
        ]

    @classmethod
    def create_for(cls, state: CardState, method: str, types, **fields) -> Consensus:
        consensus = cls.objects.create(
            turn_id=state.turn_id,
            group=state.group,
            method=method,
            from_round=state.round,
            taxonomy_version=state.group.study.taxonomy_version,
            **fields,
        )
        consensus.types.add(*types)  # a new row: set() would read its types first
        return consensus


class StudyGoldQuerySet(models.QuerySet):
    def current(self):
        return self.filter(is_current=True)


class StudyGold(Decision):
    """The study-level gold label of a card several groups labelled (an overlap card) whose
    groups' consensus labels differ: the lead decides it, with the same provenance as a
    consensus. Where the groups agree, the study gold is their common set (method
    `groups_agree`) and needs no row. Append-only: a later decision keeps the old row with
    is_current=False."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="study_gold")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="study_gold")
    types = models.ManyToManyField(Type, blank=True, related_name="study_gold")
    method = models.CharField(max_length=12, choices=GoldMethod.choices, default=GoldMethod.LEAD)

    objects = StudyGoldQuerySet.as_manager()

    class Meta:
        verbose_name_plural = "study gold"
        constraints = [
            models.UniqueConstraint(
                fields=["turn"], condition=Q(is_current=True), name="uniq_current_study_gold"
            )
        ]
        indexes = [
            models.Index(
                fields=["retired_by"],
                condition=Q(retired_by__isnull=False),
                name="study_gold_retired_by",
            )
        ]

    @classmethod
    def disputed_cards(cls, study: Study) -> list[tuple[Turn, list[Consensus]]]:
        """The overlap cards whose groups have all decided and differ, with no study-level
        gold yet: the lead's queue, oldest card first. Reads only the cards with a current
        consensus in two groups or more (the overlap is a share of the study)."""
        shared = (
            Consensus.objects.current()
            .filter(group__study=study)
            .values("turn_id")
            .annotate(n=models.Count("id"))
            .filter(n__gte=2)
            .values("turn_id")
        )
        decided = cls.objects.current().filter(turn_id=OuterRef("turn_id"))
        consensus = (
            Consensus.objects.current()
            .filter(turn_id__in=shared)
            .exclude(Exists(decided))
            .select_related("group", "decided_by", "turn__conversation")
            .prefetch_related("types")
            .order_by("turn__conversation_id", "turn__index", "group__name")
        )
        by_turn: dict[int, list[Consensus]] = {}
        for c in consensus:
            by_turn.setdefault(c.turn_id, []).append(c)
        n_groups = dict(
            Assignment.objects.filter(conversation__turns__in=list(by_turn))
            .values_list("conversation_id")
            .annotate(n=models.Count("id"))
            .order_by()
        )
        out = []
        for rows in by_turn.values():
            turn = rows[0].turn
            n = n_groups.get(turn.conversation_id, 0)
            _, method = study_gold_of([c.codes for c in rows], n, None)
            if method == "pending":
                out.append((turn, rows))
        return out

    @classmethod
    def decide(cls, turn: Turn, lead, types, rationale: str) -> StudyGold:
        """The lead's study-level gold of an overlap card whose groups disagree. A second
        decision (double submit, two leads at once) raises AlreadyDecidedGold: the partial
        unique index on the current row is the backstop."""
        study = turn.conversation.study
        existing = cls.objects.current().filter(turn=turn).first()
        if existing is not None:
            raise AlreadyDecidedGold(existing)
        try:
            with transaction.atomic():
                gold = cls.objects.create(
                    study=study,
                    turn=turn,
                    method=GoldMethod.LEAD,
                    decided_by=lead,
                    taxonomy_version=study.taxonomy_version,
                    rationale=rationale,
                )
                gold.types.set(types)
        except IntegrityError:
            raise AlreadyDecidedGold(cls.objects.current().get(turn=turn)) from None
        return gold


class AlreadyDecidedGold(Exception):
    def __init__(self, gold: StudyGold):
        self.gold = gold
        super().__init__(
            f"This card already has a study-level gold (by {gold.decided_by}, "
            f"{gold.decided_at:%Y-%m-%d %H:%M} UTC): nothing was changed."
        )


def study_gold_of(consensus_sets: list[frozenset], n_groups: int, lead: frozenset | None):
    """(labels, method) of a card's study-level gold from its groups' current consensus
    sets, the number of groups it is assigned to and the lead's decision: the lead's
    decision if any; else the common set when every group has decided and all agree
    (`groups_agree`; a card of one group: that group's consensus); else (None, "pending")
    when every group has decided and they differ (the lead's queue); else (None, None)."""
    if lead is not None:
        return lead, GoldMethod.LEAD
    if n_groups == 0 or len(consensus_sets) < n_groups:
        return None, None
    if len(set(consensus_sets)) == 1:
        return consensus_sets[0], GoldMethod.GROUPS_AGREE
    return None, "pending"
