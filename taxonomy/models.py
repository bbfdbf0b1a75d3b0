"""Taxonomy -> version -> axis -> category -> type. A version is frozen once used; a change
makes a new version with a mapping from the old codes (issue 3 builds the migration).
Proposals: a new type suggested on a card, decided by the study's experts."""

from __future__ import annotations

import json
from pathlib import Path

from django.conf import settings
from django.db import models, transaction
from django.utils import timezone
from django.utils.text import slugify

PRESET_DIR = Path(__file__).resolve().parent / "presets"


class Taxonomy(models.Model):
    slug = models.SlugField(unique=True)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source = models.TextField(blank=True)

    def __str__(self) -> str:
        return self.name

    @classmethod
    def load_preset(cls, slug: str) -> TaxonomyVersion:
        """Return version 1 of a preset taxonomy, creating it from its data file once."""
        existing = TaxonomyVersion.objects.filter(taxonomy__slug=slug, number=1).first()
        if existing:
            return existing
        path = PRESET_DIR / f"{slug}.json"
        if not path.exists():
            known = ", ".join(sorted(p.stem for p in PRESET_DIR.glob("*.json")))
            raise ValueError(f"unknown taxonomy preset {slug!r} (known: {known})")
        return cls.create_from_data(json.loads(path.read_text(encoding="utf-8")))

    @classmethod
    @transaction.atomic
    def create_from_data(cls, data: dict) -> TaxonomyVersion:
        taxonomy = cls.objects.create(
            slug=data["slug"],
            name=data["name"],
            description=data.get("description", ""),
            source=data.get("source", ""),
        )
        version = TaxonomyVersion.objects.create(taxonomy=taxonomy, number=1)
        for a_order, axis_data in enumerate(data["axes"]):
            axis = Axis.objects.create(
                version=version,
                code=axis_data["code"],
                name=axis_data["name"],
                multi_select=axis_data.get("multi_select", True),
                max_labels=axis_data.get("max_labels"),
                order=a_order,
            )
            for c_order, cat_data in enumerate(axis_data["categories"]):
                category = Category.objects.create(axis=axis, name=cat_data["name"], order=c_order)
                for t_order, type_data in enumerate(cat_data["types"]):
                    Type.objects.create(
                        category=category,
                        axis=axis,
                        code=type_data["code"],
                        name=type_data["name"],
                        definition=type_data.get("definition", ""),
                        example=type_data.get("example", ""),
                        hotkey=type_data.get("hotkey", ""),
                        reported_share=type_data.get("share"),
                        order=t_order,
                    )
        return version


