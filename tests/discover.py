#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Lists the Boost.Test cases declared in C++ test files, for tests/meson.build.

    discover.py FILE...

Prints one line per test case: its path (suite/case, nested suites joined with '/'), then
the labels its decorators give (label("x")), comma-separated, when it has any. meson reads
the list when it configures and registers a test per case (or per suite), and it reads every
file with fs.read, so that a change to one makes meson configure again: a case written in a
test file runs without being listed anywhere by hand. tests/check_registry.py checks the
result against what the compiled programs hold.
"""
import re
import sys

# Comments and string literals go first, so that a macro quoted or commented out does not count.
STRIP = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"', re.S)
MACRO = re.compile(
    r'\b(BOOST_AUTO_TEST_SUITE|BOOST_FIXTURE_TEST_SUITE|BOOST_AUTO_TEST_SUITE_END|'
    r'BOOST_AUTO_TEST_CASE|BOOST_FIXTURE_TEST_CASE|BOOST_DATA_TEST_CASE)\s*\(([^()]*(?:\([^()]*\)[^()]*)*)\)')
LABEL = re.compile(r'label\s*\(\s*"([^"]+)"\s*\)')


def keep_strings_of_labels(text):
    """Blanks comments and strings, except the strings inside label(...), which are kept."""
    def blank(m):
        s = m.group(0)
        return s if s.startswith('"') and text[max(0, m.start() - 12):m.start()].rstrip().endswith('label(') else ' '
    return STRIP.sub(blank, text)


def cases(path):
    text = keep_strings_of_labels(open(path, encoding='utf-8').read())
    suites = []
    for m in MACRO.finditer(text):
        kind, args = m.group(1), m.group(2)
        name = args.split(',')[0].strip()
        if kind == 'BOOST_AUTO_TEST_SUITE_END':
            if not suites:
                sys.exit(f'{path}: BOOST_AUTO_TEST_SUITE_END without a suite')
            suites.pop()
        elif kind.endswith('_SUITE'):
            suites.append(name)
        else:
            yield '/'.join(suites + [name]), LABEL.findall(args)
    if suites:
        sys.exit(f'{path}: suite {"/".join(suites)} is never closed')


def main():
    for path in sys.argv[1:]:
        for name, labels in cases(path):
            print(name + (' ' + ','.join(labels) if labels else ''))


if __name__ == '__main__':
    main()
