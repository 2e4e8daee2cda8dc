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

// A float as an unsigned key that orders like the float (NaN as -inf).
static __device__ __forceinline__ u32 key_of(float f) {
    if (f != f) f = -INFINITY;
    const u32 u = __float_as_uint(f);
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
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
// Decode attention over each sequence's valid prefix, split across the sequence, in one
// kernel (issue #32: long contexts).
//
// q [B, nq, T, dim]; caches [B, nk, S, dim]; query t of row b sees keys 0 ..= pos[b] + t (at
// most S). The g = nq/nk query heads of a key head are taken ATT_HEADS (4) at a time, in
// nhg = ceil(g/4) head groups. Block (x = (b*nk + kh)*nhg + hg, t, c) handles chunk c of the
// prefix for head group hg of key head kh (the head groups of one key head are neighbours in
// x: they run together, and the second reads the keys and values from L2). The chunk length
// is computed on the device from the prefix length: ceil(len / nsplit) rounded up to a
// multiple of 64, at least min_chunk, at most max_chunk (which the host makes at least
// ceil(S / nsplit)); a chunk past the prefix returns at once, so the work grows with the
// position, not with S.
//
// Inside a block each warp takes groups of GK keys (16; 8 where a group would take too many
// registers) in turn (warp w: groups w, w + NW, ...) and keeps its own running softmax, so the
// main loop has no block barrier. A group's keys and values (rows that follow one another in
// the cache) go from global memory straight into registers, 16-byte loads that skip L1; with
// PF the next group's loads are issued before the current group is computed.
// - Scores, 16-bit types (MMA): tensor-core mma.sync m16n8k16, keys x dims times dims x heads
//   with f32 accumulation. The product of two 16-bit values is exact in f32, so these are f32
//   dot products of the stored values; the scale is applied to them in f32. Lane (r, c) of
//   a warp (r = lane/4, c = lane%4) loads dims 8c .. 8c+7 of each 32 of keys r and r + 8,
//   which are its A fragment as they are: the dims are taken in another order within each
//   32, the same for the queries (B fragment), which leaves the dot products as they are.
//   f32 (no MMA): the same lanes on CUDA cores, the 4 lanes of a key summing their parts.
// - Softmax: per head, the group's largest score across the warp, the running max, the
//   probabilities (base 2: the scale carries log2(e)) into the warp's [GK][4] in shared
//   memory, and each lane's running sum of its own probabilities.
// - Values: lane (j, p) takes dims 8p .. 8p+7 of keys j, j + KPW, ... (KPW = 256/DP keys a
//   round), in f32 for the 4 heads: 32 FMAs a 16-byte load.
// At the end the warps' running softmaxes are merged through shared memory. When one chunk
// holds the whole prefix the block writes its heads' results directly; otherwise it writes a
// partial result per head to part [B, nq, T, nsplit, dim + 4] (the unnormalised output, then
// the chunk's largest score (base 2) and its sum of exponentials), and the block that
// finishes last of a (b, kh, t)'s nhg * ns blocks (counted in counters [B*nk*T], which it
// sets back to 0) combines them, for all g heads, into out [B, T, nq*dim].
// dim: a multiple of 8, at most DP (64, 128 or 256: entry points attention_d64_<type>,
// attention_d128_<type>, attention_d256_<type>); g at most 16; nsplit at most
// ATT_MAX_SPLITS. No dynamic shared memory. Block: ATT_WARPS warps.
#define ATT_WARPS 4
#define ATT_HEADS 4
#define ATT_MAX_SPLITS 64

// 8 consecutive elements as floats (16-bit types: one 16-byte load; f32: two).
template <typename E> struct Vec8;
template <> struct Vec8<F32> {
    static __device__ __forceinline__ void load(const float* p, u64 i, float* o) {
        const float4 a = *reinterpret_cast<const float4*>(p + i), b = *reinterpret_cast<const float4*>(p + i + 4);
        o[0] = a.x; o[1] = a.y; o[2] = a.z; o[3] = a.w; o[4] = b.x; o[5] = b.y; o[6] = b.z; o[7] = b.w;
    }
};
template <typename E> struct Vec8Half {
    static __device__ __forceinline__ void load(const u16* p, u64 i, float* o) {
        const uint4 v = *reinterpret_cast<const uint4*>(p + i);
        const u16* h = reinterpret_cast<const u16*>(&v);
#pragma unroll
        for (int k = 0; k < 8; ++k) o[k] = E::ld(h, k);
    }
};
template <> struct Vec8<BF16> : Vec8Half<BF16> {};
template <> struct Vec8<F16> : Vec8Half<F16> {};

// 16 bytes from global memory, read once (past L1, with a 256-byte L2 prefetch), or zeros
// where !ok (no access).
static __device__ __forceinline__ uint4 att_ld16(const void* p, bool ok) {
    uint4 v;
    asm("{\n\t.reg .pred q;\n\tsetp.ne.u32 q, %5, 0;\n\t"
        "mov.b32 %0, 0;\n\tmov.b32 %1, 0;\n\tmov.b32 %2, 0;\n\tmov.b32 %3, 0;\n\t"
        "@q ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];\n\t}"
        : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
        : "l"(p), "r"((u32)ok));
    return v;
}
static __device__ __forceinline__ float att_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}
static __device__ __forceinline__ u32 att_word(const uint4& x, u32 i) {
    return i == 0 ? x.x : i == 1 ? x.y : i == 2 ? x.z : x.w;
}

