#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Writes the seed inputs of fuzz_connection into corpus/connection/.

Each seed is the target's two option bytes (see `plan` in fuzz_connection.cpp) followed by
what the peer sends: masked frames for a server, unmasked ones for a client. Run it again
after changing the input layout; the names are stable so the seeds are replaced, not
duplicated.
"""
import os
import struct
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "connection")
KEY = b"\x37\xfa\x21\x3d"

CLIENT = 0x01
DEFLATE = 0x02
SERVER_NCT = 0x04
CLIENT_NCT = 0x08
SMALL_WINDOW = 0x10
LIMIT_64K = 0x20
LIMIT_1000 = 0x40
SMALL_QUEUE = 0x80

ECHO, PING, CLOSE2, FRAGMENTS = 0, 1, 2, 3


def frame(opcode, payload, fin=True, rsv1=False, masked=True):
    b0 = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    n = len(payload)
    m = 0x80 if masked else 0
    if n < 126:
        head = struct.pack("!BB", b0, m | n)
    elif n < 65536:
        head = struct.pack("!BBH", b0, m | 126, n)
    else:
        head = struct.pack("!BBQ", b0, m | 127, n)
    if not masked:
        return head + payload
    return head + KEY + bytes(c ^ KEY[i % 4] for i, c in enumerate(payload))


def deflate(data, wbits=15):
    z = zlib.compressobj(6, zlib.DEFLATED, -wbits)
    out = z.compress(data) + z.flush(zlib.Z_SYNC_FLUSH)
    assert out.endswith(b"\x00\x00\xff\xff")
    return out[:-4]


def close(code=1000, reason=b""):
    return struct.pack("!H", code) + reason


def seed(name, a, b, wire):
    with open(os.path.join(OUT, name), "wb") as f:
        f.write(bytes([a, b]) + wire)


def main():
    os.makedirs(OUT, exist_ok=True)
    text = b'{"id":1,"ok":true,"name":"corows"}' * 4
    seed("echo_text", 0, ECHO << 3, frame(1, b"Hello") + frame(2, bytes(range(256))) + frame(8, close()))
    seed("echo_client", CLIENT, ECHO << 3,
         frame(1, b"Hello", masked=False) + frame(9, b"p", masked=False) + frame(8, close(), masked=False))
    seed("fragments_and_pings", 0, PING << 3 | 2,
         frame(1, b"Hel", fin=False) + frame(9, b"1") + frame(0, b"lo", fin=False) + frame(9, b"2") +
         frame(0, b"!") + frame(8, close(1001, b"bye")))
    seed("close_after_two", 0, CLOSE2 << 3 | 5 << 5,
         frame(1, b"a") + frame(1, b"b") + frame(1, b"c") + frame(8, close()))
    seed("fragmented_echo", 0, FRAGMENTS << 3 | 1, frame(1, text) + frame(2, b"x" * 300))
    seed("deflate_rfc7692", DEFLATE, ECHO << 3,
         frame(1, bytes.fromhex("f248cdc9c90700"), rsv1=True) + frame(1, bytes.fromhex("f200110000"), rsv1=True))
    seed("deflate_no_context", DEFLATE | SERVER_NCT | CLIENT_NCT, PING << 3 | 3,
         frame(1, deflate(text), rsv1=True) + frame(1, deflate(text), rsv1=True) + frame(8, close()))
    seed("deflate_small_window", DEFLATE | SMALL_WINDOW | CLIENT_NCT, ECHO << 3,
         frame(2, deflate(text * 10, 9), rsv1=True))
    seed("deflate_fragments", DEFLATE, ECHO << 3 | 4,
         frame(1, deflate(text)[:5], fin=False, rsv1=True) + frame(9, b"x") + frame(0, deflate(text)[5:]))
    seed("empty_final_blocks", DEFLATE | CLIENT_NCT, ECHO << 3, frame(2, b"\x03\x00" * 2000, rsv1=True))
    seed("empty_continuations", 0, ECHO << 3 | 6, frame(1, b"", fin=False) + frame(0, b"", fin=False) * 500 + frame(0, b""))
    seed("ping_flood", SMALL_QUEUE, ECHO << 3 | 7 << 5, frame(9, b"p" * 125) * 200)
    seed("too_big", LIMIT_1000, ECHO << 3, frame(2, b"x" * 1001))
    seed("bomb", DEFLATE | LIMIT_64K, ECHO << 3, frame(2, deflate(b"\x00" * 200000), rsv1=True))
    seed("bad_utf8", 0, ECHO << 3, frame(1, b"\xc3\x28"))
    seed("bad_close", 0, ECHO << 3, frame(8, close(1005)))
    seed("unmasked_to_server", 0, ECHO << 3, frame(1, b"x", masked=False))
    seed("large_frame", 0, ECHO << 3 | 1, frame(2, b"y" * 70000))


if __name__ == "__main__":
    main()
