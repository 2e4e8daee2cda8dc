// Probe for issue #22, part 3: how close can the decode step's batch-1 projections come to
// the memory bandwidth, and what bounds them? At the Llama-3.2-1B projection shapes (bf16
// weights), each path is timed inside a CUDA graph of 16 dependent nodes (each node its own
// matrix, so the 50 MB L2 holds none of them; the LM head: 2 nodes over 2 matrices), replayed
// 3 + 7 x 30 times; the time is the median of the 7 per-replay averages (cudaEvent timing),
// per node:
//   (a) capture-candle's GEMV as shipped before this change (bench/gemv_old.cuh, decode.cu at
//       e2a704e), launched as gpu.rs launched it;
//   (b) a streaming-read floor: 16-byte loads over the same weight bytes, XOR-reduced, one
//       node per matrix, swept over block size, loads in flight, grid and cache hint (run 1
//       swept 256/512/1024 threads x 4/8/16 loads x hint; these are its best); the best per
//       shape;
//   (c) cuBLAS (cublasGemmEx, bf16 in and out, f32 compute, n = batch: 1 and 8);
//   (d) capture-candle's GEMV now (kernels/decode.cu `gemv_bf16`, and `gemv_glu_bf16` for
//       the gate/up projection with SwiGLU fused in), launched as gpu.rs launches it (the
//       same rule, restated below), with the fused prologue/epilogue of each shape; also
//       swept over block size and ks, and taken apart (DIAG: no staging, no arithmetic,
//       neither) to show where the time over (b) goes;
//   (p) the GEMV of run 5 (bench/gemv_run5.cuh, decode.cu at c32214c), the baseline of the
//       one-round staging and the GLU epilogue.
// Then the layer's four projections x 16 layers in one graph, at batch 1 and 2: the MLP as
// run 5 ran it (gate/up, then down with the SwiGLU prologue) and as the step runs it now
// (gate/up with SwiGLU fused in, then down on its output).
// Correctness: (d) (rule and every swept configuration) against (a), (p) and a CPU reference
// (double) on fresh random data at every shape, M = 1 and 2, outputs poisoned first; f16 and
// f32 (d) against (a) and the reference at the o shape in all three modes.
//
// Build (any machine with nvcc 13 and cuBLAS; compute_80 code compiled for the H100, as the
// driver compiles decode.ptx):
//   nvcc -O3 -std=c++17 -gencode arch=compute_80,code=sm_90 -Xcompiler -fopenmp \
//        -o gemv_probe bench/gemv_probe.cu -lcublas
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <string>
#include <algorithm>
#include <functional>
#include <chrono>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"
#include "gemv_old.cuh"
#include "gemv_run5.cuh"


static double wall() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
static double g_t0;

// ---------------------------------------------------------------------------------------
// Kernels of the probe.

template <bool HINT>
static __device__ __forceinline__ uint4 ld16(const uint4* p) {
    if (HINT) {
        uint4 v;
        asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                     : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
        return v;
    }
    return __ldg(p);
}

// (b) The floor: every 16-byte word of [p, p + n16) read once, L loads a thread in flight.
template <u32 NT, u32 L, bool HINT>
__global__ void __launch_bounds__(NT) stream_floor(const uint4* __restrict__ p, u64 n16, u32* out) {
    u32 acc = 0;
    const u64 stride = (u64)gridDim.x * NT * L;
    for (u64 base = (u64)blockIdx.x * NT * L + threadIdx.x; base < n16; base += stride) {
        uint4 v[L];
#pragma unroll
        for (u32 j = 0; j < L; ++j) {
            const u64 i = base + (u64)j * NT;
            v[j] = i < n16 ? ld16<HINT>(p + i) : make_uint4(0, 0, 0, 0);
        }
#pragma unroll
        for (u32 j = 0; j < L; ++j) acc ^= v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
    }
    for (int o = 16; o > 0; o >>= 1) acc ^= __shfl_xor_sync(0xffffffffu, acc, o);
    if (threadIdx.x == 0) out[blockIdx.x] = acc;
}


// (d) taken apart: the same kernel with DIAG set (see decode.cu).
template <u32 DIAG>
__global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_diag_bf16(
    const u16* x, const u16* W, u32 M, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y,
    u32 ks, unsigned long long* amax) {
    gemv<BF16, false, DIAG>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
}
// The GLU kernel taken apart the same way, with the plain kernel's signature (residual and
// amax unused).
template <u32 DIAG>
__global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_glu_diag_bf16(
    const u16* x, const u16* W, u32 M, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16*, u16* y,
    u32 ks, unsigned long long*) {
    gemv<BF16, true, DIAG>(x, W, M, N, K, mode, nw, eps, nullptr, y, ks, nullptr);
}

__global__ void bf16_to_f32(const u16* a, float* b, u64 n) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) b[i] = BF16::ld(a, i);
}

