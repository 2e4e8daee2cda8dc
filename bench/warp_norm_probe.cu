// Probe for issue #32, target 3: the batch-1 norm's statistics without block barriers.
//
// QKV and gate/up run an RMSNorm on x before their products. The crate's GEMV (gemv_m1,
// gemv_glu_m1) sums x's squares across the block (block_inv_rms: two barriers), writes f(x) to
// shared memory and waits at a third barrier before its products. stream_gemv_probe's DIAG 16
// (no block reduction at all: wrong values, a bound) put the norm's reduction at 1.8 µs a
// layer (run 163). The variants here, decode.cu's DIAG bits on the mode-fixed kernels:
//   64        the held norm without block_inv_rms's second barrier: the same bits as the crate's
//   32        each warp its own norm: a lane loads the words of x it reads in the products (from
//             L1/L2), the warp sums their squares (the same total in every warp) and writes
//             f(x) to its own K elements of shared memory: no block barrier at all
//   32 | 128  the same with x staged in shared memory first (a word a thread, one barrier)
//   16        stream_gemv_probe's bound (no reduction; wrong values)
// The chain: 16 layers x QKV, O, gate/up, down under PDL (Llama-3.2-1B's shapes, bf16, each
// layer its own weights), in a CUDA graph, µs a layer; and QKV and gate/up alone (16 launches).
// Rounds alternate the variants, three times.
//
// The DIAG bits 32, 64 and 128 (and the GL argument lm_head_probe.cu uses) are not in the
// crate's kernel: none was kept (run 165, docs/gpu-runs/2026-12-01-issue32/). They are in
// docs/gpu-runs/2026-12-01-issue32/probe-variants.patch, which this probe needs applied to
// decode.cu; `scripts/gpu_issue32.sh warpnorm` builds it on a patched copy.
//
// Build and run (the GPU machine), from a tree with the patch applied:
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -o warp_norm_probe bench/warp_norm_probe.cu
//   ./warp_norm_probe
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static const u32 H = 2048, QKV = 3072, I = 8192, L = 16;

// The crate's batch-1 bf16 GEMV for one mode (F), with decode.cu's DIAG bits D.
template <bool GLU, u32 D, int F>
__global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS)
    gemv_df(const u16* x, const u16* W, u32 N, u32 K, const u16* nw, float eps, const u16* residual, u16* y, u32 ks) {
    gemv<BF16, GLU, D, F>(x, W, 1, N, K, (u32)F, nw, eps, residual, y, ks, nullptr);
}

template <u32 V> using U = std::integral_constant<u32, V>;

