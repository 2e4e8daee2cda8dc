// Probe for issue #32, target 3: the batch-1 LM head against a read of its weights.
//
// At batch 1 the LM head is `gemv_m1` (the final RMSNorm, the product, the argmax) over
// Llama-3.2-1B's 128,256 x 2,048 bf16 weights (525 MB). Replayed alone it took 0.133 ms on an
// H200 (run 135's breakdown, 3.95 TB/s), where one kernel reads the step's 2.47 GB at 4.54
// TB/s (run 131): about 116 µs for these bytes. The LM head is one long launch (each warp
// takes about 30 rows in turn), so what a row's end costs (its sums, its output, the loads of
// the next row issued only after them) repeats 30 times a warp. Variants of the crate's kernel
// (decode.cu's gemv with DIAG and GL template arguments):
//   crate      gemv_m1: 4 loads a lane a round (GEMV_L), 64 registers, grid of 528
//   ahead      DIAG 256: the next row's first loads issued before this row's sums and output
//   L8/r128    8 loads a round, 128 registers (2 blocks of 256 a multiprocessor), grid 264
//   L8/r128 ahead
//   L8/r80     8 loads a round, 80 registers (3 blocks of 256), grid 396
//   L8/r80 ahead
//   read       a kernel that only reads the same bytes (2 blocks of 256 a multiprocessor, 8
//              16-byte loads a thread in flight)
// Each variant's outputs and argmax against the crate's, bit for bit; then graphs of 8
// launches, µs a launch, medians, rounds alternated three times. Then gate/up (Llama-3.2-1B,
// about 2 rows a warp) alone with and without DIAG 256.
//
// DIAG 256 and the GL template argument are not in the crate's kernel (neither was kept: run
// 166, docs/gpu-runs/2026-12-01-issue32/); they are in that folder's probe-variants.patch,
// which this probe needs applied to decode.cu (`scripts/gpu_issue32.sh lmhead` builds it on a
// patched copy).
//
// Build and run (the GPU machine), from a tree with the patch applied:
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -o lm_head_probe bench/lm_head_probe.cu
//   ./lm_head_probe
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static const u32 H = 2048, V = 128256, I = 8192;

