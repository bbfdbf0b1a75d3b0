"""Proposals of new types, made on a card by an annotator and decided by the lead."""

from __future__ import annotations

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone

from taxonomy.models import Axis, Category, TaxonomyVersion, Type

from ..limits import TextLimit
from .corpus import Turn
from .rounds import CardState, CardStatus
from .study import Study


class ProposalStatus(models.TextChoices):
    PENDING = "pending"
    ACCEPTED = "accepted"  # a new taxonomy version has the type
    MAPPED = "mapped"  # an existing type covers it; suggested to the proposer, never stored
    REJECTED = "rejected"


# -- proposals of new types ---------------------------------------------------------------


class ProposalError(ValueError):
    """A decision that cannot be made as asked; nothing was changed."""


class ProposalDecided(ProposalError):
    def __init__(self, proposal: Proposal):
        self.proposal = proposal
        super().__init__(
            f"This proposal was already {proposal.status} by {proposal.decided_by} on "
            f"{proposal.decided_at:%Y-%m-%d %H:%M} UTC: nothing was changed."
        )


class ProposalQuerySet(models.QuerySet):
    def pending(self):
        return self.filter(status=ProposalStatus.PENDING)

    def decided(self):
        return self.exclude(status=ProposalStatus.PENDING)

    def suggesting(self, user):
        """`user`'s accepted or mapped proposals whose suggested type they have not answered
        yet (by submitting labels on the card since). Pre-ticked, never stored for them."""
        return self.filter(
            proposer=user,
            status__in=[ProposalStatus.ACCEPTED, ProposalStatus.MAPPED],
            answered_at__isnull=True,
        )

    def answer(self, user, turn) -> int:
        """`user` submitted labels on `turn`: the suggestions there are answered."""
        return self.suggesting(user).filter(turn=turn).update(answered_at=timezone.now())

    def suggestions_for(self, user, turn) -> list[str]:
        """The type codes suggested to `user` on `turn`, oldest decision first."""
        rows = self.suggesting(user).filter(turn=turn).order_by("decided_at")
        return [new or mapped for new, mapped in rows.values_list("new_code", "mapped_to_code")]

    def pretick(self, user, turn, codes: set[str], types: dict[str, Type]) -> set[str]:
        """`codes` (what the form would show) plus the types suggested to `user` on `turn`;
        on a single-select axis the suggestion takes the place of the axis's type."""
        ticked = set(codes)
        for code in self.suggestions_for(user, turn):
            target = types.get(code)
            if target is None:  # a code the study's version no longer has
                continue
            if not target.axis.multi_select:
                ticked = {c for c in ticked if c in types and types[c].axis_id != target.axis_id}
            ticked.add(code)
        return ticked

    def counts(self) -> dict[str, int]:
        """{status: proposals}, every status present (0 when none)."""
        out = dict.fromkeys(ProposalStatus.values, 0)
        for status, n in self.values_list("status").annotate(n=models.Count("pk")).order_by():
            out[status] = n
        return out


