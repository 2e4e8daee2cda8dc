// Probe for issue #32, target 3: where the batch-1 step's GEMVs lose time against a read of
// their weights under programmatic dependent launch (PDL), and whether a product whose weights
// land in shared memory, more of them in flight and more of them issued before the wait, is
// faster.
//
// The chain: 16 layers x QKV (RMSNorm), O (+ residual), gate/up (RMSNorm, SwiGLU), down (+
// residual), bf16, Llama-3.2-1B's shapes, each layer its own weights (1.95 GB), as
// bench/pdl_gemv_probe.cu. In a CUDA graph, 3 + 7 x 30 replays, median, µs a layer.
//
// Kernels:
//   gemv      the crate's (decode.cu `gemv_bf16`/`gemv_glu_bf16`), launched as gpu.rs launches
//             them; `half`: grids of at most half a multiprocessor's threads, so that a
//             successor's blocks fit beside them.
//   gemv_d    (probe_host.cuh) the crate's `gemv` with decode.cu's DIAG pieces: 1 no staging of f(x), 2 the
//             products replaced by an XOR of the weights, 3 both (the access pattern alone),
//             8 x staged in shared memory in mode 0 as well (the output and down projections
//             read it in place otherwise), 16 the norm's block reduction skipped (each thread's
//             own sum of squares stands in for the row's: what QKV and gate/up would save if
//             the norm's statistics came ready-made).
//   gemv_m    the crate's entry points with the mode fixed at compile time (gemv_m1 for QKV,
//             gemv_m0 for O and down, gemv_glu_m1 for gate/up): the same sums, without the
//             other modes' code.
//   cgemv     the crate's GEMV (same launch, staging and summation order: the same bits) with
//             each lane's weight words landing in a private ring of CS rounds in shared
//             memory (cp.async) instead of registers, CS rounds issued before the wait.
//   sgemv     one block of 512 threads a multiprocessor owning an equal range of consecutive
//             outputs (contiguous bytes of W), streamed in 16 KB stages by the Tensor Memory
//             Accelerator (cp.async.bulk on an mbarrier) through a ring of NS stages, all NS
//             issued before the wait, at most half a multiprocessor (64 registers, 68–112 KB
//             of shared memory) so that the successor's block fits beside it; `pad`: shared
//             memory for one block a multiprocessor; `dyn`: stages handed out by a counter;
//             `dry`: products replaced by an XOR.
//   agemv     sgemv's stream filled by the threads' own cp.async copies (NS - 1 stages in
//             flight, one barrier a stage).
//   read-only bench/read_floor_probe.cu's `pdl-dep` kernel (2 blocks of 256 a multiprocessor,
//             8 loads a thread, the wait after the first 8).
// Sections: correctness (each kernel's one-layer outputs against the crate's; the 16-layer
// chains bit for bit: cgemv and gemv_d<0>, <8> against the crate's, sgemv/agemv variants
// against each other), where sgemv's blocks ran, the chains, and each product alone (16
// launches of it, each layer's weights, under PDL: µs a launch).
//
// Build and run (the GPU machine):
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -o stream_gemv_probe bench/stream_gemv_probe.cu -lcublas
//   ./stream_gemv_probe
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

#define SG_THREADS 512
#define SG_WARPS (SG_THREADS / 32)
#define SG_STAGE 16384u  // bytes a stage: one 1 KB slice a warp
#define SG_UNIT 512u     // bf16 elements a warp's slice (two 16-byte loads a lane)
#define SG_RES 256u      // residuals a block holds in shared memory (static ranges)

static __device__ __forceinline__ u32 sm_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void mb_init(u64* b, u32 n) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(sm_addr(b)), "r"(n) : "memory");
}
static __device__ __forceinline__ void mb_fence_init() {
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
static __device__ __forceinline__ void mb_expect(u64* b, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(sm_addr(b)), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void bulk_g2s(void* dst, const void* src, u32 bytes, u64* b) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     sm_addr(dst)),
                 "l"(src), "r"(bytes), "r"(sm_addr(b))
                 : "memory");
}
static __device__ __forceinline__ void mb_wait(u64* b, u32 parity) {
    u32 ok;
    do {
        asm volatile(
            "{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
            : "=r"(ok)
            : "r"(sm_addr(b)), "r"(parity)
            : "memory");
    } while (!ok);
}

// After the wait (sgemv and agemv): the block's residuals (outputs n0 .. n1, the first SG_RES)
// into rs, and f(x) into xs: mode 1 RMSNorm as the GEMV's held path forms it (nw_h: this
// thread's word of the norm weight, loaded before the wait), mode 0 a copy.
static __device__ __forceinline__ void sg_stage_in(const u16* x, u32 K, u32 mode, uint4 nw_h, float eps,
                                                   const u16* residual, u32 n0, u32 n1, float* rs, float* red,
                                                   u16* xs) {
    const u32 tid = threadIdx.x, hk = tid * 8;
    if (residual)
        for (u32 i = tid; i < n1 - n0 && i < SG_RES; i += SG_THREADS) rs[i] = BF16::ld(residual, n0 + i);
    if (mode == 1) {
        float ss = 0.f;
        uint4 xw = make_uint4(0, 0, 0, 0);
        if (hk < K) {
            xw = *reinterpret_cast<const uint4*>(x + hk);
            add_squares<BF16>(xw, ss);
        }
        const float inv = block_inv_rms(ss, red, tid / 32, tid % 32, SG_WARPS, K, eps);
        if (hk < K) *reinterpret_cast<uint4*>(xs + hk) = normed<BF16>(xw, nw_h, inv);
    } else {
        for (u32 k = hk; k < K; k += SG_THREADS * 8)
            *reinterpret_cast<uint4*>(xs + k) = *reinterpret_cast<const uint4*>(x + k);
    }
}

// A stage's products (sgemv and agemv): `units` 1 KB slices (r rows of C columns a part, upr
// slices a row, the up part's after the gate part's), one a warp at a time, each slice's sum
// across the warp into pp; DRY: an XOR of the weights' bits instead of the products.
template <bool DRY>
static __device__ __forceinline__ void sg_slices(const unsigned char* st, const u16* xs, u32 units, u32 r, u32 upr,
                                                 u32 C, u32 c, float* pp) {
    const u32 warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (u32 u = warp; u < units; u += SG_WARPS) {
        const u32 pu = u / (r * upr), ur = u % (r * upr), j = ur / upr, q = ur % upr;
        const u16* wrow = reinterpret_cast<const u16*>(st + pu * (SG_STAGE / 2)) + (u64)j * C + q * SG_UNIT;
        const u16* xrow = xs + c * C + q * SG_UNIT;
        float s = 0.f;
#pragma unroll
        for (u32 h = 0; h < 2; ++h) {
            const uint4 wv = *reinterpret_cast<const uint4*>(wrow + h * 256 + lane * 8);
            if (DRY) {
                s += __uint_as_float((wv.x ^ wv.y ^ wv.z ^ wv.w) & 0x3f7fffffu);
                continue;
            }
            const uint4 xv = *reinterpret_cast<const uint4*>(xrow + h * 256 + lane * 8);
            float a[8], b[8];
            Pack<BF16>::unpack(wv, a);
            Pack<BF16>::unpack(xv, b);
#pragma unroll
            for (u32 e = 0; e < 8; ++e) s += a[e] * b[e];
        }
        s = warp_sum(s);
        if (lane == 0) pp[u] = s;
    }
}

