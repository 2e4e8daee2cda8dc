#!/usr/bin/env bash
# Issue #10 on two GPUs: the rank-per-process absent-peer test repeated, with a build from
# before the abort fix (.device/old/rank_per_process, if staged) and the current one, then
# the whole suite with two GPUs required. Logs in $OUT.
set -u
export NCCL_NVLS_ENABLE=0 CAPTURE_REQUIRE_GPUS=2 CAPTURE_REQUIRE_GPU=1 RUST_BACKTRACE=1
nccldir=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
mkdir -p /tmp/ncclib && ln -sf $nccldir/libnccl.so.2 /tmp/ncclib/libnccl.so
export LD_LIBRARY_PATH=/tmp/ncclib:$nccldir:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod +x .device/tests/* .device/old/* 2>/dev/null
new=$(ls .device/tests/rank_per_process-* | head -1)
for i in $(seq 1 "${REPS:-6}"); do
  for which in old new; do
    b=$new; [ $which = old ] && b=.device/old/rank_per_process
    [ -x "$b" ] || continue
    timeout 120 "$b" gpu_absent_peer_one_rank_per_process --exact --include-ignored --test-threads=1 > "$OUT/absent-$which-$i.txt" 2>&1
    echo "$which $i rc=$? $(grep -ohE 'SIGSEGV|ncclCommAbort threads still running|test result: [a-zA-Z]+' "$OUT/absent-$which-$i.txt" | sort | uniq -c | tr '\n' ' ')"
  done
done
bash scripts/gpu_validate.sh suite > /dev/null 2>&1; echo "suite rc=$?"; tail -1 "$OUT/suite.log"; grep -E "^FAILED" "$OUT/suite.log"
