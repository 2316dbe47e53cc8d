#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
# Sum pcprof.c's counts per function: pcprof-sym.py System.map FILE [TOP]
import bisect, sys, collections
syms = []
for line in open(sys.argv[1]):
    a, t, n = line.split()[:3]
    if t in 'tTwW':
        syms.append((int(a, 16), n))
syms.sort()
addrs = [a for a, _ in syms]
tot = collections.Counter()
for line in open(sys.argv[2]):
    va, n, c = line.split()
    va = int(va, 16); n = int(n); c = int(c)
    i = bisect.bisect_right(addrs, va) - 1
    name = syms[i][1] if i >= 0 else '?'
    tot[name] += n * c
allc = sum(tot.values())
print("total kernel insns %.3g" % allc)
for name, v in tot.most_common(int(sys.argv[3]) if len(sys.argv) > 3 else 60):
    print("%6.2f%% %14d %s" % (100.0 * v / allc, v, name))
