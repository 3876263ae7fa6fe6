#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Echo benchmark driver: corows' examples/echo_server, with a coroutine per connection
("corows") and with callbacks ("corows-events", --events), against the peer servers, in one run.

    bench/echo/run.py [--seconds S] [--warmup S] [--visits N] [--quick] [--servers corows,beast,...]
                      [--build DIR] [--idle-conns N] [--deflate-conns N] [--no-memory | --no-throughput]

Each server runs pinned to core 0 and the load generator (echo_load) to core 1. For every
server it measures the matrix of loads (payload 32 B, 1 KiB, 16 KiB x connections/in-flight
1x1, 1x64, 64x8, 1000x1, deflate off; 1 KiB JSON with permessage-deflate at 64x8, as prepared
messages without context takeover and browser-like, each compressed with context takeover,
and browser-like replayed: the same bytes, compressed once per cycle and sent again, so that
the generator's own compression does not decide how hard a server is driven (echo_load --replay);
32 B and 1 KiB at 64x8 over TLS, wss), then the server's memory per connection: VmRSS growth
over N idle connections, over N connections with compression after messages flowed, and over N
idle wss connections. The wss points use a throwaway self-signed certificate (ECDSA P-256)
made with the openssl command in the build directory. It prints every echo_load line as it
comes, then each corows figure as a ratio to each peer's, and writes results.md (Markdown
tables) next to this script (or in --out), then draws it with bench/chart.py: cpu.svg (server
CPU per echo by load and server) and memory.svg (memory per idle connection), beside it and
shown in it. Without matplotlib (python3-matplotlib) the run says so and draws nothing.

Peers that are not built or do not load are skipped with a `bench=echo server=NAME skipped=...`
line. tools/bench-echo installs and builds everything first, then runs this.
"""
import argparse
import datetime
import os
import queue
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # bench/, for run_common
sys.dont_write_bytecode = True  # no __pycache__ in the tree
from run_common import Ports, ServerProcess, cap_cpu, draw_charts, fmt_rate, fmt_ratio, machine, parse_line  # noqa: E402

SIZES = [32, 1024, 16384]
LOADS = [(1, 1), (1, 64), (64, 8), (1000, 1)]  # (connections, messages in flight on each)
SERVER_CPU = "0"
LOAD_CPU = "1"
PEER_NAMES = {
    "corows": "corows",
    "corows-events": "corows events",
    "corows-tuple": "corows as_tuple",
    "beast": "Boost.Beast 1.74",
    "wspp": "websocketpp 0.8.2",
    "ws": "Node ws 8",
    "uws": "uWebSockets.js",
    "uws-dedicated": "uWebSockets.js dedicated",
    "baseline": "corows before",
    "baseline-events": "corows events before",
}
# corows' two ways of serving (a coroutine per connection; callbacks, run_events): each is
# compared with the peers, not with the other.
OURS = ("corows", "corows-events")
# Other builds or modes of corows, shown side by side but never counted as a peer.
VARIANTS = ("corows-tuple", "baseline", "baseline-events")
# Servers that differ from another only with permessage-deflate: they run the deflate points.
DEFLATE_ONLY = ("uws-dedicated",)


class Point:
    """One load: what echo_load is asked to do."""

    def __init__(self, size, conns, depth, deflate=False, json=False, browser=False, tls=False, replay=False):
        self.size, self.conns, self.depth, self.deflate, self.json = size, conns, depth, deflate, json
        # browser: the client compresses every message with context takeover, as browsers do
        self.browser = browser
        # replay (with browser): the same stream of bytes, compressed once and sent in turn
        self.replay = replay
        self.tls = tls  # wss://

    def key(self):
        return (self.size, self.conns, self.depth, self.deflate, self.browser, self.replay, self.tls)

    def deflate_field(self):
        """What echo_load's line says in deflate=."""
        return "replay" if self.replay else "browser" if self.browser else str(int(self.deflate))

    def label(self):
        size = f"{self.size // 1024} KiB" if self.size >= 1024 else f"{self.size} B"
        mode = " (browser-like, replayed)" if self.replay else " (browser-like)" if self.browser else ""
        what = f"{size} JSON, deflate{mode}" if self.deflate else size
        return ("wss " if self.tls else "") + f"{what}, {self.conns} x {self.depth}"

    def args(self):
        a = ["--size", str(self.size), "--connections", str(self.conns), "--depth", str(self.depth)]
        a += ["--json"] if self.json else ["--binary"]
        if self.deflate:
            a.append("--deflate")
        if self.browser:
            a.append("--browser")
        if self.replay:
            a.append("--replay")
        return a


