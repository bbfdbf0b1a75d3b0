"""Taxonomy -> version -> axis -> category -> type. A version is frozen once used; a change
makes a new version with a mapping from the old codes (add, rename, merge, split:
TaxonomyVersion.derive); annotation/evolution/ carries a study's labels through it.
A leaf of the house: nothing here knows studies or annotations (annotation/models.py holds
the proposals of new types, which point at both)."""

from __future__ import annotations

import json
from pathlib import Path

from django.db import models, transaction
from django.utils.text import slugify

from .keys import fresh_key, type_keys

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
    # old type code -> [new type codes] (code_map; older versions: a code or null); DESIGN.md
    mapping = models.JSONField(default=dict, blank=True)
    # the single keys of the types that earlier versions had and this one has not (merged,
    # split away): never given to another type (taxonomy/keys.py)
    retired_keys = models.CharField(max_length=64, blank=True, default="")
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
        """Every type of this version in the taxonomy's order, with axis (and its version:
        this one, for check_selection) and category: one query, what every labels form and
        table of the version needs."""
        types = list(
            Type.objects.filter(axis__version_id=self.pk).select_related("axis", "category")
        )
        for t in types:
            t.axis.version = self  # no join, no query: the axes are this version's
        return types

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

    def code_map(self) -> dict[str, list[str]]:
        """`mapping` as {old code: [new codes]}: one code for a kept, renamed or merged type,
        several for a split one (each label of it waits for its annotator to choose), none
        for a type dropped on purpose. Versions made before merge and split stored
        {old: new code or null}; both read the same here."""
        out: dict[str, list[str]] = {}
        for old, new in (self.mapping or {}).items():
            if new is None:
                out[old] = []
            elif isinstance(new, str):
                out[old] = [new]
            else:
                out[old] = list(new)
        return out

    def changes(self) -> dict:
        """What this version changed against its parent, read from the mapping and the two
        versions' types: {"added": [Type], "renamed": [(old name, Type)], "merged":
        [([old Type], Type)], "split": [(old Type, [Type])]} (empty lists for version 1)."""
        out: dict = {"added": [], "renamed": [], "merged": [], "split": []}
        if self.parent_id is None:
            return out
        old, new, mapping = self.parent.types_by_code(), self.types_by_code(), self.code_map()
        sources: dict[str, list[str]] = {}
        for code, targets in mapping.items():
            if len(targets) == 1:
                sources.setdefault(targets[0], []).append(code)
            elif len(targets) > 1 and code in old:
                out["split"].append((old[code], [new[t] for t in targets if t in new]))
        for code, t in new.items():
            came_from = sources.get(code, [])
            if len(came_from) > 1:
                out["merged"].append(([old[c] for c in came_from if c in old], t))
            elif code in old and came_from == [code] and old[code].name != t.name:
                out["renamed"].append((old[code].name, t))
            elif not came_from and not any(code in ts for ts in mapping.values()):
                out["added"].append(t)
        return out

    @transaction.atomic
    def derive(
        self,
        *,
        add: list[dict] | None = None,
        rename: dict[str, str] | None = None,
        merge: list[dict] | None = None,
        split: list[dict] | None = None,
    ) -> tuple[TaxonomyVersion, dict[str, str]]:
        """A new version: a copy of this one with the changes, and `mapping` {old code: [new
        codes]} recording them (code_map). Returns (version, {new type's name: its code})
        for every type the changes created (added, merged into a new name, split parts).

        A code means one thing for good: a kept or renamed type keeps its code (a rename
        changes the name only); a new type (added, a merge into a new name, a split part)
        gets a code slugified from its name that no version of this taxonomy ever used; a
        merged or split type's code leaves the version and is never given again.

        `add`: [{"name", "definition", "axis": axis code (default the first),
        "category": an existing category name of that axis (default "Proposed", created),
        "example"}].
        Keys (taxonomy/keys.py): a kept type keeps the key it had on the form, stored now; the
        keys of the types that leave (merged, split) are retired for good; every new type
        (added, a merge into a new name, a split part) takes the first key never used.
        `rename`: {code: new name}.
        `merge`: [{"into": a code of the version or a new type's name, "from": [codes],
        "definition", "example"}]: every type of "from" (and "into", if a code) becomes the
        one type "into", on one axis; into an existing code, that type stays and takes the
        others in; into a name, a new type in the first source's category.
        `split`: [{"code": old code, "into": [{"name", "definition", "example"} or a name,
        at least two]}]: the type is replaced by the parts, in its category; its labels
        wait for their annotators to say which part(s) (annotation/evolution/).
        Raises ValueError naming the change and the code when a change cannot be made;
        nothing is created then."""
        add, rename, merge, split = add or [], rename or {}, merge or [], split or []
        # numbers are max+1 per taxonomy: two studies deriving at once must not collide
        Taxonomy.objects.select_for_update().get(pk=self.taxonomy_id)
        known = self.types_by_code()
        mapping, merges = _plan_changes(known, rename, merge, split)
        number = self.taxonomy.versions.aggregate(n=models.Max("number"))["n"] + 1
        # the keys as the annotators know them: the form's, stored ones and handed-out ones
        shown = type_keys(self.type_list(), self.retired_keys)
        kept_keys = {c: k for c, k in shown.items() if len(k) == 1 and mapping.get(c) == [c]}
        retired = set(self.retired_keys) | {
            k for c, k in shown.items() if len(k) == 1 and c not in kept_keys
        }
        new = TaxonomyVersion.objects.create(
            taxonomy_id=self.taxonomy_id,
            number=number,
            parent=self,
            mapping={},
            retired_keys="".join(sorted(retired)),
        )
        axes: dict[str, Axis] = {}
        categories: dict[tuple[str, str], Category] = {}
        by_id: dict[int, Category] = {}
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
                by_id[category.pk] = new_cat
                Type.objects.bulk_create(
                    Type(
                        category=new_cat,
                        axis=new_axis,
                        code=t.code,
                        name=rename.get(t.code, t.name),
                        definition=t.definition,
                        example=t.example,
                        hotkey=kept_keys.get(t.code, ""),
                        reported_share=t.reported_share,
                        order=t.order,
                    )
                    for t in category.types.all()
                    if mapping.get(t.code) == [t.code]
                )
        used_codes = set(
            Type.objects.filter(axis__version__taxonomy_id=self.taxonomy_id).values_list(
                "code", flat=True
            )
        )
        hotkeys = set(kept_keys.values())
        created: dict[str, str] = {}

        def make(category: Category, item: dict, order: int) -> str:
            name = item["name"].strip()
            if not name:
                raise ValueError("a new type needs a name")
            if name in created:
                raise ValueError(f"two new types are named {name!r}")
            code = free_code(name, used_codes)
            used_codes.add(code)
            hotkey = fresh_key(hotkeys, retired)
            hotkeys.add(hotkey)
            Type.objects.create(
                category=category,
                axis=category.axis,
                code=code,
                name=name,
                definition=item.get("definition", ""),
                example=item.get("example", ""),
                hotkey=hotkey,
                order=order,
            )
            created[name] = code
            return code

        for item, involved in merges:
            into = item["into"]
            if into in known:
                target = into
            else:
                first = known[involved[0]]
                category = by_id[first.category_id]
                target = make(category, {**item, "name": into}, first.order)
            for code in involved:
                mapping[code] = [target]
        for item in split:
            old = known[item["code"]]
            parts = [_part(p) for p in item["into"]]
            codes = [make(by_id[old.category_id], part, old.order) for part in parts]
            mapping[old.code] = codes
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
            make(category, item, category.types.count())
        new.mapping = mapping
        new.save(update_fields=["mapping"])
        return new, created


