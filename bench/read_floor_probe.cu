// Probe for issue #32, target 3: how fast can this GPU read the bytes of a batch-1 decode step
// of Llama-3.2-1B at all, with and without the step's dependencies?
//
// The step's weights as the step holds them: 16 layers of QKV [3072, 2048], O [2048, 2048],
// gate/up [16384, 2048] and down [2048, 8192], then the LM head [128256, 2048], bf16, each its
// own allocation (2.47 GB). A read-only kernel streams a matrix: every thread loads 16-byte
// words at a grid stride, 8 in flight, and folds them into a register (nothing is computed;
// one store that never happens keeps the loads). Paths, each in a CUDA graph, medians of 7 x 30
// replays (bench/probe_host.cuh), ms for the whole step's bytes:
//   one      one kernel over all of it, as one array (the LM head's bytes counted by the sizes
//            above): the read rate alone, swept over blocks a multiprocessor;
//   plain    65 kernels, one a matrix, plain launches (the graph's node boundaries);
//   pdl-dep  65 kernels, programmatic launch: each block lets its successor launch at its
//            start, issues its first 8 loads, then waits for its predecessor
//            (griddepcontrol.wait) before the rest: the step's products' structure, with the
//            products taken out;
//   pdl-free 65 kernels, programmatic launch, the wait at the block's end: the kernels overlap
//            freely (no data dependency), so boundaries cost only what the launch does;
//   layers alone: plain and pdl-dep over the 16 layers' 64 matrices, in µs a layer (the unit
//            of bench/pdl_gemv_probe.cu, which times the step's own GEMVs over the same shapes);
//            and pdl-dep + x: as pdl-dep, but each kernel reads a 4 KB vector its predecessor
//            wrote before it folds in its first loads, and writes one for its successor (a
//            product's data dependency, with the product's arithmetic still left out).
// `one` is swept over 2, 4 and 8 blocks a multiprocessor; the 65-kernel paths run at the best
// of those and twice it; `layers alone` at 2 and 4.
// What it bounds: a step whose products are graph nodes cannot stream its weights faster than
// `pdl-dep` (whatever the product's arithmetic), and no design can read them faster than `one`.
//
// Build and run (the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -o read_floor_probe bench/read_floor_probe.cu
//   ./read_floor_probe
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static __device__ __forceinline__ void xor_in(uint4& a, const uint4& v) {
    a.x ^= v.x;
    a.y ^= v.y;
    a.z ^= v.z;
    a.w ^= v.w;
}
// mode 0: plain; 1: PDL, wait after the first loads; 2: PDL, wait at the end; 3: as 1, then
// each thread reads a word of `xin` (4 KB its predecessor wrote) before it folds in its first
// loads, and block 0 writes 4 KB to `xout` at its end: a product's dependency on its input.
__global__ void __launch_bounds__(256) stream_read(const uint4* __restrict__ p, u64 n, int mode, u32* sink,
                                                   const uint4* xin, uint4* xout) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (mode) asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
    uint4 acc = make_uint4(0, 0, 0, 0), v[8];
#pragma unroll
    for (u32 j = 0; j < 8; ++j) v[j] = i + j * stride < n ? __ldg(p + i + j * stride) : make_uint4(0, 0, 0, 0);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (mode == 1 || mode == 3) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    if (mode == 3) acc = __ldcg(xin + threadIdx.x % 256);
#pragma unroll
    for (u32 j = 0; j < 8; ++j) xor_in(acc, v[j]);
    for (i += 8 * stride; i < n; i += 8 * stride) {
#pragma unroll
        for (u32 j = 0; j < 8; ++j) v[j] = i + j * stride < n ? __ldg(p + i + j * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (u32 j = 0; j < 8; ++j) xor_in(acc, v[j]);
    }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (mode == 2) asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
    // Never true for the fill below in practice; it keeps the loads.
    if ((acc.x & acc.y & acc.z & acc.w) == 0xffffffffu) sink[blockIdx.x % 64] = acc.x;
    if (mode == 3 && blockIdx.x == 0) xout[threadIdx.x] = acc;
}