// 8 consecutive elements of a row as loaded (16-bit types: one 16-byte word; f32: two).
template <typename E> struct AttRaw;
template <> struct AttRaw<BF16> {
    struct V { uint4 a; };
    static __device__ __forceinline__ V load(const u16* p, bool ok) { return V{att_ld16(p, ok)}; }
    static __device__ __forceinline__ void to_f(const V& x, float* o) {
#pragma unroll
        for (u32 k = 0; k < 4; ++k) {
            const u32 w = att_word(x.a, k);
            o[2 * k] = __uint_as_float(w << 16);
            o[2 * k + 1] = __uint_as_float(w & 0xffff0000u);
        }
    }
};
template <> struct AttRaw<F16> {
    struct V { uint4 a; };
    static __device__ __forceinline__ V load(const u16* p, bool ok) { return V{att_ld16(p, ok)}; }
    static __device__ __forceinline__ void to_f(const V& x, float* o) {
#pragma unroll
        for (u32 k = 0; k < 4; ++k) {
            const u32 w = att_word(x.a, k);
            asm("cvt.f32.f16 %0, %1;" : "=f"(o[2 * k]) : "h"((u16)(w & 0xffffu)));
            asm("cvt.f32.f16 %0, %1;" : "=f"(o[2 * k + 1]) : "h"((u16)(w >> 16)));
        }
    }
};
template <> struct AttRaw<F32> {
    struct V { uint4 a, b; };
    static __device__ __forceinline__ V load(const float* p, bool ok) { return V{att_ld16(p, ok), att_ld16(p + 4, ok)}; }
    static __device__ __forceinline__ void to_f(const V& x, float* o) {
#pragma unroll
        for (u32 k = 0; k < 4; ++k) {
            o[k] = __uint_as_float(att_word(x.a, k));
            o[4 + k] = __uint_as_float(att_word(x.b, k));
        }
    }
};

