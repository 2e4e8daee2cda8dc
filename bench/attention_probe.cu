// Probe for issue #32, target 2: decode attention at long context. At the Llama-3.2-1B
// attention shape (32 query heads, 8 key/value heads, head_dim 64, bf16, cache [B, 8, S, 64]
// per layer, S = max_seq = 8256), it times the attention kernel as shipped before (bench/
// attention_base.cuh, launched as gpu.rs launched it) and the kernel of capture-candle/
// kernels/decode.cu now (entry point attention_d64_bf16, launched by the rule gpu.rs uses
// now, restated in `rule` below), plus variants of it (template parameters, launch bounds,
// split rule), at batch {1, 8, 32} x position {64, 2000, 8000}.
//
// Timing: a CUDA graph of 16 launches, one a layer, each over its own q and its own K/V cache
// (16 x 541 MB at batch 32: the 50 MB L2 holds no layer's cache past batch 1, position 2000),
// replayed 3 times to warm up, then 7 x R times (R so that each of the 7 is ~25 ms); the time
// is the median of the 7 per-replay averages over 16: us a launch. GB/s counts the K and V
// bytes the launch must read: 2 * B * nk * (pos + 1) * dim * 2 bytes (q, partials and output
// are not counted; they are < 1% at pos >= 2000). At position 64 the caches of all 16 layers
// fit L2, so those rows measure latency, not DRAM.
//
// Correctness (printed PASS/FAIL per variant and shape; the exit status is 1 on any FAIL):
//   - every variant at every timed shape against the old kernel (max abs difference over the
//     whole output, outputs poisoned with NaN first, so an unwritten element fails) and
//     against a CPU reference in double (rows 0 and B-1, all heads);
//   - the counters are back at 0 after every run (the last-block protocol);
//   - the new entry points (attention_d{64,128,256}_{bf16,f16,f32}) at small shapes against
//     the CPU reference: every dtype x head_dim {16, 64, 72, 128, 256} x g {1, 3, 4, 7, 16}
//     x tokens {1, 3}, positions different per row (one past the cache's end: clamped), and
//     one case of large scores (running-max rescaling).
//
// Build and run (on the GPU machine, from the repository root):
//   nvcc -O3 -arch=sm_90 -std=c++17 -o /tmp/ap bench/attention_probe.cu && /tmp/ap
// Options: /tmp/ap quick   (fewer variants, no rule sweep)
//          /tmp/ap splits  (as quick, then the new kernel at every split count of a list)
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <string>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>

#include "../capture-candle/kernels/decode.cu"
#include "attention_base.cuh"

