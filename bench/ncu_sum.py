"""Sums an Nsight Compute CSV (`ncu --metrics gpu__time_duration.sum --csv --print-units base`)
per kernel name, from the first launch whose name starts with FROM (default: every launch),
minus BEFORE launches (to take in the kernels just ahead of it), to the first launch after it
whose name starts with UNTIL and the launches of that name right after it (default: the last);
with NTH, the NTH such window (each window's search starts past the one before):

    python3 bench/ncu_sum.py run189-ncu.csv [FROM [BEFORE [UNTIL [NTH]]]]
"""
import collections
import csv
import sys

path = sys.argv[1]
first = sys.argv[2] if len(sys.argv) > 2 else ""
before = int(sys.argv[3]) if len(sys.argv) > 3 else 0
until = sys.argv[4] if len(sys.argv) > 4 else None
nth = int(sys.argv[5]) if len(sys.argv) > 5 else 1
rows = list(csv.reader(line for line in open(path) if line.startswith('"')))
head = rows[0]
name, value, ident = head.index("Kernel Name"), head.index("Metric Value"), head.index("ID")
launches = [(int(r[ident]), r[name].split("(")[0], float(r[value].replace(",", ""))) for r in rows[1:]]
end, at = len(launches) - 1, 0
for _ in range(nth):
    found = next(i for i in range(at, len(launches)) if launches[i][1].startswith(first))
    end = len(launches) - 1
    if until:
        end = next((i for i in range(found, len(launches)) if launches[i][1].startswith(until)), end)
        while end + 1 < len(launches) and launches[end + 1][1] == launches[end][1]:
            end += 1
    at = end + 1
start = max(0, found - before)
launches = launches[: end + 1]
sums = collections.defaultdict(lambda: [0, 0.0])
for _, kernel, ns in launches[start:]:
    sums[kernel][0] += 1
    sums[kernel][1] += ns
total = sum(ns for _, ns in sums.values())
print(f"launches {launches[start][0]}-{launches[-1][0]}: {len(launches) - start} kernels, {total / 1e6:.2f} ms")
for kernel, (count, ns) in sorted(sums.items(), key=lambda kv: -kv[1][1]):
    print(f"{ns / 1e6:9.3f} ms {100 * ns / total:5.1f}% {count:6d} {kernel}")