// d += a (16 x 16, row-major) . b (16 x 8, column-major), f32 accumulation (compute_80).
template <typename E> struct AttMma {
    static __device__ __forceinline__ void run(float* d, const u32* a, u32 b0, u32 b1) {}  // f32: not used
};
template <> struct AttMma<BF16> {
    static __device__ __forceinline__ void run(float* d, const u32* a, u32 b0, u32 b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};
template <> struct AttMma<F16> {
    static __device__ __forceinline__ void run(float* d, const u32* a, u32 b0, u32 b1) {
        asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
            "{%0,%1,%2,%3};"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
    }
};

template <typename E, u32 DP, u32 GK, u32 NW, bool MMA, bool PF>
__device__ void attention(const typename E::T* q, const typename E::T* kc, const typename E::T* vc,
                          const u32* pos, u32 T, u32 nq, u32 nk, u32 S, u32 dim, u32 nsplit, u32 max_chunk,
                          u32 min_chunk, float scale, float* part, u32* counters, typename E::T* out) {
    typedef typename E::T Elem;
    typedef AttRaw<E> R;
    constexpr u32 H = ATT_HEADS, NT = NW * 32;
    constexpr u32 NU = DP / 32;    // a row in slices of 32 dims (4 score lanes x 8)
    constexpr u32 LPK = DP / 8;    // value lanes a key
    constexpr u32 KPW = 32 / LPK;  // value keys a round
    constexpr u32 NR = GK / KPW;   // value rounds a group
    static_assert(DP == 64 || DP == 128 || DP == 256, "DP: 64, 128 or 256");
    static_assert(GK == 8 || GK == 16, "GK: 8 or 16");
    static_assert(!MMA || sizeof(Elem) == 2, "the tensor-core scores take 16-bit types");
    __shared__ __align__(16) float att_p[NW][GK][H];     // a group's probabilities, key-major
    __shared__ __align__(16) float att_a[NW][H];         // a group's rescale of what came before
    __shared__ __align__(16) float att_o[NW][H][DP];     // the warps' outputs
    __shared__ float att_m[NW][H], att_l[NW][H];          // the warps' max and sum
    __shared__ __align__(16) float att_q[MMA ? 1 : H][DP];  // the queries (CUDA-core scores)
    __shared__ float att_w[16][ATT_MAX_SPLITS];            // the combine's weight of each chunk
    __shared__ u32 att_last;

    const u32 g = nq / nk, nhg = (g + H - 1) / H;
    const u32 bk = blockIdx.x / nhg, hg = blockIdx.x - bk * nhg;
    const u32 b = bk / nk, kh = bk - b * nk, t = blockIdx.y, c = blockIdx.z;
    const u32 h0 = hg * H, gh = min(H, g - h0);  // this block's heads: h0 .. h0 + gh - 1
    u32 len = pos[b] + t + 1;
    if (len > S || len < pos[b]) len = S;
    const u32 per = (len + nsplit - 1) / nsplit;
    const u32 chunk = min(max_chunk, max(min_chunk, (per + 63) / 64 * 64));
    const u32 ns = (len + chunk - 1) / chunk;  // chunks in the prefix
    const u32 start = c * chunk;
    if (start >= len) return;
    const u32 end = min(start + chunk, len), n = end - start;
    const u32 tid = threadIdx.x, w = tid / 32, lane = tid % 32;
    const u32 r = lane / 4, cq = lane % 4;      // score lanes: keys r and r + 8, dims 8cq.. of each 32
    const u32 j = lane / LPK, pv = lane % LPK;  // value lanes: keys j + KPW*i, dims 8pv ..
    const u64 kvbase = ((u64)b * nk + kh) * S * dim;
    const Elem* kp = kc + kvbase;
    const Elem* vp = vc + kvbase;
    const u64 qrow = ((u64)b * nq + kh * g + h0) * T + t;  // q row of head h0 (head h0 + h: + h*T)
    const float sc2 = scale * 1.4426950408889634f;        // scores in base 2

    // The queries: B fragments (MMA, zero for heads past gh and dims past dim), or f32 in
    // shared memory.
    u32 qb[NU][2][2];
    if constexpr (MMA) {
#pragma unroll
        for (u32 u = 0; u < NU; ++u) {
            const u32 vi = 4 * u + cq;
            const uint4 x = att_ld16(q + (qrow + (u64)r * T) * dim + vi * 8, r < gh && vi * 8 < dim);
            qb[u][0][0] = x.x;
            qb[u][0][1] = x.y;
            qb[u][1][0] = x.z;
            qb[u][1][1] = x.w;
        }
    } else {
        for (u32 x = tid; x < H * DP; x += NT) {
            const u32 h = x / DP, d = x - h * DP;
            att_q[h][d] = h < gh && d < dim ? E::ld(q, (qrow + (u64)h * T) * dim + d) : 0.f;
        }
        __syncthreads();
    }

    struct Grp {
        typename R::V k0[NU], k1[GK == 16 ? NU : 1], v[NR];
    };
    // A group's keys (score lanes) and values (value lanes); zeros past the chunk's end.
    auto load = [&](Grp& G, u32 gi) {
        const u32 key0 = start + gi * GK;
#pragma unroll
        for (u32 u = 0; u < NU; ++u) {
            const u32 vi = 4 * u + cq;
            const bool dok = vi * 8 < dim;
            G.k0[u] = R::load(kp + (u64)(key0 + r) * dim + vi * 8, dok && key0 + r < end);
            if (GK == 16) G.k1[u] = R::load(kp + (u64)(key0 + r + 8) * dim + vi * 8, dok && key0 + r + 8 < end);
        }
#pragma unroll
        for (u32 i = 0; i < NR; ++i) {
            const u32 key = key0 + i * KPW + j;
            G.v[i] = R::load(vp + (u64)key * dim + pv * 8, pv * 8 < dim && key < end);
        }
    };

    float acc[H][8];
#pragma unroll
    for (u32 h = 0; h < H; ++h)
#pragma unroll
        for (u32 e = 0; e < 8; ++e) acc[h][e] = 0.f;
    // Running max and sum of heads 2cq and 2cq + 1 (lanes cq < 2; the others hold heads past 4).
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const u32 ngroups = (n + GK - 1) / GK;
    const bool hok0 = 2 * cq < gh, hok1 = 2 * cq + 1 < gh;
    Grp G;
    if (PF && w < ngroups) load(G, w);
    for (u32 gi = w; gi < ngroups; gi += NW) {
        Grp N;
        if (PF) load(N, gi + NW);  // past the chunk: no access
        else load(G, gi);
        const u32 key0 = start + gi * GK;
        // Scores s: keys r, r + 8 (s[0..1], s[2..3]) x heads 2cq, 2cq + 1.
        float s[4] = {0.f, 0.f, 0.f, 0.f};
        if constexpr (MMA) {
#pragma unroll
            for (u32 u = 0; u < NU; ++u)
#pragma unroll
                for (u32 st = 0; st < 2; ++st) {
                    u32 a[4];
                    a[0] = att_word(G.k0[u].a, 2 * st);
                    a[2] = att_word(G.k0[u].a, 2 * st + 1);
                    a[1] = GK == 16 ? att_word(G.k1[GK == 16 ? u : 0].a, 2 * st) : 0u;
                    a[3] = GK == 16 ? att_word(G.k1[GK == 16 ? u : 0].a, 2 * st + 1) : 0u;
                    AttMma<E>::run(s, a, qb[u][st][0], qb[u][st][1]);
                }
        } else {
            float pa[2][H];
#pragma unroll
            for (u32 h = 0; h < H; ++h) pa[0][h] = pa[1][h] = 0.f;
#pragma unroll
            for (u32 u = 0; u < NU; ++u) {
                const u32 vi = 4 * u + cq;
                float k0[8], k1[8];
                R::to_f(G.k0[u], k0);
                if (GK == 16) R::to_f(G.k1[GK == 16 ? u : 0], k1);
#pragma unroll
                for (u32 h = 0; h < H; ++h) {
                    const float4 qa = *reinterpret_cast<const float4*>(&att_q[MMA ? 0 : h][vi * 8]);
                    const float4 qc = *reinterpret_cast<const float4*>(&att_q[MMA ? 0 : h][vi * 8 + 4]);
                    pa[0][h] += qa.x * k0[0] + qa.y * k0[1] + qa.z * k0[2] + qa.w * k0[3] + qc.x * k0[4] +
                                qc.y * k0[5] + qc.z * k0[6] + qc.w * k0[7];
                    if (GK == 16)
                        pa[1][h] += qa.x * k1[0] + qa.y * k1[1] + qa.z * k1[2] + qa.w * k1[3] + qc.x * k1[4] +
                                    qc.y * k1[5] + qc.z * k1[6] + qc.w * k1[7];
                }
            }
#pragma unroll
            for (u32 o = 1; o < 4; o <<= 1)
#pragma unroll
                for (u32 h = 0; h < H; ++h) {
                    pa[0][h] += __shfl_xor_sync(0xffffffffu, pa[0][h], o);
                    pa[1][h] += __shfl_xor_sync(0xffffffffu, pa[1][h], o);
                }
            const bool hi = cq & 1;
            s[0] = hi ? pa[0][2] : pa[0][0];
            s[1] = hi ? pa[0][3] : pa[0][1];
            s[2] = hi ? pa[1][2] : pa[1][0];
            s[3] = hi ? pa[1][3] : pa[1][1];
        }
        // Softmax: mask, the group's max per head across the warp, probabilities, sums.
        const bool rok0 = key0 + r < end, rok1 = GK == 16 && key0 + r + 8 < end;
        s[0] = rok0 && hok0 ? s[0] * sc2 : -INFINITY;
        s[1] = rok0 && hok1 ? s[1] * sc2 : -INFINITY;
        s[2] = rok1 && hok0 ? s[2] * sc2 : -INFINITY;
        s[3] = rok1 && hok1 ? s[3] * sc2 : -INFINITY;
        float x0 = fmaxf(s[0], s[2]), x1 = fmaxf(s[1], s[3]);
#pragma unroll
        for (u32 o = 4; o < 32; o <<= 1) {
            x0 = fmaxf(x0, __shfl_xor_sync(0xffffffffu, x0, o));
            x1 = fmaxf(x1, __shfl_xor_sync(0xffffffffu, x1, o));
        }
        const float n0 = fmaxf(m0, x0), n1 = fmaxf(m1, x1);
        // A head with no score yet (past gh): nothing to rescale, probabilities 0.
        const float z0 = n0 == -INFINITY ? 0.f : n0, z1 = n1 == -INFINITY ? 0.f : n1;
        const float a0 = n0 == -INFINITY ? 1.f : att_exp2(m0 - n0);
        const float a1 = n1 == -INFINITY ? 1.f : att_exp2(m1 - n1);
        const float p0 = att_exp2(s[0] - z0), p1 = att_exp2(s[1] - z1);
        const float p2 = att_exp2(s[2] - z0), p3 = att_exp2(s[3] - z1);
        l0 = l0 * a0 + (p0 + p2);
        l1 = l1 * a1 + (p1 + p3);
        m0 = n0;
        m1 = n1;
        __syncwarp();  // the last group's probabilities are read
        if (cq < 2) {
            *reinterpret_cast<float2*>(&att_p[w][r][2 * cq]) = make_float2(p0, p1);
            if (GK == 16) *reinterpret_cast<float2*>(&att_p[w][GK == 16 ? r + 8 : r][2 * cq]) = make_float2(p2, p3);
            if (r == 0) *reinterpret_cast<float2*>(&att_a[w][2 * cq]) = make_float2(a0, a1);
        }
        __syncwarp();
        // Values: rescale what came before (when a max moved), then 8 dims x 4 heads a key.
        const float4 al = *reinterpret_cast<const float4*>(att_a[w]);
        if (al.x != 1.f || al.y != 1.f || al.z != 1.f || al.w != 1.f) {
#pragma unroll
            for (u32 e = 0; e < 8; ++e) {
                acc[0][e] *= al.x;
                acc[1][e] *= al.y;
                acc[2][e] *= al.z;
                acc[3][e] *= al.w;
            }
        }
#pragma unroll
        for (u32 i = 0; i < NR; ++i) {
            const float4 pp = *reinterpret_cast<const float4*>(att_p[w][i * KPW + j]);
            float v[8];
            R::to_f(G.v[i], v);
#pragma unroll
            for (u32 e = 0; e < 8; ++e) {
                acc[0][e] = fmaf(pp.x, v[e], acc[0][e]);
                acc[1][e] = fmaf(pp.y, v[e], acc[1][e]);
                acc[2][e] = fmaf(pp.z, v[e], acc[2][e]);
                acc[3][e] = fmaf(pp.w, v[e], acc[3][e]);
            }
        }
        if (PF) G = N;
    }

    // The warp's result: outputs summed over its value keys, sums over its score rows.
#pragma unroll
    for (u32 o = LPK; o < 32; o <<= 1)
#pragma unroll
        for (u32 h = 0; h < H; ++h)
#pragma unroll
            for (u32 e = 0; e < 8; ++e) acc[h][e] += __shfl_xor_sync(0xffffffffu, acc[h][e], o);
#pragma unroll
    for (u32 o = 4; o < 32; o <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, o);
        l1 += __shfl_xor_sync(0xffffffffu, l1, o);
    }
    if (lane < LPK && pv * 8 < dim) {
#pragma unroll
        for (u32 h = 0; h < H; ++h) {
            *reinterpret_cast<float4*>(&att_o[w][h][pv * 8]) = make_float4(acc[h][0], acc[h][1], acc[h][2], acc[h][3]);
            *reinterpret_cast<float4*>(&att_o[w][h][pv * 8 + 4]) = make_float4(acc[h][4], acc[h][5], acc[h][6], acc[h][7]);
        }
    }
    if (lane < 2) {
        att_m[w][2 * lane] = m0;
        att_m[w][2 * lane + 1] = m1;
        att_l[w][2 * lane] = l0;
        att_l[w][2 * lane + 1] = l1;
    }
    __syncthreads();
    // The block's result per head: the warps' merged.
    for (u32 x = tid; x < gh * dim; x += NT) {
        const u32 h = x / dim, d = x - h * dim;
        float M = -INFINITY;
#pragma unroll
        for (u32 v = 0; v < NW; ++v) M = fmaxf(M, att_m[v][h]);
        float o = 0.f, L = 0.f;
#pragma unroll
        for (u32 v = 0; v < NW; ++v) {
            const float e = att_exp2(att_m[v][h] - M);  // a warp with no keys: 0
            o += e * att_o[v][h][d];
            L += e * att_l[v][h];
        }
        const u64 hq = (u64)kh * g + h0 + h;
        if (ns == 1) {
            // One chunk holds the whole prefix: the result, with no partials to combine.
            E::st(out, (((u64)b * T + t) * nq + hq) * dim + d, o / L);
        } else {
            float* po = part + ((((u64)b * nq + hq) * T + t) * nsplit + c) * (dim + 4);
            po[d] = o;
            if (d == 0) {
                po[dim] = M;
                po[dim + 1] = L;
            }
        }
    }
    if (ns == 1) return;
    // The last block of this (b, kh, t) combines every chunk of every head group.
    __threadfence();
    __syncthreads();  // every thread's partials are out before the count
    u32* counter = counters + ((u64)b * nk + kh) * T + t;
    if (tid == 0) {
        const u32 done = atomicAdd(counter, 1u) + 1;
        att_last = done == ns * nhg;
        if (att_last) *counter = 0;
    }
    __syncthreads();
    if (!att_last) return;
    __threadfence();
    // Other blocks' partials: read past L1 (__ldcg), after their fence and our counter.
    // Per head: each chunk's weight, exp2(m_s - M) / sum_s exp2(m_s - M) l_s, in one round of
    // loads (ns <= 64: two chunks a lane).
    for (u32 h = w; h < g; h += NW) {
        const float* ph = part + (((u64)b * nq + kh * g + h) * T + t) * nsplit * (dim + 4) + dim;
        const bool in0 = lane < ns, in1 = lane + 32 < ns;
        const float ma = in0 ? __ldcg(ph + (u64)lane * (dim + 4)) : -INFINITY;
        const float la = in0 ? __ldcg(ph + (u64)lane * (dim + 4) + 1) : 0.f;
        const float mb = in1 ? __ldcg(ph + (u64)(lane + 32) * (dim + 4)) : -INFINITY;
        const float lb = in1 ? __ldcg(ph + (u64)(lane + 32) * (dim + 4) + 1) : 0.f;
        const float M = warp_max(fmaxf(ma, mb));
        const float ea = att_exp2(ma - M), eb = att_exp2(mb - M);  // past ns: 0
        const float inv = 1.f / warp_sum(ea * la + eb * lb);
        if (in0) att_w[h][lane] = ea * inv;
        if (in1) att_w[h][lane + 32] = eb * inv;
    }
    __syncthreads();
    // Each output: a weighted sum over the chunks, 4 dims a thread. Where there are fewer such
    // sums than threads, nsub threads share one (chunks sub, sub + nsub, ...) and their parts
    // meet in shared memory (att_o, free by now: [nsub][ntask] float4, at most 4*NT floats).
    const u32 d4 = dim / 4, ntask = g * d4, nsub = ntask >= NT ? 1 : NT / ntask;
    auto chunk_sum = [&](u32 x, u32 s0, u32 step) {
        const u32 h = x / d4, d = (x - h * d4) * 4;
        const float* ph = part + (((u64)b * nq + kh * g + h) * T + t) * nsplit * (dim + 4) + d;
        float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 16
        for (u32 s = s0; s < ns; s += step) {
            const float4 v = __ldcg(reinterpret_cast<const float4*>(ph + (u64)s * (dim + 4)));
            const float ws = att_w[h][s];
            a.x += ws * v.x;
            a.y += ws * v.y;
            a.z += ws * v.z;
            a.w += ws * v.w;
        }
        return a;
    };
    auto put = [&](u32 x, float4 a) {
        const u32 h = x / d4, d = (x - h * d4) * 4;
        const u64 o = (((u64)b * T + t) * nq + kh * g + h) * dim + d;
        E::st(out, o, a.x);
        E::st(out, o + 1, a.y);
        E::st(out, o + 2, a.z);
        E::st(out, o + 3, a.w);
    };
    if (nsub == 1) {
        for (u32 x = tid; x < ntask; x += NT) put(x, chunk_sum(x, 0, 1));
    } else {
        float4* red = reinterpret_cast<float4*>(&att_o[0][0][0]);
        const u32 x = tid % ntask, sub = tid / ntask;
        if (sub < nsub) red[sub * ntask + x] = chunk_sum(x, sub, nsub);
        __syncthreads();
        if (tid < ntask) {
            float4 a = red[tid];
            for (u32 k = 1; k < nsub; ++k) {
                const float4 v = red[k * ntask + tid];
                a.x += v.x;
                a.y += v.y;
                a.z += v.z;
                a.w += v.w;
            }
            put(tid, a);
        }
    }
}

