"""dump_study: a study's rows to one file (fileformat.py), streamed model by model in id
order, in one snapshot of the database (REPEATABLE READ on PostgreSQL: annotators may go on
working while it runs)."""

from __future__ import annotations

import base64
from collections import Counter

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils import timezone

from .. import storage
from ..db.snapshot import read_snapshot
from . import graph
from .fileformat import FORMAT, VERSION, BackupError, encode, migration_state, open_out

CHUNK = 2000
FILE_PART = 1 << 20  # bytes of a job's file per line
USER_FIELDS = ("username", "first_name", "last_name", "email", "is_active", "date_joined")
# the lookup from each taxonomy model to its version
TO_VERSION = {
    "taxonomy.TaxonomyVersion": "pk",
    "taxonomy.Axis": "version",
    "taxonomy.Category": "axis__version",
    "taxonomy.Type": "axis__version",
}
TO_TAXONOMY = {
    "taxonomy.Taxonomy": "pk",
    "taxonomy.TaxonomyVersion": "taxonomy",
    "taxonomy.Axis": "version__taxonomy",
    "taxonomy.Category": "axis__version__taxonomy",
    "taxonomy.Type": "axis__version__taxonomy",
}


def dump_study(slug: str, path: str) -> Counter:
    counts: Counter = Counter()
    with read_snapshot():  # one snapshot for every query
        study = _study(slug)
        with open_out(path) as out:
            _write(study, out, counts)
    return counts


def _study(slug: str):
    from annotation.models import Study

    study = Study.objects.filter(slug=slug).first()
    if study is None:
        known = ", ".join(Study.objects.order_by("slug").values_list("slug", flat=True)[:20])
        raise BackupError(f"no study {slug!r} here (studies: {known or 'none'})")
    return study


def _write(study, out, counts: Counter) -> None:
    out.write(
        {
            "format": FORMAT,
            "version": VERSION,
            "study": study.slug,
            "dumped_at": timezone.now().isoformat(),
            "database": connection.vendor,
            "migrations": migration_state(),
        }
    )
    _users(study, out, counts)
    taxonomies = _taxonomies(study)
    for label in graph.TAXONOMY_MODELS:
        lookup = {f"{TO_TAXONOMY[label]}__in": taxonomies}
        _block(label, graph.model(label).objects.filter(**lookup), out, counts)
    for label in graph.STUDY_MODELS:
        if label in graph.DERIVED:  # rebuilt on load
            continue
        rows = graph.model(label).objects.filter(**{graph.scope_path(label): study.pk})
        _block(label, rows, out, counts)
    _files(study, out, counts)
    out.write({"end": {"counts": dict(counts)}})


def _scoped(label: str, study):
    return graph.model(label).objects.filter(**{graph.scope_path(label): study.pk})


def _block(label: str, rows, out, counts: Counter) -> None:
    fields = graph.fields(graph.model(label))
    names = [f.attname for f in fields]
    out.write({"model": label, "fields": names})
    counts[label] += 0
    for row in rows.order_by("pk").values_list("pk", *names).iterator(chunk_size=CHUNK):
        out.write([encode(v) for v in row])
        counts[label] += 1


def _relations(target_labels: set[str]):
    """(study model label, field) of every foreign key into one of `target_labels`."""
    for label in graph.STUDY_MODELS:
        for f in graph.fields(graph.model(label)):
            if f.is_relation and graph.label(f.related_model) in target_labels:
                yield label, f


def _users(study, out, counts: Counter) -> None:
    ids: set[int] = set()
    for label, f in _relations({graph.user_model_label()}):
        values = _scoped(label, study).exclude(**{f.attname: None}).values_list(f.attname)
        ids.update(v for (v,) in values.distinct().iterator())
    users = get_user_model().objects.filter(pk__in=ids).order_by("pk")
    for row in users.values("pk", *USER_FIELDS):
        row["id"] = row.pop("pk")
        out.write({"user": {k: encode(v) for k, v in row.items()}})
        counts["auth.User"] += 1


def _taxonomies(study) -> list[int]:
    """The taxonomies of every version the study's rows name, each dumped with all its
    versions (its evolution)."""
    from taxonomy.models import TaxonomyVersion

    versions: set[int] = set()
    for label, f in _relations(set(TO_VERSION)):
        path = TO_VERSION[graph.label(f.related_model)]
        lookup = f.name if path == "pk" else f"{f.name}__{path}"
        values = _scoped(label, study).exclude(**{f.attname: None}).values_list(lookup)
        versions.update(v for (v,) in values.distinct().iterator())
    rows = TaxonomyVersion.objects.filter(pk__in=versions).values_list("taxonomy_id", flat=True)
    return sorted(set(rows))


def job_files(job_id: int) -> list[str]:
    """The stored names (annotation/storage.py) of the files a job keeps."""
    return [
        name
        for top in (storage.IMPORTS, storage.EXPORTS)
        for name in storage.stored_files(storage.job_folder(top, job_id))
    ]


def _files(study, out, counts: Counter) -> None:
    for job_id in _scoped("annotation.Job", study).order_by("pk").values_list("pk", flat=True):
        for relative in job_files(job_id):
            with storage.open_stored(relative) as stream:
                first = True
                while (data := stream.read(FILE_PART)) or first:
                    record = {"file": relative, "job": job_id}
                    out.write({**record, "data": base64.b64encode(data).decode("ascii")})
                    first = False
            counts["files"] += 1