def matrix():
    points = [Point(s, c, d) for s in SIZES for (c, d) in LOADS]
    points.append(Point(1024, 64, 8, deflate=True, json=True))
    points.append(Point(1024, 64, 8, deflate=True, json=True, browser=True))
    points.append(Point(1024, 64, 8, deflate=True, json=True, browser=True, replay=True))
    points += [Point(s, 64, 8, tls=True) for s in (32, 1024)]
    return points


def tls_files(build):
    """[--cert, FILE, --key, FILE] for the wss points: a self-signed ECDSA P-256 certificate for
    127.0.0.1, made once in the build directory."""
    d = os.path.join(build, "bench-tls")
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    if not (os.path.exists(cert) and os.path.exists(key)):
        os.makedirs(d, exist_ok=True)
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                        "-days", "3650", "-subj", "/CN=127.0.0.1", "-keyout", key, "-out", cert],
                       check=True, capture_output=True)
    return ["--cert", cert, "--key", key]


# --baseline DIR: a build of an earlier corows (its examples/echo_server), run as two more
# servers, so that a change is measured against what it changes in the same run.
BASELINE = [None]


def server_commands(build):
    peers = os.path.join(build, "peers")
    node = shutil.which("node") or "node"
    base = os.path.join(BASELINE[0] or build, "examples", "echo_server")
    return {
        "baseline": lambda port, d: [base, "--port", str(port)] + (["--deflate"] if d else []),
        "baseline-events": lambda port, d: [base, "--events", "--port", str(port)] + (["--deflate"] if d else []),
        "corows": lambda port, d: [os.path.join(build, "examples", "echo_server"), "--port", str(port)]
        + (["--deflate"] if d else []),
        "corows-events": lambda port, d: [os.path.join(build, "examples", "echo_server"), "--events", "--port",
                                          str(port)] + (["--deflate"] if d else []),
        "corows-tuple": lambda port, d: [os.path.join(build, "examples", "echo_server"), "--as-tuple", "--port",
                                         str(port)] + (["--deflate"] if d else []),
        "beast": lambda port, d: [os.path.join(peers, "beast_echo"), str(port)] + (["--deflate"] if d else []),
        "wspp": lambda port, d: [os.path.join(peers, "wspp_echo"), str(port)] + (["--deflate"] if d else []),
        "ws": lambda port, d: [node, os.path.join(HERE, "ws_echo.js"), str(port)] + (["--deflate"] if d else []),
        "uws": lambda port, d: [node, os.path.join(HERE, "uws_echo.js"), str(port)] + (["--deflate"] if d else []),
        # uWS' other deflate mode (see uws_echo.js); the same server as "uws" without deflate.
        "uws-dedicated": lambda port, d: [node, os.path.join(HERE, "uws_echo.js"), str(port)]
        + (["--deflate", "--dedicated"] if d else []),
    }


def unavailable(name, build):
    """Why server `name` cannot run here, or None."""
    cmd = server_commands(build)[name](0, False)
    if name in ("ws", "uws", "uws-dedicated"):
        if not shutil.which("node"):
            return "node not installed"
        if name == "ws":
            r = subprocess.run(["node", "-e", "require('ws')"], cwd=HERE, capture_output=True, text=True)
            return None if r.returncode == 0 else "npm package ws not installed (run bench/echo/setup_peers.sh)"
        r = subprocess.run(["node", cmd[1], "--check"], cwd=HERE, capture_output=True, text=True)
        if r.returncode == 0:
            return None
        return (r.stderr.strip().splitlines() or ["does not load"])[-1].replace("uws: ", "")
    if not os.access(cmd[0], os.X_OK):
        return f"{cmd[0]} not built (run tools/bench-echo or bench/echo/setup_peers.sh)"
    return None


# Each server start gets a new port (no TIME_WAIT surprises).
free_port = Ports(19100).free