// The entry points, one a width of row (DP) and type: keys a group (GK), tensor-core scores
// (MMA, 16-bit types), the next group's loads ahead (PF), and the blocks a multiprocessor must
// hold (MINB; 4: at most 128 registers a thread, which d64 with PF and d128 fit with no
// spills). See bench/attention_probe.cu for the variants timed.
#define ATT_ARGS(E)                                                                                           \
    const E::T *q, const E::T *kc, const E::T *vc, const u32 *pos, u32 T, u32 nq, u32 nk, u32 S, u32 dim,     \
        u32 nsplit, u32 max_chunk, u32 min_chunk, float scale, float *part, u32 *counters, E::T *out
#define INSTANTIATE_ATT(E, SUF, DP, GK, MMA, PF, MINB)                                                       \
    extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32, MINB) attention_d##DP##_##SUF(ATT_ARGS(E)) { \
        attention<E, DP, GK, ATT_WARPS, MMA, PF>(q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk,     \
                                                 min_chunk, scale, part, counters, out);                    \
    }
INSTANTIATE_ATT(BF16, bf16, 64, 16, true, true, 4)
INSTANTIATE_ATT(BF16, bf16, 128, 16, true, false, 4)
INSTANTIATE_ATT(BF16, bf16, 256, 8, true, false, 1)
INSTANTIATE_ATT(F16, f16, 64, 16, true, true, 4)
INSTANTIATE_ATT(F16, f16, 128, 16, true, false, 4)
INSTANTIATE_ATT(F16, f16, 256, 8, true, false, 1)
INSTANTIATE_ATT(F32, f32, 64, 16, false, false, 1)
INSTANTIATE_ATT(F32, f32, 128, 8, false, false, 1)
INSTANTIATE_ATT(F32, f32, 256, 8, false, false, 1)

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
// Matrix-vector products for decode (M <= 2 rows): y [M, N] = f(x) [M, K] . W [N, K]^T
// (+ residual [M, N]), with the input transform f fused in:
//   mode 0: f(x) = x;
//   mode 1: f(x) = rms_norm(x) * nw (eps): the norm that precedes a projection;
//   mode 2: f(x) = silu(x[:, :K]) * x[:, K:], x being [M, 2K]: SwiGLU before the down
//           projection.
// f(x) is rounded to the element type (as the separate kernel's output would be) and staged
// once per block in shared memory (M*K elements), except in mode 0 with ks > 1, where the
// products read x where it is (see gemv below). With `residual`, y = round(round(acc) +
// residual), as a product followed by an add would round. K must be a multiple of 8.
//
// GLU (the gemv_glu_* kernels): SwiGLU's gate/up projection with its output transform. W is
// the fused gate/up weight [2N, K] (the N gate rows, then the N up rows), and
// y [M, N] = silu(g) * u with g = round(f(x) . W[:N]^T) and u = round(f(x) . W[N:]^T), rounded
// as the product followed by silu_mul would round. Each warp streams gate row n and up row n
// as one row of 2K. No residual, no amax.
//
// Register-lean (at most 64 registers a thread: 1024 threads a multiprocessor): each
// warp takes one row of W at a time and issues GEMV_L 16-byte loads a lane before it uses
// them; the other warps on the multiprocessor keep the memory busy meanwhile (no register
// double-buffer). `ks` (1, 2, 4 or 8) warps share each row, each streaming one slice of it
// (steps of 32 16-byte loads, ceil(steps / ks) a slice). A block of blockDim.x threads (a
// multiple of 32, at most GEMV_MAX_THREADS) takes blockDim.x / 32 / ks rows at a time, and
// strides over the rows by gridDim.x. The first weight loads are issued before the staging.
// Weights are loaded past L1 (read once), so x stays there. ks = 1: each warp finishes its
// own row (warp shuffles, no barrier); ks > 1: the slices' sums meet in shared memory and
// are added in slice order.
// Each output's residual is loaded when its row starts, not after the sum. The summation
// order depends only on ks and the block size: the same inputs give the same bits on every
// run.
//
// With `amax`: each row of y's largest (rounded) value and its first index, packed as
// key << 32 | ~index, kept per thread, then one atomicMax per block (max is order-free).
//
// DIAG (bench/gemv_probe.cu only; 0 here): 1 skips the staging (f(x) = 1), 2 replaces the
// products by an XOR of the weights' bits, 3 both: the GEMV's access pattern alone; 4 loads
// the weights through L1; 8 stages x in mode 0 as well.
#define GEMV_MAX_THREADS 512
#define GEMV_MAX_WARPS (GEMV_MAX_THREADS / 32)
#define GEMV_MIN_BLOCKS 2
#define GEMV_MAX_M 2
#define GEMV_L 4