typedef void (*FloorFn)(const uint4*, u64, u32*);
struct FloorVariant { const char* name; FloorFn f; u32 nt, l; };
#define FV(NT, L, H) FloorVariant{"nt" #NT "_l" #L "_h" #H, stream_floor<NT, L, H>, NT, L}
// Run 1 swept 256/512/1024 threads x 4/8/16 loads x hint on/off: these were its best.
static FloorVariant floor_variants[] = {
    FV(256, 4, 0), FV(256, 4, 1), FV(256, 8, 1), FV(512, 4, 1), FV(1024, 4, 1),
};

// ---------------------------------------------------------------------------------------
// Host side (the shared helpers: probe_host.cuh).

// glu: the gate/up projection with SwiGLU fused in (gemv_glu_bf16): N outputs from 2N
// weight rows. base: the shape whose floor and cuBLAS times stand for this one (same bytes).
struct Shape { const char* name; u32 N, K, mode; bool residual, amax; int nodes; bool glu; int base; };
static const Shape shapes[] = {
    {"qkv (RMSNorm)", 3072, 2048, 1, false, false, 16, false, 0},
    {"o (+residual)", 2048, 2048, 0, true, false, 16, false, 1},
    {"down (SwiGLU, +residual)", 2048, 8192, 2, true, false, 16, false, 2},
    {"gate/up (RMSNorm)", 16384, 2048, 1, false, false, 16, false, 3},
    {"lm head (RMSNorm, argmax)", 128256, 2048, 1, false, true, 2, false, 4},
    // Diagnostics: the qkv and o shapes with no prologue and no residual (floor, cuBLAS: as above).
    {"qkv shape, plain", 3072, 2048, 0, false, false, 16, false, 0},
    {"o shape, plain", 2048, 2048, 0, false, false, 16, false, 1},
    // The MLP as the step now runs it: gate/up with SwiGLU fused in, then down on its output.
    {"gate/up GLU (RMSNorm)", 8192, 2048, 1, false, false, 16, true, 3},
    {"down (+residual), x SwiGLU'd", 2048, 8192, 0, true, false, 16, false, 2},
};
static const int NS = sizeof(shapes) / sizeof(shapes[0]);

struct Bufs {
    u16* W;      // weights, matrices back to back
    u16* x;      // [8, 2 * 8192] inputs (SwiGLU takes 2K)
    u16* nw;     // [16384] norm weight
    u16* res;    // [8, 128256] residual
    u16* y;      // [8, 128256] output
    ull* amax;   // [8]
    u32* fout;   // floor outputs
    void* ws;    // cuBLAS workspace
};
static Bufs B;

// A launch: block size, ks, grid.
struct Cfg { u32 threads, ks, grid; };

// (a): gpu.rs's launch of the old kernel (256 threads, two rows a warp, 264 persistent blocks).
static Cfg old_cfg(u32 n, u32 k, u32 elsize) {
    const u32 steps = (k + 32 * (16 / elsize) - 1) / (32 * (16 / elsize));
    u32 ks = 1;
    while (ks < 8 && (n + 1) / 2 * ks < 264 * 8 && steps / (ks * 2) >= 4) ks *= 2;
    const u32 rpb = 16 / ks;
    return {256, ks, std::min((n + rpb - 1) / rpb, 264u)};
}
// (d): gpu.rs's launch of the new kernel (kept in step with capture-candle/src/decode/gpu.rs).
static Cfg new_cfg(u32 n, u32 k, u32 elsize, bool glu = false) {
    const u32 kr = glu ? 2 * k : k;  // a row as the warps stream it
    const u32 threads = k >= 4096 ? 512 : 256;
    const u32 steps = (kr + 32 * (16 / elsize) - 1) / (32 * (16 / elsize));
    u32 ks = 1;
    while (ks < 8 && n * ks < 3072 && steps / (ks * 2) >= 4) ks *= 2;
    const u32 rows = threads / 32 / ks, groups = (n + rows - 1) / rows;
    return {threads, ks, std::max(1u, std::min(groups, 132u * (1024 / threads)))};
}
// A swept configuration: the grid fills the GPU (occupancy from the runtime).
static u32 smem_bytes(u32 M, u32 k, u32) { return M * k * 2; }
static Cfg sweep_cfg(const void* f, u32 n, u32 M, u32 k, u32 threads, u32 ks, u32 mode) {
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, f, threads, smem_bytes(M, k, mode)));
    const u32 rows = threads / 32 / ks, groups = (n + rows - 1) / rows;
    return {threads, ks, std::min(groups, (u32)(occ * g_sms))};
}

