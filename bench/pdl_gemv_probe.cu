// Probe for issue #32, target 3: does programmatic dependent launch (PDL) shorten the step's
// own chain of GEMVs? bench/pdl_probe.cu (issue #22) found it 6% slower, but on a product that
// ran at half the step's rate; this one uses the step's kernels (kernels/decode.cu built with
// DECODE_PDL and DECODE_PDL_PROBE: the hooks described there, in a mode chosen at run time).
//
// The chain: 16 layers x the batch-1 step's four GEMVs at the Llama-3.2-1B shapes (QKV with
// RMSNorm, O + residual, gate/up with RMSNorm and SwiGLU, down + residual; each layer its own
// weights, 1.95 GB), launched as gpu.rs launches them (probe_host.cuh `gemv_step_launch`).
// Captured into a CUDA graph, replayed 3 + 7 x 30 times, median, in µs a layer.
//
// Paths:
//   plain   plain launches (the kernels' PDL hooks do nothing: no programmatic dependency);
//   pdl m   every launch but the first with the programmatic-serialization attribute, the
//           kernels in mode m (decode.cu: where a block lets its successor launch, and whether
//           it prefetches its first row into L2 before it waits).
// Every path's output (the residual stream after 16 layers) must equal the plain path's, bit
// for bit. The graph's programmatic edges are counted, to show the attribute was captured.
// A second chain adds, between QKV and O, a stall kernel of 8 blocks spinning 6 µs (the
// stand-in for RoPE + attention), launched plainly: it lets O launch only at its exit.
// A third puts stream-ordered allocations between the kernels, as a captured candle step has
// them (its intermediates are graph memory): a 4 KB `cudaMallocAsync` before each of O,
// gate/up and down, the three freed after down. Whether a programmatic edge survives an
// allocation node between two kernels is what the edge count shows. A fourth puts a 4 KB
// memset node there instead; a fifth makes the three allocations at the layer's start, before
// QKV (kernels adjacent within a layer, allocation and free nodes between layers). A sixth
// lets the stall kernel take part in PDL, as attention would: it waits for QKV, then lets O
// launch at once, so that O's blocks load their weights while it runs.
//
// Build and run (the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -DDECODE_PDL_PROBE -o pdl_gemv_probe bench/pdl_gemv_probe.cu -lcublas
//   ./pdl_gemv_probe
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static const u32 H = 2048, QKV = 3072, I = 8192, L = 16;

static __device__ __forceinline__ u64 clock_now() {
    u64 t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
// The stand-in for attention: `ns` of spinning in a few blocks. With `pdl` (launched
// programmatically in section 6) it waits for its predecessor, then lets its successor launch
// at once: the successor's blocks take the idle multiprocessors while it spins.
__global__ void stall(u64 ns, int pdl) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (pdl) {
        asm volatile("griddepcontrol.wait;" ::: "memory");
        asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    }
#endif
    const u64 t0 = clock_now();
    while (clock_now() - t0 < ns) {}
}

// The first error of a launch or a stream-ordered call (kept, not fatal: a capture that the
// driver refuses is a result here).
static cudaError_t g_err = cudaSuccess;
static void note(cudaError_t e) {
    if (e != cudaSuccess && g_err == cudaSuccess) g_err = e;
}

template <typename F, typename... A>
static void launch(bool pdl, F f, u32 grid, u32 threads, u32 smem, A... args) {
    note(launch_ex(pdl, f, grid, threads, smem, args...));
}

// Programmatic edges in a capture of `body`; -1 (the error printed) where a call in it, or the
// capture itself, failed.
static long programmatic_edges(const std::function<void()>& body) {
    cudaGraph_t g = nullptr;
    g_err = cudaSuccess;
    CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
    body();
    const cudaError_t end = cudaStreamEndCapture(g_s, &g);
    if (g_err != cudaSuccess || end != cudaSuccess) {
        printf("capture failed: %s / %s\n", cudaGetErrorString(g_err), cudaGetErrorString(end));
        if (g) cudaGraphDestroy(g);
        cudaGetLastError();
        g_err = cudaSuccess;
        return -1;
    }
    size_t n = 0;
    CK(cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &n));
    std::vector<cudaGraphNode_t> from(n), to(n);
    std::vector<cudaGraphEdgeData> data(n);
    CK(cudaGraphGetEdges(g, from.data(), to.data(), data.data(), &n));
    size_t prog = 0;
    for (auto& d : data) prog += d.type == cudaGraphDependencyTypeProgrammatic;
    CK(cudaGraphDestroy(g));
    return (long)prog;
}

