#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# RFC 6455 / RFC 7692 conformance suite: a scripted raw-frame peer that judges our examples
# strictly by the RFCs. Standard library only (Debian's /usr/bin/python3).
#
#   conformance.py server CATEGORY ECHO_SERVER   we are a client: start `echo_server --port 0
#                                                [--deflate]`, do the HTTP upgrade by hand, send
#                                                masked hand-crafted frames, judge the echoes,
#                                                close codes and the server's TCP close.
#   conformance.py client CATEGORY ECHO_CLIENT   we are an Autobahn-style fuzzing server
#                                                (/getCaseCount, /runCase?case=N, /updateReports)
#                                                and run `echo_client --autobahn ws://127.0.0.1:P`;
#                                                unmasked frames out, and every frame the client
#                                                sends back must be masked, exact and timely; the
#                                                client's per-case output line is checked too.
#
# CATEGORY: framing, control, reserved, fragmentation, utf8, close, limits, deflate (cases.py).
# Each case prints "PASS <id> <description>" or "FAIL <id> <description>: <why>"; the run
# ends with "N passed, M failed" and exits 1 if anything failed. Every socket read has a
# timeout, so a peer that hangs is a FAIL, never a hung test.
#
# Decisions where the RFCs leave room (documented in cases.py next to the cases): close codes
# 1012-1014 are valid (IANA registry), 1015-2999 are not; bad deflate data fails with 1002
# (RFC 7692 §8 only says "fail the connection": the frames break the negotiated extension's
# framing, the message's content is not at fault); a compressed text message with invalid
# UTF-8 after inflation is 1007; non-minimal length encodings are 1002 (RFC 6455 §5.2 MUST).
import base64
import os
import re
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cases  # noqa: E402
from wsraw import (Conn, Deflate, Violation, accept_key, parse_extensions, parse_head,  # noqa: E402
                   read_head)


class Result:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def report(self, case, why):
        if why is None:
            self.passed += 1
            print(f"PASS {case.id} {case.desc}", flush=True)
        else:
            self.failed += 1
            print(f"FAIL {case.id} {case.desc}: {why}", flush=True)


# ---------------------------------------------------------------------- negotiation judges

def judge_deflate_response(offers, response):
    """Server role: the server's Sec-WebSocket-Extensions `response` (None: declined) against
    our offer elements. Returns Deflate or None; raises Violation if RFC 7692 §7 forbids it."""
    if response is None:
        return None
    elems = parse_extensions(response)
    if len(elems) != 1 or elems[0][0] != "permessage-deflate":
        raise Violation(f"response {response!r} is not exactly one permessage-deflate element")
    params = elems[0][1]
    names = [k for k, _ in params]
    if len(set(names)) != len(names):
        raise Violation(f"duplicate parameter in {response!r}")
    p = dict(params)
    for k, v in p.items():
        if k in ("server_no_context_takeover", "client_no_context_takeover"):
            if v is not None:
                raise Violation(f"{k} with a value in {response!r}")
        elif k in ("server_max_window_bits", "client_max_window_bits"):
            if v is None or not re.fullmatch(r"[89]|1[0-5]", v):
                raise Violation(f"{k} without a valid value in {response!r}")
        else:
            raise Violation(f"unknown parameter {k} in {response!r}")
    why = []
    for offer in offers:
        o = dict(offer)
        if "server_no_context_takeover" in o and "server_no_context_takeover" not in p:
            why.append("requested server_no_context_takeover missing")
            continue
        if "server_max_window_bits" in o:
            if "server_max_window_bits" not in p or int(p["server_max_window_bits"]) > int(o["server_max_window_bits"]):
                why.append("server_max_window_bits missing or above the offer")
                continue
        elif "server_max_window_bits" in p:
            why.append("server_max_window_bits not offered (RFC 7692 §7.1.2.1: MUST NOT)")
            continue
        if "client_max_window_bits" in p:
            if "client_max_window_bits" not in o:
                why.append("client_max_window_bits not offered (§7.1.2.2: MUST NOT)")
                continue
            if o["client_max_window_bits"] and int(p["client_max_window_bits"]) > int(o["client_max_window_bits"]):
                why.append("client_max_window_bits above the offer")
                continue
        return Deflate(snct="server_no_context_takeover" in p, cnct="client_no_context_takeover" in p,
                       sbits=int(p.get("server_max_window_bits", 15)),
                       cbits=int(p.get("client_max_window_bits", 15)))
    raise Violation(f"response {response!r} fits no offer ({'; '.join(why) or 'no valid offer'})")