// A stage's partial sums meet (sgemv and agemv): thread j < r adds output o0 + j's slices in
// order (pp: upr a row, the up rows' after the gate rows' with GLU) to its running sums, and at
// the output's last stage (c == cpr - 1) writes it (the residual from rs where `from_rs`).
template <bool GLU>
static __device__ __forceinline__ void sg_combine(const float* pp, u32 r, u32 upr, u32 o0, u32 c, u32 cpr, u32 n0,
                                                  const u16* residual, const float* rs, bool from_rs, u16* y,
                                                  float& run, float& run_up) {
    const u32 tid = threadIdx.x;
    if (tid >= r) return;
    float s = 0.f, su = 0.f;
    for (u32 q = 0; q < upr; ++q) s += pp[tid * upr + q];
    if (GLU)
        for (u32 q = 0; q < upr; ++q) su += pp[r * upr + tid * upr + q];
    run += s;
    run_up += su;
    if (c == cpr - 1) {
        const u32 o = o0 + tid;
        const float res = !residual ? 0.f : from_rs && o - n0 < SG_RES ? rs[o - n0] : BF16::ld(residual, o);
        y[o] = product_out<BF16, GLU>(run, run_up, residual != nullptr, res);
        run = 0.f;
        run_up = 0.f;
    }
}

// y [N] = f(x) . W^T (GLU: silu(gate) * up, W [2N, K]); mode 1: f = RMSNorm with weight nw
// (K <= 8 * SG_THREADS), mode 0: f(x) = x. K a multiple of SG_UNIT. Dynamic shared memory:
// NS * SG_STAGE + 2K bytes.
// DYN: the blocks take groups of R outputs (one stage each, K * 2 * P <= SG_STAGE) from a
// counter (ctr[0]; ctr[1] counts the blocks done, and the last one resets both), so a block
// that shares its multiprocessor with another of the same grid takes less: each output's sum
// is formed by one warp a slice in the same order whichever block takes it.
// smid: where each block ran (a probe's log), or null.
template <bool GLU, u32 NS, bool DRY, bool DYN>
__global__ void __launch_bounds__(SG_THREADS, 2)
    sgemv(const u16* x, const u16* W, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y,
          u32* ctr, u32* smid) {
    typedef BF16 E;
    extern __shared__ __align__(128) unsigned char sg_smem[];
    unsigned char* ring = sg_smem;
    u16* xs = reinterpret_cast<u16*>(sg_smem + NS * SG_STAGE);
    __shared__ u64 full[NS];
    __shared__ float red[SG_WARPS];
    __shared__ float part[2][SG_WARPS];
    __shared__ float rs[SG_RES];  // the block's residuals, loaded after the wait (static ranges)
    __shared__ u32 sgrp[NS];  // DYN: each slot's group of outputs (0xffffffff: no more)
    const u32 tid = threadIdx.x;
    const u32 n0 = (u32)((u64)blockIdx.x * N / gridDim.x), n1 = (u32)((u64)(blockIdx.x + 1) * N / gridDim.x);
    constexpr u32 P = GLU ? 2 : 1;
    const u32 rowb = K * 2 * P;
    const u32 R = rowb <= SG_STAGE ? SG_STAGE / rowb : 1;    // outputs a stage
    const u32 C = rowb <= SG_STAGE ? K : SG_STAGE / (2 * P);  // columns a stage
    const u32 cpr = K / C;                                    // stages an output
    const u32 nst = (n1 - n0 + R - 1) / R * cpr;
    const u32 upr = C / SG_UNIT;  // slices a row part in a stage
    const u32 ngroups = (N + R - 1) / R;
    u32 pend = 0;  // DYN, thread 0: the group its last grab got
    bool stopped = false;
    // DYN: slot `slot` gets group `grp` (or, past the last, no more: the slot's phase completes
    // with no bytes).
    auto issue_g = [&](u32 slot, u32 grp) {
        if (grp >= ngroups) {
            stopped = true;
            sgrp[slot] = 0xffffffffu;
            asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sm_addr(&full[slot])) : "memory");
            return;
        }
        sgrp[slot] = grp;
        const u32 o0 = grp * R, bytes = min(R, N - o0) * K * 2;
        mb_expect(&full[slot], bytes * P);
        unsigned char* dst = ring + slot * SG_STAGE;
        bulk_g2s(dst, W + (u64)o0 * K, bytes, &full[slot]);
        if (GLU) bulk_g2s(dst + SG_STAGE / 2, W + (u64)(N + o0) * K, bytes, &full[slot]);
    };
    auto issue = [&](u32 t) {
        const u32 slot = t % NS, o0 = n0 + (t / cpr) * R, r = min(R, n1 - o0), c = t % cpr;
        const u32 bytes = r * C * 2;
        mb_expect(&full[slot], bytes * P);
        unsigned char* dst = ring + slot * SG_STAGE;
        bulk_g2s(dst, W + (u64)o0 * K + (u64)c * C, bytes, &full[slot]);
        if (GLU) bulk_g2s(dst + SG_STAGE / 2, W + (u64)(N + o0) * K + (u64)c * C, bytes, &full[slot]);
    };
    if (tid == 0) {
        for (u32 s = 0; s < NS; ++s) mb_init(&full[s], 1);
        mb_fence_init();
    }
    __syncthreads();
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    if (tid == 0 && smid) {
        u32 id;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
        smid[blockIdx.x] = id;
    }
    if (tid == 0 && DYN) {
        const u32 base = atomicAdd(ctr, NS);
        pend = atomicAdd(ctr, 1);
        for (u32 s = 0; s < NS; ++s)
            if (!stopped) issue_g(s, base + s);
            else {
                sgrp[s] = 0xffffffffu;
                asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(sm_addr(&full[s])) : "memory");
            }
    } else if (tid == 0)
        for (u32 t = 0; t < min(NS, nst); ++t) issue(t);
    const u32 hk = tid * 8;
    uint4 nw_h = make_uint4(0, 0, 0, 0);
    if (mode == 1 && hk < K) nw_h = __ldg(reinterpret_cast<const uint4*>(nw + hk));
    asm volatile("griddepcontrol.wait;" ::: "memory");
    sg_stage_in(x, K, mode, nw_h, eps, residual, n0, n1, rs, red, xs);
    __syncthreads();
    float run = 0.f, run_up = 0.f;  // an output's sums over its stages (cpr > 1)
    for (u32 t = 0; DYN || t < nst; ++t) {
        const u32 slot = t % NS;
        mb_wait(&full[slot], (t / NS) & 1);
        u32 o0 = n0 + (t / cpr) * R, r = min(R, n1 - o0), c = t % cpr;
        if (DYN) {
            const u32 grp = sgrp[slot];
            if (grp == 0xffffffffu) break;
            o0 = grp * R;
            r = min(R, N - o0);
            c = 0;
        }
        float* pp = part[t & 1];
        sg_slices<DRY>(ring + slot * SG_STAGE, xs, r * upr * P, r, upr, C, c, pp);
        __syncthreads();
        if (tid == 0 && DYN && !stopped) {
            const u32 grp = pend;
            if (grp < ngroups) pend = atomicAdd(ctr, 1);
            issue_g(slot, grp);
        } else if (tid == 0 && !DYN && t + NS < nst)
            issue(t + NS);
        sg_combine<GLU>(pp, r, upr, o0, c, cpr, n0, residual, rs, !DYN, y, run, run_up);
    }
    if (DYN && tid == 0) {
        __threadfence();
        if (atomicAdd(ctr + 1, 1) == gridDim.x - 1) {
            ctr[0] = 0;
            ctr[1] = 0;
        }
    }
}

