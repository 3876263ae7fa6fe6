#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Fails when a test case compiled into a Boost.Test program is run by no meson test.

    check_registry.py PROGRAM FILTER... [-- PROGRAM FILTER...]

Each FILTER is the --run_test argument of one meson test of PROGRAM (a suite, or
suite/case). The program's own --list_content is the truth: a case hidden from
tests/discover.py (a macro it does not know, an #if) or a suite left out of meson.build's
registration shows up here as never run.
"""
import os
import shlex
import subprocess
import sys


def compiled_cases(program):
    # A cross build's programs run through its wrapper (wine), given as shell words.
    wrapper = shlex.split(os.environ.get('COROWS_PROGRAM_WRAPPER', ''))
    out = subprocess.run([*wrapper, program, '--list_content'], capture_output=True, text=True, check=True)
    # Boost.Test writes the tree to stderr, four spaces a level, '*' after enabled units.
    listing = out.stderr or out.stdout
    path, leaves = [], []
    for line in listing.splitlines():
        if not line.strip():
            continue
        depth = (len(line) - len(line.lstrip(' '))) // 4
        name = line.strip().rstrip('*')
        del path[depth:]
        path.append(name)
        leaves.append('/'.join(path))
    # A leaf is a path that no other path continues.
    return [p for p in leaves if not any(q.startswith(p + '/') for q in leaves)]


def main():
    groups, current = [], None
    for arg in sys.argv[1:]:
        if arg == '--':
            current = None
        elif current is None:
            current = (arg, [])
            groups.append(current)
        else:
            current[1].append(arg)
    if not groups:
        sys.exit('usage: check_registry.py PROGRAM FILTER... [-- PROGRAM FILTER...]')
    missing, total = [], 0
    for program, filters in groups:
        cases = compiled_cases(program)
        total += len(cases)
        missing += [c for c in cases if not any(c == f or c.startswith(f + '/') for f in filters)]
        # A filter that matches nothing would fail its own meson test; name it here too.
        for f in filters:
            if not any(c == f or c.startswith(f + '/') for c in cases):
                missing.append(f'(meson runs {f}, which {program} does not have)')
    for m in missing:
        print('never run:', m)
    print(f'{total} compiled test cases, {len(missing)} not run by any meson test')
    sys.exit(1 if missing else 0)


if __name__ == '__main__':
    main()
