#!/usr/bin/env python3
"""The peer column of `examples/nccl_bench.rs`: PyTorch's torch.distributed all-reduce (NCCL)
on two GPUs, eager and inside a CUDA graph, measured the same way.

Each iteration is one all-reduce (f32, sum) and a synchronize; the per-iteration host time
(time.perf_counter) is taken on rank 0, after 20 warm-up iterations; the median and the
10th/90th percentiles are printed. PyTorch runs one rank per process (torchrun), where the
Rust benchmark drives both GPUs from one process; both use the same GPUs and NCCL library.

Usage: torchrun --nproc-per-node 2 bench/torch_nccl_allreduce.py [ITERS]
"""

import os
import sys
import time

import torch
import torch.distributed as dist

SIZES = [4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20]


def pct(v):
    v = sorted(v)
    at = lambda p: v[round((len(v) - 1) * p)]
    return at(0.5), at(0.1), at(0.9)


def main():
    iters = int(sys.argv[1]) if len(sys.argv) > 1 else 500
    rank = int(os.environ["RANK"])
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", device_id=torch.device("cuda", rank))
    if rank == 0:
        print(f"torch {torch.__version__}, NCCL {'.'.join(map(str, torch.cuda.nccl.version()))}, {torch.cuda.get_device_name(0)} x{dist.get_world_size()}")
        print(f"all_reduce f32 (sum), {iters} iterations; us per iteration: median [p10, p90]")
        print(f"{'bytes':>10} {'eager':>26} {'graph replay':>26} {'speed-up':>8}")
    for nbytes in SIZES:
        x = torch.ones(nbytes // 4, device="cuda")
        eager = []
        for i in range(iters + 20):
            t = time.perf_counter()
            dist.all_reduce(x)
            torch.cuda.synchronize()
            if i >= 20:
                eager.append((time.perf_counter() - t) * 1e6)
        # Warm-up on a side stream, as torch.cuda.graph's documentation asks, then capture.
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                dist.all_reduce(x)
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            dist.all_reduce(x)
        torch.cuda.synchronize()
        replay = []
        for i in range(iters + 20):
            t = time.perf_counter()
            g.replay()
            torch.cuda.synchronize()
            if i >= 20:
                replay.append((time.perf_counter() - t) * 1e6)
        if rank == 0:
            e, e10, e90 = pct(eager)
            r, r10, r90 = pct(replay)
            print(f"{nbytes:>10} {f'{e:.1f} [{e10:.1f}, {e90:.1f}]':>26} {f'{r:.1f} [{r10:.1f}, {r90:.1f}]':>26} {e / r:>7.2f}x")
        del g
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
