# SPDX-License-Identifier: BSL-1.0
# Sourced by tools/check and tools/demo: installs what is missing on a Debian 12 machine.
# apt-get update runs at most once, and only when something is missing.

# Boost 1.81 (Boost.Test, Boost.Asio for the -Dasio=boost build, Beast for the benchmarks):
# Debian 12's default Boost, 1.74, ships an Asio older than corows needs, and the two cannot
# be installed together, so installing these replaces 1.74's development packages.
# python3-matplotlib: the benchmarks' charts, and the bench suite's test of them.
corows_packages=(meson ninja-build g++ pkg-config libasio-dev zlib1g-dev libdeflate-dev
                 libboost1.81-dev libboost-test1.81-dev
                 libssl-dev openssl curl python3 python3-websockets clang-16 libclang-rt-16-dev
                 libc++-16-dev libc++abi-16-dev cmake libhiredis-dev redis-server haproxy
                 tinyproxy microsocks prometheus libspdlog-dev doxygen python3-matplotlib)

install_missing() {
    local missing=() p
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    local sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    echo "installing: ${missing[*]}"
    if [ -z "${corows_apt_updated:-}" ]; then
        $sudo apt-get update -q || return 1
        corows_apt_updated=1
    fi
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "${missing[@]}"
}

# True when clang++ can link a libFuzzer target.
have_fuzzer() {
    command -v clang++-16 >/dev/null 2>&1 || return 1
    echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' |
        clang++-16 -x c++ -fsanitize=fuzzer - -o /dev/null >/dev/null 2>&1
}

install_missing "${corows_packages[@]}" || { echo "package installation failed"; exit 1; }

# Peers of the interop tests (tests/interop): their tests skip when a peer cannot be had.
# Node 20 may already be there from another source; Debian's nodejs must not replace it.
corows_peer_packages=(chromium)
command -v node >/dev/null 2>&1 || corows_peer_packages+=(nodejs npm)
install_missing "${corows_peer_packages[@]}" || echo "interop peers not installed: their tests will skip"
