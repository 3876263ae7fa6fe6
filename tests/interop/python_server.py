#!/usr/bin/python3
# SPDX-License-Identifier: BSL-1.0
# Our echo_client -> a Python websockets echo server: lines of every size come back exactly,
# with and without permessage-deflate, under each compression setting the server can impose.
#
#   python_server.py ECHO_CLIENT CONFIG     (CONFIG: one of CONFIGS below)
import asyncio
import os
import sys

sys.dont_write_bytecode = True  # keep the source tree clean
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from interop_common import (Failure, check, compare_lines, echo_lines, log,  # noqa: E402
                            main_wrapper, skip)

try:
    import websockets
    import websockets.exceptions
    from websockets.extensions.permessage_deflate import ServerPerMessageDeflateFactory
except ImportError:
    skip("python3-websockets is not installed (apt-get install python3-websockets)")

# name -> (client --deflate?, server factory arguments or None, parameters the answer carries)
CONFIGS = {
    "plain": (False, None, None),
    "declined": (True, None, None),
    "deflate_default": (True, {}, set()),
    "server_no_context_takeover": (True, {"server_no_context_takeover": True},
                                   {"server_no_context_takeover"}),
    "server_max_window_bits": (True, {"server_max_window_bits": 10}, {"server_max_window_bits=10"}),
    "client_no_context_takeover": (True, {"client_no_context_takeover": True},
                                   {"client_no_context_takeover"}),
    "client_max_window_bits": (True, {"client_max_window_bits": 9}, {"client_max_window_bits=9"}),
    # Our compressor must stay within an 8-bit window, which zlib itself rounds up to 9.
    "client_max_window_bits_8": (True, {"client_max_window_bits": 8, "client_no_context_takeover": True},
                                 {"client_max_window_bits=8", "client_no_context_takeover"}),
}


class CountingFactory(ServerPerMessageDeflateFactory):
    """Counts the compressed messages our client sends."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.compressed_messages = 0

    def process_request_params(self, params, accepted):
        response, ext = super().process_request_params(params, accepted)
        decode = ext.decode

        def counting_decode(frame, *, max_size=None):
            if frame.opcode.name in ("TEXT", "BINARY") and frame.rsv1:
                self.compressed_messages += 1
            return decode(frame, max_size=max_size)

        ext.decode = counting_decode
        return response, ext


async def run(client_bin, config):
    deflate, factory_args, must_have = CONFIGS[config]
    factory = CountingFactory(**factory_args) if factory_args is not None else None
    seen = []

    async def echo(ws, *_):
        seen.append((ws.request_headers.get("Sec-WebSocket-Extensions"),
                     ws.response_headers.get("Sec-WebSocket-Extensions")))
        async for m in ws:
            await ws.send(m)

    kw = {"extensions": [factory], "compression": None} if factory else {"compression": None}
    async with websockets.serve(echo, "127.0.0.1", 0, max_size=64 << 20, ping_interval=None,
                                **kw) as server:
        port = server.sockets[0].getsockname()[1]
        lines = echo_lines()
        argv = [client_bin, "--url", f"ws://127.0.0.1:{port}/"] + (["--deflate"] if deflate else [])
        if not os.access(client_bin, os.X_OK):
            raise Failure(f"{client_bin} is missing or not executable (build it first)")
        proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.PIPE,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        data = "".join(line + "\n" for line in lines).encode()
        try:
            out, err = await asyncio.wait_for(proc.communicate(data), 40)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise Failure("echo_client did not finish within 40 s")
        err = err.decode(errors="replace").strip()
        check(proc.returncode == 0, f"echo_client exited with {proc.returncode}; stderr: {err[-1500:]}")
        got = out.decode("utf-8", errors="replace").split("\n")
        if got and got[-1] == "":
            got.pop()
        check(len(seen) == 1, f"the server saw {len(seen)} connections, expected 1")
        offer, answer = seen[0]
        log(f"echo_client offered {offer!r}; server answered {answer!r}")
        if deflate:
            check(offer is not None and offer.startswith("permessage-deflate"),
                  f"echo_client --deflate offered {offer!r}")
        else:
            check(offer is None, f"echo_client without --deflate offered {offer!r}")
        if must_have is None:
            check(answer is None, f"expected no extension, server answered {answer!r}")
        else:
            check(answer is not None, "the server declined the offer")
            params = {p.strip() for p in answer.split(";")[1:]}
            check(must_have <= params, f"answer {answer!r} lacks {sorted(must_have - params)}")
        compare_lines(lines, got)
        total = sum(len(line.encode()) for line in lines)
        log(f"{len(lines)} lines ({total} bytes, sizes up to {max(len(x.encode()) for x in lines)})"
            " echoed exactly")
        if factory is not None:
            log(f"the server received {factory.compressed_messages} compressed messages from echo_client")
            # Every line of 1000 bytes or more is compressible prose: our client compresses it.
            big = sum(1 for line in lines if len(line.encode()) >= 1000)
            check(factory.compressed_messages >= big,
                  f"only {factory.compressed_messages} compressed messages, expected at least {big}")


def main():
    if len(sys.argv) != 3 or sys.argv[2] not in CONFIGS:
        sys.exit(f"usage: {sys.argv[0]} ECHO_CLIENT {{{','.join(CONFIGS)}}}")
    log(f"peer: python websockets {websockets.__version__}, config {sys.argv[2]}")

    async def bounded():
        try:
            await asyncio.wait_for(run(sys.argv[1], sys.argv[2]), 60)
        except asyncio.TimeoutError:
            raise Failure("the exchange did not finish within 60 s")
        except websockets.exceptions.WebSocketException as e:
            raise Failure(f"websockets reported {type(e).__name__}: {e}")

    main_wrapper(lambda: asyncio.run(bounded()))


if __name__ == "__main__":
    main()