// The same stream with the ring filled by the threads' own asynchronous copies (cp.async, 16
// bytes each, 2 a thread a stage) instead of the TMA: NS - 1 stages in flight, one barrier a
// stage (the slot refilled is the one every warp has just left). Static ranges.
template <bool GLU, u32 NS>
__global__ void __launch_bounds__(SG_THREADS, 2)
    agemv(const u16* x, const u16* W, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y) {
    typedef BF16 E;
    extern __shared__ __align__(128) unsigned char sg_smem[];
    unsigned char* ring = sg_smem;
    u16* xs = reinterpret_cast<u16*>(sg_smem + NS * SG_STAGE);
    __shared__ float red[SG_WARPS];
    __shared__ float part[2][SG_WARPS];
    __shared__ float rs[SG_RES];  // the block's residuals, loaded after the wait (static ranges)
    const u32 tid = threadIdx.x;
    const u32 n0 = (u32)((u64)blockIdx.x * N / gridDim.x), n1 = (u32)((u64)(blockIdx.x + 1) * N / gridDim.x);
    constexpr u32 P = GLU ? 2 : 1;
    const u32 rowb = K * 2 * P;
    const u32 R = rowb <= SG_STAGE ? SG_STAGE / rowb : 1;
    const u32 C = rowb <= SG_STAGE ? K : SG_STAGE / (2 * P);
    const u32 cpr = K / C;
    const u32 nst = (n1 - n0 + R - 1) / R * cpr;
    const u32 upr = C / SG_UNIT;
    auto stage_of = [&](u32 t, u32& o0, u32& r, u32& c) {
        o0 = n0 + (t / cpr) * R;
        r = min(R, n1 - o0);
        c = t % cpr;
    };
    auto issue = [&](u32 t) {
        if (t < nst) {
            u32 o0, r, c;
            stage_of(t, o0, r, c);
            const u32 words = r * C / 8;  // 16-byte words a part
            unsigned char* dst = ring + (t % NS) * SG_STAGE;
            for (u32 i = tid; i < words * P; i += SG_THREADS) {
                const u32 pu = i / words, wi = i % words;
                const u16* src = W + (u64)(pu ? N + o0 : o0) * K + (u64)c * C + wi * 8;
                asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;" ::"r"(
                                 sm_addr(dst + pu * (SG_STAGE / 2) + wi * 16)),
                             "l"(src)
                             : "memory");
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    for (u32 t = 0; t + 1 < NS; ++t) issue(t);
    const u32 hk = tid * 8;
    uint4 nw_h = make_uint4(0, 0, 0, 0);
    if (mode == 1 && hk < K) nw_h = __ldg(reinterpret_cast<const uint4*>(nw + hk));
    asm volatile("griddepcontrol.wait;" ::: "memory");
    sg_stage_in(x, K, mode, nw_h, eps, residual, n0, n1, rs, red, xs);
    float run = 0.f, run_up = 0.f;
    // Stage t's partial sums meet: thread j < r takes output j.
    auto combine = [&](u32 t) {
        u32 o0, r, c;
        stage_of(t, o0, r, c);
        sg_combine<GLU>(part[t & 1], r, upr, o0, c, cpr, n0, residual, rs, true, y, run, run_up);
    };
    for (u32 t = 0; t < nst; ++t) {
        asm volatile("cp.async.wait_group %0;" ::"n"(NS - 2) : "memory");
        __syncthreads();
        issue(t + NS - 1);
        if (t > 0) combine(t - 1);
        u32 o0, r, c;
        stage_of(t, o0, r, c);
        sg_slices<false>(ring + (t % NS) * SG_STAGE, xs, r * upr * P, r, upr, C, c, part[t & 1]);
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
    __syncthreads();
    if (nst > 0) combine(nst - 1);
}

// The crate's GEMV with its weight loads landing in shared memory instead of registers: each
// lane copies its own 16-byte words with cp.async into a private ring of CS rounds (GEMV_L
// words a round) and reads back only what it copied, so no barrier is needed and the
// weights in flight are no longer bounded by registers (CS rounds a lane: CS * 64 bytes,
// against the register GEMV's 64). CS rounds are issued before the wait. Batch 1 (M = 1);
// the launch (threads, ks, grid), the staging and the summation order are `gemv`'s, so the
// outputs should equal its, bit for bit. Dynamic shared memory: the staged row of f(x) (2K
// bytes; none when x is read where it is) + CS * threads * 64 bytes.
template <bool GLU, u32 CS>
__global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS)
    cgemv(const u16* x, const u16* W, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y,
          u32 ks) {
    typedef BF16 E;
    typedef u16 T;
    constexpr u32 EL = 8;
    extern __shared__ __align__(16) unsigned char cg_smem[];
    __shared__ float red[GEMV_MAX_WARPS];
    __shared__ float parts[GEMV_MAX_WARPS][2];
    const u32 nt = blockDim.x, nwarps = nt / 32;
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const bool XG = !GLU && mode == 0 && ks > 1;
    T* xs = reinterpret_cast<T*>(cg_smem);
    uint4* ring = reinterpret_cast<uint4*>(cg_smem + (XG ? 0 : K * 2));  // [CS * GEMV_L][nt]
    const u32 KR = GLU ? 2 * K : K;
    const u32 steps = (KR + 32 * EL - 1) / (32 * EL);
    const u32 rows_blk = nwarps / ks, slice = warp % ks, row_in = warp / ks;
    const u32 slice_steps = (steps + ks - 1) / ks;
    const u32 s_begin = min(steps, slice * slice_steps), s_end = min(steps, s_begin + slice_steps);
    const u32 groups = (N + rows_blk - 1) / rows_blk;
    const bool direct = ks == 1;
    const u32 e_m = direct ? lane : tid / rows_blk;
    const u32 e_row = direct ? row_in : tid % rows_blk;
    const bool e_on = direct ? lane < 1 : tid < rows_blk;
    // The lane's rounds: row groups blockIdx.x, + gridDim.x, ...; rpr rounds a row.
    const u32 rpr = (s_end - s_begin + GEMV_L - 1) / GEMV_L;
    const u32 my_groups = blockIdx.x < groups ? (groups - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
    const u32 nrounds = s_begin < s_end ? my_groups * rpr : 0;
    auto issue = [&](u32 q) {
        if (q < nrounds) {
            const u32 grp = blockIdx.x + (q / rpr) * gridDim.x, n = grp * rows_blk + row_in;
            const u32 s0 = s_begin + (q % rpr) * GEMV_L;
#pragma unroll
            for (u32 s = 0; s < GEMV_L; ++s) {
                const u32 k = ((s0 + s) * 32 + lane) * EL;
                if (n < N && s0 + s < s_end && k < KR) {
                    const T* p = GLU && k >= K ? W + (u64)(N + n) * K + (k - K) : W + (u64)n * K + k;
                    asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16;" ::"r"(
                                     sm_addr(ring + ((q % CS) * GEMV_L + s) * nt + tid)),
                                 "l"(p)
                                 : "memory");
                }
            }
        }
        asm volatile("cp.async.commit_group;" ::: "memory");
    };
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    for (u32 q = 0; q < CS; ++q) issue(q);
    const bool held = mode == 1 && K <= nt * EL;
    const u32 hk = tid * EL;
    uint4 nw_h = make_uint4(0, 0, 0, 0);
    if (held && hk < K) nw_h = __ldg(reinterpret_cast<const uint4*>(nw + hk));
    asm volatile("griddepcontrol.wait;" ::: "memory");
    float res_next = 0.f;
    auto load_res = [&](u32 grp) {
        const u32 n = grp * rows_blk + e_row;
        if (residual && e_on && grp < groups && n < N) res_next = E::ld(residual, n);
    };
    load_res(blockIdx.x);
    if (held) {
        float ss = 0.f;
        uint4 xw = make_uint4(0, 0, 0, 0);
        if (hk < K) {
            xw = *reinterpret_cast<const uint4*>(x + hk);
            add_squares<E>(xw, ss);
        }
        const float inv = block_inv_rms(ss, red, warp, lane, nwarps, K, eps);
        if (hk < K) *reinterpret_cast<uint4*>(xs + hk) = normed<E>(xw, nw_h, inv);
    } else if (!XG) {
        for (u32 k = tid * EL; k < K; k += nt * EL)
            *reinterpret_cast<uint4*>(xs + k) = *reinterpret_cast<const uint4*>(x + k);
    }
    if (!XG) __syncthreads();
    const T* fx = XG ? x : xs;
    u32 q = 0;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 n = grp * rows_blk + row_in;
        const float res = res_next;
        load_res(grp + gridDim.x);
        float acc = 0.f, acc_up = 0.f;
        if (n < N && s_begin < s_end) {
            for (u32 r = 0; r < rpr; ++r, ++q) {
                asm volatile("cp.async.wait_group %0;" ::"n"(CS - 1) : "memory");
                const u32 s0 = s_begin + r * GEMV_L;
                uint4 w[GEMV_L];
#pragma unroll
                for (u32 s = 0; s < GEMV_L; ++s) w[s] = ring[((q % CS) * GEMV_L + s) * nt + tid];
#pragma unroll
                for (u32 s = 0; s < GEMV_L; ++s) {
                    const u32 k = ((s0 + s) * 32 + lane) * EL;
                    if (s0 + s < s_end && k < KR) {
                        const bool up = GLU && k >= K;
                        const u32 kx = up ? k - K : k;
                        float a[EL], xv[EL];
                        Pack<E>::unpack(w[s], a);
                        const uint4* qx = reinterpret_cast<const uint4*>(fx + kx);
                        Pack<E>::unpack(XG ? ld_x(qx) : *qx, xv);
                        if (GLU) {
                            float t = 0.f;
#pragma unroll
                            for (u32 j = 0; j < EL; ++j) t += a[j] * xv[j];
                            if (up) acc_up += t;
                            else acc += t;
                        } else {
#pragma unroll
                            for (u32 j = 0; j < EL; ++j) acc += a[j] * xv[j];
                        }
                    }
                }
                issue(q + CS);
            }
        } else if (s_begin < s_end) {
            // A row past N (the last group): its rounds are empty; keep the groups' count.
            for (u32 r = 0; r < rpr; ++r, ++q) issue(q + CS);
        }
        float mine = 0.f, mine_up = 0.f;
        {
            const float v = warp_sum(acc);
            const float vu = GLU ? warp_sum(acc_up) : 0.f;
            if (direct) {
                if (e_m == 0) {
                    mine = v;
                    mine_up = vu;
                }
            } else if (lane == 0) {
                parts[warp][0] = v;
                parts[warp][1] = vu;
            }
        }
        if (!direct) {
            __syncthreads();
            if (e_on) {
                float v = 0.f, vu = 0.f;
                for (u32 i = 0; i < ks; ++i) {
                    v += parts[e_row * ks + i][0];
                    if (GLU) vu += parts[e_row * ks + i][1];
                }
                mine = v;
                mine_up = vu;
            }
        }
        const u32 no = grp * rows_blk + e_row;
        if (e_on && no < N) y[no] = product_out<E, GLU>(mine, mine_up, residual != nullptr, res);
        if (!direct) __syncthreads();
    }
    asm volatile("cp.async.wait_all;" ::: "memory");
}

