#!/usr/bin/env bash
# Issue #30 on the GPU machine, over the binaries staged by scripts/stage-issue30.sh (candle)
# and ../shared/gpu/stage.sh (capture-core's suite, its tests then xz-compressed):
#   bash scripts/gpu_issue30.sh candle   # capture-candle's GPU tests, the proof at real size
#   bash scripts/gpu_issue30.sh soak     # the soak, memcheck of the proof's tests and real graphs
#   bash scripts/gpu_issue30.sh suite    # capture-core's suite
#   bash scripts/gpu_issue30.sh issue31  # transformers conformance on CUDA, real shapes, text generation
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
  issue31)
    # Issue #31 on the H100: the conformance fixtures on CUDA, checkpoints of the real shapes
    # made by transformers here (scripts/conformance/real_shapes.py) compared in every dtype,
    # and text generated from them.
    export CAPTURE_CANDLE_FIXTURES=$PWD/capture-candle/tests/fixtures CAPTURE_CONFORMANCE_REAL=/tmp/real
    { python3 -c 'import transformers, torch; print("transformers", transformers.__version__, "torch", torch.__version__)'
      timeout 300 python3 scripts/conformance/real_shapes.py --out /tmp/real || { echo "FAILED: real_shapes.py"; fail=1; }
    } 2>&1 | tee "$out/real-shapes.txt"
    {
      for t in conformance text generate model decode; do
        b=$(one "$t"); echo "=== $t ($b)"
        timeout 400 "$b" --include-ignored --test-threads=1 --nocapture || { echo "FAILED: $t"; fail=1; }
      done
    } 2>&1 | tee "$out/conformance.txt"
    {
      for m in llama-3.2-1b-v5 qwen2.5-0.5b-v4; do
        for mode in --chat --no-chat; do
          echo "=== generate --model $m --prompt ... $mode"
          timeout 120 $c/generate --model /tmp/real/$m --prompt "Why is the sky blue? Héllo 🙂" $mode --max-new 48 --batch 2 || { echo "FAILED: generate $m $mode"; fail=1; }
        done
      done
    } 2>&1 | tee "$out/generate-text.txt"
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
