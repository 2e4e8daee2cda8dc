#!/usr/bin/env bash
# Builds capture-candle's decode kernels (capture-candle/kernels/decode.cu) to PTX for
# compute_80 with nvcc 13.0 from NVIDIA's wheels (scripts/cuda-build-env.sh), into
# capture-candle/kernels/decode.ptx, which is checked in: building the crate needs no CUDA
# toolkit (docs.rs has none), and the driver compiles the PTX for the GPU it runs on.
#
#   scripts/build-candle-ptx.sh           # rebuild decode.ptx
#   scripts/build-candle-ptx.sh --check   # fail if decode.ptx is not what decode.cu builds to
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
src="$root/capture-candle/kernels/decode.cu"
ptx="$root/capture-candle/kernels/decode.ptx"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$root/scripts/cuda-build-env.sh" nvcc -ptx -arch=compute_80 -O3 -o "$out" "$src"
if [ "${1:-}" = "--check" ]; then
  # Compare the code, not nvcc's header comments (its exact 13.0.x version is in them).
  if ! cmp -s <(grep -v '^//' "$out") <(grep -v '^//' "$ptx"); then
    echo "capture-candle/kernels/decode.ptx is stale: run scripts/build-candle-ptx.sh and commit it" >&2
    exit 1
  fi
  echo "decode.ptx matches decode.cu"
else
  cp "$out" "$ptx"
  echo "wrote $ptx"
fi