#define CK(x)                                                                                     \
    do {                                                                                          \
        cudaError_t e_ = (x);                                                                     \
        if (e_ != cudaSuccess) {                                                                  \
            printf("CUDA %s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e_));                \
            exit(2);                                                                              \
        }                                                                                         \
    } while (0)

static int g_fail = 0;

// ---------------------------------------------------------------------------------------
// Device helpers of the probe.
template <typename E>
__global__ void fill(typename E::T* p, u64 n, u64 seed, float lo, float hi) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 h = mix64(seed ^ mix64(i + 0x9e3779b97f4a7c15ull));
        const float u = (float)(h >> 40) * (1.f / 16777216.f);
        E::st(p, i, lo + (hi - lo) * u);
    }
}
template <typename E>
static void fill_dev(void* p, u64 n, u64 seed, float lo, float hi) {
    fill<E><<<1024, 256>>>((typename E::T*)p, n, seed, lo, hi);
    CK(cudaGetLastError());
}

// The old kernel, as gpu.rs launched it.
template <typename E>
__global__ void att_base(const typename E::T* q, const typename E::T* kc, const typename E::T* vc, const u32* pos,
                         u32 T, u32 nq, u32 nk, u32 S, u32 dim, u32 nsplit, u32 max_chunk, u32 tile, float scale,
                         float* part, u32* counters, typename E::T* out) {
    attention_base<E>(q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk, tile, scale, part, counters, out);
}
// The new kernel with other template parameters and launch bounds.
template <typename E, u32 DP, u32 GK, u32 NW, bool MMA, bool PF, u32 MINB>
__global__ void __launch_bounds__(NW * 32, MINB)
    att_var(const typename E::T* q, const typename E::T* kc, const typename E::T* vc, const u32* pos, u32 T, u32 nq,
            u32 nk, u32 S, u32 dim, u32 nsplit, u32 max_chunk, u32 min_chunk, float scale, float* part,
            u32* counters, typename E::T* out) {
    attention<E, DP, GK, NW, MMA, PF>(q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk, min_chunk, scale, part,
                                      counters, out);
}

typedef void (*AttFn)(const void*, const void*, const void*, const u32*, u32, u32, u32, u32, u32, u32, u32, u32,
                      float, float*, u32*, void*);

// ---------------------------------------------------------------------------------------
// Launch rules.
struct Shape {
    int B, nq, nk, T, dim, S, elem;
};
struct Bufs {
    const void *q, *k, *v;
    const u32* pos;
    float* part;
    u32* counters;
    void* out;
};
struct Launch {
    dim3 grid;
    int threads;
    size_t smem;
    u32 nsplit, max_chunk, third;  // third: tile (old) or min_chunk (new)
};

// Old gpu.rs (d258d7d): attention_split and attention_smem.
static Launch rule_base(const Shape& s) {
    const int g = s.nq / s.nk;
    const size_t ATT_SMEM = 48 * 1024 - 256;
    const size_t per_key = 4 * g + 2 * (s.dim * s.elem + 16);
    size_t tile = std::min<size_t>((ATT_SMEM - 8 * g * s.dim) / per_key / 4 * 4, 256);
    const size_t splits = std::min<size_t>(32, (s.S + 31) / 32);
    const size_t chunk = std::max<size_t>(((s.S + splits - 1) / splits + 31) / 32 * 32, 128);
    tile = std::min(tile, chunk);
    Launch L;
    L.grid = dim3(s.B * s.nk, s.T, splits);
    L.threads = 128;
    L.smem = 8 * g * s.dim + 4 * g * tile + 2 * tile * (s.dim * s.elem + 16);
    L.nsplit = splits;
    L.max_chunk = chunk;
    L.third = tile;
    return L;
}

// New gpu.rs: `attention_launch` (keep in step with it). `blocks`: the blocks aimed at when
// the prefix is max_seq long; min_chunk: the shortest chunk.
// `most`: the most chunks (0: ATT_MAX_SPLITS); `floor`: blocks / per rounded down (at most
// `blocks`, one wave where `blocks` is the resident count), else up.
struct Rule {
    int blocks, min_chunk, most;
    bool floor;
};
static const Rule RULE_PROD = {528, 256, 16, true};  // gpu.rs's ATT_BLOCKS, ATT_MIN_CHUNK, ATT_MOST_SPLITS
static Launch rule_new(const Shape& s, Rule r, int warps = ATT_WARPS) {
    const int g = s.nq / s.nk, nhg = (g + ATT_HEADS - 1) / ATT_HEADS;
    const long per = (long)s.B * s.nk * nhg * s.T;
    long nsplit = r.floor ? r.blocks / per : (r.blocks + per - 1) / per;
    const long most = r.most ? std::min(r.most, ATT_MAX_SPLITS) : ATT_MAX_SPLITS;
    nsplit = std::max(1L, std::min<long>({nsplit, most, (s.S + r.min_chunk - 1) / r.min_chunk}));
    Launch L;
    L.grid = dim3(s.B * s.nk * nhg, s.T, nsplit);
    L.threads = warps * 32;
    L.smem = 0;
    L.nsplit = nsplit;
    L.max_chunk = (s.S + nsplit - 1) / nsplit;
    L.third = r.min_chunk;
    return L;
}

static void launch(AttFn f, const Launch& L, const Shape& s, const Bufs& b, float scale, cudaStream_t st) {
    void* args[16];
    u32 T = s.T, nq = s.nq, nk = s.nk, S = s.S, dim = s.dim;
    u32 ns = L.nsplit, mc = L.max_chunk, th = L.third;
    args[0] = (void*)&b.q;
    args[1] = (void*)&b.k;
    args[2] = (void*)&b.v;
    args[3] = (void*)&b.pos;
    args[4] = &T;
    args[5] = &nq;
    args[6] = &nk;
    args[7] = &S;
    args[8] = &dim;
    args[9] = &ns;
    args[10] = &mc;
    args[11] = &th;
    args[12] = &scale;
    args[13] = (void*)&b.part;
    args[14] = (void*)&b.counters;
    args[15] = (void*)&b.out;
    CK(cudaLaunchKernel((const void*)f, L.grid, dim3(L.threads), args, L.smem, st));
}

// ---------------------------------------------------------------------------------------
// Host-side conversions and the CPU reference.
static float bf16_to_f(u16 h) {
    u32 x = (u32)h << 16;
    float f;
    memcpy(&f, &x, 4);
    return f;
}
static float f16_to_f(u16 h) {
    const u32 s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float f;
    if (e == 0) f = std::ldexp((float)m, -24);
    else if (e == 31) f = m ? NAN : INFINITY;
    else f = std::ldexp((float)(m | 1024), (int)e - 25);
    return s ? -f : f;
}
static std::vector<float> to_host_f(const void* d, size_t n, int dt) {  // dt: 0 f32, 1 f16, 2 bf16
    std::vector<float> o(n);
    if (dt == 0) {
        CK(cudaMemcpy(o.data(), d, n * 4, cudaMemcpyDeviceToHost));
    } else {
        std::vector<u16> h(n);
        CK(cudaMemcpy(h.data(), d, n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; ++i) o[i] = dt == 1 ? f16_to_f(h[i]) : bf16_to_f(h[i]);
    }
    return o;
}

// out[b][t][h][d] for the rows in `rows`; q [B, nq, T, dim] (host, all rows); K/V of each
// row in `kv` ([nk, S, dim] per row in `rows`).
static void cpu_ref(const Shape& s, const std::vector<float>& q, const std::vector<std::vector<float>>& kr,
                    const std::vector<std::vector<float>>& vr, const std::vector<int>& rows, const std::vector<u32>& pos,
                    float scale, std::vector<std::vector<double>>& out) {
    const int g = s.nq / s.nk;
    out.assign(rows.size(), std::vector<double>((size_t)s.T * s.nq * s.dim));
    std::vector<double> sc;
    for (size_t ri = 0; ri < rows.size(); ++ri) {
        const int b = rows[ri];
        for (int t = 0; t < s.T; ++t) {
            long len = (long)pos[b] + t + 1;
            if (len > s.S) len = s.S;
            for (int h = 0; h < s.nq; ++h) {
                const int kh = h / g;
                const float* qv = &q[(((size_t)b * s.nq + h) * s.T + t) * s.dim];
                const float* K = &kr[ri][(size_t)kh * s.S * s.dim];
                const float* V = &vr[ri][(size_t)kh * s.S * s.dim];
                sc.assign(len, 0.0);
                double m = -1e300;
                for (long j = 0; j < len; ++j) {
                    double a = 0;
                    for (int d = 0; d < s.dim; ++d) a += (double)qv[d] * K[j * s.dim + d];
                    sc[j] = a * scale;
                    m = std::max(m, sc[j]);
                }
                double den = 0;
                for (long j = 0; j < len; ++j) den += (sc[j] = std::exp(sc[j] - m));
                double* o = &out[ri][((size_t)t * s.nq + h) * s.dim];
                for (int d = 0; d < s.dim; ++d) o[d] = 0;
                for (long j = 0; j < len; ++j) {
                    const double p = sc[j] / den;
                    for (int d = 0; d < s.dim; ++d) o[d] += p * V[j * s.dim + d];
                }
            }
        }
    }
}

// Compares rows `rows` of a GPU output [B, T, nq*dim] with the reference: max abs error and
// relative L2 error; NaN anywhere fails.
static bool check_ref(const std::vector<float>& got, const Shape& s, const std::vector<int>& rows,
                      const std::vector<std::vector<double>>& ref, double tol, double* maxabs, double* rel) {
    double num = 0, den = 0, mx = 0;
    bool nan = false;
    for (size_t ri = 0; ri < rows.size(); ++ri) {
        const size_t row = (size_t)s.T * s.nq * s.dim;
        for (size_t i = 0; i < row; ++i) {
            const double gv = got[rows[ri] * row + i], rv = ref[ri][i];
            if (!(gv == gv)) nan = true;
            mx = std::max(mx, std::fabs(gv - rv));
            num += (gv - rv) * (gv - rv);
            den += rv * rv;
        }
    }
    *maxabs = nan ? NAN : mx;
    *rel = nan ? NAN : std::sqrt(num / std::max(den, 1e-300));
    return !nan && *rel < tol;
}

static std::vector<u32> host_u32(const u32* d, size_t n) {
    std::vector<u32> h(n);
    CK(cudaMemcpy(h.data(), d, n * 4, cudaMemcpyDeviceToHost));
    return h;
}

// ---------------------------------------------------------------------------------------
// The variants timed at the Llama shape (bf16, DP 64).
struct Variant {
    std::string name;
    AttFn fn;
    bool base;
    int warps;
    Rule rule;
};

template <u32 GK, u32 NW, bool MMA, bool PF, u32 MINB>
static AttFn var() {
    return (AttFn)att_var<BF16, 64, GK, NW, MMA, PF, MINB>;
}

static void print_attrs(const char* name, const void* f, int threads, size_t dyn_smem = 0) {
    cudaFuncAttributes a;
    CK(cudaFuncGetAttributes(&a, f));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, threads, dyn_smem));
    printf("  %-34s regs %3d  static smem %6zu  local %4zu  blocks/SM %d\n", name, a.numRegs, a.sharedSizeBytes,
           a.localSizeBytes, occ);
}