template <typename E> struct Pack;
template <> struct Pack<F32> {
    static constexpr u32 EL = 4;
    static __device__ __forceinline__ void unpack(const uint4 v, float* o) {
        o[0] = __uint_as_float(v.x); o[1] = __uint_as_float(v.y); o[2] = __uint_as_float(v.z); o[3] = __uint_as_float(v.w);
    }
};
template <typename E> struct PackHalf {
    static constexpr u32 EL = 8;
    static __device__ __forceinline__ void unpack(const uint4 v, float* o) {
        const u16* h = reinterpret_cast<const u16*>(&v);
#pragma unroll
        for (int k = 0; k < 8; ++k) o[k] = E::ld(h, k);
    }
};
template <> struct Pack<BF16> : PackHalf<BF16> {};
template <> struct Pack<F16> : PackHalf<F16> {};

// EL floats rounded to the element type, as 16 bytes.
template <typename E>
static __device__ __forceinline__ uint4 pack16(const float* v) {
    uint4 o;
    typename E::T* oh = reinterpret_cast<typename E::T*>(&o);
#pragma unroll
    for (u32 j = 0; j < Pack<E>::EL; ++j) E::st(oh, j, v[j]);
    return o;
}

// A weight load: 16 bytes, read once, so kept out of L1 (where x stays); DIAG & 4 (the
// probe) loads through L1 instead.
template <u32 DIAG>
static __device__ __forceinline__ uint4 ld_weight(const void* p) {
    if (DIAG & 4) return __ldg(reinterpret_cast<const uint4*>(p));
    uint4 v;
    asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.u32 {%0,%1,%2,%3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// XG (mode 0 only): the products read x where it is (through L1, which the weight loads
// bypass), not staged: no staging round and no block barrier.
template <typename E, bool GLU, u32 DIAG, bool XG>
__device__ void gemv_body(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 mode,
                          const typename E::T* nw, float eps, const typename E::T* residual, typename E::T* y, u32 ks,
                          unsigned long long* amax) {
    typedef typename E::T T;
    constexpr u32 EL = Pack<E>::EL;
    extern __shared__ float gsm[];
    T* xs = reinterpret_cast<T*>(gsm);  // [M][K]
    __shared__ float red[GEMV_MAX_WARPS];
    __shared__ float parts[GEMV_MAX_WARPS][2 * GEMV_MAX_M];
    __shared__ unsigned long long bmax[GEMV_MAX_M];
    const u32 nt = blockDim.x, nwarps = nt / 32;
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const u32 KR = GLU ? 2 * K : K;  // the length of a row as a warp streams it
    const u32 steps = (KR + 32 * EL - 1) / (32 * EL);  // 16-byte loads a lane for a whole row
    const u32 rows_blk = nwarps / ks, slice = warp % ks, row_in = warp / ks;
    const u32 slice_steps = (steps + ks - 1) / ks;
    const u32 s_begin = min(steps, slice * slice_steps), s_end = min(steps, s_begin + slice_steps);
    const u32 groups = (N + rows_blk - 1) / rows_blk;
    // Who writes which output: with ks = 1, lane m of each warp writes its row's output for
    // row m of x; otherwise thread j < rows_blk * M of the block writes (m, row) = (j /
    // rows_blk, j % rows_blk) once the slices have met.
    const bool direct = ks == 1;
    const u32 e_m = direct ? lane : tid / rows_blk;
    const u32 e_row = direct ? row_in : tid % rows_blk;
    const bool e_on = direct ? lane < M : tid < rows_blk * M;
    float res_next = 0.f;
    auto load_res = [&](u32 grp) {
        const u32 n = grp * rows_blk + e_row;
        if (residual && e_on && grp < groups && n < N) res_next = E::ld(residual, (u64)e_m * N + n);
    };
    if (amax && tid < GEMV_MAX_M) bmax[tid] = 0;
    uint4 w[GEMV_L];
    auto load = [&](u32 n, u32 s0) {
#pragma unroll
        for (u32 s = 0; s < GEMV_L; ++s) {
            const u32 k = ((s0 + s) * 32 + lane) * EL;
            if (s0 + s < s_end && k < KR) {
                // GLU: past K, the up row (K is a multiple of 8: no load straddles the two).
                const T* p = GLU && k >= K ? W + (u64)(N + n) * K + (k - K) : W + (u64)n * K + k;
                w[s] = ld_weight<DIAG>(p);
            }
        }
    };
    // The first weight loads and residuals, before the staging.
    bool loaded = false;
    if (blockIdx.x < groups) {
        const u32 n = blockIdx.x * rows_blk + row_in;
        if (n < N && s_begin < s_end) {
            load(n, s_begin);
            loaded = true;
        }
    }
    load_res(blockIdx.x);
    // Staging f(x), 16 bytes a thread a round (mode 0 reads x where it is: no staging).
    for (u32 m = 0; m < M && !(DIAG & 1) && !XG; ++m) {
        float inv = 1.f;
        if (mode == 1) {
            float ss = 0.f;
#pragma unroll 2
            for (u32 k = tid * EL; k < K; k += nt * EL) {
                float v[EL];
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * K + k), v);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) ss += v[j] * v[j];
            }
            ss = warp_sum(ss);
            if (lane == 0) red[warp] = ss;
            __syncthreads();
            float tot = 0.f;
            for (u32 i = 0; i < nwarps; ++i) tot += red[i];
            inv = rsqrtf(tot / K + eps);
            __syncthreads();
        }
#pragma unroll 2
        for (u32 k = tid * EL; k < K; k += nt * EL) {
            if (mode == 0) {
                *reinterpret_cast<uint4*>(xs + (u64)m * K + k) = *reinterpret_cast<const uint4*>(x + (u64)m * K + k);
                continue;
            }
            float v[EL];
            if (mode == 2) {
                float u[EL];
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * 2 * K + k), v);
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * 2 * K + K + k), u);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) v[j] = v[j] / (1.f + __expf(-v[j])) * u[j];
            } else {
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * K + k), v);
                float g[EL];
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(nw + k), g);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) v[j] = v[j] * inv * g[j];
            }
            *reinterpret_cast<uint4*>(xs + (u64)m * K + k) = pack16<E>(v);
        }
    }
    if (!XG) __syncthreads();
    // Where the products read f(x): shared memory, or x itself (through L1).
    const T* fx = XG ? x : xs;
    unsigned long long best = 0;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 n = grp * rows_blk + row_in;
        const float res = res_next;
        load_res(grp + gridDim.x);  // the next row's, in flight during this one
        float acc[GEMV_MAX_M] = {0.f, 0.f};
        float acc_up[GEMV_MAX_M] = {0.f, 0.f};  // GLU: the up row's sums
        u32 bits = 0;
        if (n < N) {
            for (u32 s0 = s_begin; s0 < s_end; s0 += GEMV_L) {
                if (!loaded) load(n, s0);
                loaded = false;
#pragma unroll
                for (u32 s = 0; s < GEMV_L; ++s) {
                    const u32 k = ((s0 + s) * 32 + lane) * EL;
                    if (s0 + s < s_end && k < KR) {
                        if (DIAG & 2) {
                            bits ^= w[s].x ^ w[s].y ^ w[s].z ^ w[s].w;
                            continue;
                        }
                        const bool up = GLU && k >= K;
                        const u32 kx = up ? k - K : k;
                        float a[EL];
                        Pack<E>::unpack(w[s], a);
#pragma unroll
                        for (u32 m = 0; m < GEMV_MAX_M; ++m) {
                            if (m < M) {
                                float xv[EL];
                                if (DIAG & 1) {
#pragma unroll
                                    for (u32 j = 0; j < EL; ++j) xv[j] = 1.f;
                                } else {
                                    const uint4* q = reinterpret_cast<const uint4*>(fx + (u64)m * K + kx);
                                    Pack<E>::unpack(XG ? __ldg(q) : *q, xv);
                                }
                                if (GLU) {
                                    float t = 0.f;
#pragma unroll
                                    for (u32 j = 0; j < EL; ++j) t += a[j] * xv[j];
                                    if (up) acc_up[m] += t;
                                    else acc[m] += t;
                                } else {
#pragma unroll
                                    for (u32 j = 0; j < EL; ++j) acc[m] += a[j] * xv[j];
                                }
                            }
                        }
                    }
                }
            }
        }
        if (DIAG & 2) acc[0] = __uint_as_float(bits & 0x3fffffffu);
        // The sums: every lane of the warp gets each row of x's total.
        float mine = 0.f, mine_up = 0.f;
