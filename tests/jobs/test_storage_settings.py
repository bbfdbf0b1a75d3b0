"""CARDSORT_STORAGE chooses where the job files go (config/settings.py): the filesystem under
MEDIA_ROOT by default, an S3 bucket through django-storages with CARDSORT_STORAGE=s3 and its
bucket variables; a missing bucket or an unknown storage is refused naming the variable. Each
case is a process started with the environment under test (the settings are read at import)."""

from __future__ import annotations

import ast

import pytest

from tests.security.test_production_settings import manage, production_env, settings_of


def _default_storage(env: dict) -> dict:
    return ast.literal_eval(settings_of(env, "STORAGES")[0])["default"]


def test_by_default_the_job_files_are_on_the_filesystem(tmp_path):
    assert _default_storage(production_env(tmp_path)) == {
        "BACKEND": "django.core.files.storage.FileSystemStorage"
    }


def test_s3_is_a_setting_with_its_bucket_region_endpoint_and_prefix(tmp_path):
    env = production_env(
        tmp_path,
        CARDSORT_STORAGE="s3",
        CARDSORT_S3_BUCKET="lab-cardsort",
        CARDSORT_S3_REGION="eu-central-1",
        CARDSORT_S3_ENDPOINT_URL="https://minio.example.org:9000",
        CARDSORT_S3_PREFIX="/study-a/",
    )
    storage = _default_storage(env)
    assert storage["BACKEND"] == "storages.backends.s3.S3Storage"
    options = storage["OPTIONS"]
    assert (options["bucket_name"], options["region_name"]) == ("lab-cardsort", "eu-central-1")
    assert options["endpoint_url"] == "https://minio.example.org:9000"
    assert (options["location"], options["default_acl"]) == ("study-a", "private")
    assert options["file_overwrite"] is False


@pytest.mark.parametrize(
    "extra, said",
    [
        ({"CARDSORT_STORAGE": "s3"}, "CARDSORT_STORAGE=s3 needs CARDSORT_S3_BUCKET"),
        ({"CARDSORT_STORAGE": "ftp"}, "CARDSORT_STORAGE='ftp': use filesystem"),
    ],
)
def test_a_storage_set_wrong_is_refused_naming_the_variable(tmp_path, extra, said):
    out = manage(production_env(tmp_path, **extra), "check")
    assert out.returncode != 0
    assert said in out.stderr, out.stderr[-2000:]
