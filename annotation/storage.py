"""The jobs' files through Django's storage API (`default_storage`, settings STORAGES["default"]:
the filesystem under MEDIA_ROOT by default, an S3 bucket with CARDSORT_STORAGE=s3; README
"Configuration"). Nothing here builds a path under MEDIA_ROOT: a stored file is known by its
name, relative and with forward slashes (`imports/<job id>/<n>-<name>`, `imports/<job id>/
rejected.txt`, `exports/<job id>/<study>-gold.csv`), which is what Job.result_file and a job's
params["files"] keep, so web and worker may mount the storage anywhere.

- `job_name(top, job_id, *parts)` names a file of a job; `job_folder` its folder.
- `save_upload` stores an upload (streamed in chunks: the storage reads `chunks()`; an upload
  spooled to disk is moved, never read into memory).
- `store_local` stores a file written locally (an export, a rejected-records list), replacing
  what the name held: writers that need a real file write a temporary one, then store it.
- `local_copy` gives a stored file as a local path for the readers that need one (the
  importers): the file itself on a filesystem storage, else a temporary copy streamed down.
- `open_stored` opens a stored file for a download (FileNotFoundError when it is gone).
- `delete_stored`, `delete_folder` remove files, and every file below a job's folder.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath

from django.core.files import File
from django.core.files.storage import FileSystemStorage, default_storage

IMPORTS, EXPORTS = "imports", "exports"

CHUNK = 1024 * 1024


def job_folder(top: str, job_id: int) -> str:
    return f"{top}/{job_id}"


def job_name(top: str, job_id: int, *parts: str) -> str:
    return "/".join([job_folder(top, job_id), *(p for p in parts if p)])


def is_safe(name: str) -> bool:
    """A relative name with no `..` part: what a job's params or result_file may name.
    (The filesystem storage refuses a name outside its folder too; this also holds for any
    other storage.)"""
    path = PurePosixPath(name.replace("\\", "/"))
    return bool(name) and not path.is_absolute() and ".." not in path.parts


def save_upload(name: str, upload) -> str:
    """Store an uploaded file under `name`; the name it was stored under."""
    return default_storage.save(name, upload)


class _LocalFile(File):
    """A local file to store: a filesystem storage moves it rather than copy it."""

    def temporary_file_path(self) -> str:
        return self.file.name


def store_local(name: str, path: Path, *, move: bool = False) -> str:
    """Store the local file `path` as `name`, replacing a file of that name (a job run again);
    returns the stored name. With `move`, the local file is given up (moved when the storage
    is the filesystem, else removed once copied)."""
    delete_stored(name)
    with open(path, "rb") as local:
        stored = default_storage.save(name, (_LocalFile if move else File)(local, name=name))
    if move:
        Path(path).unlink(missing_ok=True)
    return stored


def _local_path(name: str) -> Path | None:
    """The stored file or folder `name` as a local path on a filesystem storage, else None
    (another storage may answer path() too, as the in-memory one does: not a real file)."""
    if not isinstance(default_storage, FileSystemStorage):
        return None
    return Path(default_storage.path(name))


def _download(name: str, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with default_storage.open(name, "rb") as stored, target.open("wb") as out:
        shutil.copyfileobj(stored, out, CHUNK)


@contextmanager
def local_copy(name: str, scratch: Path | None = None) -> Iterator[Path]:
    """The stored file `name` as a local path, for as long as the block runs: the file itself
    on a filesystem storage, a temporary copy (in `scratch`, or a temporary folder) otherwise."""
    if (local := _local_path(name)) is not None:
        yield local
        return
    with tempfile.TemporaryDirectory(prefix="cardsort-", dir=scratch) as folder:
        target = Path(folder, PurePosixPath(name).name)
        _download(name, target)
        yield target


@contextmanager
def local_folder(folder: str, scratch: Path | None = None) -> Iterator[Path]:
    """The stored folder `folder` (a chosen folder's upload) as a local directory, for as long
    as the block runs: itself on a filesystem storage, a temporary copy of every file below it
    (streamed down, its layout kept) otherwise."""
    if (local := _local_path(folder)) is not None:
        yield local
        return
    with tempfile.TemporaryDirectory(prefix="cardsort-", dir=scratch) as tmp:
        root = Path(tmp, PurePosixPath(folder).name)
        root.mkdir()
        for name in stored_files(folder):
            _download(name, root.joinpath(*PurePosixPath(name).relative_to(folder).parts))
        yield root


def exists(name: str) -> bool:
    return is_safe(name) and default_storage.exists(name)


def open_stored(name: str) -> File:
    """The stored file `name` opened for reading; FileNotFoundError when it is not there (or
    the name is not one a job could have written)."""
    if not exists(name):
        raise FileNotFoundError(name)
    return default_storage.open(name, "rb")


def delete_stored(name: str) -> bool:
    """Remove the stored file `name`; whether there was one."""
    if not exists(name):
        return False
    default_storage.delete(name)
    return True


def _walk(folder: str) -> Iterator[str]:
    try:
        folders, files = default_storage.listdir(folder)
    except (FileNotFoundError, NotADirectoryError):
        return
    for name in files:
        yield f"{folder}/{name}"
    for sub in folders:
        yield from _walk(f"{folder}/{sub}")


def stored_files(folder: str) -> list[str]:
    """Every stored file below `folder`, sorted."""
    return sorted(_walk(folder.rstrip("/"))) if is_safe(folder) else []


def delete_folder(folder: str) -> int:
    """Remove every stored file below `folder` (and, on a filesystem storage, the folders
    left empty); how many files were removed. A name that is not one a job writes removes
    nothing."""
    if not is_safe(folder):
        return 0
    names = stored_files(folder)
    for name in names:
        default_storage.delete(name)
    root = _local_path(folder)
    if root is not None and root.is_dir():
        shutil.rmtree(root, ignore_errors=True)
    return len(names)
