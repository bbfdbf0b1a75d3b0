"""load_study: a study file (fileformat.py) into this database, in one transaction: every
row gets a new id and its references are remapped (idmap.py); users are matched by username
and the missing ones created without a usable password; the taxonomy is matched by natural
key (taxonomy_load.py). Any error rolls everything back (the job files written too) and
names the record (model and id in the file) and the field."""

from __future__ import annotations

import base64
import tempfile
from collections import Counter, defaultdict
from contextlib import contextmanager
from pathlib import Path

from django.contrib.auth import get_user_model
from django.db import transaction

from .. import storage
from . import graph, jsonids
from .block import Block
from .fileformat import FORMAT, VERSION, BackupError, decoder, migration_state, read_lines
from .idmap import IdMap

BATCH = 1000


@contextmanager
def _timestamps_kept():
    """auto_now / auto_now_add off while loading: the file's timestamps are the truth."""
    changed = []
    for label in (*graph.TAXONOMY_MODELS, *graph.STUDY_MODELS):
        for f in graph.fields(graph.model(label)):
            if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False):
                changed.append((f, f.auto_now, f.auto_now_add))
                f.auto_now = f.auto_now_add = False
    try:
        yield
    finally:
        for f, now, add in changed:
            f.auto_now, f.auto_now_add = now, add


