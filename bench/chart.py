#!/usr/bin/env python3
# SPDX-License-Identifier: BSL-1.0
"""Draws a benchmark run's results as SVG charts, from the results file the run wrote.

    python3 bench/chart.py echo [--no-baseline] RESULTS_MD OUT_DIR   # cpu.svg, memory.svg
    python3 bench/chart.py fanout RESULTS_MD OUT_DIR                 # deliveries.svg

It reads the Markdown tables of the file (bench/echo/run.py's results.md, bench/fanout/run.py's
results.md, or a section of bench/RESULTS.md copied to a file), so a run of any date can be
charted again, and prints a `wrote PATH` line per chart:

- echo, cpu.svg: server CPU per echo (µs, lower is better), the loads of the "Server CPU per
  echo" table in groups and a bar per server; † on a bar where the "Echo round trips" table
  marks the load generator, not the server, as saturated.
- echo, memory.svg: server memory per idle connection (KiB) for each idle state (ws, wss) of
  the "Server memory per connection" table.
- echo --no-baseline: without the servers of `tools/bench-echo --baseline` ("corows before",
  "corows events before"), for a chart of corows against the other servers alone.
- fanout, deliveries.svg: deliveries per second and server CPU per delivery, by message size
  and peer, from the table with `| size | peer |` columns.

Charts are optional for a run: without matplotlib (Debian's python3-matplotlib) it says so in
one line and exits 0. The SVGs have no date, a fixed hash salt and no embedded fonts, so a chart
drawn twice from one file is the same bytes.
"""
import os
import re
import sys
import textwrap

sys.dont_write_bytecode = True  # no __pycache__ in the tree

REEXEC = "COROWS_CHART_REEXEC"
# Debian's python3-matplotlib is installed for the system interpreter; a python3 from pyenv or
# a virtualenv that comes first on PATH does not see it.
SYSTEM_PYTHON = "/usr/bin/python3"


# --- the results file's tables -----------------------------------------------------------

class Table:
    """A Markdown table: the heading above it, its header cells and its rows of cells."""

    def __init__(self, heading, header):
        self.heading, self.header, self.rows = heading, header, []


def cells(line):
    """The cells of a Markdown table line, stripped."""
    return [c.strip() for c in line.strip().strip("|").split("|")]


def tables(text):
    """Every Markdown table of `text`, in order, each with the nearest heading above it."""
    out = []
    heading = ""
    current = None
    for line in text.splitlines():
        s = line.strip()
        if s.startswith("#"):
            heading = s.lstrip("#").strip()
        if not s.startswith("|"):
            current = None
            continue
        if current is None:
            current = Table(heading, cells(s))
            out.append(current)
        elif not re.fullmatch(r"[|\s:-]+", s):  # not the |---| line
            current.rows.append(cells(s))
    return out


def table_under(all_tables, heading):
    """The first table whose heading starts with `heading`, or None."""
    return next((t for t in all_tables if t.heading.startswith(heading)), None)