class TaxonomyVersion(models.Model):
    taxonomy = models.ForeignKey(Taxonomy, on_delete=models.CASCADE, related_name="versions")
    number = models.PositiveIntegerField()
    frozen = models.BooleanField(default=False)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.PROTECT)
    # old type code -> new type code (or null when dropped on purpose); see DESIGN.md
    mapping = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["taxonomy", "number"], name="uniq_taxonomy_version")
        ]

    def __str__(self) -> str:
        return f"{self.taxonomy.slug} v{self.number}"

    def freeze(self) -> None:
        if not self.frozen:
            TaxonomyVersion.objects.filter(pk=self.pk).update(frozen=True)
            self.frozen = True

    def type_list(self) -> list[Type]:
        """Every type of this version in the taxonomy's order, with axis and category: one
        query, what every labels form and table of the version needs."""
        return list(
            Type.objects.filter(axis__version_id=self.pk).select_related("axis", "category")
        )

    def types_by_code(self) -> dict[str, Type]:
        return {t.code: t for t in Type.objects.filter(axis__version=self).select_related("axis")}

    def check_selection(self, types: list[Type]) -> None:
        """The one per-axis label limit (form, importer, API): a single-select axis takes one
        type per card, a multi-select one at most its max_labels (none: no limit). Raises
        ValueError naming the axis and its limit. `types` need their axis loaded."""
        per_axis: dict[int, list[Type]] = {}
        for t in types:
            per_axis.setdefault(t.axis_id, []).append(t)
        for chosen in per_axis.values():
            axis = chosen[0].axis
            limit = axis.max_labels if axis.multi_select else 1
            if limit and len(chosen) > limit:
                codes = ", ".join(t.code for t in chosen)
                raise ValueError(
                    f"{axis.name}: at most {limit} type(s) per card. "
                    f"Got {codes} (axis {axis.code!r})."
                )

    @transaction.atomic
    def derive(
        self, *, add: list[dict] | None = None, rename: dict[str, str] | None = None
    ) -> tuple[TaxonomyVersion, dict[str, str]]:
        """A new version: a copy of this one with the changes, and `mapping` {old code: new
        code}. Codes are stable (a rename changes the name only), so every old code maps to
        itself and existing labels stay valid. Returns (version, {added name: its code}).

        `add`: [{"name", "definition", "axis": axis code (default the first),
        "category": an existing category name of that axis (default "Proposed", created),
        "example"}]. The code is slugified from the name and never reuses a code of any
        version of this taxonomy (a code means one thing for good). The hotkey is the next
        free digit 1-9 of the version, if any.
        `rename`: {code: new name}."""
        add, rename = add or [], rename or {}
        # numbers are max+1 per taxonomy: two studies deriving at once must not collide
        Taxonomy.objects.select_for_update().get(pk=self.taxonomy_id)
        known = self.types_by_code()
        unknown = sorted(set(rename) - set(known))
        if unknown:
            raise ValueError(f"rename: unknown type code(s) {', '.join(unknown)}")
        number = self.taxonomy.versions.aggregate(n=models.Max("number"))["n"] + 1
        new = TaxonomyVersion.objects.create(
            taxonomy_id=self.taxonomy_id,
            number=number,
            parent=self,
            mapping={code: code for code in known},
        )
        axes: dict[str, Axis] = {}
        categories: dict[tuple[str, str], Category] = {}
        for axis in self.axes.prefetch_related("categories__types"):
            new_axis = Axis.objects.create(
                version=new,
                code=axis.code,
                name=axis.name,
                multi_select=axis.multi_select,
                max_labels=axis.max_labels,
                order=axis.order,
            )
            axes[axis.code] = new_axis
            for category in axis.categories.all():
                new_cat = Category.objects.create(
                    axis=new_axis, name=category.name, order=category.order
                )
                categories[(axis.code, category.name)] = new_cat
                Type.objects.bulk_create(
                    Type(
                        category=new_cat,
                        axis=new_axis,
                        code=t.code,
                        name=rename.get(t.code, t.name),
                        definition=t.definition,
                        example=t.example,
                        hotkey=t.hotkey,
                        reported_share=t.reported_share,
                        order=t.order,
                    )
                    for t in category.types.all()
                )
        used_codes = set(
            Type.objects.filter(axis__version__taxonomy_id=self.taxonomy_id).values_list(
                "code", flat=True
            )
        )
        hotkeys = {t.hotkey for t in known.values() if t.hotkey}
        added: dict[str, str] = {}
        for item in add:
            axis_code = item.get("axis") or next(iter(axes), None)
            if axis_code not in axes:
                raise ValueError(f"add {item.get('name')!r}: unknown axis {axis_code!r}")
            axis = axes[axis_code]
            cat_name = item.get("category") or PROPOSED_CATEGORY
            category = categories.get((axis_code, cat_name))
            if category is None:
                order = max(
                    (c.order for (a, _), c in categories.items() if a == axis_code), default=-1
                )
                category = Category.objects.create(axis=axis, name=cat_name, order=order + 1)
                categories[(axis_code, cat_name)] = category
            code = _free_code(item["name"], used_codes)
            used_codes.add(code)
            hotkey = next((d for d in "123456789" if d not in hotkeys), "")
            hotkeys.add(hotkey)
            Type.objects.create(
                category=category,
                axis=axis,
                code=code,
                name=item["name"],
                definition=item.get("definition", ""),
                example=item.get("example", ""),
                hotkey=hotkey,
                order=category.types.count(),
            )
            added[item["name"]] = code
        return new, added


