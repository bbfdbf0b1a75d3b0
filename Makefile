# cardsort: `make run` (app on SQLite with a background worker and demo data) and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The app runs in debug only when DEBUG says so, and outside debug it needs a SECRET_KEY
# (config/settings.py). Every target here is a development run on this machine: debug on,
# the development key, unless the environment says otherwise.
export DEBUG ?= 1
# The port `make run` serves on: `make run PORT=8061`.
PORT ?= 8000

.PHONY: run test test-fast test-postgres test-browser lint fmt worker migrate demo docs docs-build ci clean

$(STAMP): requirements.txt requirements-dev.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements-dev.txt
	touch $(STAMP)

venv: $(STAMP)

migrate: $(STAMP)
	$(PY) manage.py migrate --noinput

demo: migrate
	$(PY) manage.py demo --port $(PORT)

# The embedded default: SQLite, the filesystem broker, one worker beside the dev server
# (scripts/run starts both and, on Ctrl-C, stops each once).
run: demo
	$(PY) scripts/run --port $(PORT)

worker: $(STAMP)
	$(VENV)/bin/celery -A config worker --pool=solo --loglevel=INFO

# The whole suite (browser tests included) on the embedded default.
test: $(STAMP)
	scripts/ensure-chromium
	CARDSORT_DATA_DIR=var/test $(PY) -m pytest -q

# The edit loop: no browser, no PostgreSQL, no benchmark, no slow test (other processes,
# whole databases, state machines), in parallel (pytest-xdist; each worker its own data
# folder, config/settings_test.py). `make test` stays the whole suite.
TEST_WORKERS ?= auto
test-fast: $(STAMP)
	CARDSORT_DATA_DIR=var/test $(PY) -m pytest -q -n $(TEST_WORKERS) --dist worksteal \
		-m "not browser and not postgres and not bench and not slow"

# The documentation site (docs/, mkdocs.yml): served with live reload on DOCS_PORT.
DOCS_PORT ?= 8001
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

# What CI runs: a broken link or a page missing from the nav fails.
docs-build: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --site-dir var/site

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
