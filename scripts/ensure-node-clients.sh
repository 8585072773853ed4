#!/usr/bin/env bash
# The Node clients the interop tests run, each installed from its lock file: openid-client
# (examples/clients/node_modules) and the MCP Inspector (tests/interop/mcp_inspector/node_modules).
# Without Node/npm it says so: the interop tests then skip on a developer's machine, and this
# script fails in CI (CI=true), where they must run.
set -euo pipefail

if ! command -v npm >/dev/null; then
  echo "ensure-node-clients: npm is missing; install Node.js 20 (the openid-client and MCP Inspector interop tests skip until then)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi
for folder in examples/clients tests/interop/mcp_inspector; do
  npm ci --prefix "$folder" --no-audit --no-fund --loglevel=error
done
