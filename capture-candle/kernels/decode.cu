// Capture-ready decode kernels for capture-candle (issue #21, #22).
//
// Every position, length, sampling parameter and random-generator state is read from device
// memory, so a graph captured once replays correctly at every step. No kernel writes outside
// the tensors it is given: a position past the cache is clamped and reported in `overflow`.
//
// Built to PTX by scripts/build-candle-ptx.sh (nvcc, compute_80) and checked in as
// decode.ptx, so building the crate needs no CUDA toolkit. No CUDA headers are included:
// half and bfloat16 values are carried as 16-bit integers and converted here.
//
// Element types: each kernel is instantiated for f32, f16 and bf16 (suffixes _f32, _f16,
// _bf16). Arithmetic is in f32.

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;

struct F32 {
    typedef float T;
    static __device__ __forceinline__ float ld(const float* p, u64 i) { return p[i]; }
    static __device__ __forceinline__ void st(float* p, u64 i, float v) { p[i] = v; }
};

struct BF16 {
    typedef u16 T;
    static __device__ __forceinline__ float ld(const u16* p, u64 i) { return __uint_as_float(((u32)p[i]) << 16); }
    static __device__ __forceinline__ void st(u16* p, u64 i, float v) {
        u32 x = __float_as_uint(v);
        if ((x & 0x7fffffffu) > 0x7f800000u) { p[i] = 0x7fc0; return; } // NaN
        x += 0x7fffu + ((x >> 16) & 1u); // round to nearest even
        p[i] = (u16)(x >> 16);
    }
};

struct F16 {
    typedef u16 T;
    static __device__ __forceinline__ float ld(const u16* p, u64 i) {
        float f;
        asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(p[i]));
        return f;
    }
    static __device__ __forceinline__ void st(u16* p, u64 i, float v) {
        u16 h;
        asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v));
        p[i] = h;
    }
};

static __device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static __device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// ---------------------------------------------------------------------------------------
// Rotary embedding at device positions, fused with the KV-cache write.
//
// src: rows of `stride` elements, one per token (b, t), row b*T + t; each row holds nq query
// heads, then nk key heads, then nv value heads of `dim` elements (a fused QKV projection),
// starting at element `col0` of the row. bias (optional, same type, length (nq+nk+nv)*dim)
// is added first. table: f32 [S, dim], cos in columns [0, dim/2) and sin in [dim/2, dim).
// pos[b]: the position of token t = 0 of row b. Query heads are roped into q_out
// [B, nq, T, dim]; key heads roped and value heads copied into the caches [B, nk, S, dim] at
// position pos[b] + t. A position >= S writes no cache slot and sets overflow[b] = 1 (the
// query is roped at S - 1). Rows whose active[b] is 0 (when active is given) write nothing
// to the caches. interleaved = 0: candle's `rope` (pairs i, i + dim/2); 1: `rope_i`
// (pairs 2i, 2i + 1).
//
// Grid: (B*T, nq + nk + nv); block: dim/2 threads.
template <typename E>
__device__ void rope_write(const typename E::T* src, u32 stride, u32 col0, const typename E::T* bias,
                           const float* table, const u32* pos, const u32* active, u32 T, u32 dim,
                           u32 nq, u32 nk, u32 nv, u32 S, u32 interleaved, typename E::T* q_out,
                           typename E::T* k_cache, typename E::T* v_cache, u32* overflow) {
    const u32 row = blockIdx.x, head = blockIdx.y, i = threadIdx.x, half = dim / 2;
    if (i >= half) return;
    const u32 b = row / T, t = row - b * T;
    const u32 p = pos[b] + t;
    const bool over = p >= S;
    if (over && i == 0 && head == 0) overflow[b] = 1;
    const u32 pc = over ? S - 1 : p;
    const u64 base = (u64)row * stride + col0 + (u64)head * dim;
    const u32 i1 = interleaved ? 2 * i : i;
    const u32 i2 = interleaved ? 2 * i + 1 : i + half;
    float x1 = E::ld(src, base + i1), x2 = E::ld(src, base + i2);
    if (bias) {
        x1 += E::ld(bias, (u64)head * dim + i1);
        x2 += E::ld(bias, (u64)head * dim + i2);
    }
    if (head < nq + nk) {
        const float c = table[(u64)pc * dim + i], s = table[(u64)pc * dim + half + i];
        const float y1 = x1 * c - x2 * s, y2 = x1 * s + x2 * c;
        x1 = y1;
        x2 = y2;
    }
    if (head < nq) {
        const u64 o = (((u64)b * nq + head) * T + t) * dim;
        E::st(q_out, o + i1, x1);
        E::st(q_out, o + i2, x2);
        return;
    }
    if (over || (active && active[b] == 0)) return;
    const bool is_k = head < nq + nk;
    const u32 h = is_k ? head - nq : head - nq - nk;
    const u32 nh = is_k ? nk : nv;
    typename E::T* cache = is_k ? k_cache : v_cache;
    const u64 o = (((u64)b * nh + h) * S + p) * dim;
    E::st(cache, o + i1, x1);
    E::st(cache, o + i2, x2);
}

