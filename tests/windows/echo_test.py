#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""A Windows build's echo server, run through a wrapper (wine), echoes for Python websockets on
127.0.0.1, plain and with permessage-deflate: examples/example_test.py's echo and echo_deflate
scenarios, with the program started through the wrapper.

    echo_test.py ECHO_SERVER_EXE WRAPPER...

Exits 0 on success, 1 on failure, 77 (skipped) without python3-websockets.
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples"))
import example_test  # noqa: E402  (re-executes under /usr/bin/python3, or exits 77, without websockets)


def main():
    program, wrapper = sys.argv[1], sys.argv[2:]
    example_test.Server.wrapper = wrapper
    # Under wine SIGTERM ends the Windows program without a console control event: no
    # graceful stop to check, only that it ends.
    example_test.Server.graceful_stop = False
    for name in ("echo", "echo_deflate"):
        try:
            getattr(example_test, "scenario_" + name)(program)
        except AssertionError as e:
            print("%s: FAILED: %s" % (name, e))
            return 1
        print("%s: ok" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