# --server-share F: each server may use F of its core (a cgroup quota), so that the server, not
# the load generator, is what runs out of CPU, and CPU per echo measures each server's capacity.
SHARE = [None]


class Server(ServerProcess):
    def __init__(self, name, build, deflate, tls=False):
        port = free_port()
        # Every server takes --cert FILE --key FILE after its other arguments.
        cmd = server_commands(build)[name](port, deflate) + (tls_files(build) if tls else [])
        self.tls = tls
        super().__init__(name, cmd, port, cwd=HERE, cpu=SERVER_CPU, wait=15)
        self.uncap = None
        if SHARE[0]:
            try:
                self.uncap = cap_cpu(self.proc.pid, name, SHARE[0])
            except RuntimeError:
                super().stop()
                raise
        time.sleep(0.2)  # let the probe connection's teardown pass before measuring

    def stop(self):
        super().stop()
        if self.uncap:
            self.uncap()
            self.uncap = None

    def url(self):
        return f"{'wss' if self.tls else 'ws'}://127.0.0.1:{self.port}/"


def run_point(load, server, point, seconds, warmup):
    cmd = ["taskset", "-c", LOAD_CPU, load, "--url", server.url(), "--name", server.name,
           "--seconds", str(seconds), "--warmup", str(warmup), "--server-pid", str(server.proc.pid)] + point.args()
    limit = seconds + warmup + 60
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=limit)
    except subprocess.TimeoutExpired:
        print(f"bench=echo server={server.name} size={point.size} conns={point.conns} depth={point.depth} "
              f"deflate={point.deflate_field()} tls={int(point.tls)} failed=timeout", flush=True)
        return None
    lines = [l for l in r.stdout.splitlines() if l.startswith("bench=echo")]
    if not lines:
        why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        print(f"bench=echo server={server.name} size={point.size} conns={point.conns} depth={point.depth} "
              f"deflate={point.deflate_field()} tls={int(point.tls)} failed={why!r}", flush=True)
        return None
    print(lines[-1], flush=True)
    for l in r.stderr.strip().splitlines()[:3]:
        print(f"  {l}", flush=True)
    return parse_line(lines[-1])


def read_lines(pipe, q):
    for line in pipe:
        q.put(line)
    q.put(None)


def measure_memory(load, build, name, conns, deflate, tls=False):
    """KiB of server RSS per connection: idle ones, or (deflate) after 1 KiB JSON messages flowed."""
    server = Server(name, build, deflate, tls)
    try:
        time.sleep(0.3)
        before = server.rss_kib()
        cmd = ["taskset", "-c", LOAD_CPU, load, "--url", server.url(), "--connections", str(conns), "--hold"]
        if deflate:
            cmd += ["--rounds", "8", "--json", "--size", "1024", "--deflate"]
        gen = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        q = queue.Queue()
        threading.Thread(target=read_lines, args=(gen.stdout, q), daemon=True).start()
        ready = None
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                line = q.get(timeout=1)
            except queue.Empty:
                continue
            if line is None:
                break
            if line.startswith("ready"):
                ready = parse_line(line)
                break
        try:
            if ready is None:
                err = gen.stderr.read() if gen.poll() is not None else "no ready line in 120 s"
                return {"error": (err.strip().splitlines() or ["failed"])[-1]}
            time.sleep(1.0)  # let the server finish whatever the last handshakes started
            after = server.rss_kib()
            held = int(ready["conns"])
            return {"before": before, "after": after, "conns": held, "errors": int(ready["errors"]),
                    "per_conn": (after - before) / held if held else 0.0}
        finally:
            if gen.poll() is None:
                gen.send_signal(signal.SIGTERM)
                try:
                    gen.wait(30)
                except subprocess.TimeoutExpired:
                    gen.kill()
                    gen.wait()
    finally:
        server.stop()


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return 0.0


