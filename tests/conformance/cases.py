# SPDX-License-Identifier: BSL-1.0
# The conformance cases, by category. A case is a script run against a Conn (wsraw.py) that
# is the same in both roles: only who masks differs, and the Conn handles that. Scripts raise
# Violation on anything the RFCs do not allow.
import json
import random
import time
import zlib

from wsraw import (BINARY, CLOSE, CONT, Deflate, INVALID_CLOSE_CODES, PING, PONG, TEXT, VALID_CLOSE_CODES,
                   Violation, close_payload)

BIG = 45.0  # timeout for cases that move many MiB on a loaded machine


class Case:
    def __init__(self, id, desc, script, roles="both", offer=None, response=None, flags=(),
                 timeout=5.0, negotiate=None, rejects=False, params=None):
        self.id, self.desc, self.script, self.roles = id, desc, script, roles
        self.offer = offer            # server role: our Sec-WebSocket-Extensions offer
        self.response = response      # client role: our answer (str, None, or f(offer params))
        self.flags = tuple(flags)     # client role: echo_client's deflate flags
        self.timeout = timeout
        self.negotiate = negotiate    # server role: checks the negotiated Deflate (or None)
        self.rejects = rejects        # client role: the client must refuse our handshake answer
        self.params = params          # client role: the agreement to judge by, if not the answer's


def kind_of(op):
    return "text" if op == TEXT else "binary"


