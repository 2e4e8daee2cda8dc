// Probe for issue #32, target 3: where a launch of the batch-1 step's GEMV spends its time
// under programmatic dependent launch (PDL), block by block.
//
// bench/stream_gemv_probe.cu found, on an H200 (run 142), the four products of a layer 7.4 µs
// slower as a chain than their access pattern alone (decode.cu's DIAG 3: no staging of f(x),
// the products replaced by an XOR), while each piece taken out alone gained 1-2 µs (DIAG 1 no
// staging, DIAG 2 no products). This probe stamps decode.cu's DECODE_TRACE sites in gemv with
// %globaltimer (block by block: 3 its start, 0 after its wait, 2 f(x) staged and the barrier
// passed, 1 the last warp's end) and reports, per launch, averaged over the launches:
//   early    the first block's start before its predecessor's last block ended (PDL);
//   handoff  a block's wait ending after its predecessor's last block ended (mean over blocks);
//   stage    from the wait to f(x) staged (mean over blocks);
//   body     from f(x) staged to the block's end (mean over blocks);
//   span     the predecessor's last block's end to this launch's last block's end;
//   late     blocks that started after their predecessor's last block ended.
// Two setups, each in a CUDA graph, every launch but the graph's first programmatic:
//   alone    16 launches of one product (each layer's weights), for the crate's kernel and its
//            DIAG 1, 2 and 3 variants (probe_host.cuh's gemv_d);
//   chain    16 layers of QKV, O, gate/up, down (the crate's kernel), each product's launches
//            against their own predecessor in the chain.
// The stamps cost a little; each setup's untraced time (the same binary, stamps off) is printed
// beside the traced one.
//
// Build and run (the GPU machine; bash scripts/gpu_issue32.sh gemvtrace):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -o gemv_trace_probe bench/gemv_trace_probe.cu -lcublas
//   ./gemv_trace_probe
#include <cstdint>

#define GT_CLASSES 4   // QKV, O, gate/up, down
#define GT_LAYERS 16
#define GT_BLOCKS 1024
// Stamps by class, layer, site and block; which layer a block belongs to, per class and block.
__device__ unsigned long long g_gt[GT_CLASSES][GT_LAYERS][4][GT_BLOCKS];
__device__ unsigned g_gt_n[GT_CLASSES][GT_BLOCKS];
__device__ int g_gt_on;
// The class from gemv's N, K and GLU (the Llama-3.2-1B shapes).
static __device__ __forceinline__ unsigned gt_class(unsigned n, unsigned k, unsigned glu) {
    return glu ? 2 : n == 3072 ? 0 : k == 8192 ? 3 : 1;
}
static __device__ __forceinline__ void gt_trace(unsigned site, unsigned n, unsigned k, unsigned glu) {
    __shared__ unsigned gt_layer;
    if (site > 3 || !g_gt_on || blockIdx.x >= GT_BLOCKS) return;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    const unsigned cls = gt_class(n, k, glu);
    if (site == 3) {
        // The block's launch: launches of a class come in order, and a block of the next one
        // starts only after this one's blocks have let it (at their start). The other threads
        // read gt_layer past the block's barriers (the staging's, or the slices' meeting).
        if (threadIdx.x != 0) return;
        gt_layer = atomicAdd(&g_gt_n[cls][blockIdx.x], 1u);
    }
    if (site == 1) {
        if ((threadIdx.x & 31) == 0 && gt_layer < GT_LAYERS) atomicMax(&g_gt[cls][gt_layer][1][blockIdx.x], t);
        return;
    }
    if (threadIdx.x == 0 && gt_layer < GT_LAYERS) g_gt[cls][gt_layer][site][blockIdx.x] = t;
}
#define DECODE_TRACE(site, a, b, c) gt_trace(site, a, b, c)

#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static const u32 H = 2048, QKV = 3072, I = 8192, L = 16;

// The stamps of one traced replay, by class, layer, site and block.
static std::vector<unsigned long long> g_st;
static unsigned long long st(u32 cls, u32 l, u32 site, u32 b) {
    return g_st[(((u64)cls * GT_LAYERS + l) * 4 + site) * GT_BLOCKS + b];
}

