#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Every source file of corows names its license (BSL-1.0, LICENSE) in an SPDX line near its top.

    check_spdx.py SOURCE_ROOT           fails, listing the files without one
    check_spdx.py SOURCE_ROOT --fix     adds the line where it is missing

Source files: C++ (.hpp, .cpp), Python, shell, JavaScript, HTML, Meson and CMake files, the
machine files (.ini) and the scripts in tools/. Build directories, downloaded subprojects,
node_modules and the fuzz corpora are not sources.
"""
import os
import sys

LICENSE = "BSL-1.0"
TAG = "SPDX-License-Identifier: " + LICENSE
SKIP_DIRS = {".git", "node_modules", "corpus", "__pycache__"}
COMMENT = {".hpp": "//", ".cpp": "//", ".js": "//", ".py": "#", ".sh": "#", ".ini": "#", ".in": "#",
           ".build": "#", ".txt": "#", ".html": "<!--"}


def comment_of(root, path):
    """The comment opener for `path`'s SPDX line, or None if it is not a source file."""
    name = os.path.basename(path)
    if name in ("meson.build", "meson_options.txt", "CMakeLists.txt"):
        return "#"
    rel = os.path.relpath(path, root).replace(os.sep, "/")
    if rel.startswith("tools/") and "." not in name:
        return "#"  # the tools' scripts (bash)
    ext = os.path.splitext(name)[1]
    if ext == ".txt":
        return None  # other text files are not sources
    return COMMENT.get(ext)


def sources(root):
    for d, dirs, files in os.walk(root):
        rel = os.path.relpath(d, root).replace(os.sep, "/")
        top = rel.split("/")[0]
        # Build directories (build, build-asan, ...) and the subprojects Meson downloads; the
        # project's own patches for them (subprojects/packagefiles) are sources.
        if top.startswith("build") or (top == "subprojects" and rel != "subprojects" and
                                       not rel.startswith("subprojects/packagefiles")):
            dirs[:] = []
            continue
        dirs[:] = sorted(x for x in dirs if x not in SKIP_DIRS and not x.startswith("."))
        for f in sorted(files):
            p = os.path.join(d, f)
            c = comment_of(root, p)
            if c:
                yield p, c


def has_tag(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        head = [f.readline() for _ in range(3)]
    return any(TAG in line for line in head)


def add_tag(path, opener):
    with open(path, encoding="utf-8") as f:
        lines = f.read().splitlines(keepends=True)
    line = f"<!-- {TAG} -->\n" if opener == "<!--" else f"{opener} {TAG}\n"
    # After a shebang or an HTML doctype, which must stay first.
    at = 1 if lines and (lines[0].startswith("#!") or lines[0].lower().startswith("<!doctype")) else 0
    lines.insert(at, line)
    with open(path, "w", encoding="utf-8") as f:
        f.write("".join(lines))


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    root, fix = sys.argv[1], "--fix" in sys.argv[2:]
    missing = [(p, c) for p, c in sources(root) if not has_tag(p)]
    if fix:
        for p, c in missing:
            add_tag(p, c)
        print(f"added the SPDX line to {len(missing)} files")
        return 0
    for p, _ in missing:
        print(f"{os.path.relpath(p, root)}: no '{TAG}' line in its first three lines")
    checked = sum(1 for _ in sources(root))
    print(f"{checked} source files, {len(missing)} without the SPDX line")
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