int main(int argc, char** argv) {
    const bool splits = argc > 1 && !strcmp(argv[1], "splits");
    const bool quick = splits || (argc > 1 && !strcmp(argv[1], "quick"));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("device: %s, %d SMs, L2 %d MB\n", prop.name, prop.multiProcessorCount, prop.l2CacheSize >> 20);

    // ----- Part 1: the new entry points at small shapes against the CPU reference.
    printf("\n== shapes: the new entry points (attention_d<DP>_<type>, gpu.rs's rule) vs a CPU reference (double)\n");
    {
        struct Ent {
            int dt;  // 0 f32, 1 f16, 2 bf16
            const char* name;
            AttFn d64, d128, d256;
        } ents[3] = {
            {2, "bf16", (AttFn)attention_d64_bf16, (AttFn)attention_d128_bf16, (AttFn)attention_d256_bf16},
            {1, "f16", (AttFn)attention_d64_f16, (AttFn)attention_d128_f16, (AttFn)attention_d256_f16},
            {0, "f32", (AttFn)attention_d64_f32, (AttFn)attention_d128_f32, (AttFn)attention_d256_f32},
        };
        for (auto& e : ents) {
            print_attrs((std::string("attention_d64_") + e.name).c_str(), (const void*)e.d64, 128);
            print_attrs((std::string("attention_d128_") + e.name).c_str(), (const void*)e.d128, 128);
            print_attrs((std::string("attention_d256_") + e.name).c_str(), (const void*)e.d256, 128);
        }
        int n_ok = 0, n_all = 0;
        double worst[3] = {0, 0, 0};
        for (auto& e : ents) {
            const int elem = e.dt == 0 ? 4 : 2;
            for (int dim : {16, 64, 72, 128, 256})
                for (int g : {1, 3, 4, 7, 16})
                    for (int T : {1, 3})
                        for (int big = 0; big < (dim == 64 && g == 4 && T == 1 ? 2 : 1); ++big) {
                            Shape s{3, 2 * g, 2, T, dim, 300, elem};
                            std::vector<u32> pos = {5, 133, 299};  // row 2: t >= 1 is past the cache
                            if (T == 1) pos = {0, 129, 290};
                            const size_t nkv = (size_t)s.B * s.nk * s.S * s.dim, nqe = (size_t)s.B * s.nq * s.T * s.dim;
                            const size_t nout = (size_t)s.B * s.T * s.nq * s.dim;
                            void *k, *v, *q, *out;
                            u32 *dpos, *cnt;
                            float* part;
                            CK(cudaMalloc(&k, nkv * elem));
                            CK(cudaMalloc(&v, nkv * elem));
                            CK(cudaMalloc(&q, nqe * elem));
                            CK(cudaMalloc(&out, nout * elem));
                            CK(cudaMalloc(&dpos, 16));
                            CK(cudaMalloc(&cnt, s.B * s.nk * s.T * 4));
                            CK(cudaMalloc(&part, (size_t)s.B * s.nq * s.T * ATT_MAX_SPLITS * (s.dim + 4) * 4));
                            CK(cudaMemset(cnt, 0, s.B * s.nk * s.T * 4));
                            CK(cudaMemset(out, 0xff, nout * elem));  // NaN
                            CK(cudaMemcpy(dpos, pos.data(), 12, cudaMemcpyHostToDevice));
                            const float qr = big ? 24.f : 2.f;
                            auto fl = [&](void* p, size_t n, u64 seed, float lo, float hi) {
                                if (e.dt == 0) fill_dev<F32>(p, n, seed, lo, hi);
                                else if (e.dt == 1) fill_dev<F16>(p, n, seed, lo, hi);
                                else fill_dev<BF16>(p, n, seed, lo, hi);
                            };
                            fl(k, nkv, 11 + dim + g, -1.f, 1.f);
                            fl(v, nkv, 22 + dim + g, -1.f, 1.f);
                            fl(q, nqe, 33 + dim + g, -qr, qr);
                            const float scale = 1.f / std::sqrt((float)dim);
                            const Launch L = rule_new(s, RULE_PROD);
                            AttFn f = dim <= 64 ? e.d64 : dim <= 128 ? e.d128 : e.d256;
                            Bufs bb{q, k, v, dpos, part, cnt, out};
                            launch(f, L, s, bb, scale, 0);
                            CK(cudaDeviceSynchronize());
                            // A second run over the same counters: they were set back to 0.
                            launch(f, L, s, bb, scale, 0);
                            CK(cudaDeviceSynchronize());
                            auto got = to_host_f(out, nout, e.dt);
                            auto hq = to_host_f(q, nqe, e.dt), hk = to_host_f(k, nkv, e.dt), hv = to_host_f(v, nkv, e.dt);
                            std::vector<int> rows = {0, 1, 2};
                            std::vector<std::vector<float>> kr, vr;
                            for (int b : rows) {
                                const size_t o = (size_t)b * s.nk * s.S * s.dim, n = (size_t)s.nk * s.S * s.dim;
                                kr.emplace_back(hk.begin() + o, hk.begin() + o + n);
                                vr.emplace_back(hv.begin() + o, hv.begin() + o + n);
                            }
                            std::vector<std::vector<double>> ref;
                            cpu_ref(s, hq, kr, vr, rows, pos, scale, ref);
                            const double tol = e.dt == 0 ? 1e-4 : e.dt == 1 ? 2e-3 : 1e-2;
                            double mx, rel;
                            bool ok = check_ref(got, s, rows, ref, tol, &mx, &rel);
                            auto c = host_u32(cnt, s.B * s.nk * s.T);
                            bool zero = std::all_of(c.begin(), c.end(), [](u32 x) { return x == 0; });
                            ok = ok && zero;
                            worst[e.dt] = std::max(worst[e.dt], rel != rel ? 1e30 : rel);
                            ++n_all;
                            n_ok += ok;
                            if (!ok) {
                                ++g_fail;
                                printf("  FAIL %s dim %d g %d T %d%s: rel %.3g maxabs %.3g counters %s (nsplit %u)\n", e.name,
                                       dim, g, T, big ? " large scores" : "", rel, mx, zero ? "0" : "NOT 0", L.nsplit);
                            }
                            CK(cudaFree(k));
                            CK(cudaFree(v));
                            CK(cudaFree(q));
                            CK(cudaFree(out));
                            CK(cudaFree(dpos));
                            CK(cudaFree(cnt));
                            CK(cudaFree(part));
                        }
        }
        printf("  %s: %d/%d shapes (worst rel L2 error: f32 %.2e, f16 %.2e, bf16 %.2e; tolerances 1e-4, 2e-3, 1e-2)\n",
               n_ok == n_all ? "PASS" : "FAIL", n_ok, n_all, worst[0], worst[1], worst[2]);
    }

    // ----- Part 2: the Llama shape, timed.
    const int L_LAYERS = 16, BMAX = 32, NQ = 32, NK = 8, DIM = 64, S = 8256;
    const size_t kv_layer = (size_t)BMAX * NK * S * DIM, q_layer = (size_t)BMAX * NQ * DIM;
    std::vector<void*> K(L_LAYERS), V(L_LAYERS), Q(L_LAYERS);
    for (int l = 0; l < L_LAYERS; ++l) {
        CK(cudaMalloc(&K[l], kv_layer * 2));
        CK(cudaMalloc(&V[l], kv_layer * 2));
        CK(cudaMalloc(&Q[l], q_layer * 2));
        fill_dev<BF16>(K[l], kv_layer, 1000 + l, -1.f, 1.f);
        fill_dev<BF16>(V[l], kv_layer, 2000 + l, -1.f, 1.f);
        fill_dev<BF16>(Q[l], q_layer, 3000 + l, -3.f, 3.f);
    }
    u32 *dpos, *cnt;
    float* part;
    void *out, *out_base;
    CK(cudaMalloc(&dpos, BMAX * 4));
    CK(cudaMalloc(&cnt, BMAX * NK * 4));
    CK(cudaMemset(cnt, 0, BMAX * NK * 4));
    CK(cudaMalloc(&part, (size_t)BMAX * NQ * ATT_MAX_SPLITS * (DIM + 4) * 4));
    CK(cudaMalloc(&out, (size_t)BMAX * NQ * DIM * 2));
    CK(cudaMalloc(&out_base, (size_t)BMAX * NQ * DIM * 2));
    CK(cudaDeviceSynchronize());
    const float scale = 0.125f;
    cudaStream_t st;
    CK(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));

    std::vector<Variant> vars;
    vars.push_back({"base (old kernel)", (AttFn)att_base<BF16>, true, 4, RULE_PROD});
    vars.push_back({"new: attention_d64_bf16", (AttFn)attention_d64_bf16, false, ATT_WARPS, RULE_PROD});
    if (!quick) {
        vars.push_back({"gk16 mma nopf", var<16, 4, true, false, 1>(), false, 4, RULE_PROD});
        vars.push_back({"gk16 cuda-core pf", var<16, 4, false, true, 1>(), false, 4, RULE_PROD});
        vars.push_back({"gk16 cuda-core nopf", var<16, 4, false, false, 1>(), false, 4, RULE_PROD});
        vars.push_back({"gk8 mma pf", var<8, 4, true, true, 1>(), false, 4, RULE_PROD});
        vars.push_back({"gk8 mma nopf", var<8, 4, true, false, 1>(), false, 4, RULE_PROD});
        vars.push_back({"gk16 mma pf 8 warps", var<16, 8, true, true, 1>(), false, 8, RULE_PROD});
        vars.push_back({"gk16 mma pf, no register cap", var<16, 4, true, true, 1>(), false, 4, RULE_PROD});
        vars.push_back({"gk16 mma nopf minb5", var<16, 4, true, false, 5>(), false, 4, RULE_PROD});
        vars.push_back({"gk16 mma nopf 8 warps", var<16, 8, true, false, 1>(), false, 8, RULE_PROD});
    }
    printf("\n== kernels at the Llama shape (bf16, g 4, dim 64)\n");
    print_attrs("base (+ dynamic smem)", (const void*)att_base<BF16>, 128, rule_base(Shape{8, NQ, NK, 1, DIM, S, 2}).smem);
    for (size_t i = 1; i < vars.size(); ++i) print_attrs(vars[i].name.c_str(), (const void*)vars[i].fn, vars[i].warps * 32);

    struct Row {
        std::string name;
        int B, pos;
        double us, gbs;
        u32 nsplit;
    };
    std::vector<Row> rows;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));

    // Times `v` with rule `r` at (B, P): builds the 16-launch graph, checks the output of
    // layer 0 against the base output (in out_base) and the reference, returns us a launch.
    auto run_variant = [&](const Variant& v, Rule r, int B, int P, const std::vector<std::vector<double>>& ref,
                           const std::vector<int>& refrows, bool check, u32* nsplit_out, double* maxdiff_out,
                           double* rel_out) -> double {
        Shape s{B, NQ, NK, 1, DIM, S, 2};
        const Launch Lc = v.base ? rule_base(s) : rule_new(s, r, v.warps);
        *nsplit_out = Lc.nsplit;
        void* o = v.base ? out_base : out;
        // Correctness on layer 0.
        CK(cudaMemset(o, 0xff, (size_t)B * NQ * DIM * 2));
        Bufs b0{Q[0], K[0], V[0], dpos, part, cnt, o};
        launch(v.fn, Lc, s, b0, scale, st);
        CK(cudaStreamSynchronize(st));
        CK(cudaGetLastError());
        if (check) {
            auto got = to_host_f(o, (size_t)B * NQ * DIM, 2);
            double mx, rel;
            bool ok = check_ref(got, s, refrows, ref, 1e-2, &mx, &rel);
            double md = 0;
            // The base's layer-0 output, kept before its 16-layer graph overwrites out_base
            // (comparing with out_base after that graph compared with layer 15's output).
            static std::vector<float> base0;
            if (v.base) base0 = got;
            if (!v.base) {
                const auto& gb = base0;
                for (size_t i = 0; i < gb.size(); ++i) {
                    const double d = std::fabs((double)got[i] - gb[i]);
                    md = d == d ? std::max(md, d) : INFINITY;
                }
                ok = ok && md < 2e-2;
            }
            auto c = host_u32(cnt, B * NK);
            const bool zero = std::all_of(c.begin(), c.end(), [](u32 x) { return x == 0; });
            ok = ok && zero;
            *maxdiff_out = md;
            *rel_out = rel;
            if (!ok) {
                ++g_fail;
                printf("  FAIL %s B %d pos %d: max |new - base| %.3g, rel L2 vs reference %.3g, max abs %.3g, counters %s\n",
                       v.name.c_str(), B, P, md, rel, mx, zero ? "0" : "NOT 0");
            }
        }
        // The graph: 16 layers.
        cudaGraph_t gr;
        cudaGraphExec_t ge;
        CK(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
        for (int l = 0; l < L_LAYERS; ++l) {
            Bufs bl{Q[l], K[l], V[l], dpos, part, cnt, o};
            launch(v.fn, Lc, s, bl, scale, st);
        }
        CK(cudaStreamEndCapture(st, &gr));
        CK(cudaGraphInstantiate(&ge, gr, 0));
        for (int i = 0; i < 3; ++i) CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e0, st));
        CK(cudaGraphLaunch(ge, st));
        CK(cudaEventRecord(e1, st));
        CK(cudaEventSynchronize(e1));
        float ms1;
        CK(cudaEventElapsedTime(&ms1, e0, e1));
        const int R = std::max(2, std::min(400, (int)(25.0 / std::max(ms1, 0.001f))));
        std::vector<double> t;
        for (int k = 0; k < 7; ++k) {
            CK(cudaEventRecord(e0, st));
            for (int i = 0; i < R; ++i) CK(cudaGraphLaunch(ge, st));
            CK(cudaEventRecord(e1, st));
            CK(cudaEventSynchronize(e1));
            float ms;
            CK(cudaEventElapsedTime(&ms, e0, e1));
            t.push_back(ms * 1000.0 / R / L_LAYERS);
        }
        CK(cudaGetLastError());
        CK(cudaGraphExecDestroy(ge));
        CK(cudaGraphDestroy(gr));
        std::sort(t.begin(), t.end());
        auto c = host_u32(cnt, B * NK);
        if (!std::all_of(c.begin(), c.end(), [](u32 x) { return x == 0; })) {
            ++g_fail;
            printf("  FAIL %s B %d pos %d: counters not 0 after the timed replays\n", v.name.c_str(), B, P);
        }
        return t[3];
    };

    std::vector<Rule> sweep;
    if (!quick)
        for (int bl : {528, 1056, 2048, 4224, 8448})
            for (int mc : {64, 128, 256}) sweep.push_back({bl, mc, 0, false});

    printf("\n== timed (us a launch, median of 7; GB/s of K+V read)\n");
    printf("%-34s %5s %5s %7s %10s %8s %8s %8s %10s\n", "variant", "batch", "pos", "nsplit", "us/launch", "GB/s",
           "vs base", "max|d|", "rel(ref)");
    for (int B : {1, 8, 32}) {
        for (int P : {64, 2000, 8000}) {
            std::vector<u32> pos(BMAX, (u32)P);
            CK(cudaMemcpy(dpos, pos.data(), BMAX * 4, cudaMemcpyHostToDevice));
            // The reference for rows 0 and B-1 of layer 0.
            std::vector<int> refrows = {0};
            if (B > 1) refrows.push_back(B - 1);
            Shape s{B, NQ, NK, 1, DIM, S, 2};
            auto hq = to_host_f(Q[0], (size_t)B * NQ * DIM, 2);
            std::vector<std::vector<float>> kr, vr;
            for (int b : refrows) {
                const size_t off = (size_t)b * NK * S * DIM, n = (size_t)NK * S * DIM;
                kr.push_back(to_host_f((u16*)K[0] + off, n, 2));
                vr.push_back(to_host_f((u16*)V[0] + off, n, 2));
            }
            std::vector<std::vector<double>> ref;
            cpu_ref(s, hq, kr, vr, refrows, pos, scale, ref);
            const double bytes = 2.0 * B * NK * (P + 1.0) * DIM * 2;
            double base_us = 0;
            for (auto& v : vars) {
                u32 ns;
                double md = 0, rel = 0;
                const double us = run_variant(v, v.rule, B, P, ref, refrows, true, &ns, &md, &rel);
                if (v.base) base_us = us;
                printf("%-34s %5d %5d %7u %10.2f %8.0f %7.2fx %8.2g %10.2g\n", v.name.c_str(), B, P, ns, us,
                       bytes / us * 1e-3, base_us / us, md, rel);
                rows.push_back({v.name, B, P, us, bytes / us * 1e-3, ns});
            }
            // The split rule, swept for the new entry point.
            double best = 1e30;
            Rule bestr{0, 0};
            u32 bestns = 0;
            for (Rule r : sweep) {
                u32 ns;
                double md = 0, rel = 0;
                const double us = run_variant(vars[1], r, B, P, ref, refrows, true, &ns, &md, &rel);
                printf("    rule blocks %5d min_chunk %4d: nsplit %3u %9.2f us %6.0f GB/s\n", r.blocks, r.min_chunk, ns, us,
                       bytes / us * 1e-3);
                if (us < best) best = us, bestr = r, bestns = ns;
            }
            if (!sweep.empty())
                printf("%-34s %5d %5d %7u %10.2f %8.0f %7.2fx   (blocks %d, min_chunk %d)\n", "  best rule for the new kernel",
                       B, P, bestns, best, bytes / best * 1e-3, base_us / best, bestr.blocks, bestr.min_chunk);
            // Every split count of a list (a rule aiming at exactly n blocks a (row, key head) pair,
            // chunks of at least 64 keys): where waves of resident blocks end.
            if (splits && P >= 2000) {
                const int pairs = B * NK;  // g = 4: one head group a key head
                for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 12, 14, 16, 17, 20, 24, 28, 32, 33, 48, 64}) {
                    u32 ns;
                    double md = 0, rel = 0;
                    const double us =
                        run_variant(vars[1], Rule{n * pairs, 64, 0, true}, B, P, ref, refrows, true, &ns, &md, &rel);
                    printf("    nsplit %3u (%5d blocks, %4d keys a chunk) %9.2f us %6.0f GB/s\n", ns, (int)ns * pairs,
                           (P + (int)ns) / (int)ns, us, bytes / us * 1e-3);
                }
            }
            fflush(stdout);
        }
    }

    printf("\n== summary (us a launch; x16 for the 16 layers)\n%-34s", "variant");
    for (int B : {1, 8, 32})
        for (int P : {64, 2000, 8000}) printf(" b%d/p%-5d", B, P);
    printf("\n");
    for (auto& v : vars) {
        printf("%-34s", v.name.c_str());
        for (auto& r : rows)
            if (r.name == v.name) printf(" %9.2f", r.us);
        printf("\n");
    }
    printf("%-34s", "new: GB/s");
    for (auto& r : rows)
        if (r.name == vars[1].name) printf(" %9.0f", r.gbs);
    printf("\n%-34s", "base: GB/s");
    for (auto& r : rows)
        if (r.name == vars[0].name) printf(" %9.0f", r.gbs);
    printf("\n\n%s: %d failure(s)\n", g_fail ? "FAIL" : "PASS (every variant, every shape)", g_fail);
    return g_fail ? 1 : 0;
}
