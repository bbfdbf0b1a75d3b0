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
        """Return the latest version of a preset taxonomy (what a new study starts on),
        creating it once: from its data file, and for a preset whose file says it evolved
        (`"version": N, "evolution": {"from": N-1, "recast": ...}`) from its earlier version
        (presets/history/SLUG.vN-1.json) through TaxonomyVersion.derive, so that studies on
        the earlier version can move to it (annotation/evolution/). A preset version is
        marked `preset_version`; a study's own versions are not."""
        path = PRESET_DIR / f"{slug}.json"
        if not path.exists():
            known = ", ".join(sorted(p.stem for p in PRESET_DIR.glob("*.json")))
            raise ValueError(f"unknown taxonomy preset {slug!r} (known: {known})")
        data = json.loads(path.read_text(encoding="utf-8"))
        latest = data.get("version", 1)
        existing = TaxonomyVersion.objects.filter(
            taxonomy__slug=slug, preset_version=latest
        ).first()
        return existing or _preset_version(slug, latest, data)

    @classmethod
    @transaction.atomic
    def create_from_data(cls, data: dict, preset_version: int | None = None) -> TaxonomyVersion:
        taxonomy = cls.objects.create(
            slug=data["slug"],
            name=data["name"],
            description=data.get("description", ""),
            source=data.get("source", ""),
        )
        version = TaxonomyVersion.objects.create(
            taxonomy=taxonomy, number=1, preset_version=preset_version
        )
        for a_order, axis_data in enumerate(data["axes"]):
            _create_axis(version, axis_data, a_order)
        return version


def _create_axis(version: TaxonomyVersion, axis_data: dict, order: int, hotkey=None) -> Axis:
    """An axis of `version` from preset data ({code, name, multi_select, max_labels, when,
    categories: [{name, types: [{code, name, definition, example, hotkey, share}]}]}).
    `hotkey(type data)`: the key a new type takes (default: the data's own)."""
    axis = Axis.objects.create(
        version=version,
        code=axis_data["code"],
        name=axis_data["name"],
        multi_select=axis_data.get("multi_select", True),
        max_labels=axis_data.get("max_labels"),
        when=axis_data.get("when") or {},
        order=order,
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
                hotkey=hotkey(type_data) if hotkey else type_data.get("hotkey", ""),
                reported_share=type_data.get("share"),
                order=t_order,
            )
    return axis


PRESET_HISTORY = PRESET_DIR / "history"


def preset_data(slug: str, version: int) -> dict:
    """A preset's data as of its `version`: the preset file for its latest version, the
    history file (presets/history/SLUG.vN.json) for an earlier one."""
    data = json.loads((PRESET_DIR / f"{slug}.json").read_text(encoding="utf-8"))
    if data.get("version", 1) == version:
        return data
    path = PRESET_HISTORY / f"{slug}.v{version}.json"
    if not path.exists():
        raise ValueError(f"taxonomy preset {slug!r} has no version {version} ({path.name})")
    return json.loads(path.read_text(encoding="utf-8"))


def preset_evolution(data: dict) -> dict:
    """The derive() spec that makes a preset version from the one before it: its
    `evolution` with each recast's new axes ("into": axis codes of the data) filled in from
    the data's axes."""
    evolution = data.get("evolution") or {}
    axes = {a["code"]: a for a in data["axes"]}
    spec: dict = {}
    for key in ("add", "rename", "merge", "split"):
        if key in evolution:
            spec[key] = evolution[key]
    if "recast" in evolution:
        spec["recast"] = [
            {**item, "into": [axes[code] for code in item["into"]]} for item in evolution["recast"]
        ]
    return spec


