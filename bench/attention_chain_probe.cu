// Probe for issue #32, target 3: what the fused RoPE + attention kernel costs the batch-1 step
// under programmatic dependent launch (PDL), and where that time goes.
//
// The chain: 16 layers x QKV (RMSNorm), RoPE + attention, O (+ residual), gate/up (RMSNorm,
// SwiGLU), down (+ residual), bf16, Llama-3.2-1B's shapes (32 query heads and 8 key heads of
// 64), each layer its own weights and its own cache of S = 8,256 positions, launched as gpu.rs
// launches them, every launch but the graph's first programmatic. The position is read from
// the device, as in the step. In a CUDA graph, 3 + 7 x 30 replays, median, µs a layer.
//
// The attention node, one of:
//   none     no node: O reads the previous output (what the products cost without attention);
//   empty    a kernel on attention's grid that waits for QKV, lets O launch and exits (what a
//            dependent node costs with nothing in it); empty-e: lets O launch, then waits;
//   real     the crate's `attention_rope_d64_bf16` (4 warps a block);
//   w8       the crate's `attention_rope_d64w8_bf16` (8 warps a block) on the 4-warp grid;
//   w8h      the same on half as many chunks (a grid of at most 264 blocks, where the 4-warp
//            rule aims at 528): what the crate launches for decode;
//            Its values' products run on tensor cores where a block's chunk has at most 1,024
//            keys (decode.cu's attention TCV);
//   w8hf     w8h with the values' products on CUDA cores at every length (the crate's kernel
//            before 2026-11-28's fourth session; run 107 timed the tensor-core products at every
//            length against it).
// (Runs 90 and 94 also timed variants that let O launch from attention's start, loaded the
// first rotary pair's table entries before the wait, ran 16 warps a block, or applied the
// norm's 1 / rms to the products' sums: none was faster, and their kernel knobs are gone; see
// the probe in git history before 2026-11-28's fourth session.)
// A last section times attention alone (16 launches in a graph) for 1, 8 and 32 rows.
//
// `attention_chain_probe one B P` launches only the crate's decode attention (w8h), for a
// profiler; `attention_chain_probe alone B P` times w8h against w8hf alone at B rows and
// position P. Built twice from this file:
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -o attention_chain_probe bench/attention_chain_probe.cu -lcublas
//   nvcc ... -DPROBE_TRACE -o attention_chain_trace ...
// PROBE_TRACE defines decode.cu's DECODE_TRACE hook: global timer stamps (%globaltimer, ns)
// at the marked points, giving per launch, averaged over the replays: for each product, the
// time from the last block of its predecessor to the end of the first block's wait (the
// handoff); for attention's block (0, 0, 0), the stamps of its start, its wait, its queries
// formed, its keys done and its output written. The stamps perturb the timing a little: the
// traced binary's chain times are printed, but the untraced binary's are the result.
#include <cstdint>

