// Probe for issue #32: the batch-32 step's products and the kernels between them.
//
// mmw (below): products for 9 to 32 rows of x on tensor cores, x normalised apart, against
// cuBLAS's bare products, which the step runs past 8 rows (run 112: slower at 32 rows, so it
// stays here).
// 1. Correctness: every shape at M = 9, 17, 32 (and the LM head at 32) for a spread of launches
//    (tiles a warp, threads, ks, splits, grid caps), against a CPU reference in double
//    (outputs poisoned first), two runs bit for bit; split launches summed by a probe-side
//    reduction, and add_rms_norm_parts against the crate's add_rms_norm over that sum (the
//    sums bit for bit, the norms within a rounding).
// 2. Per shape at M = 16 and 32 (Llama-3.2-1B, bf16): cuBLAS against every launch in the sweep,
//    in graphs of 16 nodes, each node its own matrix (the LM head: 2).
// 3. The step without attention, 16 layers + the LM head in one graph: norm, QKV, O, add+norm,
//    gate/up, (SwiGLU), down, add+norm; cuBLAS's products (the step's route past 8 rows)
//    against mmw's with each shape's best launch, plain and under PDL.
// 4. (`chain` runs this alone) cuBLAS's chain as in 3 with no norms or SwiGLU, with the
//    kernels as they were before run 113 (element by element), and with the crate's (16 bytes
//    a thread, the row in registers); their outputs compared.
//
// Build (here, then run on the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -Xcompiler -fopenmp -o mmw_probe \
//        bench/mmw_probe.cu -lcublas
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

