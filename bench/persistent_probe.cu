// Probe for issue #32, target 3: how fast can the batch-1 step's projections run as one
// persistent kernel, with a grid-wide barrier where the graph has a node boundary? Measures
// the premise of a persistent decoder kernel before building one.
//
// The chain: 16 layers x 4 projections at the Llama-3.2-1B shapes (bf16 N x K: QKV 3072 x
// 2048, O 2048 x 2048, gate/up 16384 x 2048, down 2048 x 8192; 1.95 GB, each layer its own
// weights), each reading the previous one's output (batch 1). No norm, SwiGLU or residual:
// the traffic and the dependencies of the step's products, not its arithmetic.
//
// One product (`product`): blocks of 256 threads; `ks` warps share a row (each a slice of K,
// their sums meeting in shared memory), 8 / ks rows a block at a time, rows grid-strided; x
// staged in shared memory (read through L2: another block wrote it); 8 16-byte weight loads
// a lane in flight. ks per product: the smallest of 1, 2, 4, 8 that gives every warp of the
// grid at least 2 rows' slices.
//
// Paths, each timed as a CUDA graph (3 + 7 x 30 replays, median), in µs a layer:
//   (d) the step's own GEMVs (kernels/decode.cu, gpu.rs's launch; with their norm and residual
//       prologue/epilogue): 64 nodes, the baseline;
//   (n) `product` as 64 nodes, grid = the persistent grid;
//   (p) one persistent kernel: the 64 products with a grid barrier after each, variants:
//       p0  nothing before the barrier;
//       p1  the block's first row of the next product: its first loads issued into registers
//           before the barrier (weights do not depend on it), used after it;
//       p2  the block's rows of the next product's first `waves` waves prefetched into L2
//           before the barrier;
//       p3  p1 and p2;
//   (b) the barriers alone (64 of them, no product);
// at 1, 2 and 3 blocks a multiprocessor (co-resident: a cooperative launch).
// (n) and every (p) give the same outputs, bit for bit (the same code, the same sums).
//
// Build and run (the GPU machine):
//   nvcc -O3 -std=c++17 -gencode arch=compute_80,code=sm_90 -o persistent_probe bench/persistent_probe.cu -lcublas
//   ./persistent_probe
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <cmath>
#include <vector>
#include <algorithm>
#include <functional>
#include <cuda_runtime.h>
#include <cublas_v2.h>
#include <cooperative_groups.h>

#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static const u32 H = 2048, QKV = 3072, I = 8192, L = 16, NST = 4 * L;
struct Stage { const u16* W; u32 n, k, ks; const u16* x; u16* y; };
__constant__ Stage c_st[NST];

#define PU 8  // 16-byte loads a lane in flight

static __device__ __forceinline__ uint4 ldw(const u16* p) {
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
    return v;
}
static __device__ __forceinline__ float dot8(const uint4& w, const u16* xs) {
    const uint4 xv = *reinterpret_cast<const uint4*>(xs);
    float a[8], b[8];
    Pack<BF16>::unpack(w, a);
    Pack<BF16>::unpack(xv, b);
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j] * b[j];
    return s;
}

// Sense-reversing grid barrier: the last block to arrive resets the count and bumps the
// generation; the others spin on it.
static __device__ __forceinline__ void grid_barrier(u32* count, u32* gen) {
    __syncthreads();
    if (threadIdx.x == 0) {
        const u32 g = *(volatile u32*)gen;
        __threadfence();
        if (atomicAdd(count, 1) == gridDim.x - 1) {
            *(volatile u32*)count = 0;
            __threadfence();
            atomicAdd(gen, 1);
        } else {
            while (*(volatile u32*)gen == g) {}
        }
        __threadfence();
    }
    __syncthreads();
}

