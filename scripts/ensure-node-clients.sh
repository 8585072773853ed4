#!/usr/bin/env bash
# openid-client from npm for the interop tests (tests/interop), installed from the lock file into
# examples/clients/node_modules. Without Node/npm it says so: the interop tests then skip on a
# developer's machine, and this script fails in CI (CI=true), where they must run.
set -euo pipefail

if ! command -v npm >/dev/null; then
  echo "ensure-node-clients: npm is missing; install Node.js 20 (the openid-client interop tests skip until then)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi
npm ci --prefix examples/clients --no-audit --no-fund --loglevel=error
