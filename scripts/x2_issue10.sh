#!/usr/bin/env bash
# Issue #10 on two GPUs (the device tool's nvidia-h200-x2): the collective and
# rank-per-process tests with both GPUs required, the whole suite, the outside-capture probe
# on two GPUs, the all-reduce benchmark (one process, a rank per process, PyTorch) alternated
# three times, and the tensor-parallel example. Staged binaries in .device/ (see README).
set -u
export NCCL_NVLS_ENABLE=0 CAPTURE_REQUIRE_GPUS=2
nccldir=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
mkdir -p /tmp/ncclib && ln -sf $nccldir/libnccl.so.2 /tmp/ncclib/libnccl.so
export LD_LIBRARY_PATH=/tmp/ncclib:$nccldir:/usr/local/cuda-13.0/targets/x86_64-linux/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
chmod +x .device/examples/* .device/tests/*
nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader | tee $OUT/gpus.txt
for t in rank_per_process collective; do
  b=$(ls .device/tests/$t-* | head -1)
  timeout 200 $b --include-ignored --test-threads=1 > $OUT/$t.txt 2>&1; echo "$t rc=$?"; grep -E "test result|FAILED|panicked" $OUT/$t.txt
done
timeout 300 .device/examples/nccl_outside --csv $OUT/outside.csv --deadline 30 > $OUT/outside.txt 2>&1; echo "outside rc=$?"
PY=/opt/torch/.venv/bin/python
for i in 1 2 3; do
  timeout 120 .device/examples/nccl_bench 500 > $OUT/rust$i.txt 2>&1; echo "rust$i rc=$?"
  timeout 120 .device/examples/nccl_bench 500 --processes > $OUT/rustp$i.txt 2>&1; echo "rustp$i rc=$?"
  timeout 200 $PY -m torch.distributed.run --nproc-per-node 2 bench/torch_nccl_allreduce.py 500 > $OUT/torch$i.txt 2>&1; echo "torch$i rc=$?"
done
for f in rust rustp torch; do for i in 1 2 3; do echo "== $f$i"; grep -E "^ +[0-9]+ " $OUT/$f$i.txt; done; done
timeout 120 .device/examples/07_tensor_parallel 300 1 > $OUT/tp.txt 2>&1; echo "tp rc=$?"; tail -3 $OUT/tp.txt
bash scripts/gpu_validate.sh suite > $OUT/suite.log 2>&1; echo "suite rc=$?"; tail -1 $OUT/suite.log; grep -E "^FAILED" $OUT/suite.log | head
