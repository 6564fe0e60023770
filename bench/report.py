#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Turn bench/run.sh's raw measurements into RESULTS.md, plots, or the quick
headline table.

Raw CSV (no header): run,config, then droce-bench's columns (droce-bench -H):
provider,label,test,bytes,window,iters,seconds,value,unit,p50,p99,mean,cpu_user_s,
cpu_sys_s,runq_frac,peer_runq_frac,status,resent_pkts,timeouts,drops,rnr_naks,rnr_held

Each figure is the median over rounds with min-max; the droce/tcp ratio is the
ratio of the medians, and beside it the range of the per-round ratios (droce
and tcp ran back to back in each round, so a round's ratio cancels slow
changes of machine load).
"""
import argparse
import csv
import os
import statistics
import subprocess
import sys
from collections import defaultdict

COLS = ("run config provider label test bytes window iters seconds value unit p50 p99 mean "
        "cpu_user cpu_sys runq peer_runq status resent timeouts drops rnr_naks rnr_held").split()
# droce's own counters, both sides, per measurement (droce-bench's last five columns;
# rows written before they existed have none, or no RNR columns: counted as 0)
CNT = ("resent", "timeouts", "drops", "rnr_naks", "rnr_held")
RNR = ("rnr_naks", "rnr_held")

# transport pairs: (droce label, tcp label, title)
PAIRS = [("memif", "lo", "same host: droce/net_memif vs tcp/loopback"),
         ("memifzc", "lo", "same host: droce/net_memif zero-copy client vs tcp/loopback"),
         ("veth", "veth", "veth between namespaces: droce on the zero-config path (packet socket, "
          "UDP GSO) vs tcp"),
         ("vethafp", "veth", "veth between namespaces: droce/net_af_packet vs tcp"),
         ("vethxdp", "veth", "veth between namespaces: droce/net_af_xdp vs tcp"),
         ("veth9k", "veth9k", "veth at MTU 9000: droce/net_af_packet (path MTU 4096) vs tcp")]
# column headings: (provider, transport label)
COL_NAME = {("droce", "memif"): "droce memif", ("droce", "memifzc"): "droce memif zero-copy",
            ("droce", "veth"): "droce veth", ("tcp", "lo"): "tcp loopback",
            ("droce", "vethafp"): "droce af_packet veth",
            ("tcp", "veth"): "tcp veth", ("droce", "vethxdp"): "droce af_xdp veth",
            ("droce", "veth9k"): "droce veth 9000", ("tcp", "veth9k"): "tcp veth 9000"}

TARGETS = [
    # name, limit key, droce (label,test,bytes,window), tcp (label,test,bytes,window), op,
    # bound, unit; each target over both memif modes (copy, zero-copy client)
    (name + mode, key, (lab,) + dk, tk, op, bound, unit)
    for lab, mode in (("memif", ""), ("memifzc", " — memif zero-copy"))
    for name, key, dk, tk, op, bound, unit in (
        ("8 B half-RTT latency (send/recv)", "lat", ("lat_send", 8, 1), ("lo", "lat_send", 8, 1),
         "<=", 0.25, "us"),
        ("8 B message rate (send, window 64)", "rate", ("rate_send", 8, 64),
         ("lo", "rate_send", 8, 64), ">=", 8.0, "msg/s"),
        ("1 MiB RDMA write bw vs tcp send bw", "bw", ("bw_write", 1 << 20, 64),
         ("lo", "bw_send", 1 << 20, 64), ">=", 1.5, "MB/s"))
]
# issue 13: the kernel path against tcp on the same veth.  A ping-pong's
# half round trip is a time: droce at >= k x tcp's speed is a ratio <= 1/k.
TARGETS += [
    # the zero-config rows (droce's packet socket, UDP GSO) have their own
    # limits: "g" keys
    (name % pmd, "g" + key[1:] if lab in ("veth", "veth9k") else key, (lab,) + dk,
     (tlab,) + dk, op, bound, unit)
    for lab, tlab, pmd, mtu9k in (("veth", "veth", "veth zero-config (packet, GSO)", False),
                                  ("vethafp", "veth", "veth net_af_packet", False),
                                  ("vethxdp", "veth", "veth af_xdp", False),
                                  ("veth9k", "veth9k", "veth MTU 9000 zero-config", True))
    for name, key, dk, op, bound, unit in (
        ("8 B half-RTT latency (send/recv) — %s", "klat", ("lat_send", 8, 1), "<=", 0.5, "us"),
        ("1 MiB ping-pong (send/recv) — %s", "kpp", ("lat_send", 1 << 20, 1), "<=",
         0.67 if mtu9k else 1.0, "us"),
        ("1 MiB RDMA write bw (window 64) — %s", "kbw", ("bw_write", 1 << 20, 64), ">=",
         1.5 if mtu9k else 1.0, "MB/s"))
]
LOSS_TARGET = ("1 % loss goodput vs droce lossless (1 MiB writes, bridged veth)", 1, ">=", 0.50)


def load(path):
    rows = []
    if not path or not os.path.exists(path):
        return rows
    with open(path) as f:
        for rec in csv.reader(f):
            if not rec or rec[0].startswith("#"):
                continue
            if len(rec) == len(COLS) - len(CNT):
                rec = rec + [""] * len(CNT)
            elif len(rec) == len(COLS) - len(RNR):
                rec = rec + ["0"] * len(RNR)
            if len(rec) != len(COLS):
                continue
            d = dict(zip(COLS, rec))
            for k in ("run", "bytes", "window", "iters"):
                d[k] = int(d[k])
            for k in CNT:
                d[k] = int(d[k]) if d[k] else None
            for k in ("seconds", "value", "p50", "p99", "mean", "cpu_user", "cpu_sys", "runq", "peer_runq"):
                d[k] = float(d[k])
            rows.append(d)
    return rows


class Data:
    def __init__(self, rows):
        # (provider,label,test,bytes,window) -> {run: value} (ok only)
        self.v = defaultdict(dict)
        self.bad = defaultdict(list)
        self.row = {}
        self.cpu = defaultdict(dict)
        self.sched = defaultdict(dict)
        # key -> [resent, timeouts, drops, rnr_naks, rnr_held, rounds counted], every
        # round (failed ones too)
        self.cnt = {}
        for d in rows:
            k = (d["provider"], d["label"], d["test"], d["bytes"], d["window"])
            if d["provider"] == "droce" and d["resent"] is not None:
                c = self.cnt.setdefault(k, [0] * (len(CNT) + 1))
                for i, n in enumerate(CNT):
                    c[i] += d[n]
                c[-1] += 1
            if d["status"] == "ok":
                self.v[k][d["run"]] = d["value"]
                self.row[k] = d
                if d["seconds"] > 0:
                    self.cpu[k][d["run"]] = (d["cpu_user"] / d["seconds"],
                                             d["cpu_sys"] / d["seconds"])
                    self.sched[k][d["run"]] = (d["runq"], d["peer_runq"])
            else:
                self.bad[k].append((d["run"], d["status"]))

    def stat(self, prov, label, test, size, window):
        vals = self.v.get((prov, label, test, size, window))
        if not vals:
            return None
        xs = list(vals.values())
        return statistics.median(xs), min(xs), max(xs), len(xs)

    def runs(self, prov, label, test, size, window):
        return self.v.get((prov, label, test, size, window), {})

    def status(self, prov, label, test, size, window):
        b = self.bad.get((prov, label, test, size, window))
        if not b:
            return None
        return ", ".join(sorted({s for _, s in b}))

    def sizes(self, test, labels=None):
        return sorted({k[3] for k in self.v if k[2] == test and (labels is None or k[1] in labels)}
                      | {k[3] for k in self.bad if k[2] == test and
                         (labels is None or k[1] in labels)})

    def windows(self, test):
        return sorted({k[4] for k in list(self.v) + list(self.bad) if k[2] == test})


def fmt(x, unit=""):
    if x is None:
        return "–"
    if unit == "MB/s":
        return "%.0f" % x if x >= 100 else "%.1f" % x
    if unit in ("msg/s", "ops/s"):
        return "%.0fk" % (x / 1e3) if x >= 1e4 else "%.0f" % x
    if x >= 1000:
        return "%.0f" % x
    if x >= 100:
        return "%.1f" % x
    return "%.2f" % x


def cell(st, unit, status=None):
    if not st:
        return status or "–"
    med, lo, hi, n = st
    s = "%s [%s–%s]" % (fmt(med, unit), fmt(lo, unit), fmt(hi, unit))
    if n < 5:
        s += " (n=%d)" % n
    if status:
        s += " (+%s)" % status
    return s


def ratio(data, a, b):
    """(ratio of medians, min paired, max paired) for droce key a and tcp key b."""
    sa, sb = data.stat(*a), data.stat(*b)
    if not sa or not sb or not sb[0]:
        return None
    ra, rb = data.runs(*a), data.runs(*b)
    paired = [ra[r] / rb[r] for r in ra if r in rb and rb[r]]
    return sa[0] / sb[0], (min(paired) if paired else None), (max(paired) if paired else None)


def rfmt(x):
    return "%.2f" % x if x >= 0.095 else "%.2g" % x


def rcell(rt):
    if not rt:
        return "–"
    r, lo, hi = rt
    if lo is None:
        return "**%s×**" % rfmt(r)
    return "**%s×** [%s–%s]" % (rfmt(r), rfmt(lo), rfmt(hi))


def hsize(b):
    if b >= 1 << 20 and b % (1 << 20) == 0:
        return "%d MiB" % (b >> 20)
    if b >= 1024 and b % 1024 == 0:
        return "%d KiB" % (b >> 10)
    return "%d B" % b


def verdict(op, val, bound):
    if val is None:
        return "no data"
    ok = val <= bound if op == "<=" else val >= bound
    return "MET" if ok else "NOT MET"


def headline(data):
    out = []
    for name, _key, dk, tk, op, bound, unit in TARGETS:
        d = data.stat("droce", *dk)
        t = data.stat("tcp", *tk)
        rt = ratio(data, ("droce",) + dk, ("tcp",) + tk)
        out.append((name, d, t, rt, op, bound, unit))
    return out


def loss_headline(data):
    name, pct, op, bound = LOSS_TARGET
    lab = "loss%g" % pct
    l0 = data.stat("droce", "loss0", "bw_write", 1 << 20, 64)
    l1 = data.stat("droce", lab, "bw_write", 1 << 20, 64)
    rt = ratio(data, ("droce", lab, "bw_write", 1 << 20, 64),
               ("droce", "loss0", "bw_write", 1 << 20, 64))
    return name, l1, l0, rt, op, bound


def print_quick(data, machine, failures):
    print()
    print("droce quick benchmark (median of rounds [min-max]; ratio of medians, "
          "[range of per-round ratios])")
    for line in machine:
        if line.startswith(("cpu=", "load", "runs=", "secs=", "commit=")):
            print("  " + line)
    print()
    print("%-40s %-24s %-24s %-22s %s" % ("metric", "droce", "tcp / reference", "ratio",
                                          "target"))
    for name, d, t, rt, op, bound, unit in headline(data):
        r = rt[0] if rt else None
        print("%-40s %-24s %-24s %-22s %s %s %s" % (
            name, cell(d, unit) + " " + unit, cell(t, unit) + " " + unit,
            rcell(rt).replace("*", ""), op, bound, verdict(op, r, bound)))
    name, l1, l0, rt, op, bound = loss_headline(data)
    r = rt[0] if rt else None
    print("%-40s %-24s %-24s %-22s %s %s %s" % (
        "1% loss goodput / lossless (droce)", cell(l1, "MB/s") + " MB/s",
        cell(l0, "MB/s") + " MB/s", rcell(rt).replace("*", ""), op, bound,
        verdict(op, r, bound)))
    if data.cnt:
        print()
        print("droce's own counters, summed over rounds (resent packets / retransmit "
              "timeouts / lost frames / RNR NAKs / frames held behind them, both sides):")
        for k in sorted(data.cnt):
            c = data.cnt[k]
            lossless = not k[1].startswith("loss") or k[1] == "loss0"
            print("  %-8s %-11s %7s w=%-3d  %6d / %4d / %6d / %4d / %6d  (%d rounds)%s" % (
                k[1], k[2], hsize(k[3]), k[4], c[0], c[1], c[2], c[3], c[4], c[5],
                "  <-- on a lossless path" if lossless and sum(c[:5]) else ""))
    allq = [x for v in data.sched.values() for x in v.values()]
    if allq:
        print()
        print("load: these measurements waited for a CPU a median %.0f %% (client) / %.0f %% "
              "(server) of the time (max %.0f %% / %.0f %%); 0 %% on an idle machine" % (
                  100 * statistics.median(x[0] for x in allq),
                  100 * statistics.median(x[1] for x in allq),
                  100 * max(x[0] for x in allq), 100 * max(x[1] for x in allq)))
    if failures:
        print()
        print("failures:")
        for line in failures:
            print("  " + line)


# ---- plots -------------------------------------------------------------------------------

SERIES = [("droce", "memif", "droce net\\_memif", 1), ("tcp", "lo", "tcp loopback", 2),
          ("droce", "memifzc", "droce net\\_memif zero-copy", 5),
          ("droce", "veth", "droce packet/veth (GSO)", 3), ("tcp", "veth", "tcp veth", 4),
          ("droce", "vethafp", "droce net\\_af\\_packet/veth", 6)]


XTICS = ("set xtics (" + ", ".join('"%s" %d' % (n, v) for n, v in (
    ("8", 8), ("32", 32), ("128", 128), ("512", 512), ("2K", 2048), ("8K", 8192),
    ("32K", 32768), ("128K", 131072), ("1M", 1 << 20), ("4M", 1 << 22)))
    + ")\n")


def write_dat(path, data, prov, label, test, window):
    n = 0
    with open(path, "w") as f:
        for s in data.sizes(test):
            st = data.stat(prov, label, test, s, window)
            if st:
                f.write("%d %g %g %g\n" % (s, st[0], st[1], st[2]))
                n += 1
    return n


# A panel without data (e.g. --veth-only has no memif figures): gnuplot
# refuses to autoscale a plot without a point, so the ranges are fixed
# for it and given back to autoscaling after.
NO_DATA = ("set label 1 'no data' at graph 0.5,0.5 center\nset xrange [1:2]\nset yrange [1:2]\n"
           "plot NaN notitle\nunset label 1\nset autoscale x\nset autoscale y\n")


def plot(data, outdir, loss_rows):
    pdir = os.path.join(outdir, "plots")
    os.makedirs(pdir, exist_ok=True)
    dd = os.path.join(pdir, "data")
    os.makedirs(dd, exist_ok=True)
    gp = []
    term = "set terminal pngcairo size 1200,520 font 'DejaVu Sans,10'\n"

    def panel(test, window, title, ylabel, logy=True):
        plots = []
        for prov, label, name, lt in SERIES:
            path = os.path.join(dd, "%s-%s-%s-w%d.dat" % (test, prov, label, window))
            if write_dat(path, data, prov, label, test, window):
                plots.append("'%s' u 1:2:3:4 w yerrorlines lt %d pt 7 ps 0.6 title '%s'"
                             % (os.path.relpath(path, pdir), lt, name))
        s = "set title '%s'\nset xlabel 'message size (bytes)'\nset ylabel '%s'\n" % (title, ylabel)
        s += "set logscale x 2\n" + ("set logscale y\n" if logy else "unset logscale y\n")
        s += XTICS + "set grid\nset key top left\nset offsets graph 0.04, graph 0.04, 0, 0\n"
        if plots:
            s += "plot " + ", \\\n  ".join(plots) + "\n"
        else:
            s += NO_DATA
        return s

    gp.append(term + "set output '%s'\nset multiplot layout 1,2 title "
              "'half round-trip latency (median of rounds, bars min-max; lower is better)'\n"
              % "latency.png"
              + panel("lat_send", 1, "send/recv ping-pong", "half RTT (us)")
              + panel("lat_write", 1, "RDMA write ping-pong", "half RTT (us)")
              + "unset multiplot\n")
    gp.append("set terminal pngcairo size 1500,520 font 'DejaVu Sans,10'\n"
              "set output '%s'\nset multiplot layout 1,3 title "
              "'one-way bandwidth, window 64 (median of rounds, bars min-max)'\n"
              % "bandwidth.png"
              + panel("bw_write", 64, "RDMA write", "MB/s", True)
              + panel("bw_read", 64, "RDMA read", "MB/s", True)
              + panel("bw_send", 64, "send/recv", "MB/s", True)
              + "unset multiplot\n")
    # droce/tcp ratio per test and size, same host and veth
    rplots = []
    tests = [("lat_send", 1, "latency send (lower better)"),
             ("lat_write", 1, "latency write (lower better)"),
             ("bw_write", 64, "bw write"), ("bw_read", 64, "bw read"),
             ("bw_send", 64, "bw send"), ("rate_send", 64, "rate send"),
             ("rate_write", 64, "rate write")]
    for pi, (dl, tl, _title) in enumerate(PAIRS):
        plots = []
        for i, (test, w, name) in enumerate(tests):
            path = os.path.join(dd, "ratio-%s-%s.dat" % (test, dl))
            n = 0
            with open(path, "w") as f:
                for s in data.sizes(test):
                    rt = ratio(data, ("droce", dl, test, s, w), ("tcp", tl, test, s, w))
                    if rt:
                        f.write("%d %g\n" % (s, rt[0]))
                        n += 1
            if n:
                plots.append("'%s' u 1:2 w linespoints lt %d pt %d title '%s'"
                             % (os.path.relpath(path, pdir), i + 1, i + 4, name))
        s = ("set title '%s'\nset xlabel 'message size (bytes)'\nset ylabel 'droce / tcp'\n"
             "set logscale x 2\nset logscale y\n" + XTICS + "set grid\n"
             "set offsets graph 0.04, graph 0.04, 0, 0\n"
             "set key outside bottom center horizontal maxrows 3 font ',9'\n") % _title.replace("_", "\\_")
        s += ("plot " + ", \\\n  ".join(plots + ["1 lt -1 dt 2 notitle"]) + "\n" if plots
              else NO_DATA)
        rplots.append(s)
    gp.append("set terminal pngcairo size 1800,640 font 'DejaVu Sans,10'\nset output '%s'\n"
              "set multiplot layout 1,%d title 'droce / tcp (ratio of medians; >1 means droce "
              "larger: better for bandwidth and rate, worse for latency)'\n"
              % ("ratio.png", len(PAIRS)) + "".join(rplots) + "unset multiplot\n")
    # goodput under loss
    lp = []
    for prov, lt in (("droce", 1), ("tcp", 2)):
        path = os.path.join(dd, "loss-%s.dat" % prov)
        n = 0
        with open(path, "w") as f:
            for pct, lab in loss_rows:
                st = data.stat(prov, lab, "bw_write", 1 << 20, 64)
                if st:
                    f.write("%g %g %g %g\n" % (pct if pct else 0.01, st[0], st[1], st[2]))
                    n += 1
        if n:
            lp.append("'%s' u 1:2:3:4 w yerrorlines lt %d pt 7 title '%s 1 MiB write'"
                      % (os.path.relpath(path, pdir), lt, prov))
    gp.append("set terminal pngcairo size 800,520 font 'DejaVu Sans,10'\nset output '%s'\n"
              "set title 'goodput of 1 MiB RDMA writes under random frame loss, both directions "
              "(bridged veth; 0 %% plotted at 0.01 %%)'\nset xlabel 'loss (%%)'\n"
              "set ylabel 'MB/s'\nset logscale x\nunset logscale y\nset yrange [0:*]\n"
              "set xrange [0.006:8]\nset xtics ('0' 0.01, '0.1' 0.1, '1' 1, '5' 5)\n"
              "set offsets 0, 0, 0, 0\nset grid\nset key inside top right\n"
              % "loss.png"
              + ("plot " + ", \\\n  ".join(lp) + "\n" if lp else NO_DATA))
    script = os.path.join(dd, "plots.gp")
    with open(script, "w") as f:
        f.write("\n".join(gp))
    try:
        subprocess.run(["gnuplot", os.path.relpath(script, pdir)], check=True, cwd=pdir)
    except (OSError, subprocess.CalledProcessError) as e:
        print("report.py: gnuplot failed: %s" % e, file=sys.stderr)
        return []
    return ["latency.png", "bandwidth.png", "ratio.png", "loss.png"]


# ---- RESULTS.md --------------------------------------------------------------------------

def table_pair(data, test, window, unit, title, better):
    L = []
    L.append("### %s\n" % title)
    L.append("%s; median [min–max] over rounds; ratio = droce/tcp of the medians "
             "[range of per-round ratios].\n" % better)
    # one tcp column per tcp transport, beside the first droce one it pairs with
    cols, shown = [], set()
    for dl, tl, _ in PAIRS:
        cols.append(("droce", dl, tl))
        if tl not in shown:
            cols.append(("tcp", tl, None))
            shown.add(tl)
        cols.append(("ratio", dl, tl))
    head = ["ratio" if kind == "ratio" else COL_NAME[(kind, a)] for kind, a, _ in cols]
    L.append("| size | " + " | ".join(head) + " |")
    L.append("|---:|" + "---:|" * len(cols))
    for s in data.sizes(test):
        row = ["| %s" % hsize(s)]
        for kind, a, b in cols:
            if kind == "ratio":
                row.append(rcell(ratio(data, ("droce", a, test, s, window),
                                       ("tcp", b, test, s, window))))
            else:
                k = (kind, a, test, s, window)
                row.append(cell(data.stat(*k), unit, data.status(*k)))
        L.append(" | ".join(row) + " |")
    L.append("")
    return L


READ_WRITE_BOUND = 0.9


def read_write(data, lab, s, window=64):
    """READ over WRITE bandwidth of one droce path and size: (median of the
    per-round ratios, min, max, rounds) or None.  The two rows ran in the same
    round, minutes apart at most, so a round's ratio cancels slow load changes
    that the ratio of two medians keeps."""
    rr = data.runs("droce", lab, "bw_read", s, window)
    rw = data.runs("droce", lab, "bw_write", s, window)
    xs = [rr[r] / rw[r] for r in rr if r in rw and rw[r]]
    if not xs:
        return None
    return statistics.median(xs), min(xs), max(xs), len(xs)


def table_read_write(data, window=64):
    """Issue 13 point 2: RDMA READ >= 0.9x RDMA WRITE at every size, per path."""
    labs = [dl for dl, _, _ in PAIRS if data.sizes("bw_read", [dl])]
    if not labs:
        return []
    L = ["### RDMA READ / RDMA WRITE bandwidth (same path, same round)\n",
         "Median [min–max] of the per-round ratios READ/WRITE (window %d); issue 13 asks "
         ">= %.1f× at every size on each path. Bold: below it. The two ran in one session, "
         "in alternating slices of T/5 (`droce-bench -A 5`), so each ratio compares the "
         "same phases of the host.\n" % (window, READ_WRITE_BOUND),
         "| size | " + " | ".join(COL_NAME[("droce", dl)] for dl in labs) + " |",
         "|---:|" + "---:|" * len(labs)]
    low = {dl: [] for dl in labs}
    for s in data.sizes("bw_read", labs):
        row = ["| %s" % hsize(s)]
        for dl in labs:
            st = read_write(data, dl, s, window)
            if not st:
                row.append("–")
                continue
            med, lo, hi, n = st
            txt = "%.2f× [%.2f–%.2f]%s" % (med, lo, hi, "" if n >= 5 else " (n=%d)" % n)
            if med < READ_WRITE_BOUND:
                txt = "**%s**" % txt
                low[dl].append(hsize(s))
            row.append(txt)
        L.append(" | ".join(row) + " |")
    L.append("")
    for dl in labs:
        L.append("- %s: %s" % (COL_NAME[("droce", dl)],
                              "met at every size" if not low[dl] else
                              "below %.1f× at %s" % (READ_WRITE_BOUND, ", ".join(low[dl]))))
    L.append("")
    return L


LIMITS = {
    "lat": "in memif's copy mode both PMDs copy every frame and a half trip is ≈ 430 ns of "
           "memif (the ring update takes ≈ 300 ns to reach the other core) plus ≈ 450 ns of "
           "droce (post and build, parse, ICRC, responder, CQ; ≈ 7,300 instructions per "
           "round trip on the client, no single hot spot, PROFILE.md §0). With the client "
           "in memif's zero-copy mode one copy a direction goes (the zero-copy row: about "
           "0.1 us less).",
    "rate": "≈ 1,000–1,500 instructions per 8-byte message and side remain (parse, build, "
            "ICRC, the memif PMD, the CQ); in zero-copy mode each locked instruction after a "
            "send also waits for the cache lines the peer just read (PROFILE.md §0).",
    "bw": "the copies, which memif fixes: in copy mode the sender's PMD copies every frame "
          "into the shared ring, the receiver's PMD copies it out and droce copies the "
          "payload into place — three copies of every byte where tcp over loopback makes "
          "two (user → skb → user), besides an ICRC pass on each side (≈ 100 GB/s with "
          "VPCLMULQDQ, no longer a limit). The zero-copy client saves its own side's copy but "
          "then builds its frames in memory the peer reads from the other core, and the "
          "server's PMD still copies (DPDK 22.11 memif has no zero-copy server). ≥ 1.5× "
          "tcp would need fewer copies than tcp makes, i.e. the payload placed straight "
          "from one process's memory into the other's, which no memif mode does; placing "
          "data before its ICRC is checked is forbidden (a frame with a bad ICRC must have "
          "no effect).",
    "klat": "a kernel interface costs system calls per burst on both sides (af_packet: one "
            "sendto() per burst, the receive ring read without one; af_xdp: a sendto() per "
            "burst to kick the XDP socket's copy-mode transmit) and the veth's softirq; "
            "PROFILE.md, kernel PMDs.",
    "kpp": "every frame is copied by the kernel twice (into the skb or umem chunk, out of it "
           "at the peer) and by droce once, at one frame per path MTU (1024 B at MTU 1500, "
           "2048 with af_xdp, 4096 at MTU 9000) where tcp moves 64 KiB GSO super-frames "
           "through the veth; frames the peer's ring could not take cost a go-back-N resend "
           "(the retransmission columns); PROFILE.md, kernel PMDs.",
    "kbw": "as for the 1 MiB ping-pong: per-frame kernel copies and system calls at the path "
           "MTU against tcp's 64 KiB super-frames, and resends after frames a full ring "
           "dropped.",
    "glat": "one sendmmsg() per burst on the sender, in which the veth's softirq also "
            "delivers the frame to the peer's ring (read without a system call); no super-frame "
            "at 8 bytes; PROFILE.md, kernel PMDs.",
    "gpp": "the sender's work per packet (building it, its ICRC, two mbufs) on top of the "
           "kernel's copy into the skb, where tcp has only the copy; super-frames of 51 "
           "packets on average (message starts and ends cut runs; 62 at most at MTU 1500, 15 "
           "at MTU 9000); the receiver places each packet with a copy of its own after the "
           "kernel's; PROFILE.md, \"UDP GSO on the zero-config path\".",
    "gbw": "as for the 1 MiB ping-pong: the sender's CPU (perf: half of it in the kernel, a "
           "quarter of that the copy into the skb; the rest building packets).",
    "loss": "go-back-N resends what was in flight after each loss, and a lost tail packet, "
            "NAK or ACK costs one adaptive timeout (PROFILE.md §0, §4).",
}


def pingpong_md(rows):
    """bench/pingpong-spread.sh: back-to-back stock fi_pingpong runs over the veth."""
    vals = [float(r["usec_per_xfer"]) for r in rows if r["usec_per_xfer"] != "NA"]
    L = ["## %d back-to-back fi_pingpong runs over the veth\n" % len(rows),
         "`fi_pingpong -p droce -e msg -S 8 -I 20000` between two namespaces, droce's "
         "zero-config path (bench/pingpong-spread.sh). Target: none slower than 2× the "
         "median (a run that loses frames waits for retransmit timers).\n"]
    if not vals:
        return L + ["No run completed.\n"]
    med = statistics.median(vals)
    over = [v for v in vals if v > 2 * med]
    L.append("usec/xfer per run: " + ", ".join("%.2f" % v for v in vals) + ".\n")
    L.append("Median %.2f µs, max %.2f µs (max/median %.2f); runs slower than 2× the "
             "median: %d; failed runs: %d — %s.\n" % (
                 med, max(vals), max(vals) / med, len(over), len(rows) - len(vals),
                 "MET" if not over and len(vals) == len(rows) else "NOT MET"))
    return L


def counters_md(data):
    """Every droce row's retransmissions and drops, as droce counted them."""
    L = ["## Retransmissions and drops droce counted\n",
         "For every droce measurement: packets its requesters resent, retransmit timeouts, "
         "and frames lost (the port could not send them: ring and backlog full, no buffer; "
         "on packet: ports, the kernel dropped them on receiving: ring or socket queue "
         "full, or no buffer to take them; "
         "or the responder discarded one because an earlier one never arrived), both "
         "sides, read through FI_DROCE_OPS_1 and summed over the rounds (warm-up included). "
         "On a lossless path (memif, the direct veth, loss 0) every figure should be 0: a "
         "non-zero one is shown **bold**. Resends with no frame lost are spurious timeouts: "
         "a process off its CPU longer than the retransmit timeout (see the scheduling "
         "table). RNR NAKs (a receiver with no receive posted) and the frames held behind "
         "them (resent after the RNR wait, not lost) are flow control, not loss; "
         "droce-bench's receive credits keep its SEND tests from provoking them.\n",
         "| path | test | size | window | resent | timeouts | lost | RNR NAKs | held | rounds |",
         "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for k in sorted(data.cnt, key=lambda k: (k[1], k[2], k[4], k[3])):
        c = data.cnt[k]
        lossless = not k[1].startswith("loss") or k[1] == "loss0"
        f = [("**%d**" % x) if (x and lossless) else str(x) for x in c[:5]]
        L.append("| %s | %s | %s | %d | %s | %s | %s | %s | %s | %d |" % (
            k[1], k[2], hsize(k[3]), k[4], f[0], f[1], f[2], f[3], f[4], c[5]))
    L.append("")
    return L


def verdict_notes(data):
    """What each target needs, from the medians: the "by how much" of the issue."""
    out = ["### Where each target stands\n"]
    for name, key, dk, tk, op, bound, unit in TARGETS:
        d, t = data.stat("droce", *dk), data.stat("tcp", *tk)
        rt = ratio(data, ("droce",) + dk, ("tcp",) + tk)
        if not (d and t and rt):
            out.append("- **%s**: no data in this run. %s" % (name, LIMITS[key]))
            continue
        r = rt[0]
        if op == "<=":
            ok = r <= bound
            need = "droce %s %s vs tcp %s %s = %.2f×; the bound %s %.2f× needs droce at ≤ %s %s, " \
                   "%.1f× faster than now" % (fmt(d[0], unit), unit, fmt(t[0], unit), unit, r,
                                              op, bound, fmt(t[0] * bound, unit), unit,
                                              r / bound)
        else:
            ok = r >= bound
            need = "droce %s %s vs tcp %s %s = %.2f×; the bound %s %.1f× needs droce at ≥ %s %s, " \
                   "%.1f× more than now" % (fmt(d[0], unit), unit, fmt(t[0], unit), unit, r,
                                            op, bound, fmt(t[0] * bound, unit), unit,
                                            bound / r if r else float("inf"))
        if ok:
            need = "droce %s %s vs tcp %s %s = %.2f× (bound %s %g×)" % (
                fmt(d[0], unit), unit, fmt(t[0], unit), unit, r, op, bound)
        # d = (median, min, max, n): droce's rounds more than 2x apart ran
        # in different phases of the host, not on a different droce
        phases = ""
        if d[1] and d[2] / d[1] > 2 and rt[1] is not None:
            low = d[0] - d[1] < d[2] - d[0]  # the median sits with the low values
            phases = (" Its rounds span %s–%s %s (%.1f×) and the per-round ratios %s–%s×: "
                      "the host ran in phases (PROFILE.md, \"READ and WRITE measured in "
                      "alternating slices\"), and the median is from the %s one." % (
                          fmt(d[1], unit), fmt(d[2], unit), unit, d[2] / d[1], rfmt(rt[1]),
                          rfmt(rt[2]), "faster" if low == (unit == "us") else "slower"))
        out.append("- **%s — %s.** %s.%s %s" % (name, "met" if ok else "not met", need, phases,
                                                "" if ok else "Limited by: " + LIMITS[key]))
    name, l1, l0, rt, op, bound = loss_headline(data)
    if l1 and l0 and rt:
        ok = rt[0] >= bound
        out.append("- **%s — %s.** droce keeps %.0f %% of its lossless %s MB/s at 1 %% loss "
                   "(bound ≥ %.0f %%)%s. %s" % (
                       name, "met" if ok else "not met", 100 * rt[0], fmt(l0[0], "MB/s"),
                       100 * bound,
                       "" if l1[3] >= 5 else " — from %d of the rounds; the others failed" % l1[3],
                       "" if ok else "Limited by: " + LIMITS["loss"]))
    else:
        out.append("- **%s**: no figure (every lossy droce session failed). %s"
                   % (name, LIMITS["loss"]))
    out.append("")
    return out


def results_md(data, machine, failures, drops, outdir, pngs, profile, pingpong=None):
    m = dict(l.split("=", 1) for l in machine if "=" in l and not l.startswith("load"))
    loads = [l for l in machine if l.startswith("load")]
    L = []
    L.append("# droce benchmarks — droce against libfabric's tcp provider\n")
    L.append("Written by `bench/run.sh` (do not edit by hand; rerun it). Every figure is the "
             "median of %s rounds with [min–max]; in each round droce and tcp ran back to back "
             "on the same transport, their order swapped every other round. Raw measurements: "
             "[results.csv](results.csv) (columns: run, config, then `droce-bench -H`).\n"
             % m.get("runs", "?"))
    L.append("## Machine and conditions\n")
    L.append("| | |\n|---|---|")
    for k, name in (("cpu", "CPU"), ("cores", "cores"), ("kernel", "kernel"),
                    ("libfabric", "libfabric"), ("dpdk", "DPDK"), ("commit", "droce commit"),
                    ("date", "date"), ("pinning", "pinning"), ("secs", "timed phase per figure (s)"),
                    ("elapsed", "suite wall time")):
        if k in m:
            L.append("| %s | %s |" % (name, m[k]))
    L.append("")
    L.append("Load while the suite ran (1/5/15-minute load average and the busiest other "
             "processes). The machine is shared (other engineers' builds and tests, a qemu "
             "guest): figures taken under load are noisy and latency tails are scheduler "
             "effects; the per-round ratios are the fairer comparison.\n")
    L.append("```")
    L.extend(loads)
    L.append("```\n")
    L.append("Transports: **same host** — droce over `net_memif` between two processes "
             "(192.0.2.1/2 inside DPDK) against tcp over loopback, in two memif modes: "
             "*memif* (copy mode on both sides: each side's PMD copies every frame into or "
             "out of the shared ring) and *memif zero-copy* (the benchmark client is memif's "
             "zero-copy client, `zero-copy=yes` with EAL `--single-file-segments`: its frames "
             "are built in, and received into, the shared memory, so only the server's PMD "
             "copies); **veth** — droce's zero-config path (no FI_DROCE_* set: its own "
             "packet socket, `packet:IF`, sending UDP GSO super-frames to a peer that takes "
             "them) and, as *af_packet*, DPDK's `net_af_packet` (one frame per packet), "
             "against tcp, all on one veth pair between two network "
             "namespaces (10.79.0.1/2, MTU 1500, default offloads). **Loss** — droce on "
             "`net_af_packet`, on a second veth "
             "path through a bridge in a third namespace (10.79.0.3 ↔ bridge ↔ 10.79.0.4, "
             "segmentation offloads off so a drop is one MTU-sized frame for tcp too), "
             "frames dropped at random on the bridge ports (`%s`). The loss cannot be applied "
             "on the end points themselves for droce: an ingress hook runs after AF_PACKET's "
             "tap has seen the frame, and a transmit dropped by an egress hook is retried by "
             "the kernel's AF_PACKET TX ring. The out-of-band control channel is a separate "
             "TCP connection. Server pinned to CPU 0, client to CPU 1.\n"
             % {"nft": "nftables numgen random drop: this kernel has no sch_netem",
                "netem": "tc netem loss"}.get(m.get("lossmethod", ""), m.get("lossmethod", "?")))
    L.append("Method (`bench/droce-bench`): half RTT = ping-pong time / 2 / iterations "
             "(send/recv, or RDMA write with the peer polling the last byte); bandwidth and "
             "rates keep a window of operations in flight and are timed from the first post "
             "to the echo of a marker message sent after the last completion (so a provider "
             "that completes early is timed to delivery); RDMA write and RDMA read of one size "
             "in five alternating slices of T/5 each (`-A 5`); warm-up (T/5) excluded; small "
             "messages go inline (fi_inject / fi_inject_write) up to each provider's "
             "inject_size. FETCH_ADD checks that the target ends with exactly the number of "
             "increments.\n")

    L.append("## Targets (issue 7)\n")
    L.append("| target | droce | tcp / reference | ratio | bound | verdict |")
    L.append("|---|---:|---:|---:|---:|---|")
    for name, d, t, rt, op, bound, unit in headline(data):
        L.append("| %s | %s %s | %s %s | %s | %s %s | %s |" % (
            name, cell(d, unit), unit, cell(t, unit), unit, rcell(rt), op, bound,
            verdict(op, rt[0] if rt else None, bound)))
    name, l1, l0, rt, op, bound = loss_headline(data)
    L.append("| %s | %s MB/s | %s MB/s (lossless) | %s | %s %s | %s |" % (
        name, cell(l1, "MB/s"), cell(l0, "MB/s"), rcell(rt), op, bound,
        verdict(op, rt[0] if rt else None, bound)))
    L.append("")
    L.append("(The first six compare droce over net_memif, in memif's copy mode and with the "
             "client in its zero-copy mode, with tcp over loopback; the veth pairs are in the "
             "tables below.)\n")
    L.extend(verdict_notes(data))

    if pngs:
        L.append("## Plots\n")
        for p in pngs:
            L.append("![%s](plots/%s)\n" % (p[:-4], p))

    L.append("## Latency (half round trip, µs; lower is better)\n")
    L.extend(table_pair(data, "lat_send", 1, "us", "send/recv ping-pong", "lower is better"))
    L.extend(table_pair(data, "lat_write", 1, "us", "RDMA write ping-pong (poll on last byte)",
                        "lower is better"))
    L.append("## Bandwidth (MB/s = 10^6 B/s, one direction, window 64; higher is better)\n")
    for t, title in (("bw_write", "RDMA write"), ("bw_read", "RDMA read"),
                     ("bw_send", "send/recv")):
        L.extend(table_pair(data, t, 64, "MB/s", title, "higher is better"))
    L.extend(table_read_write(data))
    L.append("## Message rate (messages/s, window 64; higher is better)\n")
    L.extend(table_pair(data, "rate_send", 64, "msg/s", "send/recv", "higher is better"))
    L.extend(table_pair(data, "rate_write", 64, "msg/s", "RDMA write", "higher is better"))
    L.append("## Atomics (FETCH_ADD on a remote uint64, operations/s)\n")
    L.append("tcp has no atomics (libfabric 1.17), so there is no ratio.\n")
    L.append("| window | droce memif | droce memif zero-copy | droce veth | tcp |")
    L.append("|---:|---:|---:|---:|---|")
    for w in data.windows("atomic_fadd"):
        cs = []
        for lab in ("memif", "memifzc", "veth"):
            a = ("droce", lab, "atomic_fadd", 8, w)
            cs.append(cell(data.stat(*a), "ops/s", data.status(*a)))
        t = data.status("tcp", "lo", "atomic_fadd", 8, w) or "–"
        L.append("| %d | %s | %s | %s | %s |" % (w, cs[0], cs[1], cs[2], t))
    L.append("")

    loss_rows = sorted({(float(k[1][4:]), k[1]) for k in list(data.v) + list(data.bad)
                        if k[1].startswith("loss")})
    if loss_rows:
        L.append("## Goodput of 1 MiB RDMA writes under loss (bridged veth path, both directions)\n")
        L.append("Window 64; relative to the same provider's lossless figure (loss rule installed "
                 "with p = 0) on the same path in the same rounds. Dropped = frames dropped "
                 "during that provider's runs (all rounds), showing the loss hit its traffic.\n")
        L.append("| loss | droce MB/s | droce / lossless | tcp MB/s | tcp / lossless | "
                 "droce / tcp | dropped (droce, tcp) | droce resent / timeouts |")
        L.append("|---:|---:|---:|---:|---:|---:|---:|---:|")
        dsum = defaultdict(int)
        for r in drops:
            dsum[(r[1], float(r[2]))] += int(r[3])
        for pct, lab in loss_rows:
            d = ("droce", lab, "bw_write", 1 << 20, 64)
            t = ("tcp", lab, "bw_write", 1 << 20, 64)
            d0 = ("droce", "loss0", "bw_write", 1 << 20, 64)
            t0 = ("tcp", "loss0", "bw_write", 1 << 20, 64)
            rd, rt_ = ratio(data, d, d0), ratio(data, t, t0)
            c = data.cnt.get(d)
            L.append("| %g %% | %s | %s | %s | %s | %s | %d, %d | %s |" % (
                pct, cell(data.stat(*d), "MB/s", data.status(*d)),
                ("%.0f %%" % (100 * rd[0])) if rd else "–",
                cell(data.stat(*t), "MB/s", data.status(*t)),
                ("%.0f %%" % (100 * rt_[0])) if rt_ else "–",
                rcell(ratio(data, d, t)), dsum[("droce", pct)], dsum[("tcp", pct)],
                ("%d / %d" % (c[0], c[1])) if c else "–"))
        L.append("")

    if data.cnt:
        L.extend(counters_md(data))
    if pingpong:
        L.extend(pingpong_md(pingpong))

    L.append("## CPU and scheduling\n")
    L.append("Per measurement, droce-bench records its CPU time (user, sys) and the share of the "
             "timed phase each process spent *runnable but waiting for a CPU* (schedstat run "
             "delay): 0 on an idle machine, large when other processes took the core. A "
             "polling process (droce) has CPU ≈ 1.00 − wait; tcp's work is largely kernel time. "
             "Medians over rounds.\n")
    L.append("| measurement | droce CPU (user, sys) | droce wait client / server | "
             "tcp CPU (user, sys) | tcp wait client / server |")
    L.append("|---|---:|---:|---:|---:|")
    for test, s_, w, dl, tl in (("lat_send", 8, 1, "memif", "lo"),
                                ("lat_send", 8, 1, "memifzc", "lo"),
                                ("rate_send", 8, 64, "memif", "lo"),
                                ("rate_send", 8, 64, "memifzc", "lo"),
                                ("bw_write", 1 << 20, 64, "memif", "lo"),
                                ("bw_send", 1 << 20, 64, "memif", "lo"),
                                ("lat_send", 8, 1, "veth", "veth"),
                                ("bw_write", 1 << 20, 64, "veth", "veth")):
        cells = []
        for prov, lab in (("droce", dl), ("tcp", tl)):
            c = data.cpu.get((prov, lab, test, s_, w))
            q = data.sched.get((prov, lab, test, s_, w))
            if c:
                u = statistics.median(x[0] for x in c.values())
                y = statistics.median(x[1] for x in c.values())
                cells.append("%.2f (%.2f, %.2f)" % (u + y, u, y))
            else:
                cells.append("–")
            if q:
                cells.append("%.0f %% / %.0f %%" % (100 * statistics.median(x[0] for x in q.values()),
                                                  100 * statistics.median(x[1] for x in q.values())))
            else:
                cells.append("–")
        L.append("| %s %s (%s) | %s | %s | %s | %s |" % (test, hsize(s_), dl, *cells))
    allq = [x for k, v in data.sched.items() for x in v.values()]
    if allq:
        L.append("")
        L.append("Over all %d measurements: median wait %.0f %% (client) / %.0f %% (server), "
                 "90th percentile %.0f %% / %.0f %%.\n" % (
                     len(allq), 100 * statistics.median(x[0] for x in allq),
                     100 * statistics.median(x[1] for x in allq),
                     100 * sorted(x[0] for x in allq)[int(0.9 * (len(allq) - 1))],
                     100 * sorted(x[1] for x in allq)[int(0.9 * (len(allq) - 1))]))
    L.append("")

    sessions = [l for l in failures if l.startswith("round ")]
    if sessions:
        L.append("## Sessions that failed in this run\n")
        L.append("A session is one server/client pair running a group of tests; when its "
                 "connection fails, the rest of that group is missing from that round (the "
                 "\"n=\" beside a figure). Full messages: "
                 "[results-failures.txt](results-failures.txt).\n")
        errs = defaultdict(int)
        where = defaultdict(list)
        cur = None
        for l in failures:
            if l.startswith("round "):
                if cur:
                    errs["(no client message)"] += 1
                    where["(no client message)"].append(cur)
                cur = l.split(":")[0][len("round "):]
            elif cur and "droce-bench[client]" in l or (cur and "client droce]" in l):
                msg = l.split("]: ", 1)[-1]
                errs[msg] += 1
                where[msg].append(cur)
                cur = None
        L.append("| client error | sessions | where (round transport provider label) |")
        L.append("|---|---:|---|")
        for msg, n in sorted(errs.items(), key=lambda x: -x[1]):
            L.append("| %s | %d | %s |" % (msg, n, "; ".join(where[msg])))
        L.append("")
    bad = sorted({(k, s) for k, v in data.bad.items() for _, s in v if s != "unsupported"})
    if bad:
        L.append("Measurements that did not complete (status per provider/transport/test/size):\n")
        for k, s in bad:
            L.append("- %s %s %s %s w=%d: %s" % (k[0], k[1], k[2], hsize(k[3]), k[4], s))
        L.append("")

    if profile and os.path.exists(profile):
        txt = open(profile).read()
        for tag, title in (("summary", "What the profile showed"),
                           ("changes", "What was changed, with before/after figures")):
            a = txt.find("<!-- %s -->" % tag)
            b = txt.find("<!-- /%s -->" % tag)
            if a >= 0 and b > a:
                L.append("## %s\n" % title)
                L.append(txt[a + len("<!-- %s -->" % tag):b].strip() + "\n")
        L.append("Details, call graphs and suggestions: [PROFILE.md](PROFILE.md).\n")

    L.append("## Reproduce\n")
    L.append("```sh\nsudo bench/run.sh            # this file, plots/, results.csv "
             "(builds out of tree when needed)\nmake bench                   # quick mode "
             "(< 2 min): the headline ratios\n```\n")
    with open(os.path.join(outdir, "RESULTS.md"), "w") as f:
        f.write("\n".join(L))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--raw", required=True)
    ap.add_argument("--machine")
    ap.add_argument("--failures")
    ap.add_argument("--drops")
    ap.add_argument("--pingpong")
    ap.add_argument("--out")
    ap.add_argument("--profile")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    data = Data(load(a.raw))
    machine = open(a.machine).read().splitlines() if a.machine else []
    failures = (open(a.failures).read().splitlines()
                if a.failures and os.path.exists(a.failures) else [])
    drops = []
    if a.drops and os.path.exists(a.drops):
        drops = [r for r in csv.reader(open(a.drops)) if len(r) == 4]
    if a.quick:
        print_quick(data, machine, failures)
        return
    loss_rows = sorted({(float(k[1][4:]), k[1]) for k in list(data.v) + list(data.bad)
                        if k[1].startswith("loss")})
    pngs = plot(data, a.out, loss_rows)
    pingpong = (list(csv.DictReader(open(a.pingpong)))
                if a.pingpong and os.path.exists(a.pingpong) else None)
    results_md(data, machine, failures, drops, a.out, pngs, a.profile, pingpong)


if __name__ == "__main__":
    main()
