#!/usr/bin/env bash
# Makes sure a PostgreSQL server binary (initdb, pg_ctl) is on the machine, so
# that the test suite can start its own throw-away server on loopback.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1; then
    exit 0
fi
echo "PostgreSQL server not found; installing it with apt-get" >&2
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "error: PostgreSQL is missing and apt-get needs root (no sudo here)" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq postgresql >/dev/null
