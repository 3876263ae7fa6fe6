# SPDX-License-Identifier: BSL-1.0
# Shared by the Python interop scripts: running our example programs, making payloads,
# reporting. Standard library only, so the scripts run on Debian's /usr/bin/python3.
import os
import random
import re
import select
import subprocess
import sys
import tempfile
import time

# Meson's exit code for a skipped test.
SKIP = 77

# Message sizes that cross every length-encoding boundary of RFC 6455 §5.2.
ECHO_SIZES = [0, 1, 125, 126, 65535, 65536, 1 << 20, 8 << 20]

# Lines sent through our echo_client: the boundaries again, plus many small ones.
LINE_SIZES = [0, 1, 125, 126, 127, 1000, 65535, 65536, 65537, 1 << 20]


class Failure(Exception):
    """A check that did not hold; the message says what was expected and what came."""


def check(cond, what):
    """Raises Failure(what) unless cond."""
    if not cond:
        raise Failure(what)


def log(*args):
    """Prints one progress line, flushed so meson's log keeps the order."""
    print(*args, flush=True)


def skip(why):
    """Exits with meson's SKIP code, saying why."""
    log("SKIP:", why)
    sys.exit(SKIP)


def text_payload(size, seed):
    """Valid UTF-8 of exactly `size` bytes, with 2-, 3- and 4-byte characters, compressible
    like prose but not a pure repetition."""
    rng = random.Random(seed)
    words = ["frame", "masque", "naïve", "Grüße", "€uro", "日本語", "😀ok", "deflate",
             "window", "ключ", "payload", "ω", "x"]
    parts = []
    n = 0
    while n < size:
        # A 16 KiB chunk of random words, then repeat it with variations so that 8 MiB is
        # cheap to build but still exercises the compressor's matching.
        chunk = " ".join(rng.choice(words) for _ in range(3000)).encode()
        for _ in range(8):
            parts.append(chunk)
            n += len(chunk)
            parts.append(str(rng.random()).encode())
            n += len(parts[-1])
            if n >= size:
                break
    data = b"".join(parts)[:size]
    # Cut back to a character boundary, then pad with ASCII to the exact size.
    while data and (data[-1] & 0xC0) == 0x80:
        data = data[:-1]
    if data and data[-1] >= 0xC0:
        data = data[:-1]
    data += b"a" * (size - len(data))
    return data.decode("utf-8")


def binary_payload(size, seed):
    """`size` bytes: alternating 4 KiB blocks of noise and of repeated bytes, so that deflate
    has work on both kinds."""
    rng = random.Random(seed)
    out = bytearray()
    block = 0
    while len(out) < size:
        if block % 2 == 0:
            out += rng.randbytes(4096)
        else:
            out += bytes([rng.randrange(256)]) * 4096
        block += 1
    return bytes(out[:size])


def line_payload(size, seed):
    """A text line of exactly `size` UTF-8 bytes without CR or LF."""
    return text_payload(size, seed)


class Program:
    """A child process of ours that announces `listening on 127.0.0.1:PORT`; killed on exit."""

    def __init__(self, argv, timeout=10.0):
        if not os.access(argv[0], os.X_OK):
            raise Failure(f"{argv[0]} is missing or not executable (build it first)")
        self.argv = argv
        # stderr goes to a file: a chatty program must never block on a full pipe.
        self.stderr = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                     stderr=self.stderr)
        self.port = self._read_port(timeout)

    def _read_port(self, timeout):
        deadline = time.monotonic() + timeout
        seen = b""
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.proc.stdout], [], [], 0.1)
            if ready:
                line = self.proc.stdout.readline()
                if not line:
                    break
                seen += line
                m = re.search(rb"listening on 127\.0\.0\.1:(\d+)", line)
                if m:
                    return int(m.group(1))
            elif self.proc.poll() is not None:
                break
        err = self.stop()
        raise Failure(f"{' '.join(self.argv)} did not print 'listening on 127.0.0.1:PORT' "
                      f"within {timeout} s; stdout {seen!r}, stderr {err!r}")

    def alive(self):
        """True while the process runs."""
        return self.proc.poll() is None

    def stop(self):
        """Ends the process (if still running) and returns what it wrote to stderr."""
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(3)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.stderr.seek(0)
        return self.stderr.read().decode(errors="replace")[-2000:]

    def __enter__(self):
        return self

    def __exit__(self, exc_type, exc, tb):
        err = self.stop()
        if exc_type is not None and err.strip():
            log(f"stderr of {os.path.basename(self.argv[0])}: {err.strip()}")


def compare_lines(sent, got):
    """Fails with the first difference between the sent and echoed lines."""
    check(len(got) == len(sent),
          f"echo_client printed {len(got)} lines, expected {len(sent)}")
    for i, (a, b) in enumerate(zip(sent, got)):
        check(a == b, f"line {i} ({len(a.encode())} bytes) came back different "
                      f"({len(b.encode())} bytes)")


def echo_lines():
    """The lines our echo_client sends: every boundary size, then 200 short ones."""
    lines = [line_payload(n, 1000 + i) for i, n in enumerate(LINE_SIZES)]
    lines += [f"message {i} — ü {'z' * (i % 40)}" for i in range(200)]
    return lines


def main_wrapper(fn):
    """Runs fn(); prints PASS, or FAIL with the reason and exits 1."""
    try:
        fn()
    except Failure as e:
        log("FAIL:", e)
        sys.exit(1)
    log("PASS")
