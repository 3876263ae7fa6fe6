#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Every C++ code block of the README and docs/ compiles and runs as a test.

    snippets.py generate OUT.cpp [--have=LIB]... PAGE.md...   one translation unit with every block
    snippets.py run PROGRAM [--have=LIB]... PAGE.md...        runs each block as its directive says

Each ```cpp block is a whole program and is preceded by a directive in an HTML comment (not
shown on a rendered page) that says how to check it:

    <!-- snippet: runs -->                   it exits with status 0 by itself
    <!-- snippet: echo-server PORT [PATH] -->  it serves WebSocket echoes on 127.0.0.1:PORT:
                                               a client (Python websockets) gets "hello"
                                               back on PATH, then the program is stopped
    <!-- snippet: client-of PORT -->         with an echo server on 127.0.0.1:PORT (Python
                                               websockets), it exits with status 0

A directive may end with `needs=LIB` for a block that shows corows beside another library
(spdlog): the build passes `--have=LIB` where it found that library, and a block whose library
is missing is left out and reported as skipped. tools/check installs every such library, so
in CI nothing is skipped.

`generate` puts each block in a namespace of its own, its #include lines hoisted to the top
and its main() renamed, and adds a main() that runs the block named by its argument (PAGE-N,
N counting from 1 within a page). A block without a directive, or a directive without a
block, is an error: nothing published goes unchecked.
"""
import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

DIRECTIVE = re.compile(r"<!--\s*snippet:\s*(.*?)\s*-->")
FENCE = re.compile(r"^```(\w*)\s*$")


class Snippet:
    def __init__(self, page, index, line, directive, code):
        self.page, self.index, self.line, self.code = page, index, line, code
        self.needs = [w[len("needs="):] for w in directive if w.startswith("needs=")]
        self.directive = [w for w in directive if not w.startswith("needs=")]

    @property
    def name(self):
        return f"{os.path.splitext(os.path.basename(self.page))[0]}-{self.index}"


def extract(page):
    """The cpp blocks of `page` with their directives; raises on a block without one."""
    snippets, pending, lines = [], None, open(page, encoding="utf-8").read().splitlines()
    i = 0
    while i < len(lines):
        m = DIRECTIVE.search(lines[i])
        if m:
            if pending:
                raise SystemExit(f"{page}:{pending[0]}: snippet directive without a cpp block after it")
            pending = (i + 1, m.group(1).split())
            i += 1
            continue
        f = FENCE.match(lines[i])
        if f:
            lang, start = f.group(1), i + 1
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if lang == "cpp":
                if not pending:
                    raise SystemExit(f"{page}:{start}: cpp block without a <!-- snippet: ... --> directive")
                snippets.append(Snippet(page, len(snippets) + 1, start, pending[1], "\n".join(lines[i + 1:j])))
            elif pending:
                raise SystemExit(f"{page}:{pending[0]}: snippet directive before a {lang or 'plain'} block")
            pending = None
            i = j + 1
            continue
        if pending and lines[i].strip():
            raise SystemExit(f"{page}:{pending[0]}: snippet directive not right before its block")
        i += 1
    if pending:
        raise SystemExit(f"{page}:{pending[0]}: snippet directive at the end of the page")
    return snippets


def all_snippets(pages):
    out = []
    for page in pages:
        out += extract(page)
    return out


def closing_brace(text, open_at):
    """The index of the brace that closes the one at `open_at`, skipping comments and literals."""
    depth, i = 0, open_at
    while i < len(text):
        c = text[i]
        if text.startswith("//", i):
            i = text.find("\n", i)
            if i < 0:
                break
            continue
        if text.startswith("/*", i):
            i = text.find("*/", i) + 2
            continue
        raw = re.match(r'R"([^(]*)\(', text[i:])
        if raw:
            i = text.find(")" + raw.group(1) + '"', i + raw.end()) + len(raw.group(1)) + 2
            continue
        if c in "\"'":
            i += 1
            while i < len(text) and text[i] != c:
                i += 2 if text[i] == "\\" else 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise SystemExit("unbalanced braces in a snippet's main()")


def split_have(args):
    """(the libraries named by --have=LIB, the pages) of a command line's arguments."""
    have = {a[len("--have="):] for a in args if a.startswith("--have=")}
    return have, [a for a in args if not a.startswith("--have=")]


def missing(s, have):
    """The libraries `s` needs that the build did not find."""
    return [n for n in s.needs if n not in have]


