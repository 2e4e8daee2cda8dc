// The decode attention kernel as shipped before the long-context rewrite (capture-candle/
// kernels/decode.cu at d258d7d, `attention<E>`), renamed so that bench/attention_probe.cu can
// time it beside the current kernel: attention_base<E>, with its helpers prefixed `ab_`.
// Launch as gpu.rs launched it (see ab_split in the probe): grid (B*nk, T, nsplit), 128
// threads, dynamic shared memory ab_smem(g, dim, elem, tile).
#pragma once
#define AB_THREADS 128

// 8 consecutive elements as floats: decode.cu's Vec8 (this file is included after it), which
// the old kernel used unchanged.
template <typename E> using AbVec8 = Vec8<E>;

// 16 bytes from global to shared memory, asynchronously (cp.async, compute_80 and later).
static __device__ __forceinline__ void ab_cp_async16(void* smem, const void* gmem) {
    u32 sa;
    asm volatile("{ .reg .u64 a; cvta.to.shared.u64 a, %1; cvt.u32.u64 %0, a; }" : "=r"(sa) : "l"(smem));
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(sa), "l"(gmem) : "memory");
}
// Waits for this thread's cp.async copies (a barrier then makes every thread's visible).
static __device__ __forceinline__ void ab_cp_async_wait_all() {
    asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;" ::: "memory");
}