#pragma unroll
        for (u32 m = 0; m < GEMV_MAX_M; ++m)
            if (m < M) {
                const float v = warp_sum(acc[m]);
                const float vu = GLU ? warp_sum(acc_up[m]) : 0.f;
                if (direct) {
                    if (e_m == m) {
                        mine = v;
                        mine_up = vu;
                    }
                } else if (lane == 0) {
                    parts[warp][m] = v;
                    parts[warp][GEMV_MAX_M + m] = vu;
                }
            }
        if (!direct) {
            __syncthreads();
            if (e_on) {
                float v = 0.f, vu = 0.f;
                for (u32 i = 0; i < ks; ++i) {
                    v += parts[e_row * ks + i][e_m];
                    if (GLU) vu += parts[e_row * ks + i][GEMV_MAX_M + e_m];
                }
                mine = v;
                mine_up = vu;
            }
        }
        const u32 no = grp * rows_blk + e_row;
        if (e_on && no < N) {
            const u64 o = (u64)e_m * N + no;
            T t;
            E::st(&t, 0, mine);
            if (GLU) {
                T u;
                E::st(&u, 0, mine_up);
                const float g = E::ld(&t, 0);
                E::st(&t, 0, g / (1.f + __expf(-g)) * E::ld(&u, 0));
            }
            if (residual) E::st(&t, 0, E::ld(&t, 0) + res);
            y[o] = t;
            if (amax) {
                const unsigned long long pk = ((unsigned long long)key_of(E::ld(&t, 0)) << 32) | (0xffffffffu - no);
                if (pk > best) best = pk;
            }
        }
        if (!direct) __syncthreads();
    }
    if (amax) {
        __syncthreads();
        if (e_on && best) atomicMax(&bmax[e_m], best);
        __syncthreads();
        if (tid < M && bmax[tid]) atomicMax(amax + tid, bmax[tid]);
    }
}