// Ping-pong input/output vectors for mode 3 (4 KB each).
static uint4* g_xv[2];
static int g_xi = 0;
static void launch(bool pdl, u32 grid, const uint4* p, u64 n, int mode, u32* sink) {
    const uint4* xin = g_xv[g_xi];
    uint4* xout = g_xv[g_xi ^ 1];
    g_xi ^= 1;
    CK(launch_ex(pdl, stream_read, grid, 256, 0, p, n, mode, sink, xin, xout));
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    probe_device();
    const u32 H = 2048, QKV = 3072, I = 8192, L = 16, V = 128256;
    // The matrices in the step's order, each its own allocation; `all` holds the same bytes in
    // one array for the `one` path.
    std::vector<std::pair<const uint4*, u64>> mats;
    u64 seed = 11, total = 0;
    const std::vector<LayerWeights> W = layer_weights(L, H, QKV, I, seed, 0.0383f, 0.0191f);
    for (const auto& w : W) {
        mats.push_back({(const uint4*)w.qkv, (u64)QKV * H * 2 / 16});
        mats.push_back({(const uint4*)w.o, (u64)H * H * 2 / 16});
        mats.push_back({(const uint4*)w.gu, 2ull * I * H * 2 / 16});
        mats.push_back({(const uint4*)w.d, (u64)H * I * 2 / 16});
    }
    u16* head;
    CK(cudaMalloc(&head, (u64)V * H * 2));
    fill(head, (u64)V * H, ++seed, -0.05f, 0.05f);
    mats.push_back({(const uint4*)head, (u64)V * H * 2 / 16});
    for (const auto& m : mats) total += m.second;
    u16* all;
    CK(cudaMalloc(&all, total * 16));
    fill(all, total * 8, ++seed, -0.05f, 0.05f);
    u32* sink;
    CK(cudaMalloc(&sink, 64 * 4));
    for (auto& x : g_xv) {
        CK(cudaMalloc(&x, 256 * 16));
        CK(cudaMemset(x, 0, 256 * 16));
    }
    CK(cudaStreamSynchronize(g_s));
    const double gb = total * 16 / 1e9;
    printf("the step's weights: %zu matrices, %.3f GB\n", mats.size(), gb);
    printf("| path | blocks a multiprocessor | ms | min–max | GB/s |\n|---|---|---|---|---|\n");
    auto row = [&](const char* name, u32 per_sm, const Timing& t) {
        printf("| %s | %u | %.4f | %.4f–%.4f | %.0f |\n", name, per_sm, t.med / 1e3, t.lo / 1e3, t.hi / 1e3, gb * 1e6 / t.med);
    };
    // Twice, so drift shows.
    for (int rep = 0; rep < 2; ++rep) {
        u32 best_sm = 4;
        double best = 1e30;
        for (u32 per_sm : {2u, 4u, 8u}) {
            const Timing t = time_graph(1, [&](int) { launch(false, g_sms * per_sm, (const uint4*)all, total, 0, sink); });
            row("one", per_sm, t);
            if (t.med < best) { best = t.med; best_sm = per_sm; }
        }
        for (u32 per_sm : {best_sm, 2u * best_sm}) {
            const Timing p = time_graph(1, [&](int) {
                for (const auto& m : mats) launch(false, g_sms * per_sm, m.first, m.second, 0, sink);
            });
            row("plain (65 kernels)", per_sm, p);
            const Timing d = time_graph(1, [&](int) {
                bool first = true;
                for (const auto& m : mats) { launch(!first, g_sms * per_sm, m.first, m.second, 1, sink); first = false; }
            });
            row("pdl-dep (65 kernels, wait after the first loads)", per_sm, d);
            const Timing f = time_graph(1, [&](int) {
                bool first = true;
                for (const auto& m : mats) { launch(!first, g_sms * per_sm, m.first, m.second, 2, sink); first = false; }
            });
            row("pdl-free (65 kernels, wait at the end)", per_sm, f);
        }
        // The 16 layers alone (64 kernels, no LM head), µs a layer: bench/pdl_gemv_probe.cu's
        // unit for the step's own GEMVs.
        for (u32 per_sm : {2u, 4u})
            for (int mode : {0, 1, 3}) {
                const Timing t = time_graph(1, [&](int) {
                    for (size_t i = 0; i + 1 < mats.size(); ++i)
                        launch(mode && i > 0, g_sms * per_sm, mats[i].first, mats[i].second, mode, sink);
                });
                printf("| layers alone, %s | %u | %.2f µs a layer | %.2f–%.2f | %.0f |\n",
                       mode == 3 ? "pdl-dep + x" : mode ? "pdl-dep" : "plain", per_sm,
                       t.med / L, t.lo / L, t.hi / L, (gb - (double)V * H * 2 / 1e9) * 1e6 / t.med);
            }
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
