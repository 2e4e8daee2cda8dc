#!/usr/bin/env bash
# GPU validation, run on the GPU machine over the binaries staged by ../shared/gpu/stage.sh:
#   bash scripts/gpu_validate.sh suite        # every test binary, GPU tests included
#   bash scripts/gpu_validate.sh sanitize T   # the GPU tests under compute-sanitizer --tool T
#   bash scripts/gpu_validate.sh examples     # the examples and the soak
# Logs go to $OUT (or ./gpu-logs). Exit status is non-zero on any failure.
set -u
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
export CAPTURE_REQUIRE_GPU=1 RUST_BACKTRACE=1
# Test binaries that exercise the runtime (the ui, macro and corpus tests need cargo or
# source trees and have no GPU part).
tests() {
  for t in .device/tests/*; do
    case "$(basename "$t")" in
      ui-*|ui_tests-*|corpus-*|capture_macros-*|capture_examples-*|capture_tests-*|zz_*) ;;
      capture_core-*) [ "${SKIP_CPU_ONLY:-0}" = 1 ] || echo "$t" ;; # unit tests: CPU only
      *) echo "$t" ;;
    esac
  done
}
fail=0
case "${1:-suite}" in
  suite)
    {
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      nvidia-smi | grep -o 'CUDA Version: [0-9.]*'
      for t in $(tests); do
        echo "=== $t"
        timeout 300 "$t" --include-ignored --test-threads=1 || { echo "FAILED: $t"; fail=1; }
      done
    } 2>&1 | tee "$out/suite.log"
    grep -q '^FAILED' "$out/suite.log" && fail=1
    awk '/^test result/ {p+=$4; f+=$6} END {print "TOTAL: " p " passed, " f " failed"}' "$out/suite.log" | tee -a "$out/suite.log"
    ;;
  sanitize-all)
    export SKIP_CPU_ONLY=1 # nothing to sanitize in a binary that never calls CUDA
    for tool in memcheck racecheck synccheck initcheck; do bash "$0" sanitize "$tool" >/dev/null 2>&1 || fail=1; done
    grep -H -E 'ERROR SUMMARY|RACECHECK SUMMARY|^FAILED' "$out"/sanitize-*.log | sed 's/:=*/: /' | sort | uniq -c
    ;;
  sanitize)
    export SKIP_CPU_ONLY=1
    tool=${2:?tool}
    {
      compute-sanitizer --version | head -3
      for t in $(tests); do
        echo "=== $tool $t"
        # --report-api-errors no: the negative tests provoke driver errors on purpose
        # (UNJOINED, CAPTURED_EVENT, …); the summary then counts memory, race and sync errors.
        timeout 500 compute-sanitizer --tool "$tool" --report-api-errors no --error-exitcode 9 --print-limit 20 \
          "$t" --include-ignored --test-threads=1 gpu || { echo "FAILED: $tool $t (rc=$?)"; fail=1; }
      done
    } 2>&1 | tee "$out/sanitize-$tool.log"
    grep -q '^FAILED' "$out/sanitize-$tool.log" && fail=1
    grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitize-$tool.log" | sort | uniq -c | tee -a "$out/sanitize-$tool.log"
    ;;
  examples)
    {
      for e in 01_capture_and_replay 02_managed_memory 03_decode_loop soak; do
        echo "=== $e"
        timeout 300 ".device/examples/$e" || { echo "FAILED: $e"; fail=1; }
      done
    } 2>&1 | tee "$out/examples.log"
    grep -q '^FAILED' "$out/examples.log" && fail=1
    ;;
esac
exit $fail