def _part(part) -> dict:
    return {"name": part} if isinstance(part, str) else dict(part)


def _plan_changes(
    known: dict[str, Type], rename: dict[str, str], merge: list[dict], split: list[dict]
) -> tuple[dict[str, list[str]], list[tuple[dict, list[str]]]]:
    """Check the changes against the version's types. Returns the mapping of the types
    that stay ({code: [code]}; derive adds the merged and split ones) and each merge with
    the codes it takes in (its target's too, when the target is a code). Each code takes
    part in one merge or split at most, and a renamed type must stay."""
    unknown = sorted(set(rename) - set(known))
    if unknown:
        raise ValueError(f"rename: unknown type code(s) {', '.join(unknown)}")
    taken: dict[str, str] = {}
    targets: set[str] = set()

    def claim(code: str, what: str) -> None:
        if code not in known:
            raise ValueError(f"{what}: unknown type code {code!r}")
        if code in taken:
            raise ValueError(f"{what}: {code!r} is already in the {taken[code]}")
        taken[code] = what

    merges = []
    for item in merge:
        into = item.get("into")
        if not isinstance(into, str) or not into.strip():
            raise ValueError("merge: say what the types merge into (a code or a new name)")
        what = f"merge into {into!r}"
        sources = [c for c in dict.fromkeys(item.get("from") or []) if c != into]
        involved = ([into] if into in known else []) + sources
        if len(involved) < 2:
            raise ValueError(f"{what}: a merge takes at least two types")
        for code in involved:
            claim(code, what)
        if len({known[c].axis_id for c in involved}) > 1:
            raise ValueError(f"{what}: the types are on different axes")
        if into in known:
            targets.add(into)
        merges.append((item, involved))
    for item in split:
        code = item.get("code", "")
        what = f"split of {code!r}"
        claim(code, what)
        if len(item.get("into") or []) < 2:
            raise ValueError(f"{what}: a split makes at least two types")
    stays = {code: [code] for code in known if code not in taken or code in targets}
    for code in rename:
        if code not in stays:
            raise ValueError(f"rename: {code!r} is in the {taken[code]}, so it does not stay")
    return stays, merges


PROPOSED_CATEGORY = "Proposed"


def free_code(name: str, used: set[str]) -> str:
    """A type code for `name` not in `used`: its slug (underscores), numbered on a clash;
    a derived version's new types and the open sort's frozen types take theirs here."""
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

    @property
    def rule(self) -> str:
        """The axis's label limit in words, as the labels form shows it (check_selection
        enforces it)."""
        if not self.multi_select:
            return "pick one"
        if self.max_labels:
            return f"at most {self.max_labels}"
        return "any number"


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
