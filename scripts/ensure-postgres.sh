#!/usr/bin/env bash
# Makes sure a PostgreSQL server binary (initdb, pg_ctl) is on the machine, so
# that the test suite can start its own throw-away server on loopback.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 || command -v pg_ctl >/dev/null 2>&1; then
    exit 0
fi
exec bash "$(dirname "$0")/apt-install.sh" "PostgreSQL server" postgresql
