// Probe for issue #32: cuBLASLt's algorithms for the batch-16/32 step's products, against the
// default algorithm that the step's cuBLAS products take (candle's matmul, cublasGemmEx's
// default here).
//
// For each of Llama-3.2-1B's products (bf16 in and out, f32 compute) at 16 and 32 rows: the
// heuristic's candidates (up to 32, 32 MB of workspace), each timed in a graph of 16 nodes,
// each node its own matrix (the LM head: 2), against cublasGemmEx's default; each candidate's
// output checked against the default's (within a rounding). Then 16 layers of products + the
// LM head in one graph: the default against each shape's fastest candidate.
//
// Build (here, then run on the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cublaslt_probe bench/cublaslt_probe.cu -lcublasLt -lcublas
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cublasLt.h>
#include "../capture-candle/kernels/decode.cu"  // BF16, mix64: the probes' fill
#include "probe_host.cuh"

#define CL(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cuBLASLt %s:%d %d\n", __FILE__, __LINE__, (int)s_); exit(1); } } while (0)

struct Shape { const char* name; u32 rows, K; int nodes; };
static const Shape shapes[] = {
    {"qkv", 3072, 2048, 16}, {"o", 2048, 2048, 16}, {"gate/up", 16384, 2048, 16}, {"down", 2048, 8192, 16}, {"lm head", 128256, 2048, 2},
};
static cublasLtHandle_t g_lt;
static void* g_ws;
static const size_t WS = 32 << 20;