// mmw: products for 9 to 32 rows of x on tensor cores (issue #32: the batch-32 step, which takes
// cuBLAS's products; measured slower than cuBLAS at 32 rows in run 112, so it stays in this probe): y [M, N] = x [M, K] . W [N, K]^T, x as it is (the step normalises it
// once, apart). The fragments and the column permutation are mmv's; the work is shaped so that
// x costs little beside the weights at 32 rows:
// - a warp takes RT tiles of 16 rows of W (GLU: RT gate tiles and their RT up tiles), so each
//   x fragment it loads feeds RT (x 2) products;
// - `ks` warps of a block split a unit's 32-column chunks (their sums meet in shared memory
//   and are added in slice order), and gridDim.y blocks split them again: then each block
//   writes its f32 sums to part [gridDim.y][M][N], and add_rms_norm_parts (below) adds them in
//   split order (the host launches GLU with gridDim.y = 1 only);
// - with gridDim.y = 1 the block writes y, rounded to the element type (GLU: silu(g) * u as
//   product_out rounds it).
// Deterministic: no atomics, every sum in a fixed order. K a multiple of 8. Under PDL the
// first weights are issued before the wait, as mmv's.
#define MMW_WARPS_MAX 8
template <typename E, u32 NT, u32 RT, bool GLU>
__device__ void mmw(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 ks, typename E::T* y,
                    float* part) {
    constexpr u32 TA = GLU ? 2 : 1;
    constexpr u32 AT = TA * RT;          // 16-row tiles of W a warp
    constexpr u32 CH = AT >= 4 ? 1 : 2;  // 32-column chunks a round of weight loads
    constexpr u32 PW = 8 * NT + 1;
    extern __shared__ uint4 mmv_dyn[];
    float* sums = reinterpret_cast<float*>(mmv_dyn);
    const u32 nwarps = blockDim.x / 32, tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const u32 ub = nwarps / ks, u_in = warp / ks, slice = warp % ks;
    const u32 units = (N + 16 * RT - 1) / (16 * RT), groups = (units + ub - 1) / ub;
    const u32 chunks = (K + 31) / 32, ps = (chunks + gridDim.y - 1) / gridDim.y;
    const u32 s_begin = min(chunks, blockIdx.y * ps), s_end = min(chunks, s_begin + ps);
    const u32 per = (s_end - s_begin + ks - 1) / ks;
    const u32 c_begin = min(s_end, s_begin + slice * per), c_end = min(s_end, c_begin + per);
    auto P = [&](u32 w, u32 row, u32 m) -> float& { return sums[(w * AT * 16 + row) * PW + m]; };

    uint4 a0[CH][AT][2], a1[CH][AT][2];
    auto load_a = [&](uint4 (&a)[CH][AT][2], u32 unit, u32 c0) {
#pragma unroll
        for (u32 ch = 0; ch < CH; ++ch) {
            const u32 c = c0 + ch, k = c * 32 + t * 8;
            const bool ok = c < c_end && k < K;
#pragma unroll
            for (u32 at = 0; at < AT; ++at)
#pragma unroll
                for (u32 h = 0; h < 2; ++h) {
                    const u32 n = unit * 16 * RT + (at % RT) * 16 + g + 8 * h;
                    const u64 row = at >= RT ? (u64)N + n : (u64)n;
                    a[ch][at][h] = att_ld16(W + row * K + k, ok && n < N);
                }
        }
    };
    auto product = [&](const uint4 (&a)[CH][AT][2], u32 c0, float (&acc)[AT][NT][4]) {
#pragma unroll
        for (u32 ch = 0; ch < CH; ++ch) {
            const u32 c = c0 + ch, k = c * 32 + t * 8;
            const bool ok = c < c_end && k < K;
            uint4 b[NT];
#pragma unroll
            for (u32 j = 0; j < NT; ++j) {
                const u32 m = g + 8 * j;
                b[j] = mmv_ldx(x + (u64)m * K + k, ok && m < M);
            }
            mma_chunk<E>(acc, a[ch], b);
        }
    };
    const bool pre = blockIdx.x < groups && blockIdx.x * ub + u_in < units;
#if defined(DECODE_PDL)
    // The successor may launch now; the first weights are issued, then the block waits for its
    // predecessor before it reads x or writes.
    if ((pdl_mode() & 3) == 0) pdl_trigger();
    if (pre) {
        load_a(a0, blockIdx.x * ub + u_in, c_begin);
        load_a(a1, blockIdx.x * ub + u_in, c_begin + CH);
    }
    pdl_wait();
#else
    if (pre) {
        load_a(a0, blockIdx.x * ub + u_in, c_begin);
        load_a(a1, blockIdx.x * ub + u_in, c_begin + CH);
    }
#endif
    bool first = true;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 unit = grp * ub + u_in;
        float acc[AT][NT][4];
        mma_zero(acc);
        if (unit < units) {
            if (!first) {
                load_a(a0, unit, c_begin);
                load_a(a1, unit, c_begin + CH);
            }
            for (u32 c0 = c_begin; c0 < c_end; c0 += 2 * CH) {
                product(a0, c0, acc);
                load_a(a0, unit, c0 + 2 * CH);
                if (c0 + CH >= c_end) break;
                product(a1, c0 + CH, acc);
                load_a(a1, unit, c0 + 3 * CH);
            }
        }
        first = false;
#pragma unroll
        for (u32 at = 0; at < AT; ++at)
#pragma unroll
            for (u32 j = 0; j < NT; ++j) {
                P(warp, at * 16 + g, 8 * j + 2 * t) = acc[at][j][0];
                P(warp, at * 16 + g, 8 * j + 2 * t + 1) = acc[at][j][1];
                P(warp, at * 16 + g + 8, 8 * j + 2 * t) = acc[at][j][2];
                P(warp, at * 16 + g + 8, 8 * j + 2 * t + 1) = acc[at][j][3];
            }
        __syncthreads();
        // The group's outputs, consecutive threads on consecutive columns of y.
        const u32 UW = 16 * RT, FB = ub * UW;
        for (u32 i = tid; i < FB * M; i += blockDim.x) {
            const u32 m = i / FB, f = i % FB, ui = f / UW, r = f % UW;
            const u32 n = (grp * ub + ui) * UW + r;
            if (n >= N) continue;
            float s = 0.f, su = 0.f;
            for (u32 sl = 0; sl < ks; ++sl) {
                s += P(ui * ks + sl, r, m);
                if (GLU) su += P(ui * ks + sl, UW + r, m);
            }
            if (gridDim.y == 1) y[(u64)m * N + n] = product_out<E, GLU>(s, su, false, 0.f);
            else part[((u64)blockIdx.y * M + m) * N + n] = s;
        }
        __syncthreads();
    }
}


#define PROBE_MMW(NT, RT, GLU, NAME)                                                                                   \
    __global__ void __launch_bounds__(MMW_WARPS_MAX * 32, 1)                                                          \
        NAME(const u16* x, const u16* W, u32 M, u32 N, u32 K, u32 ks, u16* y, float* part) {                          \
        mmw<BF16, NT, RT, GLU>(x, W, M, N, K, ks, y, part);                                                            \
    }
