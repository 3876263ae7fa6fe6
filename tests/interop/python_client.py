#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# Python websockets client -> our echo_server: every size, text and binary, whole and
# fragmented, with and without permessage-deflate; echoes must be byte-exact.
#
#   python_client.py ECHO_SERVER CONFIG     (CONFIG: one of CONFIGS below)
import asyncio
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import (ECHO_SIZES, Failure, Program, binary_payload, check, log,  # noqa: E402
                            main_wrapper, skip, text_payload)

try:
    import websockets
    import websockets.exceptions
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
except ImportError:
    skip("python3-websockets is not installed (apt-get install python3-websockets)")

# name -> (server flags, client factory arguments or None, parameters the response must carry)
CONFIGS = {
    "plain": ([], None, None),
    "deflate_default": (["--deflate"], {}, set()),
    "client_no_context_takeover": (["--deflate"], {"client_no_context_takeover": True}, set()),
    "server_no_context_takeover": (["--deflate"], {"server_no_context_takeover": True},
                                   {"server_no_context_takeover"}),
    "window_bits": (["--deflate"], {"server_max_window_bits": 10, "client_max_window_bits": 9},
                    {"server_max_window_bits=10"}),
    # Python's zlib cannot compress raw deflate with an 8-bit window: only the server gets 8.
    "window_bits_8": (["--deflate"], {"server_max_window_bits": 8, "client_max_window_bits": 9,
                                      "server_no_context_takeover": True},
                      {"server_max_window_bits=8", "server_no_context_takeover"}),
}


class CountingFactory(ClientPerMessageDeflateFactory):
    """Counts the compressed messages the server sends, and their bytes on the wire."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.compressed_messages = 0
        self.compressed_sizes = []
        self.wire_bytes = 0

    def process_response_params(self, params, accepted):
        ext = super().process_response_params(params, accepted)
        decode = ext.decode

        def counting_decode(frame, *, max_size=None):
            if frame.opcode.name in ("TEXT", "BINARY") and frame.rsv1:
                self.compressed_messages += 1
                self.wire_bytes += len(frame.data)
            out = decode(frame, max_size=max_size)
            if frame.opcode.name in ("TEXT", "BINARY") and frame.rsv1 and frame.fin:
                self.compressed_sizes.append(len(out.data))
            return out

        ext.decode = counting_decode
        return ext


def response_params(header):
    """The parameter names (and name=value) of a permessage-deflate response element."""
    parts = [p.strip() for p in header.split(";")]
    check(parts[0] == "permessage-deflate", f"negotiated {header!r}, not permessage-deflate")
    return set(parts[1:])


async def exchange(ws, payload, what):
    await ws.send(payload)
    got = await ws.recv()
    check(type(got) is type(payload), f"{what}: came back as {type(got).__name__}")
    check(got == payload, f"{what}: echo differs ({len(got)} bytes back for {len(payload)})")


async def run(server_bin, config):
    flags, factory_args, must_have = CONFIGS[config]
    with Program([server_bin, "--port", "0"] + flags) as server:
        url = f"ws://127.0.0.1:{server.port}/"
        factory = CountingFactory(**factory_args) if factory_args is not None else None
        kw = {"extensions": [factory], "compression": None} if factory else {"compression": None}
        async with websockets.connect(url, max_size=64 << 20, open_timeout=10, close_timeout=10,
                                      ping_interval=None, **kw) as ws:
            ext = ws.response_headers.get("Sec-WebSocket-Extensions")
            log(f"offer: {ws.request_headers.get('Sec-WebSocket-Extensions')!r}; "
                f"server answered: {ext!r}")
            if factory is None:
                check(ext is None, f"no extension offered, but the server answered {ext!r}")
            else:
                check(ext is not None, "permessage-deflate was offered and the server declined it")
                params = response_params(ext)
                check(must_have <= params, f"response {ext!r} lacks {sorted(must_have - params)}")
                log(f"negotiated: {ws.extensions}")
            total = 0
            for i, n in enumerate(ECHO_SIZES):
                await exchange(ws, text_payload(n, i), f"text message of {n} bytes")
                await exchange(ws, binary_payload(n, 100 + i), f"binary message of {n} bytes")
                total += 2 * n
            log(f"echoed text and binary messages of sizes {ECHO_SIZES}: {total} bytes, byte-exact")
            # A fragmented message (compressed frame by frame when deflate is on).
            for kind, payload in (("text", text_payload(1 << 20, 7)), ("binary", binary_payload(1 << 20, 8))):
                step = 65536 + 3
                await ws.send(payload[i:i + step] for i in range(0, len(payload), step))
                got = await ws.recv()
                check(got == payload, f"fragmented {kind} message of 1 MiB: echo differs")
            log("echoed fragmented text and binary messages of 1 MiB (17 frames each), byte-exact")
            # Many small messages queued before reading: the server batches its writes.
            small = [f"burst {i} {'é' * (i % 50)}" for i in range(500)]
            for m in small:
                await ws.send(m)
            for m in small:
                got = await ws.recv()
                check(got == m, f"burst message {m!r} came back as {got!r}")
            log("echoed a burst of 500 small text messages in order")
            pong = await ws.ping(b"interop")
            await asyncio.wait_for(pong, 5)
            log("ping answered with a pong")
            if factory is not None:
                log(f"received {factory.compressed_messages} compressed messages, "
                    f"{factory.wire_bytes} bytes on the wire")
                big = [s for s in factory.compressed_sizes if s >= 65535]
                # Every whole message of 64 KiB or more is compressible: the server must have
                # compressed all 8 of them, and the two fragmented ones.
                check(len(big) >= 10, f"only {len(big)} of the 10 large echoes arrived compressed")
        check(ws.close_code == 1000, f"close code {ws.close_code}, expected 1000")
        log("closed cleanly with 1000")
        await asyncio.sleep(0.05)
        check(server.alive(), "echo_server exited after the connection closed")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CONFIGS:
        sys.exit(f"usage: {sys.argv[0]} ECHO_SERVER {{{','.join(CONFIGS)}}}")
    log(f"peer: python websockets {websockets.__version__}, config {sys.argv[2]}")

    async def bounded():
        try:
            await asyncio.wait_for(run(sys.argv[1], sys.argv[2]), 60)
        except asyncio.TimeoutError:
            raise Failure("the exchange did not finish within 60 s")
        except websockets.exceptions.WebSocketException as e:
            raise Failure(f"websockets reported {type(e).__name__}: {e}")
        except OSError as e:
            raise Failure(f"connection failed: {e}")

    main_wrapper(lambda: asyncio.run(bounded()))


if __name__ == "__main__":
    main()
