# SPDX-License-Identifier: BSL-1.0
# Raw RFC 6455 / RFC 7692 peer for the conformance suite: frames built and parsed byte by byte,
# with nothing between us and the socket, so that we can send what no library would send and
# judge every bit of what comes back. Standard library only (Debian's /usr/bin/python3).
import base64
import hashlib
import os
import socket
import time
import zlib

GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA
DATA_OPS = (CONT, TEXT, BINARY)
CONTROL_OPS = (CLOSE, PING, PONG)
TAIL = b"\x00\x00\xff\xff"  # RFC 7692 §7.2.1: stripped by the sender, put back by the receiver

# Close codes a peer may send (RFC 6455 §7.4.1, §7.4.2; IANA's registry adds 1012-1014).
VALID_CLOSE_CODES = [1000, 1001, 1002, 1003, 1007, 1008, 1009, 1010, 1011, 1012, 1013, 1014,
                     3000, 3999, 4000, 4999]
INVALID_CLOSE_CODES = [0, 1, 999, 1004, 1005, 1006, 1015, 1016, 1100, 2000, 2999, 5000, 65535]


class Violation(Exception):
    """The peer did something the RFCs (or the case) do not allow."""


def accept_key(key):
    return base64.b64encode(hashlib.sha1(key.encode() + GUID).digest()).decode()


