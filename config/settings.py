"""The one settings module. Everything that differs between the embedded default and
production is read from the environment; with nothing set, the app runs on a SQLite file
and a Celery broker that needs no server (kombu's filesystem transport)."""

from __future__ import annotations

import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


DATA_DIR = Path(os.environ.get("CARDSORT_DATA_DIR", BASE_DIR / "var"))
DEBUG = env_bool("DEBUG", True)
SECRET_KEY = os.environ.get("SECRET_KEY", "dev-only-insecure-key-change-me")
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "django_htmx",
    "template_partials",
    "taxonomy",
    "annotation",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# SQLite by default. WAL and IMMEDIATE transactions let the web process and the embedded
# worker write to the same file without "database is locked" errors.
_sqlite_path = DATA_DIR / "cardsort.sqlite3"
DATABASES = {
    "default": dj_database_url.config(
        default=f"sqlite:///{_sqlite_path}", conn_max_age=env_int("CONN_MAX_AGE", 0)
    )
}
# A kept connection (CONN_MAX_AGE) is checked before a request uses it: after a database
# restart the next request reconnects instead of failing on the dead connection
# (tests/faults).
DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file, not memory, so a real worker process can share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / f"test-{os.getpid()}.sqlite3")}
IS_SQLITE = DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", DATA_DIR / "static"))
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", DATA_DIR / "media"))
MEDIA_URL = "media/"
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
# A `.specstory/history` folder chosen on the import page holds a file per session.
DATA_UPLOAD_MAX_NUMBER_FILES = 10_000
# -- Limits (annotation/limits.py, annotation/uploads.py; README "Configuration") --
# An uploaded file (an import's) may be at most CARDSORT_UPLOAD_MAX_MB; bigger ones are
# refused with a message naming them. Files over FILE_UPLOAD_MAX_MEMORY_SIZE are streamed to
# a temporary file, never held in memory; DATA_UPLOAD_MAX_MEMORY_SIZE bounds the rest of a
# request (its fields), not its files.
CARDSORT_UPLOAD_MAX_BYTES = int(os.environ.get("CARDSORT_UPLOAD_MAX_MB", "200")) * 1024 * 1024
FILE_UPLOAD_HANDLERS = [
    "annotation.uploads.UploadSizeLimit",
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "django.core.files.uploadhandler.TemporaryFileUploadHandler",
]
# Days an import's uploads stay after it succeeded (0: removed at once); `manage.py
# purge_uploads` removes the expired ones. A failed import keeps its uploads.
CARDSORT_UPLOAD_KEEP_DAYS = int(os.environ.get("CARDSORT_UPLOAD_KEEP_DAYS", "0"))
# Free text people type, in characters: an annotation's note and evidence quote; comments,
# rationales and proposals' texts (a flag's reason has FlagForm's 2,000).
CARDSORT_MAX_NOTE_CHARS = int(os.environ.get("CARDSORT_MAX_NOTE_CHARS", "10000"))
CARDSORT_MAX_EVIDENCE_CHARS = int(os.environ.get("CARDSORT_MAX_EVIDENCE_CHARS", "20000"))
CARDSORT_MAX_COMMENT_CHARS = int(os.environ.get("CARDSORT_MAX_COMMENT_CHARS", "20000"))

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
}
SPECTACULAR_SETTINGS = {
    "TITLE": "cardsort API",
    "DESCRIPTION": "Card sorting of human-LLM coding conversations.",
    "VERSION": "0.1.0",
}

# Celery. With no CELERY_BROKER_URL the broker is a folder on disk (no server to install);
# the embedded `make run` starts a worker beside the web server.
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "filesystem://")
if CELERY_BROKER_URL.startswith("filesystem://"):
    _broker_dir = DATA_DIR / "broker"
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
    for _sub in ("queue", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_IGNORE_RESULT = True

# A job nobody picked up after this many seconds is shown as waiting for a worker.
JOB_WAITING_WARNING_SECONDS = env_int("JOB_WAITING_WARNING_SECONDS", 10)
# A running job whose worker gave no sign of life for this long is marked failed (its worker
# was killed or crashed); workers beat every few seconds while they run a job.
JOB_LOST_SECONDS = env_int("JOB_LOST_SECONDS", 120)

# Conversation text on the pages (annotation/messages.py): a message longer than this many
# characters is kept whole but shown cut there, its full text one click away as plain
# text; the earlier turns of a card come this many at a time ("Show earlier turns").
CARDSORT_MESSAGE_DISPLAY_LIMIT = env_int("CARDSORT_MESSAGE_DISPLAY_LIMIT", 200_000)
CARDSORT_CONTEXT_TURNS = env_int("CARDSORT_CONTEXT_TURNS", 20)

# LLM split proposals (annotation/intake/llm.py): any OpenAI-compatible chat completions
# endpoint. Off unless both the base URL and the model are set; the key is optional.
CARDSORT_LLM_BASE_URL = os.environ.get("CARDSORT_LLM_BASE_URL", "").strip()
CARDSORT_LLM_MODEL = os.environ.get("CARDSORT_LLM_MODEL", "").strip()
CARDSORT_LLM_API_KEY = os.environ.get("CARDSORT_LLM_API_KEY", "").strip()
CARDSORT_LLM_TIMEOUT = env_int("CARDSORT_LLM_TIMEOUT", 60)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

if not DEBUG:
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }

for _dir in (DATA_DIR, STATIC_ROOT):
    _dir.mkdir(parents=True, exist_ok=True)

# Email: invitations and password reset (annotation/accounts/). Printed to the console by
# default (the embedded run shows each mail in its log); sent over SMTP once EMAIL_HOST is set.
EMAIL_HOST = os.environ.get("EMAIL_HOST", "").strip()
EMAIL_BACKEND = os.environ.get(
    "EMAIL_BACKEND",
    "django.core.mail.backends.smtp.EmailBackend"
    if EMAIL_HOST
    else "django.core.mail.backends.console.EmailBackend",
)
EMAIL_PORT = env_int("EMAIL_PORT", 587)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
EMAIL_TIMEOUT = env_int("EMAIL_TIMEOUT", 20)
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "cardsort <cardsort@localhost>")
# how long an invitation's set-password link works; a password reset link, PASSWORD_RESET_TIMEOUT
INVITATION_DAYS = env_int("INVITATION_DAYS", 7)
PASSWORD_RESET_TIMEOUT = env_int("PASSWORD_RESET_TIMEOUT", 60 * 60 * 24)
