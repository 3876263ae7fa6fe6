#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# Headless Chromium -> HAProxy (deploy/haproxy.cfg) -> three chat_server nodes whose rooms span
# the cluster through Redis: two tabs in one room, on different nodes, chat through the page's
# form; then one tab's node drains (SIGTERM), and that tab reconnects through HAProxy to another
# node and chats again. What a rolling restart looks like to a user.
#
#   chromium_cluster.py CHAT_SERVER
import asyncio
import contextlib
import csv
import http.client
import io
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import Failure, Program, check, log, main_wrapper, skip  # noqa: E402
from chromium_chat import MESSAGES_IN_PAGE, SEND_FROM_PAGE, Chromium, Devtools  # noqa: E402

import websockets  # noqa: E402  (chromium_chat skips without it)
import websockets.exceptions  # noqa: E402

HAPROXY_CFG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "deploy", "haproxy.cfg")

# Runs before the page's scripts: the close code of each of its WebSockets, in order.
RECORD_CLOSES = """
(() => {
  const Native = window.WebSocket;
  window.__closes = [];
  window.WebSocket = class extends Native {
    constructor(...args) { super(...args); this.addEventListener('close', e => __closes.push(e.code)); }
  };
})();
"""
CONNECTED = "(document.getElementById('status') || {}).textContent === 'connected'"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    """A server the test needs (Redis, HAProxy): its output kept in a file, ended on exit."""

    def __init__(self, argv, env=None):
        self.name = os.path.basename(argv[0])
        self.out = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=self.out,
                                     stderr=subprocess.STDOUT, env=env)

    def output(self):
        self.out.seek(0)
        return self.out.read().decode(errors="replace")[-2000:]

    def wait_until(self, ready, what, timeout=15.0):
        deadline = time.monotonic() + timeout
        while not ready():
            if self.proc.poll() is not None:
                raise Failure(f"{self.name} exited with {self.proc.returncode}: {self.output()}")
            if time.monotonic() > deadline:
                raise Failure(f"{self.name}: no {what} within {timeout} s; output: {self.output()}")
            time.sleep(0.1)

    def close(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def redis_answers(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1) as s:
            s.sendall(b"PING\r\n")
            return s.recv(16).startswith(b"+PONG")
    except OSError:
        return False


def haproxy_servers(stats_port):
    """HAProxy's state of each chat node, e.g. {'node1': 'UP', ...}; {} before it answers."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{stats_port}/stats;csv", timeout=2) as r:
            rows = csv.DictReader(io.StringIO(r.read().decode().lstrip("# ")))
            return {row["svname"]: row["status"] for row in rows
                    if row["pxname"] == "chat_nodes" and row["svname"].startswith("node")}
    except OSError:
        return {}


def members(node):
    """The member count a node's /healthz reports (200 or 503); None once it is gone."""
    try:
        conn = http.client.HTTPConnection("127.0.0.1", node.port, timeout=5)
        conn.request("GET", "/healthz")
        body = conn.getresponse().read().decode()
        conn.close()
    except OSError:
        return None
    m = re.search(r"members=(\d+)", body)
    check(m, f"/healthz answered {body!r}")
    return int(m.group(1))


async def wait_members(nodes, total, timeout=15.0):
    """Waits until the nodes count `total` members in all; returns each node's count."""
    deadline = time.monotonic() + timeout
    while True:
        counts = [members(n) for n in nodes]
        if sum(c or 0 for c in counts) == total:
            return counts
        if time.monotonic() > deadline:
            raise Failure(f"the nodes count {counts} members, expected {total} in all")
        await asyncio.sleep(0.1)


async def open_tab(devtools_port, url):
    """A new page target showing `url`, once its chat is connected."""
    req = urllib.request.Request(f"http://127.0.0.1:{devtools_port}/json/new?about:blank", method="PUT")
    with urllib.request.urlopen(req, timeout=10) as r:
        target = json.load(r)
    tab = Devtools(await websockets.connect(target["webSocketDebuggerUrl"], max_size=None,
                                            ping_interval=None, open_timeout=10))
    await tab.call("Page.enable")
    await tab.call("Page.addScriptToEvaluateOnNewDocument", source=RECORD_CLOSES)
    await tab.call("Page.navigate", url=url)
    await tab.wait_for(CONNECTED, f"{url} to connect", timeout=15)
    return tab


async def say(tab, name, text, tabs, expected):
    """Sends `text` from `tab`'s form; every tab of `tabs` must then show exactly `expected`
    plus it."""
    r = await tab.eval(f"({SEND_FROM_PAGE})({json.dumps(name)}, {json.dumps(text)})")
    check(r == "sent", f"sending from the page: {r}")
    expected.append([name, text])
    for i, t in enumerate(tabs):
        await t.wait_for(f"document.querySelectorAll('li.msg').length >= {len(expected)}",
                         f"{text!r} in tab {i + 1}")
        shown = json.loads(await t.eval(MESSAGES_IN_PAGE))
        check(shown == expected, f"tab {i + 1} shows {shown}, expected {expected}")


async def run(server_bin, chromium_bin, haproxy_bin, redis_bin):
    with contextlib.ExitStack() as stack:
        folder = stack.enter_context(tempfile.TemporaryDirectory(prefix="corows-cluster-"))
        redis_port = free_port()
        redis = Daemon([redis_bin, "--bind", "127.0.0.1", "--port", str(redis_port), "--save", "",
                        "--appendonly", "no", "--dir", folder])
        stack.callback(redis.close)
        redis.wait_until(lambda: redis_answers(redis_port), "PONG")

        nodes = []
        for i in (1, 2, 3):
            # A notice longer than HAProxy's two failed checks a second apart: no new client
            # is sent to a draining node; a short window keeps the test short.
            argv = [server_bin, "--port", "0", "--threads", "2", "--redis", f"127.0.0.1:{redis_port}",
                    "--name", f"node{i}", "--drain-notice-ms", "2500", "--drain-window-ms", "1500"]
            try:
                nodes.append(stack.enter_context(Program(argv)))
            except Failure as e:
                if "no Redis backplane" in str(e):
                    skip("chat_server was built without the Redis backplane (libhiredis-dev)")
                raise
        log("redis on", redis_port, "; nodes on", [n.port for n in nodes])

        front, stats = free_port(), free_port()
        env = dict(os.environ, CHAT_FRONT=f"127.0.0.1:{front}", CHAT_STATS=f"127.0.0.1:{stats}",
                   **{f"CHAT_NODE{i + 1}": f"127.0.0.1:{n.port}" for i, n in enumerate(nodes)})
        haproxy = Daemon([haproxy_bin, "-f", os.path.normpath(HAPROXY_CFG)], env=env)
        stack.callback(haproxy.close)
        haproxy.wait_until(lambda: list(haproxy_servers(stats).values()) == ["UP"] * 3,
                           "three nodes UP on the stats page")
        log(f"haproxy on {front}: {haproxy_servers(stats)}")

        browser = Chromium(chromium_bin)
        stack.callback(browser.close)
        log(f"peer: {browser.version()}")
        port = browser.devtools_port()
        url = f"http://127.0.0.1:{front}/?room=test"
        tabs = []

        async def land(tab_count):
            """Opens a tab; returns the index of the node it joined."""
            before = await wait_members(nodes, tab_count - 1)
            tab = await open_tab(port, url)
            tabs.append(tab)
            after = await wait_members(nodes, tab_count)
            return next(i for i in range(3) if (after[i] or 0) > (before[i] or 0))

        try:
            home = [await land(1), await land(2)]
            if home[0] == home[1]:
                # leastconn sends the second tab elsewhere as a rule; a third tab must go elsewhere.
                log(f"both tabs joined node{home[0] + 1}; opening a third")
                home.append(await land(3))
                check(home[2] != home[0], f"three tabs on node{home[0] + 1}: is HAProxy balancing?")
                tabs[1], home[1] = tabs[2], home[2]
            log(f"tab 1 joined node{home[0] + 1}, tab 2 node{home[1] + 1}")

            shown = []
            await say(tabs[0], "one", "hello from tab 1 ✓ <b>x</b>", tabs[:2], shown)
            await say(tabs[1], "two", "hello from tab 2 — 日本", tabs[:2], shown)
            log("each tab shows both messages, across two nodes through Redis")

            drained = nodes[home[0]]
            drained.proc.terminate()  # SIGTERM: a rolling restart of tab 1's node
            start = time.monotonic()
            await tabs[0].wait_for("__closes.includes(1012)", "tab 1's close with 1012", timeout=15)
            await tabs[0].wait_for(CONNECTED, "tab 1 to reconnect", timeout=15)
            log(f"tab 1 was closed with 1012 and reconnected {time.monotonic() - start:.1f} s after the SIGTERM")
            try:
                code = drained.proc.wait(15)
            except subprocess.TimeoutExpired:
                raise Failure(f"node{home[0] + 1} did not exit after draining")
            check(code == 0, f"node{home[0] + 1} exited with {code} after draining")
            counts = await wait_members(nodes, len(tabs))
            log(f"members per node now {counts}")

            await say(tabs[0], "one", "back after the restart", tabs[:2], shown)
            await say(tabs[1], "two", "welcome back", tabs[:2], shown)
            log("tab 1 chats again, from its new node")
        finally:
            for tab in tabs:
                tab.close()
        for n in nodes:
            check(n is drained or n.alive(), f"node{nodes.index(n) + 1} exited")


def main():
    if len(sys.argv) != 2:
        sys.exit(f"usage: {sys.argv[0]} CHAT_SERVER")
    tools = {name: shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
             for name in ("chromium", "haproxy", "redis-server")}
    for name, path in tools.items():
        if not path:
            skip(f"{name} is not installed (apt-get install {name})")
    log(f"peers: {tools}, python websockets {websockets.__version__}")

    async def bounded():
        try:
            await asyncio.wait_for(run(sys.argv[1], tools["chromium"], tools["haproxy"], tools["redis-server"]), 120)
        except asyncio.TimeoutError:
            raise Failure("the test did not finish within 120 s")
        except websockets.exceptions.WebSocketException as e:
            raise Failure(f"websockets reported {type(e).__name__}: {e}")

    main_wrapper(lambda: asyncio.run(bounded()))


if __name__ == "__main__":
    main()