def mask(data, key):
    """XOR with the 4-byte key, fast enough for 16 MiB (one big-integer operation)."""
    n = len(data)
    if n == 0:
        return b""
    k = (key * (n // 4 + 1))[:n]
    return (int.from_bytes(data, "big") ^ int.from_bytes(k, "big")).to_bytes(n, "big")


def frame(op, payload=b"", fin=True, rsv=0, masked=True, length=None, length_form=None, key=None):
    """One frame. rsv: bits 0b100 (RSV1), 0b010 (RSV2), 0b001 (RSV3). length overrides the
    declared length; length_form (7, 16, 64) forces a length encoding, minimal or not."""
    b0 = (0x80 if fin else 0) | (rsv << 4) | op
    n = len(payload) if length is None else length
    form = length_form or (7 if n <= 125 else 16 if n <= 0xFFFF else 64)
    mbit = 0x80 if masked else 0
    if form == 7:
        head = bytes([b0, mbit | n])
    elif form == 16:
        head = bytes([b0, mbit | 126]) + n.to_bytes(2, "big")
    else:
        head = bytes([b0, mbit | 127]) + n.to_bytes(8, "big")
    if masked:
        key = key or os.urandom(4)
        return head + key + mask(payload, key)
    return head + payload


def close_payload(code=None, reason=b""):
    return b"" if code is None else code.to_bytes(2, "big") + reason


def valid_utf8(b):
    try:
        b.decode("utf-8")  # Python's codec rejects surrogates, overlongs and > U+10FFFF
        return True
    except UnicodeDecodeError:
        return False


class Deflate:
    """Negotiated permessage-deflate parameters (RFC 7692 §7)."""

    def __init__(self, snct=False, cnct=False, sbits=15, cbits=15):
        self.snct, self.cnct, self.sbits, self.cbits = snct, cnct, sbits, cbits

    def __repr__(self):
        return f"Deflate(snct={self.snct}, cnct={self.cnct}, sbits={self.sbits}, cbits={self.cbits})"


def parse_extensions(value):
    """'a; x=1; y, b' -> [('a', [('x', '1'), ('y', None)]), ('b', [])] (quotes removed)."""
    out = []
    for element in value.split(","):
        parts = [p.strip() for p in element.split(";")]
        if not parts[0]:
            continue
        params = []
        for p in parts[1:]:
            if "=" in p:
                k, v = p.split("=", 1)
                params.append((k.strip().lower(), v.strip().strip('"')))
            else:
                params.append((p.lower(), None))
        out.append((parts[0].lower(), params))
    return out


def read_head(sock, timeout, buf=None):
    """Reads an HTTP head; returns (head text, bytes after it)."""
    buf = bytearray(buf or b"")
    deadline = time.monotonic() + timeout
    while b"\r\n\r\n" not in buf:
        left = deadline - time.monotonic()
        if left <= 0:
            raise Violation("no complete HTTP head within %.0f s" % timeout)
        sock.settimeout(left)
        try:
            chunk = sock.recv(65536)
        except socket.timeout:
            continue
        except OSError as e:
            raise Violation(f"connection error during the handshake: {e}")
        if not chunk:
            raise Violation(f"connection closed during the handshake (got {bytes(buf)[:200]!r})")
        buf += chunk
        if len(buf) > 65536:
            raise Violation("HTTP head too large")
    i = buf.index(b"\r\n\r\n")
    return bytes(buf[:i]).decode("latin-1"), bytes(buf[i + 4:])


def parse_head(text):
    lines = text.split("\r\n")
    fields = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        k = k.strip().lower()
        fields[k] = (fields[k] + ", " + v.strip()) if k in fields else v.strip()
    return lines[0], fields


class Conn:
    """One WebSocket connection seen from the raw side. `we_are_client` decides who masks."""

    def __init__(self, sock, we_are_client, deflate=None, extra=b""):
        self.sock = sock
        self.client = we_are_client
        self.deflate = deflate
        self.buf = bytearray(extra)
        self.eof = False
        self.partial = None  # (opcode, compressed, [payloads]) of a fragmented message
        self.outcome = None  # what echo_client should print for this case (client role)
        self.timeout = 5.0
        if deflate:
            # Ours compresses with our direction's parameters, the peer's with its own.
            mine = (deflate.cnct, deflate.cbits) if we_are_client else (deflate.snct, deflate.sbits)
            peer = (deflate.snct, deflate.sbits) if we_are_client else (deflate.cnct, deflate.cbits)
            self.my_nct, self.my_bits = mine
            self.peer_nct, self.peer_bits = peer
            self.compressor = None
            self.decompressor = None

    # ------------------------------------------------------------------ sending
    def f(self, op, payload=b"", fin=True, rsv=0, **kw):
        return frame(op, payload, fin=fin, rsv=rsv, masked=kw.pop("masked", self.client), **kw)

    def send(self, *chunks, pause=0.0):
        """Each chunk in its own send(); with pause, each in its own TCP segment."""
        # A peer that stops reading must not block us forever (accepted sockets have no
        # timeout of their own, and reads leave whatever time they had left).
        self.sock.settimeout(max(self.timeout, 10.0))
        for i, c in enumerate(chunks):
            if i and pause:
                time.sleep(pause)
            try:
                self.sock.sendall(c)
            except OSError as e:
                raise Violation(f"send failed (peer closed early?): {e}")

    def compress(self, data):
        """One message's compressed payload with our negotiated parameters."""
        # zlib rejects raw window 8; 9 never reaches further back than 8 allows in practice
        # (distances stay under 2^9 - 262).
        bits = max(9, self.my_bits)
        if self.compressor is None or self.my_nct:
            self.compressor = zlib.compressobj(6, zlib.DEFLATED, -bits)
        out = self.compressor.compress(data) + self.compressor.flush(zlib.Z_SYNC_FLUSH)
        assert out.endswith(TAIL)
        return out[:-4]

    def msg(self, op, payload, compress=False, fragments=1):
        """A data message as frames (bytes), compressed and/or split into `fragments`."""
        body = self.compress(payload) if compress else payload
        if fragments <= 1:
            return self.f(op, body, rsv=0b100 if compress else 0)
        step = max(1, -(-len(body) // fragments))
        parts = [body[i:i + step] for i in range(0, len(body), step)] or [b""]
        out = []
        for i, p in enumerate(parts):
            out.append(self.f(op if i == 0 else CONT, p, fin=i == len(parts) - 1,
                              rsv=0b100 if compress and i == 0 else 0))
        return b"".join(out)

    # ------------------------------------------------------------------ receiving
    def _fill(self, deadline):
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        self.sock.settimeout(left)
        try:
            chunk = self.sock.recv(1 << 20)
        except socket.timeout:
            raise TimeoutError
        except ConnectionResetError:
            chunk = b""
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def _need(self, n, deadline):
        while len(self.buf) < n:
            if self.eof or not self._fill(deadline):
                return False
        return True

    def read_frame(self, timeout):
        """(fin, rsv, op, payload) of the peer's next frame, or None at EOF; checks the
        peer's framing strictly."""
        deadline = time.monotonic() + timeout
        if not self._need(2, deadline):
            if self.buf:
                raise Violation(f"connection closed inside a frame header ({bytes(self.buf)!r})")
            return None
        b0, b1 = self.buf[0], self.buf[1]
        fin, rsv, op = bool(b0 & 0x80), (b0 >> 4) & 7, b0 & 0xF
        masked, n = bool(b1 & 0x80), b1 & 0x7F
        pos = 2
        if n == 126:
            if not self._need(4, deadline):
                raise Violation("connection closed inside a frame header")
            n = int.from_bytes(self.buf[2:4], "big")
            pos = 4
            if n < 126:
                raise Violation(f"non-minimal 16-bit length {n}")
        elif n == 127:
            if not self._need(10, deadline):
                raise Violation("connection closed inside a frame header")
            n = int.from_bytes(self.buf[2:10], "big")
            pos = 10
            if n < 65536 or n >> 63:
                raise Violation(f"bad 64-bit length {n}")
        if masked != (not self.client):
            raise Violation("client frame not masked" if self.client is False else "server frame masked")
        if masked:
            if not self._need(pos + 4, deadline):
                raise Violation("connection closed inside a frame header")
            key = bytes(self.buf[pos:pos + 4])
            pos += 4
        if not self._need(pos + n, deadline):
            raise Violation(f"connection closed inside a frame of {n} bytes")
        payload = bytes(self.buf[pos:pos + n])
        del self.buf[:pos + n]
        if masked:
            payload = mask(payload, key)
        if op not in DATA_OPS + CONTROL_OPS:
            raise Violation(f"peer sent reserved opcode {op}")
        if op in CONTROL_OPS and (not fin or n > 125):
            raise Violation(f"peer sent a bad control frame (op {op}, fin {fin}, {n} bytes)")
        if rsv & 0b011 or (rsv and (not self.deflate or op not in (TEXT, BINARY))):
            raise Violation(f"peer set RSV bits {rsv:03b} on opcode {op}")
        return fin, rsv, op, payload

    def event(self, timeout=None):
        """The next event: ('text'|'binary', payload, compressed), ('ping', p), ('pong', p),
        ('close', code, reason), ('eof',). Raises Violation on a timeout or bad framing."""
        timeout = self.timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while True:
            try:
                fr = self.read_frame(max(0.001, deadline - time.monotonic()))
            except TimeoutError:
                raise Violation(f"nothing (more) from the peer within {timeout:.1f} s")
            if fr is None:
                if self.partial:
                    raise Violation("connection closed inside a fragmented message")
                return ("eof",)
            fin, rsv, op, payload = fr
            if op == PING:
                return ("ping", payload)
            if op == PONG:
                return ("pong", payload)
            if op == CLOSE:
                if len(payload) == 1:
                    raise Violation("close frame with a 1-byte payload")
                if not payload:
                    return ("close", None, b"")
                code = int.from_bytes(payload[:2], "big")
                if code not in VALID_CLOSE_CODES and not 3000 <= code <= 4999:
                    raise Violation(f"peer sent close code {code}, which may not be sent")
                if not valid_utf8(payload[2:]):
                    raise Violation(f"close reason is not UTF-8: {payload[2:]!r}")
                return ("close", code, payload[2:])
            if op == CONT:
                if not self.partial:
                    raise Violation("continuation frame without a message in progress")
                self.partial[2].append(payload)
            else:
                if self.partial:
                    raise Violation("new data frame inside a fragmented message")
                self.partial = (op, bool(rsv & 0b100), [payload])
            if not fin:
                continue
            op, compressed, parts = self.partial
            self.partial = None
            data = b"".join(parts)
            if compressed:
                data = self.inflate(data)
            kind = "text" if op == TEXT else "binary"
            if kind == "text" and not valid_utf8(data):
                raise Violation("peer sent a text message that is not UTF-8")
            return (kind, data, compressed)

    def inflate(self, data):
        # A decompressor with exactly the negotiated window: a distance beyond it fails.
        # A fresh one per message when the peer promised no context takeover: a reference
        # into an earlier message fails.
        if self.decompressor is None or self.peer_nct:
            self.decompressor = zlib.decompressobj(-self.peer_bits)
        # zlib lets a match reach back into the output of the same call, whatever the
        # window; small output steps make every reference come from the window itself
        # (give or take STEP bytes).
        STEP = 32
        d = self.decompressor
        parts = []
        buf = data + TAIL
        try:
            while True:
                chunk = d.decompress(buf, STEP)
                buf = d.unconsumed_tail
                if not chunk and not buf:
                    break
                parts.append(chunk)
            out = b"".join(parts)
        except zlib.error as e:
            raise Violation(f"peer's compressed data does not inflate with window {self.peer_bits}"
                            f"{' and no context takeover' if self.peer_nct else ''}: {e}")
        if self.decompressor.unused_data:
            raise Violation("peer's compressed message has data after its final block")
        return out

    # ------------------------------------------------------------------ expectations
    def expect(self, want, timeout=None):
        ev = self.event(timeout)
        if ev[0] != want[0] or ev[1:len(want)] != tuple(want[1:]):
            raise Violation(f"expected {show(want)}, got {show(ev)}")
        return ev

    def expect_message(self, kind, payload, timeout=None, compressed=None):
        ev = self.event(timeout)
        if ev[0] != kind or ev[1] != payload:
            raise Violation(f"expected {kind} message {short(payload)}, got {show(ev)}")
        if compressed is not None and ev[2] != compressed:
            raise Violation(f"echo of {len(payload)} bytes {'not ' if compressed else ''}compressed")
        return ev

    def expect_unordered(self, wants, timeout=None):
        """The events in `wants` ((kind, payload)), in any order."""
        left = list(wants)
        while left:
            ev = self.event(timeout)
            for w in left:
                if ev[:2] == tuple(w):
                    left.remove(w)
                    break
            else:
                raise Violation(f"expected one of {[show(w) for w in left]}, got {show(ev)}")

    def expect_close(self, codes, timeout=None):
        ev = self.event(timeout)
        want = codes if isinstance(codes, (set, frozenset, list, tuple)) else {codes}
        if ev[0] != "close" or ev[1] not in want:
            raise Violation(f"expected close {'/'.join(str(c) for c in want)}, got {show(ev)}")
        return ev

    def expect_eof(self, timeout=None):
        ev = self.event(timeout)
        if ev[0] != "eof":
            raise Violation(f"expected the TCP close, got {show(ev)}")

    def expect_silence(self, seconds):
        try:
            ev = self.event(seconds)
        except Violation as e:
            if "nothing (more)" in str(e):
                return
            raise
        raise Violation(f"expected nothing for {seconds} s, got {show(ev)}")

    def fail_with(self, code, timeout=None):
        """The peer must fail the connection: close `code` (nothing before it), then TCP close."""
        self.expect_close(code, timeout)
        self.expect_eof(timeout)
        self.outcome = "failed"

    def close_clean(self, code=1000, reason=b""):
        """Our close; the peer must echo the code (none for none), then the server closes TCP."""
        self.send(self.f(CLOSE, close_payload(code, reason)))
        self.expect_close(code)
        if self.client:
            self.expect_eof()
        else:
            self.shutdown()
        self.outcome = f"closed {1005 if code is None else code}"

    def shutdown(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


def show(ev):
    if ev[0] in ("text", "binary"):
        return f"{ev[0]} message {short(ev[1])}" + (" (compressed)" if len(ev) > 2 and ev[2] else "")
    if ev[0] == "close":
        return f"close {ev[1]} {short(ev[2])}" if len(ev) > 2 else f"close {ev[1:]}"
    if ev[0] in ("ping", "pong"):
        return f"{ev[0]} {short(ev[1])}"
    return ev[0]


def short(b):
    if len(b) <= 24:
        return repr(b)
    return f"<{len(b)} bytes {b[:12]!r}...>"
