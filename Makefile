# Credits ID — the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
PYTHON ?= python3
BIN := $(VENV)/bin
export FLASK_APP := wsgi

.PHONY: run test lint venv clean bench profile

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

## test: the whole suite (set TEST_DATABASE_URL to run it on PostgreSQL)
test: venv
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## bench: Credits ID under gunicorn against node oidc-provider (needs ../shared/bench; see docs/performance.md)
BENCH_HARNESS ?= ../shared/bench
BENCH_ARGS ?=
bench: venv
	BENCH_HARNESS=$(BENCH_HARNESS) $(BIN)/python -m bench $(BENCH_ARGS)

## profile: where one operation's time goes, in-process (OP=token|refresh|userinfo|sso|roundtrip|discovery|jwks)
OP ?= token
profile: venv
	$(BIN)/python -m bench.profile --op $(OP)

lint: venv
	$(BIN)/ruff check .

clean:
	rm -rf $(VENV) instance .pytest_cache
