"""A study's rows in a form that does not depend on the database's ids: every model that
reaches Study (found by walking the model graph, not taken from the backup's own list), rows
in id order, a reference to a study row as the target's position in its model's rows, a user
as the username, a taxonomy row as its natural key; ids inside JSON likewise. Two databases
hold the same study when their forms are equal."""

from __future__ import annotations

import json

from django.contrib.auth import get_user_model
from django.core.files.storage import default_storage

from annotation.backup import graph, jsonids
from annotation.backup.dump import job_files


def canonical(slug: str) -> dict:
    from annotation.models import Study

    study = Study.objects.get(slug=slug)
    # the kept queue's rows are rebuilt on load, in their own order (graph.DERIVED); the
    # property test tests/properties/test_queue_kept.py holds them to the other rows
    labels = sorted(graph.discovered_study_models() - set(graph.DERIVED))
    ids = {label: _ids(label, study) for label in labels}
    position = {label: {pk: i for i, pk in enumerate(pks)} for label, pks in ids.items()}
    users = dict(get_user_model().objects.values_list("pk", "username"))
    taxonomy = _taxonomy_keys()

    def ref(label: str, pk):
        if pk is None:
            return None
        if label in position:
            return ["row", label, position[label].get(pk, "missing")]
        if label == graph.user_model_label():
            return ["user", users[pk]]
        return ["taxonomy", taxonomy[label][pk]]

    def lookup(label: str, pk: int):
        return (
            str(ref(label, pk)) if pk in position.get(label, {}) or label not in position else None
        )

    out = {}
    for label in labels:
        model = graph.model(label)
        rows = []
        values = model.objects.filter(pk__in=ids[label]).order_by("pk").values()
        for row in values.iterator():
            pk = row.pop("id")
            for f in graph.fields(model):
                if f.is_relation:
                    row[f.attname] = ref(graph.label(f.related_model), row[f.attname])
                elif label == "annotation.Study" and f.name == "slug":
                    row["slug"] = "*"
                elif f.name in jsonids.JSON_FIELDS.get(label, ()):
                    row[f.name] = _json(label, f.name, row[f.name], pk, position, lookup)
                else:
                    row[f.attname] = _plain(row[f.attname])
            rows.append(row)
        out[label] = rows
    out["users"] = sorted(
        get_user_model()
        .objects.filter(username__in=[r[1] for r in _referenced_users(out)])
        .values_list("username", "date_joined", "is_active")
    )
    out["users"] = [[u, d.isoformat(), a] for u, d, a in out["users"]]
    out["taxonomy"] = _taxonomy_rows(study, ref)
    out["files"] = [
        [position["annotation.Job"][job], relative.split("/", 2)[2], _read(relative).hex()]
        for job in ids["annotation.Job"]
        for relative in job_files(job)
    ]
    return out


def _read(name: str) -> bytes:
    with default_storage.open(name, "rb") as stored:
        return stored.read()


def _ids(label: str, study) -> list[int]:
    rows = graph.model(label).objects.filter(**{graph.scope_path(label): study.pk})
    return list(rows.order_by("pk").values_list("pk", flat=True))


def _taxonomy_keys() -> dict:
    from taxonomy.models import Axis, Category, Taxonomy, TaxonomyVersion, Type

    versions = {v.pk: (v.taxonomy.slug, v.number) for v in TaxonomyVersion.objects.all()}
    axes = {a.pk: (*versions[a.version_id], a.code) for a in Axis.objects.all()}
    return {
        "taxonomy.Taxonomy": dict(Taxonomy.objects.values_list("pk", "slug")),
        "taxonomy.TaxonomyVersion": versions,
        "taxonomy.Axis": axes,
        "taxonomy.Category": {c.pk: (*axes[c.axis_id], c.name) for c in Category.objects.all()},
        "taxonomy.Type": {t.pk: (*axes[t.axis_id], t.code) for t in Type.objects.all()},
    }


def _taxonomy_rows(study, ref) -> dict:
    """Every row of the study's taxonomy, every version (its evolution)."""
    from annotation.backup.dump import TO_TAXONOMY

    taxonomy = study.taxonomy_version.taxonomy_id
    out = {}
    for label in graph.TAXONOMY_MODELS:
        model = graph.model(label)
        rows = model.objects.filter(**{TO_TAXONOMY[label]: taxonomy}).order_by("pk").values()
        out[label] = sorted(
            json.dumps(
                {
                    f.attname: ref(graph.label(f.related_model), row[f.attname])
                    if f.is_relation
                    else _plain(row[f.attname])
                    for f in graph.fields(model)
                },
                sort_keys=True,
                default=str,
            )
            for row in rows
        )
    return out


def _json(label, field, value, pk, position, lookup):
    if label == "annotation.Job":
        own = position[label][pk]
        return jsonids.remap_job(field, value, pk, own, lookup)
    if label == "annotation.BoardEvent":
        return jsonids.remap_board(value, lookup, lambda _label, _old: "reserved")
    return jsonids.remap_ids(label, field, value, lookup)


def _plain(value):
    if hasattr(value, "isoformat"):
        return value.isoformat()
    return value


def _referenced_users(out: dict):
    for rows in out.values():
        for row in rows:
            for v in row.values():
                if isinstance(v, list) and v and v[0] == "user":
                    yield v


def main(slugs: list[str]) -> None:
    """Print the form of these studies as JSON (run in a subprocess: tests/backup)."""
    print(json.dumps({s: canonical(s) for s in slugs}, sort_keys=True, default=str))