template <u32 D> static void regs(const char* name) {
    cudaFuncAttributes a, b;
    CK(cudaFuncGetAttributes(&a, gemv_df<false, D, 1>));
    CK(cudaFuncGetAttributes(&b, gemv_df<true, D, 1>));
    printf("%-10s QKV kernel %d registers, %zu B local; gate/up kernel %d registers, %zu B local\n", name, a.numRegs,
           a.localSizeBytes, b.numRegs, b.localSizeBytes);
    for (auto f : {gemv_df<false, D, 1>, gemv_df<true, D, 1>})
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 96 * 1024));
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    probe_device();
    u64 seed = 7;
    const Chain ch = chain_setup(L, H, QKV, I, seed);
    const std::vector<LayerWeights>& W = ch.W;
    u16 *a0 = ch.a0, *a1 = ch.a1, *nw = ch.nw, *g = ch.g;
    const std::vector<u16> x0 = chain_input(H);
    const StepLaunch cq = gemv_step_launch(QKV, H, false), co = gemv_step_launch(H, H, false),
                     cg = gemv_step_launch(I, H, true), cd = gemv_step_launch(H, I, false);
    regs<0>("crate");
    regs<64>("DIAG 64");
    regs<32>("DIAG 32");
    regs<32 | 128>("DIAG 160");
    regs<16>("DIAG 16");
    // Shared memory a launch of the norm kernels takes: x (H elements), or a warp's f(x) each
    // (DIAG 32), plus x itself (DIAG 128).
    auto smem = [&](u32 D, u32 threads) -> u32 {
        if (!(D & 32)) return H * 2;
        return (threads / 32 + ((D & 128) ? 1 : 0)) * H * 2;
    };
    auto layer = [&](auto d_tag, int l, bool pdl, int only = -1) {
        constexpr u32 D = decltype(d_tag)::value;
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        if (on(0)) launch_ck(pd(0), gemv_df<false, D, 1>, cq.grid, cq.threads, smem(D, cq.threads), (const u16*)a0,
                          (const u16*)W[l].qkv, QKV, H, (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, cq.ks);
        if (on(1)) launch_ck(pd(1), gemv_df<false, 0, 0>, co.grid, co.threads, H * 2, (const u16*)a1, (const u16*)W[l].o, H,
                          H, (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, co.ks);
        if (on(2)) launch_ck(pd(2), gemv_df<true, D, 1>, cg.grid, cg.threads, smem(D, cg.threads), (const u16*)(a0 + I),
                          (const u16*)W[l].gu, I, H, (const u16*)nw, 1e-5f, (const u16*)nullptr, g, cg.ks);
        if (on(3)) launch_ck(pd(3), gemv_df<false, 0, 0>, cd.grid, cd.threads, I * 2, (const u16*)g, (const u16*)W[l].d, H,
                          I, (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, cd.ks);
    };
    // The chains' outputs: 64 must equal the crate's bit for bit; 32 and 160 equal each other
    // (the same sums), close to the crate's (another order for the squares), and repeat.
    auto run = [&](auto d, bool pdl) {
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer(d, l, pdl);
        CK(cudaDeviceSynchronize());
        return d2h(a0, H);
    };
    const auto r0 = run(U<0>{}, false), r64 = run(U<64>{}, true), r32 = run(U<32>{}, true), r160 = run(U<160>{}, true);
    const auto r32b = run(U<32>{}, false);
    double mx = 0, md = 0;
    for (u32 i = 0; i < H; ++i) {
        mx = std::max(mx, (double)fabsf(bf2f(r0[i])));
        md = std::max(md, fabs((double)bf2f(r0[i]) - bf2f(r32[i])));
        if (!std::isfinite(bf2f(r32[i]))) md = INFINITY;
    }
    printf("16 layers: DIAG 64 %s the crate's; DIAG 32 %s DIAG 160; DIAG 32 plain %s DIAG 32 pdl; DIAG 32 against the "
           "crate's: largest difference %.3g of the largest |y| (%.3g)\n",
           r64 == r0 ? "equals" : "DIFFERS FROM", r32 == r160 ? "equals" : "DIFFERS FROM",
           r32b == r32 ? "equals" : "DIFFERS FROM", md / std::max(mx, 1e-30), mx);
    printf("launches (threads, ks, grid): qkv %u %u %u, o %u %u %u, gate/up %u %u %u, down %u %u %u\n", cq.threads, cq.ks,
           cq.grid, co.threads, co.ks, co.grid, cg.threads, cg.ks, cg.grid, cd.threads, cd.ks, cd.grid);
    printf("\n| round | crate (gemv_m) | DIAG 64 | DIAG 32 | DIAG 160 | DIAG 16 (bound) |\n|---|---|---|---|---|---|\n");
    for (int rep = 0; rep < 3; ++rep) {
        const double t0 = time_graph(L, [&](int l) { layer(U<0>{}, l, true); }).med;
        const double t64 = time_graph(L, [&](int l) { layer(U<64>{}, l, true); }).med;
        const double t32 = time_graph(L, [&](int l) { layer(U<32>{}, l, true); }).med;
        const double t160 = time_graph(L, [&](int l) { layer(U<160>{}, l, true); }).med;
        const double t16 = time_graph(L, [&](int l) { layer(U<16>{}, l, true); }).med;
        printf("| chain %d, µs a layer | %.2f | %.2f | %.2f | %.2f | %.2f |\n", rep, t0, t64, t32, t160, t16);
    }
    const char* pn[] = {"QKV", "O", "gate/up", "down"};
    for (int rep = 0; rep < 2; ++rep)
        for (int j : {0, 2}) {
            const double t0 = time_graph(L, [&](int l) { layer(U<0>{}, l, true, j); }).med;
            const double t64 = time_graph(L, [&](int l) { layer(U<64>{}, l, true, j); }).med;
            const double t32 = time_graph(L, [&](int l) { layer(U<32>{}, l, true, j); }).med;
            const double t160 = time_graph(L, [&](int l) { layer(U<160>{}, l, true, j); }).med;
            const double t16 = time_graph(L, [&](int l) { layer(U<16>{}, l, true, j); }).med;
            printf("| %s alone %d, µs a launch | %.2f | %.2f | %.2f | %.2f | %.2f |\n", pn[j], rep, t0, t64, t32, t160, t16);
        }
    CK(cudaDeviceSynchronize());
    return 0;
}
