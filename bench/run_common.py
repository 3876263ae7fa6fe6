# SPDX-License-Identifier: BSL-1.0
"""What the benchmark drivers (bench/echo/run.py, bench/fanout/run.py) share: free ports, a
server process started and listening, the load generators' `key=value` lines, and a few
formatters. Imported from the bench directory, which each driver puts on sys.path.
"""
import os
import platform
import signal
import socket
import subprocess
import sys
import tempfile
import time


class Ports:
    """Ports nothing listens on, counting up from `first` (exclusive)."""

    def __init__(self, first):
        self.last = first

    def free(self):
        """A new port each call, so that a server never meets TIME_WAIT from an earlier one."""
        while True:
            self.last += 1
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", self.last))
                    return self.last
                except OSError:
                    continue


class ServerProcess:
    """A server process, started in `cwd` (pinned to core `cpu` unless that is None) and
    listening on `port` within `wait` seconds, or RuntimeError."""

    def __init__(self, name, cmd, port, cwd, cpu, wait):
        self.name, self.port = name, port
        if cpu is not None:
            cmd = ["taskset", "-c", cpu] + cmd
        # A file, not a pipe: a server that logs every dropped connection must never block on
        # a full pipe. taskset execs the server, so this pid is the server's own.
        self.log = tempfile.TemporaryFile(mode="w+")
        self.proc = subprocess.Popen(cmd, cwd=cwd, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited at start: {self.errors()}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                time.sleep(0.05)
        else:
            self.stop()
            raise RuntimeError(f"{name} does not listen on port {port}")

    def errors(self):
        """The end of what the process wrote to stderr."""
        self.log.seek(0)
        return self.log.read().strip()[-300:]

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def cap_cpu(pid, name, share):
    """Puts process `pid`, every thread of it, in a cgroup of its own that may use `share` of
    one core (a CFS quota over 10 ms periods); returns a function that removes the cgroup.
    RuntimeError where no cgroup CPU controller can be written (not root, no cgroupfs)."""
    period = 10000
    quota = max(1000, int(share * period))
    v1 = "/sys/fs/cgroup/cpu"
    if os.path.isfile(os.path.join(v1, "cgroup.procs")):
        d = os.path.join(v1, f"bench-{name}-{pid}")
        files = (("cpu.cfs_period_us", str(period)), ("cpu.cfs_quota_us", str(quota)))
    else:
        # cgroup v2: the root must hand the cpu controller down first.
        try:
            with open("/sys/fs/cgroup/cgroup.subtree_control", "w") as f:
                f.write("+cpu")
        except OSError as e:
            raise RuntimeError(f"no writable cgroup CPU controller: {e}")
        d = f"/sys/fs/cgroup/bench-{name}-{pid}"
        files = (("cpu.max", f"{quota} {period}"),)
    try:
        os.makedirs(d, exist_ok=True)
        for f, v in files:
            with open(os.path.join(d, f), "w") as out:
                out.write(v)
        with open(os.path.join(d, "cgroup.procs"), "w") as out:
            out.write(str(pid))
    except OSError as e:
        raise RuntimeError(f"cannot cap {name}'s CPU with a cgroup: {e}")

    def remove():
        for _ in range(50):  # the cgroup empties once the process has gone
            try:
                os.rmdir(d)
                return
            except OSError:
                time.sleep(0.1)
    return remove


def parse_line(line):
    """The key=value fields of a load generator's line, as a dict of strings."""
    out = {}
    for field in line.split():
        if "=" in field:
            k, v = field.split("=", 1)
            out[k] = v
    return out


def fmt_rate(v):
    if v is None:
        return "n/a"
    if v >= 10000:
        return f"{v / 1000:.0f}k"
    if v >= 1000:
        return f"{v / 1000:.1f}k"
    return f"{v:.0f}"


def fmt_ratio(a, b):
    if a is None or b is None or b == 0:
        return "n/a"
    return f"{a / b:.2f}x"


def draw_charts(kind, md):
    """Draws results file `md` with bench/chart.py (`kind`: echo or fanout) into its directory,
    prints what chart.py says, and returns the paths of the charts it wrote."""
    here = os.path.dirname(os.path.abspath(__file__))
    # A process of its own: chart.py may start another interpreter to find matplotlib.
    r = subprocess.run([sys.executable, os.path.join(here, "chart.py"), kind, md, os.path.dirname(os.path.abspath(md))],
                       capture_output=True, text=True)
    print((r.stdout + r.stderr).strip(), flush=True)
    return [l.split(" ", 1)[1] for l in r.stdout.splitlines() if l.startswith("wrote ")]


def machine():
    """CPU model, cores and kernel, for the results' heading."""
    cpu = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Linux {platform.release()}"