// The read-only floor (bench/read_floor_probe.cu's `pdl-dep` path): 16-byte loads at a grid
// stride, 8 in flight a thread, 256 threads a block, the wait after the first 8; nothing
// computed (a store that never happens keeps the loads).
__global__ void __launch_bounds__(256) rd_floor(const uint4* __restrict__ p, u64 n, u32* sink) {
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
    uint4 acc = make_uint4(0, 0, 0, 0), v[8];
#pragma unroll
    for (u32 j = 0; j < 8; ++j) v[j] = i + j * stride < n ? __ldg(p + i + j * stride) : make_uint4(0, 0, 0, 0);
    asm volatile("griddepcontrol.wait;" ::: "memory");
    for (;;) {
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
            acc.x ^= v[j].x; acc.y ^= v[j].y; acc.z ^= v[j].z; acc.w ^= v[j].w;
        }
        i += 8 * stride;
        if (i >= n) break;
#pragma unroll
        for (u32 j = 0; j < 8; ++j) v[j] = i + j * stride < n ? __ldg(p + i + j * stride) : make_uint4(0, 0, 0, 0);
    }
    if ((acc.x & acc.y & acc.z & acc.w) == 0xffffffffu) sink[blockIdx.x % 64] = acc.x;
}

static const u32 H = 2048, QKV = 3072, I = 8192, L = 16;

static const u32 SG_PAD = 120 * 1024;  // the `pad` paths' shared memory: one block a multiprocessor

