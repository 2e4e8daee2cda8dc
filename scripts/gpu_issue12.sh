#!/usr/bin/env bash
# Issue #12 on the H100, over binaries staged by ../shared/gpu/stage.sh:
#   bash scripts/gpu_issue12.sh ptx      # compile the .cu kernels to PTX into $OUT (nvcc there)
#   bash scripts/gpu_issue12.sh control  # the control tests, GPU twins included
#   bash scripts/gpu_issue12.sh bench    # 08_device_loop LOOP_RUNS times (3), args LOOP_ARGS (the benchmark)
set -u
out=${OUT:-gpu-logs}; mkdir -p "$out"
export CAPTURE_REQUIRE_GPU=1 RUST_BACKTRACE=1
chmod +x .device/examples/* .device/tests/* 2>/dev/null
for what in "$@"; do
  case "$what" in
    ptx)
      nvcc --version | tail -2 > "$out/nvcc.txt"
      nvcc -ptx -O3 -arch=compute_80 -o "$out/control.ptx" capture-core/kernels/control.cu; echo "control.ptx rc=$?"
      nvcc -ptx -O3 -arch=compute_80 -o "$out/decode_loop.ptx" examples/kernels/decode_loop.cu; echo "decode_loop.ptx rc=$?"
      ;;
    control)
      b=$(ls .device/tests/control-* | head -1)
      timeout 200 "$b" --include-ignored --test-threads=1 > "$out/control.txt" 2>&1; echo "control rc=$?"
      grep -E "test result|FAILED|panicked" "$out/control.txt"
      ;;
    bench)
      nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader > "$out/gpu.txt"
      # LOOP_ARGS: the example's arguments (bounds, steps per iteration); LOOP_RUNS: processes.
      for i in $(seq 1 "${LOOP_RUNS:-3}"); do
        # shellcheck disable=SC2086
        timeout 200 .device/examples/08_device_loop ${LOOP_ARGS:-16,128,1024 16} > "$out/loop$i.txt" 2>&1
        echo "loop$i rc=$?"; cat "$out/loop$i.txt"
      done
      ;;
  esac
done
