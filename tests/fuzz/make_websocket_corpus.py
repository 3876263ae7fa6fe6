#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Writes the seed inputs of fuzz_websocket into corpus/websocket/.

Each seed is the target's four option bytes (see `plan` in fuzz_websocket.cpp) followed by
what a client sends: an upgrade request, then masked frames. Run it again after changing the
input layout; the names are stable so the seeds are replaced, not duplicated.
"""
import os
import struct
import sys
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "websocket")
KEY = b"\x37\xfa\x21\x3d"


def request(extensions=None, extra=b""):
    lines = [b"GET /chat HTTP/1.1", b"Host: server.example.com", b"Upgrade: websocket",
             b"Connection: Upgrade", b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
             b"Sec-WebSocket-Version: 13"]
    if extensions:
        lines.append(b"Sec-WebSocket-Extensions: " + extensions)
    return b"\r\n".join(lines) + b"\r\n" + extra + b"\r\n"


def frame(opcode, payload, fin=True, rsv1=False, key=KEY):
    b0 = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    n = len(payload)
    if n < 126:
        head = struct.pack("!BB", b0, 0x80 | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, 0x80 | 126, n)
    else:
        head = struct.pack("!BBQ", b0, 0x80 | 127, n)
    masked = bytes(c ^ key[i % 4] for i, c in enumerate(payload))
    return head + key + masked


def close(code=1000, reason=b""):
    return frame(0x8, struct.pack("!H", code) + reason)


def deflate(data, wbits=15, co=None):
    co = co or zlib.compressobj(6, zlib.DEFLATED, -wbits)
    out = co.compress(data) + co.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def opts(a=0, b=0, c=0, d=0):
    return bytes([a, b, c, d])


def seeds():
    pmd = b"permessage-deflate; client_max_window_bits"
    json = b'{"id":1,"method":"subscribe","params":{"channel":"ticker","symbols":["BTC","ETH"]}}'
    yield "text_then_close", opts() + request() + frame(0x1, b"Hello") + close()
    yield "binary_then_close", opts() + request() + frame(0x2, bytes(range(200))) + close(1001, b"away")
    yield "fragmented_text", opts() + request() + frame(0x1, b"Hel", fin=False) + \
        frame(0x0, b"lo, ", fin=False) + frame(0x9, b"mid") + frame(0x0, b"world") + close()
    yield "ping_pong", opts() + request() + frame(0x9, b"are you there") + frame(0xA, b"x") + \
        frame(0x1, b"after ping") + close(1000, b"done")
    yield "close_no_code", opts() + request() + frame(0x1, b"a") + frame(0x8, b"")
    yield "eof_without_close", opts() + request() + frame(0x1, b"one") + frame(0x2, b"two")
    yield "bad_close_code", opts() + request() + close(1005)
    yield "invalid_utf8", opts() + request() + frame(0x1, b"ok \xc3\x28 bad") + close()
    yield "unmasked_frame", opts() + request() + b"\x81\x05Hello" + close()
    yield "too_big", opts(a=0x20) + request() + frame(0x2, bytes(1500)) + close()
    yield "small_reads_many_frames", opts(b=5, c=0x05) + request() + \
        b"".join(frame(0x1, b"msg %d" % i) for i in range(20)) + close()
    yield "no_upgrade_header", opts() + b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"
    yield "bad_version", opts() + request().replace(b"Version: 13", b"Version: 8")
    yield "garbage_request", opts() + b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03"
    yield "deflate_text", opts(a=1) + request(pmd) + \
        frame(0x1, deflate(json), rsv1=True) + frame(0x1, b"plain after compressed") + close()
    co = zlib.compressobj(6, zlib.DEFLATED, -15)
    yield "deflate_takeover", opts(a=1, c=0x80) + request(pmd) + \
        frame(0x1, deflate(json, co=co), rsv1=True) + frame(0x1, deflate(json, co=co), rsv1=True) + close()
    part = deflate(json * 4)
    yield "deflate_fragmented", opts(a=1, b=9, c=0x02) + request(pmd) + \
        frame(0x1, part[:10], fin=False, rsv1=True) + frame(0x9, b"p") + \
        frame(0x0, part[10:], fin=True) + close()
    yield "deflate_no_takeover_w9", opts(a=0x0F, c=0x04) + \
        request(b"permessage-deflate; server_no_context_takeover; client_no_context_takeover; "
                b"client_max_window_bits=9; server_max_window_bits=9") + \
        frame(0x2, deflate(bytes(300), wbits=9), rsv1=True) + close()
    yield "deflate_bomb_limited", opts(a=0x21) + request(pmd) + \
        frame(0x2, deflate(bytes(100000)), rsv1=True) + close()
    yield "rsv1_without_deflate", opts() + request() + frame(0x1, deflate(b"hi"), rsv1=True) + close()
    yield "server_close_and_ping", opts(a=0xC0, c=0x30) + request() + \
        b"".join(frame(0x1, b"m%d" % i) for i in range(3)) + close()
    yield "large_direct_write", opts(c=0x18) + request() + frame(0x2, bytes(range(256)) * 4) + close()
    yield "concurrent_writer", opts(b=4, d=0x0B) + request() + \
        b"".join(frame(0x1, b"echo %d" % i) for i in range(4)) + close()
    yield "concurrent_direct_writes_deflate", opts(a=1, b=7, c=0x01, d=0x3A) + request(pmd) + \
        frame(0x1, deflate(json), rsv1=True) + frame(0x9, b"ping") + frame(0x2, bytes(100)) + close()
    yield "concurrent_writer_eof", opts(b=3, c=0x20, d=0x13) + request() + \
        b"".join(frame(0x2, bytes([i]) * 50) for i in range(3))
    yield "write_fault", opts(c=0x41, d=30) + request() + frame(0x1, b"x" * 100) + close()


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    return 0


if __name__ == "__main__":
    sys.exit(main())