int main() {
    probe_device();
    u64 seed = 7;
    const Chain ch = chain_setup(L, H, QKV, I, seed);
    const std::vector<LayerWeights>& W = ch.W;
    u16 *a0 = ch.a0, *a1 = ch.a1, *nw = ch.nw, *g = ch.g;
    unsigned char* scratch;  // the memset section's target
    CK(cudaMalloc(&scratch, 3 * 4096));
    const std::vector<u16> x0 = chain_input(H);

    const StepLaunch cq = gemv_step_launch(QKV, H, false), co = gemv_step_launch(H, H, false),
                     cg = gemv_step_launch(I, H, true), cd = gemv_step_launch(H, I, false);
    printf("launches (threads, ks, grid): qkv %u %u %u, o %u %u %u, gate/up %u %u %u, down %u %u %u\n", cq.threads, cq.ks,
           cq.grid, co.threads, co.ks, co.grid, cg.threads, cg.ks, cg.grid, cd.threads, cd.ks, cd.grid);
    // One layer; `pdl`: the attribute on each launch but the chain's first; `between` 1: a
    // stall kernel between QKV and O, launched plainly; 2: allocations between the kernels.
    auto layer = [&](int l, bool pdl, int between) {
        const u64 stall_ns = between == 1 || between == 5 ? 6000 : 0;
        void* tmp[3] = {};
        int ntmp = 0;
        auto alloc = [&] {
            if (between == 2) note(cudaMallocAsync(&tmp[ntmp++], 4096, g_s));
            if (between == 3) note(cudaMemsetAsync(scratch + 4096 * ntmp++, 0, 4096, g_s));
        };
        if (between == 4)
            for (int i = 0; i < 3; ++i) note(cudaMallocAsync(&tmp[ntmp++], 4096, g_s));
        launch(pdl && l > 0, gemv_bf16, cq.grid, cq.threads, H * 2, (const u16*)a0, (const u16*)W[l].qkv, 1u, QKV, H,
               1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, cq.ks, (unsigned long long*)nullptr);
        // Section 6: the stall takes part (launched programmatically when the GEMVs are).
        const bool stall_pdl = between == 5 && pdl;
        if (stall_ns) launch(stall_pdl, stall, 8, 32, 0, stall_ns, (int)stall_pdl);
        alloc();
        launch(pdl, gemv_bf16, co.grid, co.threads, H * 2, (const u16*)a1, (const u16*)W[l].o, 1u, H, H, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, co.ks, (unsigned long long*)nullptr);
        alloc();
        launch(pdl, gemv_glu_bf16, cg.grid, cg.threads, H * 2, (const u16*)(a0 + I), (const u16*)W[l].gu, 1u, I, H,
               1u, (const u16*)nw, 1e-5f, g, cg.ks);
        alloc();
        launch(pdl, gemv_bf16, cd.grid, cd.threads, I * 2, (const u16*)g, (const u16*)W[l].d, 1u, H, I, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, cd.ks, (unsigned long long*)nullptr);
        if (between == 2 || between == 4)
            for (int i = 0; i < ntmp; ++i) note(cudaFreeAsync(tmp[i], g_s));
    };
    auto set_mode = [&](u32 m) { CK(cudaMemcpyToSymbol(g_pdl_mode, &m, 4)); };
    auto run_out = [&](bool pdl, int between) {
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer(l, pdl, between);
        return d2h(a0, H);
    };
    const char* names[] = {"start", "last group", "exit", "", "start + L2", "last group + L2", "exit + L2"};
    const u32 modes[] = {0, 1, 2, 4, 5, 6};
    const char* sections[] = {"the four GEMVs alone", "with a 6 µs stall kernel between QKV and O",
                              "with a 4 KB stream-ordered allocation before O, gate/up and down, freed after down",
                              "with a 4 KB memset before O, gate/up and down",
                              "with three 4 KB stream-ordered allocations before QKV, freed after down",
                              "with the 6 µs stall between QKV and O taking part (under PDL: launched programmatically, "
                              "waiting for QKV, then letting O launch at once)"};
    for (int between : {0, 1, 2, 3, 4, 5}) {
        set_mode(2);
        const auto ref = run_out(false, 0);
        bool finite = true;
        for (u16 v : ref) finite = finite && std::isfinite(bf2f(v));
        const auto ref_s = run_out(false, between);
        // The output's hash: builds with different knobs compare by it.
        printf("\n%s (reference output %s, %s; hash %016llx)\n", sections[between], finite ? "finite" : "NOT FINITE",
               ref_s == ref ? "equal to the chain's alone" : "NOT EQUAL to the chain's alone", hash16(ref));
        printf("| path | programmatic edges | µs a layer (median) | min–max | vs plain | output |\n|---|---|---|---|---|---|\n");
        // Alternate plain and each PDL mode twice, so drift shows (past the first two sections,
        // without the L2 variants).
        for (int rep = 0; rep < 2; ++rep) {
            set_mode(2);
            const long pe = programmatic_edges([&] { for (u32 l = 0; l < L; ++l) layer(l, false, between); });
            if (pe < 0) break;
            const Timing p = time_graph(L, [&](int l) { layer(l, false, between); });
            printf("| plain (%d) | %ld | %.2f | %.2f–%.2f | 1.000 | reference |\n", rep + 1, pe, p.med, p.lo, p.hi);
            for (u32 m : modes) {
                if (between >= 2 && (m & 4)) continue;
                set_mode(m);
                const long e = programmatic_edges([&] { for (u32 l = 0; l < L; ++l) layer(l, true, between); });
                if (e < 0) {
                    printf("| pdl, %s (%d) | capture failed | | | | |\n", names[m], rep + 1);
                    continue;
                }
                const Timing t = time_graph(L, [&](int l) { layer(l, true, between); });
                g_err = cudaSuccess;
                const bool same = run_out(true, between) == ref && g_err == cudaSuccess;
                printf("| pdl, %s (%d) | %ld | %.2f | %.2f–%.2f | %.3f | %s |\n", names[m], rep + 1, e, t.med, t.lo, t.hi,
                       t.med / p.med, same ? "equal" : "MISMATCH");
            }
        }
    }
    CK(cudaDeviceSynchronize());
    return 0;
}
