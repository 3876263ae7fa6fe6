#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Runs an example program on 127.0.0.1 and talks to it the way a user would.

    example_test.py SCENARIO PROGRAM [OTHER_PROGRAM]

Scenarios: echo, echo_deflate, echo_threads, echo_limits, echo_tls, echo_tls_browser, echo_client, chat,
chat_threads, chat_limits, chat_browser, chat_slow_readers, chat_metrics, echo_metrics, echo_log, ticker,
tls_client. Exits 0 on success, 1 on failure, 77
(skipped) when a tool the scenario needs is missing.
"""
import asyncio
import http.client
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import time

try:
    import websockets
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
except ImportError:
    # Debian's python3-websockets lives with the system interpreter, which may not be first
    # on PATH (pyenv, a virtualenv).
    if os.path.exists("/usr/bin/python3") and os.path.realpath(sys.executable) != os.path.realpath("/usr/bin/python3"):
        os.execv("/usr/bin/python3", ["/usr/bin/python3", *sys.argv])
    print("python3-websockets is not installed")
    sys.exit(77)

TIMEOUT = 20  # seconds for any single step


class Server:
    """Starts PROGRAM ARGS, waits for its "listening on ADDR:PORT" line, stops it with SIGTERM."""

    # A command that runs PROGRAM (wine for a Windows build: tests/windows/echo_test.py).
    wrapper = []
    # False where SIGTERM cannot reach the program as a signal (wine ends a Windows program
    # at once): stop() then only checks that the program ends.
    graceful_stop = True

    def __init__(self, program, *args, stderr=None):
        self.proc = subprocess.Popen([*self.wrapper, program, *args], stdout=subprocess.PIPE, stderr=stderr, text=True)
        line = self._first_line()
        if not line.startswith("listening on "):
            self.proc.kill()
            raise AssertionError("unexpected first line %r" % line)
        self.port = int(line.rsplit(":", 1)[1])

    def _first_line(self):
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        if not sel.select(TIMEOUT):
            self.proc.kill()
            raise AssertionError("no 'listening on' line within %d s" % TIMEOUT)
        return self.proc.stdout.readline().strip()

    def stop(self):
        """Graceful stop: SIGTERM must make the server exit 0 promptly."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            code = self.proc.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise AssertionError("server did not stop on SIGTERM")
        assert code == 0 or not self.graceful_stop, "server exited with %d" % code

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def check(condition, what):
    if not condition:
        raise AssertionError(what)


# What echo_round_trips sends: text, binary, empty and large messages.
ECHO_SAMPLES = ["hello", "", "ünïcødé ✓", "x" * 70000, b"\x00\x01\xff" * 10, b"", bytes(range(256)) * 4096]


async def echo_round_trips(uri, ssl_context=None, **kwargs):
    """Text, binary, empty and large messages come back unchanged and of the same kind."""
    async with websockets.connect(uri, ssl=ssl_context, max_size=64 * 1024 * 1024, **kwargs) as ws:
        for sample in ECHO_SAMPLES:
            await ws.send(sample)
            got = await asyncio.wait_for(ws.recv(), TIMEOUT)
            check(type(got) is type(sample), "kind changed for a %d-byte message" % len(sample))
            check(got == sample, "payload changed for a %d-byte message" % len(sample))
        extensions = ws.response_headers.get("Sec-WebSocket-Extensions", "")
        await ws.close()
        check(ws.close_code == 1000, "close code %s" % ws.close_code)
        return extensions


def scenario_echo(program):
    with Server(program, "--port", "0") as srv:
        uri = "ws://127.0.0.1:%d/" % srv.port
        # The client offers permessage-deflate; a server without --deflate declines it.
        ext = asyncio.run(echo_round_trips(uri))
        check(ext == "", "extension negotiated without --deflate: %r" % ext)
        asyncio.run(echo_round_trips(uri, compression=None))
        srv.stop()


