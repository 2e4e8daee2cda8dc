// bench/probe_host.cuh: what the GEMV and multi-row product probes (gemv_probe.cu,
// mmv_probe.cu) share on the host: error checks, fills, 16-bit conversions, graph timing and
// the comparison against a reference. Included after capture-candle/kernels/decode.cu (its
// u16/u32/u64, BF16, F16 and mix64).
#pragma once
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#define CK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { printf("CUDA %s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_)); exit(1); } } while (0)
#define CB(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { printf("cuBLAS %s:%d %d\n", __FILE__, __LINE__, (int)s_); exit(1); } } while (0)
typedef unsigned long long ull;
__global__ void fill_bf16(u16* p, u64 n, u64 seed, float lo, float hi) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 h = mix64(seed ^ mix64(i + 0x9e3779b97f4a7c15ull));
        const float u = (float)(h >> 40) * (1.f / 16777216.f);
        BF16::st(p, i, lo + (hi - lo) * u);
    }
}
__global__ void bf16_to_f16(const u16* a, u16* b, u64 n) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) F16::st(b, i, BF16::ld(a, i));
}
static int g_sms = 132;
static cudaStream_t g_s;
static float bf2f(u16 h) { u32 u = (u32)h << 16; float f; memcpy(&f, &u, 4); return f; }
static u16 f2bf(float v) {
    u32 x; memcpy(&x, &v, 4);
    if ((x & 0x7fffffffu) > 0x7f800000u) return 0x7fc0;
    x += 0x7fffu + ((x >> 16) & 1u);
    return (u16)(x >> 16);
}
static float h2f(u16 h) {  // IEEE half to float
    const u32 s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0) v = ldexpf((float)m, -24);
    else if (e == 31) v = m ? NAN : INFINITY;
    else v = ldexpf((float)(m | 1024), (int)e - 25);
    return s ? -v : v;
}
// Device 0's name, multiprocessors (into g_sms), L2 and bus, printed; g_s created.
static void probe_device() {
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    g_sms = prop.multiProcessorCount;
    printf("device %s, %d SMs, L2 %d MB, bus %d bits\n", prop.name, g_sms, prop.l2CacheSize >> 20, prop.memoryBusWidth);
    CK(cudaStreamCreateWithFlags(&g_s, cudaStreamNonBlocking));
}