#if defined(PROBE_TRACE)
__device__ unsigned long long g_tr_end;      // the latest end of a block of a traced kernel
__device__ unsigned long long g_tr_t[16];    // attention block (0, 0, 0)'s stamps by site
__device__ unsigned long long g_tr_acc[64];  // sums of intervals (ns) and their counts
static __device__ __forceinline__ unsigned long long tr_now() {
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
static __device__ __forceinline__ unsigned long long tr_end_seen() {
    return *reinterpret_cast<volatile unsigned long long*>(&g_tr_end);
}
// Sites (decode.cu): gemv 0 after its wait, 1 at its end; attention 9 at its start, 10 after
// its wait, 11 queries formed, 12 keys done, 13 output (or partials) written, 14 combined.
static __device__ __forceinline__ void probe_trace(unsigned site, unsigned a, unsigned b, unsigned c) {
    const unsigned long long now = tr_now();
    const bool t0 = threadIdx.x == 0;
    if (t0 && (site == 1 || site == 13 || site == 14)) atomicMax(&g_tr_end, now);
    if (site == 0 && t0 && blockIdx.x == 0) {
        // QKV 0, O 2, gate/up 3, down 4: the handoff from the predecessor's last block.
        const unsigned cls = c ? 3 : a == 3072 ? 0 : b == 8192 ? 4 : 2;
        atomicAdd(&g_tr_acc[cls * 2], now - tr_end_seen());
        atomicAdd(&g_tr_acc[cls * 2 + 1], 1ull);
    }
    if (site >= 9 && t0 && blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0) {
        g_tr_t[site] = now;
        if (site == 10) g_tr_t[8] = tr_end_seen();  // QKV's last block's end
        if (site == 13) {
            // 16: handoff (QKV's end to the wait's end), 18: start to the wait's end, 20: queries,
            // 22: keys, 24: output; 26: QKV's end to the output.
            const unsigned long long* t = g_tr_t;
            atomicAdd(&g_tr_acc[16], t[10] - t[8]);
            atomicAdd(&g_tr_acc[18], t[10] - t[9]);
            atomicAdd(&g_tr_acc[20], t[11] - t[10]);
            atomicAdd(&g_tr_acc[22], t[12] - t[11]);
            atomicAdd(&g_tr_acc[24], now - t[12]);
            atomicAdd(&g_tr_acc[26], now - t[8]);
            atomicAdd(&g_tr_acc[17], 1ull);
        }
    }
}
#define DECODE_TRACE(site, a, b, c) probe_trace(site, a, b, c)
#endif

#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static const u32 H = 2048, QKV = 3072, I = 8192, L = 16, NQ = 32, NK = 8, D = 64, S = 8256;

// A dependent node with nothing in it; `early`: the successor may launch before the wait.
template <bool EARLY>
__global__ void att_empty() {
    if (EARLY) pdl_trigger();
    pdl_wait();
    if (!EARLY) pdl_trigger();
}

enum Att { NONE, EMPTY, EMPTY_E, REAL, W8, W8H, W8HF, NATT };
static const char* att_name[] = {"none", "empty", "empty-e", "real", "w8", "w8h", "w8hf"};
typedef void (*AttFn)(ATT_FUSE_ARGS(BF16));
__global__ void __launch_bounds__(256, 2) att_f(ATT_FUSE_ARGS(BF16)) {
    attention<BF16, 64, 16, 8, true, true, true, false>(q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk, min_chunk,
                                                       scale, part, counters, out,
                                                       AttFuse<BF16>{qkv, bias, table, active, interleaved, kw, vw, overflow});
}
static AttFn att_fn(Att a) {
    return a == W8HF ? att_f : a >= W8 ? attention_rope_d64w8_bf16 : attention_rope_d64_bf16;
}
static u32 att_threads(Att a) { return a >= W8 ? 256 : 128; }

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    probe_device();
    const u32 BM = 32;  // the most rows (attention alone)
    u64 seed = 11;
    const std::vector<LayerWeights> W = layer_weights(L, H, QKV, I, seed, 0.0383f, 0.0191f);
    u16 *a0, *h1, *qkv, *att, *nw, *g;
    CK(cudaMalloc(&a0, H * 2)); CK(cudaMalloc(&h1, H * 2)); CK(cudaMalloc(&qkv, BM * QKV * 2));
    CK(cudaMalloc(&att, BM * H * 2)); CK(cudaMalloc(&nw, H * 2)); CK(cudaMalloc(&g, I * 2));
    fill(nw, H, ++seed, 0.5f, 1.5f);
    fill(att, BM * H, ++seed, -1.f, 1.f);
    fill(qkv, BM * QKV, ++seed, -1.f, 1.f);
    std::vector<u16*> kc(L), vc(L);
    const u64 cache = (u64)NK * S * D;  // a row's
    for (u32 l = 0; l < L; ++l) {
        CK(cudaMalloc(&kc[l], BM * cache * 2)); fill(kc[l], BM * cache, ++seed, -1.f, 1.f);
        CK(cudaMalloc(&vc[l], BM * cache * 2)); fill(vc[l], BM * cache, ++seed, -1.f, 1.f);
    }
    // RoPE table [S, D]: cosines, then sines (theta 500,000).
    float* table = rope_table(S, D);
    // gpu.rs attention_split / attention_grid for B rows: 1 head group; chunks at most 16
    // (ATT_MOST_SPLITS), the grid within 528 blocks (ATT_BLOCKS), at least 1.
    // w8h: the 8-warp kernel on half the blocks (264: one wave of 2 a multiprocessor).
    auto nsplit_of = [](u32 B, Att at = REAL) {
        return std::max(1u, std::min((at >= W8H ? 264u : 528u) / (B * NK), std::min(16u, (S + 255) / 256)));
    };
    u32 *pos, *ctr, *ovf;
    float* part;
    CK(cudaMalloc(&pos, BM * 4)); CK(cudaMalloc(&ctr, BM * NK * 4)); CK(cudaMalloc(&ovf, BM * 4));
    CK(cudaMemset(ctr, 0, BM * NK * 4)); CK(cudaMemset(ovf, 0, BM * 4));
    CK(cudaMalloc(&part, (u64)BM * NQ * 16 * (D + 4) * 4));
    std::vector<u16> x0(H);
    for (u32 i = 0; i < H; ++i) x0[i] = f2bf(0.5f * sinf(0.37f * i));
    const StepLaunch cq = gemv_step_launch(QKV, H, false), co = gemv_step_launch(H, H, false),
                     cg = gemv_step_launch(I, H, true), cd = gemv_step_launch(H, I, false);
    for (int a = REAL; a < NATT; ++a) {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, att_fn((Att)a)));
        printf("%-6s: %u threads, %d registers, %zu bytes local, %zu bytes static shared\n", att_name[a],
               att_threads((Att)a), fa.numRegs, fa.localSizeBytes, fa.sharedSizeBytes);
    }
    const float scale = 0.125f;
    // Attention for B rows over layer l's cache, its grid's launch programmatic when `pdl`.
    auto attn = [&](u32 l, Att at, u32 B, bool pdl) {
        const u32 ns = nsplit_of(B, at), max_chunk = (S + ns - 1) / ns;
        const dim3 ag(B * NK, 1, ns);
        if (at == EMPTY) launch_ck(pdl, att_empty<false>, ag, 128, 0);
        if (at == EMPTY_E) launch_ck(pdl, att_empty<true>, ag, 128, 0);
        if (at >= REAL)
            launch_ck(pdl, att_fn(at), ag, att_threads(at), 0u, (const u16*)qkv, (const u16*)kc[l], (const u16*)vc[l],
                   (const u32*)pos, 1u, NQ, NK, S, D, ns, max_chunk, 256u, scale, part, ctr, att, (const u16*)qkv,
                   (const u16*)nullptr, (const float*)table, (const u32*)nullptr, 0u, kc[l], vc[l], ovf);
    };
    auto layer = [&](int l, Att at) {
        const bool p0 = l > 0;  // the graph's first launch is plain
        launch_ck(p0, gemv_bf16, cq.grid, cq.threads, H * 2, (const u16*)a0, (const u16*)W[l].qkv, 1u, QKV, H, 1u,
               (const u16*)nw, 1e-5f, (const u16*)nullptr, qkv, cq.ks, (unsigned long long*)nullptr);
        attn(l, at, 1, true);
        launch_ck(true, gemv_bf16, co.grid, co.threads, H * 2, (const u16*)att, (const u16*)W[l].o, 1u, H, H, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)a0, h1, co.ks, (unsigned long long*)nullptr);
        launch_ck(true, gemv_glu_bf16, cg.grid, cg.threads, H * 2, (const u16*)h1, (const u16*)W[l].gu, 1u, I, H, 1u,
               (const u16*)nw, 1e-5f, g, cg.ks);
        launch_ck(true, gemv_bf16, cd.grid, cd.threads, I * 2, (const u16*)g, (const u16*)W[l].d, 1u, H, I, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)h1, a0, cd.ks, (unsigned long long*)nullptr);
    };
    auto set_pos = [&](u32 p) {
        std::vector<u32> v(BM, p);
        CK(cudaMemcpy(pos, v.data(), BM * 4, cudaMemcpyHostToDevice));
    };
    auto reset_x = [&]() { CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice)); };
    const Att real_ones[] = {REAL, W8, W8H, W8HF};
    // `one B P`: only the crate's decode attention (w8h) for B rows at position P, 8 launches
    // (for a profiler: ncu --kernel-name attention_rope_d64w8_bf16 --launch-skip 4 ...).
    // `alone B P`: only attention alone (w8h against w8hf, alternated twice), B rows at position P.
    if (argc == 4 && !strcmp(argv[1], "alone")) {
        const u32 B = std::min<u32>(BM, (u32)atoi(argv[2])), p = std::min<u32>(S - 1, (u32)atoi(argv[3]));
        set_pos(p);
        for (int round = 0; round < 2; ++round)
            for (Att at : {W8H, W8HF}) {
                const Timing t = time_graph(L, [&](int l) { attn(l, at, B, l > 0); });
                printf("alone B %2u position %4u %-6s round %d: %.2f us a launch (%.2f-%.2f)\n", B, p, att_name[at], round,
                       t.med, t.lo, t.hi);
            }
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "one")) {
        const u32 B = std::min<u32>(BM, (u32)atoi(argv[2])), p = std::min<u32>(S - 1, (u32)atoi(argv[3]));
        set_pos(p);
        for (int i = 0; i < 8; ++i) attn(0, W8H, B, false);
        CK(cudaDeviceSynchronize());
        printf("one: %u rows at position %u, 8 launches of w8h\n", B, p);
        return 0;
    }

    // Correctness: attention's output for 1, 8 and 32 rows at three positions, each variant
    // against the crate's 4-warp kernel: more warps merge in another order (the difference is
    // printed).
    for (u32 B : {1u, 8u, 32u})
        for (u32 p : {64u, 2000u, 8000u}) {
            set_pos(p);
            std::vector<u16> ref;
            for (Att at : real_ones) {
                CK(cudaMemset(att, 0xff, BM * H * 2));
                attn(0, at, B, false);
                const std::vector<u16> o = d2h(att, B * H);
                if (at == REAL) { ref = o; continue; }
                // w8 and w8h round the probabilities to bf16 for chunks of up to 1,024 keys: their
                // difference from the f32 path is printed.
                double md = 0;
                u32 nf = 0, diff = 0;
                for (u32 i = 0; i < B * H; ++i) {
                    const float a = bf2f(ref[i]), b = bf2f(o[i]);
                    if (!std::isfinite(b)) ++nf;
                    if (o[i] != ref[i]) ++diff;
                    md = std::max(md, (double)fabs(a - b));
                }
                printf("check B %2u position %4u %-6s: %u of %u differ from real, max |diff| %.3g, non-finite %u\n", B, p,
                       att_name[at], diff, B * H, md, nf);
            }
        }
    CK(cudaDeviceSynchronize());

