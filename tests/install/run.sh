#!/usr/bin/env bash
# SPDX-License-Identifier: BSL-1.0
# Installs the build into a fresh staging directory (meson install --destdir) and builds
# consumer.cpp against what was installed, one way per call:
#
#   run.sh pkgconfig-g++|pkgconfig-clang++|cmake BUILD_ROOT PREFIX LIBDIR
#
# pkg-config reads the staged corows.pc through PKG_CONFIG_SYSROOT_DIR, which puts the staging
# directory before its -I and -L paths; CMake finds the staged package through
# CMAKE_PREFIX_PATH (its paths are relative to the installed files). Nothing points into the
# source tree, so a header or flag missing from the install fails the build.
# Exit status 77 (a meson skip) when the compiler or cmake is missing.
set -euo pipefail
mode=$1 build=$2 prefix=$3 libdir=$4
here=$(cd "$(dirname "$0")" && pwd)

case $mode in
    pkgconfig-g++|cmake) cxx=g++ ;;
    pkgconfig-clang++) cxx=clang++-16 ;;
    *) echo "unknown mode $mode"; exit 2 ;;
esac
command -v "$cxx" >/dev/null || { echo "no $cxx: skipped"; exit 77; }
[ "$mode" != cmake ] || command -v cmake >/dev/null || { echo "no cmake: skipped"; exit 77; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
stage=$work/stage
meson install -C "$build" --no-rebuild --quiet --destdir "$stage"
# What a careful user compiles with: our headers must be clean under it.
warnings=(-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Werror)

if [ "$mode" = cmake ]; then
    cmake -S "$here" -B "$work/cmake" -DCMAKE_PREFIX_PATH="$stage$prefix" \
        -DCMAKE_CXX_COMPILER="$cxx" -DCMAKE_CXX_FLAGS="${warnings[*]}" -DCMAKE_BUILD_TYPE=Release
    grep -q "^corows_DIR:PATH=$stage" "$work/cmake/CMakeCache.txt" ||
        { echo "find_package(corows) did not find the staged package"; exit 1; }
    cmake --build "$work/cmake" --verbose
    program=$work/cmake/consumer
    [ ! -x "$work/cmake/redis_consumer" ] || timeout 60 "$work/cmake/redis_consumer"
else
    export PKG_CONFIG_SYSROOT_DIR=$stage
    export PKG_CONFIG_PATH=$stage$prefix/$libdir/pkgconfig
    flags=$(pkg-config --cflags --libs corows)
    echo "pkg-config --cflags --libs corows: $flags"
    case " $flags " in
        *" -I$stage"*) ;;
        *) echo "the flags do not name the staged include directory"; exit 1 ;;
    esac
    # The flags come after the source, as the linker needs the libraries after their users.
    # shellcheck disable=SC2086
    "$cxx" -std=c++20 -O1 "${warnings[@]}" "$here/consumer.cpp" $flags -o "$work/consumer"
    program=$work/consumer
    # corows.pc does not bring hiredis; a program that uses the Redis backplane asks for
    # corows-redis, which exists where corows was built with hiredis.
    case " $(pkg-config --print-requires corows | tr '\n' ' ') " in
        *" hiredis "*) echo "corows.pc requires hiredis"; exit 1 ;;
    esac
    if [ -f "$PKG_CONFIG_PATH/corows-redis.pc" ]; then
        # shellcheck disable=SC2086
        "$cxx" -std=c++20 -O1 "${warnings[@]}" "$here/redis_consumer.cpp" $(pkg-config --cflags --libs corows-redis) \
            -o "$work/redis_consumer"
        timeout 60 "$work/redis_consumer"
    fi
    # The library's compiled instances spare the program most of corows' templates; a program
    # on other types (or with COROWS_HEADER_ONLY) instantiates them all, and they must be as clean.
    # shellcheck disable=SC2086
    "$cxx" -std=c++20 -fsyntax-only -DCOROWS_HEADER_ONLY=1 "${warnings[@]}" "$here/consumer.cpp" \
        $(pkg-config --cflags corows)
fi

timeout 60 "$program"
