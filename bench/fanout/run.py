#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Fan-out benchmark driver: one publisher, S subscribers spread over three nodes, the same
messages through corows' examples/chat_server (a hub with the Redis backplane) and through
Socket.IO 4 with @socket.io/redis-adapter, on one redis-server, in one run.

    bench/fanout/run.py [--subscribers 1000] [--messages 500] [--size 64[,1024,...]]
                        [--window 32 | --rate R] [--peers corows,corows-alone,socketio]
                        [--nodes 3] [--visits 1] [--build DIR] [--no-pin] [--out FILE]

It starts a redis-server of its own (on a free port, no persistence), then for each size, in
turn: three chat_server nodes with --redis ("corows"), one chat_server alone without Redis
("corows-alone"), three Socket.IO nodes with the Redis adapter ("socketio"); "socketio-alone"
(one Socket.IO node, no adapter) is there to be asked for. Each peer gets fresh nodes and one
run of fanout_load, which checks that every subscriber got every message once and in order,
and prints a bench=fanout line; at the end come a Markdown table and the ratios of corows to
Socket.IO, also written to results.md here (or --out FILE), and bench/chart.py draws them beside
it as deliveries.svg (deliveries per second and server CPU per delivery, by size and peer;
without matplotlib, python3-matplotlib, the run says so and draws nothing).

The nodes and redis-server run pinned to core 0 and the load generator to core 1 (--no-pin:
wherever the kernel puts them). Socket.IO is skipped, with a bench=fanout ... skipped= line,
when node or its npm packages are missing (bench/fanout/setup_peers.sh installs them).
tools/bench-fanout installs and builds everything first, then runs this.
"""
import argparse
import datetime
import json
import os
import resource
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))  # bench/, for run_common
sys.dont_write_bytecode = True  # no __pycache__ in the tree
from run_common import Ports, ServerProcess, draw_charts, fmt_rate, fmt_ratio, machine, parse_line  # noqa: E402

SERVER_CPU = "0"
LOAD_CPU = "1"

# name: (label, protocol, nodes: None for --nodes or 1, with Redis)
PEERS = {
    "corows": ("corows, Redis backplane", "corows", None, True),
    "corows-alone": ("corows, one node", "corows", 1, False),
    "socketio": ("Socket.IO, Redis adapter", "socketio", None, True),
    "socketio-alone": ("Socket.IO, one node", "socketio", 1, False),
}
DEFAULT_PEERS = "corows,corows-alone,socketio"


def socketio_version():
    try:
        with open(os.path.join(HERE, "node_modules", "socket.io", "package.json")) as f:
            return json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        return "4"


def label(name):
    text, _, _, _ = PEERS[name]
    if text.startswith("Socket.IO"):
        text = text.replace("Socket.IO", f"Socket.IO {socketio_version()}")
    return text


def unavailable(name, build):
    """Why peer `name` cannot run here, or None."""
    if PEERS[name][1] == "corows":
        exe = os.path.join(build, "examples", "chat_server")
        return None if os.access(exe, os.X_OK) else f"{exe} not built (run tools/bench-fanout)"
    if not shutil.which("node"):
        return "node not installed"
    r = subprocess.run(["node", os.path.join(HERE, "socketio_node.js"), "--check"], cwd=HERE,
                       capture_output=True, text=True)
    if r.returncode == 0:
        return None
    return (r.stderr.strip().splitlines() or ["socketio_node.js does not load"])[-1].replace("socketio_node: ", "")


# Each process gets a new port (no TIME_WAIT surprises).
free_port = Ports(19400).free


class Process(ServerProcess):
    """A server process (a node, or redis-server), started and listening on its port."""

    def __init__(self, name, cmd, port, pin):
        super().__init__(name, cmd, port, cwd=HERE, cpu=SERVER_CPU if pin else None, wait=30)


def start_redis(pin):
    port = free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
           "--daemonize", "no", "--logfile", ""]
    return Process("redis-server", cmd, port, pin)


def start_nodes(name, build, nodes, redis, pin):
    """The nodes of peer `name`: a list of Process, the first one the publisher's."""
    _, proto, fixed, with_redis = PEERS[name]
    started = []
    try:
        for i in range(fixed or nodes):
            port = free_port()
            if proto == "corows":
                cmd = [os.path.join(build, "examples", "chat_server"), "--port", str(port), "--threads", "1",
                       "--name", f"node{i + 1}"]
                if with_redis:
                    cmd += ["--redis", f"127.0.0.1:{redis.port}"]
            else:
                cmd = [shutil.which("node") or "node", os.path.join(HERE, "socketio_node.js"), str(port)]
                if with_redis:
                    cmd.append(f"127.0.0.1:{redis.port}")
            started.append(Process(f"{name} node{i + 1}", cmd, port, pin))
    except RuntimeError:
        for p in started:
            p.stop()
        raise
    time.sleep(0.3)  # let the probe connections' teardown pass before measuring
    return started


