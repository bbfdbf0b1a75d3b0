"""One model's rows of a study file: each row's references remapped to this database's ids,
its values checked (the error names the line, the record and the field), then inserted in
batches; a reference to a row not in yet (a nullable forward or self reference) is set
after everything is in (Loader.fixups)."""

from __future__ import annotations

from django.db import DatabaseError, transaction

from . import graph, jsonids
from .fileformat import BackupError, decoder
from .taxonomy_load import Matcher

BATCH = 1000


class Block:
    def __init__(self, loader, label: str, names: list[str], where: str) -> None:
        self.loader, self.label = loader, label
        self.model = graph.model(label)
        by_attname = {f.attname: f for f in graph.fields(self.model)}
        unknown = [n for n in names if n not in by_attname]
        if unknown:
            raise BackupError(f"{where}: {label} has no field {unknown[0]!r} here")
        self.columns = [(n, by_attname[n], decoder(by_attname[n])) for n in names]
        taxonomy = label in graph.TAXONOMY_MODELS
        self.matcher = Matcher(label, self.model, loader.maps) if taxonomy else None
        self.json_fields = jsonids.JSON_FIELDS.get(label, ())
        self.pending: list = []
        self.pending_old: set[int] = set()

    def add(self, row: list, where: str) -> None:
        if len(row) != len(self.columns) + 1:
            n, expected = len(row) - 1, len(self.columns)
            raise BackupError(f"{where}: {self.label} row has {n} values for {expected} fields")
        old, values, deferred = row[0], {}, []
        for (name, field, convert), value in zip(self.columns, row[1:], strict=True):
            if field.is_relation and value is not None:
                value = self._reference(old, name, field, value, deferred, where)
            elif value is not None:
                if convert is not None:
                    try:
                        value = convert(value)
                    except (TypeError, ValueError) as exc:
                        raise BackupError(f"{where}: {self.label} #{old}: {name}: {exc}") from None
                limit = getattr(field, "max_length", None)
                if limit and isinstance(value, str) and len(value) > limit:
                    raise BackupError(
                        f"{where}: {self.label} #{old}: {name} has {len(value)} characters, "
                        f"at most {limit} here"
                    )
            elif not field.null:
                raise BackupError(f"{where}: {self.label} #{old}: {name} is empty, required here")
            values[name] = value
        if self.label == "annotation.Study":
            values["slug"] = self.loader.slug
        if self.matcher is not None:
            self.matcher.add(old, values, where)
            self.loader.counts[self.label] += 1
            return
        self.pending.append((old, self.model(**values), deferred, where))
        self.pending_old.add(old)
        if len(self.pending) >= BATCH:
            self.flush()

    def _reference(self, old, name, field, value, deferred, where):
        target = graph.label(field.related_model)
        if target == self.label and value in self.pending_old:
            self.flush()  # a reference into this batch: put the batch in first
        new = self.loader.maps[target].get(value)
        if new is not None:
            return new
        forward = target == self.label or target not in self.loader.done
        if field.null and forward and target in graph.STUDY_MODELS:
            deferred.append((name, target, value))
            return None
        raise BackupError(
            f"{where}: {self.label} #{old}: {name} points at {target} #{value}, "
            "which is not in the file before it"
        )

    def flush(self) -> None:
        if not self.pending:
            return
        objs = [obj for _, obj, _, _ in self.pending]
        try:
            with transaction.atomic():
                self.model.objects.bulk_create(objs)
        except DatabaseError:
            self._one_by_one()
        loader = self.loader
        for old, obj, deferred, _ in self.pending:
            if obj.pk is None:
                raise BackupError(f"{self.label} #{old}: the database gave no id back")
            loader.maps[self.label].add(old, obj.pk)
            for name, target, value in deferred:
                loader.fixups.append((self.label, obj.pk, name, target, value, old))
            if self.json_fields:
                values = {f: getattr(obj, f) for f in self.json_fields}
                loader.json_rows.append((self.label, old, obj.pk, values))
            loader.counts[self.label] += 1
        if self.label == "annotation.Study":
            loader.study = objs[0]
        self.pending.clear()
        self.pending_old.clear()

    def _one_by_one(self) -> None:
        """Which row the database refused, and why."""
        for _old, obj, _, _where in self.pending:
            obj.pk, obj._state.adding = None, True
        for old, obj, _, where in self.pending:
            try:
                with transaction.atomic():
                    self.model.objects.bulk_create([obj])
            except DatabaseError as exc:
                message = " ".join(str(exc).split())
                raise BackupError(f"{where}: {self.label} #{old}: {message}") from None

    def finish(self) -> None:
        self.flush()
