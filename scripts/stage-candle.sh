#!/usr/bin/env bash
# Build capture-candle's GPU test and the candle_decode example here (nvcc from NVIDIA's
# wheels, see cuda-build-env.sh) and stage them in .device/candle/ with a run script for the
# GPU machine. Run after ../shared/gpu/stage.sh (which recreates .device/).
#
#   scripts/stage-candle.sh
#   then, on the GPU machine: bash .device/candle/run.sh [decode arguments]
set -euo pipefail
root=$(git rev-parse --show-toplevel)
cd "$root"
out="$root/.device/candle"
mkdir -p "$out"
build() { scripts/cuda-build-env.sh cargo "$@" --release --manifest-path capture-candle/Cargo.toml --message-format=json; }
pick='
import json, sys, shutil, os
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable"):
        kind = m.get("target", {}).get("kind", [])
        if m.get("profile", {}).get("test") or "example" in kind:
            src = m["executable"]; shutil.copy2(src, sys.argv[1]); print("staged", os.path.basename(src))
'
build test --no-run | python3 -c "$pick" "$out"
build build --examples | python3 -c "$pick" "$out"
strip "$out"/* 2>/dev/null || true
# candle embeds its kernels' PTX: ~48 MB a binary, ~5 MB compressed (64 MiB travel).
for f in "$out"/*; do case "$f" in *.xz) ;; *) xz -T2 -6 -f "$f" ;; esac; done
cat > "$out/run.sh" <<'RUN'
#!/usr/bin/env bash
# On the GPU machine: candle's binaries link cuBLAS, cuRAND, NVRTC and the CUDA runtime
# (13.x); PyTorch's NVIDIA wheels there ship them. Find them and run.
cd "$(dirname "$0")"
source ../../scripts/gpu-candle-env.sh .
export CAPTURE_REQUIRE_GPU=1 RUST_BACKTRACE=1
fail=0
for t in ./*; do
  case "$t" in ./run.sh|./candle_decode*|*.d) continue;; esac
  echo "=== $t"; timeout 300 "$t" --include-ignored --test-threads=1 || { echo "FAILED: $t"; fail=1; }
done
echo "=== candle_decode $*"
timeout 400 ./candle_decode "$@" || { echo "FAILED: candle_decode"; fail=1; }
exit $fail
RUN
chmod +x "$out/run.sh"
du -sh "$out"