def point_table(L, ran, peers, points, ratio_title, value, cell, ratio):
    """A Markdown table, one row per point and one column per server, then corows' ratios:
    value(server, point) is the figure (or None), cell(server, point, figure) its text, and
    ratio(our server, point, our figure, the peers' figures) a last column for each of OURS that ran."""
    ours = [s for s in OURS if s in ran] if peers else []
    head = "| load | " + " | ".join(PEER_NAMES[s] for s in ran)
    head += "".join(" | " + ratio_title.replace("corows", PEER_NAMES[s]) for s in ours)
    L.append(head + " |")
    L.append("|---" * (len(ran) + 1 + len(ours)) + "|")
    for p in points:
        values = {s: value(s, p) for s in ran}
        row = f"| {p.label()} | " + " | ".join(cell(s, p, values[s]) for s in ran)
        for s in ours:
            row += " | " + ratio(s, p, values[s], [values[x] for x in peers if values[x]])
        L.append(row + " |")
    L.append("")


def write_throughput(L, ran, peers, points, results, visits):
    L.append("## Echo round trips per second")
    L.append("")
    L.append("Payload, connections x messages in flight on each. Every echo is verified byte for byte. "
             "† marks a point where the load generator's core was saturated and the server's was not: "
             "the server could do more than shown.")
    L.append("")
    point_table(L, ran, peers, points, "corows / best peer",
                lambda s, p: rate(results, s, p),
                lambda s, p, v: fmt_rate(v) + err_mark(results, s, p),
                lambda s, p, mine, theirs: fmt_ratio(mine, max(theirs, default=None)))
    L.append("## Server CPU per echo (µs, lower is better)")
    L.append("")
    L.append("The server's CPU time over the measured window divided by the echoes in it: how much "
             "each echo costs the server, whichever side was the bottleneck.")
    L.append("")
    point_table(L, ran, peers, points, "best peer / corows",
                lambda s, p: cpu_per_echo(results, s, p),
                lambda s, p, v: f"{v:.2f}" if v else "n/a",
                lambda s, p, mine, theirs: fmt_ratio(min(theirs, default=None), mine))
    L.append("### Of which in the kernel (µs per echo)")
    L.append("")
    L.append("The part of each server's CPU per echo that the kernel accounts as system time (system "
             "calls, TCP, copies between the socket and the process): a server changes it only through "
             "the system calls it makes, and servers that make the same calls per batch pay about the same.")
    L.append("")
    point_table(L, ran, [], points, "",
                lambda s, p: cpu_per_echo(results, s, p, "server_sys"),
                lambda s, p, v: f"{v:.2f}" if v is not None else "n/a",
                None)
    L.append("### Visit by visit (median of the visits)")
    L.append("")
    L.append("Each visit runs every server once, back to back, so the servers of one visit share the "
             "machine's background load. The median of the visits' CPU per echo, and the median of "
             "each visit's ratio (the visit's best peer against corows in that same visit): on a "
             "noisy machine these say more than the best visits above.")
    L.append("")
    point_table(L, ran, peers, points, "best peer / corows",
                lambda s, p: median_of(visits.get((s, p.key()), [])),
                lambda s, p, v: f"{v:.2f}" if v else "n/a",
                lambda s, p, mine, theirs: fmt_ratio(visit_ratio(visits, peers, s, p), 1))
    L.append("## Latency with 1 connection x 1 in flight (µs, p50 / p99 / p99.9)")
    L.append("")
    L.append("| payload | " + " | ".join(PEER_NAMES[s] for s in ran) + " |")
    L.append("|---" * (len(ran) + 1) + "|")
    for p in points:
        if (p.conns, p.depth) != (1, 1):
            continue
        cells = []
        for s in ran:
            r = results.get((s, p.key()))
            cells.append(f"{r['p50_us']} / {r['p99_us']} / {r['p999_us']}" if r else "n/a")
        L.append(f"| {p.label().split(',')[0]} | " + " | ".join(cells) + " |")
    L.append("")


