"""Uploaded files (the lead's imports of conversations and of annotations, the API's import):
a size limit per file, safe names for our stored copies, and their removal once an import
has succeeded (settings CARDSORT_UPLOAD_MAX_BYTES and CARDSORT_UPLOAD_KEEP_DAYS;
docs/configuration.md).

- `UploadSizeLimit`, the first of FILE_UPLOAD_HANDLERS, stops reading a file at the limit
  (nothing more of it is written to the temporary directory) and notes its name on the
  request; the views answer with a message naming the file and the limit (`too_large`).
- `safe_name` gives the name our copy is stored under: one path component, bounded, with the
  extension kept; the job keeps the name the lead chose, for its messages.
- `job_ended` removes a successful import's uploads (or leaves them for the days configured);
  `purge_uploads` (manage.py) removes the expired ones. The rejected records' list
  (rejected.txt, the job's download) is never removed with them.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import timedelta

from django.conf import settings
from django.core.files.uploadhandler import FileUploadHandler, SkipFile
from django.utils import timezone

# -- size ------------------------------------------------------------------------------------

DEFAULT_MAX_BYTES = 200 * 1024 * 1024


def max_upload_bytes() -> int:
    return int(getattr(settings, "CARDSORT_UPLOAD_MAX_BYTES", DEFAULT_MAX_BYTES))


def shown_size(n: int) -> str:
    """200 MB, 1.5 MB, 900 KB, 120 bytes."""
    for unit, size in (("GB", 1024**3), ("MB", 1024**2), ("KB", 1024)):
        if n >= size:
            return f"{n / size:.1f}".removesuffix(".0") + f" {unit}"
    return f"{n} bytes"


class UploadSizeLimit(FileUploadHandler):
    """Passes each chunk on to the next handlers until a file grows past the limit; then the
    file is skipped (the rest of it is read and dropped, so the browser gets an answer, not a
    reset connection) and its name is noted in request.uploads_too_large."""

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        if self.received > max_upload_bytes():
            self.request.__dict__.setdefault("uploads_too_large", []).append(self.file_name)
            raise SkipFile()
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handlers make the file


def too_large(request) -> str:
    """The refusal naming each file over the limit, or "" (reads the body if not yet read)."""
    request = getattr(request, "_request", request)  # a DRF request wraps Django's
    request.FILES  # noqa: B018 -- parses the upload, which fills uploads_too_large
    names = request.__dict__.get("uploads_too_large", [])
    if not names:
        return ""
    listed = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
    limit = max_upload_bytes()
    return (
        f"Not imported: {listed} is larger than {shown_size(limit)} ({limit:,} bytes), the "
        "most an uploaded file may be (setting CARDSORT_UPLOAD_MAX_MB). Split the file, or "
        "ask the server's administrator to raise the limit."
    )


# -- names -----------------------------------------------------------------------------------

MAX_NAME_BYTES = 100  # in UTF-8, the extension included; a file system allows 255
# the extension(s) kept: format sniffing and containers look at them (.jsonl.gz, .md, ...)
_EXTENSION = re.compile(r"(?:\.[A-Za-z0-9]{1,10}){1,2}$")
_UNSAFE = re.compile(r"[^\w.-]")  # \w: letters and digits of any script, and "_"


def _fit(text: str, n_bytes: int) -> str:
    """The longest prefix of `text` of at most n_bytes in UTF-8."""
    return text.encode("utf-8")[:n_bytes].decode("utf-8", "ignore")


def _once(name: str) -> str:
    name = unicodedata.normalize("NFKC", name or "")
    name = re.split(r"[/\\]", name)[-1]  # the last part of a path, either separator
    name = re.sub(r"_+", "_", _UNSAFE.sub("_", name.strip()))  # spaces, NUL, controls...
    match = _EXTENSION.search(name)
    ext = match.group(0) if match else ""  # ".jsonl" alone: upload.jsonl
    stem = name[: len(name) - len(ext)].strip("._-")  # no hidden file, no "..", no "-x"
    stem = _fit(stem, MAX_NAME_BYTES - len(ext)).rstrip("._-")
    return f"{stem or 'upload'}{ext.lower()}"


def safe_name(name: str) -> str:
    """The name an upload is stored under: one path component of letters, digits, "_", "-"
    and ".", not hidden, at most MAX_NAME_BYTES in UTF-8, its extension kept (lowercased),
    "upload" when nothing of it is left. Stable: a safe name is its own safe name."""
    # passes until nothing changes: NFKC after cutting may compose what the cut split, and a
    # cut may leave a new extension ("0..0..0_" -> "0..0.0" -> "0.0.0"); each pass only
    # shortens the name, so a few are enough
    name = _once(name)
    for _ in range(8):
        again = _once(name)
        if again == name:
            break
        name = again
    return name


# -- keeping and removing ----------------------------------------------------------------------


def keep_days() -> int:
    return int(getattr(settings, "CARDSORT_UPLOAD_KEEP_DAYS", 0))


def remove_uploads(job) -> int:
    """Delete the job's stored uploads (its files, a chosen folder's files; never its
    rejected.txt); the number of files removed. Only names below the job's own folder:
    whatever params say, nothing else is removed."""
    from .storage import IMPORTS, delete_folder, delete_stored, job_folder

    own = job_folder(IMPORTS, job.pk) + "/"
    removed = 0
    for f in job.params.get("files", []):
        if str(f.get("path", "")).startswith(own):
            removed += delete_stored(f["path"])
    folder = job.params.get("folder")
    if folder and str(folder.get("path", "")).startswith(own):
        removed += delete_folder(folder["path"])
    if removed:
        job.params["uploads_removed"] = timezone.now().isoformat()
        job.save(update_fields=["params"])
    return removed


def job_ended(job) -> None:
    """At the end of an import that succeeded: its uploads go now when no day is to be kept
    (CARDSORT_UPLOAD_KEEP_DAYS = 0); otherwise purge_uploads removes them later. A failed
    import keeps them, for the lead to look at and import again."""
    if keep_days() <= 0:
        remove_uploads(job)


def purge(now=None, failed_days: int | None = None) -> int:
    """Remove the uploads of imports that succeeded more than CARDSORT_UPLOAD_KEEP_DAYS ago
    (and, with failed_days, of imports that failed more than that many days ago). Returns
    the number of jobs whose uploads were removed."""
    from .models import Job, JobKind, JobStatus

    now = now or timezone.now()
    uploaded = (JobKind.IMPORT, JobKind.LABEL_IMPORT)
    ended = Job.objects.filter(kind__in=uploaded, finished_at__isnull=False).exclude(
        params__has_key="uploads_removed"
    )
    chosen = ended.filter(status=JobStatus.DONE, finished_at__lte=now - timedelta(days=keep_days()))
    jobs = list(chosen)
    if failed_days is not None:
        failed = ended.filter(
            status=JobStatus.FAILED, finished_at__lte=now - timedelta(days=failed_days)
        )
        jobs += list(failed)
    return sum(1 for job in jobs if remove_uploads(job))