template <u32 D, u32 GL, u32 MINB>
__global__ void __launch_bounds__(256, MINB)
    lm_head(const u16* x, const u16* W, u32 N, u32 K, const u16* nw, float eps, u16* y, u32 ks,
            unsigned long long* amax) {
    gemv<BF16, false, D, 1, GL>(x, W, 1, N, K, 1u, nw, eps, nullptr, y, ks, amax);
}
template <u32 D>
__global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS)
    gate_up(const u16* x, const u16* W, u32 N, u32 K, const u16* nw, float eps, u16* y, u32 ks) {
    gemv<BF16, true, D, 1>(x, W, 1, N, K, 1u, nw, eps, nullptr, y, ks, nullptr);
}
__global__ void __launch_bounds__(256, 2) read_only(const uint4* p, u64 n, u32* sink) {
    u32 acc = 0;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 7 * stride < n; i += 8 * stride) {
        uint4 v[8];
#pragma unroll
        for (int j = 0; j < 8; ++j) v[j] = ld_weight<0>(p + i + j * stride);
#pragma unroll
        for (int j = 0; j < 8; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    for (; i < n; i += stride) {
        const uint4 v = ld_weight<0>(p + i);
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    if (acc == 0x12345678u) sink[0] = acc;
}

template <typename F> static void attrs(const char* name, F f) {
    cudaFuncAttributes a;
    CK(cudaFuncGetAttributes(&a, f));
    printf("%-16s %d registers, %zu B local\n", name, a.numRegs, a.localSizeBytes);
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    probe_device();
    u16 *x, *w, *nw, *y, *gx, *gw, *gy;
    unsigned long long* amax;
    u32* sink;
    CK(cudaMalloc(&x, H * 2));
    CK(cudaMalloc(&w, (u64)V * H * 2));
    CK(cudaMalloc(&nw, H * 2));
    CK(cudaMalloc(&y, (u64)V * 2));
    CK(cudaMalloc(&gx, H * 2));
    CK(cudaMalloc(&gw, 2ull * I * H * 2));
    CK(cudaMalloc(&gy, (u64)I * 2));
    CK(cudaMalloc(&amax, 8));
    CK(cudaMalloc(&sink, 4));
    fill(x, H, 1, -1.f, 1.f);
    fill(w, (u64)V * H, 2, -0.04f, 0.04f);
    fill(nw, H, 3, 0.5f, 1.5f);
    fill(gx, H, 4, -1.f, 1.f);
    fill(gw, 2ull * I * H, 5, -0.04f, 0.04f);
    CK(cudaDeviceSynchronize());
    attrs("crate", lm_head<0, 4, 4>);
    attrs("ahead", lm_head<256, 4, 4>);
    attrs("L8/r128", lm_head<0, 8, 2>);
    attrs("L8/r128 ahead", lm_head<256, 8, 2>);
    attrs("L8/r80", lm_head<0, 8, 3>);
    attrs("L8/r80 ahead", lm_head<256, 8, 3>);
    attrs("gate/up ahead", gate_up<256>);
    const u32 rows = 256 / 32;  // ks 1: 8 rows a block
    const u32 groups = (V + rows - 1) / rows;
    struct Var { const char* name; void (*f)(const u16*, const u16*, u32, u32, const u16*, float, u16*, u32, unsigned long long*); u32 grid; };
    const Var vars[] = {
        {"crate", lm_head<0, 4, 4>, std::min(groups, 528u)},
        {"ahead", lm_head<256, 4, 4>, std::min(groups, 528u)},
        {"L8/r128", lm_head<0, 8, 2>, std::min(groups, 264u)},
        {"L8/r128 ahead", lm_head<256, 8, 2>, std::min(groups, 264u)},
        {"L8/r80", lm_head<0, 8, 3>, std::min(groups, 396u)},
        {"L8/r80 ahead", lm_head<256, 8, 3>, std::min(groups, 396u)},
    };
    auto run = [&](const Var& v) {
        CK(cudaMemset(amax, 0, 8));
        CK(cudaMemset(y, 0xff, (u64)V * 2));
        launch_ck(false, v.f, v.grid, 256, H * 2, (const u16*)x, (const u16*)w, V, H, (const u16*)nw, 1e-5f, y, 1u, amax);
        CK(cudaDeviceSynchronize());
        std::vector<u16> out = d2h(y, V);
        const auto am = d2h(amax, 1);
        return std::make_pair(out, am[0]);
    };
    const auto ref = run(vars[0]);
    for (const Var& v : vars) {
        const auto r = run(v);
        printf("%-16s grid %u: outputs %s the crate's, argmax key %s (%llx, row %u)\n", v.name, v.grid,
               r.first == ref.first ? "equal" : "DIFFER FROM", r.second == ref.second ? "equal" : "DIFFERS",
               r.second, 0xffffffffu - (u32)(r.second & 0xffffffffu));
    }
    const double mb = (double)V * H * 2 / 1e6;
    printf("\n| round | read | crate | ahead | L8/r128 | L8/r128 ahead | L8/r80 | L8/r80 ahead |\n|---|---|---|---|---|---|---|---|\n");
    for (int rep = 0; rep < 3; ++rep) {
        printf("| LM head %d, µs a launch (TB/s) |", rep);
        const double tr = time_graph(8, [&](int) {
                              launch_ck(false, read_only, 2 * g_sms, 256, 0, (const uint4*)w, (u64)V * H / 8, sink);
                          }).med;
        printf(" %.2f (%.2f) |", tr, mb / tr);
        for (const Var& v : vars) {
            const double t = time_graph(8, [&](int) {
                                 launch_ck(false, v.f, v.grid, 256, H * 2, (const u16*)x, (const u16*)w, V, H, (const u16*)nw,
                                           1e-5f, y, 1u, amax);
                             }).med;
            printf(" %.2f (%.2f) |", t, mb / t);
        }
        printf("\n");
    }
    // gate/up: gpu.rs's launch (256 threads, ks 1, grid 528), alone and under PDL.
    auto gu = [&](auto f, bool pdl, int i) {
        launch_ck(pdl && i > 0, f, 528, 256, H * 2, (const u16*)gx, (const u16*)gw, I, H, (const u16*)nw, 1e-5f, gy, 1u);
    };
    CK(cudaMemset(gy, 0, I * 2));
    gu(gate_up<0>, false, 0);
    const auto g0 = d2h(gy, I);
    CK(cudaMemset(gy, 0, I * 2));
    gu(gate_up<256>, false, 0);
    printf("\ngate/up ahead: outputs %s the crate's\n", d2h(gy, I) == g0 ? "equal" : "DIFFER FROM");
    for (int rep = 0; rep < 3; ++rep) {
        const double t0 = time_graph(16, [&](int i) { gu(gate_up<0>, true, i); }).med;
        const double t1 = time_graph(16, [&](int i) { gu(gate_up<256>, true, i); }).med;
        printf("| gate/up %d, µs a launch (16 under PDL, one weight) | crate %.2f | ahead %.2f |\n", rep, t0, t1);
    }
    return 0;
}