def server_handshake(port, offer, timeout=5.0):
    """Connects and upgrades; returns (socket, response fields, bytes after the head)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    key = base64.b64encode(os.urandom(16)).decode()
    req = (f"GET /conformance HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n")
    if offer is not None:
        req += f"Sec-WebSocket-Extensions: {offer}\r\n"
    s.sendall((req + "\r\n").encode())
    head, rest = read_head(s, timeout)
    status, fields = parse_head(head)
    if not re.match(r"HTTP/1\.1 101\b", status):
        raise Violation(f"handshake answered {status!r}")
    if fields.get("upgrade", "").lower() != "websocket" or "upgrade" not in fields.get("connection", "").lower():
        raise Violation(f"101 without Upgrade/Connection: {fields}")
    if fields.get("sec-websocket-accept") != accept_key(key):
        raise Violation("wrong Sec-WebSocket-Accept")
    return s, fields, rest


def start_server(binary, deflate):
    argv = [binary, "--port", "0"] + (["--deflate"] if deflate else [])
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on .*:(\d+)", line)
    if not m:
        proc.kill()
        raise SystemExit(f"{binary} did not start: {line!r} {proc.stderr.read()[-2000:]}")
    # Drain stderr (connection failures are expected and logged there) so it never blocks.
    threading.Thread(target=proc.stderr.read, daemon=True).start()
    threading.Thread(target=proc.stdout.read, daemon=True).start()
    return proc, int(m.group(1))


def run_server_role(category, binary):
    res = Result()
    todo = [c for c in cases.CATEGORIES[category]() if c.roles in ("both", "server")]
    servers = {}
    try:
        for case in todo:
            want_deflate = case.offer is not None
            if want_deflate not in servers:
                servers[want_deflate] = start_server(binary, want_deflate)
            proc, port = servers[want_deflate]
            why = None
            sock = None
            try:
                sock, fields, rest = server_handshake(port, case.offer)
                offers = [p for name, p in parse_extensions(case.offer or "") if name == "permessage-deflate"]
                resp = fields.get("sec-websocket-extensions")
                params = judge_deflate_response(offers, resp)
                if case.negotiate is not None:
                    case.negotiate(params)
                c = Conn(sock, True, params, rest)
                c.timeout = case.timeout
                case.script(c)
            except Violation as e:
                why = str(e)
            except (OSError, AssertionError) as e:
                why = f"{type(e).__name__}: {e}"
            finally:
                if sock is not None:
                    sock.close()
            if proc.poll() is not None:
                why = (why + "; " if why else "") + f"echo_server exited with {proc.returncode}"
                del servers[want_deflate]
            res.report(case, why)
    finally:
        for proc, _ in servers.values():
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
    return res


# ---------------------------------------------------------------------- client role

def judge_client_offer(flags, offer):
    """The client's Sec-WebSocket-Extensions against its command-line flags."""
    if "--deflate" not in flags:
        if offer is not None:
            raise Violation(f"offer {offer!r} without --deflate")
        return None
    if offer is None:
        raise Violation("--deflate made no offer")
    elems = parse_extensions(offer)
    if len(elems) != 1 or elems[0][0] != "permessage-deflate":
        raise Violation(f"unexpected offer {offer!r}")
    params = elems[0][1]
    p = dict(params)
    if len(p) != len(params):
        raise Violation(f"duplicate parameter in offer {offer!r}")
    want = {"client_max_window_bits": None}
    for i, f in enumerate(flags):
        if f == "--deflate-server-no-context-takeover":
            want["server_no_context_takeover"] = None
        elif f == "--deflate-client-no-context-takeover":
            want["client_no_context_takeover"] = None
        elif f == "--deflate-server-max-window-bits" and flags[i + 1] != "15":
            want["server_max_window_bits"] = flags[i + 1]
        elif f == "--deflate-client-max-window-bits" and flags[i + 1] != "15":
            want["client_max_window_bits"] = flags[i + 1]
    if p != want:
        raise Violation(f"offer {offer!r} does not say what the flags ask: {want}")
    return p


def response_params(response):
    """Deflate negotiated by a response we send (known to be valid)."""
    if response is None:
        return None
    p = dict(parse_extensions(response)[0][1])
    return Deflate(snct="server_no_context_takeover" in p, cnct="client_no_context_takeover" in p,
                   sbits=int(p.get("server_max_window_bits") or 15),
                   cbits=int(p.get("client_max_window_bits") or 15))