def upgrade_status(port):
    """The status line's code of a raw upgrade request to 127.0.0.1:PORT."""
    return upgrade_status_of(port, b"GET / HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                                   b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


def scenario_echo_limits(program):
    # The admission flags reach the server: one connection per address, so a second one gets
    # 429 while the first is open, and 101 once it closed.
    with Server(program, "--port", "0", "--max-connections-per-address", "1", "--max-connections", "100",
                "--max-handshakes", "4", "--handshake-timeout-ms", "2000") as srv:
        async def second_while_first_open():
            async with websockets.connect("ws://127.0.0.1:%d/" % srv.port, compression=None) as ws:
                await ws.send("first")
                check(await ws.recv() == "first", "no echo")
                return await asyncio.get_running_loop().run_in_executor(None, upgrade_status, srv.port)
        status = asyncio.run(second_while_first_open())
        check(status == 429, "a second connection from one address got %d, not 429" % status)
        deadline = time.monotonic() + TIMEOUT
        while (status := upgrade_status(srv.port)) != 101 and time.monotonic() < deadline:
            time.sleep(0.05)
        check(status == 101, "once the first closed, a connection got %d" % status)
        srv.stop()


def scenario_chat_limits(program):
    # chat_server (run_http) takes the same admission flags: a second connection from one
    # address gets 429 while a chat member is connected.
    with Server(program, "--port", "0", "--max-connections-per-address", "1", "--handshake-timeout-ms", "2000") as srv:
        async def second_while_member():
            async with websockets.connect("ws://127.0.0.1:%d/chat?room=limits" % srv.port) as ws:
                await ws.send("hello")
                check(await ws.recv() == "hello", "no relay to the sender")
                return await asyncio.get_running_loop().run_in_executor(None, upgrade_status, srv.port)
        status = asyncio.run(second_while_member())
        check(status == 429, "a second connection from one address got %d, not 429" % status)
        srv.stop()


def scenario_echo_deflate(program):
    offers = [
        {},
        {"server_no_context_takeover": True},
        {"client_no_context_takeover": True},
        {"server_max_window_bits": 10},
        {"client_max_window_bits": 9},
        {"server_no_context_takeover": True, "client_no_context_takeover": True,
         "server_max_window_bits": 8, "client_max_window_bits": 9},
    ]
    with Server(program, "--port", "0", "--deflate") as srv:
        uri = "ws://127.0.0.1:%d/" % srv.port
        for params in offers:
            factory = ClientPerMessageDeflateFactory(**params)
            ext = asyncio.run(echo_round_trips(uri, compression=None, extensions=[factory]))
            check(ext.startswith("permessage-deflate"), "offer %r not accepted: %r" % (params, ext))
            for name in params:
                # What the client asks of the server must be granted in the answer.
                if name.startswith("server_"):
                    check(name in ext, "offer %r answered with %r" % (params, ext))
        srv.stop()


def scenario_echo_threads(program):
    async def many(uri):
        async def one(i):
            async with websockets.connect(uri) as ws:
                for k in range(20):
                    text = "client %d message %d" % (i, k)
                    await ws.send(text)
                    check(await asyncio.wait_for(ws.recv(), TIMEOUT) == text, "wrong echo")
        await asyncio.gather(*(one(i) for i in range(20)))

    with Server(program, "--port", "0", "--threads", "2", "--deflate") as srv:
        asyncio.run(many("ws://127.0.0.1:%d/" % srv.port))
        srv.stop()


def openssl(*args):
    """Runs the openssl tool with ARGS; skips the scenario where there is none."""
    try:
        subprocess.run(["openssl", *args], check=True, capture_output=True, timeout=TIMEOUT)
    except FileNotFoundError:
        print("the openssl tool is not installed")
        sys.exit(77)


def make_certificate(folder):
    """A self-signed certificate for localhost and 127.0.0.1, made with the openssl tool."""
    cert, key = os.path.join(folder, "cert.pem"), os.path.join(folder, "key.pem")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
            "-subj", "/CN=localhost", "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", key, "-out", cert)
    return cert, key


def scenario_echo_tls(program, client=None):
    with tempfile.TemporaryDirectory() as folder:
        cert, key = make_certificate(folder)
        with Server(program, "--port", "0", "--cert", cert, "--key", key, "--deflate") as srv:
            context = ssl.create_default_context(cafile=cert)
            ext = asyncio.run(echo_round_trips("wss://localhost:%d/" % srv.port, ssl_context=context))
            check(ext.startswith("permessage-deflate"), "no deflate over TLS")
            if client:
                lines = ["over tls", "second line"]
                out = run_client(client, ["--url", "wss://localhost:%d/" % srv.port, "--ca", cert], lines)
                check(out == lines, "echo_client over wss printed %r" % out)
            srv.stop()


def run_client(client, args, lines):
    result = subprocess.run([client, *args], input="".join(l + "\n" for l in lines),
                            capture_output=True, text=True, timeout=TIMEOUT)
    check(result.returncode == 0, "echo_client exited %d: %s" % (result.returncode, result.stderr))
    return result.stdout.splitlines()


def scenario_echo_client(server, client):
    with Server(server, "--port", "0", "--deflate") as srv:
        lines = ["first", "", "ünïcødé ✓", "x" * 100000] + ["line %d" % i for i in range(500)]
        for extra in ([], ["--deflate"]):
            out = run_client(client, ["--url", "ws://127.0.0.1:%d/some/path" % srv.port, *extra], lines)
            check(out == lines, "echo_client printed %d lines, expected %d" % (len(out), len(lines)))
        check(run_client(client, ["--url", "ws://127.0.0.1:%d/" % srv.port], []) == [], "output without input")
        # A refused connection is an error exit, not a hang.
        bad = subprocess.run([client, "--url", "ws://127.0.0.1:1/"], input="x\n", capture_output=True,
                             text=True, timeout=TIMEOUT)
        check(bad.returncode != 0, "echo_client succeeded against a closed port")
        srv.stop()


def make_private_ca(folder, name):
    """A CA's certificate and key (NAME.pem, NAME.key), made with the openssl tool."""
    cert, key = os.path.join(folder, name + ".pem"), os.path.join(folder, name + ".key")
    openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-subj", "/CN=" + name,
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign",
            "-keyout", key, "-out", cert)
    return cert, key


def make_signed_certificate(folder, ca_cert, ca_key):
    """A certificate for localhost only (no IP address in it), signed by the CA."""
    cert, key, csr = (os.path.join(folder, "server." + e) for e in ("pem", "key", "csr"))
    ext = os.path.join(folder, "server.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=DNS:localhost\nbasicConstraints=CA:FALSE\n")
    openssl("req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost", "-keyout", key, "-out", csr)
    openssl("x509", "-req", "-in", csr, "-CA", ca_cert, "-CAkey", ca_key, "-CAcreateserial", "-days", "2",
            "-extfile", ext, "-out", cert)
    return cert, key


