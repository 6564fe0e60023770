#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Per-function self cost and call counts from a callgrind output file.

usage: cgcalls.py FILE [DIV [N]]
Prints the N functions with the largest self cost (instructions), how often
they were called, and both divided by DIV (e.g. the number of messages of
the run, to read "instructions per message" and "calls per message").
callgrind_annotate shows inclusive and self costs but not call counts; the
call counts are what separate per-poll from per-packet costs.
"""
import collections
import re
import sys


def main():
    path = sys.argv[1]
    div = float(sys.argv[2]) if len(sys.argv) > 2 else 1.0
    top = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    names = {}
    calls = collections.Counter()
    selfc = collections.Counter()
    cur = cfn = None
    pending = None

    def name(s):
        m = re.match(r"\((\d+)\)(?: (.*))?", s)
        if not m:
            return s
        if m.group(2):
            names[m.group(1)] = m.group(2)
        return names.get(m.group(1), s)

    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("fn="):
                cur = name(line[3:])
            elif line.startswith("cfn="):
                cfn = name(line[4:])
            elif line.startswith("calls="):
                pending = int(line[6:].split()[0])
            elif line and (line[0].isdigit() or line[0] in "+-*"):
                parts = line.split()
                if len(parts) < 2:
                    continue
                if pending is not None:
                    calls[cfn] += pending  # the next cost line is the call's inclusive cost
                    pending = None
                else:
                    selfc[cur] += int(parts[1])
    total = sum(selfc.values())
    print("total %d instructions (%.1f per DIV)" % (total, total / div))
    print("%12s %6s %10s %9s %11s  %s" % ("self", "%", "calls", "calls/DIV", "self/DIV",
                                          "function"))
    for f, s in selfc.most_common(top):
        print("%12d %5.1f%% %10d %9.2f %11.1f  %s" % (s, 100.0 * s / total, calls[f],
                                                     calls[f] / div, s / div, f))


if __name__ == "__main__":
    main()
