#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Tests bench/chart.py: the figures it reads from results files of both benchmarks (exact
numbers, ratio columns left out, † and n/a), and, where matplotlib is installed, that it draws
the same SVG bytes twice, without a date or embedded fonts. Without matplotlib the drawing part
is skipped (exit 77, meson's skip) after the reading part passed.

    chart_test.py
"""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True
import chart  # noqa: E402

# Trimmed from a results.md that bench/echo/run.py wrote (2026-12-02): ratio columns, † marks,
# an n/a, a --baseline build, the memory table with an idle, a compressed and an idle wss row.
ECHO = """# Echo benchmark results

Measured 2026-12-02 12:44 UTC on AMD EPYC, 2 cores: server pinned to core 0.

## Echo round trips per second

| load | corows | corows events | Boost.Beast 1.74 | uWebSockets.js dedicated | corows / best peer | corows events / best peer |
|---|---|---|---|---|---|---|
| 1 KiB JSON, deflate (browser-like), 64 x 8 | 28k † | 28k | 5.8k | 4.1k | 1.74x | 1.73x |
| wss 32 B, 64 x 8 | 355k † | 233k † | 94k | n/a | 1.19x | 0.78x |

## Server CPU per echo (µs, lower is better)

The server's CPU time over the measured window divided by the echoes in it.

| load | corows | corows events | Boost.Beast 1.74 | uWebSockets.js dedicated | corows before | best peer / corows | best peer / corows events |
|---|---|---|---|---|---|---|---|
| 1 KiB JSON, deflate (browser-like), 64 x 8 | 18.27 | 18.40 | 171.13 | 53.87 | 21.16 | 3.34x | 3.32x |
| wss 32 B, 64 x 8 | 2.45 | 2.84 | 10.57 | n/a | 2.94 | 1.34x | 1.16x |

### Of which in the kernel (µs per echo)

| load | corows | corows events | Boost.Beast 1.74 | uWebSockets.js dedicated |
|---|---|---|---|---|
| wss 32 B, 64 x 8 | 1.01 | 1.02 | 3.03 | n/a |

## Server memory per connection (KiB, VmRSS growth / connections)

| state | corows | corows events | Boost.Beast 1.74 | uWebSockets.js dedicated | corows before |
|---|---|---|---|---|---|
| idle (10000 connections) | 2.6 | 1.3 | 5.8 | n/a | 2.7 |
| permessage-deflate, after 8 x 1 KiB JSON each way (1000 connections) | 22.1 | 20.9 | 130.6 | 61.0 | 27.1 |
| idle, wss (2000 connections) | 18.3 | 17.4 | 75.9 | n/a | 75.8 |
"""

# The fan-out table as bench/RESULTS.md quotes it (bench/fanout/run.py's), with a failed run.
FANOUT = """## Fan-out across three nodes (issue 14), 2026-12-02 02:05 UTC

| size | peer | nodes | deliveries/s | p50 ms | p99 ms | server CPU µs/delivery | Redis CPU µs/delivery | server cores | load gen core | errors |
|---|---|---|---|---|---|---|---|---|---|---|
| 64 B | corows, Redis backplane | 3 | 499k | 50.1 | 78.1 | 1.07 | 0.000 | 0.54 | 0.44 | 0 |
| 64 B | Socket.IO 4.8.4, Redis adapter | 3 | 89k | 259.0 | 413.1 | 10.75 | 0.026 | 0.96 | 0.20 | 0 |
| 1 KiB | corows, Redis backplane | 3 | 3.4k | 77.1 | 120.1 | 1.64 | 0.024 | 0.52 | 0.58 | 0 |
| 1 KiB | Socket.IO 4.8.4, Redis adapter | | failed | | | | | | | |
"""

failures = []


def check(what, got, want):
    if got != want:
        failures.append(f"{what}: got {got!r}, want {want!r}")


def test_echo_reading():
    r = chart.EchoResults(ECHO)
    deflate, wss = "1 KiB JSON, deflate (browser-like), 64 x 8", "wss 32 B, 64 x 8"
    check("when", r.when, "2026-12-02 12:44 UTC")
    check("loads", r.loads, [deflate, wss])
    check("servers (no ratio columns)", r.servers,
          ["corows", "corows events", "Boost.Beast 1.74", "uWebSockets.js dedicated", "corows before"])
    check("Beast at deflate", r.cpu[(deflate, "Boost.Beast 1.74")], 171.13)
    check("corows events at wss", r.cpu[(wss, "corows events")], 2.84)
    check("n/a", r.cpu[(wss, "uWebSockets.js dedicated")], None)
    check("† from the rates table", sorted(r.load_bound),
          [(deflate, "corows"), (wss, "corows"), (wss, "corows events")])
    check("idle states (not the compressed one)", [(s, n) for s, n, _ in r.idle], [("ws", 10000), ("wss", 2000)])
    check("idle ws", r.idle[0][2], {"corows": 2.6, "corows events": 1.3, "Boost.Beast 1.74": 5.8,
                                    "uWebSockets.js dedicated": None, "corows before": 2.7})
    check("idle wss Beast", r.idle[1][2]["Boost.Beast 1.74"], 75.9)
    chart.without_baseline(r)
    check("--no-baseline servers", r.servers, ["corows", "corows events", "Boost.Beast 1.74", "uWebSockets.js dedicated"])
    check("--no-baseline idle wss", r.idle[1][2], {"corows": 18.3, "corows events": 17.4, "Boost.Beast 1.74": 75.9,
                                                   "uWebSockets.js dedicated": None})


def test_section_reading():
    # A section of bench/RESULTS.md: deeper headings, the date in the heading, no Measured line.
    section = "## Echo against the field, 2026-12-01 17:56 UTC\n\n" + ECHO.replace("\n## ", "\n### ").replace(
        "Measured 2026-12-02 12:44 UTC on", "On")
    r = chart.EchoResults(section)
    check("section when", r.when, "2026-12-01 17:56 UTC")
    check("section CPU", r.cpu[("wss 32 B, 64 x 8", "corows")], 2.45)
    check("section idle", [(s, n) for s, n, _ in r.idle], [("ws", 10000), ("wss", 2000)])


def test_fanout_reading():
    r = chart.FanoutResults(FANOUT)
    check("fanout when", r.when, "2026-12-02 02:05 UTC")
    check("sizes", r.sizes, ["64 B", "1 KiB"])
    check("peers", r.peers, ["corows, Redis backplane", "Socket.IO 4.8.4, Redis adapter"])
    check("499k", r.figures[("64 B", "corows, Redis backplane")], (499000.0, 1.07))
    check("3.4k", r.figures[("1 KiB", "corows, Redis backplane")][0], 3400.0)
    check("failed", r.figures[("1 KiB", "Socket.IO 4.8.4, Redis adapter")], (None, None))


def run_chart(*args, env=None):
    return subprocess.run([sys.executable, os.path.join(HERE, "chart.py")] + list(args), capture_output=True,
                          text=True, timeout=60, env=env)


def test_refusals(tmp):
    empty = os.path.join(tmp, "empty.md")
    with open(empty, "w") as f:
        f.write("# Echo benchmark results\n\nNothing measured.\n")
    r = run_chart("echo", empty, tmp)
    check("no table: exit", r.returncode, 1)
    check("no table: message", r.stderr.strip(),
          f"chart.py: no Server CPU per echo or Server memory per connection table in {empty}")
    check("usage: exit", run_chart("pie", empty, tmp).returncode, 2)
    check("--no-baseline is for echo", run_chart("fanout", "--no-baseline", empty, tmp).returncode, 2)
    # Without matplotlib: one line, exit 0, never a traceback. A module named matplotlib that
    # fails to import stands in for a missing one; the variable stops the retry elsewhere.
    fake = os.path.join(tmp, "fake")
    os.makedirs(fake)
    with open(os.path.join(fake, "matplotlib.py"), "w") as f:
        f.write("raise ImportError('not here')\n")
    source = os.path.join(tmp, "echo.md")
    r = run_chart("echo", source, os.path.join(tmp, "none"),
                  env=dict(os.environ, PYTHONPATH=fake, COROWS_CHART_REEXEC="1"))
    check("no matplotlib: exit", r.returncode, 0)
    check("no matplotlib: output", (r.stdout, r.stderr),
          ("chart.py: no matplotlib (apt-get install python3-matplotlib): no charts drawn\n", ""))
    check("no matplotlib: nothing written", os.path.exists(os.path.join(tmp, "none")), False)


def test_drawing(tmp):
    """True if drawn, False where matplotlib is missing."""
    source = os.path.join(tmp, "echo.md")
    fan = os.path.join(tmp, "fanout.md")
    with open(fan, "w") as f:
        f.write(FANOUT)
    outputs = []
    for n in (1, 2):
        out = os.path.join(tmp, f"out{n}")
        r = run_chart("echo", source, out)
        if "no matplotlib" in r.stdout:
            return False
        check("echo exit", (r.returncode, r.stderr), (0, ""))
        check("echo wrote", r.stdout, "".join(f"wrote {os.path.join(out, name)}\n" for name in ("cpu.svg", "memory.svg")))
        outputs.append(out)
    f = run_chart("fanout", fan, outputs[0])
    check("fanout exit", (f.returncode, f.stderr), (0, ""))
    check("fanout wrote", f.stdout, f"wrote {os.path.join(outputs[0], 'deliveries.svg')}\n")
    for name in ("cpu.svg", "memory.svg", "deliveries.svg"):
        with open(os.path.join(outputs[0], name), "rb") as a:
            svg = a.read().decode()
        if name != "deliveries.svg":  # one chart drawn twice is enough to show the bytes repeat
            with open(os.path.join(outputs[1], name), "rb") as b:
                check(f"{name} drawn twice is the same bytes", svg.encode() == b.read(), True)
        check(f"{name} has no date", "<dc:date>" in svg, False)
        check(f"{name} embeds no glyphs", "<path id=\"DejaVu" in svg, False)
    with open(os.path.join(outputs[0], "cpu.svg")) as f:
        cpu = f.read()
    # Text stays text (svg.fonttype none): the figures and names are in the file as written.
    for text in ("171", "18.3 †", "2.84 †", "uWebSockets.js dedicated", "browser-like", "corows before"):
        check(f"cpu.svg says {text!r}", text in cpu, True)
    with open(os.path.join(outputs[0], "memory.svg")) as f:
        memory = f.read()
    for text in ("idle ws, 10,000 connections", "idle wss, 2,000 connections", "75.9"):
        check(f"memory.svg says {text!r}", text in memory, True)
    check("memory.svg leaves out the compressed state", "130.6" in memory, False)
    check("memory.svg shows the baseline build", "75.8" in memory, True)
    out = os.path.join(tmp, "field")
    r = run_chart("echo", "--no-baseline", source, out)
    check("--no-baseline exit", (r.returncode, r.stderr), (0, ""))
    for name in ("cpu.svg", "memory.svg"):
        with open(os.path.join(out, name)) as f:
            check(f"--no-baseline {name} has no baseline build", "corows before" in f.read(), False)
    return True


def main():
    test_echo_reading()
    test_section_reading()
    test_fanout_reading()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "echo.md"), "w") as f:
            f.write(ECHO)
        test_refusals(tmp)
        drawn = test_drawing(tmp)
    for f in failures:
        print(f"FAIL {f}")
    if failures:
        return 1
    if not drawn:
        print("reading passed; matplotlib missing, drawing not tested")
        return 77
    print("chart: reading and drawing passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