class Loader:
    def __init__(self, path: str, rename: str | None = None) -> None:
        self.path, self.rename = path, rename
        self.maps: dict[str, IdMap] = defaultdict(IdMap)
        self.counts: Counter = Counter()
        self.fixups: list[tuple[str, int, str, str, int, int]] = []
        self.json_rows: list[tuple[str, int, int, dict]] = []
        self.written: list[str] = []  # stored names
        # the files read, each a local file the records' parts are appended to, stored once
        # every row is in
        self._files: dict[str, Path] = {}
        self._scratch: Path | None = None
        self.study = None
        self.done: set[str] = set()
        self._first_user: int | None = None

    # -- the run -------------------------------------------------------------------------

    def run(self) -> Counter:
        lines = read_lines(self.path)
        self._header(next(lines, (0, None)))
        try:
            with tempfile.TemporaryDirectory(prefix="cardsort-load-") as scratch:
                self._scratch = Path(scratch)
                with transaction.atomic(), _timestamps_kept():
                    self._body(lines)
                    for name, local in self._files.items():
                        self.written.append(storage.store_local(name, local, move=True))
        except BaseException:
            for name in self.written:
                storage.delete_stored(name)
            raise
        return self.counts

    def _header(self, first) -> None:
        number, header = first
        if not isinstance(header, dict) or header.get("format") != FORMAT:
            raise BackupError(f"{self.path}: not a cardsort study file (no header line)")
        if header.get("version") != VERSION:
            raise BackupError(
                f"{self.path}: study file version {header.get('version')!r}, this cardsort "
                f"reads version {VERSION}"
            )
        here = migration_state()
        for app, names in (header.get("migrations") or {}).items():
            newer = sorted(set(names) - set(here.get(app, ())))
            if newer:
                raise BackupError(
                    f"{self.path}: written by a newer cardsort (migration {app}.{newer[0]} "
                    "is not applied here): upgrade and migrate, then load"
                )
        from annotation.models import Study

        slug = self.rename or header["study"]
        if Study.objects.filter(slug=slug).exists():
            raise BackupError(
                f"a study {slug!r} exists here already: load it with --as NEWSLUG, or into "
                "an instance without it"
            )
        self.slug = slug

    def _body(self, lines) -> None:
        block = None
        for number, record in lines:
            where = f"{self.path}:{number}"
            if isinstance(record, list):
                if block is None:
                    raise BackupError(f"{where}: a row before any model line")
                block.add(record, where)
            elif "model" in record:
                if block is not None:
                    block.finish()
                block = self._block(record, where)
            elif "user" in record:
                self._user(record["user"], where)
            elif "file" in record:
                if block is not None:
                    block.finish()
                    block = None
                self._file(record, where)
            elif "end" in record:
                if block is not None:
                    block.finish()
                self._finish(record["end"], where)
                return
            else:
                raise BackupError(f"{where}: unknown record {sorted(record)}")
        raise BackupError(f"{self.path}: the file ends before its last line: truncated?")

    def _block(self, record: dict, where: str) -> Block:
        label = record["model"]
        if label in graph.DERIVED or (
            label not in graph.STUDY_MODELS and label not in graph.TAXONOMY_MODELS
        ):
            raise BackupError(f"{where}: model {label} is not part of a study here")
        if label in self.done:
            raise BackupError(f"{where}: a second block of {label}")
        self.done.add(label)
        return Block(self, label, record["fields"], where)

    # -- users ---------------------------------------------------------------------------

    def _user(self, row: dict, where: str) -> None:
        User = get_user_model()
        username = row.get("username")
        if not username:
            raise BackupError(f"{where}: user #{row.get('id')} without a username")
        user = User.objects.filter(username=username).first()
        if user is None:
            fields = {k: v for k, v in row.items() if k not in ("id", "username")}
            if fields.get("date_joined"):
                fields["date_joined"] = decoder(User._meta.get_field("date_joined"))(
                    fields["date_joined"]
                )
            user = User(username=username, **fields)
            user.set_unusable_password()
            user.save()
            self.counts["users created"] += 1
        self.maps["auth.User"].add(int(row["id"]), user.pk)
        self._first_user = self._first_user or user.pk
        self.counts["auth.User"] += 1

    # -- files, fix-ups, the end ------------------------------------------------------------

    def _file(self, record: dict, where: str) -> None:
        old_job = int(record["job"])
        new_job = self.maps["annotation.Job"].get(old_job)
        if new_job is None:
            raise BackupError(f"{where}: file of job #{old_job}, which is not in the file")
        name = jsonids.job_folder(record["file"], old_job, new_job)
        folder = jsonids.FOLDER.match(record["file"])
        if (
            folder is None
            or int(folder.group(2)) != old_job
            or not storage.is_safe(name)
            or not name.startswith(f"{folder.group(1)}/{new_job}/")
        ):
            raise BackupError(f"{where}: {record['file']!r} is outside job #{old_job}'s folders")
        first = name not in self._files
        if first:
            self._files[name] = self._scratch / str(len(self._files))
            self.counts["files"] += 1
        with self._files[name].open("wb" if first else "ab") as out:
            out.write(base64.b64decode(record["data"]))

    def _finish(self, end: dict, where: str) -> None:
        self._apply_fixups()
        self._apply_json()
        if self.study is not None:  # graph.DERIVED: the annotators' kept queues
            from ..models.queue import rebuild

            rebuild(self.study.pk)
        expected = Counter(end.get("counts", {}))
        got = Counter({k: v for k, v in self.counts.items() if k != "users created"})
        for label in set(expected) | set(got):
            if expected[label] != got[label]:
                raise BackupError(
                    f"{where}: the file says {expected[label]} rows of {label}, "
                    f"{got[label]} were read: truncated or altered?"
                )

    def lookup(self, label: str, old: int) -> int | None:
        return self.maps[label].get(old)

    def _apply_fixups(self) -> None:
        by_field: dict[tuple[str, str], list[tuple[int, int]]] = defaultdict(list)
        for label, new_pk, attname, target, old_target, old_pk in self.fixups:
            new_target = self.maps[target].get(old_target)
            if new_target is None:
                raise BackupError(
                    f"{label} #{old_pk}: {attname} points at {target} #{old_target}, "
                    "which is not in the file"
                )
            by_field[(label, attname)].append((new_pk, new_target))
        for (label, attname), pairs in by_field.items():
            model = graph.model(label)
            objs = [model(pk=pk, **{attname: value}) for pk, value in pairs]
            model.objects.bulk_update(objs, [attname], batch_size=BATCH)

    def _apply_json(self) -> None:
        for label, old_pk, new_pk, values in self.json_rows:
            model = graph.model(label)
            if label == "annotation.Job":
                new = {
                    k: jsonids.remap_job(k, v, old_pk, new_pk, self.lookup)
                    for k, v in values.items()
                }
            elif label == "annotation.BoardEvent":
                remap = jsonids.remap_board
                new = {k: remap(v, self.lookup, self._reserve) for k, v in values.items()}
            else:
                new = {k: jsonids.remap_ids(label, k, v, self.lookup) for k, v in values.items()}
            model.objects.filter(pk=new_pk).update(**new)

    def _reserve(self, label: str, old: int) -> int:
        """A new id for a board row deleted before the dump (its undo may recreate it): a
        placeholder row inserted and deleted, so the sequence never hands the id out again."""
        model = graph.model(label)
        values = {"study": self.study, "name": f"(reserved {old})"}
        if label == "annotation.FreeTag":
            values["author_id"] = self._first_user
        placeholder = model.objects.create(**values)
        pk = placeholder.pk
        placeholder.delete()
        self.maps[label].add(old, pk)
        return pk