@transaction.atomic
def _preset_version(slug: str, version: int, data: dict | None = None) -> TaxonomyVersion:
    """Preset `slug`'s version `version`, made once (see Taxonomy.load_preset)."""
    taxonomy = Taxonomy.objects.select_for_update().filter(slug=slug).first()
    existing = TaxonomyVersion.objects.filter(taxonomy__slug=slug, preset_version=version).first()
    if existing:
        return existing
    data = data or preset_data(slug, version)
    evolution = data.get("evolution")
    if not evolution:
        if taxonomy is not None:
            raise ValueError(
                f"taxonomy {slug!r} exists without its preset version {version}: "
                "it was not made from the preset"
            )
        return Taxonomy.create_from_data(data, preset_version=version)
    parent = _preset_version(slug, evolution["from"])
    new, _ = parent.derive(**preset_evolution(data))
    new.preset_version = version
    new.save(update_fields=["preset_version"])
    return new


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
    # which version of its preset this is (Taxonomy.load_preset), null for a study's own
    preset_version = models.PositiveSmallIntegerField(null=True, blank=True)
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
        conditional = [c[0].axis for c in per_axis.values() if c[0].axis.when]
        if conditional:
            axes = {a.code: a for a in self.axes.all()}
            chosen_codes = {
                axis.code: [t.code for t in c] for c in per_axis.values() for axis in [c[0].axis]
            }
            for axis in conditional:
                check_when(axis, chosen_codes, axes)

    def axis_conditions(self) -> dict[str, dict[str, list[str]]]:
        """{axis code: its `when`} of the axes that have one."""
        return {a.code: a.when for a in self.axes.all() if a.when}

    def code_map(self) -> dict[str, list[str]]:
        """`mapping` as {old code: [new codes]}: one code for a kept, renamed or merged type,
        several for a split one (each label of it waits for its annotator to choose) or a
        recast one (fan_outs: the label takes them all, one on each new axis), none for a
        type dropped on purpose. Versions made before merge and split stored {old: new code
        or null}; both read the same here. A recast type is stored {"each": [codes]}."""
        out: dict[str, list[str]] = {}
        for old, new in (self.mapping or {}).items():
            if new is None:
                out[old] = []
            elif isinstance(new, str):
                out[old] = [new]
            elif isinstance(new, dict):
                out[old] = list(new["each"])
            else:
                out[old] = list(new)
        return out

    def fan_outs(self) -> set[str]:
        """The old codes of recast types: each goes to all of its new codes at once (one on
        each of the axes that replaced its axis), nothing for an annotator to choose."""
        return {old for old, new in (self.mapping or {}).items() if isinstance(new, dict)}

    def split_codes(self) -> set[str]:
        """The old codes of split types: each label of one waits for its annotator."""
        fan_outs = self.fan_outs()
        return {c for c, t in self.code_map().items() if len(t) > 1 and c not in fan_outs}

    def changes(self) -> dict:
        """What this version changed against its parent, read from the mapping and the two
        versions' types: {"added": [Type], "renamed": [(old name, Type)], "merged":
        [([old Type], Type)], "split": [(old Type, [Type])], "recast": [(old Type, [Type, one
        per new axis])]} (empty lists for version 1)."""
        out: dict = {"added": [], "renamed": [], "merged": [], "split": [], "recast": []}
        if self.parent_id is None:
            return out
        old, new, mapping = self.parent.types_by_code(), self.types_by_code(), self.code_map()
        fan_outs = self.fan_outs()
        sources: dict[str, list[str]] = {}
        for code, targets in mapping.items():
            if code in fan_outs:
                if code in old:
                    out["recast"].append((old[code], [new[t] for t in targets if t in new]))
            elif len(targets) == 1:
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
        recast: list[dict] | None = None,
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
        `recast`: [{"axis": an axis code, "into": [axis data as a preset has it (code, name,
        multi_select, max_labels, when, categories with their types, each with its code)],
        "map": {each type code of the axis: [new codes, at most one per new axis]}}]: the
        axis is replaced by the new axes, in its place, and each of its types by the types
        it maps to, all of them: a label of it carries one code on each of those axes
        (stored {"each": [codes]}, TaxonomyVersion.fan_outs), nothing for anyone to choose.
        The new axes' conditions (`when`) must hold for every mapped set. A recast type's
        key goes to the first of its new types that has none yet (pressed, it still picks
        part of what it meant); the other new types take keys never used.
        Raises ValueError naming the change and the code when a change cannot be made;
        nothing is created then."""
        add, rename, merge, split = add or [], rename or {}, merge or [], split or []
        # numbers are max+1 per taxonomy: two studies deriving at once must not collide
        Taxonomy.objects.select_for_update().get(pk=self.taxonomy_id)
        known = self.types_by_code()
        mapping, merges = _plan_changes(known, rename, merge, split)
        used_codes = set(
            Type.objects.filter(axis__version__taxonomy_id=self.taxonomy_id).values_list(
                "code", flat=True
            )
        )
        recasts = _plan_recast(self, known, rename, mapping, recast or [], used_codes)
        number = self.taxonomy.versions.aggregate(n=models.Max("number"))["n"] + 1
        # the keys as the annotators know them: the form's, stored ones and handed-out ones
        shown = type_keys(self.type_list(), self.retired_keys)
        kept_keys = {c: k for c, k in shown.items() if len(k) == 1 and mapping.get(c) == [c]}
        # a recast type's key goes to the first of its new types without one yet: the key
        # still picks (part of) what it meant
        inherited: dict[str, str] = {}
        for code in known:
            targets = mapping.get(code)
            key = shown.get(code, "")
            if isinstance(targets, dict) and len(key) == 1:
                free = [t for t in targets["each"] if t not in inherited]
                if free:
                    inherited[free[0]] = key
        retired = set(self.retired_keys) | {
            k
            for c, k in shown.items()
            if len(k) == 1 and c not in kept_keys and k not in inherited.values()
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
        hotkeys = set(kept_keys.values()) | set(inherited.values())

        def recast_key(type_data: dict) -> str:
            if type_data["code"] in inherited:
                return inherited[type_data["code"]]
            hotkey = fresh_key(hotkeys, retired)
            hotkeys.add(hotkey)
            return hotkey

        order = 0
        for axis in self.axes.prefetch_related("categories__types"):
            if axis.code in recasts:
                for axis_data in recasts[axis.code]["into"]:
                    made = _create_axis(new, axis_data, order, hotkey=recast_key)
                    axes[made.code] = made
                    for category in made.categories.all():
                        categories[(made.code, category.name)] = category
                    order += 1
                continue
            new_axis = Axis.objects.create(
                version=new,
                code=axis.code,
                name=axis.name,
                multi_select=axis.multi_select,
                max_labels=axis.max_labels,
                when=axis.when,
                order=order,
            )
            order += 1
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
        used_codes |= {
            t["code"]
            for item in recasts.values()
            for a in item["into"]
            for c in a["categories"]
            for t in c["types"]
        }
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


def _plan_recast(
    version: TaxonomyVersion,
    known: dict[str, Type],
    rename: dict[str, str],
    mapping: dict[str, list[str]],
    recast: list[dict],
    used_codes: set[str],
) -> dict[str, dict]:
    """Check the recasts against the version (derive's `recast`) and record each recast
    type in `mapping` as {"each": [new codes]}. Returns {old axis code: the recast}."""
    axes = {a.code: a for a in version.axes.all()}
    # a code already used means the same thing again only on an axis of the same code (a
    # study's own version recast as its preset was)
    used_on: dict[str, set[str]] = {}
    for code, axis_code in Type.objects.filter(
        axis__version__taxonomy_id=version.taxonomy_id
    ).values_list("code", "axis__code"):
        used_on.setdefault(code, set()).add(axis_code)
    out: dict[str, dict] = {}
    for item in recast:
        code = item.get("axis")
        what = f"recast of axis {code!r}"
        if code not in axes:
            raise ValueError(f"{what}: unknown axis (axes: {', '.join(axes)})")
        if code in out:
            raise ValueError(f"{what}: the axis is recast twice")
        into = item.get("into") or []
        if not into:
            raise ValueError(f"{what}: say the axes it becomes")
        out[code] = item
    new_axes: dict[str, dict] = {}
    for code, item in out.items():
        for axis_data in item["into"]:
            a = axis_data.get("code")
            if not a or not axis_data.get("name") or not axis_data.get("categories"):
                raise ValueError(f"recast of axis {code!r}: a new axis needs a code, a name "
                                 f"and categories, got {a!r}")  # fmt: skip
            if a in new_axes or (a in axes and a not in out):
                raise ValueError(f"recast of axis {code!r}: axis code {a!r} is already taken")
            new_axes[a] = axis_data
    remaining = {c: [t.code for t in known.values() if t.axis.code == c] for c in axes}
    axis_types: dict[str, set[str]] = {c: set(v) for c, v in remaining.items() if c not in out}
    new_code_axis: dict[str, str] = {}
    for a, axis_data in new_axes.items():
        axis_types[a] = set()
        for category in axis_data["categories"]:
            for t in category.get("types") or []:
                tc = t.get("code")
                if not tc or not t.get("name"):
                    raise ValueError(f"axis {a!r}: a new type needs a code and a name")
                if (tc in used_codes and used_on.get(tc, set()) != {a}) or tc in new_code_axis:
                    raise ValueError(
                        f"axis {a!r}: type code {tc!r} was already used in this taxonomy "
                        "(a code means one thing for good)"
                    )
                new_code_axis[tc] = a
                axis_types[a].add(tc)
    for a, axis_data in new_axes.items():
        for other, codes in (axis_data.get("when") or {}).items():
            if other not in axis_types or not set(codes) <= axis_types[other]:
                raise ValueError(
                    f"axis {a!r}: its condition names axis {other!r} and codes "
                    f"{', '.join(codes)}, which the new version does not have"
                )
    for code, item in out.items():
        what = f"recast of axis {code!r}"
        own = remaining[code]
        given = item.get("map") or {}
        unknown = sorted(set(given) - set(own))
        if unknown:
            raise ValueError(f"{what}: {', '.join(unknown)} not a type of the axis")
        targets_of = {a["code"] for a in item["into"]}
        for old in own:
            if old in rename or mapping.get(old) != [old]:
                raise ValueError(f"{what}: {old!r} is also renamed, merged or split")
            targets = list(dict.fromkeys(given.get(old) or []))
            if not targets:
                raise ValueError(f"{what}: no place for type {old!r} (map it to new codes)")
            on = [new_code_axis.get(t) for t in targets]
            if any(a not in targets_of for a in on):
                raise ValueError(
                    f"{what}: {old!r} maps to {', '.join(targets)}, not all codes of its "
                    f"new axes ({', '.join(sorted(targets_of))})"
                )
            if len(set(on)) < len(on):
                raise ValueError(f"{what}: {old!r} maps to two codes of one axis")
            chosen = {a: [t] for a, t in zip(on, targets, strict=True)}
            for a in on:
                when = {k: v for k, v in (new_axes[a].get("when") or {}).items() if k in targets_of}
                names = {k: v["name"] for k, v in new_axes.items()}
                problem = when_error(a, new_axes[a]["name"], when, chosen, names)
                if problem:
                    raise ValueError(f"{what}: {old!r} -> {', '.join(targets)}: {problem}")
            mapping.pop(old)
            mapping[old] = {"each": targets}
    return out


def when_error(
    code: str,
    name: str,
    when: dict[str, list[str]],
    chosen: dict[str, list[str]],
    names: dict[str, str] | None = None,
) -> str | None:
    """Why the codes chosen on axis `code` break its condition `when` ({other axis: [codes],
    each to hold: a label of this axis only when that axis has one of those codes}), given
    the whole label `chosen` ({axis: [codes]}); None when they do not."""
    for other, codes in (when or {}).items():
        if not set(chosen.get(other) or ()) & set(codes):
            shown = (names or {}).get(other, other)
            has = ", ".join(chosen.get(other) or ()) or "none"
            return (
                f"{name}: only when {shown} is {' or '.join(codes)} (axis {code!r}); "
                f"got {', '.join(chosen.get(code) or ())} with {shown} {has}."
            )
    return None


def check_when(axis: Axis, chosen: dict[str, list[str]], axes: dict[str, Axis]) -> None:
    """ValueError naming the axis when the label `chosen` ({axis: [codes]}) breaks the
    condition of `axis` (which has codes in it)."""
    names = {c: a.name for c, a in axes.items()}
    problem = when_error(axis.code, axis.name, axis.when, chosen, names)
    if problem:
        raise ValueError(problem)


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
    # a condition ({other axis code: [its type codes]}): a label may hold a type of this axis
    # only when it holds one of those codes on the other axis (check_selection, the
    # episodes' check_labels, the page's labels.js); {} for none
    when = models.JSONField(default=dict, blank=True)
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

    @property
    def condition(self) -> str:
        """The axis's condition (`when`) in words, as the labels form shows it ("" none)."""
        if not self.when:
            return ""
        names = dict(
            Axis.objects.filter(version_id=self.version_id, code__in=list(self.when)).values_list(
                "code", "name"
            )
        )
        return "; ".join(
            f"only when {names.get(other, other)} is {' or '.join(codes)}"
            for other, codes in self.when.items()
        )

    @property
    def when_json(self) -> str:
        """`when` as JSON, for the page (data-when, labels.js)."""
        return json.dumps(self.when, separators=(",", ":")) if self.when else ""


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