def run_peer(load, name, build, redis, args, size):
    """One run of fanout_load against fresh nodes of `name`; its fields, or None."""
    _, proto, _, with_redis = PEERS[name]
    try:
        nodes = start_nodes(name, build, args.nodes, redis, not args.no_pin)
    except RuntimeError as e:
        print(f"bench=fanout peer={name} size={size} failed={str(e)!r}", flush=True)
        return None
    try:
        cmd = ([] if args.no_pin else ["taskset", "-c", LOAD_CPU]) + [
            load, "--ports", ",".join(str(n.port) for n in nodes), "--protocol", proto, "--name", name,
            "--subscribers", str(args.subscribers), "--messages", str(args.messages), "--size", str(size),
            "--server-pids", ",".join(str(n.proc.pid) for n in nodes)]
        cmd += ["--rate", str(args.rate)] if args.rate else ["--window", str(args.window)]
        if with_redis:
            cmd += ["--redis-pid", str(redis.proc.pid)]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
        except subprocess.TimeoutExpired:
            print(f"bench=fanout peer={name} size={size} failed=timeout", flush=True)
            return None
        lines = [l for l in r.stdout.splitlines() if l.startswith("bench=fanout")]
        for l in r.stderr.strip().splitlines()[:5]:
            print(f"  {l}", flush=True)
        for n in nodes:
            if n.proc.poll() is not None:
                print(f"  {n.name} died: {n.errors()!r}", flush=True)
        if not lines:
            why = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
            print(f"bench=fanout peer={name} size={size} failed={why!r}", flush=True)
            return None
        print(lines[-1], flush=True)
        return parse_line(lines[-1])
    finally:
        for n in nodes:
            n.stop()


def number(r, key):
    try:
        return float(r[key]) if r else None
    except (KeyError, ValueError):
        return None


def fmt_size(n):
    return f"{n // 1024} KiB" if n >= 1024 and n % 1024 == 0 else f"{n} B"


def fmt(v, digits=2):
    return "n/a" if v is None else f"{v:.{digits}f}"


