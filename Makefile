# Credits ID — the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
export FLASK_APP := wsgi

.PHONY: run serve test lint venv clean

$(VENV)/.installed: requirements.txt requirements-dev.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

## run: the provider at http://127.0.0.1:5000 on SQLite, with keys, schema and demo data
run: venv
	export APP_ENV=development; \
	$(BIN)/flask db upgrade && \
	$(BIN)/flask keys ensure && \
	$(BIN)/flask demo seed && \
	$(BIN)/flask run --host 127.0.0.1 --port 5000

## serve: as in production: gunicorn with gunicorn.conf.py (set DATABASE_URL, SECRET_KEY, ISSUER_URL)
serve: venv
	$(BIN)/flask db upgrade && \
	$(BIN)/flask keys ensure && \
	$(BIN)/gunicorn -c gunicorn.conf.py wsgi:app

## test: the whole suite (set TEST_DATABASE_URL to run it on PostgreSQL)
test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) instance .pytest_cache
