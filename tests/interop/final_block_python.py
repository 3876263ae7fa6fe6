#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# Python websockets client -> final_block_echo: the server's compressed messages end in a
# BFINAL=1 block (RFC 7692 §7.2.3.4, libdeflate's output as is). websockets must inflate
# every one of many messages in a row; the frames are checked to really carry BFINAL.
#
#   final_block_python.py FINAL_BLOCK_ECHO CONFIG   (CONFIG: one of CONFIGS below)
import asyncio
import os
import random
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import Failure, Program, check, log, main_wrapper, skip  # noqa: E402

try:
    import websockets
    import websockets.exceptions
    from websockets.extensions.permessage_deflate import ClientPerMessageDeflateFactory
except ImportError:
    skip("python3-websockets is not installed (apt-get install python3-websockets)")

# name -> (server flags, client factory arguments, BFINAL expected on the wire)
CONFIGS = {
    "final_block": ([], {}, True),
    "final_block_both_no_context": ([], {"client_no_context_takeover": True}, True),
    "flush_form": (["--zlib"], {}, False),
}

SIZES = [1, 20, 100, 500, 1024, 1024, 3000, 8000, 16384, 32768, 40000, 100000]


def json_message(rng, size):
    parts = []
    n = 0
    while n < size:
        p = f'{{"id":{rng.randrange(10**6)},"name":"user{rng.randrange(1000)}","ok":{"true" if rng.random() < .5 else "false"}}},'
        parts.append(p)
        n += len(p)
    return "".join(parts)[:size]


class FrameWatch(ClientPerMessageDeflateFactory):
    """Records whether each compressed message's first DEFLATE block has BFINAL set."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.first_bits = []

    def process_response_params(self, params, accepted):
        ext = super().process_response_params(params, accepted)
        decode = ext.decode

        def watching_decode(frame, *, max_size=None):
            if frame.opcode.name in ("TEXT", "BINARY") and frame.rsv1 and frame.data:
                self.first_bits.append((len(frame.data), frame.data[0] & 1))
            return decode(frame, max_size=max_size)

        ext.decode = watching_decode
        return ext


async def run(server_bin, config):
    flags, factory_args, want_final = CONFIGS[config]
    rng = random.Random(42)
    with Program([server_bin, "--port", "0"] + flags) as server:
        url = f"ws://127.0.0.1:{server.port}/"
        factory = FrameWatch(**factory_args)
        async with websockets.connect(url, max_size=64 << 20, open_timeout=10, close_timeout=10,
                                      ping_interval=None, extensions=[factory], compression=None) as ws:
            ext = ws.response_headers.get("Sec-WebSocket-Extensions")
            log(f"offer: {ws.request_headers.get('Sec-WebSocket-Extensions')!r}; server answered: {ext!r}")
            check(ext is not None and "server_no_context_takeover" in ext,
                  f"the server must announce server_no_context_takeover, answered {ext!r}")
            count = 0
            for round_ in range(60):
                for size in SIZES:
                    m = json_message(rng, size)
                    payload = m if round_ % 2 == 0 else m.encode()
                    await ws.send(payload)
                    got = await ws.recv()
                    check(got == payload, f"message {count} of {size} bytes: echo differs")
                    count += 1
            # A burst in flight, then the answers in order.
            burst = [json_message(rng, 1 + rng.randrange(2000)) for _ in range(300)]
            for m in burst:
                await ws.send(m)
            for m in burst:
                check(await ws.recv() == m, "burst echo differs")
            count += len(burst)
            log(f"{count} messages echoed byte-exact")
            # libdeflate writes one block for these sizes: its first bit is the BFINAL bit.
            small = [bit for n, bit in factory.first_bits if n < 4000]
            finals = sum(small)
            log(f"{len(factory.first_bits)} compressed messages received; {finals} of the "
                f"{len(small)} small ones start with a BFINAL block")
            if want_final:
                check(finals == len(small) and finals > 500, "the server did not send BFINAL blocks")
            else:
                check(finals == 0, "the flush form must not carry BFINAL")
        check(ws.close_code == 1000, f"close code {ws.close_code}, expected 1000")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CONFIGS:
        sys.exit(f"usage: {sys.argv[0]} FINAL_BLOCK_ECHO {{{','.join(CONFIGS)}}}")
    log(f"peer: python websockets {websockets.__version__}, config {sys.argv[2]}")

    async def bounded():
        try:
            await asyncio.wait_for(run(sys.argv[1], sys.argv[2]), 80)
        except asyncio.TimeoutError:
            raise Failure("the exchange did not finish within 80 s")
        except websockets.exceptions.WebSocketException as e:
            raise Failure(f"websockets reported {type(e).__name__}: {e}")

    main_wrapper(lambda: asyncio.run(bounded()))


if __name__ == "__main__":
    main()