template <typename E>
__device__ void attention_base(const typename E::T* q, const typename E::T* kc, const typename E::T* vc,
                          const u32* pos, u32 T, u32 nq, u32 nk, u32 S, u32 dim, u32 nsplit, u32 max_chunk,
                          u32 tile, float scale, float* part, u32* counters, typename E::T* out) {
    typedef typename E::T Elem;
    extern __shared__ float ab_sm[];
    const u32 g = nq / nk;
    const u32 b = blockIdx.x / nk, kh = blockIdx.x - b * nk, t = blockIdx.y, c = blockIdx.z;
    u32 len = pos[b] + t + 1;
    if (len > S || len < pos[b]) len = S;
    // At least 128 keys a chunk (fewer blocks to combine), at most max_chunk.
    const u32 chunk = min(max_chunk, max(128u, ((len + nsplit - 1) / nsplit + 31) / 32 * 32));
    const u32 ns = (len + chunk - 1) / chunk;  // chunks in the prefix
    const u32 start = c * chunk;
    if (start >= len) return;
    const u32 end = min(start + chunk, len), n = end - start;
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    constexpr u32 PE = 16 / sizeof(Elem);  // elements in 16 bytes
    const u32 rp = dim + PE;               // a staged row's pitch: 16 bytes of padding, no bank conflicts
    float* qs = ab_sm;                        // [g][dim], scaled
    float* os = qs + g * dim;              // [g][dim]: the outputs so far, each a thread's own
    float* sc = os + g * dim;              // [g][tile]: scores, then their exponentials
    Elem* kt = reinterpret_cast<Elem*>(sc + g * tile);  // [tile][rp]
    Elem* vt = kt + (u64)tile * rp;                     // [tile][rp]
    __shared__ float stat[16][3];  // per head: running max, running sum, this tile's rescale
    __shared__ u32 last;
    const u64 kbase = ((u64)b * nk + kh) * S * dim;
    const u32 pieces = dim / PE;
    auto stage = [&](u32 t0, u32 pn) {
        for (u32 i = tid; i < pn * pieces; i += AB_THREADS) {
            const u32 r = i / pieces, p = i - r * pieces;
            const u64 src = kbase + (u64)(start + t0 + r) * dim + p * PE;
            ab_cp_async16(kt + r * rp + p * PE, kc + src);
            ab_cp_async16(vt + r * rp + p * PE, vc + src);
        }
    };
    stage(0, min(tile, n));
    for (u32 x = tid; x < g * dim; x += AB_THREADS) {
        const u32 h = x / dim, d = x - h * dim;
        qs[x] = E::ld(q, (((u64)b * nq + kh * g + h) * T + t) * dim + d) * scale;
    }
    if (tid < 16) {
        stat[tid][0] = -INFINITY;
        stat[tid][1] = 0.f;
    }
    const u32 n_out = g * dim;
    for (u32 o = tid; o < n_out; o += AB_THREADS) os[o] = 0.f;
    for (u32 t0 = 0; t0 < n; t0 += tile) {
        const u32 pn = min(tile, n - t0);
        if (t0 > 0) stage(t0, pn);
        ab_cp_async_wait_all();
        __syncthreads();
        // Scores: one thread per key, its row read 16 bytes at a time, four heads at once
        // (four independent sums); each head reads its query with 16-byte shared loads.
        for (u32 j = tid; j < pn; j += AB_THREADS) {
            const Elem* kr = kt + j * rp;
            for (u32 h0 = 0; h0 < g; h0 += 4) {
                float a[4] = {0.f, 0.f, 0.f, 0.f};
                for (u32 d = 0; d < dim; d += 8) {
                    float k8[8];
                    AbVec8<E>::load(kr, d, k8);
#pragma unroll
                    for (u32 hh = 0; hh < 4; ++hh) {
                        if (h0 + hh < g) {
                            const float* qh = qs + (h0 + hh) * dim + d;
                            const float4 q0 = *reinterpret_cast<const float4*>(qh);
                            const float4 q1 = *reinterpret_cast<const float4*>(qh + 4);
                            a[hh] += q0.x * k8[0] + q0.y * k8[1] + q0.z * k8[2] + q0.w * k8[3] + q1.x * k8[4] +
                                     q1.y * k8[5] + q1.z * k8[6] + q1.w * k8[7];
                        }
                    }
                }
#pragma unroll
                for (u32 hh = 0; hh < 4; ++hh)
                    if (h0 + hh < g) sc[(h0 + hh) * tile + j] = a[hh];
            }
        }
        __syncthreads();
        // Per head: the running max, the tile's exponentials, the running sum, the rescale
        // of what was accumulated before.
        for (u32 h = warp; h < g; h += AB_THREADS / 32) {
            float m = -INFINITY;
            for (u32 j = lane; j < pn; j += 32) m = fmaxf(m, sc[h * tile + j]);
            m = warp_max(m);
            const float mo = stat[h][0], mn = fmaxf(mo, m);
            float l = 0.f;
            for (u32 j = lane; j < pn; j += 32) {
                const float e = __expf(sc[h * tile + j] - mn);
                sc[h * tile + j] = e;
                l += e;
            }
            l = warp_sum(l);
            if (lane == 0) {
                const float r = __expf(mo - mn);
                stat[h][0] = mn;
                stat[h][1] = stat[h][1] * r + l;
                stat[h][2] = r;
            }
        }
        __syncthreads();
        // Values: each thread its outputs (head, dim), over the tile's keys.
        for (u32 o = tid; o < n_out; o += AB_THREADS) {
            const u32 h = o / dim, d = o - h * dim;
            const float* ph = sc + h * tile;
            const Elem* vd = vt + d;
            // Four independent sums over the keys, added at the end.
            float a0 = 0.f, a1 = 0.f, a2 = 0.f, a3 = 0.f;
            u32 j = 0;
            for (; j + 4 <= pn; j += 4) {
                a0 += ph[j] * E::ld(vd, (u64)j * rp);
                a1 += ph[j + 1] * E::ld(vd, (u64)(j + 1) * rp);
                a2 += ph[j + 2] * E::ld(vd, (u64)(j + 2) * rp);
                a3 += ph[j + 3] * E::ld(vd, (u64)(j + 3) * rp);
            }
            for (; j < pn; ++j) a0 += ph[j] * E::ld(vd, (u64)j * rp);
            os[o] = os[o] * stat[h][2] + ((a0 + a1) + (a2 + a3));
        }
        __syncthreads();  // the next tile overwrites the keys, values and scores
    }
    for (u32 o = tid; o < n_out; o += AB_THREADS) {
        const u32 h = o / dim, d = o - h * dim;
        if (ns == 1) {
            // One chunk holds the whole prefix: the result, with no partials to combine.
            E::st(out, (((u64)b * T + t) * nq + kh * g + h) * dim + d, os[o] / stat[h][1]);
        } else {
            float* po = part + ((((u64)b * nq + kh * g + h) * T + t) * nsplit + c) * (dim + 2);
            po[d] = os[o];
            if (d == 0) {
                po[dim] = stat[h][0];
                po[dim + 1] = stat[h][1];
            }
        }
    }
    if (ns == 1) return;
    // The last block of this (b, kh, t) combines every chunk.
    u32* counter = counters + ((u64)b * nk + kh) * T + t;
    __threadfence();
    if (tid == 0) {
        const u32 done = atomicAdd(counter, 1u) + 1;
        last = done == ns;
        if (last) *counter = 0;
    }
    __syncthreads();
    if (!last) return;
    __threadfence();
    for (u32 x = tid; x < g * dim; x += AB_THREADS) {
        const u32 h = x / dim, d = x - h * dim;
        // Other blocks' partials: read past L1 (__ldcg), after their fence and our counter.
        const float* p = part + (((u64)b * nq + kh * g + h) * T + t) * nsplit * (dim + 2);
        float m = -INFINITY;
#pragma unroll 8
        for (u32 s = 0; s < ns; ++s) m = fmaxf(m, __ldcg(p + s * (dim + 2) + dim));
        float num = 0.f, den = 0.f;
#pragma unroll 8
        for (u32 s = 0; s < ns; ++s) {
            const float w = __expf(__ldcg(p + s * (dim + 2) + dim) - m);
            num += w * __ldcg(p + s * (dim + 2) + d);
            den += w * __ldcg(p + s * (dim + 2) + dim + 1);
        }
        E::st(out, (((u64)b * T + t) * nq + kh * g + h) * dim + d, num / den);
    }
}
