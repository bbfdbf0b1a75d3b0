"""Taxonomy rows of a study file, matched by natural key: a taxonomy by slug, a version by
number, an axis and a type by code, a category by (axis, name, order). A taxonomy missing
here is created with all its versions; a version missing here is added; one present must
hold the same codes and names, or the load is refused (the labels would change meaning)."""

from __future__ import annotations

from .fileformat import BackupError
from .idmap import IdMap

KEYS = {
    "taxonomy.Taxonomy": ("slug",),
    "taxonomy.TaxonomyVersion": ("taxonomy_id", "number"),
    "taxonomy.Axis": ("version_id", "code"),
    "taxonomy.Category": ("axis_id", "name", "order"),
    "taxonomy.Type": ("axis_id", "code"),
}
# the fields that must agree when a row is matched to one already here
SAME = {
    "taxonomy.Axis": ("name",),
    "taxonomy.Category": (),
    "taxonomy.Type": ("name", "category_id"),
}


class Matcher:
    """Maps each row of one taxonomy model, given in the file's order with its references
    already remapped, to a row here, creating the missing ones."""

    def __init__(self, label: str, model, maps: dict[str, IdMap]) -> None:
        self.label, self.model, self.maps = label, model, maps
        self.keys = KEYS[label]
        self.existing = {
            tuple(getattr(obj, f) for f in self.keys): obj
            for obj in model.objects.only(*self.keys, *SAME.get(label, ()))
        }

    def add(self, old: int, values: dict, where: str) -> None:
        key = tuple(values[f] for f in self.keys)
        obj = self.existing.get(key)
        if obj is None:
            obj = self.model.objects.create(**values)
        else:
            for name in SAME.get(self.label, ()):
                if getattr(obj, name) != values[name]:
                    raise BackupError(
                        f"{where}: {self.label} #{old}: {name} is {values[name]!r} in the file "
                        f"but {getattr(obj, name)!r} here: this instance's taxonomy "
                        f"{key} differs from the study's (load it into an instance "
                        "without that taxonomy)"
                    )
        self.maps[self.label].add(old, obj.pk)