def number(cell):
    """The figure in a cell ("18.27", "28k †", "1.2M", "499k"), or None ("n/a", "failed", "")."""
    m = re.match(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([kM]?)", cell)
    if not m:
        return None
    return float(m.group(1)) * {"": 1, "k": 1e3, "M": 1e6}[m.group(2)]


def server_columns(table):
    """(index, name) of the table's server columns: not the first (the load or state), not the
    ratio columns ("best peer / corows")."""
    return [(i, h) for i, h in enumerate(table.header) if i > 0 and "/" not in h]


def grid(table):
    """(row labels, servers, {(row, server): figure or None}) of a load-by-server table."""
    columns = server_columns(table)
    rows, values = [], {}
    for r in table.rows:
        rows.append(r[0])
        for i, name in columns:
            values[(r[0], name)] = number(r[i]) if i < len(r) else None
    return rows, [name for _, name in columns], values


def when(text):
    """When the run was: run.py's "Measured ... UTC", else the first date and time in `text`
    (a section of bench/RESULTS.md names it in its heading), or None."""
    m = re.search(r"Measured (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", text) or \
        re.search(r"(\d{4}-\d\d-\d\d \d\d:\d\d)(?:-\d\d:\d\d)? UTC", text)
    return m.group(1) + " UTC" if m else None


class EchoResults:
    """What the echo charts draw from one results file."""

    def __init__(self, text):
        all_tables = tables(text)
        self.when = when(text)
        cpu = table_under(all_tables, "Server CPU per echo")
        self.loads, self.servers, self.cpu = grid(cpu) if cpu else ([], [], {})
        # (load, server) where the load generator, not the server, ran out of CPU: there the
        # server had time to spare, found fewer messages per wake-up, and paid more per echo.
        self.load_bound = set()
        rates = table_under(all_tables, "Echo round trips per second")
        if rates:
            for r in rates.rows:
                for i, name in server_columns(rates):
                    if i < len(r) and "†" in r[i]:
                        self.load_bound.add((r[0], name))
        self.idle = []  # (state, connections or None, {server: KiB per connection or None})
        self.memory_servers = []
        memory = table_under(all_tables, "Server memory per connection")
        if memory:
            states, self.memory_servers, values = grid(memory)
            for state in states:
                m = re.fullmatch(r"idle(?:, (\w+))? \((\d+|\?) connections\)", state)
                if m:  # the idle rows; the row after compressed messages is not an idle state
                    conns = int(m.group(2)) if m.group(2) != "?" else None
                    self.idle.append((m.group(1) or "ws", conns,
                                      {s: values[(state, s)] for s in self.memory_servers}))


def without_baseline(r):
    """EchoResults `r` without the --baseline builds' columns."""
    r.servers = [s for s in r.servers if not s.endswith(" before")]
    r.memory_servers = [s for s in r.memory_servers if not s.endswith(" before")]
    r.idle = [(state, n, {s: v for s, v in values.items() if s in r.memory_servers}) for state, n, values in r.idle]
    return r


class FanoutResults:
    """What the fan-out chart draws from one results file: {(size, peer): (deliveries/s,
    server CPU µs per delivery)}, sizes and peers in the table's order."""

    def __init__(self, text):
        self.sizes, self.peers, self.figures = [], [], {}
        self.when = when(text)
        t = next((t for t in tables(text) if t.header[:2] == ["size", "peer"]), None)
        if not t:
            return
        col = {h: i for i, h in enumerate(t.header)}
        for r in t.rows:
            size, peer = r[0], r[1]
            if size not in self.sizes:
                self.sizes.append(size)
            if peer not in self.peers:
                self.peers.append(peer)
            get = lambda h: number(r[col[h]]) if h in col and col[h] < len(r) else None
            self.figures[(size, peer)] = (get("deliveries/s"), get("server CPU µs/delivery"))


# --- drawing -------------------------------------------------------------------------------

# One hue per project, corows' modes in one blue family; "before" builds and second modes of a
# peer take their project's colour, lighter and hatched (see style()).
COLOURS = (("corows as_tuple", "#9ec5ee"), ("corows events", "#5b9bd5"), ("corows", "#1f4e8c"),
           ("Boost.Beast", "#e07b24"), ("websocketpp", "#4c9a4c"), ("Node ws", "#8e5ea2"),
           ("uWebSockets.js", "#c0392b"), ("uWS.js", "#c0392b"),
           ("Socket.IO", "#e07b24"))
OTHER_COLOURS = ("#7f7f7f", "#b5a33b", "#17becf", "#8c564b")


def lighter(colour, by=0.45):
    """`colour` (#rrggbb) mixed with white."""
    rgb = [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    return "#" + "".join(f"{round(c + (255 - c) * by):02x}" for c in rgb)


def style(name, others):
    """(face colour, hatch) of a server's bars; `others` numbers the servers no colour names."""
    base = next((c for prefix, c in COLOURS if name.startswith(prefix)), None)
    if base is None:
        base = OTHER_COLOURS[others.setdefault(name, len(others)) % len(OTHER_COLOURS)]
    # corows' own second mode has its own blue; elsewhere a second mode or an earlier build is
    # the same project: its colour, lighter and hatched.
    variant = (name.endswith(" before") or "dedicated" in name or "one node" in name)
    return (lighter(base), "///") if variant else (base, None)


def fmt_value(v, small=2):
    """A bar's figure as its table gives it: `small` decimals under 10."""
    if v >= 1e6:
        return f"{v / 1e6:.1f}M"
    if v >= 1e4:
        return f"{v / 1e3:.0f}k"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.{small}f}"


def pyplot():
    """matplotlib.pyplot with the Agg backend and reproducible SVG output, or None."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    plt.rcParams.update({
        "svg.hashsalt": "corows-bench",  # fixed ids for clip paths and the like: stable diffs
        "svg.fonttype": "none",  # text as text: small files, no glyph outlines
        "font.family": "sans-serif",
        "font.size": 10,
        "axes.spines.top": False,
        "axes.spines.right": False,
        "hatch.linewidth": 0.6,
    })
    return plt


def save(plt, fig, path):
    """Writes `fig` to `path` as SVG and says so."""
    # No date, and a creator that does not change with the matplotlib version: a chart drawn
    # again from the same file is the same bytes.
    fig.savefig(path, format="svg", metadata={"Date": None, "Creator": "bench/chart.py"})
    plt.close(fig)
    print(f"wrote {path}")


def bars(ax, groups, servers, value, mark, styles, log):
    """Grouped bars on `ax`: one group per entry of `groups`, one bar per server with a figure
    in the panel, its value above it (with `mark(group, server)` after it)."""
    shown = [s for s in servers if any(value(g, s) is not None for g in groups)]
    width = 0.84 / max(len(shown), 1)
    top = max((value(g, s) for g in groups for s in shown if value(g, s) is not None), default=1)
    for k, s in enumerate(shown):
        colour, hatch = styles[s]
        for j, g in enumerate(groups):
            v = value(g, s)
            x = j - 0.42 + width * (k + 0.5)
            if v is None:
                continue
            ax.bar(x, v, width, color=colour, hatch=hatch, edgecolor="white" if not hatch else "#555555",
                   linewidth=0.4, label=s if j == 0 or all(value(h, s) is None for h in groups[:j]) else None)
            text = fmt_value(v) + mark(g, s)
            # Turned upright when the bars are narrow: level labels would overlap their neighbours.
            vertical = len(shown) > 3
            ax.text(x, v * 1.04 if log else v + top * 0.012, text, ha="center", va="bottom",
                    rotation=90 if vertical else 0, fontsize=7.5 if vertical else 9, color="#333333")
    ax.set_xticks(range(len(groups)))
    ax.set_xlim(-0.55, len(groups) - 0.45)
    if log:
        ax.set_yscale("log")
        lo = min(value(g, s) for g in groups for s in shown if value(g, s) is not None)
        ax.set_ylim(lo / 2, top * 4)
    else:
        ax.set_ylim(0, top * (1.22 if len(shown) > 3 else 1.1))
    ax.grid(axis="y", color="#dddddd", linewidth=0.6)
    ax.set_axisbelow(True)


def needs_log(values):
    """True when the smallest figure of a panel would be a sliver beside the largest."""
    known = [v for v in values if v]
    return bool(known) and max(known) / min(known) > 40


def common_suffix(labels):
    """The ", C x D" that every load label ends with, or ""."""
    ends = {m.group(0) if (m := re.search(r", \d+ x \d+$", l)) else "" for l in labels}
    return ends.pop() if len(ends) == 1 else ""


def deflate_label(load):
    """A deflate load's mode, for a panel whose title names the message and compression."""
    m = re.search(r"deflate(?: \(([^)]*)\))?", load)
    return m.group(1) if m and m.group(1) else "prepared"


def legend(fig, handles_from, order, n):
    """One legend for every panel, below them, its entries in the table's order (`order`), in
    rows of at most `n`; returns how many rows."""
    found = {}
    for ax in handles_from:
        for h, l in zip(*ax.get_legend_handles_labels()):
            found.setdefault(l, h)
    labels = sorted(found, key=lambda l: order.index(l) if l in order else len(order))
    # One row while it fits, else rows of even length.
    columns = len(labels) if len(labels) <= n else -(-len(labels) // -(-len(labels) // n))
    fig.legend([found[l] for l in labels], labels, loc="lower center", ncol=columns, frameon=False, fontsize=9)
    return -(-len(labels) // columns)


def draw_cpu(plt, r, path):
    """cpu.svg from EchoResults `r`; False if it has no CPU figures."""
    suffix = common_suffix(r.loads)
    # A panel each for ws, wss and permessage-deflate, each with its own linear axis: an echo
    # with compression costs ten times an uncompressed one, so on a shared axis the other bars
    # would be slivers, and on a log axis a 2x lead looks like a small step. A chart of ratios
    # to corows would hide what an echo costs, which is what a reader sizes a server by. A
    # panel whose own figures still spread past 40x (the full matrix's 1 x 64 against 1 x 1)
    # goes to a log axis.
    panels = [("ws", [l for l in r.loads if "deflate" not in l and not l.startswith("wss ")]),
              ("wss (TLS 1.3)", [l for l in r.loads if "deflate" not in l and l.startswith("wss ")]),
              ("1 KiB JSON, permessage-deflate", [l for l in r.loads if "deflate" in l])]
    panels = [(t, loads) for t, loads in panels if any(r.cpu.get((l, s)) for l in loads for s in r.servers)]
    if not panels:
        return False
    others = {}
    styles = {s: style(s, others) for s in r.servers}
    # A panel of one load still needs room for its title.
    widths = [max(2, len(loads)) * max(2, sum(1 for s in r.servers if any(r.cpu.get((l, s)) for l in loads)))
              for _, loads in panels]
    fig, axes = plt.subplots(1, len(panels), figsize=(min(16, max(7.5, 0.17 * sum(widths) + 2.0)), 5.4),
                             gridspec_kw={"width_ratios": widths}, squeeze=False)
    axes = axes[0]
    for ax, (title, loads) in zip(axes, panels):
        log = needs_log([r.cpu.get((l, s)) for l in loads for s in r.servers])
        bars(ax, loads, r.servers, lambda l, s: r.cpu.get((l, s)),
             lambda l, s: " †" if (l, s) in r.load_bound else "", styles, log)
        names = [deflate_label(l) if "deflate" in title else l[:len(l) - len(suffix)].removeprefix("wss ")
                 for l in loads]
        # The full matrix's seventeen loads need narrow labels: a line per part.
        narrow = len(r.loads) > 8
        ax.set_xticklabels([n.replace(", ", "\n") if narrow else "\n".join(textwrap.wrap(n, 16)) for n in names],
                           fontsize=9)
        ax.set_title(title, fontsize=10)
    axes[0].set_ylabel("server CPU per echo, µs" + (" (log scale)" if axes[0].get_yscale() == "log" else ""))
    for ax in axes[1:]:
        if ax.get_yscale() == "log":
            ax.set_ylabel("µs (log scale)")
    what = f", {suffix[2:]} (connections x messages in flight)" if suffix else ""
    fig.suptitle(f"Server CPU per echo, µs: lower is better{what}", fontsize=12, x=0.01, ha="left")
    note = "server and load generator on a core each"
    if r.load_bound:
        note += "; † the load generator's core was full, the server's was not"
    fig.text(0.01, 0.925, (f"{r.when}; " if r.when else "") + note, fontsize=9, color="#555555")
    rows = legend(fig, axes, r.servers, 6)
    fig.subplots_adjust(left=0.07, right=0.99, top=0.86, bottom=0.12 + 0.045 * rows, wspace=0.12)
    save(plt, fig, path)
    return True


def draw_memory(plt, r, path):
    """memory.svg from EchoResults `r`; False if it has no idle memory figures."""
    if not r.idle:
        return False
    others = {}
    servers = [s for s in r.memory_servers if any(v.get(s) is not None for _, _, v in r.idle)]
    styles = {s: style(s, others) for s in servers}
    # Horizontal bars, so that the servers' names read level, one panel per state, each with its
    # own axis: an idle wss connection costs some servers ten times an idle ws one, which would
    # flatten the ws panel on a shared axis.
    fig, axes = plt.subplots(1, len(r.idle), figsize=(9, 0.42 * len(servers) + 1.9), sharey=True, squeeze=False)
    axes = axes[0]
    rows = range(len(servers) - 1, -1, -1)  # the table's first server on top
    for ax, (state, conns, values) in zip(axes, r.idle):
        top = max((v for v in values.values() if v is not None), default=1)
        for y, s in zip(rows, servers):
            colour, hatch = styles[s]
            v = values.get(s)
            if v is None:
                ax.text(top * 0.01, y, "n/a", va="center", fontsize=9, color="#777777")
                continue
            ax.barh(y, v, 0.7, color=colour, hatch=hatch, edgecolor="#555555" if hatch else "white", linewidth=0.4)
            ax.text(v + top * 0.015, y, fmt_value(v, 1), va="center", fontsize=9, color="#333333")
        ax.set_xlim(0, top * 1.15)
        ax.grid(axis="x", color="#dddddd", linewidth=0.6)
        ax.set_axisbelow(True)
        ax.set_xlabel("KiB per connection")
        ax.set_title(f"idle {state}" + (f", {conns:,} connections" if conns else ""), fontsize=10)
    axes[0].set_yticks(list(rows))
    axes[0].set_yticklabels(servers)
    fig.suptitle("Server memory per idle connection (VmRSS growth / connections), KiB: lower is better",
                 fontsize=12, x=0.01, ha="left")
    height = fig.get_figheight()
    if r.when:
        fig.text(0.01, 1 - 0.5 / height, r.when, fontsize=9, color="#555555")
    fig.subplots_adjust(left=0.2, right=0.98, top=1 - 0.85 / height, bottom=0.65 / height, wspace=0.12)
    save(plt, fig, path)
    return True


def draw_deliveries(plt, r, path):
    """deliveries.svg from FanoutResults `r`; False if no run of it has figures."""
    if not any(v is not None for pair in r.figures.values() for v in pair):
        return False
    others = {}
    styles = {p: style(p, others) for p in r.peers}
    fig, axes = plt.subplots(1, 2, figsize=(max(7.5, 1.1 * len(r.sizes) * len(r.peers) + 2), 4.6))
    for ax, k, title in ((axes[0], 0, "deliveries per second: higher is better"),
                         (axes[1], 1, "server CPU per delivery, µs: lower is better")):
        value = lambda size, p, k=k: r.figures.get((size, p), (None, None))[k]
        bars(ax, r.sizes, r.peers, value, lambda size, p: "", styles, False)
        ax.set_xticklabels([f"{s} messages" for s in r.sizes], fontsize=9)
        ax.set_title(title, fontsize=10)
    axes[0].yaxis.set_major_formatter(lambda v, _: fmt_value(v) if v else "0")
    fig.suptitle("Fan-out: one publisher, every message to every subscriber", fontsize=12, x=0.01, ha="left")
    note = "nodes and Redis on one core, the load generator on the other"
    fig.text(0.01, 0.905, (f"{r.when}; " if r.when else "") + note, fontsize=9, color="#555555")
    legend(fig, axes, r.peers, 4)
    fig.subplots_adjust(left=0.08, right=0.99, top=0.82, bottom=0.2, wspace=0.2)
    save(plt, fig, path)
    return True


def main(argv):
    """The command line (see the module's docstring); the exit status."""
    args = argv[1:]
    no_baseline = "--no-baseline" in args
    args = [a for a in args if a != "--no-baseline"]
    if len(args) != 3 or args[0] not in ("echo", "fanout") or (no_baseline and args[0] != "echo"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    kind, source, out = args
    try:
        with open(source, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"chart.py: {e}", file=sys.stderr)
        return 1
    results = EchoResults(text) if kind == "echo" else FanoutResults(text)
    if no_baseline:
        without_baseline(results)
    found = (results.loads or results.idle) if kind == "echo" else results.figures
    if not found:
        what = "Server CPU per echo or Server memory per connection" if kind == "echo" else "| size | peer |"
        print(f"chart.py: no {what} table in {source}", file=sys.stderr)
        return 1
    plt = pyplot()
    if plt is None:
        if not os.environ.get(REEXEC) and os.access(SYSTEM_PYTHON, os.X_OK) and \
                os.path.realpath(sys.executable) != os.path.realpath(SYSTEM_PYTHON):
            os.environ[REEXEC] = "1"  # once: the system interpreter may lack it too
            os.execv(SYSTEM_PYTHON, [SYSTEM_PYTHON, os.path.abspath(__file__)] + argv[1:])
        print("chart.py: no matplotlib (apt-get install python3-matplotlib): no charts drawn")
        return 0
    os.makedirs(out, exist_ok=True)
    if kind == "echo":
        drawn = draw_cpu(plt, results, os.path.join(out, "cpu.svg"))
        drawn = draw_memory(plt, results, os.path.join(out, "memory.svg")) or drawn
    else:
        drawn = draw_deliveries(plt, results, os.path.join(out, "deliveries.svg"))
    if not drawn:
        print(f"chart.py: no figures to draw in {source}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