// y [M][rows] (row-major) = x [M][K] . W [rows][K]^T: column-major D [rows x M] = W^T [rows x K] . x [K x M].
struct Lt {
    cublasLtMatmulDesc_t op;
    cublasLtMatrixLayout_t a, b, c;
};
static Lt make(const Shape& sh, u32 M) {
    Lt l;
    CL(cublasLtMatmulDescCreate(&l.op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t t = CUBLAS_OP_T, n = CUBLAS_OP_N;
    CL(cublasLtMatmulDescSetAttribute(l.op, CUBLASLT_MATMUL_DESC_TRANSA, &t, sizeof(t)));
    CL(cublasLtMatmulDescSetAttribute(l.op, CUBLASLT_MATMUL_DESC_TRANSB, &n, sizeof(n)));
    CL(cublasLtMatrixLayoutCreate(&l.a, CUDA_R_16BF, sh.K, sh.rows, sh.K));
    CL(cublasLtMatrixLayoutCreate(&l.b, CUDA_R_16BF, sh.K, M, sh.K));
    CL(cublasLtMatrixLayoutCreate(&l.c, CUDA_R_16BF, sh.rows, M, sh.rows));
    return l;
}
static std::vector<cublasLtMatmulHeuristicResult_t> candidates(const Lt& l) {
    cublasLtMatmulPreference_t p;
    CL(cublasLtMatmulPreferenceCreate(&p));
    CL(cublasLtMatmulPreferenceSetAttribute(p, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &WS, sizeof(WS)));
    std::vector<cublasLtMatmulHeuristicResult_t> r(32);
    int got = 0;
    CL(cublasLtMatmulAlgoGetHeuristic(g_lt, l.op, l.a, l.b, l.c, l.c, p, 32, r.data(), &got));
    r.resize(got);
    CL(cublasLtMatmulPreferenceDestroy(p));
    return r;
}
static void run_lt(const Lt& l, const cublasLtMatmulAlgo_t& algo, const u16* W, const u16* x, u16* y) {
    const float one = 1.f, zero = 0.f;
    CL(cublasLtMatmul(g_lt, l.op, &one, W, l.a, x, l.b, &zero, y, l.c, y, l.c, &algo, g_ws, WS, g_s));
}
static void run_default(cublasHandle_t h, const Shape& sh, u32 M, const u16* W, const u16* x, u16* y) {
    const float one = 1.f, zero = 0.f;
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.rows, M, sh.K, &one, W, CUDA_R_16BF, sh.K, x, CUDA_R_16BF, sh.K, &zero, y,
                    CUDA_R_16BF, sh.rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
static void describe(const cublasLtMatmulAlgo_t& a, char* out, size_t n) {
    int id = 0, tile = 0, splitk = 0, stages = 0, red = 0;
    size_t w;
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id), &w);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile, sizeof(tile), &w);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splitk, sizeof(splitk), &w);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages, sizeof(stages), &w);
    cublasLtMatmulAlgoConfigGetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, &red, sizeof(red), &w);
    snprintf(out, n, "id %d tile %d splitk %d stages %d red %d", id, tile, splitk, stages, red);
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    probe_device();
    const u64 layer_el = 3072ull * 2048 + 2048ull * 2048 + 16384ull * 2048 + 2048ull * 8192;
    const u64 w_el = std::max(16 * layer_el, 2 * 128256ull * 2048);
    const u64 off[4] = {0, 3072ull * 2048, 3072ull * 2048 + 2048ull * 2048, 3072ull * 2048 + 2048ull * 2048 + 16384ull * 2048};
    u16 *W, *x, *y, *y2;
    CK(cudaMalloc(&W, w_el * 2));
    CK(cudaMalloc(&x, 32 * 8192 * 2));
    CK(cudaMalloc(&y, 32ull * 128256 * 2));
    CK(cudaMalloc(&y2, 32ull * 128256 * 2));
    CK(cudaMalloc(&g_ws, WS));
    fill(W, w_el, 1, -0.05f, 0.05f);
    fill(x, 32 * 8192, 2, -1.f, 1.f);
    CK(cudaStreamSynchronize(g_s));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, g_s));
    CB(cublasSetWorkspace(h, g_ws, WS));
    CL(cublasLtCreate(&g_lt));
    auto Wi = [&](int si, int i) -> const u16* {
        if (si == 4) return W + (u64)i * 128256 * 2048;
        return W + (u64)i * layer_el + off[si];
    };
    u64 bad_total = 0;
    for (u32 M : {16u, 32u}) {
        printf("\n## %u rows: us per product (median of 7 x 30 replays of a graph of `nodes` products, each its own matrix)\n", M);
        std::vector<std::pair<Lt, cublasLtMatmulAlgo_t>> best(5);
        std::vector<double> t_def(5), t_best(5);
        for (int si = 0; si < 5; ++si) {
            const Shape& sh = shapes[si];
            const double mb = (double)sh.rows * sh.K * 2 / 1e6;
            const Timing td = time_graph(sh.nodes, [&](int i) { run_default(h, sh, M, Wi(si, i), x, y); });
            run_default(h, sh, M, W, x, y2);
            const std::vector<u16> ref = d2h(y2, (size_t)M * sh.rows);
            Lt l = make(sh, M);
            const auto cs = candidates(l);
            double bt = 1e9;
            int bi = -1;
            for (size_t c = 0; c < cs.size(); ++c) {
                char d[128];
                describe(cs[c].algo, d, sizeof d);
                CK(cudaMemsetAsync(y, 0xff, (size_t)M * sh.rows * 2, g_s));
                run_lt(l, cs[c].algo, W, x, y);
                const std::vector<u16> got = d2h(y, (size_t)M * sh.rows);
                u64 bad = 0;
                for (size_t i = 0; i < got.size(); ++i) {
                    const float a = bf2f(got[i]), b = bf2f(ref[i]);
                    if (!(fabs(a - b) <= (fabs(b) + 1e-2) / 64)) ++bad;
                }
                bad_total += bad;
                const Timing t = time_graph(sh.nodes, [&](int i) { run_lt(l, cs[c].algo, Wi(si, i), x, y); });
                printf("  %-8s M=%u cand %2zu [%s, ws %zu KB]: %7.2f us (%5.0f GB/s)%s\n", sh.name, M, c, d, cs[c].workspaceSize >> 10, t.med,
                       mb * 1e3 / t.med, bad ? " OUTPUT DIFFERS" : "");
                if (!bad && t.med < bt) { bt = t.med; bi = (int)c; }
            }
            t_def[si] = td.med;
            t_best[si] = bt;
            if (bi >= 0) best[si] = {l, cs[bi].algo};
            char d[128] = "none";
            if (bi >= 0) describe(cs[bi].algo, d, sizeof d);
            printf("%-8s M=%u %.1f MB  default %7.2f us (%5.0f GB/s) | best of %zu [%s] %7.2f us (%5.0f GB/s)  default/best %.2f\n", sh.name, M,
                   mb, td.med, mb * 1e3 / td.med, cs.size(), d, bt, mb * 1e3 / bt, td.med / bt);
        }
        auto seq = [&](bool lt) {
            return time_graph(1, [&](int) {
                for (int l = 0; l < 16; ++l)
                    for (int si = 0; si < 4; ++si) {
                        const u16* Wl = W + (u64)l * layer_el + off[si];
                        if (lt) run_lt(best[si].first, best[si].second, Wl, x, y);
                        else run_default(h, shapes[si], M, Wl, x, y);
                    }
                if (lt) run_lt(best[4].first, best[4].second, W, x, y);
                else run_default(h, shapes[4], M, W, x, y);
            });
        };
        const Timing a = seq(false), b = seq(true), a2 = seq(false), b2 = seq(true);
        printf("M=%u  16 layers of products + LM head: default %.3f, %.3f ms | each shape's best candidate %.3f, %.3f ms\n", M, a.med / 1e3,
               a2.med / 1e3, b.med / 1e3, b2.med / 1e3);
    }
    printf("\noutputs: %s\n", bad_total ? "SOME DIFFER" : "every candidate within a rounding of the default");
    return 0;
}