PROBE_MMW(4, 1, false, mmw4_1)
PROBE_MMW(4, 2, false, mmw4_2)
PROBE_MMW(4, 4, false, mmw4_4)
PROBE_MMW(4, 1, true, mmw4_1g)
PROBE_MMW(4, 2, true, mmw4_2g)
PROBE_MMW(2, 1, false, mmw2_1)
PROBE_MMW(2, 2, false, mmw2_2)
PROBE_MMW(2, 4, false, mmw2_4)
PROBE_MMW(2, 1, true, mmw2_1g)
PROBE_MMW(2, 2, true, mmw2_2g)
__global__ void add_rms_norm_probe(const u16* x, const u16* delta, const u16* w, u32 cols, float eps, u16* s, u16* y) {
    add_rms_norm<BF16>(x, delta, w, cols, eps, s, y);
}
// add_rms_norm_parts: the delta is the sum of np f32 slices parts [np][rows][cols] (mmw's split
// products), added in slice order and rounded as the product would write it; then as
// add_rms_norm (element by element).
__global__ void add_rms_norm_parts_probe(const u16* x, const float* parts, u32 np, const u16* w, u32 cols, float eps, u16* s,
                                         u16* y) {
    __shared__ float red[32];
    const u64 row = blockIdx.x;
    const u32 tid = threadIdx.x;
    float ss = 0.f;
    for (u32 c = tid; c < cols; c += blockDim.x) {
        float d = 0.f;
        for (u32 p = 0; p < np; ++p) d += parts[((u64)p * gridDim.x + row) * cols + c];
        u16 r;
        BF16::st(&r, 0, d);
        BF16::st(s, row * cols + c, BF16::ld(x, row * cols + c) + BF16::ld(&r, 0));
        const float v = BF16::ld(s, row * cols + c);
        ss += v * v;
    }
    const float inv = block_inv_rms(ss, red, tid / 32, tid % 32, blockDim.x / 32, cols, eps);
    for (u32 c = tid; c < cols; c += blockDim.x) BF16::st(y, row * cols + c, BF16::ld(s, row * cols + c) * inv * BF16::ld(w, c));
}
__global__ void silu_mul_probe(const u16* in, u32 inter, u64 n, u16* out) { silu_mul<BF16>(in, inter, n, out); }
// The probe's reduction of split sums: y = round(sum of the slices in order).
__global__ void reduce_parts(const float* part, u32 S, u64 n, u16* y) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        float s = 0.f;
        for (u32 p = 0; p < S; ++p) s += part[p * n + i];
        BF16::st(y, i, s);
    }
}

// The crate's add_rms_norm and silu_mul as they were before run 113 (scalar loads, each thread
// striding over the row; the host launched cols / 4 threads), for the chain below.
__global__ void add_rms_norm_old(const u16* x, const u16* delta, const u16* w, u32 cols, float eps, u16* sum_out, u16* y) {
    __shared__ float red[32];
    const u64 row = blockIdx.x;
    const u32 tid = threadIdx.x;
    float ss = 0.f;
    for (u32 c = tid; c < cols; c += blockDim.x) {
        float v = BF16::ld(x, row * cols + c);
        if (delta) {
            v += BF16::ld(delta, row * cols + c);
            BF16::st(sum_out, row * cols + c, v);
            v = BF16::ld(sum_out, row * cols + c);
        }
        ss += v * v;
    }
    ss = warp_sum(ss);
    if (tid % 32 == 0) red[tid / 32] = ss;
    __syncthreads();
    if (tid < 32) {
        float v = tid < blockDim.x / 32 ? red[tid] : 0.f;
        v = warp_sum(v);
        if (tid == 0) red[0] = v;
    }
    __syncthreads();
    const float inv = rsqrtf(red[0] / cols + eps);
    for (u32 c = tid; c < cols; c += blockDim.x) {
        const float v = BF16::ld(delta ? sum_out : x, row * cols + c);
        BF16::st(y, row * cols + c, v * inv * BF16::ld(w, c));
    }
}
__global__ void silu_mul_old(const u16* in, u32 inter, u64 n, u16* out) {
    for (u64 x = (u64)blockIdx.x * blockDim.x + threadIdx.x; x < n; x += (u64)gridDim.x * blockDim.x) {
        const u64 r = x / inter, c = x - r * inter;
        const float g = BF16::ld(in, r * 2 * inter + c), u = BF16::ld(in, r * 2 * inter + inter + c);
        BF16::st(out, x, g / (1.f + __expf(-g)) * u);
    }
}

