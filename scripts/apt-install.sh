#!/usr/bin/env bash
# apt-install.sh WHAT PACKAGE... : install Debian packages the test suite needs, as root or
# through sudo, with one clear line when neither is possible. Callers check first whether
# the packages are already there; WHAT names them in messages.
set -euo pipefail
what="$1"
shift
echo "$what not found; installing $* with apt-get" >&2
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
        echo "error: $what is missing and apt-get needs root (no sudo here)" >&2
        exit 1
    fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "$@" >/dev/null
