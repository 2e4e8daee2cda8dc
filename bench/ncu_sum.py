"""Sums an Nsight Compute CSV (`ncu --metrics gpu__time_duration.sum --csv --print-units base`)
per kernel name, from the first launch whose name starts with FROM (default: every launch),
minus BEFORE launches (to take in the kernels just ahead of it), to the first launch after it
whose name starts with UNTIL (default: the last):

    python3 bench/ncu_sum.py run189-ncu.csv [FROM [BEFORE [UNTIL]]]
"""
import collections
import csv
import sys

path = sys.argv[1]
first = sys.argv[2] if len(sys.argv) > 2 else ""
before = int(sys.argv[3]) if len(sys.argv) > 3 else 0
until = sys.argv[4] if len(sys.argv) > 4 else None
rows = list(csv.reader(line for line in open(path) if line.startswith('"')))
head = rows[0]
name, value, ident = head.index("Kernel Name"), head.index("Metric Value"), head.index("ID")
launches = [(int(r[ident]), r[name].split("(")[0], float(r[value].replace(",", ""))) for r in rows[1:]]
start = max(0, next(i for i, l in enumerate(launches) if l[1].startswith(first)) - before)
if until:
    end = next((i for i in range(start, len(launches)) if launches[i][1].startswith(until)), len(launches) - 1)
    launches = launches[: end + 1]
sums = collections.defaultdict(lambda: [0, 0.0])
for _, kernel, ns in launches[start:]:
    sums[kernel][0] += 1
    sums[kernel][1] += ns
total = sum(ns for _, ns in sums.values())
print(f"launches {launches[start][0]}-{launches[-1][0]}: {len(launches) - start} kernels, {total / 1e6:.2f} ms")
for kernel, (count, ns) in sorted(sums.items(), key=lambda kv: -kv[1][1]):
    print(f"{ns / 1e6:9.3f} ms {100 * ns / total:5.1f}% {count:6d} {kernel}")
