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
    MAPPED = "mapped"  # an existing type covers it; the card was relabelled
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

    def counts(self) -> dict[str, int]:
        """{status: proposals}, every status present (0 when none)."""
        out = dict.fromkeys(ProposalStatus.values, 0)
        for status, n in self.values_list("status").annotate(n=models.Count("pk")).order_by():
            out[status] = n
        return out


class Proposal(models.Model):
    """A new type suggested on a card because none fits. The study's experts accept it (a
    new taxonomy version with the type, the card back to its annotators), map it to an
    existing type (the proposer's labels get it) or reject it; the decision stays on the row."""

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
    # what the decision did, in words, for the proposer (relabelled, or why not)
    outcome = models.TextField(blank=True)
    mapped_to_code = models.CharField(max_length=100, blank=True)
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
        """An existing type covers the proposal: the proposer's labels of the round under
        way get it (a new revision, source "proposal"), if that round is still open for
        them; otherwise only this row records the mapping, and the outcome says so."""
        from annotation.models import Annotation, CardState, RoundClosed, Source

        with transaction.atomic():
            locked = self._lock_pending()
            version = locked.study.taxonomy_version
            types = version.types_by_code()
            if code not in types:
                raise ProposalError(f"unknown type code {code!r} in {version}")
            target = types[code]
            turn = locked.turn
            group = turn.conversation.group_of(locked.proposer)
            state = CardState.objects.filter(turn=turn, group=group).first()
            round = state.round if state else 1
            who = locked.proposer
            outcome = f"Mapped to {target.name} ({code})."
            if group is None or not group.annotators.filter(pk=who.pk).exists():
                outcome += f" {who} no longer annotates this card: labels unchanged."
            else:
                # their labels of the round under way, else of their latest earlier round
                # (a round 2 they have not labelled yet starts from their round 1)
                mine = (
                    Annotation.objects.current()
                    .filter(turn=turn, annotator=who, round__lte=round)
                    .order_by("-round")
                    .prefetch_related("types__axis")
                    .first()
                )
                labels = _labels_with(mine, target, types)
                if labels is None:
                    limit = target.axis.max_labels
                    outcome += (
                        f" {target.axis.name} allows at most {limit} type(s) per card: "
                        f"{who}'s labels unchanged."
                    )
                else:
                    try:
                        Annotation.submit(
                            turn=turn,
                            group=group,
                            annotator=who,
                            round=round,
                            types=labels,
                            note=mine.note if mine else f"Proposal {locked.name!r} mapped here.",
                            evidence=mine.evidence if mine else "",
                            confidence=mine.confidence if mine else None,
                            source=Source.PROPOSAL,
                        )
                        outcome += f" {who}'s round-{round} labels on the card now include it."
                    except RoundClosed:
                        outcome += (
                            f" The card's round {round} is closed, so only this proposal "
                            f"records the mapping: {who}'s labels unchanged."
                        )
            self._record(
                locked, by, ProposalStatus.MAPPED, reason, mapped_to_code=code, outcome=outcome
            )
        return outcome

    def reject(self, by, *, reason: str) -> str:
        if not reason.strip():
            raise ProposalError("A reason is required to reject a proposal.")
        with transaction.atomic():
            locked = self._lock_pending()
            outcome = "Rejected."
            self._record(locked, by, ProposalStatus.REJECTED, reason.strip(), outcome=outcome)
        return outcome


def _labels_with(mine, target: Type, types: dict[str, Type]) -> list[Type] | None:
    """The proposer's label set plus `target`, as types of the current version (a code the
    version lacks keeps its old type: never silently dropped). A single-select axis swaps
    its type for `target`; None when the axis's max_labels would be exceeded."""
    current = [types.get(t.code, t) for t in mine.types.all()] if mine else []
    if target.axis.multi_select:
        labels = [t for t in current if t.code != target.code] + [target]
    else:
        labels = [t for t in current if t.axis.code != target.axis.code] + [target]
    limit = target.axis.max_labels
    same_axis = [t for t in labels if t.axis.code == target.axis.code]
    if limit and len(same_axis) > limit:
        return None
    return labels