template <u32 NS, bool DRY, bool DYN>
static void sg_setup() {
    const int big = std::max(NS * SG_STAGE + I * 2, SG_PAD);
    CK(cudaFuncSetAttribute(sgemv<false, NS, DRY, DYN>, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
    CK(cudaFuncSetAttribute(sgemv<true, NS, DRY, DYN>, cudaFuncAttributeMaxDynamicSharedMemorySize, big));
    cudaFuncAttributes a, b;
    CK(cudaFuncGetAttributes(&a, sgemv<false, NS, DRY, DYN>));
    CK(cudaFuncGetAttributes(&b, sgemv<true, NS, DRY, DYN>));
    printf("sgemv NS %u%s%s: %d / %d registers, %zu / %zu bytes local, static smem %zu\n", NS, DRY ? " dry" : "",
           DYN ? " dyn" : "", a.numRegs, b.numRegs, a.localSizeBytes, b.localSizeBytes, a.sharedSizeBytes);
}

template <u32 V> using U = std::integral_constant<u32, V>;
template <bool V> using B = std::integral_constant<bool, V>;

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    probe_device();
    u64 seed = 7;
    const Chain ch = chain_setup(L, H, QKV, I, seed);
    const std::vector<LayerWeights>& W = ch.W;
    u16 *a0 = ch.a0, *a1 = ch.a1, *nw = ch.nw, *g = ch.g;
    u32 *ctr, *smid;  // a counter pair a launch of the chain; where each block ran
    CK(cudaMalloc(&ctr, 4 * L * 2 * 4));
    CK(cudaMemset(ctr, 0, 4 * L * 2 * 4));
    CK(cudaMalloc(&smid, 1024 * 4));
    const std::vector<u16> x0 = chain_input(H);
    const StepLaunch cq = gemv_step_launch(QKV, H, false), co = gemv_step_launch(H, H, false),
                     cg = gemv_step_launch(I, H, true), cd = gemv_step_launch(H, I, false);
    const StepLaunch cq0 = cq, co0 = co, cg0 = cg, cd0 = cd;
    sg_setup<4, false, false>();
    sg_setup<6, false, false>();
    sg_setup<4, false, true>();
    sg_setup<6, false, true>();
    sg_setup<6, true, true>();
    for (auto f : {agemv<false, 4>, agemv<true, 4>, agemv<false, 6>, agemv<true, 6>, agemv<false, 8>, agemv<true, 8>})
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 8 * SG_STAGE + I * 2));
    for (auto f : {cgemv<false, 1>, cgemv<true, 1>, cgemv<false, 2>, cgemv<true, 2>, cgemv<false, 3>, cgemv<true, 3>}) {
        CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 200 * 1024));
        cudaFuncAttributes a;
        CK(cudaFuncGetAttributes(&a, f));
        printf("cgemv: %d registers, %zu bytes local\n", a.numRegs, a.localSizeBytes);
    }
    {
        cudaFuncAttributes a, b;
        CK(cudaFuncGetAttributes(&a, agemv<false, 6>));
        CK(cudaFuncGetAttributes(&b, agemv<true, 6>));
        printf("agemv NS 6: %d / %d registers, %zu / %zu bytes local\n", a.numRegs, b.numRegs, a.localSizeBytes, b.localSizeBytes);
    }
    const u32 sgrid = g_sms;
    // The crate's chain: one layer.
    // `only` >= 0: that product alone (0 QKV, 1 O, 2 gate/up, 3 down), the attribute on every
    // launch but the graph's first.
    auto layer_gemv = [&](int l, bool pdl, int only = -1, bool half = false) {
        const StepLaunch cq = half ? StepLaunch{cq0.threads, cq0.ks, std::min(cq0.grid, (u32)g_sms * (512 / cq0.threads))} : cq0,
                         co = half ? StepLaunch{co0.threads, co0.ks, std::min(co0.grid, (u32)g_sms * (512 / co0.threads))} : co0,
                         cg = half ? StepLaunch{cg0.threads, cg0.ks, std::min(cg0.grid, (u32)g_sms * (512 / cg0.threads))} : cg0,
                         cd = half ? StepLaunch{cd0.threads, cd0.ks, std::min(cd0.grid, (u32)g_sms * (512 / cd0.threads))} : cd0;
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        if (on(0)) launch_ck(pd(0), gemv_bf16, cq.grid, cq.threads, H * 2, (const u16*)a0, (const u16*)W[l].qkv, 1u, QKV, H,
               1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, cq.ks, (unsigned long long*)nullptr);
        if (on(1)) launch_ck(pd(1), gemv_bf16, co.grid, co.threads, H * 2, (const u16*)a1, (const u16*)W[l].o, 1u, H, H, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, co.ks, (unsigned long long*)nullptr);
        if (on(2)) launch_ck(pd(2), gemv_glu_bf16, cg.grid, cg.threads, H * 2, (const u16*)(a0 + I), (const u16*)W[l].gu, 1u, I, H, 1u,
               (const u16*)nw, 1e-5f, g, cg.ks);
        if (on(3)) launch_ck(pd(3), gemv_bf16, cd.grid, cd.threads, I * 2, (const u16*)g, (const u16*)W[l].d, 1u, H, I, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, cd.ks, (unsigned long long*)nullptr);
    };
    // The stream chain: one layer, ring of NS stages; `pad`: shared memory for one block a
    // multiprocessor; `log`: the gate/up launch records where its blocks ran.
    auto layer_sg = [&](auto ns_tag, auto dry_tag, auto dyn_tag, int l, bool pdl, bool pad = false, bool log = false,
                        int only = -1) {
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        constexpr u32 NS = decltype(ns_tag)::value;
        constexpr bool DRY = decltype(dry_tag)::value, DYN = decltype(dyn_tag)::value;
        const u32 sm_h = pad ? SG_PAD : NS * SG_STAGE + H * 2, sm_i = pad ? SG_PAD : NS * SG_STAGE + I * 2;
        u32* c = ctr + 8 * l;
        if (on(0)) launch_ck(pd(0), sgemv<false, NS, DRY, DYN>, sgrid, SG_THREADS, sm_h, (const u16*)a0, (const u16*)W[l].qkv,
               QKV, H, 1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, c, (u32*)nullptr);
        if (on(1)) launch_ck(pd(1), sgemv<false, NS, DRY, DYN>, sgrid, SG_THREADS, sm_h, (const u16*)a1, (const u16*)W[l].o, H, H, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, c + 2, (u32*)nullptr);
        if (on(2)) launch_ck(pd(2), sgemv<true, NS, DRY, DYN>, sgrid, SG_THREADS, sm_h, (const u16*)(a0 + I), (const u16*)W[l].gu, I, H,
               1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, g, c + 4, log ? smid : (u32*)nullptr);
        if (on(3)) launch_ck(pd(3), sgemv<false, NS, DRY, DYN>, sgrid, SG_THREADS, sm_i, (const u16*)g, (const u16*)W[l].d, H, I, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, c + 6, (u32*)nullptr);
    };
    // The cp.async stream: one layer.
    auto layer_ag = [&](auto ns_tag, int l, bool pdl, int only = -1) {
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        constexpr u32 NS = decltype(ns_tag)::value;
        const u32 sm_h = NS * SG_STAGE + H * 2, sm_i = NS * SG_STAGE + I * 2;
        if (on(0)) launch_ck(pd(0), agemv<false, NS>, sgrid, SG_THREADS, sm_h, (const u16*)a0, (const u16*)W[l].qkv, QKV, H, 1u,
               (const u16*)nw, 1e-5f, (const u16*)nullptr, a1);
        if (on(1)) launch_ck(pd(1), agemv<false, NS>, sgrid, SG_THREADS, sm_h, (const u16*)a1, (const u16*)W[l].o, H, H, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I);
        if (on(2)) launch_ck(pd(2), agemv<true, NS>, sgrid, SG_THREADS, sm_h, (const u16*)(a0 + I), (const u16*)W[l].gu, I, H, 1u,
               (const u16*)nw, 1e-5f, (const u16*)nullptr, g);
        if (on(3)) launch_ck(pd(3), agemv<false, NS>, sgrid, SG_THREADS, sm_i, (const u16*)g, (const u16*)W[l].d, H, I, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0);
    };
    // The crate's GEMV with its weights landing in shared memory (cgemv): one layer.
    // `half`: grids of half the multiprocessor's threads (2 blocks of 256 or 1 of 512 an SM), so
    // the successor's blocks fit beside them and issue their CS rounds while this grid runs.
    auto hg = [&](StepLaunch c, bool half) {
        if (half) c.grid = std::min(c.grid, (u32)g_sms * (512 / c.threads));
        return c;
    };
    auto layer_cg = [&](auto cs_tag, int l, bool pdl, int only = -1, bool half = false) {
        constexpr u32 CS = decltype(cs_tag)::value;
        const StepLaunch cq = hg(cq0, half), co = hg(co0, half), cg = hg(cg0, half), cd = hg(cd0, half);
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        auto sm = [&](const StepLaunch& c, u32 k, bool xg) { return (xg ? 0 : k * 2) + CS * GEMV_L * c.threads * 16; };
        if (on(0)) launch_ck(pd(0), cgemv<false, CS>, cq.grid, cq.threads, sm(cq, H, false), (const u16*)a0, (const u16*)W[l].qkv,
                          QKV, H, 1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, cq.ks);
        if (on(1)) launch_ck(pd(1), cgemv<false, CS>, co.grid, co.threads, sm(co, H, co.ks > 1), (const u16*)a1,
                          (const u16*)W[l].o, H, H, 0u, (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, co.ks);
        if (on(2)) launch_ck(pd(2), cgemv<true, CS>, cg.grid, cg.threads, sm(cg, H, false), (const u16*)(a0 + I),
                          (const u16*)W[l].gu, I, H, 1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, g, cg.ks);
        if (on(3)) launch_ck(pd(3), cgemv<false, CS>, cd.grid, cd.threads, sm(cd, I, cd.ks > 1), (const u16*)g,
                          (const u16*)W[l].d, H, I, 0u, (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, cd.ks);
    };
    u32* sink;
    CK(cudaMalloc(&sink, 64 * 4));
    // The read-only floor: one layer's four matrices, 2 blocks a multiprocessor.
    auto layer_rd = [&](int l, bool pdl, int only = -1) {
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        const uint4* m[4] = {(const uint4*)W[l].qkv, (const uint4*)W[l].o, (const uint4*)W[l].gu, (const uint4*)W[l].d};
        const u64 n[4] = {(u64)QKV * H / 8, (u64)H * H / 8, 2ull * I * H / 8, (u64)H * I / 8};
        for (int j = 0; j < 4; ++j)
            if (on(j)) launch_ck(pd(j), rd_floor, 2 * g_sms, 256, 0, m[j], n[j], sink);
    };
    // The DIAG variants of the crate's GEMV: one layer.
    auto layer_gd = [&](auto d_tag, int l, bool pdl, int only = -1) {
        constexpr u32 D = decltype(d_tag)::value;
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        if (on(0)) launch_ck(pd(0), gemv_d<false, D>, cq.grid, cq.threads, H * 2, (const u16*)a0, (const u16*)W[l].qkv, QKV, H,
                          1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, cq.ks);
        if (on(1)) launch_ck(pd(1), gemv_d<false, D>, co.grid, co.threads, H * 2, (const u16*)a1, (const u16*)W[l].o, H, H, 0u,
                          (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, co.ks);
        if (on(2)) launch_ck(pd(2), gemv_d<true, D>, cg.grid, cg.threads, H * 2, (const u16*)(a0 + I), (const u16*)W[l].gu, I,
                          H, 1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, g, cg.ks);
        if (on(3)) launch_ck(pd(3), gemv_d<false, D>, cd.grid, cd.threads, I * 2, (const u16*)g, (const u16*)W[l].d, H, I, 0u,
                          (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, cd.ks);
    };
    // The crate's GEMV entry points with the mode fixed at compile time (gemv_m1 for QKV,
    // gemv_m0 for O and down, gemv_glu_m1 for gate/up): the same sums, without the other modes'
    // code.
    auto layer_gm = [&](int l, bool pdl, int only = -1) {
        auto on = [&](int j) { return only < 0 || only == j; };
        auto pd = [&](int j) { return pdl && (only < 0 ? l > 0 || j > 0 : l > 0); };
        if (on(0)) launch_ck(pd(0), gemv_m1_bf16, cq.grid, cq.threads, H * 2, (const u16*)a0, (const u16*)W[l].qkv, 1u, QKV,
                          H, 1u, (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, cq.ks, (unsigned long long*)nullptr);
        if (on(1)) launch_ck(pd(1), gemv_m0_bf16, co.grid, co.threads, H * 2, (const u16*)a1, (const u16*)W[l].o, 1u, H, H,
                          0u, (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, co.ks, (unsigned long long*)nullptr);
        if (on(2)) launch_ck(pd(2), gemv_glu_m1_bf16, cg.grid, cg.threads, H * 2, (const u16*)(a0 + I), (const u16*)W[l].gu,
                          1u, I, H, 1u, (const u16*)nw, 1e-5f, g, cg.ks);
        if (on(3)) launch_ck(pd(3), gemv_m0_bf16, cd.grid, cd.threads, I * 2, (const u16*)g, (const u16*)W[l].d, 1u, H, I,
                          0u, (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, cd.ks, (unsigned long long*)nullptr);
    };
    auto cmp = [&](const char* name, const std::vector<u16>& r, const std::vector<u16>& s) {
        double mx = 0, md = 0;
        u64 diff = 0;
        for (size_t i = 0; i < r.size(); ++i) {
            mx = std::max(mx, (double)fabsf(bf2f(r[i])));
            const double d = fabs((double)bf2f(r[i]) - bf2f(s[i]));
            md = std::max(md, d);
            diff += r[i] != s[i];
            if (!std::isfinite(bf2f(s[i]))) diff += 1000000;
        }
        printf("check %-8s: largest difference %.3g of the largest |y| (%.3g); %llu of %zu outputs differ in bits\n", name,
               md / std::max(mx, 1e-30), mx, (unsigned long long)diff, r.size());
    };
    // Correctness, one layer: each product of the stream kernel (static, then dynamic) against
    // the crate's GEMV on the same inputs (the crate's chain's intermediates as inputs).
    for (int dyn = 0; dyn < 2; ++dyn) {
        auto sg = [&](bool glu, u32 smem, auto... a) {
            if (dyn) launch_ck(false, glu ? sgemv<true, 6, false, true> : sgemv<false, 6, false, true>, sgrid, SG_THREADS, smem, a...);
            else launch_ck(false, glu ? sgemv<true, 6, false, false> : sgemv<false, 6, false, false>, sgrid, SG_THREADS, smem, a...);
        };
        printf("%s:\n", dyn ? "sgemv, dynamic groups" : "sgemv, static ranges");
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        const std::vector<u16> in0 = d2h(a0, H);
        launch_ck(false, gemv_bf16, cq.grid, cq.threads, H * 2, (const u16*)a0, (const u16*)W[0].qkv, 1u, QKV, H, 1u,
               (const u16*)nw, 1e-5f, (const u16*)nullptr, a1, cq.ks, (unsigned long long*)nullptr);
        const auto r0 = d2h(a1, QKV);
        sg(false, 6 * SG_STAGE + H * 2, (const u16*)a0, (const u16*)W[0].qkv, QKV, H, 1u, (const u16*)nw, 1e-5f,
           (const u16*)nullptr, a1, ctr, (u32*)nullptr);
        cmp("qkv", r0, d2h(a1, QKV));
        CK(cudaMemcpy(a1, r0.data(), QKV * 2, cudaMemcpyHostToDevice));
        launch_ck(false, gemv_bf16, co.grid, co.threads, H * 2, (const u16*)a1, (const u16*)W[0].o, 1u, H, H, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)a0, a0 + I, co.ks, (unsigned long long*)nullptr);
        const auto r1 = d2h(a0 + I, H);
        sg(false, 6 * SG_STAGE + H * 2, (const u16*)a1, (const u16*)W[0].o, H, H, 0u, (const u16*)nullptr, 1e-5f,
           (const u16*)a0, a0 + I, ctr, (u32*)nullptr);
        cmp("o+res", r1, d2h(a0 + I, H));
        CK(cudaMemcpy(a0 + I, r1.data(), H * 2, cudaMemcpyHostToDevice));
        launch_ck(false, gemv_glu_bf16, cg.grid, cg.threads, H * 2, (const u16*)(a0 + I), (const u16*)W[0].gu, 1u, I, H, 1u,
               (const u16*)nw, 1e-5f, g, cg.ks);
        const auto r2 = d2h(g, I);
        sg(true, 6 * SG_STAGE + H * 2, (const u16*)(a0 + I), (const u16*)W[0].gu, I, H, 1u, (const u16*)nw, 1e-5f,
           (const u16*)nullptr, g, ctr, (u32*)nullptr);
        cmp("gate/up", r2, d2h(g, I));
        CK(cudaMemcpy(g, r2.data(), I * 2, cudaMemcpyHostToDevice));
        launch_ck(false, gemv_bf16, cd.grid, cd.threads, I * 2, (const u16*)g, (const u16*)W[0].d, 1u, H, I, 0u,
               (const u16*)nullptr, 1e-5f, (const u16*)(a0 + I), a0, cd.ks, (unsigned long long*)nullptr);
        const auto r3 = d2h(a0, H);
        CK(cudaMemcpy(a0, in0.data(), H * 2, cudaMemcpyHostToDevice));  // a0 is not read by down
        sg(false, 6 * SG_STAGE + I * 2, (const u16*)g, (const u16*)W[0].d, H, I, 0u, (const u16*)nullptr, 1e-5f,
           (const u16*)(a0 + I), a0, ctr, (u32*)nullptr);
        cmp("down+res", r3, d2h(a0, H));
        const auto cz = d2h(ctr, 2);
        printf("counters after: %u %u\n", cz[0], cz[1]);
    }
    // The 16-layer chains' outputs.
    auto run_gemv = [&](bool pdl) {
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer_gemv(l, pdl);
        return d2h(a0, H);
    };
    auto run_sg = [&](auto ns, auto dyn, bool pdl, bool pad = false, bool log = false) {
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer_sg(ns, B<false>{}, dyn, l, pdl, pad, log && l == L / 2);
        return d2h(a0, H);
    };
    // Where layer 8's gate/up blocks ran, in a chain under PDL: blocks a multiprocessor.
    auto placement = [&](const char* name) {
        const auto sm = d2h(smid, sgrid);
        std::vector<int> per(1024, 0);
        for (u32 b = 0; b < sgrid; ++b) per[sm[b] % 1024]++;
        int one = 0, two = 0, more = 0, none = 0;
        for (int i = 0; i < g_sms; ++i) (per[i] == 0 ? none : per[i] == 1 ? one : per[i] == 2 ? two : more)++;
        printf("placement, %s: multiprocessors with 0 / 1 / 2 / more blocks: %d / %d / %d / %d\n", name, none, one, two, more);
    };
    const auto rg = run_gemv(false), rs6 = run_sg(U<6>{}, B<false>{}, false);
    {
        double mx = 0, md = 0;
        for (u32 i = 0; i < H; ++i) {
            mx = std::max(mx, (double)fabsf(bf2f(rg[i])));
            md = std::max(md, fabs((double)bf2f(rg[i]) - bf2f(rs6[i])));
        }
        printf("16 layers: sgemv's output against the crate's, largest difference %.3g of the largest |y| (%.3g)\n",
               md / mx, mx);
        auto eq = [&](const std::vector<u16>& v) { return v == rs6 ? "equal" : "DIFFERS"; };
        printf("16 layers against sgemv 6 plain: 6 pdl %s; 4 plain %s; repeat %s; 6 pad pdl %s; dyn 6 pdl %s; dyn 4 pdl %s; "
               "dyn 6 plain %s\n",
               eq(run_sg(U<6>{}, B<false>{}, true, false, true)), eq(run_sg(U<4>{}, B<false>{}, false)),
               eq(run_sg(U<6>{}, B<false>{}, false)), eq(run_sg(U<6>{}, B<false>{}, true, true)),
               eq(run_sg(U<6>{}, B<true>{}, true)), eq(run_sg(U<4>{}, B<true>{}, true)),
               eq(run_sg(U<6>{}, B<true>{}, false)));
        printf("16 layers: gemv pdl %s gemv plain\n", run_gemv(true) == rg ? "equals" : "DIFFERS FROM");
        auto run_cg = [&](auto cs, bool pdl) {
            CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
            for (u32 l = 0; l < L; ++l) layer_cg(cs, l, pdl);
            return d2h(a0, H);
        };
        auto eqg = [&](const std::vector<u16>& v) { return v == rg ? "equal" : "DIFFERS"; };
        printf("16 layers against the crate's gemv (plain), bit for bit: cgemv 1 plain %s; cgemv 2 pdl %s; cgemv 3 pdl %s; "
               "cgemv 3 plain %s\n",
               eqg(run_cg(U<1>{}, false)), eqg(run_cg(U<2>{}, true)), eqg(run_cg(U<3>{}, true)), eqg(run_cg(U<3>{}, false)));
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer_cg(U<3>{}, l, true, -1, true);
        printf("16 layers: cgemv 3 half pdl %s the crate's gemv\n", eqg(d2h(a0, H)));
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer_gemv(l, true, -1, true);
        printf("16 layers: gemv half pdl %s the crate's gemv\n", eqg(d2h(a0, H)));
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer_gd(U<0>{}, l, true);
        printf("16 layers: gemv_d<0> pdl %s the crate's gemv\n", eqg(d2h(a0, H)));
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer_gd(U<8>{}, l, true);
        printf("16 layers: gemv_d<8> (x staged in mode 0) pdl %s the crate's gemv\n", eqg(d2h(a0, H)));
        CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
        for (u32 l = 0; l < L; ++l) layer_gm(l, true);
        printf("16 layers: gemv with its mode fixed (gemv_m0/m1) pdl %s the crate's gemv\n", eqg(d2h(a0, H)));
        auto run_ag = [&](auto ns, bool pdl) {
            CK(cudaMemcpy(a0, x0.data(), H * 2, cudaMemcpyHostToDevice));
            for (u32 l = 0; l < L; ++l) layer_ag(ns, l, pdl);
            return d2h(a0, H);
        };
        printf("16 layers against sgemv 6 plain: agemv 4 pdl %s; agemv 6 pdl %s; agemv 8 plain %s\n", eq(run_ag(U<4>{}, true)),
               eq(run_ag(U<6>{}, true)), eq(run_ag(U<8>{}, false)));
        run_sg(U<6>{}, B<false>{}, true, false, true);
        placement("sgemv 6 pdl");
        run_sg(U<6>{}, B<false>{}, true, true, true);
        placement("sgemv 6 pad pdl");
        run_sg(U<6>{}, B<true>{}, true, false, true);
        placement("sgemv dyn 6 pdl");
        run_sg(U<6>{}, B<false>{}, false, false, true);
        placement("sgemv 6 plain");
    }
    printf("\nlaunches: gemv (threads, ks, grid) qkv %u %u %u, o %u %u %u, gate/up %u %u %u, down %u %u %u; sgemv %u x %u\n",
           cq.threads, cq.ks, cq.grid, co.threads, co.ks, co.grid, cg.threads, cg.ks, cg.grid, cd.threads, cd.ks, cd.grid,
           sgrid, SG_THREADS);
    printf("| path | µs a layer (median) | min–max |\n|---|---|---|\n");
    auto row = [&](const char* name, const Timing& t) { printf("| %s | %.2f | %.2f–%.2f |\n", name, t.med, t.lo, t.hi); };
    for (int rep = 0; rep < 2; ++rep) {
        row("gemv plain", time_graph(L, [&](int l) { layer_gemv(l, false); }));
        row("gemv pdl", time_graph(L, [&](int l) { layer_gemv(l, true); }));
        row("read-only floor pdl", time_graph(L, [&](int l) { layer_rd(l, true); }));
        row("gemv DIAG 1 (no staging) pdl", time_graph(L, [&](int l) { layer_gd(U<1>{}, l, true); }));
        row("gemv DIAG 2 (XOR for products) pdl", time_graph(L, [&](int l) { layer_gd(U<2>{}, l, true); }));
        row("gemv DIAG 3 (both) pdl", time_graph(L, [&](int l) { layer_gd(U<3>{}, l, true); }));
        row("gemv DIAG 8 (x staged in mode 0) pdl", time_graph(L, [&](int l) { layer_gd(U<8>{}, l, true); }));
        row("gemv DIAG 16 (no norm reduction) pdl", time_graph(L, [&](int l) { layer_gd(U<16>{}, l, true); }));
        row("gemv mode fixed (gemv_m0/m1) pdl", time_graph(L, [&](int l) { layer_gm(l, true); }));
        row("gemv pdl, again", time_graph(L, [&](int l) { layer_gemv(l, true); }));
        row("cgemv 1 pdl", time_graph(L, [&](int l) { layer_cg(U<1>{}, l, true); }));
        row("cgemv 2 pdl", time_graph(L, [&](int l) { layer_cg(U<2>{}, l, true); }));
        row("cgemv 3 pdl", time_graph(L, [&](int l) { layer_cg(U<3>{}, l, true); }));
        row("cgemv 3 plain", time_graph(L, [&](int l) { layer_cg(U<3>{}, l, false); }));
        row("cgemv 3 half pdl", time_graph(L, [&](int l) { layer_cg(U<3>{}, l, true, -1, true); }));
        row("gemv half pdl", time_graph(L, [&](int l) { layer_gemv(l, true, -1, true); }));
        row("sgemv 4 pdl", time_graph(L, [&](int l) { layer_sg(U<4>{}, B<false>{}, B<false>{}, l, true); }));
        row("sgemv 6 pdl", time_graph(L, [&](int l) { layer_sg(U<6>{}, B<false>{}, B<false>{}, l, true); }));
        row("sgemv 6 plain", time_graph(L, [&](int l) { layer_sg(U<6>{}, B<false>{}, B<false>{}, l, false); }));
        row("sgemv 6 pad pdl", time_graph(L, [&](int l) { layer_sg(U<6>{}, B<false>{}, B<false>{}, l, true, true); }));
        row("sgemv dyn 4 pdl", time_graph(L, [&](int l) { layer_sg(U<4>{}, B<false>{}, B<true>{}, l, true); }));
        row("sgemv dyn 6 pdl", time_graph(L, [&](int l) { layer_sg(U<6>{}, B<false>{}, B<true>{}, l, true); }));
        row("sgemv dyn 6 dry pdl", time_graph(L, [&](int l) { layer_sg(U<6>{}, B<true>{}, B<true>{}, l, true); }));
        row("agemv 4 pdl", time_graph(L, [&](int l) { layer_ag(U<4>{}, l, true); }));
        row("agemv 6 pdl", time_graph(L, [&](int l) { layer_ag(U<6>{}, l, true); }));
        row("agemv 8 pdl", time_graph(L, [&](int l) { layer_ag(U<8>{}, l, true); }));
    }
    printf("\n| product alone (16 launches, PDL), µs | MB | read-only | gemv | DIAG 1 | DIAG 2 | DIAG 3 | DIAG 8 | DIAG 16 | mode fixed | "
           "cgemv 3 | cgemv 3 half | gemv half | sgemv 6 | agemv 6 | gemv TB/s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    const char* pn[] = {"QKV", "O", "gate/up", "down"};
    const double mb[] = {QKV * H * 2 / 1e6, H * H * 2 / 1e6, 2.0 * I * H * 2 / 1e6, (double)H * I * 2 / 1e6};
    for (int rep = 0; rep < 2; ++rep)
        for (int j = 0; j < 4; ++j) {
            const double tr = time_graph(L, [&](int l) { layer_rd(l, true, j); }).med;
            const double t0 = time_graph(L, [&](int l) { layer_gemv(l, true, j); }).med;
            const double t1 = time_graph(L, [&](int l) { layer_gd(U<1>{}, l, true, j); }).med;
            const double t2 = time_graph(L, [&](int l) { layer_gd(U<2>{}, l, true, j); }).med;
            const double t3 = time_graph(L, [&](int l) { layer_gd(U<3>{}, l, true, j); }).med;
            const double t8 = time_graph(L, [&](int l) { layer_gd(U<8>{}, l, true, j); }).med;
            const double t16 = time_graph(L, [&](int l) { layer_gd(U<16>{}, l, true, j); }).med;
            const double tm = time_graph(L, [&](int l) { layer_gm(l, true, j); }).med;
            const double t4 = time_graph(L, [&](int l) { layer_cg(U<3>{}, l, true, j); }).med;
            const double t5 = time_graph(L, [&](int l) { layer_cg(U<3>{}, l, true, j, true); }).med;
            const double t6 = time_graph(L, [&](int l) { layer_gemv(l, true, j, true); }).med;
            const double t7 = time_graph(L, [&](int l) { layer_sg(U<6>{}, B<false>{}, B<false>{}, l, true, false, false, j); }).med;
            const double t9 = time_graph(L, [&](int l) { layer_ag(U<6>{}, l, true, j); }).med;
            printf("| %s | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f | %.2f "
                   "|\n",
                   pn[j], mb[j], tr, t0, t1, t2, t3, t8, t16, tm, t4, t5, t6, t7, t9, mb[j] / t0);
        }
    CK(cudaDeviceSynchronize());
    return 0;
}