struct Phase {
    double early = 0, handoff = 0, stage = 0, body = 0, span = 0, late = 0;
    int n = 0;
};
// One launch (class `cls`, layer `l`, `grid` blocks) against its predecessor's last end.
static void add_launch(Phase& p, u32 cls, u32 l, u32 grid, unsigned long long prev_end) {
    unsigned long long first = ~0ull, last = 0;
    double h = 0, s = 0, b = 0;
    int late = 0;
    for (u32 k = 0; k < grid && k < GT_BLOCKS; ++k) {
        const unsigned long long t3 = st(cls, l, 3, k), t0 = st(cls, l, 0, k), t2 = st(cls, l, 2, k), t1 = st(cls, l, 1, k);
        first = std::min(first, t3);
        last = std::max(last, t1);
        h += (double)t0 - (double)prev_end;
        s += (double)t2 - (double)t0;
        b += (double)t1 - (double)t2;
        late += t3 > prev_end;
    }
    const double g = std::min(grid, (u32)GT_BLOCKS);
    p.early += ((double)prev_end - (double)first) / 1e3;
    p.handoff += h / g / 1e3;
    p.stage += s / g / 1e3;
    p.body += b / g / 1e3;
    p.span += ((double)last - (double)prev_end) / 1e3;
    p.late += late;
    p.n += 1;
}
static unsigned long long last_end(u32 cls, u32 l, u32 grid) {
    unsigned long long e = 0;
    for (u32 k = 0; k < grid && k < GT_BLOCKS; ++k) e = std::max(e, st(cls, l, 1, k));
    return e;
}
static void print_phase(const char* name, const Phase& p, double untraced, double traced) {
    const double n = p.n;
    printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.1f |\n", name, untraced, traced, p.early / n,
           p.handoff / n, p.stage / n, p.body / n, p.span / n, p.late / n);
}