def write_markdown(path, servers, points, results, memory, args, skipped, command, visits):
    ran = [s for s in servers if s not in skipped]
    peers = [s for s in ran if s not in OURS and s not in VARIANTS]
    L = []
    L.append("# Echo benchmark results")
    L.append("")
    L.append(f"Measured {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC on {machine()}: "
             f"server pinned to core {SERVER_CPU}, load generator (bench/echo/echo_load, corows' client) to core "
             f"{LOAD_CPU}, the best of {args.visits} interleaved visits of {args.seconds} s per point (after "
             f"{args.warmup} s of warm-up each)"
             + (f", each server capped at {args.server_share:g} of its core by a cgroup quota, so that the "
                f"server and not the load generator runs out of CPU" if args.server_share else "")
             + f". Command: `{command}`. "
             f"Load average before the run: {args.load_before:.2f}" + (" (a busy machine: noisy figures)."
                                                                      if args.load_before > 0.5 else "."))
    L.append("")
    for s in skipped:
        L.append(f"- {PEER_NAMES[s]} skipped: {skipped[s]}")
    if skipped:
        L.append("")
    if results:
        write_throughput(L, ran, peers, points, results, visits)
    if memory:
        L.append("## Server memory per connection (KiB, VmRSS growth / connections)")
        L.append("")
        L.append("| state | " + " | ".join(PEER_NAMES[s] for s in ran) + " |")
        L.append("|---" * (len(ran) + 1) + "|")
        for kind, title in MEMORY_STATES:
            if not any((s, kind) in memory for s in ran):
                continue  # not measured in this run (--points)
            cells = []
            n = None
            for s in ran:
                m = memory.get((s, kind))
                if not m or "error" in m:
                    cells.append("n/a")
                    continue
                n = m["conns"]
                cells.append(f"{m['per_conn']:.1f}")
            L.append(f"| {title} ({n if n else '?'} connections) | " + " | ".join(cells) + " |")
        L.append("")
    with open(path, "w") as f:
        f.write("\n".join(L))


# Memory measurements: (kind, the row's title).
MEMORY_STATES = (("idle", "idle"), ("deflate", "permessage-deflate, after 8 x 1 KiB JSON each way"),
                 ("idle-wss", "idle, wss"))


def rate(results, server, point):
    r = results.get((server, point.key()))
    return float(r["msgs_per_s"]) if r else None


def err_mark(results, server, point):
    r = results.get((server, point.key()))
    if not r:
        return ""
    mark = f" ({r['errors']} errors)" if r.get("errors", "0") != "0" else ""
    if load_bound(r):
        mark += " †"
    return mark


def line_cpu(r, field="server_cpu"):
    """Microseconds of server CPU (or of `field`, such as server_sys) per echo in one parsed
    bench=echo line, or None."""
    try:
        rate_ = float(r["msgs_per_s"]) if r else 0.0
        return float(r[field]) * 1e6 / rate_ if rate_ > 0 else None
    except (KeyError, ValueError):
        return None


def cpu_per_echo(results, server, point, field="server_cpu"):
    """Microseconds of server CPU (or of `field`) per echo at `point` in its best visit, or None."""
    return line_cpu(results.get((server, point.key())), field)


def median_of(values):
    """The median of the values that are not None, or None."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def visit_ratio(visits, peers, mine, point):
    """The median, over the visits where both ran cleanly, of the best peer's CPU per echo in
    that visit divided by `mine`'s; None if no visit had both."""
    ours = visits.get((mine, point.key()), [])
    ratios = []
    for i, c in enumerate(ours):
        theirs = [v[i] for v in (visits.get((s, point.key())) for s in peers) if v and v[i] is not None]
        if c and theirs:
            ratios.append(min(theirs) / c)
    return median_of(ratios)


def load_bound(r):
    """True when the load generator, not the server, used up its core: the figure is a floor."""
    full = 0.9 * (SHARE[0] or 1.0)  # a capped server is saturated at its share
    try:
        return float(r.get("load_cpu", 0)) >= 0.9 and float(r.get("server_cpu", 1)) < full
    except ValueError:
        return False