// A cuBLAS handle on g_s with 32 MB of workspace (allocated here, kept for the process).
static cublasHandle_t probe_cublas() {
    void* ws;
    CK(cudaMalloc(&ws, 32 << 20));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, g_s));
    CB(cublasSetWorkspace(h, ws, 32 << 20));
    return h;
}
// Rounds to the nearest f16 value (ties to even; no overflow at these magnitudes).
static float f16_round(float v) {
    if (v == 0 || !std::isfinite(v)) return v;
    int e;
    frexpf(v, &e);
    const int bits = e < -13 ? 11 - (-13 - e) : 11;
    const float scale = ldexpf(1.f, bits - e);
    return nearbyintf(v * scale) / scale;
}
// Launches `f` on g_s (cudaLaunchKernelEx), with the programmatic-stream-serialization
// attribute when `pdl`: the kernel may start while its predecessor on the stream drains, and
// in a capture the edge from that predecessor is a programmatic one. Returns the launch's error.
template <typename F, typename... A>
static cudaError_t launch_ex(bool pdl, F f, dim3 grid, u32 threads, u32 smem, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = grid;
    cfg.blockDim = dim3(threads);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = g_s;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = pdl ? at : nullptr;
    cfg.numAttrs = pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, f, args...);
}
// The crate's batch-1 bf16 GEMV (decode.cu, included before this file) with decode.cu's DIAG
// pieces taken out (bench/gemv_probe.cu's variants): 1 no staging (f(x) = 1: no read of x, no
// norm, no barrier but the one after it), 2 the products replaced by an XOR of the weights (x
// not read in the loop), 3 both, 8 x staged in mode 0, 16 no block reduction in the norm; 0
// the crate's kernel.
template <bool GLU, u32 D>
__global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS)
    gemv_d(const u16* x, const u16* W, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y,
           u32 ks) {
    gemv<BF16, GLU, D>(x, W, 1, N, K, mode, nw, eps, residual, y, ks, nullptr);
}
// launch_ex, fatal on error.
template <typename F, typename... A>
static void launch_ck(bool pdl, F f, dim3 grid, u32 threads, u32 smem, A... args) {
    CK(launch_ex(pdl, f, grid, threads, smem, args...));
}
struct Timing { double med, lo, hi; };
// Captures `nodes` launches (launch(i) enqueues node i on g_s), replays 3 + 7 x 30 times;
// microseconds per node.
static Timing time_graph(int nodes, const std::function<void(int)>& launch) {
    cudaGraph_t g; cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < nodes; ++i) launch(i);
    CK(cudaStreamEndCapture(g_s, &g));
    CK(cudaGraphInstantiate(&ex, g, 0));
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ex, g_s));
    std::vector<double> t;
    const int per = 30;
    for (int r = 0; r < 7; ++r) {
        CK(cudaEventRecord(a, g_s));
        for (int i = 0; i < per; ++i) CK(cudaGraphLaunch(ex, g_s));
        CK(cudaEventRecord(b, g_s));
        CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms * 1e3 / per / nodes);
    }
    CK(cudaGetLastError());
    std::sort(t.begin(), t.end());
    CK(cudaEventDestroy(a)); CK(cudaEventDestroy(b));
    CK(cudaGraphExecDestroy(ex)); CK(cudaGraphDestroy(g));
    return {t[3], t[0], t[6]};
}
// |y - ref| <= tol * (|ref| + 1): the output's rounding (twice with a residual), the
// staged input's rounding, the f32 sum's order; NaN or a poisoned (unwritten) element never passes.
struct Err { double max_abs = 0, max_rel = 0; u64 bad = 0, unwritten = 0; };
static Err check(const std::vector<float>& y, const std::vector<double>& r, double tol) {
    Err e;
    for (size_t i = 0; i < y.size(); ++i) {
        if (std::isnan(y[i])) { e.unwritten++; e.bad++; continue; }
        const double d = fabs(y[i] - r[i]);
        if (!(d <= tol * (fabs(r[i]) + 1))) e.bad++;
        e.max_abs = std::max(e.max_abs, d);
        e.max_rel = std::max(e.max_rel, d / std::max(fabs(r[i]), 1e-2));
    }
    return e;
}
// FNV-1a over 16-bit values' bits: an output's hash, to compare builds bit for bit.
static unsigned long long hash16(const std::vector<u16>& v) {
    u64 h = 1469598103934665603ull;
    for (const u16 x : v) h = (h ^ x) * 1099511628211ull;
    return (unsigned long long)h;
}
template <typename T> static std::vector<T> d2h(const T* p, size_t n) {
    std::vector<T> h(n);
    CK(cudaStreamSynchronize(g_s));
    CK(cudaMemcpy(h.data(), p, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}
static void fill(u16* p, u64 n, u64 seed, float lo, float hi) {
    fill_bf16<<<1024, 256, 0, g_s>>>(p, n, seed, lo, hi);
    CK(cudaGetLastError());
}
static u32 first_max(const std::vector<float>& y, u32 m, u32 N) {
    u32 bi = 0;
    for (u32 n = 1; n < N; ++n)
        if (y[(size_t)m * N + n] > y[(size_t)m * N + bi]) bi = n;
    return bi;
}

// The reference in double, from the inputs as floats, for a shape `sh` (N outputs over K;
// mode 0 plain, 1 RMSNorm with eps 1e-5, 2 SwiGLU; glu: gate rows then up rows; residual):
// `rt` rounds f(x), and GLU's gate and up sums, to the element type as the kernels do.
template <typename S>
static std::vector<double> cpu_ref(const S& sh, u32 M, const std::vector<float>& W, const std::vector<float>& x,
                                   const std::vector<float>& nw, const std::vector<float>& res,
                                   const std::function<float(float)>& rt) {
    const u32 N = sh.N, K = sh.K;
    std::vector<float> f((size_t)M * K);
    for (u32 m = 0; m < M; ++m) {
        if (sh.mode == 1) {
            double ss = 0;
            for (u32 k = 0; k < K; ++k) { double v = x[(size_t)m * K + k]; ss += v * v; }
            const double inv = 1.0 / sqrt(ss / K + 1e-5);
            for (u32 k = 0; k < K; ++k) f[(size_t)m * K + k] = rt((float)(x[(size_t)m * K + k] * inv * nw[k]));
        } else if (sh.mode == 2) {
            for (u32 k = 0; k < K; ++k) {
                const double g = x[(size_t)m * 2 * K + k], u = x[(size_t)m * 2 * K + K + k];
                f[(size_t)m * K + k] = rt((float)(g / (1.0 + exp(-g)) * u));
            }
        } else {
            for (u32 k = 0; k < K; ++k) f[(size_t)m * K + k] = x[(size_t)m * K + k];
        }
    }
    std::vector<double> r((size_t)M * N);
#pragma omp parallel for schedule(static)
    for (u32 n = 0; n < N; ++n)
        for (u32 m = 0; m < M; ++m) {
            double acc = 0;
            const float* fm = &f[(size_t)m * K];
            const float* wn = &W[(size_t)n * K];
            for (u32 k = 0; k < K; ++k) acc += (double)wn[k] * fm[k];
            if (sh.glu) {  // gate row n (above) and up row N + n, each rounded, then SwiGLU
                double up = 0;
                const float* wu = &W[(size_t)(N + n) * K];
                for (u32 k = 0; k < K; ++k) up += (double)wu[k] * fm[k];
                const double g = rt((float)acc), u = rt((float)up);
                acc = g / (1.0 + exp(-g)) * u;
            }
            if (sh.residual) acc += res[(size_t)m * N + n];
            r[(size_t)m * N + n] = acc;
        }
    return r;
}

// The RoPE table the decode kernels read, [S, D] in f32 (a row's D/2 cosines, then its
// sines; theta 500,000, Llama-3.2-1B's), on the device.
static float* rope_table(u32 S, u32 D) {
    std::vector<float> tab((u64)S * D);
    for (u32 p = 0; p < S; ++p)
        for (u32 i = 0; i < D / 2; ++i) {
            const double f = pow(500000.0, -2.0 * i / D), a = p * f;
            tab[(u64)p * D + i] = (float)cos(a);
            tab[(u64)p * D + D / 2 + i] = (float)sin(a);
        }
    float* table;
    CK(cudaMalloc(&table, tab.size() * 4));
    CK(cudaMemcpy(table, tab.data(), tab.size() * 4, cudaMemcpyHostToDevice));
    return table;
}

// One decoder layer's bf16 weights at shapes (hidden h, QKV width qkv, intermediate i): QKV
// [qkv, h], O [h, h], gate/up [2i, h], down [h, i], each filled uniformly in [-a, a] (down in
// [-ad, ad]) with the next seeds of `seed`, in that order. `n` layers, each its own weights.
struct LayerWeights { u16 *qkv, *o, *gu, *d; };
static std::vector<LayerWeights> layer_weights(u32 n, u32 h, u32 qkv, u32 i, u64& seed, float a, float ad) {
    std::vector<LayerWeights> W(n);
    for (auto& w : W) {
        CK(cudaMalloc(&w.qkv, (u64)qkv * h * 2)); fill(w.qkv, (u64)qkv * h, ++seed, -a, a);
        CK(cudaMalloc(&w.o, (u64)h * h * 2)); fill(w.o, (u64)h * h, ++seed, -a, a);
        CK(cudaMalloc(&w.gu, 2ull * i * h * 2)); fill(w.gu, 2ull * i * h, ++seed, -a, a);
        CK(cudaMalloc(&w.d, (u64)h * i * 2)); fill(w.d, (u64)h * i, ++seed, -ad, ad);
    }
    return W;
}

// The batch-1 chain at Llama-3.2-1B's shapes (hidden h, QKV width qkv, intermediate i), bf16:
// `n` layers' weights (layer_weights, from `seed`), then its activations: a0 the residual
// stream [h] and, at a0 + i, the post-attention stream; a1 QKV's output; g gate/up's output;
// nw the norm weight, filled in [0.5, 1.5] with the next seed.
struct Chain {
    std::vector<LayerWeights> W;
    u16 *a0, *a1, *nw, *g;
};
static Chain chain_setup(u32 n, u32 h, u32 qkv, u32 i, u64& seed) {
    Chain c;
    c.W = layer_weights(n, h, qkv, i, seed, 0.0383f, 0.0191f);
    CK(cudaMalloc(&c.a0, 2ull * i * 2)); CK(cudaMalloc(&c.a1, 2ull * i * 2));
    CK(cudaMalloc(&c.nw, (u64)h * 2)); CK(cudaMalloc(&c.g, (u64)i * 2));
    fill(c.nw, h, ++seed, 0.5f, 1.5f);
    return c;
}
// The chain's first input: x[k] = 0.5 sin(0.37 k), rounded to bf16.
static std::vector<u16> chain_input(u32 n) {
    std::vector<u16> x(n);
    for (u32 k = 0; k < n; ++k) x[k] = f2bf(0.5f * sinf(0.37f * k));
    return x;
}
// gpu.rs `gemv_launch` for 16-bit types (kept in step by hand, as gemv_probe.cu `new_cfg`):
// threads a block, ks, grid, for n outputs over k inputs (glu: gate/up rows, a row 2k long).
struct StepLaunch { u32 threads, ks, grid; };
static StepLaunch gemv_step_launch(u32 n, u32 k, bool glu) {
    const u32 kr = glu ? 2 * k : k, threads = k >= 4096 ? 512 : 256;
    const u32 steps = (kr + 32 * 8 - 1) / (32 * 8);
    u32 ks = 1;
    while (ks < 8 && n * ks < 3072 && steps / (ks * 2) >= 4) ks *= 2;
    const u32 rows = threads / 32 / ks, groups = (n + rows - 1) / rows;
    return {threads, ks, std::max(1u, std::min(groups, 132u * (1024 / threads)))};
}