int main() {
    probe_device();
    u64 seed = 7;
    const Chain ch = chain_setup(L, H, QKV, I, seed);
    const std::vector<LayerWeights>& W = ch.W;
    u16 *a0 = ch.a0, *a1 = ch.a1, *nw = ch.nw, *g = ch.g;
    const std::vector<u16> x0 = chain_input(2 * I);
    CK(cudaMemcpy(a0, x0.data(), x0.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemcpy(a1, x0.data(), x0.size() * 2, cudaMemcpyHostToDevice));
    CK(cudaMemset(g, 0, I * 2));
    const StepLaunch cl0[4] = {gemv_step_launch(QKV, H, false), gemv_step_launch(H, H, false),
                              gemv_step_launch(I, H, true), gemv_step_launch(H, I, false)};
    StepLaunch cl[4] = {cl0[0], cl0[1], cl0[2], cl0[3]};  // the grids the chain's third section caps
    const char* names[4] = {"QKV", "O", "gate/up", "down"};
    printf("launches (threads, ks, grid): qkv %u %u %u, o %u %u %u, gate/up %u %u %u, down %u %u %u\n", cl[0].threads,
           cl[0].ks, cl[0].grid, cl[1].threads, cl[1].ks, cl[1].grid, cl[2].threads, cl[2].ks, cl[2].grid, cl[3].threads,
           cl[3].ks, cl[3].grid);

    // Product `c` of layer `l`, DIAG `D`.
    auto product = [&](auto d_tag, u32 c, u32 l, bool pdl) {
        constexpr u32 D = decltype(d_tag)::value;
        const StepLaunch s = cl[c];
        if (c == 0) launch_ck(pdl, gemv_d<false, D>, s.grid, s.threads, H * 2, (const u16*)a0, (const u16*)W[l].qkv, QKV, H, 1u,
                           (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, s.ks);
        if (c == 1) launch_ck(pdl, gemv_d<false, D>, s.grid, s.threads, H * 2, (const u16*)a1, (const u16*)W[l].o, H, H, 0u,
                           (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, s.ks);
        if (c == 2) launch_ck(pdl, gemv_d<true, D>, s.grid, s.threads, H * 2, (const u16*)(a0 + I), (const u16*)W[l].gu, I, H, 1u,
                           (const u16*)nw, 1e-5f, (const u16*)nullptr, g, s.ks);
        if (c == 3) launch_ck(pdl, gemv_d<false, D>, s.grid, s.threads, I * 2, (const u16*)g, (const u16*)W[l].d, H, I, 0u,
                           (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, s.ks);
    };
    // A graph of `nodes` launches (enq(i) enqueues node i), timed untraced (µs a node), then
    // replayed once traced; the stamps land in g_st.
    auto run = [&](int nodes, const std::function<void(int)>& enq, double& untraced, double& traced) {
        int on = 0;
        CK(cudaMemcpyToSymbol(g_gt_on, &on, sizeof on));
        untraced = time_graph(nodes, enq).med;
        on = 1;
        CK(cudaMemcpyToSymbol(g_gt_on, &on, sizeof on));
        traced = time_graph(nodes, enq).med;
        cudaGraph_t gr;
        cudaGraphExec_t ex;
        CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < nodes; ++i) enq(i);
        CK(cudaStreamEndCapture(g_s, &gr));
        CK(cudaGraphInstantiate(&ex, gr, 0));
        CK(cudaGraphLaunch(ex, g_s));  // warm
        CK(cudaStreamSynchronize(g_s));
        void *pst, *pn;
        CK(cudaGetSymbolAddress(&pst, g_gt));
        CK(cudaGetSymbolAddress(&pn, g_gt_n));
        CK(cudaMemset(pst, 0, sizeof(unsigned long long) * GT_CLASSES * GT_LAYERS * 4 * GT_BLOCKS));
        CK(cudaMemset(pn, 0, sizeof(unsigned) * GT_CLASSES * GT_BLOCKS));
        CK(cudaGraphLaunch(ex, g_s));
        CK(cudaStreamSynchronize(g_s));
        g_st.resize((u64)GT_CLASSES * GT_LAYERS * 4 * GT_BLOCKS);
        CK(cudaMemcpy(g_st.data(), pst, g_st.size() * 8, cudaMemcpyDeviceToHost));
        CK(cudaGraphExecDestroy(ex));
        CK(cudaGraphDestroy(gr));
        on = 0;
        CK(cudaMemcpyToSymbol(g_gt_on, &on, sizeof on));
    };

    printf("\nalone: 16 launches of one product, µs (phases averaged over launches 2-16)\n");
    printf("| product, DIAG | untraced µs a launch | traced | early | handoff | stage | body | span | late blocks |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int rep = 0; rep < 2; ++rep)
        for (u32 c = 0; c < 4; ++c) {
            auto one = [&](auto d_tag) {
                constexpr u32 D = decltype(d_tag)::value;
                double u, t;
                run(L, [&](int i) { product(d_tag, c, (u32)i, i > 0); }, u, t);
                Phase p;
                for (u32 l = 1; l < L; ++l) add_launch(p, c, l, cl[c].grid, last_end(c, l - 1, cl[c].grid));
                char nm[64];
                snprintf(nm, sizeof nm, "%s, %u", names[c], D);
                print_phase(nm, p, u, t);
            };
            one(std::integral_constant<u32, 0>{});
            one(std::integral_constant<u32, 1>{});
            one(std::integral_constant<u32, 2>{});
            one(std::integral_constant<u32, 3>{});
        }

    printf("\nchain: 16 layers of the four products (the crate's kernel), µs a layer untraced / traced, each product against its predecessor\n");
    printf("| product | untraced µs a layer | traced | early | handoff | stage | body | span | late blocks |\n");
    printf("|---|---|---|---|---|---|---|---|---|\n");
    for (int rep = 0; rep < 2; ++rep) {
        double u, t;
        run(4 * L, [&](int i) { product(std::integral_constant<u32, 0>{}, (u32)i % 4, (u32)i / 4, i > 0); }, u, t);
        Phase p[4];
        for (u32 l = 0; l < L; ++l)
            for (u32 c = 0; c < 4; ++c) {
                if (l == 0 && c == 0) continue;
                const u32 pc = (c + 3) % 4, pl = c == 0 ? l - 1 : l;
                add_launch(p[c], c, l, cl[c].grid, last_end(pc, pl, cl[pc].grid));
            }
        for (u32 c = 0; c < 4; ++c) print_phase(names[c], p[c], 4 * u, 4 * t);
    }

    // Each product's grid capped at a number of blocks a multiprocessor, so that its successor's
    // blocks find room beside its own and issue their first loads before their wait. The rows a
    // block takes stride over the grid, and each row's sums are the same: the output's hash must
    // not change.
    printf("\nchain, grids capped (blocks a multiprocessor; 0: gpu.rs's grid), untraced µs a layer, output hash\n");
    printf("| QKV | O | gate/up | down | grids | µs a layer | hash |\n|---|---|---|---|---|---|---|\n");
    const u32 caps[][4] = {{0, 0, 0, 0}, {0, 2, 0, 0}, {0, 3, 0, 0}, {0, 0, 3, 0}, {0, 0, 2, 0},
                           {0, 0, 0, 1}, {2, 0, 0, 0}, {0, 2, 0, 1}, {0, 2, 2, 1}};
    auto chain = [&](int i) { product(std::integral_constant<u32, 0>{}, (u32)i % 4, (u32)i / 4, i > 0); };
    for (int rep = 0; rep < 2; ++rep)
        for (const auto& cap : caps) {
            for (u32 c = 0; c < 4; ++c) {
                cl[c] = cl0[c];
                if (cap[c]) cl[c].grid = std::min(cl0[c].grid, (u32)g_sms * cap[c] * (256 / std::min(256u, cl0[c].threads)));
                if (cap[c] && cl0[c].threads == 512) cl[c].grid = std::min(cl0[c].grid, (u32)g_sms * cap[c]);
            }
            const double us = time_graph(4 * L, chain).med * 4;
            CK(cudaMemcpy(a0, x0.data(), x0.size() * 2, cudaMemcpyHostToDevice));
            CK(cudaMemcpy(a1, x0.data(), x0.size() * 2, cudaMemcpyHostToDevice));
            CK(cudaMemset(g, 0, I * 2));
            for (int i = 0; i < 4 * (int)L; ++i) chain(i);
            CK(cudaStreamSynchronize(g_s));
            printf("| %u | %u | %u | %u | %u %u %u %u | %.2f | %016llx |\n", cap[0], cap[1], cap[2], cap[3], cl[0].grid,
                   cl[1].grid, cl[2].grid, cl[3].grid, us, hash16(d2h(a0, H)));
        }
    CK(cudaGetLastError());
    return 0;
}
