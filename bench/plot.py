#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""plot.py BUILD - the pictures of a bench/run.sh run, as SVG in BUILD.

bench/run.sh calls it at its end; run it again on a finished run's BUILD
(build-bench by default) to draw the same pictures from the same numbers:

  rtt-cdf.svg       the round-trip time distributions (CDF) of umcast, raw
                    UDP and libfabric, and of umcast with the same-host
                    path on and off (UMC_SHM=1, =0), busy-polling and
                    event-driven, one column per message size, from
                    BUILD/bench-rtt/ (every timed round trip of every
                    repetition);
  rate-by-size.svg  the 1 -> 1 message rate of umcast, raw UDP, libfabric,
                    umcast on umc_ib0 and umcast with the path on and off,
                    by message size;
  fanout.svg        the aggregate delivered rate and the loss of umcast
                    (its defaults; the path on; off) and raw UDP, by number
                    of receiver processes (1 to 16: a log scale);

the last two from BUILD/bench-data.txt: the medians over the repetitions,
with a bar from the smallest to the largest.  Needs python3-matplotlib
(scripts/deps.sh bench).
"""
import collections
import glob
import os
import statistics
import sys
import textwrap

import matplotlib

matplotlib.use("svg")
import matplotlib.pyplot as plt  # noqa: E402 (after the backend is chosen)
import matplotlib.ticker  # noqa: E402

# One colour, marker and name per transport, in every picture.
STYLE = {
    "umcast": ("#1f77b4", "o", "umcast"),
    "udp": ("#7f7f7f", "s", "raw UDP"),
    "libfabric": ("#d62728", "^", "libfabric udp"),
    "umcib": ("#2ca02c", "D", "umcast on umc_ib0"),
    "shm": ("#9467bd", "v", "umcast, same-host path (UMC_SHM=1)"),
    "noshm": ("#8c564b", "P", "umcast, UMC_SHM=0"),
}
plt.rcParams.update({"font.size": 10, "axes.grid": True, "grid.alpha": 0.3,
                     "svg.fonttype": "path", "figure.dpi": 100})


def read_data(path):
    """bench-data.txt -> (header, rates): rates[t, size, n] = [(rate, loss)],
    one entry per repetition that ran (its "lat" lines are the table's)."""
    rates = collections.defaultdict(list)
    header = ""
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "#":
                header = line[1:].strip()
            elif w[0] == "rate" and w[5] != "-":
                rates[w[1], int(w[2]), int(w[3])].append((float(w[5]), float(w[6])))
    return header, rates


def spread(values):
    """median, and its distance to the smallest and the largest"""
    m = statistics.median(values)
    return m, m - min(values), max(values) - m


def read_rtts(rtt_dir):
    """rtts[t, size, mode] = every round-trip time (us) of every repetition"""
    rtts = collections.defaultdict(list)
    for path in glob.glob(os.path.join(rtt_dir, "*.txt")):
        t, size, mode, _rep = os.path.basename(path)[:-4].rsplit("-", 3)
        with open(path) as f:
            rtts[t, int(size), mode].extend(int(x) / 1000 for x in f if x.strip())
    return rtts


def caption(fig, header):
    """the run's line of bench-data.txt, at the foot, wrapped to the width"""
    width = int(fig.get_figwidth() * 16)
    fig.text(0.5, 0.005, textwrap.fill(header, width), ha="center", va="bottom", fontsize=8,
             color="#555555")


def plot_cdf(rtts, header, out):
    sizes = sorted({s for (_, s, _) in rtts})
    modes = [m for m in ("busy", "ev") if any(k[2] == m for k in rtts)]
    titles = {"busy": "busy-polling", "ev": "event-driven (both ends asleep)"}
    fig, axes = plt.subplots(len(modes), len(sizes), figsize=(4.2 * len(sizes), 3.6 * len(modes)),
                             squeeze=False)
    for r, mode in enumerate(modes):
        for c, size in enumerate(sizes):
            ax = axes[r][c]
            for t in STYLE:
                v = sorted(rtts.get((t, size, mode), []))
                if not v:
                    continue
                n = len(v)
                # Every point of the tail, where they are sparse, and at most
                # about 2000 of the body.
                step = max(1, n // 2000)
                idx = sorted(set(range(0, n, step)) | set(range(max(0, n - 500), n)))
                color, _, name = STYLE[t]
                ax.plot([v[i] for i in idx], [(i + 0.5) / n for i in idx], color=color,
                        label=f"{name}: p50 {v[n // 2]:.1f}, p99 {v[int(n * 0.99)]:.0f} µs",
                        linewidth=1.6)
            ax.set_xscale("log")
            # A logit scale stretches both ends: the body and the tail up
            # to p99.9 are both readable.
            ax.set_yscale("logit")
            ax.set_ylim(0.005, 0.9995)
            ax.set_yticks([0.01, 0.1, 0.5, 0.9, 0.99, 0.999],
                          ["1%", "10%", "50%", "90%", "99%", "99.9%"])
            ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
            ax.set_title(f"{size} B, {titles[mode]}", fontsize=10)
            ax.set_xlabel("round-trip time (µs)")
            if c == 0:
                ax.set_ylabel("round trips that took at most x")
            ax.legend(loc="lower right", fontsize=7.5)
    fig.suptitle("Round-trip latency distribution (CDF), loopback", fontsize=12)
    caption(fig, header)
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    fig.savefig(out)
    plt.close(fig)


def plot_rate(rates, header, out):
    sizes = sorted({s for (_, s, n) in rates if n == 1})
    ts = [t for t in STYLE if any((t, s, 1) in rates for s in sizes)]
    fig, ax = plt.subplots(figsize=(7.5, 4.2))
    width = 0.8 / max(1, len(ts))
    for i, t in enumerate(ts):
        xs, ms, lo, hi = [], [], [], []
        for j, s in enumerate(sizes):
            if (t, s, 1) not in rates:
                continue
            m, a, b = spread([r for r, _ in rates[t, s, 1]])
            xs.append(j + (i - (len(ts) - 1) / 2) * width)
            ms.append(m / 1000)
            lo.append(a / 1000)
            hi.append(b / 1000)
        color, _, name = STYLE[t]
        ax.bar(xs, ms, width, yerr=[lo, hi], color=color, label=name, capsize=3,
               error_kw={"elinewidth": 1})
        for x, m in zip(xs, ms):
            ax.annotate(f"{m:.0f}", (x, m), xytext=(0, 2), textcoords="offset points",
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(sizes)), [f"{s} B" for s in sizes])
    ax.set_ylabel("delivered messages/s (thousands)")
    ax.set_title("Message rate, 1 sender → 1 receiver process (median, bar: smallest..largest)",
                 fontsize=10)
    ax.legend(fontsize=8)
    caption(fig, header)
    fig.tight_layout(rect=(0, 0.07, 1, 1))
    fig.savefig(out)
    plt.close(fig)


def plot_fanout(rates, header, out):
    sizes = sorted({s for (_, s, _) in rates})
    ts = [t for t in ("umcast", "shm", "noshm", "udp") if any(k[0] == t for k in rates)]
    fig, axes = plt.subplots(2, len(sizes), figsize=(4.2 * len(sizes), 6.4), squeeze=False,
                             sharex=True)
    for c, s in enumerate(sizes):
        for i, t in enumerate(ts):
            ns = sorted(n for (tt, ss, n) in rates if tt == t and ss == s)
            if not ns:
                continue
            color, marker, name = STYLE[t]
            # The transports a little apart, so that their bars do not hide
            # each other (by a factor: the axis is logarithmic).
            xs = [n * 2 ** ((i - (len(ts) - 1) / 2) * 0.06) for n in ns]
            for r, pick, scale in ((0, 0, 1000), (1, 1, 0.01)):
                med = [spread([x[pick] for x in rates[t, s, n]]) for n in ns]
                axes[r][c].errorbar(xs, [m / scale for m, _, _ in med],
                                    yerr=[[a / scale for _, a, _ in med],
                                          [b / scale for _, _, b in med]],
                                    color=color, marker=marker, label=name, capsize=3)
        ns = sorted({n for (tt, ss, n) in rates if tt in ts and ss == s})
        axes[1][c].set_xscale("log", base=2)
        axes[1][c].set_xticks(ns, [str(n) for n in ns])
        axes[1][c].xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        axes[0][c].set_title(f"{s} B", fontsize=10)
        axes[0][c].set_ylim(bottom=0)
        axes[1][c].set_ylim(bottom=0)
        axes[1][c].set_xlabel("receiver processes")
        axes[0][c].legend(fontsize=8)
    axes[0][0].set_ylabel("aggregate delivered msg/s (thousands)")
    axes[1][0].set_ylabel("loss (% of messages sent)")
    fig.suptitle("Fan-out: one sender, N receiver processes (median, bar: smallest..largest)",
                 fontsize=12)
    caption(fig, header)
    fig.tight_layout(rect=(0, 0.03, 1, 0.97))
    fig.savefig(out)
    plt.close(fig)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = sys.argv[1]
    header, rates = read_data(os.path.join(build, "bench-data.txt"))
    done = []
    rtts = read_rtts(os.path.join(build, "bench-rtt"))
    if rtts:
        plot_cdf(rtts, header, os.path.join(build, "rtt-cdf.svg"))
        done.append("rtt-cdf.svg")
    if any(n == 1 for (_, _, n) in rates):
        plot_rate(rates, header, os.path.join(build, "rate-by-size.svg"))
        done.append("rate-by-size.svg")
    if any(n > 1 for (_, _, n) in rates):
        plot_fanout(rates, header, os.path.join(build, "fanout.svg"))
        done.append("fanout.svg")
    if not done:
        sys.exit(f"plot.py: no numbers in {build}/bench-data.txt or {build}/bench-rtt/")
    print(f"plot.py: {', '.join(done)} in {build}")


if __name__ == "__main__":
    main()
