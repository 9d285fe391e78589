#!/usr/bin/env bash
# Installs the headless browser that test/openapi/docs-page.test.ts drives through playwright-core:
# Debian's `chromium` package (binary /usr/bin/chromium). Safe to run again; .ci/run runs it before
# the tests, where the page test must not be skipped.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  echo "chromium is installed: $(/usr/bin/chromium --version 2>/dev/null || echo /usr/bin/chromium)"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  echo "install-chromium: apt-get not found; install Chromium so that /usr/bin/chromium exists." >&2
  exit 1
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update
$SUDO apt-get install -y chromium

/usr/bin/chromium --version