def markdown(results, peers, sizes, args, skipped, command, load_before):
    pace = f"{args.rate:g} messages/s" if args.rate else f"a window of {args.window} messages"
    L = [f"Fan-out, {datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC: `{command}`",
         "",
         f"{args.subscribers} subscribers, {args.messages} messages each, one publisher, paced by {pace}; "
         f"{machine()}; load average {load_before:.2f} before the run"
         + ("" if args.no_pin else "; nodes and Redis on core 0, the load generator on core 1") + ".",
         ""]
    for s, why in skipped.items():
        L.append(f"{label(s)}: skipped ({why}).")
        L.append("")
    ran = [p for p in peers if p not in skipped]
    L.append("| size | peer | nodes | deliveries/s | p50 ms | p99 ms | server CPU µs/delivery "
             "| Redis CPU µs/delivery | server cores | load gen core | errors |")
    L.append("|---" * 11 + "|")
    for size in sizes:
        for p in ran:
            r = results.get((p, size))
            if not r:
                L.append(f"| {fmt_size(size)} | {label(p)} | | failed | | | | | | | |")
                continue
            redis = r.get("redis_cpu_us_per_delivery", "n/a")
            L.append(f"| {fmt_size(size)} | {label(p)} | {r['nodes']} | {fmt_rate(number(r, 'deliveries_per_s'))} | "
                     f"{fmt(number(r, 'p50_ms'), 1)} | {fmt(number(r, 'p99_ms'), 1)} | "
                     f"{fmt(number(r, 'server_cpu_us_per_delivery'))} | "
                     f"{'-' if redis == 'n/a' else fmt(number(r, 'redis_cpu_us_per_delivery'), 3)} | "
                     f"{fmt(number(r, 'server_cpu'))} | {fmt(number(r, 'load_cpu'))} | {r.get('errors', '?')} |")
    L.append("")
    # Like against like: a cluster against a cluster, a lone node against a lone node.
    pairs = [(a, b, what) for a, b, what in (("corows", "socketio", f"{args.nodes} nodes + Redis"),
                                             ("corows-alone", "socketio-alone", "one node"))
             if a in ran and b in ran]
    if pairs:
        L.append("| size | corows against Socket.IO | deliveries/s, corows / Socket.IO "
                 "| server CPU per delivery, Socket.IO / corows | server + Redis CPU per delivery, Socket.IO / corows |")
        L.append("|---" * 5 + "|")
        for size in sizes:
            for a, b, what in pairs:
                ra, rb = results.get((a, size)), results.get((b, size))

                def total(r):
                    s, d = number(r, "server_cpu_us_per_delivery"), number(r, "redis_cpu_us_per_delivery")
                    return None if s is None else s + (d or 0)

                L.append(f"| {fmt_size(size)} | {what} | "
                         f"{fmt_ratio(number(ra, 'deliveries_per_s'), number(rb, 'deliveries_per_s'))} | "
                         f"{fmt_ratio(number(rb, 'server_cpu_us_per_delivery'), number(ra, 'server_cpu_us_per_delivery'))} | "
                         f"{fmt_ratio(total(rb), total(ra))} |")
        L.append("")
    return "\n".join(L)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--subscribers", type=int, default=1000, help="subscribers (default 1000)")
    ap.add_argument("--messages", type=int, default=500, help="messages the publisher sends (default 500, at least 10)")
    ap.add_argument("--size", default="64", help="message size in bytes, or a comma-separated list (default 64)")
    ap.add_argument("--window", type=int, default=32,
                    help="messages in flight beyond what the slowest subscriber has (default 32)")
    ap.add_argument("--rate", type=float, default=0, help="publish at this many messages/s instead of a window")
    ap.add_argument("--nodes", type=int, default=3, help="nodes of the clustered peers (default 3)")
    ap.add_argument("--peers", default=DEFAULT_PEERS,
                    help=f"comma-separated, run in this order (default {DEFAULT_PEERS}; also socketio-alone)")
    ap.add_argument("--visits", type=int, default=1, help="runs per peer and size, interleaved; the best counts")
    ap.add_argument("--build", default=os.path.join(ROOT, "build-bench"), help="build directory (release)")
    ap.add_argument("--no-pin", action="store_true", help="do not pin the servers and the load generator to cores")
    ap.add_argument("--out", default=os.path.join(HERE, "results.md"),
                    help="where the Markdown tables go (default bench/fanout/results.md); deliveries.svg "
                         "is drawn beside it")
    args = ap.parse_args()
    args.build = os.path.abspath(args.build)  # the nodes run with bench/fanout as their directory
    sizes = [int(s) for s in args.size.split(",") if s.strip()]
    if args.messages < 10 or args.subscribers < 1 or args.nodes < 1 or any(s < 32 for s in sizes):
        sys.exit("--messages at least 10, --size at least 32, --subscribers and --nodes at least 1")
    command = "tools/bench-fanout" + "".join(f" {a}" for a in sys.argv[1:])

    # The nodes and the load generator inherit this: every connection is a file descriptor.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if hard < args.subscribers + 100:
        sys.exit(f"RLIMIT_NOFILE is {hard}: too few for {args.subscribers} subscribers")
    if not args.no_pin and not shutil.which("taskset"):
        sys.exit("taskset not found (util-linux); or run with --no-pin")
    if not shutil.which("redis-server"):
        sys.exit("redis-server not found (apt-get install redis-server)")
    load = os.path.join(args.build, "bench", "fanout_load")
    if not os.access(load, os.X_OK):
        sys.exit(f"{load} not built: run tools/bench-fanout")
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    for p in peers:
        if p not in PEERS:
            sys.exit(f"unknown peer {p}; known: {', '.join(PEERS)}")

    load_before = os.getloadavg()[0]
    if load_before > 0.5:
        print(f"warning: load average {load_before:.2f}: other work on this machine makes the figures noisy",
              flush=True)
    skipped = {}
    for p in peers:
        why = unavailable(p, args.build)
        if why:
            skipped[p] = why
            print(f"bench=fanout peer={p} skipped={why!r}", flush=True)
    ran = [p for p in peers if p not in skipped]

    redis = start_redis(not args.no_pin)
    results = {}
    try:
        for visit in range(args.visits):
            for size in sizes:
                # Later visits start with another peer: a change in the machine's background
                # load then falls on each alike.
                turn = visit % len(ran) if ran else 0
                for name in ran[turn:] + ran[:turn]:
                    r = run_peer(load, name, args.build, redis, args, size)
                    best = results.get((name, size))
                    # A run with errors stays on record whatever its speed.
                    failed = lambda x: x.get("errors", "0") != "0"
                    if r and (not best or (not failed(best) and
                                           (failed(r) or number(r, "deliveries_per_s") >
                                            number(best, "deliveries_per_s")))):
                        results[(name, size)] = r
            if redis.proc.poll() is not None:
                sys.exit(f"redis-server died: {redis.errors()}")
    finally:
        redis.stop()

    text = markdown(results, peers, sizes, args, skipped, command, load_before)
    print()
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(text + "\n")
    print(f"wrote {args.out}")
    draw_charts("fanout", args.out)
    bad = len(ran) * len(sizes) - len(results) + sum(1 for r in results.values() if r.get("errors", "0") != "0")
    if bad:
        print(f"{bad} runs failed or had errors")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