def show_charts(md):
    """Draws results.md's charts beside it (bench/chart.py) and shows them at its end."""
    titles = {"cpu.svg": "server CPU per echo", "memory.svg": "server memory per idle connection"}
    drawn = draw_charts("echo", md)
    if drawn:
        with open(md, "a") as f:
            f.write("\n" + "\n\n".join(f"![{titles.get(os.path.basename(d), 'chart')}]({os.path.basename(d)})"
                                        for d in drawn) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=float, default=3.0, help="measured seconds per visit (default 3)")
    ap.add_argument("--warmup", type=float, default=0.5, help="warm-up seconds per visit (default 0.5)")
    ap.add_argument("--visits", type=int, default=2,
                    help="visits per server and point, interleaved; the best is kept (default 2)")
    ap.add_argument("--quick", action="store_true", help="smoke run: 1 s per point, fewer memory connections")
    ap.add_argument("--servers", default="corows,corows-events,beast,wspp,ws,uws,uws-dedicated",
                    help="comma-separated subset")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"), help="build directory")
    ap.add_argument("--idle-conns", type=int, default=None, help="idle connections for memory (default 10000)")
    ap.add_argument("--deflate-conns", type=int, default=None,
                    help="connections for memory with compression (default 1000)")
    ap.add_argument("--tls-conns", type=int, default=None,
                    help="idle wss connections for memory (default 2000)")
    ap.add_argument("--points", default=None,
                    help="comma-separated words: only the loads and memory states whose label has one of "
                         "them (e.g. wss,browser)")
    ap.add_argument("--no-memory", action="store_true", help="skip the memory measurements")
    ap.add_argument("--no-throughput", action="store_true", help="only the memory measurements")
    ap.add_argument("--out", default=HERE, help="where results.md and its charts (cpu.svg, memory.svg) go")
    ap.add_argument("--baseline", default=None,
                    help="build directory of an earlier corows: adds servers baseline and baseline-events")
    ap.add_argument("--server-share", type=float, default=None,
                    help="each server may use this fraction of its core (a cgroup CPU quota; needs root), so "
                         "that servers faster than the load generator are measured at their own limit")
    args = ap.parse_args()
    if args.server_share is not None:
        if not 0.05 <= args.server_share < 1:
            sys.exit("--server-share takes a fraction of a core between 0.05 and 1")
        SHARE[0] = args.server_share
    if args.baseline:
        BASELINE[0] = os.path.abspath(args.baseline)
        if "--servers" not in sys.argv:
            args.servers += ",baseline,baseline-events"
    if args.quick:
        args.seconds, args.warmup, args.visits = 1.0, 0.3, 1
    args.build = os.path.abspath(args.build)  # servers run with bench/echo as their directory
    idle_conns = args.idle_conns or (1000 if args.quick else 10000)
    deflate_conns = args.deflate_conns or (200 if args.quick else 1000)
    tls_conns = args.tls_conns or (200 if args.quick else 2000)
    command = "tools/bench-echo" + ("".join(f" {a}" for a in sys.argv[1:]))

    # Servers and the load generator inherit this: every connection is a file descriptor.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < idle_conns + 100:
        print(f"RLIMIT_NOFILE is {hard}: using {hard - 100} idle connections")
        idle_conns = hard - 100
    if not shutil.which("taskset"):
        sys.exit("taskset not found (util-linux)")
    load = os.path.join(args.build, "bench", "echo_load")
    if not os.access(load, os.X_OK):
        sys.exit(f"{load} not built: run tools/bench-echo")

    args.load_before = load_average()
    if args.load_before > 0.5:
        print(f"warning: load average {args.load_before:.2f}: other work on this machine makes the figures noisy",
              flush=True)
    servers = [s.strip() for s in args.servers.split(",") if s.strip()]
    for s in servers:
        if s not in PEER_NAMES:
            sys.exit(f"unknown server {s}; known: {', '.join(PEER_NAMES)}")
    skipped = {}
    for s in servers:
        why = unavailable(s, args.build)
        if why:
            skipped[s] = why
            print(f"bench=echo server={s} skipped={why!r}", flush=True)

    words = [w.strip() for w in (args.points or "").split(",") if w.strip()]
    wanted = lambda label: not words or any(w in label for w in words)
    points = [p for p in matrix() if wanted(p.label())]
    results, memory = {}, {}
    visits = {}  # (server, point key) -> CPU per echo of each visit, None where it failed
    ran = [s for s in servers if s not in skipped]
    # Every server of a mode runs at once (idle ones cost nothing) and each point visits them
    # all in turn, in an order that rotates: a change in the machine's background load then
    # falls on every server alike instead of on whichever ran at that moment.
    for deflate, tls in ((False, False), (True, False), (False, True)):
        todo = [p for p in points if (p.deflate, p.tls) == (deflate, tls) and not args.no_throughput]
        if not todo:
            continue
        running = {}
        try:
            for name in ran:
                if name in DEFLATE_ONLY and not deflate:
                    continue  # the same server as another one without deflate
                try:
                    running[name] = Server(name, args.build, deflate, tls)
                except RuntimeError as e:
                    print(f"bench=echo server={name} failed={str(e)!r}", flush=True)
            # Each server visits each point `visits` times, interleaved with the others, and
            # the best visit counts: other tenants of the machine only ever slow a visit down.
            for i, p in enumerate(todo):
                for visit in range(args.visits):
                    names = list(running)
                    turn = (i + visit) % len(names) if names else 0
                    for name in names[turn:] + names[:turn]:
                        r = run_point(load, running[name], p, args.seconds, args.warmup)
                        failed = lambda x: x.get("errors", "0") != "0"
                        clean = r and not failed(r)
                        visits.setdefault((name, p.key()), [None] * args.visits)[visit] = line_cpu(r) if clean else None
                        best = results.get((name, p.key()))
                        # A visit with echo errors stays on record whatever its speed.
                        if r and (not best or (not failed(best) and
                                               (failed(r) or float(r["msgs_per_s"]) > float(best["msgs_per_s"])))):
                            results[(name, p.key())] = r
                        if not running[name].alive():
                            print(f"bench=echo server={name} died: {running[name].errors()!r}", flush=True)
                            running[name].stop()
                            try:
                                running[name] = Server(name, args.build, deflate, tls)
                            except RuntimeError as e:
                                print(f"bench=echo server={name} failed={str(e)!r}", flush=True)
                                del running[name]
        finally:
            for server in running.values():
                server.stop()
    # Memory: a fresh server for each measurement, one at a time.
    for name in ran:
        if args.no_memory:
            break
        for kind, conns in (("idle", idle_conns), ("deflate", deflate_conns), ("idle-wss", tls_conns)):
            if not wanted(dict(MEMORY_STATES)[kind]) or (name in DEFLATE_ONLY and kind != "deflate"):
                continue
            try:
                m = measure_memory(load, args.build, name, conns, kind == "deflate", kind == "idle-wss")
            except (RuntimeError, OSError) as e:
                m = {"error": str(e)}
            memory[(name, kind)] = m
            if "error" in m:
                print(f"bench=echo_memory server={name} state={kind} failed={m['error']!r}", flush=True)
            else:
                print(f"bench=echo_memory server={name} state={kind} conns={m['conns']} rss_before_kib={m['before']} "
                      f"rss_after_kib={m['after']} kib_per_conn={m['per_conn']:.2f} errors={m['errors']}",
                      flush=True)

    # corows against each peer of this same run.
    for mine in (s for s in OURS if s in ran):
        for p in points:
            c = results.get((mine, p.key()))
            if not c:
                continue
            for s in ran:
                r = results.get((s, p.key()))
                if s in OURS or s in VARIANTS or not r:
                    continue
                msgs = float(c["msgs_per_s"]) / float(r["msgs_per_s"]) if float(r["msgs_per_s"]) else 0
                p50 = float(c["p50_us"]) / float(r["p50_us"]) if float(r["p50_us"]) else 0
                print(f"ratio server={mine} load={p.label().replace(' ', '')!s} vs={s} msgs_per_s={msgs:.2f}x "
                      f"p50_us={p50:.2f}x", flush=True)
        for kind, _ in MEMORY_STATES:
            c = memory.get((mine, kind))
            if not c or "error" in c:
                continue
            for s in ran:
                r = memory.get((s, kind))
                if s in OURS or s in VARIANTS or not r or "error" in r or r["per_conn"] <= 0:
                    continue
                print(f"ratio server={mine} memory={kind} vs={s} kib_per_conn={c['per_conn'] / r['per_conn']:.2f}x",
                      flush=True)

    os.makedirs(args.out, exist_ok=True)
    md = os.path.join(args.out, "results.md")
    write_markdown(md, servers, points, results, memory, args, skipped, command, visits)
    print(f"wrote {md}")
    show_charts(md)
    # Failed points, echo errors and failed memory measurements make the run fail.
    expected = 0 if args.no_throughput else sum(1 for s in servers if s not in skipped for p in points
                                                if p.deflate or s not in DEFLATE_ONLY)
    bad = expected - len(results) + sum(1 for r in results.values() if r.get("errors", "0") != "0")
    bad += sum(1 for m in memory.values() if "error" in m or m.get("errors", 0))
    if bad:
        print(f"{bad} points failed or had errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
