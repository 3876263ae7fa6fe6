# SPDX-License-Identifier: BSL-1.0
# What the benchmarks' setup_peers.sh scripts share; sourced by them (bash, set -euo pipefail).
# shellcheck shell=bash

# Installs the Debian packages named that are not installed yet, and Debian's nodejs and npm
# when node or npm is not on PATH (Node 20 may come from elsewhere than Debian; Debian's nodejs
# must not replace it).
install_missing() {
    local need=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
    done
    command -v node >/dev/null || need+=(nodejs)
    command -v npm >/dev/null || need+=(npm)
    if [ ${#need[@]} -gt 0 ]; then
        echo "setup_peers: installing ${need[*]}"
        local as_root=()
        [ "$(id -u)" -ne 0 ] && as_root=(sudo)
        "${as_root[@]}" apt-get update -qq
        DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${need[@]}"
    fi
}