typedef void (*MmwFn)(const u16*, const u16*, u32, u32, u32, u32, u16*, float*);
static MmwFn fn_of(u32 nt, u32 rt, bool glu) {
    if (nt == 4) return glu ? (rt == 1 ? mmw4_1g : mmw4_2g) : (rt == 1 ? mmw4_1 : rt == 2 ? mmw4_2 : mmw4_4);
    return glu ? (rt == 1 ? mmw2_1g : mmw2_2g) : (rt == 1 ? mmw2_1 : rt == 2 ? mmw2_2 : mmw2_4);
}
struct Cfg { u32 rt, threads, ks, S, grid; };
static u32 smem_of(u32 nt, u32 rt, bool glu, u32 threads) { return threads / 32 * (glu ? 2 : 1) * rt * 16 * (8 * nt + 1) * 4; }
struct Shape { const char* name; u32 N, K; bool glu; int nodes; };
static const Shape shapes[] = {
    {"qkv", 3072, 2048, false, 16}, {"o", 2048, 2048, false, 16}, {"gate/up (SwiGLU)", 8192, 2048, true, 16},
    {"down", 2048, 8192, false, 16}, {"lm head", 128256, 2048, false, 2}, {"odd", 1000, 200, false, 16},
};
static u32 groups_of(const Shape& sh, u32 rt, u32 threads, u32 ks) {
    const u32 units = (sh.N + 16 * rt - 1) / (16 * rt), ub = threads / 32 / ks;
    return (units + ub - 1) / ub;
}
static float* g_part;
static void launch(const Cfg& c, const Shape& sh, u32 M, const u16* W, const u16* x, u16* y, bool pdl = false) {
    const u32 nt = M <= 16 ? 2 : 4;
    CK(launch_ex(pdl, fn_of(nt, c.rt, sh.glu), dim3(c.grid, c.S), c.threads, smem_of(nt, c.rt, sh.glu, c.threads), x, W, M,
                 sh.N, sh.K, c.ks, y, g_part));
}
static void launch_cublas(cublasHandle_t h, const Shape& sh, u32 M, const u16* W, const u16* x, u16* y) {
    const float one = 1.f, zero = 0.f;
    const u32 rows = sh.glu ? 2 * sh.N : sh.N;
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, rows, M, sh.K, &one, W, CUDA_R_16BF, sh.K, x, CUDA_R_16BF, sh.K, &zero, y,
                    CUDA_R_16BF, rows, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}