// The rows of stage S a warp takes first: its slice's first PU loads.
struct Pre { uint4 w[PU]; bool on; };
static __device__ __forceinline__ void preload(const Stage& S, Pre& pre) {
    const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const u32 rows_blk = 8 / S.ks, slice = warp % S.ks, row = blockIdx.x * rows_blk + warp / S.ks;
    const u32 len = S.k / S.ks, c0 = slice * len;
    pre.on = row < S.n;
    if (!pre.on) return;
#pragma unroll
    for (int u = 0; u < PU; ++u) {
        const u32 c = c0 + (u * 32 + lane) * 8;
        if (c < c0 + len) pre.w[u] = ldw(S.W + (u64)row * S.k + c);
    }
}
// L2 prefetch of the block's rows of stage S in its first `waves` waves of groups.
static __device__ __forceinline__ void prefetch_rows(const Stage& S, u32 waves) {
    const u32 rows_blk = 8 / S.ks, groups = (S.n + rows_blk - 1) / rows_blk;
    const u32 row_bytes = S.k * 2, lines = row_bytes / 128;
    for (u32 w = 0; w < waves; ++w) {
        const u32 grp = blockIdx.x + w * gridDim.x;
        if (grp >= groups) break;
        for (u32 i = threadIdx.x; i < rows_blk * lines; i += blockDim.x) {
            const u32 row = grp * rows_blk + i / lines;
            if (row < S.n)
                asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"((const char*)(S.W + (u64)row * S.k) + (i % lines) * 128));
        }
    }
}

static __device__ void product(const Stage& S, u16* xs, float* part, Pre* pre) {
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    for (u32 i = tid * 8; i < S.k; i += blockDim.x * 8)
        *reinterpret_cast<uint4*>(xs + i) = __ldcg(reinterpret_cast<const uint4*>(S.x + i));
    __syncthreads();
    const u32 rows_blk = 8 / S.ks, slice = warp % S.ks, row_in = warp / S.ks;
    const u32 len = S.k / S.ks, c0 = slice * len, groups = (S.n + rows_blk - 1) / rows_blk;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 row = grp * rows_blk + row_in;
        float acc = 0.f;
        if (row < S.n) {
            const u16* wr = S.W + (u64)row * S.k;
            for (u32 base = c0; base < c0 + len; base += PU * 32 * 8) {
                uint4 w[PU];
                const bool first = pre && pre->on && grp == blockIdx.x && base == c0;
#pragma unroll
                for (int u = 0; u < PU; ++u) {
                    const u32 c = base + (u * 32 + lane) * 8;
                    if (c < c0 + len) w[u] = first ? pre->w[u] : ldw(wr + c);
                }
#pragma unroll
                for (int u = 0; u < PU; ++u) {
                    const u32 c = base + (u * 32 + lane) * 8;
                    if (c < c0 + len) acc += dot8(w[u], xs + c);
                }
            }
        }
        acc = warp_sum(acc);
        if (S.ks == 1) {
            if (lane == 0 && row < S.n) BF16::st(S.y, row, acc);
        } else {
            if (lane == 0) part[warp] = acc;
            __syncthreads();
            if (tid < rows_blk) {
                float s = 0.f;
                for (u32 j = 0; j < S.ks; ++j) s += part[tid * S.ks + j];
                const u32 r = grp * rows_blk + tid;
                if (r < S.n) BF16::st(S.y, r, s);
            }
            __syncthreads();
        }
    }
}

// The same barrier with acquire/release operations and a back-off while spinning.
static __device__ __forceinline__ void grid_barrier_ar(u32* count, u32* gen) {
    __syncthreads();
    if (threadIdx.x == 0) {
        u32 g;
        asm volatile("ld.relaxed.gpu.global.u32 %0, [%1];" : "=r"(g) : "l"(gen) : "memory");
        u32 old;
        asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;" : "=r"(old) : "l"(count) : "memory");
        if (old == gridDim.x - 1) {
            asm volatile("st.relaxed.gpu.global.u32 [%0], 0;" ::"l"(count) : "memory");
            asm volatile("red.release.gpu.global.add.u32 [%0], 1;" ::"l"(gen) : "memory");
        } else {
            u32 now;
            do {
                asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(now) : "l"(gen) : "memory");
            } while (now == g);
        }
    }
    __syncthreads();
}