// The plain kernel in mode 0 with ks > 1 reads x where it is (DIAG & 8, in the probe: stages
// it as the other cases do). Measured on an H100 (bench/gemv_probe.cu, run 7): in place is
// faster for the output and down projections (ks 2), slower for a plain 3072-row product at
// ks 1 (7.36 against 6.76 us). The GLU kernel always stages (it runs after a norm).
template <typename E, bool GLU = false, u32 DIAG = 0>
__device__ void gemv(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 mode,
                     const typename E::T* nw, float eps, const typename E::T* residual, typename E::T* y, u32 ks,
                     unsigned long long* amax) {
    if (!GLU && mode == 0 && ks > 1 && !(DIAG & 8))
        gemv_body<E, GLU, DIAG, true>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
    else
        gemv_body<E, GLU, DIAG, false>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
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

// Adds `val` to hist[bin] for every lane with `p`, one atomic per distinct bin of the warp:
// the lanes of a bin sum their values first (integer sums: the same totals in any order).
// Every lane of the warp must call it.
static __device__ __forceinline__ void warp_hist_add(unsigned long long* hist, u32 bin, u64 val, bool p) {
    const u32 lane = threadIdx.x % 32;
    unsigned pending = __ballot_sync(0xffffffffu, p);
    while (pending) {
        const int leader = __ffs(pending) - 1;
        const u32 b = __shfl_sync(0xffffffffu, bin, leader);
        const bool mine = p && bin == b;
        u64 v = mine ? val : 0;
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
        if ((int)lane == leader) atomicAdd(&hist[b], (unsigned long long)v);
        pending &= ~__ballot_sync(0xffffffffu, mine);
    }
}


// Eight logits from index i0 (16-byte loads when `vec`), -inf past V.
template <typename E>
static __device__ __forceinline__ void load8(const typename E::T* x, u32 V, u32 i0, bool vec, float* v) {
    if (vec && i0 + 8 <= V) {
        Vec8<E>::load(x, i0, v);
    } else {
#pragma unroll
        for (u32 j = 0; j < 8; ++j) v[j] = i0 + j < V ? E::ld(x, i0 + j) : -INFINITY;
    }
}

// Radix selection over the keys of a row of logits, 8 bits a pass from the top: the largest
// key K such that the keys at or above it (among keys >= `floor`) weigh at least `target`,
// counting each key once (`weighted` false: the k-th largest key) or by its fixed-point
// probability exp((x - xmax) * inv_t) * 2^24 (`weighted`: the top-p threshold). `hist`,
// `remaining` and `chosen` are the caller's shared memory. Every thread of the block calls it.
template <typename E>
__device__ u32 radix_select(const typename E::T* x, u32 V, bool vec, u64 target, bool weighted, u32 floor,
                            float xmax, float inv_t, unsigned long long* hist, unsigned long long& remaining,
                            u32& chosen) {
    const u32 tid = threadIdx.x, nt = blockDim.x;
    u32 prefix = 0, mask = 0;
    if (tid == 0) remaining = target;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (u32 j = tid; j < 256; j += nt) hist[j] = 0;
        __syncthreads();
        for (u32 c0 = 0; c0 * 8 < V; c0 += nt) {
            const u32 c = c0 + tid;
            float v[8];
            load8<E>(x, V, c * 8, vec, v);
#pragma unroll
            for (u32 j = 0; j < 8; ++j) {
                const u32 i = c * 8 + j, k = key_of(v[j]);
                const bool in = i < V && k >= floor && (k & mask) == prefix;
                const u64 w = !in ? 0 : weighted ? (u64)(expf((v[j] - xmax) * inv_t) * 16777216.f) : 1;
                warp_hist_add(hist, (k >> shift) & 255u, w, in && w != 0);
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
    return prefix;
}

template <typename E>
__device__ void sample(const typename E::T* logits, u32 V, const float* params, u32* rng, u32* tokens,
                       u32* pos, const u32* active, u32 advance, unsigned long long* amax) {
    const u32 b = blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
    // The LM head's packed argmax of this row (when it computed one), then the slot is set
    // back to 0 for the next step, whether or not the row is active.
    const unsigned long long pre = amax ? amax[b] : 0;
    __syncthreads();
    if (amax && tid == 0) amax[b] = 0;
    if (active && active[b] == 0) return;
    const typename E::T* x = logits + (u64)b * V;
    const float temp = params[b * 3 + 0], top_p = params[b * 3 + 1];
    const u32 top_k = (u32)params[b * 3 + 2];
    if ((!(temp > 0.f) || top_k == 1) && pre != 0) {
        // Greedy, and the argmax is known: no scan.
        if (tid == 0) {
            tokens[b] = 0xffffffffu - (u32)(pre & 0xffffffffu);
            pos[b] += advance;
        }
        return;
    }
    __shared__ u32 skey[32];
    __shared__ u32 sidx[32];
    __shared__ unsigned long long hist[256];
    __shared__ u32 chosen;
    __shared__ unsigned long long remaining;
    // Greedy part: the largest key and its first index.
    // Scans read eight logits a thread at a time (16-byte loads where the row allows).
    const bool vec = V % 8 == 0 && ((unsigned long long)x & 15) == 0;
    u32 best = 0, besti = 0xffffffffu;
    for (u32 c = tid; c * 8 < V; c += nt) {
        float v[8];
        load8<E>(x, V, c * 8, vec, v);
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
            const u32 i = c * 8 + j, k = key_of(v[j]);
            if (i < V && (k > best || (k == best && i < besti))) { best = k; besti = i; }
        }
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
        if (top_k > 0 && top_k < V) kmin = radix_select<E>(x, V, vec, top_k, false, 0, xmax, inv_t, hist, remaining, chosen);
        // Fixed-point weights of the kept logits.
        // w(i) = exp((x_i - xmax) / temp) * 2^24, 0 below kmin.
        u64 total = 0;
        for (u32 c = tid; c * 8 < V; c += nt) {
            float v[8];
            load8<E>(x, V, c * 8, vec, v);
#pragma unroll
            for (u32 j = 0; j < 8; ++j)
                if (c * 8 + j < V && key_of(v[j]) >= kmin) total += (u64)(expf((v[j] - xmax) * inv_t) * 16777216.f);
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
            pmin = radix_select<E>(x, V, vec, target, true, kmin, xmax, inv_t, hist, remaining, chosen);
        }
        const u32 keep = kmin > pmin ? kmin : pmin;
        // The kept weights in index order: each thread sums a contiguous range (a multiple of
        // 8 logits).
        const u32 per = (V + nt * 8 - 1) / (nt * 8) * 8, lo = min(tid * per, V), hi = min(lo + per, V);
        u64 mine = 0;
        for (u32 i0 = lo; i0 < hi; i0 += 8) {
            float v[8];
            load8<E>(x, V, i0, vec, v);
#pragma unroll
            for (u32 j = 0; j < 8; ++j)
                if (i0 + j < hi && key_of(v[j]) >= keep) mine += (u64)(expf((v[j] - xmax) * inv_t) * 16777216.f);
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
    extern "C" __global__ void add_rms_norm_##SUF(const E::T* x, const E::T* delta, const E::T* w,        \
                                                 u32 cols, float eps, E::T* sum_out, E::T* y) {           \
        add_rms_norm<E>(x, delta, w, cols, eps, sum_out, y);                                              \
    }                                                                                                     \
    extern "C" __global__ void silu_mul_##SUF(const E::T* in, u32 inter, u64 n, E::T* out) {              \
        silu_mul<E>(in, inter, n, out);                                                                   \
    }                                                                                                     \
    extern "C" __global__ void sample_##SUF(const E::T* logits, u32 V, const float* params, u32* rng,     \
                                           u32* tokens, u32* pos, const u32* active, u32 advance,         \
                                           unsigned long long* amax) {                                    \
        sample<E>(logits, V, params, rng, tokens, pos, active, advance, amax);                            \
    }

#define INSTANTIATE_GEMV(E, SUF)                                                                            \
    extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_##SUF(                                    \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps,                \
        const E::T* residual, E::T* y, u32 ks, unsigned long long* amax) {                                   \
        gemv<E>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);                                         \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_glu_##SUF(                                \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps,                \
        E::T* y, u32 ks) {                                                                                    \
        gemv<E, true>(x, W, M, N, K, mode, nw, eps, nullptr, y, ks, nullptr);                                 \
    }
INSTANTIATE_GEMV(F32, f32)
INSTANTIATE_GEMV(F16, f16)
INSTANTIATE_GEMV(BF16, bf16)
INSTANTIATE(F32, f32)
INSTANTIATE(F16, f16)
INSTANTIATE(BF16, bf16)