// ---------------------------------------------------------------------------------------
// Decode attention over each sequence's valid prefix, split across the sequence.
//
// q [B, nq, T, dim]; caches [B, nk, S, dim]; query t of row b sees keys 0 ..= pos[b] + t
// (at most S). The keys are cut into chunks of `chunk`; block (b*nk + kh, t, c) handles chunk
// c for the nq/nk query heads that share key head kh, and writes for each its partial
// result to part [B, nq, T, nsplit, dim + 2]: the unnormalised output, then the chunk's
// maximum score and its sum of exponentials. A chunk past the prefix returns at once, so the
// work grows with the position, not with S. Block: 128 threads; dynamic shared memory
// (g*dim + g*chunk) floats, g = nq/nk.
template <typename E>
__device__ void attn_partial(const typename E::T* q, const typename E::T* kc, const typename E::T* vc,
                             const u32* pos, u32 T, u32 nq, u32 nk, u32 S, u32 dim, u32 chunk,
                             u32 nsplit, float scale, float* part) {
    extern __shared__ float sm[];
    const u32 g = nq / nk;
    const u32 b = blockIdx.x / nk, kh = blockIdx.x - b * nk, t = blockIdx.y, c = blockIdx.z;
    u32 len = pos[b] + t + 1;
    if (len > S || len < pos[b]) len = S;
    const u32 start = c * chunk;
    if (start >= len) return;
    const u32 end = min(start + chunk, len), n = end - start;
    float* qs = sm;             // [g][dim]
    float* sc = sm + g * dim;   // [g][chunk]
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32, nwarps = blockDim.x / 32;
    for (u32 x = tid; x < g * dim; x += blockDim.x) {
        const u32 h = x / dim, d = x - h * dim;
        qs[x] = E::ld(q, (((u64)b * nq + kh * g + h) * T + t) * dim + d) * scale;
    }
    __syncthreads();
    const u64 kbase = ((u64)b * nk + kh) * S * dim;
    for (u32 j = warp; j < n; j += nwarps) {
        const u64 krow = kbase + (u64)(start + j) * dim;
        float acc[16];
#pragma unroll
        for (u32 h = 0; h < 16; ++h) acc[h] = 0.f;
        for (u32 d = lane; d < dim; d += 32) {
            const float k = E::ld(kc, krow + d);
#pragma unroll
            for (u32 h = 0; h < 16; ++h)
                if (h < g) acc[h] += qs[h * dim + d] * k;
        }
#pragma unroll
        for (u32 h = 0; h < 16; ++h) {
            if (h < g) {
                const float s = warp_sum(acc[h]);
                if (lane == 0) sc[h * chunk + j] = s;
            }
        }
    }
    __syncthreads();
    // Per head: the chunk's maximum, the exponentials, their sum.
    __shared__ float stat[16][2];
    for (u32 h = warp; h < g; h += nwarps) {
        float m = -INFINITY;
        for (u32 j = lane; j < n; j += 32) m = fmaxf(m, sc[h * chunk + j]);
        m = warp_max(m);
        float l = 0.f;
        for (u32 j = lane; j < n; j += 32) {
            const float e = __expf(sc[h * chunk + j] - m);
            sc[h * chunk + j] = e;
            l += e;
        }
        l = warp_sum(l);
        if (lane == 0) {
            stat[h][0] = m;
            stat[h][1] = l;
        }
    }
    __syncthreads();
    for (u32 x = tid; x < g * dim; x += blockDim.x) {
        const u32 h = x / dim, d = x - h * dim;
        float acc = 0.f;
        const u64 vrow = kbase + (u64)start * dim + d;
        for (u32 j = 0; j < n; ++j) acc += sc[h * chunk + j] * E::ld(vc, vrow + (u64)j * dim);
        float* o = part + ((((u64)b * nq + kh * g + h) * T + t) * nsplit + c) * (dim + 2);
        o[d] = acc;
        if (d == 0) {
            o[dim] = stat[h][0];
            o[dim + 1] = stat[h][1];
        }
    }
}

