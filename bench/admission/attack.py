#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Handshake-slot attack on a WebSocket server on loopback, and an honest client's latency.

    attack.py --port N [--sockets 2000] [--sources 1] [--mode idle|trickle] [--seconds 30]
              [--server-pid PID]

Holds --sockets connections to 127.0.0.1:PORT that never finish a request (idle: send nothing;
trickle: one byte of a request head every 2 s), spread over --sources source addresses
(127.0.0.1, then 127.0.0.2 ...: no setup needed on Linux loopback), and opens a new one as soon
as the server drops one. Meanwhile an honest client, in a process of its own (so that the
attacker's event loop does not slow it), connects, upgrades and waits for the echo of one
message, once every 100 ms; the times of these rounds (p50, p99, max; failures counted) are
printed at the end, with the server's CPU time over the attack if --server-pid is given.

Loopback only, and bounded in time: it stops after --seconds.
"""
import argparse
import asyncio
import json
import os
import resource
import socket
import statistics
import sys
import time

REQUEST = (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")
HONEST_TIMEOUT = 60.0


def cpu_seconds(pid):
    """User + system CPU time of process PID so far, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def open_from(port, source):
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setblocking(False)
    sock.bind((source, 0))
    try:
        await asyncio.get_running_loop().sock_connect(sock, ("127.0.0.1", port))
    except BaseException:
        sock.close()
        raise
    return await asyncio.open_connection(sock=sock)


class Stats:
    def __init__(self):
        self.opened = 0
        self.dropped = 0
        self.connect_errors = 0


async def squatter(port, source, mode, end, stats):
    """One attacking slot: a connection that never completes a request, replaced when dropped."""
    while time.monotonic() < end:
        try:
            reader, writer = await open_from(port, source)
        except OSError:
            stats.connect_errors += 1
            await asyncio.sleep(0.01)
            continue
        stats.opened += 1
        sent = 0
        dropped = False
        try:
            while time.monotonic() < end:
                if mode == "trickle":
                    writer.write(REQUEST[sent % (len(REQUEST) - 2):][:1])
                    sent += 1
                try:
                    data = await asyncio.wait_for(reader.read(4096), timeout=2.0 if mode == "trickle" else end - time.monotonic())
                except asyncio.TimeoutError:
                    continue
                if not data:
                    dropped = True
                    break
        except OSError:
            dropped = True
        stats.dropped += dropped
        writer.close()


async def honest_round(port):
    """Connect, upgrade, one masked text message and its echo; returns the seconds it took."""
    start = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(REQUEST)
        head = await reader.readuntil(b"\r\n\r\n")
        if not head.startswith(b"HTTP/1.1 101"):
            raise RuntimeError(head.split(b"\r\n", 1)[0].decode(errors="replace"))
        payload = b"honest"
        mask = b"\x01\x02\x03\x04"
        writer.write(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        frame = await reader.readexactly(2 + len(payload))
        if frame[2:] != payload:
            raise RuntimeError("bad echo")
        return time.monotonic() - start
    finally:
        writer.close()


async def honest(port, end, times, failures):
    while time.monotonic() < end:
        try:
            times.append(await asyncio.wait_for(honest_round(port), HONEST_TIMEOUT))
        except (OSError, RuntimeError, asyncio.TimeoutError, asyncio.IncompleteReadError) as e:
            failures.append(repr(e))
        await asyncio.sleep(0.1)


def percentile(sorted_values, p):
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(p / 100.0 * len(sorted_values)))]


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--sockets", type=int, default=2000)
    ap.add_argument("--sources", type=int, default=1)
    ap.add_argument("--mode", choices=["idle", "trickle"], default="idle")
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--server-pid", type=int)
    ap.add_argument("--honest-only", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.honest_only:
        times, failures = [], []
        await honest(a.port, time.monotonic() + a.seconds, times, failures)
        print(json.dumps({"times": times, "failures": failures}))
        return
    if not 1 <= a.sources <= 250:
        sys.exit("--sources: 1 to 250 loopback addresses")
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    sources = ["127.0.0.%d" % (1 + i) for i in range(a.sources)]
    if a.sources > 1:
        sources = sources[1:] + ["127.0.0.%d" % (1 + a.sources)]  # 127.0.0.1 stays the honest client's
    stats = Stats()
    times, failures = [], []
    cpu0 = cpu_seconds(a.server_pid) if a.server_pid else None
    start = time.monotonic()
    end = start + a.seconds
    tasks = [asyncio.create_task(squatter(a.port, sources[i % len(sources)], a.mode, end, stats))
             for i in range(a.sockets)]
    await asyncio.sleep(1.0)  # the attack is in place before the first honest round
    proc = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--honest-only", "--port", str(a.port), "--seconds", str(end - time.monotonic()),
        stdout=asyncio.subprocess.PIPE)
    out, _ = await proc.communicate()
    result = json.loads(out)
    times, failures = result["times"], result["failures"]
    cpu = cpu_seconds(a.server_pid) - cpu0 if a.server_pid else None
    elapsed = time.monotonic() - start
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    ts = sorted(times)
    print("attack: %d sockets from %d address(es), %s, %.0f s; %d connections opened, %d dropped by the server, "
          "%d connect errors" % (a.sockets, a.sources, a.mode, elapsed, stats.opened, stats.dropped, stats.connect_errors))
    print("honest: %d rounds, %d failed; handshake+echo p50 %.1f ms, p99 %.1f ms, max %.1f ms" % (
        len(times) + len(failures), len(failures), 1000 * percentile(ts, 50), 1000 * percentile(ts, 99),
        1000 * (ts[-1] if ts else float("nan"))))
    if failures:
        print("failures (first 3): %s" % "; ".join(failures[:3]))
    if cpu is not None:
        print("server CPU: %.1f s over %.0f s (%.0f%% of one core)" % (cpu, elapsed, 100 * cpu / elapsed))


if __name__ == "__main__":
    asyncio.run(main())
