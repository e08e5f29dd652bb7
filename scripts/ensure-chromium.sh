#!/usr/bin/env bash
# Makes sure headless Chromium and its driver are on the machine, for the report's
# browser tests (Debian packages chromium and chromium-driver).
set -euo pipefail
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
exec bash "$(dirname "$0")/apt-install.sh" "Chromium" chromium chromium-driver