class Proposal(models.Model):
    """A new type suggested on a card because none fits. The study's experts accept it (a
    new taxonomy version with the type, the card back to its annotators), map it to an
    existing type or reject it; the decision stays on the row. Accept and map suggest the type
    to the proposer (pre-ticked on the card), and never write anyone's labels."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="proposals")
    turn = models.ForeignKey(Turn, on_delete=models.CASCADE, related_name="proposals")
    proposer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="proposals"
    )
    name = models.CharField(max_length=200)
    definition = models.TextField(validators=[TextLimit("definition")])
    reason = models.TextField(
        help_text="why none of the existing types fits", validators=[TextLimit("reason")]
    )
    axis = models.ForeignKey(Axis, null=True, blank=True, on_delete=models.SET_NULL)
    status = models.CharField(
        max_length=10, choices=ProposalStatus.choices, default=ProposalStatus.PENDING
    )
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="decided_proposals",
    )
    decided_at = models.DateTimeField(null=True, blank=True)
    decision_reason = models.TextField(blank=True, validators=[TextLimit("reason")])
    # what the decision did, in words, for the proposer (what they may now do, or why not)
    outcome = models.TextField(blank=True)
    mapped_to_code = models.CharField(max_length=100, blank=True)
    # when the proposer submitted labels on the card after an accept or map: from then on
    # the suggested type is no longer pre-ticked for them
    answered_at = models.DateTimeField(null=True, blank=True)
    new_code = models.CharField(max_length=100, blank=True, help_text="the accepted type's code")
    created_version = models.ForeignKey(
        TaxonomyVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    new_version = models.ForeignKey(
        TaxonomyVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    objects = ProposalQuerySet.as_manager()

    class Meta:
        # the table keeps the name it had in the taxonomy app (a state-only move)
        db_table = "taxonomy_proposal"
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "status"], name="taxonomy_pr_study_i_e22dd1_idx")]

    def __str__(self) -> str:
        return f"{self.name} ({self.status})"

    @property
    def is_pending(self) -> bool:
        return self.status == ProposalStatus.PENDING

    @property
    def mapped_to_name(self) -> str:
        """The name of the type it was mapped to, for pages (codes are for files and the API)."""
        if not self.mapped_to_code:
            return ""
        found = Type.objects.filter(
            axis__version_id=self.study.taxonomy_version_id, code=self.mapped_to_code
        ).values_list("name", flat=True)
        return next(iter(found), self.mapped_to_code)

    @classmethod
    def propose(
        cls, *, study, turn, proposer, name: str, definition: str, reason: str, axis=None
    ) -> Proposal:
        version = study.taxonomy_version
        if axis is None:
            axis = version.axes.first()
        elif axis.version_id != version.pk:
            raise ProposalError(f"axis {axis.code!r} is not in {version}")
        return cls.objects.create(
            study=study,
            turn=turn,
            proposer=proposer,
            name=name,
            definition=definition,
            reason=reason,
            axis=axis,
            created_version=version,
        )

    def _lock_pending(self) -> Proposal:
        """This row, locked for the transaction; a decided one is refused. Two experts
        deciding at once: the second waits for the lock, then finds it decided."""
        # no joins here, for the reason given in accept()
        locked = Proposal.objects.select_for_update().get(pk=self.pk)
        if locked.status != ProposalStatus.PENDING:
            raise ProposalDecided(locked)
        return locked

    def _record(self, locked: Proposal, by, status: str, reason: str, **fields) -> None:
        locked.status, locked.decided_by, locked.decided_at = status, by, timezone.now()
        locked.decision_reason = reason
        for name, value in fields.items():
            setattr(locked, name, value)
        locked.save()
        self.refresh_from_db()

    @property
    def axis_code(self) -> str | None:
        return self.axis.code if self.axis else None

    def check_category(self, version, category: str | None) -> None:
        """ProposalError if `category` (None or "": none) is not a category of the
        proposal's axis in `version`."""
        if (
            category
            and not Category.objects.filter(
                axis__version=version, axis__code=self.axis_code, name=category
            ).exists()
        ):
            raise ProposalError(f"no category {category!r} in {version}")

    def accept(self, by, *, category: str | None = None, reason: str = "") -> str:
        """A new taxonomy version with the type (in `category` of the proposal's axis, or a
        new "Proposed" one); the study switches to it and the card goes back to its
        annotators for one more round. Labels stay valid: codes are stable."""
        with transaction.atomic():
            locked = self._lock_pending()
            # one accept at a time per study: each derives from the version the last made.
            # No join in the locking query: PostgreSQL rechecks a joined row that changed
            # while we waited against the old row of the other table, and finds nothing.
            study = Study.objects.select_for_update().get(pk=locked.study_id)
            current = study.taxonomy_version
            locked.check_category(current, category)
            turn = locked.turn
            new, added = current.derive(
                add=[
                    {
                        "name": locked.name,
                        "definition": locked.definition,
                        "axis": locked.axis_code,
                        "category": category,
                        "example": turn.user_text[:300],
                    }
                ]
            )
            study.taxonomy_version = new
            study.save(update_fields=["taxonomy_version"])
            new.freeze()
            code = added[locked.name]
            outcome = f"Accepted as {code!r} in {new}."
            # the card goes back to the proposer's group (groups sharing a card run apart)
            group = turn.conversation.group_of(locked.proposer)
            state = (
                CardState.objects.select_for_update()
                .filter(turn_id=locked.turn_id, group=group)
                .first()
            )
            if state is not None:
                state.reopen()
                if state.status != CardStatus.OPEN:
                    outcome += f" The card went back to its annotators (round {state.round})."
            outcome += locked._suggestion_outcome(locked.name)
            self._record(
                locked,
                by,
                ProposalStatus.ACCEPTED,
                reason,
                new_version=new,
                new_code=code,
                outcome=outcome,
            )
        return outcome

    def map_to(self, by, code: str, *, reason: str = "") -> str:
        """An existing type covers the proposal. No decision writes an annotator's labels
        (their round-1 labels are their own judgment): the proposer is told, and while a
        round is open for them the card comes back to them with the type pre-ticked, stored
        only if they submit it (`ProposalQuerySet.suggestions_for`)."""
        with transaction.atomic():
            locked = self._lock_pending()
            version = locked.study.taxonomy_version
            types = version.types_by_code()
            if code not in types:
                raise ProposalError(f"unknown type code {code!r} in {version}")
            target = types[code]
            outcome = f"Mapped to {target.name}." + locked._suggestion_outcome(target.name)
            self._record(
                locked, by, ProposalStatus.MAPPED, reason, mapped_to_code=code, outcome=outcome
            )
        return outcome

    def _suggestion_outcome(self, type_name: str) -> str:
        """What happens next for the proposer, in words: the card back in their hands with
        the type pre-ticked, or why not."""
        who, turn = self.proposer, self.turn
        # the card's state in the proposer's group (groups sharing a card run apart)
        group = turn.conversation.group_of(who)
        if group is None or not group.annotators.filter(pk=who.pk).exists():
            return f" {who} no longer annotates this card: nothing more to do."
        state = CardState.objects.filter(turn=turn, group=group).first()
        status = state.status if state else CardStatus.OPEN
        if status in (CardStatus.OPEN, CardStatus.DISPUTED):
            return (
                f" The card is back with {who} with {type_name} pre-ticked; nothing is stored "
                f"until {who} submits."
            )
        return f" The card is {status}, so its labels stay as they are."

    def reject(self, by, *, reason: str) -> str:
        if not reason.strip():
            raise ProposalError("A reason is required to reject a proposal.")
        with transaction.atomic():
            locked = self._lock_pending()
            outcome = "Rejected."
            self._record(locked, by, ProposalStatus.REJECTED, reason.strip(), outcome=outcome)
        return outcome
