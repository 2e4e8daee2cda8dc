#!/usr/bin/env bash
# Issue #30 on the GPU machine, over the binaries staged by scripts/stage-issue30.sh (candle)
# and ../shared/gpu/stage.sh (capture-core's suite, its tests then xz-compressed):
#   bash scripts/gpu_issue30.sh candle   # capture-candle's GPU tests, the proof at real size
#   bash scripts/gpu_issue30.sh soak     # the soak, memcheck of the proof's tests and real graphs
#   bash scripts/gpu_issue30.sh suite    # capture-core's suite
# Logs go to $OUT (or ./gpu-logs).
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
export CAPTURE_REQUIRE_GPU=1 RUST_BACKTRACE=1
c=.device/candle
source scripts/gpu-candle-env.sh "$c"
one() { ls $c/$1-* 2>/dev/null | grep -v '\.d$' | head -1; }
fail=0
case "${1:-candle}" in
  candle)
    {
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      for t in own gpu model generate decode; do
        b=$(one "$t"); echo "=== $t ($b)"
        timeout 400 "$b" --include-ignored --test-threads=1 || { echo "FAILED: $t"; fail=1; }
      done
    } 2>&1 | tee "$out/candle-tests.txt"
    { echo "=== ownership proof"; timeout 400 $c/ownership proof || { echo "FAILED: ownership proof"; fail=1; }; } 2>&1 | tee "$out/proof.txt"
    { echo "=== model_proof (planted uploads: candle's upload cache)"; timeout 150 $c/model_proof --tokens 16 || { echo "FAILED: model_proof"; fail=1; }; } 2>&1 | tee "$out/model-proof.txt"
    ;;
  soak)
    { echo "=== ownership soak"; timeout 200 $c/ownership soak || { echo "FAILED: soak"; fail=1; }; } 2>&1 | tee "$out/soak.txt"
    {
      b=$(one own); echo "=== memcheck: $b"
      timeout 150 compute-sanitizer --tool memcheck --leak-check full "$b" --include-ignored --test-threads=1 || { echo "FAILED: memcheck own"; fail=1; }
      echo "=== memcheck: ownership proof (tiny models, every bucket and dtype)"
      timeout 150 compute-sanitizer --tool memcheck $c/ownership proof --configs tiny-llama,tiny-qwen2 --max-seq 256 || { echo "FAILED: memcheck proof"; fail=1; }
    } 2>&1 | tee "$out/memcheck.txt"
    grep -E "ERROR SUMMARY|LEAK SUMMARY" "$out/memcheck.txt"
    ;;
  suite)
    # capture-core's suite (the main workspace's test binaries, xz-compressed to travel).
    for f in .device/tests/*.xz; do [ -e "$f" ] && xz -d -f "$f"; done
    chmod +x .device/tests/* 2>/dev/null
    OUT="$out" bash scripts/gpu_validate.sh suite >/dev/null 2>&1 || fail=1
    tail -3 "$out/suite.log"
    ;;
esac
exit $fail
