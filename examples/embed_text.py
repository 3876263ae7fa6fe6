#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Writes a C++ header that holds a text file as `inline constexpr std::string_view NAME`.

    embed_text.py INPUT OUTPUT NAME

The page is compiled into the program so that it is found wherever the program runs.
"""
import sys


def main():
    src, out, name = sys.argv[1:4]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    delimiter = "embed"
    while ")" + delimiter + '"' in text:
        delimiter += "_"
    with open(out, "w", encoding="utf-8") as f:
        f.write("// Generated from %s by embed_text.py: edit that file instead.\n" % src.split("/")[-1])
        f.write("#pragma once\n#include <string_view>\n\n")
        f.write('inline constexpr std::string_view %s = R"%s(%s)%s";\n' % (name, delimiter, text, delimiter))


if __name__ == "__main__":
    main()
