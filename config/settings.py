"""The one settings module. Everything that differs between the embedded default and
production is read from the environment; with nothing set, the app runs on a SQLite file
and a Celery broker that needs no server (kombu's filesystem transport)."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import dj_database_url
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from annotation.db.engines import is_sqlite, sqlite_options

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool = False) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    return int(os.environ.get(name, default))


DATA_DIR = Path(os.environ.get("CARDSORT_DATA_DIR", BASE_DIR / "var"))
# Fail closed: debug only when DEBUG says so (`make run` and `make test` do), and never a
# known key outside debug.
DEBUG = env_bool("DEBUG", False)
_DEVELOPMENT_KEY = "dev-only-insecure-key-change-me"
SECRET_KEY = os.environ.get("SECRET_KEY", "").strip()


def _weak_key_reason(key: str) -> str | None:
    """Why `key` may not sign anything outside debug (Django's check --deploy criteria, which
    only warn), or None. Never says the key itself."""
    if key == _DEVELOPMENT_KEY:
        return "it is the development key, which is public"
    if key.startswith("django-insecure-"):
        return "it starts with django-insecure-, a key made for development"
    if len(key) < 50:
        return f"it has {len(key)} characters, fewer than 50"
    if len(set(key)) < 5:
        return "it has fewer than 5 distinct characters"
    return None


_NEW_KEY = (
    "Set the SECRET_KEY environment variable to a long random string (python -c 'import "
    "secrets; print(secrets.token_urlsafe(50))'), or DEBUG=1 for a development run on your "
    "own machine (make run does)."
)
if not DEBUG and not SECRET_KEY:
    raise ImproperlyConfigured(f"SECRET_KEY is not set. {_NEW_KEY}")
if not DEBUG and (_weak := _weak_key_reason(SECRET_KEY)):
    raise ImproperlyConfigured(f"SECRET_KEY is too weak: {_weak}. {_NEW_KEY}")
SECRET_KEY = SECRET_KEY or _DEVELOPMENT_KEY
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "127.0.0.1,localhost").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]

INSTALLED_APPS = [
    "config",  # first: its runserver (config/management/commands) comes before whitenoise's
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
    "drf_spectacular_sidecar",
    "django_htmx",
    "template_partials",
    "csp",
    "axes",
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
    "csp.middleware.CSPMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # last, as django-axes asks: it turns a locked-out login into the lockout page
    "axes.middleware.AxesMiddleware",
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

# SQLite by default, with its connection options (annotation/db/engines.py: WAL and
# IMMEDIATE transactions, so the web process and the embedded worker share the file).
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
IS_SQLITE = is_sqlite(DATABASES["default"])
if IS_SQLITE:
    DATABASES["default"]["OPTIONS"] = sqlite_options()
    # A file, not memory, so a real worker process can share the test database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / f"test-{os.getpid()}.sqlite3")}
else:
    # PostgreSQL's JIT compiles any query its planner costs above jit_above_cost: a short
    # query over tables not yet analyzed (a new study, a bulk rebuild of the kept queue)
    # spent 1-2 s compiling for a millisecond's work. The app's queries are short: no JIT.
    _options = DATABASES["default"].setdefault("OPTIONS", {})
    _options["options"] = (_options.get("options", "") + " -c jit=off").strip()
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
# django-axes before Django's own backend: a login is refused while its user or its address
# is locked out (settings below).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
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
# -- Limits (annotation/limits.py, annotation/uploads.py; docs/configuration.md) --
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
# An import (conversations, labels) refuses a line (or JSON array element) longer than this
# without holding it, and decompresses a gzip file to at most this (annotation/importers/
# containers.py): a 2 MB gzip may hold 2 GiB.
CARDSORT_MAX_LINE_BYTES = env_int("CARDSORT_MAX_LINE_BYTES", 64 * 1024 * 1024)
CARDSORT_MAX_DECOMPRESSED_BYTES = env_int(
    "CARDSORT_MAX_DECOMPRESSED_BYTES", 20 * CARDSORT_UPLOAD_MAX_BYTES
)
# Days an import's uploads stay after it succeeded (0: removed at once); `manage.py
# purge_uploads` removes the expired ones. A failed import keeps its uploads.
CARDSORT_UPLOAD_KEEP_DAYS = int(os.environ.get("CARDSORT_UPLOAD_KEEP_DAYS", "0"))
# Free text people type, in characters: an annotation's note and evidence quote; comments,
# rationales and proposals' texts (a flag's reason has FlagForm's 2,000).
CARDSORT_MAX_NOTE_CHARS = int(os.environ.get("CARDSORT_MAX_NOTE_CHARS", "10000"))
CARDSORT_MAX_EVIDENCE_CHARS = int(os.environ.get("CARDSORT_MAX_EVIDENCE_CHARS", "20000"))
CARDSORT_MAX_COMMENT_CHARS = int(os.environ.get("CARDSORT_MAX_COMMENT_CHARS", "20000"))

REST_FRAMEWORK = {
    # the token's class refuses first an address past its failed authentications (below)
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "annotation.api.throttling.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "EXCEPTION_HANDLER": "annotation.api.common.exception_handler",
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    # JSON nested deeper than 100 levels is a 400 before it is parsed (annotation/api/common.py)
    "DEFAULT_PARSER_CLASSES": [
        "annotation.api.parsers.JSONBodyParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 100,
    # Every API request counts against its user's rate, and every one without valid
    # credentials (a 401) against its address's ("anon", annotation/api/throttling.py); past
    # it, 429 with Retry-After. Rates as DRF writes them: N/second, minute, hour or day.
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("API_THROTTLE_ANON", "60/minute"),
        "user": os.environ.get("API_THROTTLE_USER", "1200/minute"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "cardsort API",
    "DESCRIPTION": "Card sorting of human-LLM coding conversations.",
    "VERSION": "0.1.0",
    # schema and docs for a logged-in user or a token only
    "SERVE_PERMISSIONS": ["rest_framework.permissions.IsAuthenticated"],
    # Swagger UI's files from this server (drf-spectacular-sidecar), not a CDN: the
    # Content-Security-Policy allows scripts and styles from this site only
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

# The cache, where the API's throttles count requests: with CACHE_URL (redis://host:port/db,
# production: docker-compose.yml) one Redis shared by every process, so a rate is the rate
# whatever gunicorn worker answers; without it each process's own memory (the embedded run:
# one web process).
CACHE_URL = os.environ.get("CACHE_URL", "")
if CACHE_URL:
    if not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
        raise ImproperlyConfigured(
            f"CACHE_URL must name a Redis server (redis://host:6379/1), not {CACHE_URL!r}"
        )
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": CACHE_URL,
        }
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

# The model client (annotation/judges/client.py: split proposals, judges): any
# OpenAI-compatible chat completions endpoint. Off unless both the base URL and the model
# are set; the key is optional. RETRIES: times a request answered 429/5xx is asked again;
# RPM: requests per minute to the endpoint, shared by every process (0: no limit).
CARDSORT_LLM_BASE_URL = os.environ.get("CARDSORT_LLM_BASE_URL", "").strip()
CARDSORT_LLM_MODEL = os.environ.get("CARDSORT_LLM_MODEL", "").strip()
CARDSORT_LLM_API_KEY = os.environ.get("CARDSORT_LLM_API_KEY", "").strip()
CARDSORT_LLM_TIMEOUT = env_int("CARDSORT_LLM_TIMEOUT", 60)
CARDSORT_LLM_RETRIES = env_int("CARDSORT_LLM_RETRIES", 4)
CARDSORT_LLM_RPM = env_int("CARDSORT_LLM_RPM", 0)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "INFO")},
}

# Login attempts (django-axes): AXES_FAILURE_LIMIT wrong passwords for one username (from any
# address), or from one address (whatever the usernames), lock that username or address out
# for AXES_COOLOFF_MINUTES; a successful login clears the failures of its user and address.
# Behind proxies, LOGIN_PROXY_COUNT=1 (one proxy that appends to X-Forwarded-For) counts the
# client's address rather than the proxy's (annotation/accounts/addresses.py).
AXES_FAILURE_LIMIT = env_int("AXES_FAILURE_LIMIT", 10)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("AXES_COOLOFF_MINUTES", 15))
AXES_LOCKOUT_PARAMETERS = ["username", "ip_address"]
AXES_RESET_ON_SUCCESS = True
# a wrong password during the lockout does not start the wait again
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
# the login page says why and when to come back (429, Retry-After)
AXES_LOCKOUT_CALLABLE = "config.lockout.lockout_response"
LOGIN_PROXY_COUNT = env_int("LOGIN_PROXY_COUNT", 0)
AXES_CLIENT_IP_CALLABLE = "annotation.accounts.addresses.client_address"
# Password reset requests an hour: from one address (past it, 429) and mails to one email
# address (past it, the same "check your email" page and no mail): annotation/accounts/
# reset_limits.py
PASSWORD_RESET_PER_ADDRESS = env_int("PASSWORD_RESET_PER_ADDRESS", 20)
PASSWORD_RESET_PER_EMAIL = env_int("PASSWORD_RESET_PER_EMAIL", 3)

# Content-Security-Policy on every answer (django-csp): scripts, styles, images and requests
# from this site only; no inline script, no inline style, no eval (htmx's eval features are
# off in base.html's htmx-config), no plugins, no framing. The pages carry no inline code:
# tests/browser/test_csp.py visits each kind of page and counts violations.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "font-src": [SELF],
        "connect-src": [SELF],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    },
}

# HTTPS outside debug. Every switch has its environment variable, for a TLS-terminating proxy
# in front (SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_PROTO,https" when the proxy sets that
# header and strips a client's own; SECURE_SSL_REDIRECT=0 when the proxy redirects) or a
# plain-HTTP run on 127.0.0.1 (the benchmarks: the redirect and the Secure cookies off).
if not DEBUG:
    SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", True)
    SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", True)
    CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", True)
    SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 31_536_000)
    SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
    # Preloading is the apex domain owner's decision (a lab server on a subdomain cannot be
    # submitted), and hard to undo: off unless asked, and check --deploy's reminder silenced.
    SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
    SILENCED_SYSTEM_CHECKS = [] if SECURE_HSTS_PRELOAD else ["security.W021"]
    _proxy_header = os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip()
    if _proxy_header:
        _name, _, _value = _proxy_header.partition(",")
        if not _name.startswith("HTTP_") or not _value.strip():
            raise ImproperlyConfigured(
                f"SECURE_PROXY_SSL_HEADER={_proxy_header!r}: write it as HEADER,VALUE with the "
                "header as Django names it, e.g. HTTP_X_FORWARDED_PROTO,https"
            )
        SECURE_PROXY_SSL_HEADER = (_name.strip(), _value.strip())

# Job files (uploads, export files, rejected-record lists: annotation/storage.py) go through
# STORAGES["default"]: the filesystem under MEDIA_ROOT, or with CARDSORT_STORAGE=s3 an S3 bucket
# (or an S3-compatible service: MinIO, Ceph...) through django-storages, which then needs boto3
# (pip install boto3). CARDSORT_S3_BUCKET names the bucket (required); CARDSORT_S3_REGION,
# CARDSORT_S3_ENDPOINT_URL (a service other than AWS) and CARDSORT_S3_PREFIX (a folder in the
# bucket) are optional; the credentials are boto3's usual ones (AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY, a profile, or the machine's role). Web and worker must share it.
CARDSORT_STORAGE = os.environ.get("CARDSORT_STORAGE", "filesystem").strip().lower() or "filesystem"
if CARDSORT_STORAGE == "filesystem":
    _job_files = {"BACKEND": "django.core.files.storage.FileSystemStorage"}
elif CARDSORT_STORAGE == "s3":
    _bucket = os.environ.get("CARDSORT_S3_BUCKET", "").strip()
    if not _bucket:
        raise ImproperlyConfigured("CARDSORT_STORAGE=s3 needs CARDSORT_S3_BUCKET (a bucket name)")
    _s3 = {
        "bucket_name": _bucket,
        "region_name": os.environ.get("CARDSORT_S3_REGION", "").strip() or None,
        "endpoint_url": os.environ.get("CARDSORT_S3_ENDPOINT_URL", "").strip() or None,
        "location": os.environ.get("CARDSORT_S3_PREFIX", "").strip().strip("/"),
        "default_acl": "private",
        "file_overwrite": False,  # as on the filesystem: a name taken gets another
        "querystring_auth": True,
    }
    _job_files = {"BACKEND": "storages.backends.s3.S3Storage", "OPTIONS": _s3}
else:
    raise ImproperlyConfigured(
        f"CARDSORT_STORAGE={CARDSORT_STORAGE!r}: use filesystem (the default) or s3"
    )
STORAGES = {
    "default": _job_files,
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
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
