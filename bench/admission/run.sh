#!/bin/sh
# SPDX-License-Identifier: BSL-1.0
# Runs attack.py against an echo_server started here, on loopback, and stops it.
#
#   bench/admission/run.sh ECHO_SERVER "SERVER FLAGS" ATTACK FLAGS...
#   e.g. bench/admission/run.sh build-rel/examples/echo_server "--max-connections-per-address 8" --sources 100
set -eu
server=$1 flags=$2
shift 2
port=${PORT:-19761}
# shellcheck disable=SC2086 # the flags are words on purpose
"$server" --port "$port" $flags > /dev/null 2>&1 &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true' EXIT
sleep 0.5
/usr/bin/python3 "$(dirname "$0")/attack.py" --port "$port" --server-pid "$pid" "$@"