def text(n, seed=1):
    """Valid UTF-8 of exactly n bytes with 1- to 4-byte characters."""
    rng = random.Random(seed)
    words = ["frame ", "κόσμε ", "naïve ", "日本語 ", "😀 ", "x", "deflate ", "€ "]
    out = bytearray()
    while len(out) < n:
        out += rng.choice(words).encode()
        if len(out) > 1 << 16:
            out = out * (n // len(out) + 1)
    out = bytes(out[:n])
    while out and not _valid(out):
        out = out[:-1]
    return out + b"a" * (n - len(out))


def _valid(b):
    try:
        b.decode()
        return True
    except UnicodeDecodeError:
        return False


def binary(n, seed=2):
    rng = random.Random(seed)
    block = rng.randbytes(min(n, 4096))
    return (block * (n // max(1, len(block)) + 1))[:n] if n else b""


# ---------------------------------------------------------------------- script builders

def echo_script(op, payload, fragments=1, pause=0.0, compress=False, expect_compressed=None):
    def run(c):
        data = c.msg(op, payload, compress=compress, fragments=fragments)
        if pause and fragments > 1:
            c.send(*split_frames(data), pause=pause)
        else:
            c.send(data)
        c.expect_message(kind_of(op), payload, compressed=expect_compressed)
        c.close_clean()
    return run


def split_frames(data):
    """Bytes of consecutive frames -> list of frames (our own, so lengths are well formed)."""
    out = []
    i = 0
    while i < len(data):
        n = data[i + 1] & 0x7F
        pos = i + 2
        if n == 126:
            n = int.from_bytes(data[pos:pos + 2], "big")
            pos += 2
        elif n == 127:
            n = int.from_bytes(data[pos:pos + 8], "big")
            pos += 8
        if data[i + 1] & 0x80:
            pos += 4
        out.append(data[i:pos + n])
        i = pos + n
    return out


def fail_script(build, code, before=None):
    """Sends build(c) (bytes or list of chunks); expects `before` events first, then the
    connection failed with `code`."""
    def run(c):
        data = build(c)
        c.send(*(data if isinstance(data, list) else [data]))
        for ev in before or []:
            c.expect(ev)
        c.fail_with(code)
    return run


def script(*steps):
    def run(c):
        for s in steps:
            s(c)
    return run


# ---------------------------------------------------------------------- framing

SIZES = [0, 1, 125, 126, 127, 65535, 65536, 65537, 1 << 20]


def framing():
    cs = []
    for op in (TEXT, BINARY):
        for n in SIZES:
            p = text(n) if op == TEXT else binary(n)
            cs.append(Case(f"framing.{kind_of(op)}.{n}", f"{kind_of(op)} message of {n} bytes is echoed",
                           echo_script(op, p), timeout=20 if n > 65537 else 5))
    # Length encodings
    cs.append(Case("framing.length.16bit_nonminimal", "125 bytes with a 16-bit length: 1002",
                   fail_script(lambda c: c.f(BINARY, b"x" * 125, length_form=16), 1002)))
    cs.append(Case("framing.length.64bit_nonminimal", "65535 bytes with a 64-bit length: 1002",
                   fail_script(lambda c: c.f(BINARY, b"x" * 65535, length_form=64), 1002)))
    cs.append(Case("framing.length.64bit_top_bit", "64-bit length with the top bit set: 1002",
                   fail_script(lambda c: c.f(BINARY, b"", length=1 << 63, length_form=64), 1002)))
    cs.append(Case("framing.unmasked_to_server", "unmasked frame to a server: 1002",
                   fail_script(lambda c: c.f(TEXT, b"hello", masked=False), 1002), roles="server"))
    cs.append(Case("framing.masked_to_client", "masked frame to a client: 1002",
                   fail_script(lambda c: c.f(TEXT, b"hello", masked=True), 1002), roles="client"))
    cs.append(Case("framing.masked_zero_key", "masked with key 00000000 is still masked and echoed",
                   echo_script_key(b"\x00\x00\x00\x00"), roles="server"))

    def bytewise(c):
        p = binary(70000)
        fr = c.f(BINARY, p)
        c.send(*[fr[i:i + 1] for i in range(14)], fr[14:30000], fr[30000:], pause=0.005)
        c.expect_message("binary", p)
        c.close_clean()
    cs.append(Case("framing.header_bytewise", "64-bit header sent one byte per TCP segment, payload in 2",
                   bytewise, timeout=10))

    def many(c):
        ps = [(TEXT if i % 2 else BINARY, (text if i % 2 else binary)(i * 7 % 300, i)) for i in range(200)]
        c.send(b"".join(c.f(op, p) for op, p in ps))
        for op, p in ps:
            c.expect_message(kind_of(op), p)
        c.close_clean()
    cs.append(Case("framing.many_in_one_segment", "200 messages in one TCP write come back in order", many))

    def both_ways(c):
        # Keep sending while echoes come back: nothing must be lost or reordered.
        ps = [binary(1000 + i, i) for i in range(300)]
        for i in range(0, 300, 30):
            c.send(b"".join(c.f(BINARY, p) for p in ps[i:i + 30]))
            for p in ps[i:i + 30]:
                c.expect_message("binary", p)
        c.close_clean()
    cs.append(Case("framing.interleaved_batches", "10 batches of 30 messages, echoes between batches", both_ways))
    return cs


def echo_script_key(key):
    def run(c):
        c.send(c.f(TEXT, b"zero key", key=key))
        c.expect_message("text", b"zero key")
        c.close_clean()
    return run


# ---------------------------------------------------------------------- control frames

def control():
    cs = []
    for n in (0, 1, 10, 125):
        p = bytes(range(n))
        cs.append(Case(f"control.ping.{n}", f"ping of {n} bytes gets a pong with the same payload",
                       script(lambda c, p=p: c.send(c.f(PING, p)), lambda c, p=p: c.expect(("pong", p)),
                              lambda c: c.close_clean())))
    cs.append(Case("control.ping.126", "ping of 126 bytes: 1002, no pong",
                   fail_script(lambda c: c.f(PING, b"x" * 126), 1002)))
    cs.append(Case("control.ping.126_16bit", "ping declaring 65535 bytes, payload never sent: 1002 at once",
                   fail_script(lambda c: c.f(PING, b"", length=65535), 1002)))
    cs.append(Case("control.pong.126", "pong of 126 bytes: 1002",
                   fail_script(lambda c: c.f(PONG, b"x" * 126), 1002)))
    cs.append(Case("control.close.126", "close of 126 bytes: 1002",
                   fail_script(lambda c: c.f(CLOSE, close_payload(1000, b"x" * 124)), 1002)))

    def unsolicited(c):
        c.send(c.f(PONG, b"unsolicited"), c.f(PONG, b""))
        c.send(c.f(TEXT, b"after pongs"))
        c.expect_message("text", b"after pongs")
        c.close_clean()
    cs.append(Case("control.pong.unsolicited", "unsolicited pongs are ignored", unsolicited))

    def ten(c):
        # RFC 6455 §5.5.3: a pong may answer only the most recent of several pings. Pongs
        # for earlier ones may come too, but in order, and the last ping's always.
        c.send(b"".join(c.f(PING, b"ping %d" % i) for i in range(10)))
        last = -1
        while last < 9:
            ev = c.expect(("pong",))
            n = int(ev[1].split()[1])
            if n <= last:
                raise Violation(f"pong for ping {n} after the one for ping {last}")
            last = n
        c.close_clean()
    cs.append(Case("control.ping.ten_in_one_segment",
                   "10 pings in one write: pongs in order, the last ping's among them", ten))

    def between(c):
        c.send(c.f(TEXT, b"frag1 ", fin=False), c.f(PING, b"in between"), c.f(CONT, b"frag2"))
        c.expect_unordered([("pong", b"in between"), ("text", b"frag1 frag2")])
        c.close_clean()
    cs.append(Case("control.ping.between_fragments", "ping between fragments: pong and the message", between))

    def pong_between(c):
        c.send(c.f(BINARY, b"a", fin=False), c.f(PONG, b"p"), c.f(CONT, b"b", fin=False), c.f(PONG, b""),
               c.f(CONT, b"c"), pause=0.01)
        c.expect_message("binary", b"abc")
        c.close_clean()
    cs.append(Case("control.pong.between_fragments", "pongs between fragments are ignored", pong_between))
    cs.append(Case("control.ping.fragmented", "ping with FIN=0: 1002",
                   fail_script(lambda c: c.f(PING, b"a", fin=False) + c.f(CONT, b"b"), 1002)))
    cs.append(Case("control.pong.fragmented", "pong with FIN=0: 1002",
                   fail_script(lambda c: c.f(PONG, b"a", fin=False), 1002)))

    def ping_binary(c):
        p = bytes([0, 255, 254, 1, 0x80, 0xC0]) * 20
        c.send(c.f(PING, p))
        c.expect(("pong", p))
        c.close_clean()
    cs.append(Case("control.ping.binary_payload", "ping with non-UTF-8 bytes: pong echoes them", ping_binary))
    return cs


# ---------------------------------------------------------------------- reserved bits, opcodes

def reserved():
    cs = []
    for rsv in (0b100, 0b010, 0b001, 0b111):
        cs.append(Case(f"reserved.rsv{rsv:03b}.text", f"text with RSV={rsv:03b} and no extension: 1002",
                       fail_script(lambda c, r=rsv: c.f(TEXT, b"hello", rsv=r), 1002)))
    cs.append(Case("reserved.rsv010.ping", "ping with RSV2: 1002",
                   fail_script(lambda c: c.f(PING, b"p", rsv=0b010), 1002)))
    cs.append(Case("reserved.rsv100.ping", "ping with RSV1 (no extension): 1002",
                   fail_script(lambda c: c.f(PING, b"p", rsv=0b100), 1002)))
    cs.append(Case("reserved.rsv001.after_echo", "text, then RSV3 text, then ping: echo, then 1002, no pong",
                   fail_script(lambda c: c.f(TEXT, b"first") + c.f(TEXT, b"bad", rsv=1) + c.f(PING, b"p"),
                               1002, before=[("text", b"first")])))
    for op in list(range(3, 8)) + list(range(11, 16)):
        cs.append(Case(f"reserved.opcode{op}", f"opcode {op}: 1002",
                       fail_script(lambda c, op=op: c.f(op, b"reserved" if op % 2 else b""), 1002)))
    cs.append(Case("reserved.opcode5.after_echo", "text, opcode 5, ping: echo, then 1002, no pong",
                   fail_script(lambda c: c.f(TEXT, b"first") + c.f(5, b"") + c.f(PING, b"p"),
                               1002, before=[("text", b"first")])))
    cs.append(Case("reserved.opcode11.in_fragment", "opcode 11 inside a fragmented message: 1002",
                   fail_script(lambda c: c.f(TEXT, b"a", fin=False) + c.f(11, b""), 1002)))
    return cs


# ---------------------------------------------------------------------- fragmentation

def fragmentation():
    cs = []
    cs.append(Case("frag.text.2", "text in 2 fragments", echo_script(TEXT, text(100), fragments=2)))
    cs.append(Case("frag.binary.2", "binary in 2 fragments", echo_script(BINARY, binary(100), fragments=2)))
    cs.append(Case("frag.text.10_segments", "text in 10 fragments, each in its own TCP segment",
                   echo_script(TEXT, text(1000), fragments=10, pause=0.02)))
    cs.append(Case("frag.binary.1000_one_segment", "binary in 1000 fragments in one write",
                   echo_script(BINARY, binary(10000), fragments=1000)))
    cs.append(Case("frag.binary.65536x2", "binary 128 KiB in 2 fragments of 64 KiB",
                   echo_script(BINARY, binary(1 << 17), fragments=2), timeout=10))

    def empties(c):
        c.send(c.f(TEXT, b"", fin=False), c.f(CONT, b"a", fin=False), c.f(CONT, b"", fin=False),
               c.f(CONT, b"b", fin=False), c.f(CONT, b""))
        c.expect_message("text", b"ab")
        c.close_clean()
    cs.append(Case("frag.empty_fragments", "empty fragments around the data", empties))

    def all_empty(c):
        c.send(c.f(BINARY, b"", fin=False) + c.f(CONT, b"", fin=False) + c.f(CONT, b""))
        c.expect_message("binary", b"")
        c.close_clean()
    cs.append(Case("frag.all_empty", "message of 3 empty fragments is an empty message", all_empty))
    cs.append(Case("frag.cont_without_start", "continuation without a message: 1002",
                   fail_script(lambda c: c.f(CONT, b"orphan"), 1002)))
    cs.append(Case("frag.cont_fin0_without_start", "continuation FIN=0 without a message: 1002",
                   fail_script(lambda c: c.f(CONT, b"orphan", fin=False), 1002)))
    cs.append(Case("frag.cont_after_complete", "continuation after a complete message: echo, then 1002",
                   fail_script(lambda c: c.f(TEXT, b"done") + c.f(CONT, b"more"), 1002,
                               before=[("text", b"done")])))
    cs.append(Case("frag.text_inside_text", "new text frame inside a fragmented message: 1002",
                   fail_script(lambda c: c.f(TEXT, b"start", fin=False) + c.f(TEXT, b"again"), 1002)))
    cs.append(Case("frag.binary_inside_text", "new binary FIN=0 inside a fragmented message: 1002",
                   fail_script(lambda c: c.f(TEXT, b"start", fin=False) + c.f(BINARY, b"x", fin=False), 1002)))

    def pings_each(c):
        c.send(c.f(TEXT, b"one ", fin=False), c.f(PING, b"1"), c.f(CONT, b"two ", fin=False), c.f(PING, b"2"),
               c.f(CONT, b"three"), pause=0.02)
        c.expect_unordered([("pong", b"1"), ("pong", b"2"), ("text", b"one two three")])
        c.close_clean()
    cs.append(Case("frag.pings_each_segment", "pings between fragments, each in its own segment", pings_each))
    cs.append(Case("frag.close_fragmented", "close with FIN=0: 1002",
                   fail_script(lambda c: c.f(CLOSE, close_payload(1000), fin=False), 1002)))

    def utf8_split(c):
        p = "κόσμε😀日本".encode()
        c.send(b"".join(c.f(TEXT if i == 0 else CONT, p[i:i + 1], fin=i == len(p) - 1) for i in range(len(p))))
        c.expect_message("text", p)
        c.close_clean()
    cs.append(Case("frag.utf8_split_bytewise", "text split inside characters, one byte per fragment", utf8_split))

    def bytewise_segments(c):
        p = "Hello-µ@ßöäüàá-UTF-8!!".encode()
        c.send(*[c.f(TEXT if i == 0 else CONT, p[i:i + 1], fin=i == len(p) - 1) for i in range(len(p))],
               pause=0.01)
        c.expect_message("text", p)
        c.close_clean()
    cs.append(Case("frag.bytewise_segments", "one byte per fragment, each fragment its own segment",
                   bytewise_segments))
    return cs


# ---------------------------------------------------------------------- UTF-8

VALID_UTF8 = [
    ("ascii", b"Hello, world"),
    ("kosme", "κόσμε".encode()),
    ("nul", b"\x00"),
    ("u007f", b"\x7f"),
    ("u0080", b"\xc2\x80"),
    ("u07ff", b"\xdf\xbf"),
    ("u0800", b"\xe0\xa0\x80"),
    ("ud7ff", b"\xed\x9f\xbf"),
    ("ue000", b"\xee\x80\x80"),
    ("ufffd", b"\xef\xbf\xbd"),
    ("ufffe_nonchar", b"\xef\xbf\xbe"),
    ("uffff_nonchar", b"\xef\xbf\xbf"),
    ("u10000", b"\xf0\x90\x80\x80"),
    ("u10ffff", b"\xf4\x8f\xbf\xbf"),
    ("emoji_mix", "a😀b日本c€".encode()),
    ("bom", b"\xef\xbb\xbfBOM"),
]

INVALID_UTF8 = [
    ("lone_cont_80", b"\x80"),
    ("lone_cont_bf", b"ab\xbf"),
    ("overlong_c0_80", b"\xc0\x80"),
    ("overlong_c1_bf", b"\xc1\xbf"),
    ("overlong_e0_80_80", b"\xe0\x80\x80"),
    ("overlong_e0_9f_bf", b"\xe0\x9f\xbf"),
    ("overlong_f0_80_80_80", b"\xf0\x80\x80\x80"),
    ("overlong_f0_8f_bf_bf", b"\xf0\x8f\xbf\xbf"),
    ("overlong_slash", b"\xc0\xaf"),
    ("surrogate_d800", b"\xed\xa0\x80"),
    ("surrogate_dbff", b"\xed\xaf\xbf"),
    ("surrogate_dc00", b"\xed\xb0\x80"),
    ("surrogate_dfff", b"\xed\xbf\xbf"),
    ("surrogate_pair", b"\xed\xa0\x80\xed\xb0\x80"),
    ("above_10ffff", b"\xf4\x90\x80\x80"),
    ("f5", b"\xf5\x80\x80\x80"),
    ("five_byte", b"\xf8\x88\x80\x80\x80"),
    ("six_byte", b"\xfc\x84\x80\x80\x80\x80"),
    ("fe", b"\xfe"),
    ("ff", b"\xff"),
    ("truncated_2", b"ab\xc2"),
    ("truncated_3", b"ab\xe0\xa0"),
    ("truncated_4", b"ab\xf0\x90\x80"),
    ("lead_then_ascii", b"\xc2A"),
    ("kosme_then_surrogate", "κόσμε".encode() + b"\xed\xa0\x80edited"),
    ("valid_then_f4_90", "κόσμε".encode() + b"\xf4\x90\x80\x80edited"),
]


def utf8():
    cs = []
    for name, p in VALID_UTF8:
        cs.append(Case(f"utf8.valid.{name}", f"valid {p!r} is echoed", echo_script(TEXT, p)))
        cs.append(Case(f"utf8.valid.{name}.bytewise", f"valid {p!r}, one byte per fragment",
                       echo_script(TEXT, p, fragments=len(p))))
    for name, p in INVALID_UTF8:
        cs.append(Case(f"utf8.invalid.{name}", f"invalid {p!r}: 1007",
                       fail_script(lambda c, p=p: c.f(TEXT, p), 1007)))
        cs.append(Case(f"utf8.invalid.{name}.bytewise", f"invalid {p!r}, one byte per fragment: 1007",
                       fail_script(lambda c, p=p: c.msg(TEXT, p, fragments=len(p)), 1007)))
    def segments(c):
        # Only up to the first invalid byte (A0 after ED): the peer may close right after it.
        c.send(*split_frames(c.msg(TEXT, b"ab\xed\xa0\x80cd", fragments=7))[:4], pause=0.02)
        c.fail_with(1007)
    cs.append(Case("utf8.invalid.segments", "invalid sequence, one byte per fragment, each its own segment: "
                   "1007 at the first invalid byte", segments))
    cs.append(Case("utf8.binary_not_checked", "binary with invalid UTF-8 is echoed",
                   echo_script(BINARY, b"\xed\xa0\x80\xff")))

    # Fail fast: the connection fails at the first invalid byte, before the message ends.
    def ff_fragment(c):
        c.send(c.f(TEXT, "κόσμε".encode(), fin=False))
        c.expect_silence(0.3)
        c.send(c.f(CONT, b"\xf4\x90\x80\x80", fin=False))
        c.fail_with(1007)
    cs.append(Case("utf8.failfast.fragment", "valid fragment, then a fragment with U+110000 (FIN=0): 1007 "
                   "before the message ends", ff_fragment))

    def ff_frame(lead, rest):
        def run(c):
            p = "κόσμε".encode() + lead + rest + b"the rest never comes"
            fr = c.f(TEXT, p)
            cut = len(fr) - len(p) + len("κόσμε".encode()) + len(lead)
            c.send(fr[:cut])
            c.expect_silence(0.3)  # all valid so far: nothing may happen yet
            c.send(fr[cut:cut + len(rest)])
            c.fail_with(1007)
        return run
    cs.append(Case("utf8.failfast.frame_f4_90", "one frame: valid prefix + F4, then 90 in a separate write: "
                   "1007 before the frame is complete", ff_frame(b"\xf4", b"\x90")))
    cs.append(Case("utf8.failfast.frame_ed_a0", "one frame: valid prefix + ED, then A0 (surrogate): 1007 "
                   "before the frame is complete", ff_frame(b"\xed", b"\xa0")))
    cs.append(Case("utf8.failfast.frame_c0", "one frame: valid prefix, then C0: 1007 before the frame is complete",
                   ff_frame(b"", b"\xc0")))

    def ff_truncated_ok(c):
        # A sequence cut by a fragment boundary is not an error until the message ends.
        c.send(c.f(TEXT, b"ab\xf0\x90", fin=False))
        c.expect_silence(0.3)
        c.send(c.f(CONT, b"\x80\x80cd"))
        c.expect_message("text", b"ab\xf0\x90\x80\x80cd")
        c.close_clean()
    cs.append(Case("utf8.split_sequence_ok", "a character split by a fragment boundary is no error", ff_truncated_ok))
    return cs


# ---------------------------------------------------------------------- close

def close():
    cs = []

    def no_code(c):
        c.send(c.f(CLOSE, b""))
        c.expect_close(None)
        if c.client:
            c.expect_eof()
        else:
            c.shutdown()
        c.outcome = "closed 1005"
    cs.append(Case("close.empty", "close without payload is answered with close without code", no_code))
    for code in VALID_CLOSE_CODES:
        cs.append(Case(f"close.code.{code}", f"close {code} is echoed",
                       script(lambda c, code=code: c.close_clean(code))))
    for code in INVALID_CLOSE_CODES:
        cs.append(Case(f"close.code.{code}", f"close {code} may not be sent: 1002",
                       fail_script(lambda c, code=code: c.f(CLOSE, close_payload(code)), 1002)))
    cs.append(Case("close.reason.utf8", "close 1000 with a UTF-8 reason is echoed",
                   script(lambda c: c.close_clean(1000, "Hello κόσμε 😀".encode()))))
    cs.append(Case("close.reason.123", "close 1000 with a 123-byte reason (125-byte payload) is echoed",
                   script(lambda c: c.close_clean(1000, text(123)))))
    cs.append(Case("close.reason.invalid_utf8", "close 1000 with an invalid UTF-8 reason: 1007",
                   fail_script(lambda c: c.f(CLOSE, close_payload(1000, b"bad \xed\xa0\x80")), 1007)))
    cs.append(Case("close.reason.truncated_utf8", "close reason ending inside a character: 1007",
                   fail_script(lambda c: c.f(CLOSE, close_payload(1000, b"ok \xce")), 1007)))
    cs.append(Case("close.one_byte", "close with a 1-byte payload: 1002",
                   fail_script(lambda c: c.f(CLOSE, b"\x03"), 1002)))

    def after(extra):
        def run(c):
            c.send(c.f(CLOSE, close_payload(1000)) + extra(c))
            c.expect_close(1000)
            if c.client:
                c.expect_eof()
            else:
                c.expect_silence(0.3)  # the client waits for our TCP close, sending nothing
                c.shutdown()
            c.outcome = "closed 1000"
        return run
    cs.append(Case("close.data_after", "text after close is ignored", after(lambda c: c.f(TEXT, b"ignored"))))
    cs.append(Case("close.ping_after", "ping after close gets no pong", after(lambda c: c.f(PING, b"x"))))
    cs.append(Case("close.garbage_after", "bad frames after close are ignored",
                   after(lambda c: c.f(7, b"") + c.f(TEXT, b"\xff"))))
    cs.append(Case("close.during_fragmented", "close during a fragmented message: close echoed, no message",
                   after_fragment()))

    def tcp_drop(c):
        c.send(c.f(TEXT, b"bye"))
        c.expect_message("text", b"bye")
        c.shutdown()
        c.outcome = "closed 1006"
    cs.append(Case("close.tcp_drop", "TCP closed without a close frame after an echo", tcp_drop))

    def mid_frame_drop(c):
        fr = c.f(BINARY, binary(1000))
        c.send(fr[:500])
        time.sleep(0.1)
        c.shutdown()
        c.outcome = "closed 1006"
    cs.append(Case("close.drop_mid_frame", "TCP closed in the middle of a frame", mid_frame_drop))

    # echo_client --autobahn must never hang: these run it with --timeout 1.
    quick = ("--timeout", "1")

    def silent(c):
        c.expect_eof(6)  # the client's idle timeout closes the connection
        c.outcome = "failed"
    cs.append(Case("close.client.silent_server", "server sends nothing: the client gives up (idle timeout)",
                   silent, roles="client", flags=quick, timeout=8))

    def silent_mid_message(c):
        c.send(c.f(TEXT, b"part", fin=False))
        c.expect_eof(6)
        c.outcome = "failed"
    cs.append(Case("close.client.silent_mid_message", "server stops inside a fragmented message: the client "
                   "gives up", silent_mid_message, roles="client", flags=quick, timeout=8))
    cs.append(Case("close.client.no_upgrade_answer", "server never answers the upgrade: the client gives up",
                   rejected, roles="client", flags=quick, response=NO_ANSWER, rejects=True, timeout=8))

    def never_closes_tcp(c):
        c.send(c.f(CLOSE, close_payload(1000)))
        c.expect_close(1000)
        c.expect_eof(10)  # the client's close timeout (5 s) ends the wait for our TCP close
        c.outcome = "closed 1000"
    cs.append(Case("close.client.server_keeps_tcp_open", "server echoes close but keeps TCP open: the client "
                   "closes TCP itself", never_closes_tcp, roles="client", flags=quick, timeout=12))
    return cs


NO_ANSWER = "<no answer>"  # client role: the server never answers the upgrade request


def after_fragment():
    def run(c):
        c.send(c.f(TEXT, b"partial", fin=False) + c.f(CLOSE, close_payload(1000)))
        c.expect_close(1000)
        if c.client:
            c.expect_eof()
        else:
            c.shutdown()
        c.outcome = "closed 1000"
    return run


# ---------------------------------------------------------------------- limits

def limits():
    cs = []
    for op in (TEXT, BINARY):
        n = 16 << 20
        p = text(n) if op == TEXT else binary(n)
        cs.append(Case(f"limits.{kind_of(op)}.16MiB", f"{kind_of(op)} message of 16 MiB is echoed",
                       echo_script(op, p), timeout=BIG))
    cs.append(Case("limits.binary.16MiB_4_fragments", "binary 16 MiB in 4 fragments",
                   echo_script(BINARY, binary(16 << 20, 5), fragments=4), timeout=BIG))

    def one_byte_frames(c):
        n = 1 << 20
        p = binary(n, 7)
        key = b"\x01\x02\x03\x04"
        frames = []
        for i in range(n):
            b0 = (0x80 if i == n - 1 else 0) | (BINARY if i == 0 else CONT)
            if c.client:
                frames.append(bytes((b0, 0x81)) + key + bytes((p[i] ^ key[0],)))
            else:
                frames.append(bytes((b0, 0x01, p[i])))
        c.send(b"".join(frames))
        c.expect_message("binary", p)
        c.close_clean()
    cs.append(Case("limits.1MiB_of_1byte_frames", "1 MiB message in 1,048,576 one-byte frames",
                   one_byte_frames, timeout=BIG))
    cs.append(Case("limits.ping_with_8MiB", "8 MiB message then a ping in one write: pong and intact echo",
                   script(lambda c: c.send(c.f(BINARY, binary(8 << 20, 11)) + c.f(PING, b"during")),
                          lambda c: c.expect_unordered([("pong", b"during"), ("binary", binary(8 << 20, 11))],
                                                       timeout=BIG),
                          lambda c: c.close_clean()), timeout=BIG))
    # The examples allow 64 MiB; a frame that declares more fails before its payload arrives.
    cs.append(Case("limits.declared_64MiB_plus_1", "frame declaring 64 MiB + 1: 1009 before the payload",
                   fail_script(lambda c: c.f(BINARY, b"x" * 100, length=(64 << 20) + 1), 1009)))
    cs.append(Case("limits.declared_2_62", "frame declaring 2^62 bytes: 1009 at once",
                   fail_script(lambda c: c.f(BINARY, b"", length=1 << 62), 1009)))
    return cs


# ---------------------------------------------------------------------- permessage-deflate

def json_message(i):
    return json.dumps({"id": i, "type": "update", "user": f"user{i % 17}", "values": [i, i * 2, i % 7],
                       "text": "the quick brown fox jumps over the lazy dog"}).encode()


def deflate_echo(payloads, fragments=1, pause=0.0, compress=True):
    """Sends each (op, payload) compressed; the echoes must match. Messages the echo peer
    compresses are decompressed with the negotiated window and context rules."""
    def run(c):
        for op, p in payloads:
            data = c.msg(op, p, compress=compress, fragments=fragments)
            if pause:
                c.send(*split_frames(data), pause=pause)
            else:
                c.send(data)
            c.expect_message(kind_of(op), p)
        c.close_clean()
    return run


MIX = [(TEXT, b""), (BINARY, b""), (TEXT, b"a"), (TEXT, text(125)), (BINARY, binary(126)), (TEXT, text(1000)),
       (BINARY, binary(65535)), (TEXT, text(65536)), (BINARY, binary(1 << 20)), (TEXT, text(1 << 20))]


def thousand(c):
    # Context takeover: 1000 similar messages, each compressed against the previous ones.
    ps = [json_message(i) for i in range(1000)]
    for i in range(0, 1000, 100):
        c.send(b"".join(c.msg(TEXT, p, compress=True) for p in ps[i:i + 100]))
        for p in ps[i:i + 100]:
            c.expect_message("text", p)
    c.close_clean()


def compressed_echo(c):
    # Whatever the echo peer decides to compress must inflate under the negotiated rules
    # (the Conn checks window and context on every compressed message it receives).
    p = text(5000)
    c.send(c.msg(TEXT, p, compress=True))
    ev = c.expect_message("text", p)
    if not ev[2]:
        raise Violation("a 5000-byte compressible echo came back uncompressed")
    c.close_clean()


def deflate_fail(build, code):
    return fail_script(build, code)


def zlib_raw(data, bits=15):
    co = zlib.compressobj(6, zlib.DEFLATED, -bits)
    return (co.compress(data) + co.flush(zlib.Z_SYNC_FLUSH))[:-4]


def deflate():
    cs = []
    # ---- server role: offers
    full = "permessage-deflate; client_max_window_bits"
    offers = [
        ("plain", "permessage-deflate", None),
        ("cmwb", full, None),
        ("snct", "permessage-deflate; server_no_context_takeover", lambda d: d.snct),
        ("cnct", "permessage-deflate; client_no_context_takeover", None),
        ("all", "permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                "server_max_window_bits=9; client_max_window_bits=9", lambda d: d.snct and d.sbits <= 9),
        ("case_insensitive", "PerMessage-Deflate; Client_Max_Window_Bits; SERVER_NO_CONTEXT_TAKEOVER",
         lambda d: d.snct),
        ("fallback", "permessage-deflate; x-unknown=1, permessage-deflate; server_max_window_bits=10",
         lambda d: d.sbits <= 10),
        ("other_extension_first", "x-webkit-deflate-frame, permessage-deflate", None),
    ]
    for b in range(8, 16):
        offers.append((f"smwb{b}", f"permessage-deflate; server_max_window_bits={b}", lambda d, b=b: d.sbits <= b))
        offers.append((f"cmwb{b}", f"permessage-deflate; client_max_window_bits={b}", None))
    for name, offer, check in offers:
        def negotiate(d, check=check, offer=offer):
            if d is None:
                raise Violation(f"valid offer {offer!r} declined")
            if check and not check(d):
                raise Violation(f"negotiated {d} does not honour {offer!r}")
        cs.append(Case(f"deflate.offer.{name}", f"offer {offer!r} accepted, sizes 0..1 MiB echo",
                       deflate_echo(MIX), roles="server", offer=offer, negotiate=negotiate, timeout=20))
        cs.append(Case(f"deflate.offer.{name}.compressed_echo", f"offer {offer!r}: echo compressed within "
                       "the negotiated window/context", compressed_echo, roles="server", offer=offer,
                       negotiate=negotiate))
    bad_offers = [
        "permessage-deflate; server_max_window_bits=7", "permessage-deflate; server_max_window_bits=16",
        "permessage-deflate; server_max_window_bits=08", "permessage-deflate; server_max_window_bits=abc",
        "permessage-deflate; server_max_window_bits", "permessage-deflate; client_max_window_bits=7",
        "permessage-deflate; client_max_window_bits=16", "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; client_no_context_takeover=true",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "permessage-deflate; client_max_window_bits=10; client_max_window_bits=10",
        "permessage-deflate; x-unknown", "x-webkit-deflate-frame",
    ]
    for i, offer in enumerate(bad_offers):
        def declined(d, offer=offer):
            if d is not None:
                raise Violation(f"invalid offer {offer!r} accepted as {d}")
        cs.append(Case(f"deflate.bad_offer.{i}", f"invalid offer {offer!r} declined; RSV1 then fails 1002",
                       script(lambda c: c.send(c.f(TEXT, b"plain")), lambda c: c.expect_message("text", b"plain"),
                              lambda c: c.send(c.f(TEXT, zlib_raw(b"compressed"), rsv=0b100)),
                              lambda c: c.fail_with(1002)),
                       roles="server", offer=offer, negotiate=declined))

    # ---- both roles: behaviour on a negotiated connection (default offer / plain answer)
    def both(id, desc, run, timeout=5.0, offer=full, response="permessage-deflate", flags=("--deflate",)):
        cs.append(Case(id, desc, run, offer=offer, response=response, flags=flags, timeout=timeout,
                       negotiate=lambda d: None))
    both("deflate.sizes", "compressed messages of 0 B to 1 MiB, text and binary", deflate_echo(MIX), timeout=20)
    both("deflate.uncompressed_on_deflate", "uncompressed messages on a deflate connection",
         deflate_echo(MIX[:8], compress=False), timeout=10)
    both("deflate.empty_00", "empty message as a single 00 byte (RFC 7692 §7.2.3.6)",
         script(lambda c: c.send(c.f(TEXT, b"\x00", rsv=0b100)), lambda c: c.expect_message("text", b""),
                lambda c: c.close_clean()))
    both("deflate.fragmented", "compressed 100 KB text in 7 fragments",
         deflate_echo([(TEXT, text(100000))], fragments=7), timeout=10)
    both("deflate.fragmented_segments", "compressed message in 5 fragments, each its own segment",
         deflate_echo([(BINARY, binary(20000))], fragments=5, pause=0.02))
    both("deflate.bytewise_fragments", "compressed message, one byte per fragment",
         deflate_echo([(TEXT, text(3000))], fragments=100000))
    both("deflate.context_takeover_1000", "1000 messages compressed with context takeover", thousand, timeout=30)
    both("deflate.compressed_echo", "compressed echoes inflate within window and context rules", compressed_echo)
    both("deflate.rsv1_continuation", "RSV1 on a continuation frame: 1002",
         deflate_fail(lambda c: c.f(TEXT, zlib_raw(b"hello"), fin=False, rsv=0b100) +
                      c.f(CONT, b"", rsv=0b100), 1002))
    both("deflate.rsv1_second_only", "RSV1 only on the second fragment: 1002",
         deflate_fail(lambda c: c.f(TEXT, b"hel", fin=False) + c.f(CONT, b"lo", rsv=0b100), 1002))
    both("deflate.rsv1_ping", "RSV1 on a ping: 1002", deflate_fail(lambda c: c.f(PING, b"x", rsv=0b100), 1002))
    both("deflate.rsv1_close", "RSV1 on a close: 1002",
         deflate_fail(lambda c: c.f(CLOSE, close_payload(1000), rsv=0b100), 1002))
    both("deflate.rsv2", "RSV2 with permessage-deflate: 1002", deflate_fail(lambda c: c.f(TEXT, b"x", rsv=0b010), 1002))
    # RFC 7692 §8 only says "fail": the frames break the extension's encoding, so 1002.
    both("deflate.bad_data", "invalid deflate data: 1002",
         deflate_fail(lambda c: c.f(BINARY, b"\xff\xff\xff\xff\xff", rsv=0b100), 1002))
    both("deflate.bad_data_fragmented", "invalid deflate data in a first fragment (FIN=0): 1002 at once",
         deflate_fail(lambda c: c.f(BINARY, b"\xff\xff\xff\xff\xff", fin=False, rsv=0b100), 1002))
    both("deflate.invalid_utf8", "compressed text with invalid UTF-8: 1007",
         deflate_fail(lambda c: c.f(TEXT, zlib_raw(b"ok \xed\xa0\x80 no"), rsv=0b100), 1007))

    def ff_compressed(c):
        first = zlib.compressobj(6, zlib.DEFLATED, -15)
        part = first.compress("κόσμε".encode() + b"\xf4\x90\x80\x80 more") + first.flush(zlib.Z_SYNC_FLUSH)
        c.send(c.f(TEXT, part, fin=False, rsv=0b100))
        c.fail_with(1007)
    both("deflate.invalid_utf8_failfast", "compressed first fragment with invalid UTF-8 (FIN=0): 1007 at once",
         ff_compressed)

    def bomb(c):
        data = zlib_raw(b"\x00" * ((64 << 20) + 4096))
        c.send(c.f(BINARY, data, rsv=0b100))
        c.fail_with(1009, timeout=BIG)
    both("deflate.bomb", "64 MiB + 4 KiB of zeros compressed (a bomb): 1009",
         bomb, timeout=BIG)

    # ---- client role: what our answers may and may not do
    for b in range(8, 16):
        cs.append(Case(f"deflate.client.cmwb{b}", f"answer client_max_window_bits={b}: the client compresses "
                       "within it", script(compressed_echo_big), roles="client", flags=("--deflate",),
                       response=f"permessage-deflate; client_max_window_bits={b}", timeout=20))
    cs.append(Case("deflate.client.cnct", "answer client_no_context_takeover: the client resets its context",
                   thousand_then_check, roles="client", flags=("--deflate",),
                   response="permessage-deflate; client_no_context_takeover", timeout=30))
    cs.append(Case("deflate.client.snct", "answer server_no_context_takeover: we reset, the client inflates",
                   thousand, roles="client", flags=("--deflate",),
                   response="permessage-deflate; server_no_context_takeover", timeout=30))
    cs.append(Case("deflate.client.declined", "no extension in the answer: plain echo, then RSV1 fails 1002",
                   script(lambda c: c.send(c.f(TEXT, b"plain")), lambda c: c.expect_message("text", b"plain"),
                          lambda c: c.send(c.f(TEXT, zlib_raw(b"x"), rsv=0b100)), lambda c: c.fail_with(1002)),
                   roles="client", flags=("--deflate",), response=None))
    # The server MUST NOT answer server_max_window_bits unasked (§7.1.2.1), but a client fails
    # only for the four reasons of RFC 7692 §7 (unknown/invalid/duplicate parameter, or a
    # configuration it cannot support); a smaller server window is none of them.
    cs.append(Case("deflate.client.unasked_smwb", "answer server_max_window_bits=10 unasked: accepted, "
                   "messages inflate with window 10", deflate_echo(MIX[:8]), roles="client",
                   flags=("--deflate",), response="permessage-deflate; server_max_window_bits=10", timeout=10))
    bad_answers = [
        "permessage-deflate; client_max_window_bits",     # a response needs a value (§7.1.2.2)
        "permessage-deflate; client_max_window_bits=16", "permessage-deflate; client_max_window_bits=7",
        "permessage-deflate; client_max_window_bits=08",
        "permessage-deflate; x-unknown=1", "permessage-deflate; server_no_context_takeover=1",
        "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
        "x-not-offered", "permessage-deflate, permessage-deflate",
    ]
    for i, a in enumerate(bad_answers):
        cs.append(Case(f"deflate.client.bad_answer.{i}", f"answer {a!r}: the client fails the handshake",
                       rejected, roles="client", flags=("--deflate",), response=a, rejects=True))
    # The client's own promises, kept whatever the answer says (judged by `params`).
    cs.append(Case("deflate.client.promise_cmwb8", "offer client_max_window_bits=8, plain answer: the client "
                   "compresses within 8 bits", script(compressed_echo_big), roles="client",
                   flags=("--deflate", "--deflate-client-max-window-bits", "8"), response="permessage-deflate",
                   params=Deflate(cbits=8), timeout=10))
    cs.append(Case("deflate.client.answer_cmwb8", "offer client_max_window_bits=8, answer =8: window 8",
                   script(compressed_echo_big), roles="client",
                   flags=("--deflate", "--deflate-client-max-window-bits", "8"),
                   response="permessage-deflate; client_max_window_bits=8", timeout=10))
    cs.append(Case("deflate.client.promise_cnct", "offer client_no_context_takeover, plain answer: the client "
                   "still resets its context", thousand, roles="client",
                   flags=("--deflate", "--deflate-client-no-context-takeover"), response="permessage-deflate",
                   params=Deflate(cnct=True), timeout=30))
    cs.append(Case("deflate.client.smwb8", "request server_max_window_bits=8, granted: the client inflates "
                   "our window-8 messages", deflate_echo(MIX[:8]), roles="client",
                   flags=("--deflate", "--deflate-server-max-window-bits", "8"),
                   response="permessage-deflate; server_max_window_bits=8", timeout=10))
    cs.append(Case("deflate.client.smwb8_missing", "request server_max_window_bits=8, answer without it: refused",
                   rejected, roles="client", flags=("--deflate", "--deflate-server-max-window-bits", "8"),
                   response="permessage-deflate", rejects=True))
    strict = ("--deflate", "--deflate-server-no-context-takeover", "--deflate-server-max-window-bits", "10",
              "--deflate-client-no-context-takeover", "--deflate-client-max-window-bits", "9")
    for resp, ok in [
        ("permessage-deflate; server_no_context_takeover; server_max_window_bits=10", True),
        ("permessage-deflate; server_no_context_takeover; server_max_window_bits=8; client_max_window_bits=9; "
         "client_no_context_takeover", True),
        ("permessage-deflate; server_max_window_bits=10", False),    # requested snct missing
        ("permessage-deflate; server_no_context_takeover", False),   # requested smwb missing
        ("permessage-deflate; server_no_context_takeover; server_max_window_bits=11", False),  # above the offer
        # Above the client's offer of 9: still a configuration the client supports (it keeps
        # its promise of 9, judged below), so not one of §7's reasons to fail.
        ("permessage-deflate; server_no_context_takeover; server_max_window_bits=10; client_max_window_bits=10",
         True),
    ]:
        cs.append(Case(f"deflate.client.strict_offer.{len(cs)}",
                       f"offer with all four parameters, answer {resp!r}: {'accepted' if ok else 'refused'}",
                       deflate_echo(MIX[:8] + [(TEXT, text(300, 3) * 400)]) if ok else rejected, roles="client",
                       flags=strict, response=resp, rejects=not ok, timeout=10,
                       # The client promised 9 bits and no context takeover in its offer.
                       params=Deflate(snct=True, cnct=True, sbits=8 if "=8" in resp else 10, cbits=9)))
    return cs


def compressed_echo_big(c):
    # A long, repetitive message: a compressor with a larger window than agreed would reach
    # further back than the window, which the strict decompressor rejects.
    p = (text(300, 3) + binary(0)) * 400
    c.send(c.msg(TEXT, p, compress=True))
    ev = c.expect_message("text", p)
    if not ev[2]:
        raise Violation("a 120 KB compressible echo came back uncompressed")
    c.close_clean()


def thousand_then_check(c):
    thousand(c)


def rejected(c):
    # Before the connection is established there is nothing to close: just TCP (RFC 6455 §4.1).
    c.expect_eof(5)
    c.outcome = "failed"


CATEGORIES = {
    "framing": framing,
    "control": control,
    "reserved": reserved,
    "fragmentation": fragmentation,
    "utf8": utf8,
    "close": close,
    "limits": limits,
    "deflate": deflate,
}