def scenario_tls_client(server, client):
    """tls_client trusts the private CA it is given and nothing else, and checks the host name."""
    with tempfile.TemporaryDirectory() as folder:
        ca, ca_key = make_private_ca(folder, "private-ca")
        other_ca, _ = make_private_ca(folder, "other-ca")
        cert, key = make_signed_certificate(folder, ca, ca_key)

        def run(url, ca_file):
            return subprocess.run([client, "--url", url, "--ca", ca_file, "--message", "over a private CA"],
                                  capture_output=True, text=True, timeout=TIMEOUT)

        with Server(server, "--port", "0", "--cert", cert, "--key", key) as srv:
            good = run("wss://localhost:%d/" % srv.port, ca)
            check(good.returncode == 0, "tls_client exited %d: %s" % (good.returncode, good.stderr))
            check(good.stdout == "over a private CA\n", "tls_client printed %r" % good.stdout)
            # Another CA did not sign the server's certificate; 127.0.0.1 is not a name in it.
            for url, ca_file, why, detail in (
                    ("wss://localhost:%d/" % srv.port, other_ca, "another CA", "unable to get local issuer certificate"),
                    ("wss://127.0.0.1:%d/" % srv.port, ca, "a name not in the certificate", "IP address mismatch")):
                bad = run(url, ca_file)
                check(bad.returncode == 1, "tls_client exited %d with %s" % (bad.returncode, why))
                check("certificate verify failed" in bad.stderr and detail in bad.stderr,
                      "with %s tls_client said %r" % (why, bad.stderr))
                check(bad.stdout == "", "with %s tls_client printed %r" % (why, bad.stdout))
            srv.stop()


def http_answer(port, target):
    """Status and body of the answer to an upgrade request for TARGET (a 101's body is empty)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(("GET %s HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" % target).encode())
        f = s.makefile("rb")
        status = int(f.readline().split()[1])
        length = 0
        for line in iter(f.readline, b"\r\n"):
            name, _, value = line.decode().partition(":")
            if name.lower() == "content-length":
                length = int(value)
        return status, f.read(length).decode()


async def ticker_updates(uri, count):
    """The first COUNT updates on URI, parsed, and the answer's Sec-WebSocket-Extensions."""
    async with websockets.connect(uri) as ws:
        updates = []
        for _ in range(count):
            text = await asyncio.wait_for(ws.recv(), 5)
            update = json.loads(text)
            check(sorted(update) == ["price", "seq", "symbol"], "update %r" % text)
            check(isinstance(update["price"], float) and update["price"] > 0, "price in %r" % text)
            updates.append(update)
        return updates, ws.response_headers.get("Sec-WebSocket-Extensions", "")


def scenario_ticker(program):
    # Two threads: the timer publishes on the first, readers may be on either.
    with Server(program, "--port", "0", "--threads", "2", "--interval-ms", "20") as srv:
        base = "ws://127.0.0.1:%d/ticker" % srv.port

        async def two_readers():
            return await asyncio.gather(ticker_updates(base + "?symbol=AAA&symbol=BBB", 20),
                                        ticker_updates(base + "?symbol=CCC", 10))
        (ab, ext), (c, _) = asyncio.run(two_readers())
        check(ext.startswith("permessage-deflate"), "permessage-deflate not negotiated: %r" % ext)
        check({u["symbol"] for u in ab} == {"AAA", "BBB"}, "AAA and BBB's reader got %r" % ab)
        check({u["symbol"] for u in c} == {"CCC"}, "CCC's reader got %r" % c)
        # Readers that keep up miss nothing: the drop policy only skips for a full queue.
        for symbol in ("AAA", "BBB", "CCC"):
            seqs = [u["seq"] for u in ab + c if u["symbol"] == symbol]
            check(seqs == list(range(seqs[0], seqs[0] + len(seqs))), "%s's seq went %r" % (symbol, seqs))
        # Sixteen symbols are allowed; a seventeenth, a bad name or none at all are refused.
        sixteen = "?" + "&".join("symbol=S" + chr(ord("A") + i) for i in range(16))
        check(http_answer(srv.port, "/ticker" + sixteen)[0] == 101, "sixteen symbols refused")
        refusal = "name 1 to 16 symbols (?symbol=AAA&symbol=BBB), each 1 to 8 letters A-Z\n"
        for query in ("?symbol=bad!", sixteen + "&symbol=SQ", "", "?symbol=ABCDEFGHI", "?symbol=aaa", "?symbol="):
            answer = http_answer(srv.port, "/ticker" + query)
            check(answer == (400, refusal), "/ticker%s answered %r" % (query, answer))
        check(http_answer(srv.port, "/other?symbol=AAA")[0] == 404, "/other was not 404")
        srv.stop()


def http_get(port, path, method="GET"):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=TIMEOUT)
    conn.request(method, path)
    response = conn.getresponse()
    body = response.read()
    conn.close()
    return response.status, response.getheader("Content-Type", ""), body


def health(port):
    """/healthz as (status, body)."""
    status, _, body = http_get(port, "/healthz")
    return status, body.decode()


def wait_members(port, n):
    """Waits until /healthz counts n members: each has joined its room, so none misses what
    is sent next (the 101 goes out before the server subscribes the connection)."""
    for _ in range(TIMEOUT * 20):
        if "members=%d" % n in health(port)[1].split():
            return
        time.sleep(0.05)
    raise AssertionError("/healthz never counted %d members: %r" % (n, health(port)))