typedef void (*GemvBf16)(const u16*, const u16*, u32, u32, u32, u32, const u16*, float, const u16*, u16*, u32, ull*);
// For a GLU shape, gemv_bf16 stands for gemv_glu_bf16 (the kernel the step launches).
static void launch_gemv(GemvBf16 f, const Cfg& c, const Shape& sh, u32 M, const u16* W, u16* y, ull* amax) {
    if (sh.glu && f == gemv_bf16) {
        gemv_glu_bf16<<<c.grid, c.threads, smem_bytes(M, sh.K, sh.mode), g_s>>>(B.x, W, M, sh.N, sh.K, sh.mode,
                                                                                sh.mode == 1 ? B.nw : nullptr, 1e-5f, y, c.ks);
        return;
    }
    f<<<c.grid, c.threads, smem_bytes(M, sh.K, sh.mode), g_s>>>(B.x, W, M, sh.N, sh.K, sh.mode, sh.mode == 1 ? B.nw : nullptr, 1e-5f,
                                               sh.residual ? B.res : nullptr, y, c.ks, amax);
}

static void launch_cublas(cublasHandle_t h, const Shape& sh, u32 M, const u16* W, u16* y) {
    const float one = 1.f, zero = 0.f;
    CB(cublasGemmEx(h, CUBLAS_OP_T, CUBLAS_OP_N, sh.N, M, sh.K, &one, W, CUDA_R_16BF, sh.K, B.x, CUDA_R_16BF, sh.K,
                    &zero, y, CUDA_R_16BF, sh.N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

// ---------------------------------------------------------------------------------------
// Correctness.

static std::vector<float> bf_vec(const std::vector<u16>& v) {
    std::vector<float> o(v.size());
    for (size_t i = 0; i < v.size(); ++i) o[i] = bf2f(v[i]);
    return o;
}

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    g_t0 = wall();
    const bool verbose = !(argc > 1 && !strcmp(argv[1], "quiet"));
    // "check": correctness only, without the LM head (for compute-sanitizer, which is slow).
    const bool check_only = argc > 1 && !strcmp(argv[1], "check");
    probe_device();
    // Weights: 16 layers of the four projections (1.95 GB), also reused as 16 matrices of each shape.
    const u64 layer_el = 3072ull * 2048 + 2048ull * 2048 + 16384ull * 2048 + 2048ull * 8192;
    const u64 w_el = std::max(16 * layer_el, 2 * 128256ull * 2048);
    CK(cudaMalloc(&B.W, w_el * 2));
    CK(cudaMalloc(&B.x, 8 * 2 * 8192 * 2));
    CK(cudaMalloc(&B.nw, 16384 * 2));
    CK(cudaMalloc(&B.res, 8 * 128256 * 2));
    CK(cudaMalloc(&B.y, 8 * 128256 * 4));
    CK(cudaMalloc(&B.amax, 8 * 8));
    CK(cudaMalloc(&B.fout, 1 << 20));
    CK(cudaMalloc(&B.ws, 32 << 20));
    fill(B.W, w_el, 1, -0.05f, 0.05f);
    fill(B.nw, 16384, 3, 0.5f, 1.5f);
    fill(B.res, 8 * 128256, 4, -1.f, 1.f);
    CK(cudaMemsetAsync(B.amax, 0, 64, g_s));
    CK(cudaStreamSynchronize(g_s));
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, g_s));
    CB(cublasSetWorkspace(h, B.ws, 32 << 20));
    {
        cudaFuncAttributes fa;
        const void* fs[] = {(const void*)gemv_old_bf16, (const void*)gemv_bf16, (const void*)gemv_f16, (const void*)gemv_f32};
        const char* nm[] = {"(a) old gemv_bf16", "(d) gemv_bf16", "(d) gemv_f16", "(d) gemv_f32"};
        for (int i = 0; i < 4; ++i) {
            CK(cudaFuncGetAttributes(&fa, fs[i]));
            printf("regs: %s %d regs, %zu B local\n", nm[i], fa.numRegs, fa.localSizeBytes);
        }
    }
    // Swept (d) configurations (block size, ks).
    std::vector<std::pair<u32, u32>> sweep;
    for (u32 t : {256u, 512u})
        for (u32 ks : {1u, 2u, 4u}) sweep.push_back({t, ks});

    // ----------------------------- correctness -----------------------------------------
    printf("\n## correctness, bf16 (matrix 0 of each shape, fresh random x per shape and M)\n");
    printf("tolerance vs the CPU reference (double): |y - ref| <= (|ref| + 1) / 128\n");
    u64 total_bad = 0;
    u64 seed = 100;
    for (const Shape& sh : shapes) {
        if (check_only && sh.N > 20000) continue;
        const std::vector<float> Wf = bf_vec(d2h(B.W, (size_t)(sh.glu ? 2 : 1) * sh.N * sh.K)), nwf = bf_vec(d2h(B.nw, sh.K));
        for (u32 M : {1u, 2u}) {
            const u32 xk = sh.mode == 2 ? 2 * sh.K : sh.K;
            fill(B.x, (u64)M * xk, ++seed, sh.mode == 2 ? -3.f : -1.f, sh.mode == 2 ? 3.f : 1.f);
            const std::vector<float> xf = bf_vec(d2h(B.x, (size_t)M * xk)), resf = bf_vec(d2h(B.res, (size_t)M * sh.N));
            const std::vector<double> r = cpu_ref(sh, M, Wf, xf, nwf, resf, [](float v) { return bf2f(f2bf(v)); });
            auto run = [&](GemvBf16 f, const Cfg& c, std::vector<u16>& out, ull* am) {
                CK(cudaMemsetAsync(B.y, 0xff, (size_t)M * sh.N * 2, g_s));
                CK(cudaMemsetAsync(B.amax, 0, 64, g_s));
                launch_gemv(f, c, sh, M, B.W, B.y, sh.amax ? B.amax : nullptr);
                CK(cudaGetLastError());
                out = d2h(B.y, (size_t)M * sh.N);
                CK(cudaMemcpy(am, B.amax, 64, cudaMemcpyDeviceToHost));
            };
            std::vector<u16> ya, yp, yd;
            ull am_a[8], am_p[8], am_d[8];
            const Cfg nc = new_cfg(sh.N, sh.K, 2, sh.glu);
            run(gemv_bf16, nc, yd, am_d);
            const std::vector<float> ydf = bf_vec(yd);
            Err ed = check(ydf, r, 1.0 / 128);
            total_bad += ed.bad;
            if (sh.glu) {  // no earlier kernel computes this: (d) against the reference only
                ya = yd;
                memcpy(am_a, am_d, sizeof am_a);
                printf("%-26s M=%u (d) [%u thr, ks %u, grid %u] max abs %.3g rel %.3g, bad %llu (unwritten %llu)\n", sh.name, M,
                       nc.threads, nc.ks, nc.grid, ed.max_abs, ed.max_rel, (ull)ed.bad, (ull)ed.unwritten);
            } else {
                run(gemv_old_bf16, old_cfg(sh.N, sh.K, 2), ya, am_a);
                run(gemv_run5_bf16, new_cfg(sh.N, sh.K, 2), yp, am_p);
                Err ea = check(bf_vec(ya), r, 1.0 / 128), ep = check(bf_vec(yp), r, 1.0 / 128);
                total_bad += ea.bad + ep.bad;
                u64 same = 0, same_p = 0;
                for (size_t i = 0; i < yd.size(); ++i) { same += yd[i] == ya[i]; same_p += yd[i] == yp[i]; }
                printf("%-26s M=%u (a) max rel %.3g, bad %llu | (p) max rel %.3g, bad %llu | (d) [%u thr, ks %u, grid %u] max abs %.3g "
                       "rel %.3g, bad %llu (unwritten %llu) | (d) == (a) bitwise %llu/%zu, (d) == (p) bitwise %llu/%zu\n",
                       sh.name, M, ea.max_rel, (ull)ea.bad, ep.max_rel, (ull)ep.bad, nc.threads, nc.ks, nc.grid, ed.max_abs,
                       ed.max_rel, (ull)ed.bad, (ull)ed.unwritten, (ull)same, yd.size(), (ull)same_p, yd.size());
            }
            const std::vector<float> yaf = bf_vec(ya);
            if (sh.amax)
                for (u32 m = 0; m < M; ++m) {
                    const u32 ia = 0xffffffffu - (u32)(am_a[m] & 0xffffffffu), id = 0xffffffffu - (u32)(am_d[m] & 0xffffffffu);
                    const bool ok = ia == first_max(yaf, m, sh.N) && id == first_max(ydf, m, sh.N);
                    printf("  argmax row %u: (a) %u, (d) %u, first largest of each's y: %s\n", m, ia, id, ok ? "ok" : "MISMATCH");
                    total_bad += !ok;
                }
            // Every swept configuration.
            u64 bad = 0, n = 0;
            double wr = 0;
            for (auto [t, ks] : sweep) {
                const Cfg c = sweep_cfg(sh.glu ? (const void*)gemv_glu_bf16 : (const void*)gemv_bf16, sh.N, M, sh.K, t, ks, sh.mode);
                std::vector<u16> ys;
                ull am[8];
                run(gemv_bf16, c, ys, am);
                const std::vector<float> ysf = bf_vec(ys);
                Err e = check(ysf, r, 1.0 / 128);
                bad += e.bad;
                n++;
                wr = std::max(wr, e.max_rel);
                if (sh.amax)
                    for (u32 m = 0; m < M; ++m) bad += 0xffffffffu - (u32)(am[m] & 0xffffffffu) != first_max(ysf, m, sh.N);
            }
            total_bad += bad;
            printf("%-26s M=%u (d) %llu swept configurations: max rel %.3g, failures %llu\n", sh.name, M, (ull)n, wr, (ull)bad);
        }
    }
    // f16 and f32 at the o shape, all three modes: (d) against (a) and the reference.
    printf("\n## correctness, f16 and f32 (o shape, N = K = 2048, M = 1 and 2)\n");
    {
        float *xf32, *Wf32, *nwf32, *rf32, *yf32;
        u16 *xf16, *Wf16, *nwf16, *rf16;
        const u32 N = 2048, K = 2048;
        CK(cudaMalloc(&xf32, 2 * 2 * K * 4)); CK(cudaMalloc(&Wf32, (size_t)N * K * 4)); CK(cudaMalloc(&nwf32, K * 4));
        CK(cudaMalloc(&rf32, 2 * N * 4)); CK(cudaMalloc(&yf32, 2 * N * 4));
        CK(cudaMalloc(&xf16, 2 * 2 * K * 2)); CK(cudaMalloc(&Wf16, (size_t)N * K * 2)); CK(cudaMalloc(&nwf16, K * 2));
        CK(cudaMalloc(&rf16, 2 * N * 2));
        fill(B.x, 2 * 2 * K, 900, -3.f, 3.f);
        for (int dt = 0; dt < 2; ++dt) {  // 0: f32, 1: f16
            if (dt == 0) {
                bf16_to_f32<<<1024, 256, 0, g_s>>>(B.x, xf32, 2 * 2 * K); bf16_to_f32<<<1024, 256, 0, g_s>>>(B.W, Wf32, (u64)N * K);
                bf16_to_f32<<<1024, 256, 0, g_s>>>(B.nw, nwf32, K); bf16_to_f32<<<1024, 256, 0, g_s>>>(B.res, rf32, 2 * N);
            } else {
                bf16_to_f16<<<1024, 256, 0, g_s>>>(B.x, xf16, 2 * 2 * K); bf16_to_f16<<<1024, 256, 0, g_s>>>(B.W, Wf16, (u64)N * K);
                bf16_to_f16<<<1024, 256, 0, g_s>>>(B.nw, nwf16, K); bf16_to_f16<<<1024, 256, 0, g_s>>>(B.res, rf16, 2 * N);
            }
            CK(cudaGetLastError());
            // Inputs as the kernels see them (f16 rounding of the bf16 data is exact here: |v| <= 3 and 8 mantissa bits).
            const std::vector<float> Wv = bf_vec(d2h(B.W, (size_t)N * K)), xv = bf_vec(d2h(B.x, 2 * 2 * K)),
                                     nwv = bf_vec(d2h(B.nw, K)), rv = bf_vec(d2h(B.res, 2 * N));
            for (u32 mode = 0; mode < 3; ++mode)
                for (u32 M : {1u, 2u}) {
                    const Shape sh{"o shape", N, K, mode, mode != 1, false, 1};
                    const double tol = dt == 0 ? 1e-4 : 1.0 / 256;
                    const std::vector<double> r = cpu_ref(sh, M, Wv, xv, nwv, rv, [dt](float v) { return dt == 0 ? v : f16_round(v); });
                    const Cfg co = old_cfg(N, K, dt == 0 ? 4 : 2), cn = new_cfg(N, K, dt == 0 ? 4 : 2);
                    std::vector<float> outs[2];
                    for (int which = 0; which < 2; ++which) {
                        const Cfg& c = which ? cn : co;
                        CK(cudaMemsetAsync(yf32, 0xff, 2 * N * 4, g_s));
                        if (dt == 0) {
                            auto f = which ? gemv_f32 : gemv_old_f32;
                            f<<<c.grid, c.threads, M * K * 4, g_s>>>(xf32, Wf32, M, N, K, mode, mode == 1 ? nwf32 : nullptr, 1e-5f,
                                                                    sh.residual ? rf32 : nullptr, yf32, c.ks, nullptr);
                            CK(cudaGetLastError());
                            outs[which] = d2h(yf32, (size_t)M * N);
                        } else {
                            auto f = which ? gemv_f16 : gemv_old_f16;
                            u16* y16 = reinterpret_cast<u16*>(yf32);
                            f<<<c.grid, c.threads, M * K * 2, g_s>>>(xf16, Wf16, M, N, K, mode, mode == 1 ? nwf16 : nullptr, 1e-5f,
                                                                    sh.residual ? rf16 : nullptr, y16, c.ks, nullptr);
                            CK(cudaGetLastError());
                            const std::vector<u16> o = d2h(y16, (size_t)M * N);
                            outs[which].resize(o.size());
                            for (size_t i = 0; i < o.size(); ++i) outs[which][i] = h2f(o[i]);
                        }
                    }
                    Err ea = check(outs[0], r, tol), ed = check(outs[1], r, tol);
                    double dmax = 0;
                    u64 same = 0;
                    for (size_t i = 0; i < outs[0].size(); ++i) {
                        dmax = std::max(dmax, (double)fabs(outs[0][i] - outs[1][i]));
                        same += outs[0][i] == outs[1][i];
                    }
                    total_bad += ea.bad + ed.bad;
                    printf("%s mode %u M=%u: (a) max rel %.3g bad %llu | (d) [%u thr, ks %u] max rel %.3g bad %llu | equal %llu/%zu, max |d-a| %.3g\n",
                           dt == 0 ? "f32" : "f16", mode, M, ea.max_rel, (ull)ea.bad, cn.threads, cn.ks, ed.max_rel, (ull)ed.bad,
                           (ull)same, outs[0].size(), dmax);
                }
        }
    }
    printf("[%.1f s] correctness: %s (%llu failures)\n", wall() - g_t0, total_bad ? "FAILED" : "all passed", (ull)total_bad);
    if (check_only) return total_bad ? 1 : 0;
    fill(B.x, 8 * 2 * 8192, 7, -1.f, 1.f);
    CK(cudaStreamSynchronize(g_s));

    // ----------------------------- timing ----------------------------------------------
    printf("\n## timing (us per node: median of 7 x 30 replays of a 16-node graph; [min, max] of the 7)\n");
    struct Row { double a = 0, a2 = 0, p = 0, p2 = 0, b = 0, c1 = 0, c8 = 0, d = 0, d2 = 0, dm2 = 0, am2 = 0, pm2 = 0,
                 diag[4] = {0, 0, 0, 0}, l1w = 0, staged = 0; std::string bname, sweepbest, sweepbest2; double sweepus = 1e30, sweepus2 = 1e30; };
    std::vector<Row> rows(NS);
    std::vector<std::pair<const FloorVariant*, u32>> fbest(NS, {nullptr, 0});
    auto wel = [](const Shape& sh) { return (u64)(sh.glu ? 2 : 1) * sh.N * sh.K; };  // weight elements
    for (int si = 0; si < NS; ++si) {
        const Shape& sh = shapes[si];
        Row& R = rows[si];
        const u64 el = wel(sh);
        auto Wi = [&](int i) { return B.W + (u64)i * el; };
        ull* am = sh.amax ? B.amax : nullptr;
        if (sh.base == si) {
            double bb = 1e30;
            for (auto& fv : floor_variants) {
                const u64 n16 = el * 2 / 16;
                const u32 oneshot = (u32)((n16 + (u64)fv.nt * fv.l - 1) / ((u64)fv.nt * fv.l));
                for (u32 grid : {oneshot, (u32)g_sms, 2u * g_sms, 4u * g_sms, 8u * g_sms}) {
                    if (grid > oneshot) continue;
                    Timing t = time_graph(sh.nodes, [&](int i) {
                        fv.f<<<grid, fv.nt, 0, g_s>>>(reinterpret_cast<const uint4*>(Wi(i)), n16, B.fout);
                    });
                    if (verbose) printf("sweep %s (b) %s grid %u: %.2f us\n", sh.name, fv.name, grid, t.med);
                    if (t.med < bb) { bb = t.med; fbest[si] = {&fv, grid}; R.bname = std::string(fv.name) + " grid " + std::to_string(grid); }
                }
            }
            R.b = bb;
            R.c1 = time_graph(sh.nodes, [&](int i) { launch_cublas(h, sh, 1, Wi(i), B.y); }).med;
            R.c8 = time_graph(sh.nodes, [&](int i) { launch_cublas(h, sh, 8, Wi(i), B.y); }).med;
        } else {
            const Row& S = rows[sh.base];
            R.b = S.b; R.c1 = S.c1; R.c8 = S.c8; R.bname = S.bname;
        }
        const Cfg co = old_cfg(sh.N, sh.K, 2), cn = new_cfg(sh.N, sh.K, 2, sh.glu), cp = new_cfg(sh.N, sh.K, 2);
        Timing td = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_bf16, cn, sh, 1, Wi(i), B.y, am); });
        R.d = td.med;
        R.dm2 = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_bf16, cn, sh, 2, Wi(i), B.y, am); }).med;
        if (!sh.glu) {
            R.a = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_old_bf16, co, sh, 1, Wi(i), B.y, am); }).med;
            R.p = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_run5_bf16, cp, sh, 1, Wi(i), B.y, am); }).med;
            R.am2 = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_old_bf16, co, sh, 2, Wi(i), B.y, am); }).med;
            R.pm2 = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_run5_bf16, cp, sh, 2, Wi(i), B.y, am); }).med;
        }
        printf("%s: (a) %.2f  (p) %.2f  (d) %.2f [%.2f, %.2f]  (b) %.2f  (c) %.2f / %.2f (n=1/8)\n", sh.name, R.a, R.p, td.med, td.lo,
               td.hi, R.b, R.c1, R.c8);
        const GemvBf16 diag[4] = {gemv_bf16, gemv_diag_bf16<1>, gemv_diag_bf16<2>, gemv_diag_bf16<3>};
        const GemvBf16 diag_glu[4] = {gemv_bf16, gemv_glu_diag_bf16<1>, gemv_glu_diag_bf16<2>, gemv_glu_diag_bf16<3>};
        for (int k = 1; k < 4; ++k)
            R.diag[k] = time_graph(sh.nodes, [&](int i) { launch_gemv(sh.glu ? diag_glu[k] : diag[k], cn, sh, 1, Wi(i), B.y, am); }).med;
        // The weights loaded through L1 (DIAG 4), and f(x) staged in shared memory (DIAG 8; modes 0 and 1).
        R.l1w = time_graph(sh.nodes, [&](int i) { launch_gemv(sh.glu ? gemv_glu_diag_bf16<4> : gemv_diag_bf16<4>, cn, sh, 1, Wi(i), B.y, am); }).med;
        if (sh.mode == 0 && !sh.glu)
            R.staged = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_diag_bf16<8>, cn, sh, 1, Wi(i), B.y, am); }).med;
        for (u32 M : {1u, 2u})
            for (auto [t, ks] : sweep) {
                const Cfg c = sweep_cfg(sh.glu ? (const void*)gemv_glu_bf16 : (const void*)gemv_bf16, sh.N, M, sh.K, t, ks, sh.mode);
                const double us = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_bf16, c, sh, M, Wi(i), B.y, am); }).med;
                if (verbose) printf("sweep %s (d) M=%u %u threads ks %u grid %u: %.2f us\n", sh.name, M, t, ks, c.grid, us);
                double& bu = M == 1 ? R.sweepus : R.sweepus2;
                std::string& bn = M == 1 ? R.sweepbest : R.sweepbest2;
                if (us < bu) { bu = us; bn = std::to_string(t) + " thr, ks " + std::to_string(ks) + ", grid " + std::to_string(c.grid); }
            }
        printf("[%.1f s] %s done\n", wall() - g_t0, sh.name);
    }
    // Second measurement of (a), (p), (d), after everything else: the spread between the two
    // is the noise to judge differences by.
    for (int si = 0; si < NS; ++si) {
        const Shape& sh = shapes[si];
        const u64 el = wel(sh);
        auto Wi = [&](int i) { return B.W + (u64)i * el; };
        ull* am = sh.amax ? B.amax : nullptr;
        const Cfg co = old_cfg(sh.N, sh.K, 2), cn = new_cfg(sh.N, sh.K, 2, sh.glu), cp = new_cfg(sh.N, sh.K, 2);
        if (!sh.glu) {
            rows[si].a2 = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_old_bf16, co, sh, 1, Wi(i), B.y, am); }).med;
            rows[si].p2 = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_run5_bf16, cp, sh, 1, Wi(i), B.y, am); }).med;
        }
        rows[si].d2 = time_graph(sh.nodes, [&](int i) { launch_gemv(gemv_bf16, cn, sh, 1, Wi(i), B.y, am); }).med;
    }
    printf("\n## summary, batch 1 (us per node, TB/s = weight bytes / time; two measurements of (a), (p) and (d))\n");
    printf("| shape | MB | (a) old GEMV | (p) run-5 GEMV | (b) floor | (c) cuBLAS | (d) GEMV now | d/b | p/d | (d) config | best swept (d) | (b) config |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int si = 0; si < NS; ++si) {
        const Shape& sh = shapes[si];
        const Row& R = rows[si];
        const double mb = (double)wel(sh) * 2 / 1e6;
        const Cfg cn = new_cfg(sh.N, sh.K, 2, sh.glu);
        printf("| %s | %.1f | %.2f / %.2f | %.2f / %.2f | %.2f (%.2f) | %.2f (%.2f) | %.2f / %.2f (%.2f) | %.3f | %.3f | %u thr, ks %u, grid %u | %.2f (%s) | %s |\n",
               sh.name, mb, R.a, R.a2, R.p, R.p2, R.b, mb / R.b, R.c1, mb / R.c1, R.d, R.d2, mb / R.d, R.d / R.b, R.p / R.d, cn.threads,
               cn.ks, cn.grid, R.sweepus, R.sweepbest.c_str(), R.bname.c_str());
    }
    printf("\n## where (d)'s time over (b) goes (us per node; same launch as (d))\n");
    printf("| shape | (b) floor | (d) access pattern only (no staging, XOR) | + arithmetic (no staging) | + staging (XOR) | (d) |\n|---|---|---|---|---|---|\n");
    for (int si = 0; si < NS; ++si)
        printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f |\n", shapes[si].name, rows[si].b, rows[si].diag[3], rows[si].diag[1], rows[si].diag[2], rows[si].d);
    printf("\n## variants of (d) (us per node, batch 1)\n| shape | (d) | weights through L1 | x staged in shared memory (mode 0) |\n|---|---|---|---|\n");
    for (int si = 0; si < NS; ++si) printf("| %s | %.2f | %.2f | %.2f |\n", shapes[si].name, rows[si].d, rows[si].l1w, rows[si].staged);
    printf("\n## batch 2 (the GEMV path) and batch 8 (cuBLAS n = 8; the step uses cuBLAS above 2 rows), us per node\n");
    printf("| shape | (a) M=2 | (p) M=2 | (d) M=2 | best swept (d) M=2 | (b) floor | (c) cuBLAS n=8 |\n|---|---|---|---|---|---|---|\n");
    for (int si = 0; si < NS; ++si)
        printf("| %s | %.2f | %.2f | %.2f | %.2f (%s) | %.2f | %.2f |\n", shapes[si].name, rows[si].am2, rows[si].pm2, rows[si].dm2,
               rows[si].sweepus2, rows[si].sweepbest2.c_str(), rows[si].b, rows[si].c8);

    // ----------------------------- the layer sequence ---------------------------------
    printf("\n## 16 layers x (qkv, o, down, gate/up) in one graph, batch 1 and 2\n");
    {
        const u64 off[4] = {0, 3072ull * 2048, 3072ull * 2048 + 2048ull * 2048, 3072ull * 2048 + 2048ull * 2048 + 2048ull * 8192};
        auto Wl = [&](int l, int p) { return B.W + (u64)l * layer_el + off[p]; };
        const double layer_mb = layer_el * 2 / 1e6;
        // The step's MLP before (gate/up, then down with the SwiGLU prologue) and now (gate/up
        // with SwiGLU fused in, then down on its output): shapes 0-3, and 0, 1, 8, 7.
        const int before[4] = {0, 1, 2, 3}, now[4] = {0, 1, 8, 7};
        for (u32 M : {1u, 2u}) {
            auto seq = [&](const std::function<void(int)>& f) { return time_graph(64, f).med * 4; };  // us per layer
            auto gemv_seq = [&](GemvBf16 f, const int* which, bool run5_cfg) {
                return seq([&](int i) {
                    const Shape& sh = shapes[which[i % 4]];
                    const Cfg c = f == gemv_old_bf16 ? old_cfg(sh.N, sh.K, 2) : new_cfg(sh.N, sh.K, 2, sh.glu && !run5_cfg);
                    launch_gemv(f, c, sh, M, Wl(i / 4, i % 4), B.y, nullptr);
                });
            };
            const double ta = gemv_seq(gemv_old_bf16, before, true);
            const double tp = gemv_seq(gemv_run5_bf16, before, true);
            const double td0 = gemv_seq(gemv_bf16, before, false);
            const double td = gemv_seq(gemv_bf16, now, false);
            const double tp2 = gemv_seq(gemv_run5_bf16, before, true);
            const double td2 = gemv_seq(gemv_bf16, now, false);
            const double tc = seq([&](int i) { launch_cublas(h, shapes[i % 4], M, Wl(i / 4, i % 4), B.y); });
            const double tf = seq([&](int i) {
                const Shape& sh = shapes[i % 4];
                auto fb = fbest[i % 4];
                fb.first->f<<<fb.second, fb.first->nt, 0, g_s>>>(reinterpret_cast<const uint4*>(Wl(i / 4, i % 4)), (u64)sh.N * sh.K * 2 / 16, B.fout);
            });
            printf("\nM = %u\n| path | us/layer | TB/s | x16 layers (ms) |\n|---|---|---|---|\n", M);
            printf("| (a) old GEMV | %.2f | %.2f | %.3f |\n", ta, layer_mb / ta, ta * 16 / 1e3);
            printf("| (p) run-5 GEMV (twice) | %.2f / %.2f | %.2f | %.3f |\n", tp, tp2, layer_mb / tp, tp * 16 / 1e3);
            printf("| (d) GEMV now, the run-5 MLP (down with the SwiGLU prologue) | %.2f | %.2f | %.3f |\n", td0, layer_mb / td0, td0 * 16 / 1e3);
            printf("| (d) GEMV now, GLU gate/up + plain down (twice) | %.2f / %.2f | %.2f | %.3f |\n", td, td2, layer_mb / td, td * 16 / 1e3);
            printf("| (c) cuBLAS, products only | %.2f | %.2f | %.3f |\n", tc, layer_mb / tc, tc * 16 / 1e3);
            printf("| (b) floor | %.2f | %.2f | %.3f |\n", tf, layer_mb / tf, tf * 16 / 1e3);
        }
    }
    CK(cudaDeviceSynchronize());
    printf("done\n");
    return 0;
}
