# cardsort: `make run` (app on SQLite with a background worker and demo data) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The app runs in debug only when DEBUG says so, and outside debug it needs a SECRET_KEY
# (config/settings.py). Every target here is a development run on this machine: debug on,
# the development key, unless the environment says otherwise.
export DEBUG ?= 1

.PHONY: run test test-postgres test-browser lint fmt worker migrate demo ci clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

migrate: $(STAMP)
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py demo

# The embedded default: SQLite, the filesystem broker, one worker beside the dev server.
run: demo
	@trap 'kill 0' EXIT INT TERM; \
	$(VENV)/bin/celery -A config worker --pool=solo --loglevel=INFO & \
	$(PY) manage.py runserver 127.0.0.1:8000

worker: $(STAMP)
	$(VENV)/bin/celery -A config worker --pool=solo --loglevel=INFO

# The whole suite (browser tests included) on the embedded default.
test: $(STAMP)
	scripts/ensure-chromium
	CARDSORT_DATA_DIR=var/test $(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(PY) manage.py makemigrations --check --dry-run
	$(VENV)/bin/lint-imports

fmt: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

ci: lint test

clean:
	rm -rf var .venv
