"""Per-kernel times of `sampling_bench` under Nsight Compute (`ncu --metrics
gpu__time_duration.sum --csv --print-units base --kernel-name regex:sample_`), by sampling mode:
the bench replays, for each mode, the multi-block graph (16 draws of sample_max, sample_part,
sample_pick) and the single-block one (16 of `sample_<dtype>`) twice (--rounds 1); the last
4 x MODES runs of one kind are the modes' replays, in the bench's order.

    python3 bench/ncu_sampler.py FILE.csv [MODES]
"""
import collections
import csv
import sys

path = sys.argv[1]
modes = int(sys.argv[2]) if len(sys.argv) > 2 else 5
names = ["greedy", "T0.8 top-k 50 top-p 0.95", "T1.0", "T0.8 top-k 50", "T1.0 top-p 0.9"]
rows = list(csv.reader(line for line in open(path) if line.startswith('"')))
head = rows[0]
name, value = head.index("Kernel Name"), head.index("Metric Value")
launches = [(r[name].split("(")[0], float(r[value].replace(",", ""))) for r in rows[1:]]
multi = lambda k: k.startswith(("sample_max", "sample_part", "sample_pick"))
runs = []
for k, ns in launches:
    kind = multi(k)
    if not runs or runs[-1][0] != kind:
        runs.append((kind, []))
    runs[-1][1].append((k, ns))
runs = runs[-4 * modes:]
for m in range(modes):
    sums = collections.defaultdict(float)
    draws = collections.defaultdict(int)
    for kind, ks in runs[4 * m: 4 * m + 4]:
        for k, ns in ks:
            sums[k] += ns
            draws[k] += 1
    parts = ", ".join(f"{k} {sums[k] / draws[k] / 1e3:.2f}" for k in sorted(sums))
    multi_sum = sum(sums[k] / draws[k] for k in sums if multi(k)) / 1e3
    print(f"{names[m] if m < len(names) else m}: multi {multi_sum:.2f} us a draw ({parts})")