async def nothing_more(*sockets):
    """None of `sockets` receives anything within 0.3 s."""
    for ws in sockets:
        try:
            got = await asyncio.wait_for(ws.recv(), 0.3)
        except asyncio.TimeoutError:
            continue
        raise AssertionError("a member got %r, meant for another room" % got)


async def chat_rooms(port):
    """Rooms are separate: a message reaches its room's members and nobody else; a name is
    percent-decoded (%61 is room a); names outside [A-Za-z0-9_-]{1,64} are refused with 400."""
    base = "ws://127.0.0.1:%d/chat" % port
    async with websockets.connect(base + "?room=a") as a1, websockets.connect(base + "?room=a") as a2, \
            websockets.connect(base + "?x=1&room=%61") as a3, \
            websockets.connect(base + "?room=b") as b, websockets.connect(base) as lobby:
        wait_members(port, 5)
        for sender, members, text in ((a1, (a1, a2, a3), "for room a"), (b, (b,), "for room b"),
                                      (lobby, (lobby,), "for the lobby")):
            await sender.send(text)
            for ws in members:
                got = await asyncio.wait_for(ws.recv(), TIMEOUT)
                check(got == text, "%r was sent, a member of its room got %r" % (text, got))
        await nothing_more(a1, a2, a3, b, lobby)
    for name in ("bad!name", "", "x" * 65, "a%20b"):
        try:
            async with websockets.connect(base + "?room=" + name):
                pass
        except websockets.exceptions.InvalidStatusCode as e:
            check(e.status_code == 400, "room %r refused with %d" % (name, e.status_code))
        else:
            raise AssertionError("room %r was accepted" % name)


def scenario_chat(program):
    with Server(program, "--port", "0") as srv:
        status, kind, body = http_get(srv.port, "/")
        check(status == 200 and kind.startswith("text/html"), "GET / answered %d %s" % (status, kind))
        page = body.decode()
        check('id="log"' in page and '"/chat"' in page, "GET / is not the chat page")
        check('li.className = "msg"' in page, "the page does not mark messages with class msg")
        status, _, body = http_get(srv.port, "/", "HEAD")
        check(status == 200 and body == b"", "HEAD / answered %d with %d bytes" % (status, len(body)))
        status, _, _ = http_get(srv.port, "/nothing-here")
        check(status == 404, "GET /nothing-here answered %d" % status)
        status, body = health(srv.port)
        check(status == 200 and body.startswith("ok node=127.0.0.1:%d " % srv.port) and "members=0" in body,
              "GET /healthz answered %d %r" % (status, body))
        asyncio.run(chat_rooms(srv.port))

        async def talk():
            uri = "ws://127.0.0.1:%d/chat" % srv.port
            async with websockets.connect(uri) as a, websockets.connect(uri) as b:
                check("permessage-deflate" in a.response_headers.get("Sec-WebSocket-Extensions", ""),
                      "chat did not negotiate permessage-deflate")
                wait_members(srv.port, 2)
                await a.send("hello from a")
                for ws in (a, b):
                    check(await asyncio.wait_for(ws.recv(), TIMEOUT) == "hello from a", "broadcast from a")
                note = json.dumps({"name": "b", "text": "hi all"})
                await b.send(note)
                for ws in (a, b):
                    check(await asyncio.wait_for(ws.recv(), TIMEOUT) == note, "broadcast from b")
                # A reader that stops reading is dropped (1008) once its queue is full; the
                # others keep getting everything.
                # A small receive buffer (it also turns off the kernel's autotuning, which on
                # loopback would take in tens of megabytes) so the flood overflows quickly.
                small = socket.socket()
                small.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 64 * 1024)
                small.connect(("127.0.0.1", srv.port))
                async with websockets.connect(uri, max_queue=1, sock=small) as slow:
                    wait_members(srv.port, 3)  # joined before the flood
                    for i in range(400):
                        big = os.urandom(30000).hex()  # compresses only to about half
                        await a.send("%d %s" % (i, big))
                        for ws in (a, b):
                            got = await asyncio.wait_for(ws.recv(), TIMEOUT)
                            check(got.startswith("%d " % i), "flood message %d" % i)
                    received = 0
                    try:
                        while True:
                            await asyncio.wait_for(slow.recv(), TIMEOUT)
                            received += 1
                    except websockets.ConnectionClosed:
                        pass
                    # 1008 "too slow"; 1006 if the flood outlasted the server's close timeout
                    # (the close frame sat behind the data the slow reader never read).
                    check(slow.close_code in (1008, 1006), "slow reader closed with %s" % slow.close_code)
                    check(received < 400, "slow reader got all %d messages" % received)
                # A client that leaves does not disturb the others.
                await a.close()
                await b.send("still here")
                check(await asyncio.wait_for(b.recv(), TIMEOUT) == "still here", "broadcast after a left")
                # Graceful stop: the remaining client is told the service restarts (1012),
                # within the drain window (1 s by default, no notice).
                srv.proc.send_signal(signal.SIGTERM)
                start = time.monotonic()
                try:
                    await asyncio.wait_for(b.recv(), TIMEOUT)
                except websockets.ConnectionClosed:
                    pass
                check(b.close_code == 1012, "close code on server stop: %s" % b.close_code)
                late = time.monotonic() - start
                check(late < 5, "closed %.1f s after SIGTERM, with a 1 s drain window" % late)  # slack for sanitizers

        asyncio.run(talk())
        code = srv.proc.wait(TIMEOUT)
        check(code == 0, "chat_server exited %d" % code)
    chat_drain_notice(program)