// Stages [s0, s1); MODE bit 0: registers preloaded before each barrier, bit 1: L2 prefetch;
// bit 2: no products (the barriers alone); bit 3: no barrier (one stage a launch); bit 4:
// cooperative groups' grid sync as the barrier; bit 5: the acquire/release barrier.
template <int MODE>
__global__ void __launch_bounds__(256) persist(u32 s0, u32 s1, u32 waves, u32* count, u32* gen) {
    extern __shared__ uint4 dyn[];
    u16* xs = reinterpret_cast<u16*>(dyn);
    __shared__ float part[8];
    Pre pre;
    pre.on = false;
    for (u32 s = s0; s < s1; ++s) {
        const Stage S = c_st[s];
        if (!(MODE & 4)) product(S, xs, part, (MODE & 1) ? &pre : nullptr);
        if (MODE & 8) break;
        if (s + 1 < s1) {
            if (MODE & 1) preload(c_st[s + 1], pre);
            if (MODE & 2) prefetch_rows(c_st[s + 1], waves);
            if (MODE & 16) cooperative_groups::this_grid().sync();
            else if (MODE & 32) grid_barrier_ar(count, gen);
            else grid_barrier(count, gen);
        }
    }
}


// (s): the persistent chain as one stream of weights. Every warp of the grid takes an equal
// share of each product's weights (whole 512-byte pieces, in order, so a share spans a few
// rows); each lane copies its 16 bytes of a piece into a ring of D slots in shared memory
// with cp.async, D pieces ahead of the piece it multiplies. The copies run on across product
// boundaries: while a block waits at the grid barrier (cooperative groups' grid sync) the
// next product's first D pieces are already on their way (weights do not depend on the
// previous product). A row's partial sums meet in f32 accumulators (atomicAdd: one per row a
// warp's share touches), zeroed before the kernel; the next product stages its x from them,
// rounded to bf16 as the products round their outputs.
__constant__ Stage c_ss[NST];
static __device__ __forceinline__ void cp16(void* smem, const void* g) {
    const u32 sa = (u32)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(g) : "memory");
}
// (s), (t): product s's x into shared memory: x0 for the first, else the previous product's
// f32 accumulators (read through L2: other blocks wrote them), rounded to bf16.
static __device__ __forceinline__ void stage_x(u32 k, u32 s, const float* acc, const u16* x0, u16* xs) {
    const float* prev = acc + (u64)(s == 0 ? 0 : s - 1) * 2 * I;
    for (u32 i = threadIdx.x * 8; i < k; i += blockDim.x * 8) {
        if (s == 0) {
            *reinterpret_cast<uint4*>(xs + i) = *reinterpret_cast<const uint4*>(x0 + i);
        } else {
            float v[8];
#pragma unroll
            for (int j = 0; j < 8; ++j) v[j] = __ldcg(prev + i + j);
            *reinterpret_cast<uint4*>(xs + i) = pack16<BF16>(v);
        }
    }
    __syncthreads();
}
template <int D, bool SYNC = true>
__global__ void __launch_bounds__(256) stream_chain(u32 nst, float* acc, const u16* x0) {
    extern __shared__ uint4 sm[];
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    uint4* ring = sm + warp * D * 32;
    u16* xs = reinterpret_cast<u16*>(sm + 8 * D * 32);
    const u32 W = gridDim.x * 8, gw = blockIdx.x * 8 + warp;
    auto range = [&](u32 s, u32& a, u32& b) {
        const u64 C = (u64)c_ss[s].n * c_ss[s].k / 256;
        a = (u32)(C * gw / W);
        b = (u32)(C * (gw + 1) / W);
    };
    // The producer: `left` more pieces of stage ps from `src` (ps == nst: none left).
    u32 ps = 0, pi = 0, left;
    const u16* src;
    {
        u32 a, b;
        range(0, a, b);
        src = c_ss[0].W + (u64)a * 256 + lane * 8;
        left = b - a;
    }
    auto issue = [&]() {
        while (ps < nst && left == 0) {
            ++ps;
            if (ps < nst) {
                u32 a, b;
                range(ps, a, b);
                src = c_ss[ps].W + (u64)a * 256 + lane * 8;
                left = b - a;
            }
        }
        if (ps < nst) {
            cp16(ring + (pi % D) * 32 + lane, src);
            src += 256;
            --left;
        }
        ++pi;
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    for (int i = 0; i < D; ++i) issue();
    u32 ci = 0;
    auto grid = cooperative_groups::this_grid();
    for (u32 s = 0; s < nst; ++s) {
        const Stage S = c_ss[s];
        stage_x(S.k, s, acc, x0, xs);
        u32 a, b;
        range(s, a, b);
        float* out = acc + (u64)s * 2 * I;
        // Row and column of the piece, advanced without a division.
        const u32 ppr = S.k / 256;  // pieces a row
        u32 row = a / ppr, col = (a - row * ppr) * 256 + lane * 8;
        float part = 0.f;
        for (u32 c = a; c < b; ++c) {
            asm volatile("cp.async.wait_group %0;" ::"n"(D - 1) : "memory");
            const uint4 w = ring[(ci % D) * 32 + lane];
            ++ci;
            issue();
            if (col >= S.k) {
                const float v = warp_sum(part);
                if (lane == 0) atomicAdd(out + row, v);
                part = 0.f;
                ++row;
                col -= S.k;
            }
            part += dot8(w, xs + col);
            col += 256;
        }
        if (a < b) {
            const float v = warp_sum(part);
            if (lane == 0) atomicAdd(out + row, v);
        }
        if (SYNC && s + 1 < nst) grid.sync();
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// (t): the same stream with the pieces handed out as the warps ask for them: a warp takes
// the next G pieces of the product its copies have reached from that product's counter
// (atomicAdd), so warps that run fast take more, and all of them reach each barrier at about
// the same time. A slot's tag (in shared memory, each lane its own copy) says which product
// and piece it holds: the multiplying side follows the tags, and a tag of the next product
// tells a warp that it is done with this one.
template <int D, int G>
__global__ void __launch_bounds__(256) dyn_chain(u32 nst, float* acc, u32* cnt, const u16* x0) {
    extern __shared__ uint4 sm[];
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    uint4* ring = sm + warp * D * 32;
    u32* tags = reinterpret_cast<u32*>(sm + 8 * D * 32) + warp * D * 32;
    u16* xs = reinterpret_cast<u16*>(sm + 8 * D * 32 + 8 * D * 32 / 4);
    u32 ps = 0, cur = 0, end = 0, pi = 0;
    auto issue = [&]() {
        while (ps < nst && cur == end) {
            const u32 C = (u32)((u64)c_ss[ps].n * c_ss[ps].k / 256);
            u32 g = 0;
            if (lane == 0) g = atomicAdd(cnt + ps, G);
            g = __shfl_sync(0xffffffffu, g, 0);
            if (g < C) {
                cur = g;
                end = min(g + G, C);
            } else {
                ++ps;
            }
        }
        const u32 slot = pi % D;
        if (ps < nst) {
            cp16(ring + slot * 32 + lane, c_ss[ps].W + (u64)cur * 256 + lane * 8);
            tags[slot * 32 + lane] = (ps << 20) | cur;
            ++cur;
        } else {
            tags[slot * 32 + lane] = nst << 20;
        }
        ++pi;
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    for (int i = 0; i < D; ++i) issue();
    u32 ci = 0;
    auto grid = cooperative_groups::this_grid();
    for (u32 s = 0; s < nst; ++s) {
        const Stage S = c_ss[s];
        stage_x(S.k, s, acc, x0, xs);
        float* out = acc + (u64)s * 2 * I;
        const u32 ppr = S.k / 256;
        u32 row = ~0u;
        float part = 0.f;
        while (true) {
            const u32 slot = ci % D, tag = tags[slot * 32 + lane];
            if ((tag >> 20) != s) break;
            asm volatile("cp.async.wait_group %0;" ::"n"(D - 1) : "memory");
            const uint4 w = ring[slot * 32 + lane];
            ++ci;
            issue();
            const u32 piece = tag & 0xfffffu, r = piece / ppr, col = (piece - r * ppr) * 256 + lane * 8;
            if (r != row) {
                if (row != ~0u) {
                    const float v = warp_sum(part);
                    if (lane == 0) atomicAdd(out + row, v);
                }
                part = 0.f;
                row = r;
            }
            part += dot8(w, xs + col);
        }
        if (row != ~0u) {
            const float v = warp_sum(part);
            if (lane == 0) atomicAdd(out + row, v);
        }
        if (s + 1 < nst) grid.sync();
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
}


template <int MODE>
static void launch_persist(u32 grid, u32 s0, u32 s1, u32 waves, u32* count, u32* gen, bool coop) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(grid);
    cfg.blockDim = dim3(256);
    cfg.dynamicSmemBytes = I * 2;
    cfg.stream = g_s;
    cudaLaunchAttribute a[1];
    a[0].id = cudaLaunchAttributeCooperative;
    a[0].val.cooperative = 1;
    cfg.attrs = coop ? a : nullptr;
    cfg.numAttrs = coop ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, persist<MODE>, s0, s1, waves, count, gen));
}

int main() {
    probe_device();
    u64 seed = 7;
    const Chain ch = chain_setup(L, H, QKV, I, seed);
    const std::vector<LayerWeights>& W = ch.W;
    u16 *a0 = ch.a0, *a1 = ch.a1, *nw = ch.nw, *g = ch.g;
    u32 *count, *gen;
    CK(cudaMalloc(&count, 4)); CK(cudaMalloc(&gen, 4));
    CK(cudaMemset(count, 0, 4)); CK(cudaMemset(gen, 0, 4));
    int occ = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, persist<3>, 256, I * 2));
    printf("persist: up to %d resident blocks a multiprocessor\n", occ);
    // Is a cooperative launch captured into a graph? (If not, the launches below are plain:
    // every block is resident anyway, the grid being within the occupancy and the GPU idle.)
    bool coop = true;
    {
        cudaGraph_t gr;
        CK(cudaStreamBeginCapture(g_s, cudaStreamCaptureModeGlobal));
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(g_sms); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = I * 2; cfg.stream = g_s;
        cudaLaunchAttribute a[1];
        a[0].id = cudaLaunchAttributeCooperative; a[0].val.cooperative = 1;
        cfg.attrs = a; cfg.numAttrs = 1;
        const cudaError_t e1 = cudaLaunchKernelEx(&cfg, persist<4>, 0u, 1u, 0u, count, gen);
        const cudaError_t e2 = cudaStreamEndCapture(g_s, &gr);
        if (e1 != cudaSuccess || e2 != cudaSuccess) {
            printf("cooperative launch not captured (%s / %s): plain launches\n", cudaGetErrorString(e1), cudaGetErrorString(e2));
            coop = false;
            cudaGetLastError();
        } else {
            CK(cudaGraphDestroy(gr));
            printf("cooperative launch captured into a graph\n");
        }
    }

    // (d): the step's GEMVs, 64 nodes (QKV with RMSNorm, O + residual, gate/up GLU, down + residual).
    auto step_gemvs = [&](int l) {
        const StepLaunch cq = gemv_step_launch(QKV, H, false), co = gemv_step_launch(H, H, false),
                     cg = gemv_step_launch(I, H, true), cd = gemv_step_launch(H, I, false);
        gemv_bf16<<<cq.grid, cq.threads, H * 2, g_s>>>(a0, W[l].qkv, 1, QKV, H, 1, nw, 1e-5f, nullptr, a1, cq.ks, nullptr);
        gemv_bf16<<<co.grid, co.threads, H * 2, g_s>>>(a1, W[l].o, 1, H, H, 0, nullptr, 1e-5f, a0, a0 + I, co.ks, nullptr);
        gemv_glu_bf16<<<cg.grid, cg.threads, H * 2, g_s>>>(a0 + I, W[l].gu, 1, I, H, 1, nw, 1e-5f, g, cg.ks);
        gemv_bf16<<<cd.grid, cd.threads, I * 2, g_s>>>(g, W[l].d, 1, H, I, 0, nullptr, 1e-5f, a0 + I, a0, cd.ks, nullptr);
    };

    const std::vector<u16> x0 = chain_input(H);
    printf("\n| blocks/SM | grid | ks (qkv, o, gate/up, down) | (d) step GEMVs, 64 nodes | (n) product, 64 nodes | p0 | p1 regs | p2 L2 1 wave | p2 L2 2 waves | p3 | (b) barriers alone | outputs |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    struct BRow { int bps; double v[7]; };
    std::vector<BRow> barrier_rows;
    for (int bps = 1; bps <= std::min(occ, 3); ++bps) {
        const u32 grid = (u32)(bps * g_sms), warps = grid * 8;
        auto ks_for = [&](u32 n) { u32 ks = 1; while (ks < 8 && n * ks < 2 * warps) ks *= 2; return ks; };
        std::vector<Stage> st;
        for (u32 l = 0; l < L; ++l) {
            st.push_back({W[l].qkv, QKV, H, ks_for(QKV), a0, a1});
            st.push_back({W[l].o, H, H, ks_for(H), a1, a0});
            st.push_back({W[l].gu, 2 * I, H, ks_for(2 * I), a0, a1});
            st.push_back({W[l].d, H, I, ks_for(H), a1, a0});
        }
        CK(cudaMemcpyToSymbol(c_st, st.data(), sizeof(Stage) * NST));
        // Correctness: (n) and every (p) give the same final x, bit for bit.
        auto run_out = [&](const std::function<void()>& f) {
            CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
            f();
            CK(cudaGetLastError());
            return d2h(a0, H);
        };
        auto nodes = [&](int) { for (u32 s = 0; s < NST; ++s) launch_persist<8>(grid, s, s + 1, 0, count, gen, false); };
        const auto ref = run_out([&] { nodes(0); });
        bool same = true, finite = true;
        for (u16 v : ref) finite = finite && std::isfinite(bf2f(v));
        same = same && run_out([&] { launch_persist<0>(grid, 0, NST, 0, count, gen, coop); }) == ref;
        same = same && run_out([&] { launch_persist<1>(grid, 0, NST, 0, count, gen, coop); }) == ref;
        same = same && run_out([&] { launch_persist<2>(grid, 0, NST, 1, count, gen, coop); }) == ref;
        same = same && run_out([&] { launch_persist<3>(grid, 0, NST, 1, count, gen, coop); }) == ref;

        const double d = time_graph(L, step_gemvs).med;
        const double n = time_graph(1, nodes).med / L;
        const double p0 = time_graph(1, [&](int) { launch_persist<0>(grid, 0, NST, 0, count, gen, coop); }).med / L;
        const double p1 = time_graph(1, [&](int) { launch_persist<1>(grid, 0, NST, 0, count, gen, coop); }).med / L;
        const double p2 = time_graph(1, [&](int) { launch_persist<2>(grid, 0, NST, 1, count, gen, coop); }).med / L;
        const double p2b = time_graph(1, [&](int) { launch_persist<2>(grid, 0, NST, 2, count, gen, coop); }).med / L;
        const double p3 = time_graph(1, [&](int) { launch_persist<3>(grid, 0, NST, 1, count, gen, coop); }).med / L;
        const double b = time_graph(1, [&](int) { launch_persist<4>(grid, 0, NST, 0, count, gen, coop); }).med / L;
        const double bcg = coop ? time_graph(1, [&](int) { launch_persist<4 | 16>(grid, 0, NST, 0, count, gen, coop); }).med / L : NAN;
        const double bar = time_graph(1, [&](int) { launch_persist<4 | 32>(grid, 0, NST, 0, count, gen, coop); }).med / L;
        const double pcg = coop ? time_graph(1, [&](int) { launch_persist<16>(grid, 0, NST, 0, count, gen, coop); }).med / L : NAN;
        const double par = time_graph(1, [&](int) { launch_persist<32>(grid, 0, NST, 0, count, gen, coop); }).med / L;
        const double par2 = time_graph(1, [&](int) { launch_persist<32 | 2>(grid, 0, NST, 1, count, gen, coop); }).med / L;
        if (coop) same = same && run_out([&] { launch_persist<16>(grid, 0, NST, 0, count, gen, coop); }) == ref;
        same = same && run_out([&] { launch_persist<32>(grid, 0, NST, 0, count, gen, coop); }) == ref;
        barrier_rows.push_back({bps, {b, bcg, bar, p0, pcg, par, par2}});
        printf("| %d | %u | %u, %u, %u, %u | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %s%s |\n", bps, grid,
               ks_for(QKV), ks_for(H), ks_for(2 * I), ks_for(H), d, n, p0, p1, p2, p2b, p3, b,
               same ? "equal" : "MISMATCH", finite ? "" : " (non-finite)");
    }
    printf("\nBarriers (µs a layer: 4 barriers; 63 in the kernel, per layer /16) and the persistent chain with each:\n"
           "| blocks/SM | (b) counter | (b) grid.sync | (b) acquire/release | p0 counter | p0 grid.sync | p0 acquire/release | p2 acquire/release |\n|---|---|---|---|---|---|---|---|\n");
    for (auto& r : barrier_rows) printf("| %d | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", r.bps, r.v[0], r.v[1], r.v[2], r.v[3], r.v[4], r.v[5], r.v[6]);

    // (s): the stream of weights across barriers.
    {
        std::vector<Stage> st;
        for (u32 l = 0; l < L; ++l) {
            st.push_back({W[l].qkv, QKV, H, 1, nullptr, nullptr});
            st.push_back({W[l].o, H, H, 1, nullptr, nullptr});
            st.push_back({W[l].gu, 2 * I, H, 1, nullptr, nullptr});
            st.push_back({W[l].d, H, I, 1, nullptr, nullptr});
        }
        CK(cudaMemcpyToSymbol(c_ss, st.data(), sizeof(Stage) * NST));
        float* acc;
        CK(cudaMalloc(&acc, (u64)NST * 2 * I * 4));
        u16* xin;
        CK(cudaMalloc(&xin, H * 2));
        CK(cudaMemcpy(xin, x0.data(), H * 2, cudaMemcpyHostToDevice));
        // The reference: (n) with ks 1 (the same sums in another order).
        printf("\n(s) one stream of weights across barriers, µs a layer (the accumulators' memset node included):\n"
               "| D (pieces ahead) | blocks/SM | (s) | (s) without the barriers | max difference from (n), over max abs(n) |\n|---|---|---|---|---|\n");
        auto launch_s = [&](auto kern, int D, u32 grid) {
            const u32 smem = 8 * D * 512 + I * 2;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            CK(cudaMemsetAsync(acc, 0, (u64)NST * 2 * I * 4, g_s));
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(grid); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = smem; cfg.stream = g_s;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeCooperative; at[0].val.cooperative = 1;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kern, (u32)NST, acc, (const u16*)xin));
        };
        // The reference outputs of the last product: (n) at 2 blocks/SM with ks forced to 1.
        {
            std::vector<Stage> sn;
            for (u32 l = 0; l < L; ++l) {
                sn.push_back({W[l].qkv, QKV, H, 1, a0, a1});
                sn.push_back({W[l].o, H, H, 1, a1, a0});
                sn.push_back({W[l].gu, 2 * I, H, 1, a0, a1});
                sn.push_back({W[l].d, H, I, 1, a1, a0});
            }
            CK(cudaMemcpyToSymbol(c_st, sn.data(), sizeof(Stage) * NST));
        }
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 s = 0; s < NST; ++s) launch_persist<8>(2 * g_sms, s, s + 1, 0, count, gen, false);
        const auto refn = d2h(a0, H);
        for (int D : {8, 16, 32})
            for (int bps : {1, 2}) {
                if (D == 32 && bps == 2) continue;  // 160 KB a block
                const u32 grid = bps * g_sms;
                auto go = [&] {
                    if (D == 8) launch_s(stream_chain<8>, 8, grid);
                    if (D == 16) launch_s(stream_chain<16>, 16, grid);
                    if (D == 32) launch_s(stream_chain<32>, 32, grid);
                };
                go();
                CK(cudaStreamSynchronize(g_s));
                std::vector<float> last(H);
                CK(cudaMemcpy(last.data(), acc + (u64)(NST - 1) * 2 * I, H * 4, cudaMemcpyDeviceToHost));
                double md = 0, mx = 0;
                for (u32 i = 0; i < H; ++i) mx = std::max(mx, (double)fabs(bf2f(refn[i])));
                for (u32 i = 0; i < H; ++i) {
                    u16 r; { float v = last[i]; u32 u; memcpy(&u, &v, 4); u += 0x7fff + ((u >> 16) & 1); r = (u16)(u >> 16); }
                    const double ref = bf2f(refn[i]);
                    md = std::max(md, fabs(bf2f(r) - ref) / mx);
                }
                const double t = time_graph(1, [&](int) { go(); }).med / L;
                // The same stream with no barrier (wrong sums: it measures the streaming alone).
                const double tn = time_graph(1, [&](int) {
                    if (D == 8) launch_s(stream_chain<8, false>, 8, grid);
                    if (D == 16) launch_s(stream_chain<16, false>, 16, grid);
                    if (D == 32) launch_s(stream_chain<32, false>, 32, grid);
                }).med / L;
                printf("| %d | %d | %.2f | %.2f | %.3g |\n", D, bps, t, tn, md);
            }

        // (t): pieces handed out on demand.
        u32* cnt;
        CK(cudaMalloc(&cnt, NST * 4));
        printf("\n(t) pieces handed out on demand (G pieces a grab), µs a layer (two memset nodes included):\n"
               "| D | G | blocks/SM | (t) | max difference from (n), over max abs(n) |\n|---|---|---|---|---|\n");
        auto launch_t = [&](auto kern, int D, u32 grid) {
            const u32 smem = 8 * D * 512 + 8 * D * 128 + I * 2;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            CK(cudaMemsetAsync(acc, 0, (u64)NST * 2 * I * 4, g_s));
            CK(cudaMemsetAsync(cnt, 0, NST * 4, g_s));
            cudaLaunchConfig_t cfg = {};
            cfg.gridDim = dim3(grid); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = smem; cfg.stream = g_s;
            cudaLaunchAttribute at[1];
            at[0].id = cudaLaunchAttributeCooperative; at[0].val.cooperative = 1;
            cfg.attrs = at; cfg.numAttrs = 1;
            CK(cudaLaunchKernelEx(&cfg, kern, (u32)NST, acc, cnt, (const u16*)xin));
        };
        struct TV { int D, G, bps; };
        for (TV v : {TV{8, 4, 2}, TV{16, 4, 2}, TV{16, 8, 2}, TV{16, 4, 1}, TV{32, 8, 1}, TV{16, 16, 2}}) {
            const u32 grid = v.bps * g_sms;
            auto go = [&] {
                if (v.D == 8 && v.G == 4) launch_t(dyn_chain<8, 4>, 8, grid);
                if (v.D == 16 && v.G == 4) launch_t(dyn_chain<16, 4>, 16, grid);
                if (v.D == 16 && v.G == 8) launch_t(dyn_chain<16, 8>, 16, grid);
                if (v.D == 16 && v.G == 16) launch_t(dyn_chain<16, 16>, 16, grid);
                if (v.D == 32 && v.G == 8) launch_t(dyn_chain<32, 8>, 32, grid);
            };
            go();
            CK(cudaStreamSynchronize(g_s));
            std::vector<float> last(H);
            CK(cudaMemcpy(last.data(), acc + (u64)(NST - 1) * 2 * I, H * 4, cudaMemcpyDeviceToHost));
            double md = 0, mx = 0;
            for (u32 i = 0; i < H; ++i) mx = std::max(mx, (double)fabs(bf2f(refn[i])));
            for (u32 i = 0; i < H; ++i) md = std::max(md, fabs(bf2f(f2bf(last[i])) - bf2f(refn[i])) / mx);
            const double t = time_graph(1, [&](int) { go(); }).med / L;
            printf("| %d | %d | %d | %.2f | %.3g |\n", v.D, v.G, v.bps, t, md);
        }
    }
    printf("µs a layer (4 products; 121.6 MB of weights: %.2f µs at 3.0 TB/s)\n", 121.6e6 / 3.0e12 * 1e6);
    return 0;
}
