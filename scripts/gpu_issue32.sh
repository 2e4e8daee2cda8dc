#!/usr/bin/env bash
# Issue #32 on the GPU machine, over the binaries staged by scripts/stage-issue30.sh
# (STAGE_ONLY="decode generate model own gpu llama_bench sampling_bench"):
#   bash scripts/gpu_issue32.sh tests        # capture-candle's GPU tests touched by the sampler and attention
#   bash scripts/gpu_issue32.sh ours         # llama_bench: batches 1/8/32, positions 64/2000/8000, greedy/topk/plain; Generator protocol
#   bash scripts/gpu_issue32.sh torch-short  # PyTorch compile + graph (max-autotune and default modes; TORCH_PATHS) at max_seq 2112 (BATCHES, default 1,8,32), greedy and topk
#   bash scripts/gpu_issue32.sh torch-long   # the same at max_seq 8256, position 8000, batches 8 and 32, greedy
#   bash scripts/gpu_issue32.sh probe        # bench/attention_probe.cu: the attention kernels alone
#   bash scripts/gpu_issue32.sh mmv          # bench/mmv_probe.cu: the 3-32-row products against cuBLAS (SANITIZE=1: memcheck first)
#   bash scripts/gpu_issue32.sh aba          # A/B/A in one command: llama_bench, PyTorch at BATCH (8; 64/2000, 8000), llama_bench (OLD=1: + llama_bench_old)
#   bash scripts/gpu_issue32.sh mmv-step     # llama_bench: the fused step (tensor-core products) against cuBLAS products, batches 3 and 8
#   bash scripts/gpu_issue32.sh mmw          # bench/mmw_probe.cu: 9-32-row tensor-core products against cuBLAS; PROBE_ARGS=chain: the batch-32 chain's norms and SwiGLU
#   bash scripts/gpu_issue32.sh mmc          # bench/mmc_probe.cu: 9-32-row products split along K over a cluster, against cuBLAS; PROBE_ARGS=floor: a plain read of each product's weights
#   bash scripts/gpu_issue32.sh kv           # bench/kv_stream_probe.cu: the decode attention against loads-only kernels over the same cache
#   bash scripts/gpu_issue32.sh kvtrace      # bench/kv_stream_probe.cu's trace build: where a launch of the decode attention spends its time
#   bash scripts/gpu_issue32.sh wide         # bench/mmv_probe.cu at 16 and 32 rows, 2 and 1 chunks a round (PROBE_CH)
#   bash scripts/gpu_issue32.sh floor        # bench/read_floor_probe.cu, bench/pdl_gemv_probe.cu, the first again (run 69)
#   bash scripts/gpu_issue32.sh loads        # bench/pdl_gemv_probe.cu built with the GEMV's knobs (LOADS), alternated, output hashes
#   bash scripts/gpu_issue32.sh gemvtrace    # bench/gemv_trace_probe.cu: the batch-1 GEMV's launches block by block (start, wait, staged, end)
#   bash scripts/gpu_issue32.sh stream       # bench/stream_gemv_probe.cu: the GEMVs under PDL piece by piece, shared-memory weight streams
#   bash scripts/gpu_issue32.sh attention    # bench/attention_chain_probe.cu: what RoPE + attention costs the batch-1 chain, and its traced build
#   bash scripts/gpu_issue32.sh batches      # transformers' goldens at batches of 1-8 rows (real shapes too); the projection past 96 KB
#   bash scripts/gpu_issue32.sh variants     # llama_bench against llama_bench_NAME builds (VARIANTS), alternated, BATCHES at 64/2000/8000
#   bash scripts/gpu_issue32.sh sanitize     # compute-sanitizer (TOOLS) on a staged test binary (BIN, FILTER), KERNELS: a substring of the kernels to check
#   bash scripts/gpu_issue32.sh final        # A/B/A: llama_bench (sampled, batches 1/8/32, positions to 8,000), PyTorch default compile, llama_bench
#                                            #   (GENERATOR=1: then the Generator protocol)
#   bash scripts/gpu_issue32.sh modebits     # bench/gemv_mode_bits_probe.cu: the one-mode GEMVs against the mode-reading ones, bit for bit
#   bash scripts/gpu_issue32.sh warpnorm     # bench/warp_norm_probe.cu: the batch-1 norm's statistics without block barriers
#   bash scripts/gpu_issue32.sh lmhead       # bench/lm_head_probe.cu: the batch-1 LM head against a read of its weights
#   bash scripts/gpu_issue32.sh load         # bench/module_load_probe.cu: loading decode.ptx/decode_pdl.ptx with the driver's
#                                            #   cache cold, warm and off; ptxas to cubins and loading those; the JIT's SASS against
#                                            #   ptxas's; a test process cold and warm, on the cubins and on the PTX (CAPTURE_CANDLE_JIT=1)
#   bash scripts/gpu_issue32.sh sass         # llama_bench on the cubins against the PTX (CAPTURE_CANDLE_JIT=1), alternated, greedy
#   bash scripts/gpu_issue32.sh ragged       # llama_bench --ragged: prompts of mixed lengths prefilled in the given order and by length, and by length
#                                            #   on the per-token attention (RAGGED: 256,1024,2000); VARIANTS: llama_bench_NAME builds alternated
#   bash scripts/gpu_issue32.sh attention-alone # llama_bench --attention: the tiled and the per-token attention alone on SHAPES (BxTxP,...; CONFIG)
#   bash scripts/gpu_issue32.sh sampler      # the sampler against sampling_bench_old / llama_bench_old: ncu's kernel times by mode, sampling_bench
#                                            #   and llama_bench (every sampling mode, batches 1/8/32, positions 64/2000), alternated
#   bash scripts/gpu_issue32.sh ncu-prefill  # Nsight Compute's kernel times over the first 2,600 launches of llama_bench --ragged 2000 at batch 8 (run 189);
#                                            #   bench/torch_prefill_attention.py, PyTorch's flash attention over the same work (run 191)
#   bash scripts/gpu_issue32.sh ncu-attention # Nsight Compute's times of the attention kernels alone (KERNELS: a regex) over llama_bench --ragged 2000 at batch 8
#                                            #   (its three prefills: given order and by length on the tiled kernel, by length on the per-token
#                                            #   one); PyTorch's flash attention over the same work at batches 8 and 32
#   bash scripts/gpu_issue32.sh fallback     # the crate built for sm_80 (.device/candle80: scripts/stage-issue30.sh's header): the cubin refused, the PTX
#                                            #   loaded; decode's and generate's tests on it; the lib's unit tests (the refused-cubin test) on this build
#   bash scripts/gpu_issue32.sh pdl          # programmatic dependent launch: bench/pdl_gemv_probe.cu, the model's PDL test,
#                                            #   then llama_bench's fused step against its plain-launch twin (batches 1, 2, 8; positions 64, 2000);
#                                            #   FULL=1: then decode's and model's every test
# Logs go to $OUT (or ./gpu-logs), one file per mode (TAG names it).
set -u -o pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-logs}
mkdir -p "$out"
export CAPTURE_REQUIRE_GPU=1 RUST_BACKTRACE=1
c=.device/candle
[ -d "$c" ] && source scripts/gpu-candle-env.sh "$c"
one() { ls $c/$1-* 2>/dev/null | grep -v '\.d$' | head -1; }
tag=${TAG:-$1}
fail=0
# Failures inside `{ ...; } | tee` happen in a subshell: each is written down here, and the
# exit status reads the file.
rm -f "$out/.failed-$tag"
failed() { echo "FAILED: $*"; echo "$*" >> "$out/.failed-$tag"; }
# A probe's binary as /tmp/NAME: unpacked from .device/probes/NAME.xz where it was staged (built
# on the build machine with the command in the probe's header, xz-compressed), else built here
# from bench/SRC.cu with the remaining arguments as nvcc's flags.
probe_bin() {
  local name=$1 src=$2
  shift 2
  if [ -f ".device/probes/$name.xz" ]; then
    xz -dc ".device/probes/$name.xz" > "/tmp/$name" && chmod +x "/tmp/$name"
    return
  fi
  nvcc -O3 -std=c++17 -o "/tmp/$name" "bench/$src.cu" "$@"
}
# probe_bin for the probes of decode.cu's variants that live in a patch (PATCH), not in the
# crate's kernel: the source is copied to /tmp/pv and patched there.
probe_bin_patched() {
  local name=$1 src=$2 patch=$3
  shift 3
  if [ -f ".device/probes/$name.xz" ]; then
    probe_bin "$name" "$src"
    return
  fi
  rm -rf /tmp/pv && mkdir -p /tmp/pv/capture-candle && cp -r bench /tmp/pv/ && cp -r capture-candle/kernels /tmp/pv/capture-candle/ \
    && (cd /tmp/pv && patch -s -p1 < "$OLDPWD/$patch") && nvcc -O3 -std=c++17 -o "/tmp/$name" "/tmp/pv/bench/$src.cu" "$@"
}
case "$1" in
  tests)
    {
      nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
      for t in decode generate model own gpu; do
        b=$(one "$t"); [ -n "$b" ] || continue
        echo "=== $t ($b)"
        timeout 300 "$b" --include-ignored --test-threads=1 2>&1 | grep -vE '^test .* ok$' || failed "$t"
      done
      # Real-size replay = eager, greedy and seeded sampling (the sampler's graph nodes included).
      echo "=== model_proof"
      timeout 200 $c/model_proof --tokens 32 || failed "model_proof"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  ours)
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      timeout ${LIMIT:-420} $c/llama_bench --rounds ${ROUNDS:-10} --max-seq 8256 --batches 1,8,32 --positions 64,2000,8000 \
        --sampling greedy,topk,plain --paths fused --no-breakdown ${GENERATOR:---generator} || failed "llama_bench"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  torch-short)
    timeout ${LIMIT:-580} python3 bench/torch_llama.py --rounds 10 --max-seq 2112 --batches "${BATCHES:-1,8,32}" \
      --positions 64,2000 --sampling ${SAMPLING:-greedy,topk} --paths ${TORCH_PATHS:-compile,compile-default} 2>&1 | tee "$out/$tag.txt" || failed "$tag"
    ;;
  torch-long)
    timeout ${LIMIT:-580} python3 bench/torch_llama.py --rounds 10 --max-seq 8256 --batches "${BATCHES:-8,32}" \
      --positions 8000 --sampling greedy --paths ${TORCH_PATHS:-compile,compile-default} 2>&1 | tee "$out/$tag.txt" || failed "$tag"
    ;;
  probe)
    { nvcc -O3 -arch=sm_90 -std=c++17 bench/attention_probe.cu -o /tmp/attention_probe && timeout 200 /tmp/attention_probe ${PROBE_ARGS:-}; } 2>&1 | tee "$out/$tag.txt" || failed "$tag"
    ;;
  aba)
    # A (llama_bench), B (PyTorch compile + graph at BATCH, default 8: positions 64/2000, then
    # 8000 at BATCH_LONG, default BATCH), A again; CONFIG (llama-3.2-1b) names the model.
    # OLD=1 adds llama_bench_old (an earlier build, staged under that name) after each A: the
    # change and its baseline on one machine, in one command.
    ours_once() {
      timeout ${LIMIT:-150} $c/${1:-llama_bench} --config ${CONFIG:-llama-3.2-1b} --rounds ${ROUNDS:-6} --max-seq 8256 --batches ${OURS_BATCHES:-1,8,32} \
        --positions 64,2000,8000 --sampling greedy --paths fused --no-breakdown || failed "${1:-llama_bench}"
    }
    old_once() { [ "${OLD:-0}" = 1 ] && ours_once llama_bench_old 2>&1 | tee "$out/${tag}-$1.txt"; }
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; ours_once; } 2>&1 | tee "$out/${tag}-A1.txt"
    old_once O1
    timeout 240 python3 bench/torch_llama.py --config ${CONFIG:-llama-3.2-1b} --rounds 10 --max-seq 2112 --batches ${BATCH:-8} --positions 64,2000 --sampling greedy \
      --paths ${TORCH_PATHS:-compile,compile-default} 2>&1 | tee "$out/${tag}-B-short.txt" || failed "$tag"
    timeout 240 python3 bench/torch_llama.py --config ${CONFIG:-llama-3.2-1b} --rounds 10 --max-seq 8256 --batches ${BATCH_LONG:-${BATCH:-8}} --positions 8000 --sampling greedy \
      --paths ${TORCH_PATHS:-compile,compile-default} 2>&1 | tee "$out/${tag}-B-8000.txt" || failed "$tag"
    ours_once 2>&1 | tee "$out/${tag}-A2.txt"
    old_once O2
    ;;
  variants)
    # Builds of llama_bench staged as llama_bench (this tree) and llama_bench_NAME (VARIANTS="a
    # b": the same tree with one rule changed), alternated AB times (2) in one command: BATCHES
    # (1) at positions 64/2000/8000, greedy, the fused step; CONFIG (llama-3.2-1b) names the
    # model; BREAKDOWN=1 adds the per-part sub-graphs.
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      for r in $(seq ${AB:-2}); do
        for v in "" ${VARIANTS:-}; do
          name=llama_bench${v:+_$v}
          echo "=== round $r: $name"
          timeout ${LIMIT:-150} $c/$name --config ${CONFIG:-llama-3.2-1b} --rounds ${ROUNDS:-6} --max-seq 8256 \
            --batches ${BATCHES:-1} --positions 64,2000,8000 --sampling greedy --paths fused \
            $([ "${BREAKDOWN:-0}" = 1 ] || echo --no-breakdown) || failed "$name"
        done
      done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  final)
    # One command, one machine: A (llama_bench, every sampling mode, batches 1/8/32 at positions
    # 64/2000/8000), B (PyTorch's default compile + graph, the stronger peer: batches 1/8/32 at
    # 64/2000 greedy and topk, then 8/32 at 8000 greedy), A again (greedy).
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      timeout ${LIMIT:-120} $c/llama_bench --rounds ${ROUNDS:-6} --max-seq 8256 --batches 1,8,32 --positions 64,2000,8000 \
        --sampling greedy,topk,plain --paths fused --no-breakdown || failed "llama_bench A1"
    } 2>&1 | tee "$out/${tag}-A1.txt"
    timeout ${TLIMIT:-260} python3 bench/torch_llama.py --rounds 10 --max-seq 2112 --batches 1,8,32 --positions 64,2000 \
      --sampling greedy,topk --paths compile-default 2>&1 | tee "$out/${tag}-B-short.txt" || failed "torch short"
    timeout ${TLIMIT_LONG:-160} python3 bench/torch_llama.py --rounds 10 --max-seq 8256 --batches 8,32 --positions 8000 \
      --sampling greedy --paths compile-default 2>&1 | tee "$out/${tag}-B-8000.txt" || failed "torch 8000"
    timeout ${LIMIT:-120} $c/llama_bench --rounds ${ROUNDS:-6} --max-seq 8256 --batches 1,8,32 --positions 64,2000,8000 \
      --sampling greedy --paths fused --no-breakdown 2>&1 | tee "$out/${tag}-A2.txt" || failed "llama_bench A2"
    # GENERATOR=1: then the `Generator` protocol (32-token prompt, 128 new tokens) at batches 1/8/32
    # in every sampling mode, 4 rounds.
    if [ "${GENERATOR:-0}" = 1 ]; then
      timeout ${GLIMIT:-120} $c/llama_bench --paths none --generator --rounds 4 --max-seq 2112 --batches 1,8,32 \
        --sampling greedy,topk,plain 2>&1 | tee "$out/${tag}-generator.txt" || failed "llama_bench generator"
    fi
    ;;
  modebits)
    # bench/gemv_mode_bits_probe.cu: the one-mode GEMV entry points against the kernels that read
    # the mode, bit for bit, in f32, f16 and bf16, in both PTX files' variants.
    { probe_bin gemv_mode_bits gemv_mode_bits_probe -arch=sm_90 && timeout 120 /tmp/gemv_mode_bits || failed "mode bits"
      probe_bin gemv_mode_bits_pdl gemv_mode_bits_probe -arch=sm_90 -DDECODE_PDL && timeout 120 /tmp/gemv_mode_bits_pdl \
        || failed "mode bits (PDL)"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  warpnorm|lmhead)
    # bench/warp_norm_probe.cu (warpnorm): the batch-1 norm's statistics without block barriers
    # (DIAG 32, 64, 160 of decode.cu's gemv) against the crate's one-mode kernels and DIAG 16's
    # bound; bench/lm_head_probe.cu (lmhead): the batch-1 LM head against a read of its weights,
    # more loads a round, the next row's loads early. Both build on decode.cu with the variants'
    # patch applied.
    p=lm_head_probe
    [ "$1" = warpnorm ] && p=warp_norm_probe
    { probe_bin_patched $p $p docs/gpu-runs/2026-12-01-issue32/probe-variants.patch -arch=sm_90 -DDECODE_PDL || exit 1
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      timeout ${LIMIT:-200} /tmp/$p || failed "$p"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  mmv-step)
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      timeout ${LIMIT:-500} $c/llama_bench --rounds ${ROUNDS:-10} --max-seq 8256 --batches ${BATCHES:-3,8} --positions 64,2000,8000 \
        --sampling ${SAMPLING:-greedy,topk} --paths fused,cublas ${BREAKDOWN:---no-breakdown} || failed "llama_bench"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  mmw)
    { probe_bin mmw mmw_probe -arch=sm_90 -DDECODE_PDL -Xcompiler -fopenmp -lcublas && timeout 400 /tmp/mmw ${PROBE_ARGS:-}; } 2>&1 \
      | tee "$out/$tag.txt" || failed "$tag"
    ;;
  mmc)
    # bench/mmc_probe.cu: products for 9 to 32 rows split along K over a thread-block cluster,
    # against cuBLAS (PROBE_ARGS: check, timing, floor; none: check and timing).
    { probe_bin mmc mmc_probe -arch=sm_90 -Xcompiler -fopenmp -lcublas && timeout 500 /tmp/mmc ${PROBE_ARGS:-}; } 2>&1 \
      | tee "$out/$tag.txt" || failed "$tag"
    ;;
  kv)
    { probe_bin kv_stream_probe kv_stream_probe -arch=sm_90 -DDECODE_PDL && timeout 120 /tmp/kv_stream_probe; } 2>&1 \
      | tee "$out/$tag.txt" || failed "$tag"
    ;;
  kvtrace)
    # bench/kv_stream_probe.cu's trace build (-DKV_TRACE): single launches of the crate's decode
    # attention and of ld-2, where each block's time goes (queries, keys, partials, combine).
    { probe_bin kv_stream_trace kv_stream_probe -arch=sm_90 -DDECODE_PDL -DKV_TRACE && timeout 120 /tmp/kv_stream_trace trace; } 2>&1 \
      | tee "$out/$tag.txt" || failed "$tag"
    ;;
  mmv)
    { nvcc -O3 -std=c++17 -gencode arch=compute_80,code=sm_90 -Xcompiler -fopenmp bench/mmv_probe.cu -o /tmp/mmv_probe -lcublas || exit 1
      if [ "${SANITIZE:-0}" = 1 ]; then
        timeout 300 compute-sanitizer --tool memcheck /tmp/mmv_probe check 2>&1 | tail -25 || failed "$tag"
      fi
      timeout ${LIMIT:-400} /tmp/mmv_probe ${PROBE_ARGS:-} || failed "$tag"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  wide)
    # bench/mmv_probe.cu at 16 and 32 rows: the weights' registers at 2 chunks a round (as the
    # crate's 8-row kernels) and at 1 (PROBE_CH), each against cuBLAS; the correctness pass
    # (3 to 32 rows, no LM head) first for CH 1.
    # Built here unless staged in .device/probes (probe_bin).
    { for ch in 2 1; do
        probe_bin mmv_probe_ch$ch mmv_probe -gencode arch=compute_80,code=sm_90 -DPROBE_CH=$ch -Xcompiler -fopenmp \
          -lcublas || exit 1
      done
      echo "=== CH 1: check"; timeout 200 /tmp/mmv_probe_ch1 check | grep -vE "^(bf16|f16) " || failed "check ch1"
      for ch in 2 1; do echo "=== CH $ch: wide"; timeout ${LIMIT:-200} /tmp/mmv_probe_ch$ch wide ${PROBE_ARGS:-} || failed "wide ch$ch"; done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  floor)
    # bench/read_floor_probe.cu (the step's weights read with nothing computed), then the step's
    # own GEMVs over the same layers (bench/pdl_gemv_probe.cu), then the read-only probe again.
    # Built here unless staged in .device/probes (probe_bin).
    { probe_bin read_floor_probe read_floor_probe -arch=sm_90 || exit 1
      probe_bin pdl_gemv_probe pdl_gemv_probe -arch=sm_90 -DDECODE_PDL -DDECODE_PDL_PROBE -lcublas || exit 1
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      echo "=== read_floor_probe"; timeout 200 /tmp/read_floor_probe || failed "read_floor_probe"
      echo "=== pdl_gemv_probe"; timeout 300 /tmp/pdl_gemv_probe || failed "pdl_gemv_probe"
      echo "=== read_floor_probe again"; timeout 200 /tmp/read_floor_probe || failed "read_floor_probe"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  loads)
    # bench/pdl_gemv_probe.cu built with the GEMV's knobs (decode.cu: GEMV_L loads a round,
    # GEMV_MIN_BLOCKS; with docs/gpu-runs/2026-11-29-issue32/run141-149-gemv-knobs.patch applied
    # also GEMV_PIPE, GEMV_MAX_M, GEMV_NOBAR, GEMV_XFIRST), alternated AB times (2); each
    # build's output hash is printed, to compare builds bit for bit.
    # LOADS: NAME=FLAGS words, FLAGS with commas for spaces.
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      specs=${LOADS:-"crate= l8b1=-DGEMV_L=8,-DGEMV_MIN_BLOCKS=1"}
      for spec in $specs; do
        name=${spec%%=*}; flags=${spec#*=}
        nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -DDECODE_PDL_PROBE ${flags//,/ } -o /tmp/pdl_gemv_$name \
          bench/pdl_gemv_probe.cu -lcublas &
      done
      wait
      for r in $(seq ${AB:-2}); do
        for spec in $specs; do
          name=${spec%%=*}; echo "=== round $r: $name (${spec#*=})"
          timeout ${LIMIT:-120} /tmp/pdl_gemv_$name | sed -n '1,/^with a 6/p' || failed "$name"
        done
      done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  gemvtrace)
    # bench/gemv_trace_probe.cu: the batch-1 GEMV's launches under PDL block by block (start,
    # wait, f(x) staged, end), alone and as the 16-layer chain, then the chain with capped grids.
    # Built here unless staged.
    { probe_bin gemv_trace_probe gemv_trace_probe -arch=sm_90 -DDECODE_PDL -lcublas || exit 1
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      timeout ${LIMIT:-200} /tmp/gemv_trace_probe || failed "gemv_trace_probe"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  stream)
    # bench/stream_gemv_probe.cu: the batch-1 GEMVs under PDL piece by piece, and the products
    # whose weights land in shared memory (runs 75-88). Built here unless staged (probe_bin).
    { probe_bin stream_gemv_probe stream_gemv_probe -arch=sm_90 -DDECODE_PDL -lcublas || exit 1
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      timeout ${LIMIT:-300} /tmp/stream_gemv_probe || failed "stream_gemv_probe"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  attention)
    # bench/attention_chain_probe.cu: what RoPE + attention costs the batch-1 chain under PDL
    # (runs 89-94), then its traced build. Built here unless staged in .device/probes (probe_bin).
    { probe_bin attention_chain_probe attention_chain_probe -arch=sm_90 -DDECODE_PDL -lcublas || exit 1
      probe_bin attention_chain_trace attention_chain_probe -arch=sm_90 -DDECODE_PDL -DPROBE_TRACE -lcublas || exit 1
      nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      timeout ${LIMIT:-300} /tmp/attention_chain_probe || failed "attention_chain_probe"
      timeout ${LIMIT:-300} /tmp/attention_chain_trace || failed "attention_chain_trace"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  batches)
    # transformers' goldens at batches of 1 to 8 rows (the GEMV, the tensor-core products), real
    # shapes included, and the projection past 96 KB of shared memory (STAGE_ONLY="decode conformance").
    export CAPTURE_CANDLE_FIXTURES=$PWD/capture-candle/tests/fixtures CAPTURE_CONFORMANCE_REAL=/tmp/real
    { python3 -c 'import transformers, torch; print("transformers", transformers.__version__, "torch", torch.__version__)'
      [ -d /tmp/real ] || timeout 300 python3 scripts/conformance/real_shapes.py --out /tmp/real >/dev/null 2>&1 \
        || failed "real_shapes.py"
      b=$(one conformance); echo "=== conformance ($b)"
      timeout 400 "$b" --include-ignored --test-threads=1 --nocapture || failed "conformance"
      b=$(one decode); echo "=== decode ($b)"
      timeout 300 "$b" --include-ignored --test-threads=1 shared_memory 96_kb || failed "decode"
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  pdl)
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      echo "=== bench/pdl_gemv_probe.cu"
      { nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -DDECODE_PDL_PROBE -o /tmp/pdl_gemv_probe bench/pdl_gemv_probe.cu -lcublas \
        && timeout 240 /tmp/pdl_gemv_probe; } || failed "pdl_gemv_probe"
      b=$(one model); echo "=== model ($b)"
      timeout 300 "$b" --include-ignored --test-threads=1 programmatic 2>&1 || failed "model"
      echo "=== llama_bench: fused (programmatic launch) against plain-launch"
      timeout ${LIMIT:-300} $c/llama_bench --rounds ${ROUNDS:-6} --max-seq 2112 --batches ${BATCHES:-1,2,8} --positions 64,2000 \
        --sampling greedy --paths fused,plain-launch --no-breakdown || failed "llama_bench"
      if [ -n "${FULL:-}" ]; then
        b=$(one decode); echo "=== decode, every test ($b)"
        timeout 200 "$b" --include-ignored --test-threads=1 2>&1 | tail -40; [ "${PIPESTATUS[0]}" = 0 ] || failed "decode"
        b=$(one model); echo "=== model, every test ($b)"
        timeout 200 "$b" --include-ignored --test-threads=1 2>&1 | tail -40; [ "${PIPESTATUS[0]}" = 0 ] || failed "model (every test)"
      fi
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  sanitize)
    # compute-sanitizer (TOOLS: memcheck racecheck) on a staged test binary (BIN: decode), its
    # tests matching FILTER (attention), with the GPU ones; KERNELS (a substring, e.g. d128)
    # instruments only the kernels whose names contain it, so the others run at full speed (a
    # substring that cuBLAS's kernels share instruments those too: `gemv_`, not `gemv`);
    # SAN_ARGS: more options (`--report-api-errors no` leaves out the driver calls that fail by
    # design: the ownership proof's probes, cuFuncGetParamInfo past a kernel's last parameter and
    # cuPointerGetAttribute on values that are not addresses, docs/gpu-validation.md).
    b=$(one "${BIN:-decode}")
    if [ -z "$b" ]; then
      failed "no staged ${BIN:-decode} binary in $c"
    else
      { compute-sanitizer --version | head -2
        for tool in ${TOOLS:-memcheck racecheck}; do
          echo "=== $tool ${KERNELS:+(kernels matching ${KERNELS}) }$b ${FILTER:-attention}"
          timeout ${LIMIT:-280} compute-sanitizer --tool "$tool" --error-exitcode 9 --print-limit 20 ${SAN_ARGS:-} \
            ${KERNELS:+--kernel-name kns=$KERNELS} "$b" --include-ignored --test-threads=1 ${FILTER:-attention} \
            || failed "$tool (exit $?)"
        done
      } 2>&1 | tee "$out/$tag.txt"
    fi
    ;;
  load)
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      k=capture-candle/kernels
      probe_bin module_load module_load_probe -lcuda || failed "build"
      cache=$(mktemp -d)
      export CUDA_CACHE_PATH=$cache
      for r in cold warm; do echo "--- PTX, the driver's cache $r"; /tmp/module_load $k/decode.ptx $k/decode_pdl.ptx || failed "load $r"; done
      du -sk "$cache"
      echo "--- PTX, the cache off (CUDA_CACHE_DISABLE=1)"
      CUDA_CACHE_DISABLE=1 /tmp/module_load $k/decode.ptx $k/decode_pdl.ptx || failed "load off"
      ptxas --version | tail -1
      for f in decode decode_pdl; do
        /usr/bin/time -f "ptxas $f.ptx -> sm_90: %e s, %M KB" ptxas -O3 -arch=sm_90 $k/$f.ptx -o /tmp/$f.cubin || failed "ptxas $f"
        ls -l /tmp/$f.cubin; xz -9 -k -c /tmp/$f.cubin | wc -c
      done
      for m in LAZY EAGER; do echo "--- cubins, CUDA_MODULE_LOADING=$m"
        CUDA_MODULE_LOADING=$m CUDA_CACHE_DISABLE=1 /tmp/module_load /tmp/decode.cubin /tmp/decode_pdl.cubin || failed "cubin $m"; done
      echo "--- the driver's JIT of the PTX against ptxas's cubins (cuobjdump -sass)"
      for f in decode decode_pdl; do
        /tmp/module_load --jit-to $k/$f.ptx /tmp/$f.jit.cubin || failed "jit $f"
        cuobjdump -sass /tmp/$f.jit.cubin > /tmp/$f.jit.sass && cuobjdump -sass /tmp/$f.cubin > /tmp/$f.ptxas.sass || failed "cuobjdump $f"
        wc -l < /tmp/$f.ptxas.sass
        if cmp -s /tmp/$f.jit.sass /tmp/$f.ptxas.sass; then echo "$f: SASS identical"; else echo "$f: SASS differs"; diff /tmp/$f.jit.sass /tmp/$f.ptxas.sass | head -20; fi
      done
      b=$(one generate)
      if [ -n "$b" ]; then
        for j in 0 1; do for r in cold warm; do
          [ $r = cold ] && export CUDA_CACHE_PATH=$(mktemp -d)
          echo "--- generate's first GPU test, CAPTURE_CANDLE_JIT=$j, the driver's cache $r"
          CAPTURE_CANDLE_JIT=$j /usr/bin/time -f "%e s" timeout 300 "$b" --include-ignored --exact padded_rows_are_inert_and_buckets_alternate_safely 2>&1 | grep -E "test result|s$" || failed "generate $j $r"
        done; done
      fi
      b=$(one decode)
      if [ -n "$b" ]; then
        for j in 0 1; do echo "--- decode's cubin test, CAPTURE_CANDLE_JIT=$j"
          CAPTURE_CANDLE_JIT=$j timeout 300 "$b" --include-ignored --exact kernels_load_from_the_cubin_built_for_this_gpu --nocapture 2>&1 | grep -E "device|test result|panicked" || failed "decode cubin $j"
        done
      fi
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  sass)
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      for r in 1 2; do for j in 0 1; do
        echo "=== round $r, CAPTURE_CANDLE_JIT=$j"
        CAPTURE_CANDLE_JIT=$j timeout 200 $c/llama_bench --rounds ${ROUNDS:-6} --max-seq 8256 --batches ${BATCHES:-1,8,32} \
          --positions 64,2000,8000 --sampling greedy --paths fused --no-breakdown || failed "llama_bench $r $j"
      done; done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  ragged)
    # VARIANTS="a b": llama_bench_a, llama_bench_b (builds staged beside llama_bench) after
    # llama_bench, alternated AB times (1).
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      for r in $(seq ${AB:-1}); do
        for v in "" ${VARIANTS:-}; do
          name=llama_bench${v:+_$v}
          [ -n "${VARIANTS:-}" ] && echo "=== round $r: $name"
          for m in $(echo ${RAGGED:-256,1024,2000} | tr , ' '); do
            timeout 300 $c/$name --rounds ${ROUNDS:-6} --paths none --max-seq ${MAX_SEQ:-2112} --batches ${BATCHES:-8,32} --ragged $m || failed "$name ragged $m"
          done
        done
      done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  attention-alone)
    # llama_bench --attention: the tiled and the per-token attention alone, eager, on SHAPES
    # (BATCHxTOKENSxPREFIX,...), with CONFIG's heads (runs 200, 201, 203).
    timeout 300 $c/llama_bench --config ${CONFIG:-llama-3.2-1b} --rounds ${ROUNDS:-6} --paths none \
      --attention ${SHAPES:-1x16x2048,1x64x2048,1x256x2048,8x16x2048,8x256x1750} 2>&1 | tee "$out/$tag.txt" || failed "attention"
    ;;
  sampler)
    # The sampler, this build against sampling_bench_old / llama_bench_old (an earlier build,
    # staged under those names): Nsight Compute's kernel times by sampling mode at BATCHES_NCU
    # (1,32), then sampling_bench alternated AB (2) times, then llama_bench's fused step in every
    # sampling mode at batches 1/8/32, positions 64 and 2,000, alternated AB times. PARTS
    # (ncu,bench,step) picks among the three; ORDER (new old) the order of the builds in a round;
    # SAMPLING (greedy,topk,plain) the step's modes.
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      has() { case ",${PARTS:-ncu,bench,step}," in *",$1,"*) return 0;; esac; return 1; }
      has ncu && for b in $(echo ${BATCHES_NCU:-1,32} | tr , ' '); do for v in "" _old; do
        echo "=== ncu: sampling_bench$v, batch $b (us a draw, each kernel alone)"
        ( cd /tmp && timeout 200 ncu --metrics gpu__time_duration.sum --csv --print-units base --clock-control none \
            --kernel-name regex:sample_ "$OLDPWD/$c/sampling_bench$v" --rounds 1 --batches $b ) > "$out/$tag-ncu$v-$b.csv" || failed "ncu $v $b"
        python3 bench/ncu_sampler.py "$out/$tag-ncu$v-$b.csv" || failed "ncu_sampler $v $b"
      done; done
      has bench && for r in $(seq ${AB:-2}); do for w in ${ORDER:-new old}; do v=$([ "$w" = old ] && echo _old)
        echo "=== round $r: sampling_bench$v"
        timeout 120 $c/sampling_bench$v --rounds ${ROUNDS:-20} --batches 1,8,32 || failed "sampling_bench$v"
      done; done
      has step && for r in $(seq ${AB:-2}); do for w in ${ORDER:-new old}; do v=$([ "$w" = old ] && echo _old)
        echo "=== round $r: llama_bench$v"
        timeout ${LIMIT:-150} $c/llama_bench$v --rounds ${ROUNDS_STEP:-6} --max-seq 2112 --batches 1,8,32 --positions 64,2000 \
          --sampling ${SAMPLING:-greedy,topk,plain} --paths fused --no-breakdown || failed "llama_bench$v"
      done; done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  ncu-prefill)
    ( cd /tmp && timeout 420 ncu --metrics gpu__time_duration.sum --csv --print-units base --clock-control none --launch-count 2600 \
        "$OLDPWD/$c/llama_bench" --rounds 1 --paths none --batches 8 --ragged 2000 ) > "$out/$tag.csv" || failed "ncu"
    python3 bench/ncu_sum.py "$out/$tag.csv" attention 3 sample_pick | tee "$out/$tag.txt"
    # The same attention work through PyTorch's flash attention (run 191).
    for b in 8 32; do for m in 1024 2000; do
      timeout 120 python3 bench/torch_prefill_attention.py --batch $b --ragged $m --rounds 10 || failed "sdpa $b $m"
    done; done 2>&1 | tee -a "$out/$tag.txt"
    ;;
  ncu-attention)
    ( cd /tmp && timeout 420 ncu --metrics gpu__time_duration.sum --csv --print-units base --clock-control none \
        --kernel-name regex:"${KERNELS:-attention}" --launch-count ${LAUNCHES:-720} \
        "$OLDPWD/$c/llama_bench" --rounds 1 --paths none --batches 8 --ragged ${RAGGED:-2000} ) > "$out/$tag.csv" || failed "ncu"
    # Each prefill ends with its step's fused attention (attention_rope_*).
    { for n in 1 2 3; do echo "=== prefill $n (1: given order, 2: by length, on the tiled kernel; 3: by length, on the per-token kernel)"
        python3 bench/ncu_sum.py "$out/$tag.csv" "" 0 attention_rope $n; done
      for b in 8 32; do timeout 120 python3 bench/torch_prefill_attention.py --batch $b --ragged ${RAGGED:-2000} --rounds 10 || failed "sdpa $b"; done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  fallback)
    { nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      b=$(one capture_candle)
      echo "=== the lib's unit tests, this build ($b)"
      timeout 300 "$b" --include-ignored --test-threads=1 2>&1 | grep -vE '^test .* ok$' || failed "lib"
      c80=.device/candle80
      [ -d "$c80" ] && source scripts/gpu-candle-env.sh "$c80"
      for t in decode generate; do
        b=$(ls $c80/$t-* 2>/dev/null | grep -v '\.d$' | head -1); [ -n "$b" ] || { failed "no $t in $c80"; continue; }
        export CUDA_CACHE_PATH=$(mktemp -d)
        echo "=== $t built for sm_80, the driver's cache empty"
        RUST_LOG=warn /usr/bin/time -f "%e s" timeout 400 "$b" --include-ignored --test-threads=1 --nocapture 2>&1 \
          | grep -E "device sm_|cubin|test result|panicked|FAILED|failed| s$" || failed "$t sm_80"
      done
    } 2>&1 | tee "$out/$tag.txt"
    ;;
  *) echo "unknown mode $1"; exit 2 ;;
esac
[ -s "$out/.failed-$tag" ] && fail=1
rm -f "$out/.failed-$tag"
exit $fail
