# Credits ID — the two commands a newcomer needs are `make run` and `make test`.
SHELL := /bin/bash
VENV ?= .venv
# The interpreter .venv is made from: the distribution's CPython when it can make a venv (Debian's
# is built with profile-guided and link-time optimisation and linked statically; side by side with
# a default pyenv build of the same version it served a sign-in with 5-7 % less CPU and userinfo
# with 6-13 % less: docs/performance.md, "The interpreter"), else python3 from PATH.
# `make clean venv PYTHON=...` picks another.
DISTRO_PYTHON = $(shell /usr/bin/python3 -c 'import ensurepip, sys; assert sys.version_info >= (3, 11); print(sys.executable)' 2>/dev/null)
PYTHON ?= $(or $(DISTRO_PYTHON),python3)
BIN := $(VENV)/bin
export FLASK_APP := wsgi
NODE_DEPS := examples/clients/node_modules/.package-lock.json tests/interop/mcp_inspector/node_modules/.package-lock.json

.PHONY: run serve test test-tools lint venv lock clean bench profile layers

# The locked requirements, every file checked against its hash, then this project itself
# (editable, without dependencies: the lock already brought them), which installs the `credits`
# command-line client as .venv/bin/credits.
$(VENV)/.installed: requirements.lock pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet --require-hashes -r requirements.lock
	$(BIN)/pip install --quiet --no-deps -e .
	touch $@

venv: $(VENV)/.installed

## lock: requirements.lock from pyproject.toml's dependencies (and the dev extra), with hashes, by uv
lock: venv
	$(BIN)/uv pip compile pyproject.toml --extra dev --generate-hashes --python-version 3.11 \
	  --python-platform x86_64-manylinux_2_28 --quiet --output-file requirements.lock \
	  --custom-compile-command "make lock"

## run: the provider at http://127.0.0.1:$(PORT) (SQLite, keys, schema, demo data), the demo app at :$(DEMO_PORT), the tool server at :$(TOOLS_PORT)
# Ports: `make run PORT=8000 DEMO_PORT=8001 TOOLS_PORT=8002` (or the same names in the environment;
# on macOS, AirPlay Receiver holds 5000). The issuer follows PORT unless ISSUER_URL is set.
PORT ?= 5000
DEMO_PORT ?= 5001
TOOLS_PORT ?= 5002
run: venv
	export APP_ENV=development PORT=$(PORT) DEMO_PORT=$(DEMO_PORT) TOOLS_PORT=$(TOOLS_PORT) LOG_STYLE="$${LOG_STYLE:-text}"; \
	export ISSUER_URL="$${ISSUER_URL:-http://127.0.0.1:$(PORT)}" MCP_URL="$${MCP_URL:-http://127.0.0.1:$(TOOLS_PORT)/mcp}"; \
	$(BIN)/flask db upgrade && \
	$(BIN)/flask keys ensure && \
	$(BIN)/flask demo seed --json | $(BIN)/python scripts/run_dev.py

## serve: as in production: granian through serve.py (set DATABASE_URL, SECRET_KEY, ISSUER_URL; WEB_* for the server)
serve: venv
	$(BIN)/flask db upgrade && \
	$(BIN)/flask keys ensure && \
	$(BIN)/python serve.py

## test: the whole suite (set TEST_DATABASE_URL to run it on PostgreSQL)
test: venv test-tools
	$(BIN)/python -m pytest $(PYTEST_ARGS)

## test-tools: Debian's Chromium (real-browser tests), openid-client and the MCP Inspector from npm (interop tests)
test-tools: $(NODE_DEPS)
	@scripts/ensure-chromium.sh

$(NODE_DEPS): examples/clients/package.json examples/clients/package-lock.json tests/interop/mcp_inspector/package.json tests/interop/mcp_inspector/package-lock.json
	@scripts/ensure-node-clients.sh

## bench: Credits ID under granian against node oidc-provider (needs ../shared/bench; see docs/performance.md)
##        BENCH_ARGS="--profile catalog": the catalog at size instead (bench/catalog.py; set DATABASE_URL)
BENCH_HARNESS ?= ../shared/bench
BENCH_ARGS ?=
bench: venv
	BENCH_HARNESS=$(BENCH_HARNESS) $(BIN)/python -m bench $(BENCH_ARGS)

## profile: where one operation's time goes, in-process (OP=token|refresh|userinfo|sso|roundtrip|discovery|jwks)
OP ?= token
profile: venv
	$(BIN)/python -m bench.profile --op $(OP)

## layers: what each layer under a request costs on this machine (crypto, SQLite to the ORM, Flask, our hooks)
layers: venv
	$(BIN)/python -m bench.layers

## lint: ruff check, ruff format --check, mypy (strict on the protocol package and the services) and lint-imports (the layers; see pyproject.toml)
lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports

clean:
	rm -rf $(VENV) instance .pytest_cache artifacts examples/clients/node_modules tests/interop/mcp_inspector/node_modules