def generate(out, pages, have):
    snippets = [s for s in all_snippets(pages) if not missing(s, have)]
    includes, bodies = [], []
    for k, s in enumerate(snippets):
        body = []
        for line in s.code.splitlines():
            if line.startswith("#include"):
                if line not in includes:
                    includes.append(line)
                body.append("")  # keeps the #line numbering right
            else:
                body.append(line)
        text = "\n".join(body)
        m = re.search(r"\bint main\(\)\s*\{", text)
        if not m:
            raise SystemExit(f"{s.page}:{s.line}: a snippet is a whole program with int main()")
        # main() alone may end without a return: run() gets the `return 0;` it implies.
        end = closing_brace(text, m.end() - 1)
        text = text[:m.start()] + "int run() {" + text[m.end():end] + "    return 0;\n" + text[end:]
        # s.line is the opening fence's line: the code starts on the next one.
        bodies.append(f"// {s.page}:{s.line}\nnamespace snippet_{k} {{\n#line {s.line + 1} \"{s.page}\"\n{text}\n}} // namespace snippet_{k}\n")
    dispatch = "".join(f'    if (name == "{s.name}") return snippet_{k}::run();\n' for k, s in enumerate(snippets))
    with open(out, "w", encoding="utf-8") as f:
        f.write("// Generated by tests/docs/snippets.py from the README and docs/: do not edit.\n")
        f.write("\n".join(includes) + "\n#include <iostream>\n#include <string_view>\n\n")
        f.write("\n".join(bodies))
        f.write("\nint main(int argc, char** argv) {\n"
                "    if (argc != 2) {\n        std::cerr << \"usage: doc_snippets NAME\\n\";\n        return 2;\n    }\n"
                "    std::string_view name = argv[1];\n" + dispatch +
                "    std::cerr << \"no snippet \" << name << \"\\n\";\n    return 2;\n}\n")


# ------------------------------------------------------------------------------ running


def wait_for_port(port, proc, limit=20.0):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


def stop(proc):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def check_echo_server(program, s, port, path):
    import websockets  # Debian's python3-websockets

    proc = subprocess.Popen([program, s.name], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        if not wait_for_port(port, proc):
            return f"nothing listens on port {port} (exit status {proc.poll()})"

        async def talk():
            async with websockets.connect(f"ws://127.0.0.1:{port}{path}", open_timeout=10) as ws:
                for text in ("hello", "hello again"):
                    await ws.send(text)
                    got = await asyncio.wait_for(ws.recv(), 10)
                    if got != text:
                        return f"sent {text!r}, got {got!r}"
            return None

        return asyncio.run(talk())
    except Exception as e:  # noqa: BLE001 - any failure of the exchange fails the snippet
        return f"{type(e).__name__}: {e}"
    finally:
        stop(proc)
        out = proc.stdout.read() if proc.stdout else ""
        if out.strip():
            print("    " + out.strip().replace("\n", "\n    "))


def check_client(program, s, port):
    import websockets

    ready, done = threading.Event(), None
    loop = asyncio.new_event_loop()

    async def echo(ws, _path=None):
        async for m in ws:
            await ws.send(m)

    async def serve():
        nonlocal done
        done = asyncio.Event()
        async with websockets.serve(echo, "127.0.0.1", port):
            ready.set()
            await done.wait()

    t = threading.Thread(target=lambda: loop.run_until_complete(serve()), daemon=True)
    t.start()
    if not ready.wait(10):
        return f"the echo server on port {port} did not start"
    try:
        r = subprocess.run([program, s.name], capture_output=True, text=True, timeout=60)
        out = (r.stdout + r.stderr).strip()
        if out:
            print("    " + out.replace("\n", "\n    "))
        return None if r.returncode == 0 else f"exit status {r.returncode}"
    except subprocess.TimeoutExpired:
        return "did not finish within 60 s"
    finally:
        loop.call_soon_threadsafe(done.set)
        t.join(10)


def check_runs(program, s):
    try:
        r = subprocess.run([program, s.name], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "did not finish within 60 s"
    out = (r.stdout + r.stderr).strip()
    if out:
        print("    " + out.replace("\n", "\n    "))
    return None if r.returncode == 0 else f"exit status {r.returncode}"


def run(program, pages, have):
    snippets = all_snippets(pages)
    skipped = [s for s in snippets if missing(s, have)]
    for s in skipped:
        print(f"SKIP {s.name} ({s.page}:{s.line}): needs {', '.join(missing(s, have))}, not found by the build")
    snippets = [s for s in snippets if not missing(s, have)]
    try:
        import websockets  # noqa: F401
    except ImportError:
        if any(s.directive[0] != "runs" for s in snippets):
            print("python3-websockets is missing: the server and client snippets cannot be checked")
            return 77
    failed = 0
    for s in snippets:
        kind, args = s.directive[0], s.directive[1:]
        print(f"--- {s.name} ({s.page}:{s.line}): {' '.join(s.directive)}", flush=True)
        if kind == "runs" and not args:
            why = check_runs(program, s)
        elif kind == "echo-server" and 1 <= len(args) <= 2:
            why = check_echo_server(program, s, int(args[0]), args[1] if len(args) > 1 else "/")
        elif kind == "client-of" and len(args) == 1:
            why = check_client(program, s, int(args[0]))
        else:
            why = f"unknown directive {' '.join(s.directive)!r}"
        print(f"{'PASS' if why is None else 'FAIL'} {s.name}" + ("" if why is None else f": {why}"), flush=True)
        failed += why is not None
    print(f"{len(snippets) - failed} passed, {failed} failed" + (f", {len(skipped)} skipped" if skipped else ""))
    return 1 if failed else 0


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "generate":
        have, pages = split_have(sys.argv[3:])
        generate(sys.argv[2], pages, have)
        return 0
    if len(sys.argv) >= 3 and sys.argv[1] == "run":
        have, pages = split_have(sys.argv[3:])
        return run(sys.argv[2], pages, have)
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main())