// Combines the partial results of attn_partial into out [B, T, nq*dim] (ready for the output
// projection). Grid: (B*nq, T); block: dim threads.
template <typename E>
__device__ void attn_combine(const float* part, const u32* pos, u32 T, u32 nq, u32 S, u32 dim, u32 chunk,
                             u32 nsplit, typename E::T* out) {
    const u32 b = blockIdx.x / nq, h = blockIdx.x - b * nq, t = blockIdx.y, d = threadIdx.x;
    if (d >= dim) return;
    u32 len = pos[b] + t + 1;
    if (len > S || len < pos[b]) len = S;
    const u32 ns = (len + chunk - 1) / chunk;
    const float* p = part + (((u64)b * nq + h) * T + t) * nsplit * (dim + 2);
    float m = -INFINITY;
    for (u32 c = 0; c < ns; ++c) m = fmaxf(m, p[c * (dim + 2) + dim]);
    float num = 0.f, den = 0.f;
    for (u32 c = 0; c < ns; ++c) {
        const float w = __expf(p[c * (dim + 2) + dim] - m);
        num += w * p[c * (dim + 2) + d];
        den += w * p[c * (dim + 2) + dim + 1];
    }
    E::st(out, (((u64)b * T + t) * nq + h) * dim + d, num / den);
}

