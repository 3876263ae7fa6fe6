#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Shows that echo_load's verification can fail: runs it against faulty_echo, which corrupts,
reorders, drops or re-kinds every Nth echo, and expects errors (exit 1) for each fault and a
clean run (exit 0, errors=0) for the correct echo.

    selftest.py ECHO_LOAD FAULTY_ECHO
"""
import subprocess
import sys


def run(load, faulty, fault, extra):
    deflate = ["--deflate"] if "--deflate" in extra else []
    server = subprocess.Popen([faulty, "--fault", fault, "--every", "20"] + deflate, stdout=subprocess.PIPE,
                              text=True)
    try:
        line = server.stdout.readline()
        if not line.startswith("listening on "):
            return None, f"faulty_echo did not start: {line!r}"
        port = line.rsplit(":", 1)[1].strip()
        cmd = [load, "--url", f"ws://127.0.0.1:{port}/", "--name", f"faulty-{fault}", "--connections", "2",
               "--depth", "4", "--seconds", "0.5", "--warmup", "0.1", "--server-pid", str(server.pid)] + extra
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
        return r, None
    finally:
        server.terminate()
        server.wait(10)


def main():
    load, faulty = sys.argv[1], sys.argv[2]
    failures = 0
    cases = [("none", ["--binary", "--size", "64"]), ("none", ["--json", "--size", "1024"]),
             ("flip", ["--binary", "--size", "64"]), ("flip", ["--json", "--size", "1024"]),
             ("swap", ["--text", "--size", "64"]), ("drop", ["--binary", "--size", "3000"]),
             ("kind", ["--text", "--size", "64"])]
    # With --deflate the messages are prepared ones, without a stamp.
    json_deflate = ["--json", "--size", "1024", "--deflate"]
    cases += [("none", json_deflate), ("flip", json_deflate), ("swap", json_deflate), ("drop", json_deflate)]
    # --browser: each message compressed afresh with context takeover, stamped.
    browser = json_deflate + ["--browser"]
    cases += [("none", browser), ("flip", browser), ("swap", browser), ("drop", browser)]
    # --replay: one compressed cycle of 512 stamped messages, sent again and again; the server
    # (corows, keeping the client's window) must inflate every turn of it.
    replay = browser + ["--replay"]
    cases += [("none", replay), ("flip", replay), ("swap", replay), ("drop", replay)]
    for fault, extra in cases:
        r, err = run(load, faulty, fault, extra)
        name = f"{fault} {' '.join(extra)}"
        if err:
            print(f"FAIL {name}: {err}")
            failures += 1
            continue
        line = next((l for l in r.stdout.splitlines() if l.startswith("bench=echo")), "")
        fields = dict(f.split("=", 1) for f in line.split() if "=" in f)
        errors = int(fields.get("errors", "-1"))
        rate = float(fields.get("msgs_per_s", "0"))
        if fault == "none":
            # The server's CPU, and the kernel's part of it (each rounded to 0.01 of a core).
            cpu, sys_ = float(fields.get("server_cpu", "-1")), float(fields.get("server_sys", "-1"))
            ok = r.returncode == 0 and errors == 0 and rate > 0 and 0 < cpu and 0 <= sys_ <= cpu + 0.01
        else:
            ok = r.returncode == 1 and errors > 0
        print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {r.returncode}, {line}")
        if not ok:
            print(r.stderr)
            failures += 1
    print(f"{len(cases) - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
