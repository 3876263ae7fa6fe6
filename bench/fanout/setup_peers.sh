#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs what the fan-out benchmark needs; idempotent (a second run only checks).
#
#   bench/fanout/setup_peers.sh
#
# Debian packages: corows' release build with the Redis backplane (hiredis), redis-server,
# taskset, matplotlib for the chart (bench/chart.py), Node and npm. From npm: Socket.IO 4 with
# @socket.io/redis-adapter and node-redis 4 (versions pinned in package.json; no
# package-lock.json is written).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

# shellcheck source=bench/setup_common.sh
. "$here/../setup_common.sh"
install_missing meson ninja-build g++ pkg-config libasio-dev zlib1g-dev libdeflate-dev libssl-dev libhiredis-dev \
                redis-server python3 python3-matplotlib util-linux
# A redis-server started by the package would hold port 6379 for nothing: run.py starts its own.

if ! (cd "$here" && node socketio_node.js --check 2>/dev/null) || [ "$here/package.json" -nt "$here/node_modules" ]; then
    echo "setup_peers: npm install in bench/fanout"
    (cd "$here" && npm install --no-package-lock --no-audit --no-fund --loglevel=error)
    touch "$here/node_modules"
fi
(cd "$here" && node socketio_node.js --check)
echo "setup_peers: Socket.IO $(cd "$here" && node -p "require('socket.io/package.json').version") ready"