PROPOSED_CATEGORY = "Proposed"


def _free_code(name: str, used: set[str]) -> str:
    base = slugify(name).replace("-", "_")[:90] or "proposed_type"
    code, n = base, 1
    while code in used:
        n += 1
        code = f"{base}_{n}"
    return code


class Axis(models.Model):
    version = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="axes")
    code = models.SlugField()
    name = models.CharField(max_length=200)
    multi_select = models.BooleanField(default=True)
    max_labels = models.PositiveSmallIntegerField(null=True, blank=True)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "id"]
        constraints = [models.UniqueConstraint(fields=["version", "code"], name="uniq_axis_code")]

    def __str__(self) -> str:
        return self.name


class Category(models.Model):
    axis = models.ForeignKey(Axis, on_delete=models.CASCADE, related_name="categories")
    name = models.CharField(max_length=200)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["order", "id"]
        verbose_name_plural = "categories"

    def __str__(self) -> str:
        return self.name


class Type(models.Model):
    """A leaf of the taxonomy: what an annotator picks. `code` is stable across versions."""

    category = models.ForeignKey(Category, on_delete=models.CASCADE, related_name="types")
    axis = models.ForeignKey(Axis, on_delete=models.CASCADE, related_name="types")
    code = models.SlugField(max_length=100)
    name = models.CharField(max_length=200)
    definition = models.TextField(blank=True)
    example = models.TextField(blank=True)
    hotkey = models.CharField(max_length=1, blank=True)
    reported_share = models.CharField(max_length=20, blank=True, null=True)
    order = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["axis__order", "category__order", "order", "id"]
        constraints = [models.UniqueConstraint(fields=["axis", "code"], name="uniq_type_code")]

    def __str__(self) -> str:
        return self.code

    def save(self, *args, **kwargs) -> None:
        if self.axis_id is None and self.category_id is not None:
            self.axis_id = self.category.axis_id
        super().save(*args, **kwargs)


class ProposalStatus(models.TextChoices):
    PENDING = "pending"
    ACCEPTED = "accepted"  # a new taxonomy version has the type
    MAPPED = "mapped"  # an existing type covers it; suggested to the proposer, never stored
    REJECTED = "rejected"


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

    study = models.ForeignKey(
        "annotation.Study", on_delete=models.CASCADE, related_name="proposals"
    )
    turn = models.ForeignKey("annotation.Turn", on_delete=models.CASCADE, related_name="proposals")
    proposer = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="proposals"
    )
    name = models.CharField(max_length=200)
    definition = models.TextField()
    reason = models.TextField(help_text="why none of the existing types fits")
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
    decision_reason = models.TextField(blank=True)
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
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["study", "status"])]

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

    def accept(self, by, *, category: str | None = None, reason: str = "") -> str:
        """A new taxonomy version with the type (in `category` of the proposal's axis, or a
        new "Proposed" one); the study switches to it and the card goes back to its
        annotators for one more round. Labels stay valid: codes are stable."""
        from annotation.models import CardState, CardStatus, Study

        with transaction.atomic():
            locked = self._lock_pending()
            # one accept at a time per study: each derives from the version the last made.
            # No join in the locking query: PostgreSQL rechecks a joined row that changed
            # while we waited against the old row of the other table, and finds nothing.
            study = Study.objects.select_for_update().get(pk=locked.study_id)
            current = study.taxonomy_version
            axis_code = locked.axis.code if locked.axis else None
            if (
                category
                and not Category.objects.filter(
                    axis__version=current, axis__code=axis_code, name=category
                ).exists()
            ):
                raise ProposalError(f"no category {category!r} in {current}")
            turn = locked.turn
            new, added = current.derive(
                add=[
                    {
                        "name": locked.name,
                        "definition": locked.definition,
                        "axis": axis_code,
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
        from annotation.models import CardState, CardStatus

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
