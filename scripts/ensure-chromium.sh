#!/usr/bin/env bash
# Debian's Chromium for the real-browser tests (tests/e2e). Playwright drives this browser; it never
# downloads one of its own. Installs the `chromium` package when it is missing (needs root, or
# sudo without a password). Where it cannot, it says so: the e2e tests then skip on a developer's
# machine, and this script fails in CI (CI=true), where they must run.
set -euo pipefail

CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
[ -x "$CHROMIUM" ] && exit 0

if [ "$(id -u)" -eq 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  echo "ensure-chromium: $CHROMIUM is missing and this user cannot install packages;" >&2
  echo "ensure-chromium: run 'sudo apt-get install chromium' (the real-browser tests skip until then)" >&2
  [ "${CI:-}" = "true" ] && exit 1
  exit 0
fi

echo "ensure-chromium: installing Debian's chromium package for the real-browser tests..."
export DEBIAN_FRONTEND=noninteractive
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" apt-get install -y -qq chromium >/dev/null
[ -x "$CHROMIUM" ] || { echo "ensure-chromium: chromium installed but $CHROMIUM is not there" >&2; exit 1; }
echo "ensure-chromium: $("$CHROMIUM" --version)"