// ---------------------------------------------------------------------------------------
// RMSNorm with the residual add: sum = x + delta (when delta is given, else x), written to
// sum_out (when given); y = sum / rms(sum) * w. The sum is rounded to the element type
// before it is normalised, as an add followed by a norm would. One block per row.
template <typename E>
__device__ void add_rms_norm(const typename E::T* x, const typename E::T* delta, const typename E::T* w,
                             u32 cols, float eps, typename E::T* sum_out, typename E::T* y) {
    __shared__ float red[32];
    const u64 row = blockIdx.x;
    const u32 tid = threadIdx.x;
    float ss = 0.f;
    for (u32 c = tid; c < cols; c += blockDim.x) {
        float v = E::ld(x, row * cols + c);
        if (delta) {
            v += E::ld(delta, row * cols + c);
            E::st(sum_out, row * cols + c, v);
            v = E::ld(sum_out, row * cols + c);
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
        const float v = E::ld(delta ? sum_out : x, row * cols + c);
        E::st(y, row * cols + c, v * inv * E::ld(w, c));
    }
}

// SwiGLU: out [N, I] = silu(in[:, :I]) * in[:, I:], in [N, 2I] (a fused gate/up projection).
template <typename E>
__device__ void silu_mul(const typename E::T* in, u32 inter, u64 n, typename E::T* out) {
    for (u64 x = (u64)blockIdx.x * blockDim.x + threadIdx.x; x < n; x += (u64)gridDim.x * blockDim.x) {
        const u64 r = x / inter, c = x - r * inter;
        const float g = E::ld(in, r * 2 * inter + c), u = E::ld(in, r * 2 * inter + inter + c);
        E::st(out, x, g / (1.f + __expf(-g)) * u);
    }
}

// ---------------------------------------------------------------------------------------
// Sampling, one block of 1024 threads per row of logits [B, V].
//
// params [B, 3] f32: temperature, top_p, top_k. temperature <= 0 is greedy (the first
// largest logit; NaN counts as -inf). Otherwise the logits are divided by the temperature,
// the top_k largest are kept (0: all), then the fewest largest whose probability adds up to
// top_p (>= 1: all), and one is drawn. Probabilities are fixed-point integers
// (exp(x - max) * 2^24): every sum is exact and order-free, so the draw is the same on every
// run; a token less likely than 2^-24 times the most likely one is never drawn.
//
// rng [B, 4] u32: seed (low, high) and counter (low, high). The draw is a hash of seed and
// counter; the counter then advances by one, in device memory, so each replay draws anew
// and a replayed sequence equals an eager one with the same seed.
//
// The token is written to tokens[b] (the next step's input) and pos[b] advances by
// `advance`. Rows whose active[b] is 0 change nothing.
static __device__ __forceinline__ u64 mix64(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static __device__ __forceinline__ u32 key_of(float f) {
    if (f != f) f = -INFINITY;
    const u32 u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

template <typename E>
__device__ void sample(const typename E::T* logits, u32 V, const float* params, u32* rng, u32* tokens,
                       u32* pos, const u32* active, u32 advance) {
    const u32 b = blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
    if (active && active[b] == 0) return;
    const typename E::T* x = logits + (u64)b * V;
    const float temp = params[b * 3 + 0], top_p = params[b * 3 + 1];
    const u32 top_k = (u32)params[b * 3 + 2];
    __shared__ u32 skey[32];
    __shared__ u32 sidx[32];
    __shared__ unsigned long long hist[256];
    __shared__ u32 chosen;
    __shared__ unsigned long long remaining;
    // Greedy part: the largest key and its first index.
    u32 best = 0, besti = 0xffffffffu;
    for (u32 i = tid; i < V; i += nt) {
        const u32 k = key_of(E::ld(x, i));
        if (k > best || (k == best && i < besti)) { best = k; besti = i; }
    }
    for (int o = 16; o > 0; o >>= 1) {
        const u32 k2 = __shfl_xor_sync(0xffffffffu, best, o), i2 = __shfl_xor_sync(0xffffffffu, besti, o);
        if (k2 > best || (k2 == best && i2 < besti)) { best = k2; besti = i2; }
    }
    if (tid % 32 == 0) { skey[tid / 32] = best; sidx[tid / 32] = besti; }
    __syncthreads();
    if (tid < 32) {
        best = tid < nt / 32 ? skey[tid] : 0;
        besti = tid < nt / 32 ? sidx[tid] : 0xffffffffu;
        for (int o = 16; o > 0; o >>= 1) {
            const u32 k2 = __shfl_xor_sync(0xffffffffu, best, o), i2 = __shfl_xor_sync(0xffffffffu, besti, o);
            if (k2 > best || (k2 == best && i2 < besti)) { best = k2; besti = i2; }
        }
        if (tid == 0) { skey[0] = best; sidx[0] = besti; }
    }
    __syncthreads();
    const u32 maxkey = skey[0], argmax = sidx[0] < V ? sidx[0] : 0;
    // A key back to its float, to get the maximum logit.
    const u32 mu = (maxkey & 0x80000000u) ? (maxkey & 0x7fffffffu) : ~maxkey;
    const float xmax = __uint_as_float(mu);
    const bool greedy = !(temp > 0.f) || !(xmax > -INFINITY) || top_k == 1;
    u32 token = argmax;
    if (!greedy) {
        const float inv_t = 1.f / temp;
        // Keys of the scaled logits order like the logits themselves (temp > 0).
        // top_k: the k-th largest key, by radix selection (8 bits a pass).
        u32 kmin = 0;
        if (top_k > 0 && top_k < V) {
            u32 prefix = 0, mask = 0;
            if (tid == 0) remaining = top_k;
            for (int shift = 24; shift >= 0; shift -= 8) {
                for (u32 j = tid; j < 256; j += nt) hist[j] = 0;
                __syncthreads();
                for (u32 i = tid; i < V; i += nt) {
                    const u32 k = key_of(E::ld(x, i));
                    if ((k & mask) == prefix) atomicAdd(&hist[(k >> shift) & 255u], 1ull);
                }
                __syncthreads();
                if (tid == 0) {
                    u32 bin = 255;
                    for (;; --bin) {
                        if (hist[bin] >= remaining || bin == 0) break;
                        remaining -= hist[bin];
                    }
                    chosen = bin;
                }
                __syncthreads();
                prefix |= chosen << shift;
                mask |= 255u << shift;
                __syncthreads();
            }
            kmin = prefix;
        }
        // Fixed-point weights of the kept logits.
        // w(i) = exp((x_i - xmax) / temp) * 2^24, 0 below kmin.
        u64 total = 0;
        for (u32 i = tid; i < V; i += nt) {
            const float v = E::ld(x, i);
            if (key_of(v) >= kmin) total += (u64)(expf((v - xmax) * inv_t) * 16777216.f);
        }
        for (int o = 16; o > 0; o >>= 1) total += __shfl_xor_sync(0xffffffffu, total, o);
        if (tid == 0) hist[0] = 0;
        __syncthreads();
        if (tid % 32 == 0) atomicAdd(&hist[0], (unsigned long long)total);
        __syncthreads();
        total = hist[0];
        __syncthreads();
        // top_p: the largest key whose keys at or above it weigh at least top_p of the total.
        u32 pmin = 0;
        if (top_p < 1.f && top_p > 0.f && total > 0) {
            u64 target = (u64)ceil((double)top_p * (double)total);
            if (target < 1) target = 1;
            u32 prefix = 0, mask = 0;
            if (tid == 0) remaining = target;
            for (int shift = 24; shift >= 0; shift -= 8) {
                for (u32 j = tid; j < 256; j += nt) hist[j] = 0;
                __syncthreads();
                for (u32 i = tid; i < V; i += nt) {
                    const float v = E::ld(x, i);
                    const u32 k = key_of(v);
                    if (k >= kmin && (k & mask) == prefix) {
                        const u64 w = (u64)(expf((v - xmax) * inv_t) * 16777216.f);
                        if (w) atomicAdd(&hist[(k >> shift) & 255u], (unsigned long long)w);
                    }
                }
                __syncthreads();
                if (tid == 0) {
                    u32 bin = 255;
                    for (;; --bin) {
                        if (hist[bin] >= remaining || bin == 0) break;
                        remaining -= hist[bin];
                    }
                    chosen = bin;
                }
                __syncthreads();
                prefix |= chosen << shift;
                mask |= 255u << shift;
                __syncthreads();
            }
            pmin = prefix;
        }
        const u32 keep = kmin > pmin ? kmin : pmin;
        // The kept weights in index order: each thread sums a contiguous range.
        const u32 per = (V + nt - 1) / nt, lo = min(tid * per, V), hi = min(lo + per, V);
        u64 mine = 0;
        for (u32 i = lo; i < hi; ++i) {
            const float v = E::ld(x, i);
            if (key_of(v) >= keep) mine += (u64)(expf((v - xmax) * inv_t) * 16777216.f);
        }
        // Inclusive scan over the block (warp scans, then warp totals).
        u64 inc = mine;
        for (int o = 1; o < 32; o <<= 1) {
            const u64 n = __shfl_up_sync(0xffffffffu, inc, o);
            if ((int)(tid % 32) >= o) inc += n;
        }
        if (tid % 32 == 31) hist[tid / 32] = inc;
        __syncthreads();
        if (tid == 0) {
            u64 run = 0;
            for (u32 w = 0; w < nt / 32; ++w) {
                const u64 s = hist[w];
                hist[w] = run;
                run += s;
            }
            hist[32] = run;
            chosen = argmax;
        }
        __syncthreads();
        const u64 excl = inc - mine + hist[tid / 32], kept = hist[32];
        if (kept > 0) {
            const u64 c0 = ((u64)rng[b * 4 + 2]) | ((u64)rng[b * 4 + 3] << 32);
            const u64 seed = ((u64)rng[b * 4 + 0]) | ((u64)rng[b * 4 + 1] << 32);
            // A uniform draw in [0, 1) scaled by the kept weight: a small difference in the
            // weights moves the point a little, not to an unrelated token.
            const double u = (double)(mix64(seed ^ mix64(c0 + 0x9e3779b97f4a7c15ull)) >> 11) * 0x1.0p-53;
            u64 r = (u64)(u * (double)kept);
            if (r >= kept) r = kept - 1;
            if (r >= excl && r < excl + mine) {
                u64 run = excl;
                for (u32 i = lo; i < hi; ++i) {
                    const float v = E::ld(x, i);
                    if (key_of(v) < keep) continue;
                    run += (u64)(expf((v - xmax) * inv_t) * 16777216.f);
                    if (r < run) { chosen = i; break; }
                }
            }
        }
        __syncthreads();
        token = chosen;
        if (tid == 0) {
            const u64 c1 = (((u64)rng[b * 4 + 2]) | ((u64)rng[b * 4 + 3] << 32)) + 1;
            rng[b * 4 + 2] = (u32)c1;
            rng[b * 4 + 3] = (u32)(c1 >> 32);
        }
    }
    if (tid == 0) {
        tokens[b] = token;
        pos[b] += advance;
    }
}

// ---------------------------------------------------------------------------------------
#define INSTANTIATE(E, SUF)                                                                               \
    extern "C" __global__ void rope_write_##SUF(                                                          \
        const E::T* src, u32 stride, u32 col0, const E::T* bias, const float* table, const u32* pos,      \
        const u32* active, u32 T, u32 dim, u32 nq, u32 nk, u32 nv, u32 S, u32 interleaved, E::T* q_out,   \
        E::T* k_cache, E::T* v_cache, u32* overflow) {                                                    \
        rope_write<E>(src, stride, col0, bias, table, pos, active, T, dim, nq, nk, nv, S, interleaved,    \
                      q_out, k_cache, v_cache, overflow);                                                 \
    }                                                                                                     \
    extern "C" __global__ void attn_partial_##SUF(const E::T* q, const E::T* kc, const E::T* vc,          \
                                                 const u32* pos, u32 T, u32 nq, u32 nk, u32 S, u32 dim,   \
                                                 u32 chunk, u32 nsplit, float scale, float* part) {       \
        attn_partial<E>(q, kc, vc, pos, T, nq, nk, S, dim, chunk, nsplit, scale, part);                   \
    }                                                                                                     \
    extern "C" __global__ void attn_combine_##SUF(const float* part, const u32* pos, u32 T, u32 nq,       \
                                                 u32 S, u32 dim, u32 chunk, u32 nsplit, E::T* out) {      \
        attn_combine<E>(part, pos, T, nq, S, dim, chunk, nsplit, out);                                    \
    }                                                                                                     \
    extern "C" __global__ void add_rms_norm_##SUF(const E::T* x, const E::T* delta, const E::T* w,        \
                                                 u32 cols, float eps, E::T* sum_out, E::T* y) {           \
        add_rms_norm<E>(x, delta, w, cols, eps, sum_out, y);                                              \
    }                                                                                                     \
    extern "C" __global__ void silu_mul_##SUF(const E::T* in, u32 inter, u64 n, E::T* out) {              \
        silu_mul<E>(in, inter, n, out);                                                                   \
    }                                                                                                     \
    extern "C" __global__ void sample_##SUF(const E::T* logits, u32 V, const float* params, u32* rng,     \
                                           u32* tokens, u32* pos, const u32* active, u32 advance) {       \
        sample<E>(logits, V, params, rng, tokens, pos, active, advance);                                  \
    }

INSTANTIATE(F32, f32)
INSTANTIATE(F16, f16)
INSTANTIATE(BF16, bf16)