class FuzzingServer:
    """Serves one echo_client --autobahn run: the case count, each case, the report."""

    def __init__(self, group, flags):
        self.group = group
        self.flags = flags
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(8)
        self.port = self.listener.getsockname()[1]
        self.results = {}  # case index -> (why or None, expected outcome)
        self.protocol_errors = []
        self.paths = []

    def accept(self, timeout):
        self.listener.settimeout(timeout)
        s, _ = self.listener.accept()
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        head, rest = read_head(s, 10)
        line, fields = parse_head(head)
        m = re.match(r"GET (\S+) HTTP/1\.1$", line)
        if not m:
            raise Violation(f"bad request line {line!r}")
        key = fields.get("sec-websocket-key", "")
        try:
            ok_key = len(base64.b64decode(key, validate=True)) == 16
        except ValueError:
            ok_key = False
        if (not ok_key or fields.get("sec-websocket-version") != "13" or "host" not in fields
                or fields.get("upgrade", "").lower() != "websocket"
                or "upgrade" not in fields.get("connection", "").lower()):
            raise Violation(f"bad upgrade request {head!r}")
        return s, m.group(1), key, fields, rest

    @staticmethod
    def answer(s, key, extensions):
        resp = ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                f"Sec-WebSocket-Accept: {accept_key(key)}\r\n")
        if extensions is not None:
            resp += f"Sec-WebSocket-Extensions: {extensions}\r\n"
        s.sendall((resp + "\r\n").encode())

    def simple(self, text):
        """/getCaseCount and /updateReports: optional text message, then a clean close."""
        s, path, key, fields, rest = self.accept(30)
        self.paths.append(path)
        self.answer(s, key, None)
        c = Conn(s, False, None, rest)
        if text is not None:
            c.send(c.f(1, text.encode()))
        c.close_clean(1000)
        return path

    def serve(self):
        try:
            path = self.simple(str(len(self.group)))
            if path != "/getCaseCount":
                raise Violation(f"first request was {path!r}, not /getCaseCount")
            for n, case in enumerate(self.group, 1):
                s, path, key, fields, rest = self.accept(30)
                self.paths.append(path)
                want = f"/runCase?case={n}&agent=corows"
                why = None
                c = None
                try:
                    if path != want:
                        raise Violation(f"request for {path!r}, expected {want!r}")
                    offer = judge_client_offer(self.flags, fields.get("sec-websocket-extensions"))
                    response = case.response(offer) if callable(case.response) else case.response
                    if response != cases.NO_ANSWER:
                        self.answer(s, key, response)
                    params = response_params(response) if offer is not None and not case.rejects else None
                    if params is not None and case.params is not None:
                        params = case.params
                    c = Conn(s, False, params, rest)
                    c.timeout = case.timeout
                    case.script(c)
                except Violation as e:
                    why = str(e)
                except (OSError, AssertionError) as e:
                    why = f"{type(e).__name__}: {e}"
                finally:
                    s.close()
                self.results[n] = (why, c.outcome if c else None)
            path = self.simple(None)
            if path != "/updateReports?agent=corows":
                raise Violation(f"last request was {path!r}, not /updateReports?agent=corows")
        except (Violation, OSError) as e:
            self.protocol_errors.append(f"{type(e).__name__}: {e}")


def run_client_role(category, binary):
    res = Result()
    todo = [c for c in cases.CATEGORIES[category]() if c.roles in ("both", "client")]
    # Consecutive cases with the same command-line flags share one echo_client run.
    groups = []
    for case in todo:
        if groups and groups[-1][0] == case.flags:
            groups[-1][1].append(case)
        else:
            groups.append((case.flags, [case]))
    for flags, group in groups:
        srv = FuzzingServer(group, flags)
        t = threading.Thread(target=srv.serve, daemon=True)
        t.start()
        argv = [binary, "--autobahn", f"ws://127.0.0.1:{srv.port}", "--agent", "corows",
                "--timeout", "20"] + list(flags)
        budget = 60 + sum(c.timeout for c in group)
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=budget)
            out, err, rc = proc.stdout, proc.stderr, proc.returncode
        except subprocess.TimeoutExpired as e:
            out = e.stdout.decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
            err, rc = f"echo_client did not finish within {budget} s", None
        t.join(10)
        lines = dict(re.findall(r"^case (\d+): (.*)$", out, re.M))
        general = []
        if rc != 0:
            general.append(f"echo_client exit status {rc}: {err.strip()[-500:]}")
        if srv.protocol_errors:
            general.append("; ".join(srv.protocol_errors))
        if not re.search(r"^updateReports: closed 1000$", out, re.M):
            general.append("no 'updateReports: closed 1000' line")
        for n, case in enumerate(group, 1):
            why, outcome = srv.results.get(n, ("case never ran", None))
            line = lines.get(str(n))
            if why is None:
                if line is None:
                    why = "echo_client printed no line for the case"
                elif outcome == "failed" and not line.startswith("failed: "):
                    why = f"echo_client printed {line!r}, expected a failure"
                elif outcome and outcome != "failed" and line != outcome:
                    why = f"echo_client printed {line!r}, expected {outcome!r}"
            if why is None and general:
                why = " / ".join(general)
            res.report(case, why)
    return res


