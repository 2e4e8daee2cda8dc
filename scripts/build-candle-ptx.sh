#!/usr/bin/env bash
# Builds capture-candle's decode kernels (capture-candle/kernels/decode.cu) to PTX with nvcc
# 13.0 from NVIDIA's wheels (scripts/cuda-build-env.sh), into two files that are checked in
# (building the crate needs no CUDA toolkit, and docs.rs has none; the driver compiles the PTX
# for the GPU it runs on):
#   capture-candle/kernels/decode.ptx      every kernel, for compute_80;
#   capture-candle/kernels/decode_pdl.ptx  the kernels the step launches programmatically (the
#                                          fused attention, gemv, mmv) with programmatic dependent
#                                          launch's hooks (DECODE_PDL), for compute_90.
#
#   scripts/build-candle-ptx.sh           # rebuild both
#   scripts/build-candle-ptx.sh --check   # fail if either is not what decode.cu builds to
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/capture-candle/kernels/decode.cu"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
one() {
  local ptx="$root/capture-candle/kernels/$1"
  shift
  "$root/scripts/cuda-build-env.sh" nvcc -ptx -O3 "$@" -o "$out" "$src"
  local name
  name=$(basename "$ptx")
  if [ "$check" = 1 ]; then
    # Compare the code, not nvcc's header comments (its exact 13.0.x version is in them).
    if ! cmp -s <(grep -v '^//' "$out") <(grep -v '^//' "$ptx"); then
      echo "capture-candle/kernels/$name is stale: run scripts/build-candle-ptx.sh and commit it" >&2
      exit 1
    fi
    echo "$name matches decode.cu"
  else
    cp "$out" "$ptx"
    echo "wrote $ptx"
  fi
}
check=0
[ "${1:-}" = "--check" ] && check=1
one decode.ptx -arch=compute_80
# (Helpers only the other kernels use are unreferenced there: warning 177 is expected.)
one decode_pdl.ptx -arch=compute_90 -DDECODE_PDL -DDECODE_PDL_ONLY -diag-suppress 177
