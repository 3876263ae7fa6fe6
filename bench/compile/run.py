#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""What corows adds to a user's compile: the README's echo server (echo_corows.cpp) against the
same server written with Asio alone (echo_asio.cpp), side by side, at -O0 and -O2, with g++ and
clang++. The best of --runs compiles each; CPU time (user + system of the compiler), which a
busy machine disturbs less than wall time. One line per measurement:

    bench=compile compiler=g++ opt=-O0 asio_s=2.9 corows_s=7.5 ratio=2.59

    bench/compile/run.py [--runs 3] [--compilers g++,clang++-16]
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
INCLUDE = os.path.join(HERE, '..', '..', 'include')


def cpu_seconds(cmd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def best(compiler, opt, source, runs, out):
    # Asio 1.22 enables co_await for g++ only; corows' config.hpp does it for clang, and the
    # Asio-alone program needs it said.
    # The defines corows.pc gives a TLS-enabled build's users: COROWS_HAS_TLS (their headers then
    # pull in Asio's SSL layer and OpenSSL's headers) and COROWS_INSTANCES (the library has the
    # common types compiled: corows/detail/instances.hpp).
    cmd = [compiler, '-std=c++20', opt, '-I' + INCLUDE, '-DASIO_HAS_CO_AWAIT=1', '-DASIO_HAS_STD_COROUTINE=1',
           '-DCOROWS_HAS_TLS=1', '-DCOROWS_INSTANCES=1', '-c', os.path.join(HERE, source), '-o', out]
    return min(cpu_seconds(cmd) for _ in range(runs))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--runs', type=int, default=3)
    ap.add_argument('--compilers', default='g++,clang++-16')
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'o.o')
        for compiler in args.compilers.split(','):
            for opt in ('-O0', '-O2'):
                a = best(compiler, opt, 'echo_asio.cpp', args.runs, out)
                c = best(compiler, opt, 'echo_corows.cpp', args.runs, out)
                print(f'bench=compile compiler={compiler} opt={opt} asio_s={a:.2f} '
                      f'corows_s={c:.2f} ratio={c / a:.2f}', flush=True)


if __name__ == '__main__':
    sys.exit(main())
