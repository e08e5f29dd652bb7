#!/usr/bin/env bash
# Makes sure headless Chromium and its driver are on the machine, for the report's
# browser tests (Debian packages chromium and chromium-driver).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
echo "Chromium not found; installing chromium and chromium-driver with apt-get" >&2
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "error: Chromium is missing and apt-get needs root (no sudo here)" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq chromium chromium-driver >/dev/null
