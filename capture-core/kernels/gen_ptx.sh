#!/usr/bin/env bash
# gen_ptx.sh — regenerate chain.ptx from chain.cu and run the driver-API
# self-check (selfcheck.cu). Needs nvcc and a GPU. Run from anywhere:
#     bash capture-core/kernels/gen_ptx.sh [OUTDIR]
# OUTDIR defaults to $OUT if set, else this folder. Copy OUTDIR/chain.ptx next
# to chain.cu if OUTDIR is elsewhere.
set -u
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
out="${1:-${OUT:-$here}}"
mkdir -p "$out"
export PATH="$PATH:/usr/local/cuda/bin"

echo "== nvcc --version"; nvcc --version
echo "== nvidia-smi"; nvidia-smi
echo "== which compute-sanitizer"
which compute-sanitizer || ls /usr/local/cuda*/bin/compute-sanitizer 2>/dev/null || echo "compute-sanitizer: not found"

echo "== nvcc -ptx"
set -e
nvcc -ptx -O3 -arch=compute_80 -o "$out/chain.ptx" "$here/chain.cu"
grep -n -A6 '.visible .entry' "$out/chain.ptx"

echo "== selfcheck"
nvcc -O2 -o /tmp/selfcheck "$here/selfcheck.cu" -lcuda
/tmp/selfcheck "$out/chain.ptx" 2>&1 | tee "$out/selfcheck.log"
rc=${PIPESTATUS[0]}
if command -v compute-sanitizer >/dev/null; then
  echo "== compute-sanitizer selfcheck"
  compute-sanitizer --tool memcheck /tmp/selfcheck "$out/chain.ptx" 2>&1 | tail -n 5 || true
fi
echo "selfcheck rc=$rc"
exit $rc