def chat_drain_notice(program):
    """SIGTERM with a notice: /healthz answers 503 at once while the members stay connected
    (a load balancer stops sending new clients), and only after the notice are they closed
    with 1012."""
    with Server(program, "--port", "0", "--name", "n1", "--drain-notice-ms", "1500") as srv:
        async def drain():
            async with websockets.connect("ws://127.0.0.1:%d/chat" % srv.port) as ws:
                wait_members(srv.port, 1)
                srv.proc.send_signal(signal.SIGTERM)
                start = time.monotonic()
                while True:
                    status, body = health(srv.port)
                    if status != 200 or time.monotonic() - start > 1:
                        break
                    time.sleep(0.02)
                check(status == 503 and body.strip() == "draining node=n1 members=1",
                      "/healthz while draining answered %d %r" % (status, body))
                await ws.send("during the notice")
                check(await asyncio.wait_for(ws.recv(), TIMEOUT) == "during the notice",
                      "a member could not chat during the notice")
                try:
                    await asyncio.wait_for(ws.recv(), TIMEOUT)
                except websockets.ConnectionClosed:
                    pass
                late = time.monotonic() - start
                check(ws.close_code == 1012 and ws.close_reason == "service restart",
                      "closed with %s %r" % (ws.close_code, ws.close_reason))
                check(1.4 < late < 6.5, "closed %.1f s after SIGTERM, with a 1.5 s notice and a 1 s window" % late)

        asyncio.run(drain())
        code = srv.proc.wait(TIMEOUT)
        check(code == 0, "chat_server exited %d after draining" % code)


def scenario_chat_threads(program):
    """30 members of one room on a server of 3 threads: each gets every message, and each
    sender's messages in the order sent."""
    senders, count = 30, 10
    with Server(program, "--port", "0", "--threads", "3") as srv:
        async def talk():
            uri = "ws://127.0.0.1:%d/chat?room=threads" % srv.port
            members = [await websockets.connect(uri) for _ in range(senders)]
            wait_members(srv.port, senders)

            async def member(i, ws):
                for k in range(count):
                    await ws.send("%d %d" % (i, k))
                return [await asyncio.wait_for(ws.recv(), TIMEOUT) for _ in range(senders * count)]

            got = await asyncio.gather(*(member(i, ws) for i, ws in enumerate(members)))
            for i, messages in enumerate(got):
                for s in range(senders):
                    mine = [m for m in messages if m.split()[0] == str(s)]
                    check(mine == ["%d %d" % (s, k) for k in range(count)],
                          "member %d got sender %d's messages as %r" % (i, s, mine))
            await asyncio.gather(*(ws.close() for ws in members))

        asyncio.run(talk())
        srv.stop()


