#!/usr/bin/env bash
# Stage only what scripts/gpu_issue30.sh runs: capture-candle's GPU test binaries and the
# ownership, model_proof and generate examples, xz-compressed, in .device/candle/.
set -euo pipefail
root=$(git rev-parse --show-toplevel); cd "$root"
out="$root/${STAGE_OUT:-.device/candle}"; rm -rf "$out"; mkdir -p "$out"
# STAGE_ONLY="own gpu" stages those targets alone; STAGE_OUT=.device/candle80 stages into another
# folder. A build for another GPU (gpu_issue32.sh fallback), in its own target folder:
#   CUDA_COMPUTE_CAP=80 CARGO_TARGET_DIR=/tmp/t80 STAGE_OUT=.device/candle80 STAGE_ONLY="decode generate" scripts/stage-issue30.sh
build() { scripts/cuda-build-env.sh cargo "$@" --release --manifest-path capture-candle/Cargo.toml --message-format=json; }
pick='
import json, sys, shutil, os
want = set(os.environ.get("STAGE_ONLY", "").split()) or {"own", "gpu", "model", "generate", "decode", "ownership", "model_proof", "conformance", "text"}
for line in sys.stdin:
    try: m = json.loads(line)
    except ValueError: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] in want:
        shutil.copy2(m["executable"], sys.argv[1]); print("staged", os.path.basename(m["executable"]))
'
build test --no-run | python3 -c "$pick" "$out"
build build --examples | python3 -c "$pick" "$out"
strip "$out"/* 2>/dev/null || true
for f in "$out"/*; do xz -T2 -6 -f "$f" & done; wait
du -sh "$out"