static std::vector<Cfg> sweep(const Shape& sh) {
    std::vector<Cfg> v;
    const u32 chunks = (sh.K + 31) / 32;
    for (u32 rt : {1u, 2u, 4u}) {
        if (sh.glu && rt == 4) continue;
        for (u32 threads : {128u, 256u})
            for (u32 ks : {1u, 2u, 4u, 8u}) {
                if (ks > threads / 32) continue;
                for (u32 S : {1u, 2u, 4u, 8u, 16u}) {
                    if (sh.glu && S > 1) continue;
                    if (chunks < 2 * S * ks) continue;
                    const u32 gr = groups_of(sh, rt, threads, ks);
                    for (u32 cap : {1u << 30, 264u, 132u}) {
                        const u32 grid = std::min(gr, cap);
                        if (cap != (1u << 30) && grid == gr) continue;
                        v.push_back({rt, threads, ks, S, grid});
                    }
                }
            }
    }
    return v;
}
static void allow_smem() {
    for (u32 nt : {2u, 4u})
        for (u32 rt : {1u, 2u, 4u})
            for (int glu = 0; glu < 2; ++glu) {
                if (glu && rt == 4) continue;
                cudaFuncAttributes fa;
                CK(cudaFuncGetAttributes(&fa, fn_of(nt, rt, glu)));
                CK(cudaFuncSetAttribute(fn_of(nt, rt, glu), cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
                printf("regs: mmw nt %u rt %u%s: %d regs, %zu B local\n", nt, rt, glu ? " glu" : "", fa.numRegs, fa.localSizeBytes);
            }
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    bool timing_only = false, check_only = false, chain_only = false;
    for (int a = 1; a < argc; ++a) {
        chain_only |= !strcmp(argv[a], "chain");
        timing_only |= !strcmp(argv[a], "timing");
        check_only |= !strcmp(argv[a], "check");
    }
    probe_device();
    const u64 layer_el = 3072ull * 2048 + 2048ull * 2048 + 16384ull * 2048 + 2048ull * 8192;
    const u64 w_el = std::max(16 * layer_el, 2 * 128256ull * 2048);
    u16 *W, *x, *y, *y2, *nw, *res, *s1, *h1, *s2, *h2, *gu;
    CK(cudaMalloc(&W, w_el * 2));
    CK(cudaMalloc(&x, 32 * 8192 * 2));
    CK(cudaMalloc(&y, 32 * 128256 * 2 * 2));
    CK(cudaMalloc(&y2, 32 * 128256 * 2 * 2));
    CK(cudaMalloc(&nw, 16384 * 2));
    CK(cudaMalloc(&res, 32 * 8192 * 2));
    CK(cudaMalloc(&s1, 32 * 8192 * 2));
    CK(cudaMalloc(&h1, 32 * 8192 * 2));
    CK(cudaMalloc(&s2, 32 * 8192 * 2));
    CK(cudaMalloc(&h2, 32 * 8192 * 2));
    CK(cudaMalloc(&gu, 32 * 16384 * 2));
    CK(cudaMalloc(&g_part, 16ull * 32 * 128256 * 4));
    fill(W, w_el, 1, -0.05f, 0.05f);
    fill(nw, 16384, 3, 0.5f, 1.5f);
    fill(res, 32 * 8192, 4, -1.f, 1.f);
    CK(cudaStreamSynchronize(g_s));
    cublasHandle_t hb = probe_cublas();
    allow_smem();

    // ----------------------------- correctness -----------------------------------------
    u64 total_bad = 0, seed = 100;
    if (chain_only) timing_only = true;
    if (!timing_only) {
        printf("\n## correctness: |y - ref| <= (|ref| + 1) / 128 (twice for SwiGLU)\n");
        for (const Shape& sh : shapes) {
            const u64 wn = (u64)(sh.glu ? 2 : 1) * sh.N * sh.K;
            std::vector<float> Wf(wn);
            {
                const std::vector<u16> wh = d2h(W, wn);
                for (u64 i = 0; i < wn; ++i) Wf[i] = bf2f(wh[i]);
            }
            struct Plain { u32 N, K, mode; bool residual, glu; } ps{sh.N, sh.K, 0, false, sh.glu};
            std::vector<u32> Ms = {9, 17, 32};
            if (sh.N > 20000) Ms = {32};
            for (u32 M : Ms) {
                fill(x, (u64)M * sh.K, ++seed, -1.f, 1.f);
                const std::vector<u16> xh = d2h(x, (size_t)M * sh.K);
                std::vector<float> xf(xh.size());
                for (size_t i = 0; i < xh.size(); ++i) xf[i] = bf2f(xh[i]);
                const std::vector<double> r = cpu_ref(ps, M, Wf, xf, {}, {}, [](float v) { return bf2f(f2bf(v)); });
                std::vector<Cfg> cs = sweep(sh);
                if (sh.N > 20000) {  // a few: the LM head's reference is slow
                    std::vector<Cfg> few;
                    for (size_t i = 0; i < cs.size(); i += 7) few.push_back(cs[i]);
                    cs = few;
                }
                u64 bad = 0, diff = 0, nbad = 0;
                double wr = 0;
                for (size_t ci = 0; ci < cs.size(); ++ci) {
                    const Cfg& c = cs[ci];
                    auto run = [&](std::vector<u16>& out) {
                        CK(cudaMemsetAsync(y, 0xff, (size_t)M * sh.N * 2, g_s));
                        launch(c, sh, M, W, x, y);
                        if (c.S > 1) {
                            reduce_parts<<<512, 256, 0, g_s>>>(g_part, c.S, (u64)M * sh.N, y);
                            CK(cudaGetLastError());
                        }
                        out = d2h(y, (size_t)M * sh.N);
                    };
                    std::vector<u16> o1, o2;
                    run(o1);
                    if (ci % 5 == 0) {
                        run(o2);
                        diff += o1 != o2;
                    }
                    std::vector<float> yf(o1.size());
                    for (size_t i = 0; i < o1.size(); ++i) yf[i] = bf2f(o1[i]);
                    const Err e = check(yf, r, sh.glu ? 2.0 / 128 : 1.0 / 128);
                    bad += e.bad;
                    wr = std::max(wr, e.max_rel);
                    // add_rms_norm_parts against add_rms_norm over the reduced sum, bit for bit.
                    if (c.S > 1 && !sh.glu && sh.N <= 8192) {
                        add_rms_norm_probe<<<M, 256, 0, g_s>>>(res, y, nw, sh.N, 1e-5f, s1, h1);
                        add_rms_norm_parts_probe<<<M, 256, 0, g_s>>>(res, g_part, c.S, nw, sh.N, 1e-5f, s2, h2);
                        CK(cudaGetLastError());
                        // The sums bit for bit; the norms within a rounding (the crate's kernel
                        // adds the squares in another order).
                        nbad += d2h(s1, (size_t)M * sh.N) != d2h(s2, (size_t)M * sh.N);
                        const std::vector<u16> a1 = d2h(h1, (size_t)M * sh.N), a2 = d2h(h2, (size_t)M * sh.N);
                        for (size_t i = 0; i < a1.size(); ++i)
                            nbad += fabs(bf2f(a1[i]) - bf2f(a2[i])) > (fabs(bf2f(a1[i])) + 1e-3) / 128;
                    }
                }
                total_bad += bad + diff + nbad;
                printf("%-18s M=%2u %3zu launches: max rel %.3g, bad %llu, reruns differing %llu, norm(parts) differing %llu\n",
                       sh.name, M, cs.size(), wr, (ull)bad, (ull)diff, (ull)nbad);
            }
        }
        printf("correctness: %s (%llu failures)\n", total_bad ? "FAILED" : "passed", (ull)total_bad);
        if (check_only) return total_bad ? 1 : 0;
    }

    // ----------------------------- timing per shape ------------------------------------
    // (`chain` runs only the last section.)
    if (!chain_only) printf("\n## timing, us per node (median of 7 x 30 replays of a graph of `nodes` nodes, each its own matrix)\n");
    fill(x, 32 * 8192, 7, -1.f, 1.f);
    const u64 off[4] = {0, 3072ull * 2048, 3072ull * 2048 + 2048ull * 2048, 3072ull * 2048 + 2048ull * 2048 + 16384ull * 2048};
    auto Wi = [&](int si, int i) -> const u16* {
        if (si == 4) return W + (u64)i * 128256 * 2048;
        return W + (u64)i * layer_el + off[si];
    };
    Cfg best_of[5][33];
    for (u32 M : {16u, 32u})
        for (int si = 0; si < (chain_only ? 0 : 5); ++si) {
            const Shape& sh = shapes[si];
            const double mb = (double)(sh.glu ? 2 : 1) * sh.N * sh.K * 2 / 1e6;
            const Timing tc = time_graph(sh.nodes, [&](int i) { launch_cublas(hb, sh, M, Wi(si, i), x, y); });
            double best = 1e9;
            Cfg bc{};
            std::vector<std::pair<double, Cfg>> all;
            for (const Cfg& c : sweep(sh)) {
                const Timing t = time_graph(sh.nodes, [&](int i) { launch(c, sh, M, Wi(si, i), x, y); });
                all.push_back({t.med, c});
                if (t.med < best) { best = t.med; bc = c; }
            }
            std::sort(all.begin(), all.end(), [](auto& a, auto& b) { return a.first < b.first; });
            best_of[si][M] = bc;
            printf("%-18s M=%2u %.1f MB  cuBLAS %7.2f us (%5.0f GB/s) | mmw best [rt %u thr %u ks %u S %u grid %u] %7.2f us (%5.0f GB/s)"
                   "  cuBLAS/mmw %.2f\n",
                   sh.name, M, mb, tc.med, mb * 1e3 / tc.med, bc.rt, bc.threads, bc.ks, bc.S, bc.grid, best, mb * 1e3 / best,
                   tc.med / best);
            for (size_t i = 1; i < std::min<size_t>(all.size(), 6); ++i)
                printf("    next [rt %u thr %u ks %u S %u grid %u] %.2f us\n", all[i].second.rt, all[i].second.threads,
                       all[i].second.ks, all[i].second.S, all[i].second.grid, all[i].first);
        }

    // ----------------------------- the step without attention -------------------------
    if (!chain_only) printf("\n## 16 layers (norm, qkv, o, add+norm, gate/up, [silu_mul], down, add+norm) + LM head, one graph (ms)\n");
    for (u32 M : {16u, 32u}) {
        if (chain_only) break;
        auto seq = [&](int how) {  // 0 cuBLAS, 1 mmw plain, 2 mmw PDL
            return time_graph(1, [&](int) {
                add_rms_norm_probe<<<M, 256, 0, g_s>>>(res, nullptr, nw, 2048, 1e-5f, s1, h1);
                for (int l = 0; l < 16; ++l) {
                    const u16* Wl = W + (u64)l * layer_el;
                    if (how == 0) {
                        launch_cublas(hb, shapes[0], M, Wl + off[0], h1, y);
                        launch_cublas(hb, shapes[1], M, Wl + off[1], y, y2);
                        add_rms_norm_probe<<<M, 256, 0, g_s>>>(res, y2, nw, 2048, 1e-5f, s1, h1);
                        launch_cublas(hb, shapes[2], M, Wl + off[2], h1, gu);
                        silu_mul_probe<<<256, 256, 0, g_s>>>(gu, 8192, (u64)M * 8192, y);
                        launch_cublas(hb, shapes[3], M, Wl + off[3], y, y2);
                        add_rms_norm_probe<<<M, 256, 0, g_s>>>(s1, y2, nw, 2048, 1e-5f, s2, h1);
                    } else {
                        const bool p = how == 2;
                        launch(best_of[0][M], shapes[0], M, Wl + off[0], h1, y, p);
                        const Cfg co = best_of[1][M], cd = best_of[3][M];
                        launch(co, shapes[1], M, Wl + off[1], y, y2, p);
                        if (co.S > 1) add_rms_norm_parts_probe<<<M, 256, 0, g_s>>>(res, g_part, co.S, nw, 2048, 1e-5f, s1, h1);
                        else add_rms_norm_probe<<<M, 256, 0, g_s>>>(res, y2, nw, 2048, 1e-5f, s1, h1);
                        launch(best_of[2][M], shapes[2], M, Wl + off[2], h1, y, p);
                        launch(cd, shapes[3], M, Wl + off[3], y, y2, p);
                        if (cd.S > 1) add_rms_norm_parts_probe<<<M, 256, 0, g_s>>>(s1, g_part, cd.S, nw, 2048, 1e-5f, s2, h1);
                        else add_rms_norm_probe<<<M, 256, 0, g_s>>>(s1, y2, nw, 2048, 1e-5f, s2, h1);
                    }
                    CK(cudaGetLastError());
                }
                if (how == 0) launch_cublas(hb, shapes[4], M, W, h1, y);
                else launch(best_of[4][M], shapes[4], M, W, h1, y, how == 2);
            });
        };
        const Timing c = seq(0), m = seq(1), p = seq(2);
        const double gb = (16.0 * layer_el + 128256.0 * 2048) * 2 / 1e9;
        printf("M=%2u  cuBLAS %.3f ms (%.0f GB/s) [%.3f-%.3f] | mmw %.3f ms (%.0f GB/s) [%.3f-%.3f] | mmw PDL %.3f ms [%.3f-%.3f]"
               "  cuBLAS/mmw %.3f, /PDL %.3f\n",
               M, c.med / 1e3, gb * 1e6 / c.med, c.lo / 1e3, c.hi / 1e3, m.med / 1e3, gb * 1e6 / m.med, m.lo / 1e3, m.hi / 1e3,
               p.med / 1e3, p.lo / 1e3, p.hi / 1e3, c.med / m.med, c.med / p.med);
    }
    // ----------------------------- the small kernels between cuBLAS's products ----------
    printf("\n## cuBLAS's chain: what the norms and SwiGLU cost, the kernels before run 113 against the crate's (ms)\n");
    {
        // The crate's kernels against the old ones, bit for bit (the sums of squares are added
        // in another order: a rare last-bit difference would show here).
        const u32 M = 32;
        fill(x, 32 * 8192, 9, -1.f, 1.f);
        add_rms_norm_old<<<M, 512, 0, g_s>>>(res, x, nw, 2048, 1e-5f, s1, h1);
        add_rms_norm_probe<<<M, 256, 0, g_s>>>(res, x, nw, 2048, 1e-5f, s2, h2);
        silu_mul_old<<<256, 256, 0, g_s>>>(x, 4096, (u64)M * 4096, y);
        silu_mul_probe<<<(M * 4096 / 8 + 255) / 256, 256, 0, g_s>>>(x, 4096, (u64)M * 4096, y2);
        CK(cudaGetLastError());
        auto cmp = [&](const u16* a, const u16* b, size_t n, const char* what) {
            const std::vector<u16> ha = d2h(a, n), hb2 = d2h(b, n);
            size_t nd = 0;
            double md = 0;
            for (size_t i = 0; i < n; ++i)
                if (ha[i] != hb2[i]) {
                    ++nd;
                    md = std::max(md, (double)fabs(bf2f(ha[i]) - bf2f(hb2[i])) / std::max(1e-3, (double)fabs(bf2f(ha[i]))));
                }
            printf("%s: %zu of %zu differ, max rel %.3g\n", what, nd, n, md);
            total_bad += md > 1.0 / 64;
        };
        cmp(s1, s2, 32 * 2048, "add (sum), crate's vs old");
        cmp(h1, h2, 32 * 2048, "add+norm, crate's vs old");
        cmp(y, y2, 32 * 4096, "silu_mul, crate's vs old");
    }
    for (u32 M : {16u, 32u}) {
        // how: 0 products only; 1 the old norms and SwiGLU; 2 the crate's.
        auto norm = [&](int how, const u16* a, const u16* d, u16* so, u16* yo) {
            if (how == 1) add_rms_norm_old<<<M, 512, 0, g_s>>>(a, d, nw, 2048, 1e-5f, so, yo);
            else add_rms_norm_probe<<<M, 256, 0, g_s>>>(a, d, nw, 2048, 1e-5f, so, yo);
        };
        auto silu = [&](int how) {
            if (how == 1) silu_mul_old<<<std::min<u32>(M * 8192 / 256, 132 * 16), 256, 0, g_s>>>(gu, 8192, (u64)M * 8192, y);
            else silu_mul_probe<<<(M * 8192 / 8 + 255) / 256, 256, 0, g_s>>>(gu, 8192, (u64)M * 8192, y);
        };
        auto seq = [&](int how) {
            return time_graph(1, [&](int) {
                if (how) norm(how, res, nullptr, s1, h1);
                for (int l = 0; l < 16; ++l) {
                    const u16* Wl = W + (u64)l * layer_el;
                    launch_cublas(hb, shapes[0], M, Wl + off[0], h1, y);
                    launch_cublas(hb, shapes[1], M, Wl + off[1], y, y2);
                    if (how) norm(how, res, y2, s1, h1);
                    launch_cublas(hb, shapes[2], M, Wl + off[2], h1, gu);
                    if (how) silu(how);
                    launch_cublas(hb, shapes[3], M, Wl + off[3], y, y2);
                    if (how) norm(how, s1, y2, s2, h1);
                    CK(cudaGetLastError());
                }
                launch_cublas(hb, shapes[4], M, W, h1, y);
            });
        };
        const Timing t0 = seq(0), t1 = seq(1), t2 = seq(2), t1b = seq(1), t2b = seq(2);
        printf("M=%2u  products only %.3f [%.3f-%.3f] | + old norms, SwiGLU %.3f [%.3f-%.3f], again %.3f | + crate's %.3f [%.3f-%.3f], "
               "again %.3f\n",
               M, t0.med / 1e3, t0.lo / 1e3, t0.hi / 1e3, t1.med / 1e3, t1.lo / 1e3, t1.hi / 1e3, t1b.med / 1e3, t2.med / 1e3,
               t2.lo / 1e3, t2.hi / 1e3, t2b.med / 1e3);
        // The small kernels alone: 48 of them in a graph.
        for (int how : {1, 2}) {
            const Timing n = time_graph(1, [&](int) {
                for (int l = 0; l < 16; ++l) { norm(how, res, y2, s1, h1); silu(how); norm(how, s1, y2, s2, h1); }
            });
            printf("M=%2u  48 small kernels alone, %s: %.1f us\n", M, how == 1 ? "old" : "crate's", n.med);
        }
    }
    return total_bad ? 1 : 0;
}