#if defined(PROBE_TRACE)
    // Where the time goes: one traced graph a variant and position, replayed 30 times.
    for (u32 p : {64u, 2000u}) {
        set_pos(p);
        for (int ai = 0; ai < NATT; ++ai) {
            const Att at = (Att)ai;
            reset_x();
            cudaGraph_t gr;
            cudaGraphExec_t ex;
            CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
            for (u32 l = 0; l < L; ++l) layer(l, at);
            CK(cudaStreamEndCapture(g_s, &gr));
            CK(cudaGraphInstantiate(&ex, gr, 0));
            for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ex, g_s));
            CK(cudaStreamSynchronize(g_s));
            unsigned long long z[64] = {};
            CK(cudaMemcpyToSymbol(g_tr_acc, z, sizeof z));
            cudaEvent_t e0, e1;
            CK(cudaEventCreate(&e0)); CK(cudaEventCreate(&e1));
            CK(cudaEventRecord(e0, g_s));
            for (int i = 0; i < 30; ++i) CK(cudaGraphLaunch(ex, g_s));
            CK(cudaEventRecord(e1, g_s));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            unsigned long long acc[64];
            CK(cudaMemcpyFromSymbol(acc, g_tr_acc, sizeof acc));
            auto avg = [&](int s, int n) { return acc[n] ? acc[s] / 1e3 / acc[n] : 0.0; };
            printf("trace position %u %-7s: %.2f us a layer (traced); handoff to QKV %.2f, to O %.2f, to gate/up %.2f, "
                   "to down %.2f",
                   p, att_name[at], ms * 1e3 / 30 / L, avg(0, 1), avg(4, 5), avg(6, 7), avg(8, 9));
            if (at >= REAL)
                printf("; attention: handoff %.2f, start to wait's end %.2f, queries %.2f, keys %.2f, output %.2f, QKV's "
                       "end to output %.2f",
                       avg(16, 17), avg(18, 17), avg(20, 17), avg(22, 17), avg(24, 17), avg(26, 17));
            printf("\n");
            CK(cudaGraphExecDestroy(ex)); CK(cudaGraphDestroy(gr));
            CK(cudaEventDestroy(e0)); CK(cudaEventDestroy(e1));
        }
    }