class Browser:
    """Headless Chromium driven over the DevTools protocol (which is itself a WebSocket)."""

    def __init__(self, folder, *extra):
        import shutil
        exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
        if not exe:
            print("no chromium to run the page in")
            sys.exit(77)
        self.proc = subprocess.Popen(
            [exe, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
             "--user-data-dir=" + folder, "--window-size=900,700", *extra, "about:blank"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
        self.url = None
        import selectors
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stderr, selectors.EVENT_READ)
        while self.url is None and sel.select(TIMEOUT):
            line = self.proc.stderr.readline()
            if not line:
                break
            if line.startswith("DevTools listening on "):
                self.url = line.split(" on ", 1)[1].strip()
        check(self.url is not None, "chromium did not start its DevTools endpoint")
        self.next_id = 0

    async def call(self, ws, method, session=None, **params):
        self.next_id += 1
        request = {"id": self.next_id, "method": method, "params": params}
        if session:
            request["sessionId"] = session
        await ws.send(json.dumps(request))
        while True:
            answer = json.loads(await asyncio.wait_for(ws.recv(), TIMEOUT))
            if answer.get("id") == self.next_id:
                check("error" not in answer, "%s failed: %s" % (method, answer.get("error")))
                return answer["result"]

    async def open(self, ws, url):
        target = await self.call(ws, "Target.createTarget", url=url)
        attached = await self.call(ws, "Target.attachToTarget", targetId=target["targetId"], flatten=True)
        return attached["sessionId"]

    async def evaluate(self, ws, session, expression):
        result = await self.call(ws, "Runtime.evaluate", session, expression=expression, returnByValue=True)
        return result["result"].get("value")

    async def wait_for(self, ws, session, expression, what):
        for _ in range(TIMEOUT * 10):
            if await self.evaluate(ws, session, expression):
                return
            await asyncio.sleep(0.1)
        raise AssertionError("page never showed " + what)

    def close(self):
        """Ends Chromium and every helper process it started (they share its session)."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.proc.pid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(5)
                break
            except subprocess.TimeoutExpired:
                continue
        self.proc.wait()
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)  # helpers that outlived the browser
        except ProcessLookupError:
            pass


def scenario_chat_browser(program):
    """Two browser tabs load the page, one types a message, both show it."""
    with Server(program, "--port", "0") as srv, tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        browser = Browser(folder)
        try:
            async def talk():
                page = "http://127.0.0.1:%d/" % srv.port
                async with websockets.connect(browser.url, max_size=None) as ws:
                    alice, bob = await browser.open(ws, page), await browser.open(ws, page)
                    connected = 'document.getElementById("status").textContent === "connected"'
                    for tab in (alice, bob):
                        await browser.wait_for(ws, tab, connected, '"connected"')
                    await browser.evaluate(ws, alice, """
                        document.getElementById("name").value = "alice";
                        document.getElementById("text").value = "hello <b>bob</b>";
                        document.getElementById("send").click();""")
                    shown = """[...document.querySelectorAll("li.msg")].map(li =>
                        li.querySelector(".name").textContent + ": " + li.querySelector(".text").textContent)"""
                    for tab in (alice, bob):
                        await browser.wait_for(ws, tab, 'document.querySelectorAll("li.msg").length > 0', "the message")
                        got = await browser.evaluate(ws, tab, shown)
                        check(got == ["alice: hello <b>bob</b>"], "the page shows %r" % got)
                    shot = os.environ.get("COROWS_CHAT_SCREENSHOT")
                    if shot:
                        import base64
                        png = await browser.call(ws, "Page.captureScreenshot", bob, format="png")
                        with open(shot, "wb") as f:
                            f.write(base64.b64decode(png["data"]))
                    srv.stop()
                    await browser.wait_for(ws, bob, 'document.getElementById("status").textContent === "disconnected"',
                                           '"disconnected" after the server stopped')

            asyncio.run(talk())
        finally:
            browser.close()


def scenario_echo_tls_browser(program):
    """Chromium (TLS by BoringSSL, not OpenSSL) echoes messages of every record size through
    the server's wss, whose connections gave up OpenSSL's SSL object after the handshake."""
    with tempfile.TemporaryDirectory(ignore_cleanup_errors=True) as folder:
        cert, key = make_certificate(folder)
        with Server(program, "--port", "0", "--cert", cert, "--key", key, "--deflate") as srv:
            browser = Browser(os.path.join(folder, "profile"), "--ignore-certificate-errors")
            try:
                async def talk():
                    async with websockets.connect(browser.url, max_size=None) as ws:
                        tab = await browser.open(ws, "about:blank")
                        script = """new Promise((resolve, reject) => {
                            const sizes = [1, 125, 16383, 16384, 16385, 70000, 1048576];
                            const ws = new WebSocket("wss://localhost:%d/");
                            let i = 0, text = "";
                            const next = () => {
                                if (i === sizes.length) { ws.close(1000); return; }
                                text = "";
                                for (let j = 0; j < sizes[i]; ++j) text += String.fromCharCode(97 + (j * 7 + i) %% 26);
                                ws.send(text);
                            };
                            ws.onopen = next;
                            ws.onmessage = (e) => {
                                if (e.data !== text) { reject("echo " + i + " differs"); return; }
                                ++i;
                                next();
                            };
                            ws.onclose = (e) => resolve({echoed: i, code: e.code, extensions: ws.extensions});
                            ws.onerror = () => reject("websocket error");
                        })""" % srv.port
                        result = await browser.call(ws, "Runtime.evaluate", tab, expression=script,
                                                    awaitPromise=True, returnByValue=True)
                        value = result["result"].get("value")
                        check(value is not None and value["echoed"] == 7 and value["code"] == 1000,
                              "the browser's echoes over wss: %r" % (result,))
                        check(value["extensions"].startswith("permessage-deflate"), "no deflate: %r" % value)
                asyncio.run(talk())
            finally:
                browser.close()
            srv.stop()


def raw_upgrade(port, path, rcvbuf=0):
    """A socket that did the opening handshake by hand (no client library behind it)."""
    s = socket.socket()
    if rcvbuf:
        # Small, and without the kernel's autotuning: a reader that never reads cannot hide
        # megabytes in its socket.
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.connect(("127.0.0.1", port))
    s.sendall(("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n" % (path, port)).encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        chunk = s.recv(1)
        check(chunk, "connection closed during the handshake")
        head += chunk
    check(head.startswith(b"HTTP/1.1 101"), "upgrade refused: %r" % head[:40])
    return s


def peak_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def scenario_chat_slow_readers(program):
    """Two members who never read, while a third sends 300,000 empty messages: both are
    dropped, and the server's memory stays put (each queued broadcast is charged what it
    keeps alive, not its 2 bytes on the wire)."""
    import threading
    with Server(program, "--port", "0") as srv:
        readers = [raw_upgrade(srv.port, "/chat", rcvbuf=4096) for _ in range(2)]
        talker = raw_upgrade(srv.port, "/chat")
        before = peak_rss_kib(srv.proc.pid)
        # The talker gets every broadcast too: it reads them all, on a thread of its own.
        stop = threading.Event()

        def drain():
            talker.settimeout(0.5)
            while not stop.is_set():
                try:
                    if not talker.recv(1 << 16):
                        return
                except socket.timeout:
                    continue
                except OSError:
                    return

        t = threading.Thread(target=drain, daemon=True)
        t.start()
        empty = b"\x81\x80\x00\x00\x00\x00"  # an empty text message, masked with a zero key
        for _ in range(30):
            talker.sendall(empty * 10000)
        # Each reader is closed (1008, then the close timeout): its socket ends.
        for r in readers:
            r.settimeout(TIMEOUT)
            total = 0
            while True:
                try:
                    chunk = r.recv(1 << 16)
                except socket.timeout:
                    raise AssertionError("a never-reading member was not dropped (%d bytes read)" % total)
                if not chunk:
                    break
                total += len(chunk)
            check(total < 30 * 10000 * 2, "a never-reading member got every message: never dropped")
        grown = peak_rss_kib(srv.proc.pid) - before
        stop.set()
        t.join(5)
        talker.close()
        print("peak RSS growth %d KiB over 300,000 broadcasts" % grown)
        if os.environ.get("COROWS_SANITIZED") != "1":
            check(grown < 100 * 1024, "the server grew by %d KiB" % grown)
        srv.stop()

def metric_values(text):
    """{name{labels}: value} of a Prometheus text exposition."""
    values = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            name, value = line.rsplit(" ", 1)
            values[name] = float(value)
    return values


def scenario_chat_metrics(program):
    # GET /metrics: what Prometheus scrapes, accepted by its own checker, with the counts of
    # three members in a room and ten messages; then a real Prometheus scrapes it.
    promtool, prometheus = shutil.which("promtool"), shutil.which("prometheus")
    if not promtool or not prometheus:
        print("promtool or prometheus is not installed (apt-get install prometheus)")
        sys.exit(77)
    with Server(program, "--port", "0") as srv:
        async def members():
            uri = "ws://127.0.0.1:%d/chat?room=metrics" % srv.port
            async with websockets.connect(uri) as a, websockets.connect(uri) as b, websockets.connect(uri) as c:
                wait_members(srv.port, 3)
                for i in range(10):
                    await a.send("message %d" % i)
                for ws in (a, b, c):
                    for i in range(10):
                        check(await asyncio.wait_for(ws.recv(), TIMEOUT) == "message %d" % i, "message %d" % i)
                status, kind, body = http_get(srv.port, "/metrics")
                check(status == 200 and kind.startswith("text/plain; version=0.0.4"),
                      "GET /metrics answered %d %s" % (status, kind))
                text = body.decode()
                lint = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True, text=True)
                check(lint.returncode == 0, "promtool check metrics: %s%s" % (lint.stdout, lint.stderr))
                v = metric_values(text)
                check(v["corows_connections_open"] == 3, "connections_open %s" % v["corows_connections_open"])
                check(v["corows_messages_received_total"] >= 10, "received %s" % v["corows_messages_received_total"])
                check(v["corows_messages_sent_total"] >= 30, "sent %s" % v["corows_messages_sent_total"])
                check(v["corows_payload_received_bytes_total"] >= 10 * len("message 0"), "payload bytes received")
                # The chat negotiates permessage-deflate: the wire carries frames, compressed.
                check(v["corows_wire_received_bytes_total"] > 0, "wire bytes received")
                check(v["corows_hub_topics"] == 1 and v["corows_hub_subscriptions"] == 3, "hub topics and subscriptions")
                check(v["corows_hub_publishes_total"] == 10 and v["corows_hub_deliveries_total"] == 30,
                      "hub publishes %s, deliveries %s" % (v["corows_hub_publishes_total"],
                                                          v["corows_hub_deliveries_total"]))
                await c.close()
            return text
        asyncio.run(members())
        deadline = time.monotonic() + TIMEOUT
        while True:
            v = metric_values(http_get(srv.port, "/metrics")[2].decode())
            # The last close frames may still be on their way out when the count says closed.
            settled = v["corows_connections_open"] == 0 and v["corows_queued_output_bytes"] == 0
            if settled or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        check(v["corows_connections_open"] == 0, "connections_open after all left: %s" % v["corows_connections_open"])
        check(v['corows_connections_closed_total{by="peer"}'] == 3, "closed by the peer: %s" %
              v['corows_connections_closed_total{by="peer"}'])
        check(v['corows_close_codes_total{code="1000"}'] == 3, "closes with 1000: %s" %
              v['corows_close_codes_total{code="1000"}'])
        check(v['corows_connections_opened_total'] == 3, "opened %s" % v["corows_connections_opened_total"])
        # A frame per message at least (and the close frames); nothing left queued once all left.
        check(v["corows_frames_received_total"] >= v["corows_messages_received_total"] + 3,
              "frames received %s" % v["corows_frames_received_total"])
        check(v["corows_frames_sent_total"] >= v["corows_messages_sent_total"] + 3,
              "frames sent %s" % v["corows_frames_sent_total"])
        check(v["corows_queued_output_bytes"] == 0, "queued output bytes %s" % v["corows_queued_output_bytes"])
        check(v["corows_handshake_duration_seconds_count"] == 3, "handshakes timed %s" %
              v["corows_handshake_duration_seconds_count"])
        check(v["corows_tls_handshakes_total"] == 0, "TLS handshakes on a plain port")
        prometheus_scrapes(prometheus, srv.port)
        srv.stop()


def scenario_echo_metrics(program):
    # --metrics-address: the counts on a port of their own, the echo port unchanged.
    promtool = shutil.which("promtool")
    if not promtool:
        print("promtool is not installed (apt-get install prometheus)")
        sys.exit(77)
    metrics_port = free_port()
    with Server(program, "--port", "0", "--metrics-address", "127.0.0.1:%d" % metrics_port) as srv:
        asyncio.run(echo_round_trips("ws://127.0.0.1:%d/" % srv.port, compression=None))
        deadline = time.monotonic() + TIMEOUT
        while True:
            status, kind, body = http_get(metrics_port, "/metrics")
            v = metric_values(body.decode())
            if v["corows_connections_closed_total{by=\"peer\"}"] == 1 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        check(status == 200 and kind.startswith("text/plain; version=0.0.4"), "GET /metrics answered %d" % status)
        lint = subprocess.run([promtool, "check", "metrics"], input=body.decode(), capture_output=True, text=True)
        check(lint.returncode == 0, "promtool check metrics: %s%s" % (lint.stdout, lint.stderr))
        # echo_round_trips sends seven messages and gets them back, then closes with 1000.
        check(v["corows_messages_received_total"] == 7 and v["corows_messages_sent_total"] == 7,
              "messages %s received, %s sent" % (v["corows_messages_received_total"], v["corows_messages_sent_total"]))
        check(v["corows_connections_closed_total{by=\"peer\"}"] == 1, "closed by the peer")
        check(v["corows_handshake_duration_seconds_count"] == 1, "one handshake timed")
        check(http_get(metrics_port, "/other")[0] == 404, "the metrics port answers only /metrics")
        check(upgrade_status(metrics_port) != 101, "the metrics port upgraded a WebSocket")
        srv.stop()


def scenario_echo_log(program):
    # --log-level: a refusal, an ending and a violation as lines on stderr, and a flood of bad
    # requests held to the rate limit (50 at once, then 20 a second).
    with tempfile.TemporaryFile("w+") as err:
        with Server(program, "--port", "0", "--log-level", "info", stderr=err) as srv:
            check(upgrade_status_of(srv.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == 400, "a bad request")
            asyncio.run(echo_round_trips("ws://127.0.0.1:%d/" % srv.port, compression=None))
            for _ in range(300):
                upgrade_status_of(srv.port, b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            srv.stop()
        err.seek(0)
        lines = err.read().splitlines()
    refusals = [l for l in lines if l.startswith("info refusal ")]
    check(refusals and "refused: bad_request: Upgrade header does not name websocket (RFC 6455 §4.2.1)" in refusals[0],
          "first refusal line: %r" % (refusals[:1],))
    # The ending says what the connection carried: echo_round_trips' samples, each echoed.
    samples = [s.encode() if isinstance(s, str) else s for s in ECHO_SAMPLES]
    carried = "%d messages (%d bytes)" % (len(samples), sum(len(s) for s in samples))
    ending = "closed by the peer with 1000; received %s, sent %s [peer]" % (carried, carried)
    check(any(l.startswith("info connection #2 127.0.0.1:") and l.endswith(ending) for l in lines),
          "no line for the echo client's ending: %r" % lines[:5])
    check(len(refusals) < 150, "%d refusal lines for 301 bad requests: not rate-limited" % len(refusals))


def upgrade_status_of(port, request):
    """The status code the server at 127.0.0.1:PORT answers `request` with (0: none)."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as s:
        s.sendall(request)
        line = s.makefile("rb").readline().decode()
    return int(line.split()[1]) if line.startswith("HTTP/1.1 ") else 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def prometheus_scrapes(prometheus, port):
    """A real Prometheus scrapes 127.0.0.1:PORT/metrics; its query API gives a counter back."""
    with tempfile.TemporaryDirectory() as d:
        config = os.path.join(d, "prometheus.yml")
        with open(config, "w") as f:
            f.write("global:\n  scrape_interval: 1s\nscrape_configs:\n"
                    "  - job_name: chat\n    static_configs:\n      - targets: ['127.0.0.1:%d']\n" % port)
        web = free_port()
        proc = subprocess.Popen([prometheus, "--config.file=" + config, "--storage.tsdb.path=" + d,
                                 "--web.listen-address=127.0.0.1:%d" % web],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 3 * TIMEOUT
            value = None
            while time.monotonic() < deadline and value is None:
                time.sleep(0.5)
                try:
                    conn = http.client.HTTPConnection("127.0.0.1", web, timeout=TIMEOUT)
                    conn.request("GET", "/api/v1/query?query=corows_connections_opened_total")
                    answer = json.loads(conn.getresponse().read())
                    conn.close()
                except (OSError, ValueError, http.client.HTTPException):
                    continue
                result = answer.get("data", {}).get("result", [])
                if result:
                    value = float(result[0]["value"][1])
            check(value == 3, "Prometheus read corows_connections_opened_total as %s" % value)
        finally:
            proc.terminate()
            proc.wait(TIMEOUT)


def main():
    scenario, programs = sys.argv[1], sys.argv[2:]
    {
        "echo": scenario_echo,
        "echo_deflate": scenario_echo_deflate,
        "echo_threads": scenario_echo_threads,
        "echo_limits": scenario_echo_limits,
        "echo_tls": scenario_echo_tls,
        "echo_tls_browser": scenario_echo_tls_browser,
        "echo_client": scenario_echo_client,
        "chat": scenario_chat,
        "chat_threads": scenario_chat_threads,
        "chat_limits": scenario_chat_limits,
        "chat_browser": scenario_chat_browser,
        "chat_slow_readers": scenario_chat_slow_readers,
        "chat_metrics": scenario_chat_metrics,
        "echo_metrics": scenario_echo_metrics,
        "echo_log": scenario_echo_log,
        "ticker": scenario_ticker,
        "tls_client": scenario_tls_client,
    }[scenario](*programs)
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print("FAILED:", e)
        sys.exit(1)