# ---------------------------------------------------------------------- self-test

def run_selftest():
    """The judge must catch each kind of misbehaviour: a fake peer on a socketpair does one
    wrong thing per scenario, and the scenario passes only if Conn raises Violation."""
    import random
    import zlib
    from wsraw import BINARY, CLOSE, TEXT, frame
    rng = random.Random(9)
    noise = rng.randbytes(2000)

    def deflated(data, bits, co=None):
        co = co or zlib.compressobj(6, zlib.DEFLATED, -bits)
        return (co.compress(data) + co.flush(zlib.Z_SYNC_FLUSH))[:-4]

    shared = zlib.compressobj(6, zlib.DEFLATED, -15)
    scenarios = [
        ("masked_server_frame", None, [frame(TEXT, b"hi", masked=True)], lambda c: c.expect_message("text", b"hi")),
        ("wrong_echo", None, [frame(TEXT, b"hj", masked=False)], lambda c: c.expect_message("text", b"hi")),
        ("text_for_binary", None, [frame(TEXT, b"hi", masked=False)], lambda c: c.expect_message("binary", b"hi")),
        ("wrong_close_code", None, [frame(CLOSE, b"\x03\xe8", masked=False)], lambda c: c.fail_with(1002)),
        ("close_code_1005", None, [frame(CLOSE, b"\x03\xed", masked=False)], lambda c: c.expect_close(1005)),
        ("no_tcp_close", None, [frame(CLOSE, b"\x03\xea", masked=False)], lambda c: c.fail_with(1002)),
        ("silence", None, [], lambda c: c.expect_message("text", b"hi")),
        ("invalid_utf8_text", None, [frame(TEXT, b"\xed\xa0\x80", masked=False)],
         lambda c: c.expect_message("text", b"\xed\xa0\x80")),
        ("rsv2", None, [frame(TEXT, b"hi", rsv=2, masked=False)], lambda c: c.expect_message("text", b"hi")),
        ("rsv1_without_deflate", None, [frame(TEXT, deflated(b"hi", 15), rsv=4, masked=False)],
         lambda c: c.expect_message("text", b"hi")),
        ("pong_instead_of_silence", None, [frame(0xA, b"", masked=False)], lambda c: c.expect_silence(0.2)),
        ("window_too_big", Deflate(sbits=9), [frame(BINARY, deflated(noise * 2, 15), rsv=4, masked=False)],
         lambda c: c.expect_message("binary", noise * 2)),
        ("context_despite_snct", Deflate(snct=True),
         [frame(BINARY, deflated(noise, 15, shared), rsv=4, masked=False),
          frame(BINARY, deflated(noise, 15, shared), rsv=4, masked=False)],
         lambda c: (c.expect_message("binary", noise), c.expect_message("binary", noise))),
        ("nonminimal_length", None, [frame(BINARY, b"x", length_form=16, masked=False)],
         lambda c: c.expect_message("binary", b"x")),
    ]
    res = Result()
    for name, params, frames, check in scenarios:
        a, b = socket.socketpair()
        a.sendall(b"".join(frames))
        if name != "no_tcp_close" and name != "silence" and name != "pong_instead_of_silence":
            a.shutdown(socket.SHUT_WR)
        c = Conn(b, True, params)
        c.timeout = 0.3
        why = "the judge let it pass"
        try:
            check(c)
        except Violation as e:
            why = None
            print(f"# {name}: {e}")
        res.report(cases.Case(f"selftest.{name}", "the judge rejects it", None), why)
        a.close()
        b.close()
    return res


def main():
    if sys.argv[1:] == ["selftest"]:
        res = run_selftest()
        print(f"{res.passed} passed, {res.failed} failed", flush=True)
        sys.exit(1 if res.failed else 0)
    if len(sys.argv) != 4 or sys.argv[1] not in ("server", "client") or sys.argv[2] not in cases.CATEGORIES:
        sys.exit(f"usage: {sys.argv[0]} server|client {{{','.join(cases.CATEGORIES)}}} PROGRAM")
    role, category, binary = sys.argv[1:]
    if not os.access(binary, os.X_OK):
        sys.exit(f"{binary} is missing or not executable (build it first)")
    start = time.monotonic()
    res = run_server_role(category, binary) if role == "server" else run_client_role(category, binary)
    print(f"# {role} {category}: {time.monotonic() - start:.1f} s", flush=True)
    print(f"{res.passed} passed, {res.failed} failed", flush=True)
    sys.exit(1 if res.failed or not res.passed else 0)


if __name__ == "__main__":
    main()