#else
    // The chain: each variant twice a position, alternated.
    for (u32 p : {64u, 2000u, 8000u}) {
        set_pos(p);
        for (int round = 0; round < 2; ++round)
            for (int ai = 0; ai < NATT; ++ai) {
                const Att at = (Att)ai;
                reset_x();
                const Timing t = time_graph(L, [&](int l) { layer(l, at); });
                printf("chain position %u %-7s round %d: %.2f us a layer (%.2f-%.2f)\n", p, att_name[at], round, t.med,
                       t.lo, t.hi);
            }
    }
    // Attention alone: 16 launches (each layer's cache), programmatic but the first, for 1, 8
    // and 32 rows; µs a launch.
    for (u32 B : {1u, 8u, 32u})
        for (u32 p : {64u, 2000u, 8000u}) {
            set_pos(p);
            for (int round = 0; round < 2; ++round)
                for (Att at : real_ones) {
                    const Timing t = time_graph(L, [&](int l) { attn(l, at, B, l > 0); });
                    printf("alone B %2u position %4u %-6s round %d: %.2f us a launch (%.2f-%.2f)\n", B, p, att_name[at],
                           round, t.med, t.lo, t.hi);
                }
        }
#endif
    CK(cudaDeviceSynchronize());
    printf("done\n");
    return 0;
}
