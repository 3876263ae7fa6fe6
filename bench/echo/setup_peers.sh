#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs and builds the peer echo servers of the echo benchmark; idempotent (a second run
# only checks). Peers built from C++ go to $PEERS (default build-bench/peers).
#
#   bench/echo/setup_peers.sh [PEERS_DIR]
#
# Boost.Beast and websocketpp come from Debian packages, Node ws and uWebSockets.js from npm
# (versions pinned in package.json; no package-lock.json is written).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
peers="${1:-$root/build-bench/peers}"
mkdir -p "$peers"

# Debian packages: what corows' release build needs (for echo_server and echo_load), Boost 1.81
# (the project's Boost: Beast and Boost.System are header-only), websocketpp, matplotlib for the
# charts (bench/chart.py), taskset, Node.
# shellcheck source=bench/setup_common.sh
. "$here/../setup_common.sh"
install_missing meson ninja-build g++ pkg-config libasio-dev zlib1g-dev libssl-dev openssl python3 util-linux \
                libboost1.81-dev libwebsocketpp-dev python3-matplotlib

# Rebuilds $2 from $1 when the source is newer; the rest are compiler arguments, after the
# source so that libraries (-lz) resolve its symbols.
build() {
    local src="$1" out="$2"
    shift 2
    if [ ! -x "$out" ] || [ "$src" -nt "$out" ]; then
        echo "setup_peers: building $(basename "$out")"
        g++ -O2 -DNDEBUG "$src" "$@" -o "$out.tmp" && mv "$out.tmp" "$out"
    fi
}
build "$here/beast_echo.cpp" "$peers/beast_echo" -std=c++20 -pthread -lssl -lcrypto
build "$here/wspp_echo.cpp" "$peers/wspp_echo" -std=c++17 -pthread -lz -lssl -lcrypto

# Node peers: ws (with bufferutil, as ws recommends) and uWebSockets.js.
if ! (cd "$here" && node -e "require('ws'); require('bufferutil')" 2>/dev/null) ||
   [ "$here/package.json" -nt "$here/node_modules" ]; then
    echo "setup_peers: npm install in bench/echo"
    (cd "$here" && npm install --no-package-lock --no-audit --no-fund --loglevel=error)
    touch "$here/node_modules"
fi
# uWebSockets.js is optional: a prebuilt addon may not load on every machine (some builds want a
# newer glibc than Debian 12's).
(cd "$here" && node uws_echo.js --check 2>&1) || echo "setup_peers: uWebSockets.js will be skipped"
echo "setup_peers: peers ready in $peers"
