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

// One rotary pair at table row pc: (x1, x2) -> (x1 cos - x2 sin, x1 sin + x2 cos), the table
// holding each row's cosines then its sines. rope_write and the fused attention both call it,
// and its rounding is spelled out (the products rounded, then a subtraction; a product and a
// fused multiply-add), so the code generator cannot contract the two kernels differently: they
// give the same values, bit for bit.
static __device__ __forceinline__ void rope_cs(float c, float s, float& x1, float& x2) {
    const float y1 = __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
    const float y2 = __fmaf_rn(x1, s, __fmul_rn(x2, c));
    x1 = y1;
    x2 = y2;
}
static __device__ __forceinline__ void rope_pair(const float* table, u32 pc, u32 dim, u32 i, float& x1, float& x2) {
    rope_cs(table[(u64)pc * dim + i], table[(u64)pc * dim + dim / 2 + i], x1, x2);
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
// Grid: (B*T, ceil((nq + nk + nv) / H)); block: (dim/2, H) threads: thread (i, y) of block
// (row, z) takes pair i of head z*H + y (H heads a block, so that a prefill's many tokens are
// not a block of dim/2 threads a head each).
template <typename E>
__device__ void rope_write(const typename E::T* src, u32 stride, u32 col0, const typename E::T* bias,
                           const float* table, const u32* pos, const u32* active, u32 T, u32 dim,
                           u32 nq, u32 nk, u32 nv, u32 S, u32 interleaved, typename E::T* q_out,
                           typename E::T* k_cache, typename E::T* v_cache, u32* overflow) {
    const u32 row = blockIdx.x, head = blockIdx.y * blockDim.y + threadIdx.y, i = threadIdx.x, half = dim / 2;
    if (i >= half || head >= nq + nk + nv) return;
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
    if (head < nq + nk) rope_pair(table, pc, dim, i, x1, x2);
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
// ATT_MAX_SPLITS. No dynamic shared memory. Block: ATT_WARPS warps (ATT_WARPS_WIDE in the
// d64w8 entry points, below).
#define ATT_WARPS 4
#define ATT_HEADS 4
// The d64w8 kernels' tensor-core values (TCV) up to this many keys a block's chunk. Measured
// alone on an H200 (bench/attention_chain_probe.cu): faster with 65 to 1,024 keys a chunk (run
// 107: batch 1 at positions 64, 2,000 and 8,000: 2.63 / 6.47 / 10.76 µs against 2.96 / 6.80 /
// 10.91; batch 8 at 64 and 2,000; batch 32 at 64; run 111: batch 8 with 768 and 1,024 keys,
// 16.8 against 17.2 and 20.5 against 21.0; batch 32 with 701 and 1,001, 13.6 against 13.8 and
// 18.1 against 18.5), slower with 2,001 to 8,001 (run 107: batch 8 at 8,000: 37.4 against
// 36.9; batch 32 at 2,000: 35.0 against 34.4, at 8,000: 135.2 against 129.9). From 1,025 to
// 2,000 keys the tensor-core path was not timed.
#define ATT_TCV_MAX_KEYS 1024
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
    static __device__ __forceinline__ V lds(const u16* p) { return V{*reinterpret_cast<const uint4*>(p)}; }
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
    static __device__ __forceinline__ V lds(const u16* p) { return V{*reinterpret_cast<const uint4*>(p)}; }
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
    static __device__ __forceinline__ V lds(const float* p) {
        return V{*reinterpret_cast<const uint4*>(p), *reinterpret_cast<const uint4*>(p + 4)};
    }
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

// Two f32 as one 32-bit pair of the element type (lo in the low half), rounded to nearest.
template <typename E> struct AttPack {
    static __device__ __forceinline__ u32 two(float lo, float hi) { return 0u; }  // f32: not used
};
template <> struct AttPack<BF16> {
    static __device__ __forceinline__ u32 two(float lo, float hi) {
        u32 d;
        asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
        return d;
    }
};
template <> struct AttPack<F16> {
    static __device__ __forceinline__ u32 two(float lo, float hi) {
        u32 d;
        asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(d) : "f"(hi), "f"(lo));
        return d;
    }
};

// The fused input stage (attention_rope_*, one token a row: T = 1): what rope_write takes.
// The block forms its own heads' rotated queries from qkv (bias added, rounded to the element
// type as rope_write rounds them), and a block whose chunk holds the new position forms the
// new key and value the same way and uses them for that key (the cache's copy of it, read
// past L1 while being written, is not used); the head group 0 block of that chunk writes them
// to the cache. A position past the cache sets overflow and writes nothing (the queries
// rotated at the last row, as rope_write does); an inactive row writes nothing and reads the
// cache as it is. The results equal rope_write followed by attention, bit for bit.
template <typename E> struct AttFuse {
    const typename E::T* qkv;  // [B, (nq + 2 nk) * dim]
    const typename E::T* bias; // [(nq + 2 nk) * dim] or null
    const float* table;
    const u32* active;         // [B] or null
    u32 interleaved;
    typename E::T* kw;         // the caches, written
    typename E::T* vw;
    u32* overflow;             // [B]
};

// Programmatic dependent launch's hooks (DECODE_PDL; described with gemv below).
#if defined(DECODE_PDL_PROBE)
__device__ u32 g_pdl_mode;
#endif
#if defined(DECODE_PDL) && defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#if defined(DECODE_PDL_PROBE)
static __device__ __forceinline__ u32 pdl_mode() { return g_pdl_mode; }
#else
static __device__ __forceinline__ u32 pdl_mode() { return 0; }
#endif
static __device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;" ::: "memory"); }
static __device__ __forceinline__ void pdl_trigger() { asm volatile("griddepcontrol.launch_dependents;" ::: "memory"); }
static __device__ __forceinline__ void pdl_prefetch(const void* p) { asm volatile("prefetch.global.L2::evict_last [%0];" ::"l"(p)); }
#else
static __device__ __forceinline__ u32 pdl_mode() { return 2; }
static __device__ __forceinline__ void pdl_wait() {}
static __device__ __forceinline__ void pdl_trigger() {}
static __device__ __forceinline__ void pdl_prefetch(const void*) {}
#endif
// DECODE_TRACE(site, a, b, c): a probe's timestamp hook at the points marked with it in gemv
// (3 its start, 0 after its wait, 2 f(x) staged, 1 its end) and attention (9-14)
// (bench/attention_chain_probe.cu, kv_stream_probe.cu and gemv_trace_probe.cu define it
// before they include this file). Empty here: the crate's PTX has none.
#ifndef DECODE_TRACE
#define DECODE_TRACE(site, a, b, c)
#endif

// The keys token t of a row at position `p0` attends to: p0 + t + 1, or the whole cache of S
// where that passes it (or wraps).
static __device__ __forceinline__ u32 att_prefix(u32 p0, u32 t, u32 S) {
    const u32 len = p0 + t + 1;
    return len > S || len < p0 ? S : len;
}
// The keys a chunk takes where a prefix of `len` is split `nsplit` ways: ceil(len / nsplit)
// rounded up to a multiple of 64, at least min_chunk, at most max_chunk.
static __device__ __forceinline__ u32 att_chunk(u32 len, u32 nsplit, u32 min_chunk, u32 max_chunk) {
    const u32 per = (len + nsplit - 1) / nsplit;
    return min(max_chunk, max(min_chunk, (per + 63) / 64 * 64));
}
template <typename E, u32 DP, u32 GK, u32 NW, bool MMA, bool PF, bool FUSE = false, bool TCV = false>
__device__ void attention(const typename E::T* q, const typename E::T* kc, const typename E::T* vc,
                          const u32* pos, u32 T, u32 nq, u32 nk, u32 S, u32 dim, u32 nsplit, u32 max_chunk,
                          u32 min_chunk, float scale, float* part, u32* counters, typename E::T* out,
                          const AttFuse<E> f = AttFuse<E>{}) {
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
    // TCV: where a block's chunk has at most ATT_TCV_MAX_KEYS keys, the values' products run
    // on tensor cores too (the probabilities rounded to the element type, as flash attention
    // rounds them); longer chunks keep them on CUDA cores. Heads of 64, groups of 16 keys.
    static_assert(!TCV || (MMA && DP == 64 && GK == 16), "TCV: the tensor-core d64 kernels");
    __shared__ __align__(16) float att_p[NW][GK][H];     // a group's probabilities, key-major
    __shared__ __align__(16) float att_a[NW][H];         // a group's rescale of what came before
    __shared__ __align__(16) float att_o[NW][H][DP];     // the warps' outputs
    __shared__ float att_m[NW][H], att_l[NW][H];          // the warps' max and sum
    __shared__ __align__(16) float att_q[MMA ? 1 : H][DP];  // the queries (CUDA-core scores)
    __shared__ float att_w[16][ATT_MAX_SPLITS];            // the combine's weight of each chunk
    __shared__ u32 att_last;
    __shared__ __align__(16) Elem att_qn[FUSE ? H : 1][FUSE ? DP : 8];  // FUSE: the rotated queries
    __shared__ __align__(16) Elem att_kn[FUSE ? DP : 8];                // FUSE: the new key
    __shared__ __align__(16) Elem att_vn[FUSE ? DP : 8];                // FUSE: the new value

    const u32 g = nq / nk, nhg = (g + H - 1) / H;
    const u32 bk = blockIdx.x / nhg, hg = blockIdx.x - bk * nhg;
    const u32 b = bk / nk, kh = bk - b * nk, t = blockIdx.y, c = blockIdx.z;
    const u32 h0 = hg * H, gh = min(H, g - h0);  // this block's heads: h0 .. h0 + gh - 1
    const u32 len = att_prefix(pos[b], t, S);
    const u32 chunk = att_chunk(len, nsplit, min_chunk, max_chunk);
    const u32 ns = (len + chunk - 1) / chunk;  // chunks in the prefix
    const u32 start = c * chunk;
    const u32 p = FUSE ? pos[b] + t : 0u;  // FUSE: the new token's position
    const bool over = FUSE && p >= S;
    // PDL (decode_pdl.ptx: the fused kernels, launched after QKV's product): a block reads
    // before the wait only what no other kernel of this step writes (pos, the cache's prefix;
    // the first group may hold row p, which this grid writes after the wait: `patch` replaces
    // it where it is written, and an inactive or overflowed row's p is not written), and
    // writes nothing; it lets the output projection launch once it has waited. Blocks past
    // the prefix return without waiting: the first chunk's blocks always wait, so the grid
    // still ends after its predecessor.
#if defined(DECODE_PDL)
    constexpr bool PDL = FUSE;
#else
    constexpr bool PDL = false;
#endif
    if (!PDL && FUSE && over && kh == 0 && hg == 0 && c == 0 && threadIdx.x == 0) f.overflow[b] = 1;
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
    // (FUSE: formed after the input stage below.)
    u32 qb[NU][2][2];
    auto form_q = [&]() {
        if constexpr (MMA) {
#pragma unroll
            for (u32 u = 0; u < NU; ++u) {
                const u32 vi = 4 * u + cq;
                const bool qok = r < gh && vi * 8 < dim;
                uint4 x;
                if constexpr (FUSE) {
                    x = qok ? *reinterpret_cast<const uint4*>(&att_qn[FUSE ? r : 0][vi * 8]) : make_uint4(0u, 0u, 0u, 0u);
                } else {
                    x = att_ld16(q + (qrow + (u64)r * T) * dim + vi * 8, qok);
                }
                qb[u][0][0] = x.x;
                qb[u][0][1] = x.y;
                qb[u][1][0] = x.z;
                qb[u][1][1] = x.w;
            }
        } else {
            for (u32 x = tid; x < H * DP; x += NT) {
                const u32 h = x / DP, d = x - h * DP;
                const bool qok = h < gh && d < dim;
                if constexpr (FUSE) att_q[h][d] = qok ? E::ld(att_qn[FUSE ? h : 0], d) : 0.f;
                else att_q[h][d] = qok ? E::ld(q, (qrow + (u64)h * T) * dim + d) : 0.f;
            }
            __syncthreads();
        }
    };
    if constexpr (!FUSE) form_q();

    struct Grp {
        typename R::V k0[NU], k1[GK == 16 ? NU : 1], v[NR];
    };
    // tc: a lane's value keys are cq, 4 + cq, 8 + cq and 12 + cq of the group (the k indices
    // 2cq, 2cq + 1, 2cq + 8, 2cq + 9 of its A fragments: any order of the keys gives the same
    // sum, taken the same way for P), dims 8r .. 8r + 7 of each (the rows r and r + 8 of its
    // four 16-dim tiles are dims 8r + 2mt and 8r + 2mt + 1).
    const bool tc = TCV && n <= ATT_TCV_MAX_KEYS;  // block-uniform
    auto tcv_key = [&](u32 key0, u32 i) { return key0 + 4 * i + cq; };
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
            if (TCV && tc) {
                const u32 key = tcv_key(key0, i);
                G.v[i] = R::load(vp + (u64)key * dim + r * 8, r * 8 < dim && key < end);
            } else {
                const u32 key = key0 + i * KPW + j;
                G.v[i] = R::load(vp + (u64)key * dim + pv * 8, pv * 8 < dim && key < end);
            }
        }
    };

    Grp G;
    // FUSE with PF (the 16-bit d64 and d128pf kernels): the first group's loads go out before
    // the queries are formed (they do not depend on them), so their latency overlaps the loads
    // of qkv.
    DECODE_TRACE(9, n, 0, 0);
    if (FUSE && PF && w < (n + GK - 1) / GK) load(G, w);
    if constexpr (PDL) {
        pdl_wait();
        pdl_trigger();
        // (c = 0 never returned above: start 0 < len.)
        if (over && kh == 0 && hg == 0 && c == 0 && threadIdx.x == 0) f.overflow[b] = 1;
    }
    DECODE_TRACE(10, n, 0, 0);

    // FUSE: this block's queries, and the new key and value where this chunk holds them.
    bool subst = false;
    if constexpr (FUSE) {
        const bool wr = !over && (f.active == nullptr || f.active[b] != 0);
        subst = wr && start <= p && p < end;
        const u32 pc = over ? S - 1 : p, half = dim / 2, qp = gh * half;
        const Elem* src = f.qkv + (u64)b * (nq + 2 * nk) * dim;
        for (u32 x = tid; x < qp + (subst ? 2 * half : 0); x += NT) {
            const u32 kind = x < qp ? 0 : x < qp + half ? 1 : 2;  // query, key, value
            const u32 hh = kind == 0 ? x / half : 0;
            const u32 i = kind == 0 ? x - hh * half : x - qp - (kind - 1) * half;
            const u32 head = kind == 0 ? kh * g + h0 + hh : kind == 1 ? nq + kh : nq + nk + kh;
            const u32 i1 = f.interleaved ? 2 * i : i, i2 = f.interleaved ? 2 * i + 1 : i + half;
            float x1 = E::ld(src, (u64)head * dim + i1), x2 = E::ld(src, (u64)head * dim + i2);
            if (f.bias) {
                x1 += E::ld(f.bias, (u64)head * dim + i1);
                x2 += E::ld(f.bias, (u64)head * dim + i2);
            }
            if (kind < 2) rope_pair(f.table, pc, dim, i, x1, x2);
            Elem* dst = kind == 0 ? att_qn[hh] : kind == 1 ? att_kn : att_vn;
            E::st(dst, i1, x1);
            E::st(dst, i2, x2);
        }
        __syncthreads();
        if (subst && hg == 0) {
            const u64 o = ((u64)b * nk + kh) * S * dim + (u64)p * dim;
            for (u32 x = tid; x < dim; x += NT) {
                f.kw[o + x] = att_kn[x];
                f.vw[o + x] = att_vn[x];
            }
        }
        form_q();
    }
    DECODE_TRACE(11, n, 0, 0);

    float acc[H][8];
#pragma unroll
    for (u32 h = 0; h < H; ++h)
#pragma unroll
        for (u32 e = 0; e < 8; ++e) acc[h][e] = 0.f;
    // Running max and sum of heads 2cq and 2cq + 1 (lanes cq < 2; the others hold heads past 4).
    float m0 = -INFINITY, m1 = -INFINITY, l0 = 0.f, l1 = 0.f;
    const u32 ngroups = (n + GK - 1) / GK;
    const bool hok0 = 2 * cq < gh, hok1 = 2 * cq + 1 < gh;
    // FUSE: the new key and value in place of the cache's copy (their lanes only).
    auto patch = [&](Grp& G, u32 gi) {
        const u32 key0 = start + gi * GK;
        if (p < key0 || p >= key0 + GK) return;
#pragma unroll
        for (u32 u = 0; u < NU; ++u) {
            const u32 vi = 4 * u + cq;
            if (vi * 8 < dim && key0 + r == p) G.k0[u] = R::lds(&att_kn[vi * 8]);
            if (GK == 16 && vi * 8 < dim && key0 + r + 8 == p) G.k1[GK == 16 ? u : 0] = R::lds(&att_kn[vi * 8]);
        }
#pragma unroll
        for (u32 i = 0; i < NR; ++i) {
            if (TCV && tc) {
                if (r * 8 < dim && tcv_key(key0, i) == p) G.v[i] = R::lds(&att_vn[r * 8]);
            } else if (pv * 8 < dim && key0 + i * KPW + j == p) {
                G.v[i] = R::lds(&att_vn[pv * 8]);
            }
        }
    };
    if (!FUSE && PF && w < ngroups) load(G, w);
    for (u32 gi = w; gi < ngroups; gi += NW) {
        Grp N;
        if (PF) load(N, gi + NW);  // past the chunk: no access
        else load(G, gi);
        if (FUSE && subst) patch(G, gi);
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
        if constexpr (TCV) {
            if (tc) {
                // O^T (64 dims x 8 heads) += V^T (64 x 16 keys) . P^T (16 keys x 8 heads): per
                // 16-dim tile mt, acc[mt] is the C fragment (dims 8r + 2mt, 8r + 2mt + 1; heads
                // 2cq, 2cq + 1). First rescale this lane's two heads where their max moved.
                if (cq < 2) {
                    const float2 al = *reinterpret_cast<const float2*>(&att_a[w][2 * cq]);
                    if (al.x != 1.f || al.y != 1.f) {
#pragma unroll
                        for (u32 mt = 0; mt < 4; ++mt) {
                            acc[mt][0] *= al.x;
                            acc[mt][1] *= al.y;
                            acc[mt][2] *= al.x;
                            acc[mt][3] *= al.y;
                        }
                    }
                }
                // B: head r's probabilities for keys cq, 4 + cq and 8 + cq, 12 + cq (0 past 4 heads).
                const bool hr = r < H;
                const float pa = hr ? att_p[w][cq][hr ? r : 0] : 0.f, pb = hr ? att_p[w][4 + cq][hr ? r : 0] : 0.f;
                const float pc = hr ? att_p[w][8 + cq][hr ? r : 0] : 0.f, pd = hr ? att_p[w][12 + cq][hr ? r : 0] : 0.f;
                const u32 b0 = AttPack<E>::two(pa, pb), b1 = AttPack<E>::two(pc, pd);
#pragma unroll
                for (u32 mt = 0; mt < 4; ++mt) {
                    const u32 x0 = att_word(G.v[0].a, mt), x1 = att_word(G.v[1].a, mt);
                    const u32 x2 = att_word(G.v[2].a, mt), x3 = att_word(G.v[3].a, mt);
                    const u32 a[4] = {__byte_perm(x0, x1, 0x5410), __byte_perm(x0, x1, 0x7632), __byte_perm(x2, x3, 0x5410),
                                      __byte_perm(x2, x3, 0x7632)};
                    AttMma<E>::run(acc[mt], a, b0, b1);
                }
                if constexpr (PF) G = N;
                continue;
            }
        }
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
    DECODE_TRACE(12, n, 0, 0);

    // The warp's result: outputs summed over its value keys (TCV: in the products already),
    // sums over its score rows.
#pragma unroll
    for (u32 o = LPK; o < 32 && !(TCV && tc); o <<= 1)
#pragma unroll
        for (u32 h = 0; h < H; ++h)
#pragma unroll
            for (u32 e = 0; e < 8; ++e) acc[h][e] += __shfl_xor_sync(0xffffffffu, acc[h][e], o);
#pragma unroll
    for (u32 o = 4; o < 32; o <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, o);
        l1 += __shfl_xor_sync(0xffffffffu, l1, o);
    }
    if (TCV && tc && cq < 2 && r * 8 < dim) {
#pragma unroll
        for (u32 mt = 0; mt < 4; ++mt) {
            *reinterpret_cast<float2*>(&att_o[w][2 * cq][8 * r + 2 * mt]) = make_float2(acc[mt][0], acc[mt][2]);
            *reinterpret_cast<float2*>(&att_o[w][2 * cq + 1][8 * r + 2 * mt]) = make_float2(acc[mt][1], acc[mt][3]);
        }
    }
    if (!(TCV && tc) && lane < LPK && pv * 8 < dim) {
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
    DECODE_TRACE(13, n, ns, 0);
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
    const u32 d4 = dim / 4, ntask = g * d4, nsub = ntask >= NT ? 1 : NT / ntask;
    // Other blocks' partials: read past L1 (__ldcg), after their fence and our counter. Head h's
    // start at head_part(h): chunk s's outputs at s * (dim + 4), then its max and sum.
    auto head_part = [&](u32 h) { return part + (((u64)b * nq + kh * g + h) * T + t) * nsplit * (dim + 4); };
    // a += ws * v, a component at a time (the order both sums below keep).
    auto add_scaled = [](float4& a, float ws, float4 v) {
        a.x += ws * v.x;
        a.y += ws * v.y;
        a.z += ws * v.z;
        a.w += ws * v.w;
    };
    // The first PRE partials of this thread's first sum (below) go out before the chunks'
    // weights' loads, so the two rounds of loads overlap (the same sums in the same order).
    constexpr u32 PRE = 4;
    const u32 x0 = nsub == 1 ? tid : tid % ntask, s00 = nsub == 1 ? 0 : tid / ntask;
    const bool has0 = nsub == 1 ? tid < ntask : s00 < nsub;
    float4 pre[PRE];
    {
        const u32 h = x0 / d4, d = (x0 - h * d4) * 4;
        const float* ph = head_part(h) + d;
#pragma unroll
        for (u32 k = 0; k < PRE; ++k) {
            const u32 s = s00 + k * nsub;
            pre[k] = has0 && s < ns ? __ldcg(reinterpret_cast<const float4*>(ph + (u64)s * (dim + 4)))
                                    : make_float4(0.f, 0.f, 0.f, 0.f);
        }
    }
    // Per head: each chunk's weight, exp2(m_s - M) / sum_s exp2(m_s - M) l_s, in one round of
    // loads (ns <= 64: two chunks a lane).
    for (u32 h = w; h < g; h += NW) {
        const float* ph = head_part(h) + dim;
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
    // `first`: this thread's first sum, whose first partials are in `pre`.
    auto chunk_sum = [&](u32 x, u32 s0, u32 step, bool first) {
        const u32 h = x / d4, d = (x - h * d4) * 4;
        const float* ph = head_part(h) + d;
        float4 a = make_float4(0.f, 0.f, 0.f, 0.f);
        u32 s = s0;
        if (first) {
#pragma unroll
            for (u32 k = 0; k < PRE; ++k, s += step)
                if (s < ns) add_scaled(a, att_w[h][s], pre[k]);
        }
#pragma unroll 16
        for (; s < ns; s += step) add_scaled(a, att_w[h][s], __ldcg(reinterpret_cast<const float4*>(ph + (u64)s * (dim + 4))));
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
        for (u32 x = tid; x < ntask; x += NT) put(x, chunk_sum(x, 0, 1, x == tid));
    } else {
        float4* red = reinterpret_cast<float4*>(&att_o[0][0][0]);
        const u32 x = tid % ntask, sub = tid / ntask;
        if (sub < nsub) red[sub * ntask + x] = chunk_sum(x, sub, nsub, true);
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
    DECODE_TRACE(14, n, ns, 0);
}

// The entry points, one a width of row (DP) and type: keys a group (GK), tensor-core scores (MMA,
// 16-bit types), the next group's loads ahead (PF), and the blocks a multiprocessor must hold
// (MINB; 4: at most 128 registers a thread, which d64 with PF and d128 fit with no spills). See
// bench/attention_probe.cu for the variants timed. The fused d128 16-bit kernels hold 3 (at most
// 168 registers; they take 150; gpu.rs sizes their grids to match: ATT_D128_BLOCKS; small grids
// take attention_rope_d128pf, below): at 128 the substitution of the new key and value (`patch`)
// spilled 76 bytes into the key loop. Measured on an H200 at Llama-3.1-8B's shape
// (docs/gpu-runs/2026-11-29b-d128/), the fused step took 3% less at batch 1, position 8,000 and 10%
// less at batch 32, position 8,000 than with 4 (spilling) on grids of 528.
#define ATT_ARGS(E)                                                                                           \
    const E::T *q, const E::T *kc, const E::T *vc, const u32 *pos, u32 T, u32 nq, u32 nk, u32 S, u32 dim,     \
        u32 nsplit, u32 max_chunk, u32 min_chunk, float scale, float *part, u32 *counters, E::T *out
#define INSTANTIATE_ATT(E, SUF, DP, GK, MMA, PF, MINB)                                                       \
    extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32, MINB) attention_d##DP##_##SUF(ATT_ARGS(E)) { \
        attention<E, DP, GK, ATT_WARPS, MMA, PF>(q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk,     \
                                                 min_chunk, scale, part, counters, out);                    \
    }
// attention_rope_*: the same kernels with rope_write's stage fused in (AttFuse; T = 1).
#define ATT_FUSE_ARGS(E)                                                                                      \
    ATT_ARGS(E), const E::T *qkv, const E::T *bias, const float *table, const u32 *active, u32 interleaved,   \
        E::T *kw, E::T *vw, u32 *overflow
#define INSTANTIATE_ATT_ROPE(E, SUF, DP, GK, MMA, PF, MINB)                                                  \
    extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32, MINB)                                        \
        attention_rope_d##DP##_##SUF(ATT_FUSE_ARGS(E)) {                                                      \
        attention<E, DP, GK, ATT_WARPS, MMA, PF, true>(q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk, \
                                                       min_chunk, scale, part, counters, out,                \
                                                       AttFuse<E>{qkv, bias, table, active, interleaved, kw, \
                                                                  vw, overflow});                            \
    }
// attention_rope_d128pf_*: the fused 16-bit d128 kernels with the next group's loads issued
// ahead (PF), at most 2 blocks a multiprocessor (229 registers by `ptxas -v`, no spills): gpu.rs
// takes them for grids of at most ATT_AHEAD_MAX_BLOCKS blocks a chunk (decode batches of up to
// 16 rows at 8 key heads), on grids of at most 264 blocks, where a multiprocessor holds one or
// two blocks and the loads ahead keep more of the cache in flight. The same sums as
// attention_rope_d128 (the plain d128 kernels follow the same chunks). Measured on an H200 at
// Llama-3.1-8B's shape (docs/gpu-runs/2026-11-29b-d128/ run 157, 2026-11-29c-d128/ run 160).
#define INSTANTIATE_ATT_ROPE_AHEAD(E, SUF)                                                                  \
    extern "C" __global__ void __launch_bounds__(ATT_WARPS * 32, 2)                                       \
        attention_rope_d128pf_##SUF(ATT_FUSE_ARGS(E)) {                                                  \
        attention<E, 128, 16, ATT_WARPS, true, true, true>(q, kc, vc, pos, T, nq, nk, S, dim, nsplit,    \
                                                         max_chunk, min_chunk, scale, part, counters, out, \
                                                         AttFuse<E>{qkv, bias, table, active, interleaved,  \
                                                                    kw, vw, overflow});                    \
    }
// attention[_rope]_d64w8_*: the 16-bit d64 kernels with ATT_WARPS_WIDE (8) warps a block, at
// most 2 blocks a multiprocessor (128 registers a thread, no spills): gpu.rs takes them for
// decode batches (at most 264 blocks a chunk), on grids of at most 264 blocks (one wave), where
// each warp takes half as many groups of keys as in the 4-warp kernel on 528. The warps' results
// merge in another order; a chunk of at most ATT_TCV_MAX_KEYS keys takes the values' products
// on tensor cores (TCV: the probabilities rounded to the element type), a longer one the same
// sums as the 4-warp kernel.
#define ATT_WARPS_WIDE 8
#define INSTANTIATE_ATT_WIDE(E, SUF)                                                                          \
    extern "C" __global__ void __launch_bounds__(ATT_WARPS_WIDE * 32, 2) attention_d64w8_##SUF(ATT_ARGS(E)) { \
        attention<E, 64, 16, ATT_WARPS_WIDE, true, true, false, true>(                                          \
            q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk, min_chunk, scale, part, counters, out);        \
    }
#define INSTANTIATE_ATT_ROPE_WIDE(E, SUF)                                                                     \
    extern "C" __global__ void __launch_bounds__(ATT_WARPS_WIDE * 32, 2)                                     \
        attention_rope_d64w8_##SUF(ATT_FUSE_ARGS(E)) {                                                        \
        attention<E, 64, 16, ATT_WARPS_WIDE, true, true, true, true>(                                         \
            q, kc, vc, pos, T, nq, nk, S, dim, nsplit, max_chunk, min_chunk, scale, part, counters, out,      \
            AttFuse<E>{qkv, bias, table, active, interleaved, kw, vw, overflow});                             \
    }
// DECODE_PDL_ONLY (kernels/decode_pdl.ptx): only the kernels the step launches
// programmatically: the fused attention, gemv and mmv.
INSTANTIATE_ATT_ROPE_WIDE(BF16, bf16)
INSTANTIATE_ATT_ROPE_WIDE(F16, f16)
INSTANTIATE_ATT_ROPE_AHEAD(BF16, bf16)
INSTANTIATE_ATT_ROPE_AHEAD(F16, f16)
INSTANTIATE_ATT_ROPE(BF16, bf16, 64, 16, true, true, 4)
INSTANTIATE_ATT_ROPE(BF16, bf16, 128, 16, true, false, 3)
INSTANTIATE_ATT_ROPE(BF16, bf16, 256, 8, true, false, 1)
INSTANTIATE_ATT_ROPE(F16, f16, 64, 16, true, true, 4)
INSTANTIATE_ATT_ROPE(F16, f16, 128, 16, true, false, 3)
INSTANTIATE_ATT_ROPE(F16, f16, 256, 8, true, false, 1)
INSTANTIATE_ATT_ROPE(F32, f32, 64, 16, false, false, 1)
INSTANTIATE_ATT_ROPE(F32, f32, 128, 8, false, false, 1)
INSTANTIATE_ATT_ROPE(F32, f32, 256, 8, false, false, 1)
#if !defined(DECODE_PDL_ONLY)
INSTANTIATE_ATT_WIDE(BF16, bf16)
INSTANTIATE_ATT_WIDE(F16, f16)
INSTANTIATE_ATT(BF16, bf16, 64, 16, true, true, 4)
INSTANTIATE_ATT(BF16, bf16, 128, 16, true, false, 4)
INSTANTIATE_ATT(BF16, bf16, 256, 8, true, false, 1)
INSTANTIATE_ATT(F16, f16, 64, 16, true, true, 4)
INSTANTIATE_ATT(F16, f16, 128, 16, true, false, 4)
INSTANTIATE_ATT(F16, f16, 256, 8, true, false, 1)
INSTANTIATE_ATT(F32, f32, 64, 16, false, false, 1)
INSTANTIATE_ATT(F32, f32, 128, 8, false, false, 1)
INSTANTIATE_ATT(F32, f32, 256, 8, false, false, 1)
#endif

// ---------------------------------------------------------------------------------------
// Tiled attention for many tokens a row (a prefill's rounds; 16-bit types, heads of DP = 64
// or 128 exactly): attention_tiled_d64_<type>, attention_tiled_d128_<type>. Same operands and
// output as attention_d* (q [B, nq, T, dim], the caches [B, nk, S, dim], out [B, T, nq*dim];
// token t of row b attends to att_prefix(pos[b], t, S) keys) but no partials or counters.
//
// attention_d* runs a block per query token, so every token of a prefill round reads its row's
// keys and values again, and its products run one token's heads at a time. Here a block takes
// ATT_TILE_ROWS query rows of one (row, key head): row m is token m / g, query head m % g (g
// query heads a key head), so the block's rows are its key head's g heads of 64 / g
// consecutive tokens. It streams the keys and values of its longest prefix through shared
// memory in tiles of BN keys (4,096 / DP: 8 KB each of keys and values, two tiles in flight by
// cp.async), and each warp takes 16 rows, flash-attention style:
// - scores: tensor-core mma.sync m16n8k16 (queries as A fragments from global memory, the keys
//   by ldmatrix) with f32 accumulation, the scale applied in f32 in base 2, keys past a row's
//   prefix masked to -inf;
// - softmax: the running max and sum of each row in registers (the quad of lanes sharing a row
//   reduces with two shuffles), the output rescaled where the max moves;
// - values: the probabilities rounded to the element type (as flash attention and the
//   d64w8 kernels' tensor-core values round them) as A fragments, the values by ldmatrix.trans,
//   f32 accumulation; the sum of the probabilities is taken before rounding.
// Shared memory rows are swizzled (16-byte chunk c of row r at c ^ (r % 8)) so that ldmatrix
// and the copies meet no bank conflicts. Keys past the block's longest prefix are copied as
// zeros (never read from past the cache). A key inside the block's span but past a row's
// prefix is masked for that row, and its value still enters the row's product with weight 0:
// a value that is not finite there (a later token's, overflowed in f16) makes the row NaN,
// as in flash attention; the per-token kernel never reads it. The grid is (ceil(T * g / ATT_TILE_ROWS), B * nk),
// the blocks of the longest prefixes first.
#define ATT_TILE_ROWS 64
#define ATT_TILE_THREADS 128
static __device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }
// A 16-byte copy to shared memory, or 16 zeros where !ok (src is then not read).
static __device__ __forceinline__ void cp_async16(void* dst, const void* src, bool ok) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)), "l"(src), "r"(ok ? 16u : 0u)
                 : "memory");
}
static __device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> static __device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
static __device__ __forceinline__ void ldsm_x4(u32* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
static __device__ __forceinline__ void ldsm_x4_t(u32* r, const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
template <typename E, u32 DP>
__device__ void attention_tiled(const u16* q, const u16* kc, const u16* vc, const u32* pos, u32 T, u32 nq, u32 nk,
                                u32 S, float scale, u16* out) {
    constexpr u32 BN = 4096 / DP;  // keys a tile
    constexpr u32 CH = DP / 8;     // 16-byte chunks a row of keys or values
    constexpr u32 NT = BN / 8;     // score tiles of 8 keys
    constexpr u32 KS = DP / 16;    // the scores' k-steps of 16 dims
    constexpr u32 OT = DP / 8;     // output tiles of 8 dims
    constexpr u32 PK = BN / 16;    // the values' k-steps of 16 keys
    static_assert(DP == 64 || DP == 128, "DP: 64 or 128");
    static_assert(ATT_TILE_ROWS == 16 * (ATT_TILE_THREADS / 32), "16 rows a warp");
    __shared__ __align__(128) u16 sk[2][BN * DP];
    __shared__ __align__(128) u16 sv[2][BN * DP];

    const u32 g = nq / nk, rows = T * g;
    const u32 b = blockIdx.y / nk, kh = blockIdx.y - b * nk;
    const u32 m0 = (gridDim.x - 1 - blockIdx.x) * ATT_TILE_ROWS;
    const u32 tid = threadIdx.x, w = tid / 32, lane = tid % 32, gr = lane / 4, tg = lane % 4;
    const u32 p0 = pos[b];
    // A row's prefix (0 past the last row): it never decreases from row to row (a prefix that
    // wraps is S, the largest), so a span's longest is at one of its ends, its shortest at the
    // first.
    auto prefix = [&](u32 m) { return m < rows ? att_prefix(p0, m / g, S) : 0u; };
    auto span = [&](u32 lo, u32 hi) {  // the longest prefix of rows lo .. hi - 1
        return lo < rows ? max(prefix(lo), prefix(min(hi, rows) - 1)) : 0u;
    };
    const u32 kmax = span(m0, m0 + ATT_TILE_ROWS);
    const u32 w0 = m0 + 16 * w;
    const u32 wmax = span(w0, w0 + 16);
    // Keys from wmin on are masked for some row of the warp (0: a row past the last).
    const u32 wmin = w0 + 15 < rows ? min(prefix(w0), prefix(w0 + 15)) : 0u;
    const u32 ma = w0 + gr, mb = ma + 8;  // this lane's rows
    const u32 la = prefix(ma), lb = prefix(mb);
    const u64 kvbase = ((u64)b * nk + kh) * S * DP;
    const float sc2 = scale * 1.4426950408889634f;

    // The queries' A fragments: rows ma, mb; dims 16k + 2tg (+1), and 8 on.
    u32 qa[KS][4];
    {
        const u16* qra = q + ((((u64)b * nq + kh * g + (ma < rows ? ma % g : 0)) * T + (ma < rows ? ma / g : 0)) * DP);
        const u16* qrb = q + ((((u64)b * nq + kh * g + (mb < rows ? mb % g : 0)) * T + (mb < rows ? mb / g : 0)) * DP);
#pragma unroll
        for (u32 k = 0; k < KS; ++k) {
            const u32 d = 16 * k + 2 * tg;
            qa[k][0] = ma < rows ? *reinterpret_cast<const u32*>(qra + d) : 0u;
            qa[k][1] = mb < rows ? *reinterpret_cast<const u32*>(qrb + d) : 0u;
            qa[k][2] = ma < rows ? *reinterpret_cast<const u32*>(qra + d + 8) : 0u;
            qa[k][3] = mb < rows ? *reinterpret_cast<const u32*>(qrb + d + 8) : 0u;
        }
    }
    const u32 ntile = (kmax + BN - 1) / BN;
    auto load = [&](u32 it) {
        const u32 k0 = it * BN, buf = it & 1;
#pragma unroll
        for (u32 i = 0; i < BN * CH / ATT_TILE_THREADS; ++i) {
            const u32 x = tid + i * ATT_TILE_THREADS, r = x / CH, c = x % CH, key = k0 + r;
            const bool ok = key < kmax;
            const u64 src = kvbase + (u64)(ok ? key : 0u) * DP + c * 8;
            const u32 dst = r * DP + ((c ^ (r & 7)) * 8);
            cp_async16(&sk[buf][dst], kc + src, ok);
            cp_async16(&sv[buf][dst], vc + src, ok);
        }
        cp_async_commit();
    };
    float o[OT][4];
#pragma unroll
    for (u32 j = 0; j < OT; ++j) o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.f;
    float mA = -INFINITY, mB = -INFINITY, lA = 0.f, lB = 0.f;
    if (ntile > 0) load(0);
    for (u32 it = 0; it < ntile; ++it) {
        if (it + 1 < ntile) {
            load(it + 1);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const u32 k0 = it * BN, buf = it & 1;
        if (k0 < wmax) {
            const u16* K = sk[buf];
            const u16* V = sv[buf];
            float s[NT][4];
#pragma unroll
            for (u32 j = 0; j < NT; ++j) s[j][0] = s[j][1] = s[j][2] = s[j][3] = 0.f;
#pragma unroll
            for (u32 k = 0; k < KS; ++k)
#pragma unroll
                for (u32 np = 0; np < NT / 2; ++np) {
                    const u32 r = np * 16 + (lane & 7) + 8 * (lane >> 4), c = 2 * k + ((lane >> 3) & 1);
                    u32 bb[4];
                    ldsm_x4(bb, K + r * DP + ((c ^ (r & 7)) * 8));
                    AttMma<E>::run(s[2 * np], qa[k], bb[0], bb[1]);
                    AttMma<E>::run(s[2 * np + 1], qa[k], bb[2], bb[3]);
                }
            // Scale, mask, the rows' max over the tile.
            const bool mask = k0 + BN > wmin;
            float xa = -INFINITY, xb = -INFINITY;
#pragma unroll
            for (u32 j = 0; j < NT; ++j)
#pragma unroll
                for (u32 e = 0; e < 4; ++e) {
                    const u32 key = k0 + 8 * j + 2 * tg + (e & 1);
                    const bool in = !mask || key < (e < 2 ? la : lb);
                    s[j][e] = in ? s[j][e] * sc2 : -INFINITY;
                    if (e < 2) xa = fmaxf(xa, s[j][e]);
                    else xb = fmaxf(xb, s[j][e]);
                }
#pragma unroll
            for (u32 x = 1; x < 4; x <<= 1) {
                xa = fmaxf(xa, __shfl_xor_sync(0xffffffffu, xa, x));
                xb = fmaxf(xb, __shfl_xor_sync(0xffffffffu, xb, x));
            }
            const float na = fmaxf(mA, xa), nb = fmaxf(mB, xb);
            // A row with no key yet: nothing to rescale, probabilities 0.
            const float za = na == -INFINITY ? 0.f : na, zb = nb == -INFINITY ? 0.f : nb;
            const float aa = na == -INFINITY ? 1.f : att_exp2(mA - na);
            const float ab = nb == -INFINITY ? 1.f : att_exp2(mB - nb);
            mA = na;
            mB = nb;
            float sa = 0.f, sb = 0.f;
#pragma unroll
            for (u32 j = 0; j < NT; ++j) {
                s[j][0] = att_exp2(s[j][0] - za);
                s[j][1] = att_exp2(s[j][1] - za);
                s[j][2] = att_exp2(s[j][2] - zb);
                s[j][3] = att_exp2(s[j][3] - zb);
                sa += s[j][0] + s[j][1];
                sb += s[j][2] + s[j][3];
            }
            lA = lA * aa + sa;
            lB = lB * ab + sb;
#pragma unroll
            for (u32 j = 0; j < OT; ++j) {
                o[j][0] *= aa;
                o[j][1] *= aa;
                o[j][2] *= ab;
                o[j][3] *= ab;
            }
            // O += P V: the probabilities of keys 16k .. 16k + 15 as an A fragment.
#pragma unroll
            for (u32 k = 0; k < PK; ++k) {
                const u32 pa[4] = {AttPack<E>::two(s[2 * k][0], s[2 * k][1]), AttPack<E>::two(s[2 * k][2], s[2 * k][3]),
                                   AttPack<E>::two(s[2 * k + 1][0], s[2 * k + 1][1]),
                                   AttPack<E>::two(s[2 * k + 1][2], s[2 * k + 1][3])};
#pragma unroll
                for (u32 dp = 0; dp < OT / 2; ++dp) {
                    const u32 r = 16 * k + (lane & 7) + 8 * ((lane >> 3) & 1), c = 2 * dp + (lane >> 4);
                    u32 bb[4];
                    ldsm_x4_t(bb, V + r * DP + ((c ^ (r & 7)) * 8));
                    AttMma<E>::run(o[2 * dp], pa, bb[0], bb[1]);
                    AttMma<E>::run(o[2 * dp + 1], pa, bb[2], bb[3]);
                }
            }
        }
        __syncthreads();  // the tile is read before the next load overwrites it
    }
#pragma unroll
    for (u32 x = 1; x < 4; x <<= 1) {
        lA += __shfl_xor_sync(0xffffffffu, lA, x);
        lB += __shfl_xor_sync(0xffffffffu, lB, x);
    }
    // Each lane writes dims 8j + 2tg, + 1 of its two rows.
    auto put = [&](u32 m, float l, u32 e) {
        if (m >= rows) return;
        const float inv = 1.f / l;
        u16* po = out + (((u64)b * T + m / g) * nq + kh * g + m % g) * DP + 2 * tg;
#pragma unroll
        for (u32 j = 0; j < OT; ++j)
            *reinterpret_cast<u32*>(po + 8 * j) = AttPack<E>::two(o[j][e] * inv, o[j][e + 1] * inv);
    };
    put(ma, lA, 0);
    put(mb, lB, 2);
}
#if !defined(DECODE_PDL_ONLY)
#define INSTANTIATE_ATT_TILED(E, SUF, DP)                                                                     \
    extern "C" __global__ void __launch_bounds__(ATT_TILE_THREADS) attention_tiled_d##DP##_##SUF(             \
        const u16* q, const u16* kc, const u16* vc, const u32* pos, u32 T, u32 nq, u32 nk, u32 S, float scale, \
        u16* out) {                                                                                           \
        attention_tiled<E, DP>(q, kc, vc, pos, T, nq, nk, S, scale, out);                                     \
    }
INSTANTIATE_ATT_TILED(BF16, bf16, 64)
INSTANTIATE_ATT_TILED(BF16, bf16, 128)
INSTANTIATE_ATT_TILED(F16, f16, 64)
INSTANTIATE_ATT_TILED(F16, f16, 128)
#endif

// ---------------------------------------------------------------------------------------
// Matrix-vector products for decode (M <= 2 rows): y [M, N] = f(x) [M, K] . W [N, K]^T
// (+ residual [M, N]), with the input transform f fused in:
//   mode 0: f(x) = x;
//   mode 1: f(x) = rms_norm(x) * nw (eps): the norm that precedes a projection;
//   mode 2: f(x) = silu(x[:, :K]) * x[:, K:], x being [M, 2K]: SwiGLU before the down
//           projection.
// f(x) is rounded to the element type (as the separate kernel's output would be) and staged
// once per block in shared memory (M*K elements), except in mode 0 with ks > 1, where the
// products read x where it is (under PDL only for K < GEMV_XG_MAX_K; see gemv below). With `residual`, y = round(round(acc) +
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
// the weights through L1; 8 stages x in mode 0 as well; 16 skips the norm's block reduction
// (each thread's own sum of squares stands in for the row's: x's loads and f(x) stay).
//
// PDL: a programmatic dependent launch's hooks, compiled only with DECODE_PDL for sm_90 and
// later (kernels/decode_pdl.ptx, which the step uses on such GPUs; decode.ptx has none), in
// gemv and mmv (which implements mode 0 only, see below). The block waits for its predecessor grid (griddepcontrol.wait) after its first weight loads and
// before it reads anything another kernel wrote (x, the residual) or writes anything, and it
// lets its successor launch (griddepcontrol.launch_dependents) at its start: the successor's
// blocks then take the slots this grid leaves free, issue their own first weight loads and
// wait (bench/pdl_gemv_probe.cu, run 40: 16 layers of the four products from 55.0 to 48.8 us a
// layer). Launched without the programmatic attribute the hooks do nothing.
// With DECODE_PDL_PROBE as well (the probe), `g_pdl_mode` chooses: bits 0-1: 0 at its start,
// 1 when it starts its last row group, 2 never (at its exit); bit 2: the rest of its first row
// prefetched into L2 before the wait.
// (The hooks themselves are defined before the attention kernel, which uses them too.)
// x read where it is (gemv's XG): through the read-only path, except under PDL, where the
// predecessor may still have been writing x when this grid started (the read comes after
// griddepcontrol.wait, whose guarantee covers ordinary loads, not .nc ones).
static __device__ __forceinline__ uint4 ld_x(const uint4* q) {
#if defined(DECODE_PDL)
    return *q;
#else
    return __ldg(q);
#endif
}
#define GEMV_MAX_THREADS 512
#define GEMV_MAX_WARPS (GEMV_MAX_THREADS / 32)
#ifndef GEMV_MIN_BLOCKS  // probes may set it and GEMV_L (bench/pdl_gemv_probe.cu); the crate's PTX uses these
#define GEMV_MIN_BLOCKS 2
#endif
#define GEMV_MAX_M 2
#ifndef GEMV_L
#define GEMV_L 4
#endif

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

// ---------------------------------------------------------------------------------------
// RMSNorm with the residual add: sum = x + delta (when delta is given, else x), written to
// sum_out (when given); y = sum / rms(sum) * w. The sum is rounded to the element type
// before it is normalised, as an add followed by a norm would. One block per row.
//
// Where every pointer is 16-byte aligned, cols is a multiple of a word's elements and the
// block's threads hold the row in at most NORM_HOLD words each, the row is read and written
// 16 bytes at a time and held in registers between the sum of squares and the output; else
// each thread strides over single elements. A thread adds its squares in the order it holds
// them, then the warp's sums meet by shuffles (warp_sum), and the warps' sums the same way in
// the first warp: the sum's order differs from the element path's. (Issue #32, run 114: with
// this and silu_mul's words, the batch-32 step, which runs these kernels between cuBLAS's
// products, is 3.1-4.5% faster at positions 64 and 2,000.)
#define NORM_HOLD 4
static __device__ __forceinline__ bool aligned16(const void* p) { return ((unsigned long long)p & 15) == 0; }
template <typename E>
__device__ void add_rms_norm(const typename E::T* x, const typename E::T* delta, const typename E::T* w, u32 cols,
                             float eps, typename E::T* sum_out, typename E::T* y) {
    constexpr u32 EL = Pack<E>::EL;
    __shared__ float red[32];
    const u64 row = blockIdx.x;
    const u32 tid = threadIdx.x, words = cols / EL;
    const bool vec = cols % EL == 0 && words <= NORM_HOLD * blockDim.x && aligned16(x) && aligned16(delta) && aligned16(w) &&
                     aligned16(sum_out) && aligned16(y);
    auto block_inv = [&](float ss) {
        ss = warp_sum(ss);
        if (tid % 32 == 0) red[tid / 32] = ss;
        __syncthreads();
        if (tid < 32) {
            float v = tid < blockDim.x / 32 ? red[tid] : 0.f;
            v = warp_sum(v);
            if (tid == 0) red[0] = v;
        }
        __syncthreads();
        return rsqrtf(red[0] / cols + eps);
    };
    if (vec) {
        float v[NORM_HOLD][EL];
        float ss = 0.f;
#pragma unroll
        for (u32 h = 0; h < NORM_HOLD; ++h) {
            const u32 q = tid + h * blockDim.x;
            if (q >= words) continue;
            const u64 o = row * cols + (u64)q * EL;
            Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + o), v[h]);
            if (delta) {
                float d[EL];
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(delta + o), d);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) v[h][j] += d[j];
                const uint4 sv = pack16<E>(v[h]);
                *reinterpret_cast<uint4*>(sum_out + o) = sv;
                Pack<E>::unpack(sv, v[h]);
            }
#pragma unroll
            for (u32 j = 0; j < EL; ++j) ss += v[h][j] * v[h][j];
        }
        const float inv = block_inv(ss);
#pragma unroll
        for (u32 h = 0; h < NORM_HOLD; ++h) {
            const u32 q = tid + h * blockDim.x;
            if (q >= words) continue;
            float gw[EL];
            Pack<E>::unpack(*reinterpret_cast<const uint4*>(w + (u64)q * EL), gw);
#pragma unroll
            for (u32 j = 0; j < EL; ++j) v[h][j] = v[h][j] * inv * gw[j];
            *reinterpret_cast<uint4*>(y + row * cols + (u64)q * EL) = pack16<E>(v[h]);
        }
        return;
    }
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
    const float inv = block_inv(ss);
    for (u32 c = tid; c < cols; c += blockDim.x) {
        const float v = E::ld(delta ? sum_out : x, row * cols + c);
        E::st(y, row * cols + c, v * inv * E::ld(w, c));
    }
}

// SwiGLU: out [N, I] = silu(in[:, :I]) * in[:, I:], in [N, 2I] (a fused gate/up projection).
// 16 bytes at a time where I is a multiple of a word's elements and both pointers are
// 16-byte aligned, else element by element; the same values either way.
template <typename E>
__device__ void silu_mul(const typename E::T* in, u32 inter, u64 n, typename E::T* out) {
    constexpr u32 EL = Pack<E>::EL;
    const u64 first = (u64)blockIdx.x * blockDim.x + threadIdx.x, stride = (u64)gridDim.x * blockDim.x;
    if (inter % EL == 0 && aligned16(in) && aligned16(out)) {
        for (u64 q = first; q < n / EL; q += stride) {
            const u64 i = q * EL, r = i / inter, c = i - r * inter;
            float g[EL], u[EL];
            Pack<E>::unpack(*reinterpret_cast<const uint4*>(in + r * 2 * inter + c), g);
            Pack<E>::unpack(*reinterpret_cast<const uint4*>(in + r * 2 * inter + inter + c), u);
#pragma unroll
            for (u32 j = 0; j < EL; ++j) g[j] = g[j] / (1.f + __expf(-g[j])) * u[j];
            *reinterpret_cast<uint4*>(out + i) = pack16<E>(g);
        }
        return;
    }
    for (u64 x = first; x < n; x += stride) {
        const u64 r = x / inter, c = x - r * inter;
        const float g = E::ld(in, r * 2 * inter + c), u = E::ld(in, r * 2 * inter + inter + c);
        E::st(out, x, g / (1.f + __expf(-g)) * u);
    }
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

// The norm's two steps on a 16-byte word of x: its squares added to `ss` in element order, and
// f(x) = x * inv * g rounded to the element type. The held gemv norm and mmv's staging under
// PDL use them; the older paths spell the same operations out (a change to those alters their
// PTX's instruction order, so it waits for a GPU run).
template <typename E>
static __device__ __forceinline__ void add_squares(const uint4 xw, float& ss) {
    float v[Pack<E>::EL];
    Pack<E>::unpack(xw, v);
#pragma unroll
    for (u32 j = 0; j < Pack<E>::EL; ++j) ss += v[j] * v[j];
}
template <typename E>
static __device__ __forceinline__ uint4 normed(const uint4 xw, const uint4 gw, float inv) {
    float v[Pack<E>::EL], g[Pack<E>::EL];
    Pack<E>::unpack(xw, v);
    Pack<E>::unpack(gw, g);
#pragma unroll
    for (u32 j = 0; j < Pack<E>::EL; ++j) v[j] = v[j] * inv * g[j];
    return pack16<E>(v);
}

// One output as the products write it (gemv and mmv): the sum rounded to the element type
// (GLU: the gate's and the up's sums, each rounded, then silu(gate) * up, rounded), plus the
// residual when there is one, rounded again.
template <typename E, bool GLU>
static __device__ __forceinline__ typename E::T product_out(float s, float su, bool has_res, float res) {
    typename E::T v;
    E::st(&v, 0, s);
    if (GLU) {
        typename E::T u;
        E::st(&u, 0, su);
        const float g = E::ld(&v, 0);
        E::st(&v, 0, g / (1.f + __expf(-g)) * E::ld(&u, 0));
    }
    if (has_res) E::st(&v, 0, E::ld(&v, 0) + res);
    return v;
}

// The norm's 1 / rms over a row that the block's threads hold in parts (each thread's sum of
// squares `ss`): the warps' sums, then theirs in warp order, in `red` (a float a warp); every
// thread gets it. Two barriers: `red` is free again when it returns.
static __device__ __forceinline__ float block_inv_rms(float ss, float* red, u32 warp, u32 lane, u32 nwarps, u32 K,
                                                      float eps) {
    ss = warp_sum(ss);
    if (lane == 0) red[warp] = ss;
    __syncthreads();
    float tot = 0.f;
    for (u32 i = 0; i < nwarps; ++i) tot += red[i];
    const float inv = rsqrtf(tot / K + eps);
    __syncthreads();
    return inv;
}

// XG (mode 0 only): the products read x where it is (through L1, which the weight loads
// bypass), not staged: no staging round and no block barrier.
template <typename E, bool GLU, u32 DIAG, bool XG, int FIXED>
__device__ void gemv_body(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 mode,
                          const typename E::T* nw, float eps, const typename E::T* residual, typename E::T* y, u32 ks,
                          unsigned long long* amax) {
    if (FIXED >= 0) mode = (u32)FIXED;
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
    DECODE_TRACE(3, N, K, GLU);
    // The first weight loads and residuals, before the staging.
    const u32 pdl = pdl_mode();
    if ((pdl & 3) == 0 || ((pdl & 3) == 1 && blockIdx.x + gridDim.x >= groups)) pdl_trigger();
    bool loaded = false;
    if (blockIdx.x < groups) {
        const u32 n = blockIdx.x * rows_blk + row_in;
        if (n < N && s_begin < s_end) {
            load(n, s_begin);
            loaded = true;
            if (pdl & 4)
                for (u32 s = s_begin + GEMV_L; s < s_end; ++s) {
                    const u32 k = (s * 32 + lane) * EL;
                    if (k < KR) pdl_prefetch(GLU && k >= K ? W + (u64)(N + n) * K + (k - K) : W + (u64)n * K + k);
                }
        }
    }
    // The norm where each thread has at most one 16-byte word of a row (K <= EL * nt): its word
    // of the norm weight is loaded now, before the wait (a weight), and its word of x stays in
    // a register from the sum of squares to f(x). The sums, their order and f(x)'s rounding are
    // the general path's below; what goes is a second read of x and the norm weight's round
    // trip after the sums (issue #32, runs 55 and 57: the step at batch 1, position 64, 2%
    // faster).
    const bool held = mode == 1 && !(DIAG & 1) && !XG && K <= nt * EL;
    const u32 hk = tid * EL;
    uint4 nw_h = make_uint4(0, 0, 0, 0);
    if (held && hk < K) nw_h = __ldg(reinterpret_cast<const uint4*>(nw + hk));
    pdl_wait();
    DECODE_TRACE(0, N, K, GLU);
    load_res(blockIdx.x);
    for (u32 m = 0; m < M && held; ++m) {
        float ss = 0.f;
        uint4 xw = make_uint4(0, 0, 0, 0);
        if (hk < K) {
            xw = *reinterpret_cast<const uint4*>(x + (u64)m * K + hk);
            add_squares<E>(xw, ss);
        }
        const float inv = (DIAG & 16) ? rsqrtf(ss / K + eps) : block_inv_rms(ss, red, warp, lane, nwarps, K, eps);
        if (hk < K) *reinterpret_cast<uint4*>(xs + (u64)m * K + hk) = normed<E>(xw, nw_h, inv);
    }
    // Staging f(x), 16 bytes a thread a round (with XG, mode 0 reads x where it is: no staging).
    for (u32 m = 0; m < M && !(DIAG & 1) && !XG && !held; ++m) {
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
            inv = (DIAG & 16) ? rsqrtf(ss / K + eps) : block_inv_rms(ss, red, warp, lane, nwarps, K, eps);
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
    DECODE_TRACE(2, N, K, GLU);
    // Where the products read f(x): shared memory, or x itself (through L1).
    const T* fx = XG ? x : xs;
    unsigned long long best = 0;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 n = grp * rows_blk + row_in;
        if ((pdl & 3) == 1 && grp != blockIdx.x && grp + gridDim.x >= groups) pdl_trigger();
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
                                    Pack<E>::unpack(XG ? ld_x(q) : *q, xv);
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
            const T t = product_out<E, GLU>(mine, mine_up, residual != nullptr, res);
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
    DECODE_TRACE(1, N, K, GLU);
}

// The plain kernel in mode 0 with ks > 1 reads x where it is (DIAG & 8, in the probe: stages
// it as the other cases do). Measured on an H100 (bench/gemv_probe.cu, run 7): in place is
// faster for the output and down projections (ks 2), slower for a plain 3072-row product at
// ks 1 (7.36 against 6.76 us). The GLU kernel always stages (it runs after a norm).
// Under PDL (decode_pdl.ptx) a row of K >= GEMV_XG_MAX_K elements is staged as well. Why it
// pays there is not measured; likely, each block's first reads of x queue behind the weight
// loads it issued before its wait, once per 128 bytes of x through L1, where the staging
// queues once and pays a barrier. Measured on
// an H100 (bench/stream_gemv_probe.cu, run 83; 16 launches of one product under PDL, µs a
// launch): the down projection (K 8,192) 13.50 in place, 12.57 staged; the output projection
// (K 2,048) 4.00 in place, 4.58 staged. Only these two widths were measured.
#if defined(DECODE_PDL)
#define GEMV_XG_MAX_K 4096
#define GEMV_XG_WIDTH(K) ((K) < GEMV_XG_MAX_K)
#else
#define GEMV_XG_WIDTH(K) true
#endif
// FIXED >= 0: the kernel for that mode alone (gemv_m0, gemv_m1, gemv_glu_m1: the `mode`
// argument is not read), compiled without the other modes' code. The same sums in the same
// order as the kernel that reads `mode` (the entry points below say what it gains).
template <typename E, bool GLU = false, u32 DIAG = 0, int FIXED = -1>
__device__ void gemv(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 mode,
                     const typename E::T* nw, float eps, const typename E::T* residual, typename E::T* y, u32 ks,
                     unsigned long long* amax) {
    if (FIXED >= 0) mode = (u32)FIXED;
    if (!GLU && mode == 0 && ks > 1 && GEMV_XG_WIDTH(K) && !(DIAG & 8))
        gemv_body<E, GLU, DIAG, true, FIXED>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
    else
        gemv_body<E, GLU, DIAG, false, FIXED>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
}

// ---------------------------------------------------------------------------------------
// The same products for 3 to 32 rows of x, on tensor cores (16-bit types; issue #32): modes
// 0 and 1, the residual, the argmax and the GLU epilogue of `gemv`, one kernel each (mode 2,
// SwiGLU before the product, is not taken: the step applies SwiGLU in the gate/up product's
// epilogue instead).
//
// A warp computes a tile: 16 rows of W, or 16 gate rows and their 16 up rows (GLU), against
// 8 * NT rows of x (NT = 1, 2, 4: up to 8, 16, 32), over a slice of K. The ks warps of a
// tile are in one block and their sums meet in shared memory in a fixed order: the result
// does not depend on timing. Per 32 columns a lane loads 16 consecutive bytes of each of its
// weight rows and feeds them to two m16n8k16 products with the columns permuted; x is read
// with the same permutation, so each dot product is unchanged: lane (g, t) = (lane / 4,
// lane % 4) holds columns 8t .. 8t + 7 of the chunk; in product h its fragment columns 2t,
// 2t + 1 are the words' elements 8t + 4h, +1 and its columns 2t + 8, 2t + 9 are 8t + 4h + 2,
// +3. Two rounds of weight loads are in flight while the products run (two register
// buffers, each refilled two rounds ahead).
//
// Mode 0 reads x where it is, through L1 (the weights bypass it). Mode 1 (STAGE) copies x and
// the norm weight to shared memory and forms f(x) there in place, rounded to the element type
// as the GEMV's staging rounds it; the sums of squares are added in the same order either way:
// - under PDL (decode_pdl.ptx), the first weights and the norm weight are loaded before the
//   wait; then one warp takes a row of x: it loads the row, stores it and sums its squares in
//   one pass (lane l adds words l, l + 32, ...), and a single barrier separates the loads from
//   f(x) (issue #32, runs 54, 55 and 64: the step at 4 and 8 rows of x 1.2-2.2% faster than
//   the staging below, under PDL);
// - without PDL (decode.ptx), every thread loads words of x and the norm weight, 8 in flight,
//   then issues its first weights; the sums come from shared memory after a barrier. Without
//   PDL this is the faster of the two (run 63: batch 4 at position 64, 1.192-1.195 ms against
//   1.218-1.230 with the warp-a-row staging).
// Staged rows are padded by 64 bytes, so a quarter-warp's 16-byte reads hit distinct banks.
//
// Dynamic shared memory: (STAGE) (8 * NT + 1) * (K / 8 + MMV_PAD) * 16 bytes, then warps * TA *
// 16 * (8 * NT + 1) * 4 bytes (the warps' sums). Blocks of 256 or 512 threads; ks divides the
// warps. The crate launches NT = 1 (2 to 8 rows: gpu.rs `mmv_launch`, `takes_mmv`); bench/mmv_probe.cu
// measures NT = 2 and 4 as well.
#define MMV_WARPS_MAX 16
#define MMV_MAX_M 32
#define MMV_PAD 4  // 16-byte words of padding a staged row

// x (and the norm weight) 16 bytes at a time, zero where not `ok`; under PDL a coherent
// load (see ld_x).
static __device__ __forceinline__ uint4 mmv_ldx(const void* p, bool ok) {
    return ok ? ld_x(reinterpret_cast<const uint4*>(p)) : make_uint4(0, 0, 0, 0);
}
// The sums of TA x NT tensor-core tiles set to zero.
template <u32 TA, u32 NT>
static __device__ __forceinline__ void mma_zero(float (&acc)[TA][NT][4]) {
#pragma unroll
    for (u32 j = 0; j < NT; ++j)
#pragma unroll
        for (u32 ta = 0; ta < TA; ++ta)
#pragma unroll
            for (u32 i = 0; i < 4; ++i) acc[ta][j][i] = 0.f;
}
// A lane's words of W for one 32-column chunk of TA 16-row tiles from `tile` (GLU, TA = 2: the
// gate tile, then the up tile N rows further): rows tile * 16 + g and + 8, the 8 columns from
// k; zeros where !ok or past N.
template <typename E, u32 TA>
static __device__ __forceinline__ void mma_load_w(uint4 (&a)[TA][2], const typename E::T* W, u32 N, u32 K, u32 tile,
                                                  u32 g, u32 k, bool ok) {
#pragma unroll
    for (u32 ta = 0; ta < TA; ++ta)
#pragma unroll
        for (u32 h = 0; h < 2; ++h) {
            const u32 n = tile * 16 + g + 8 * h;
            const u64 row = ta ? (u64)N + n : (u64)n;
            a[ta][h] = att_ld16(W + row * K + k, ok && n < N);
        }
}
// The products of one 32-column chunk on tensor cores: TA 16-row tiles of W (a[ta][0]: row g,
// a[ta][1]: row g + 8, 8 columns a lane) against NT 8-row groups of x (b[j]: row g of the group,
// the same 8 columns), as two k16 steps (words 0-1 of each 16-byte word, then 2-3: the column
// permutation that W's and x's loads share).
template <typename E, u32 TA, u32 NT>
static __device__ __forceinline__ void mma_chunk(float (&acc)[TA][NT][4], const uint4 (&a)[TA][2], const uint4 (&b)[NT]) {
#pragma unroll
    for (u32 h = 0; h < 2; ++h)
#pragma unroll
        for (u32 ta = 0; ta < TA; ++ta) {
            const u32 af[4] = {att_word(a[ta][0], 2 * h), att_word(a[ta][1], 2 * h), att_word(a[ta][0], 2 * h + 1),
                               att_word(a[ta][1], 2 * h + 1)};
#pragma unroll
            for (u32 j = 0; j < NT; ++j) AttMma<E>::run(acc[ta][j], af, att_word(b[j], 2 * h), att_word(b[j], 2 * h + 1));
        }
}
// 32-column chunks a round of weight loads at NT = 2 and 4 (the probe's PROBE_CH; NT = 1 takes 2).
#ifndef MMV_WIDE_CH
#define MMV_WIDE_CH 2
#endif
template <typename E, u32 NT, bool GLU, bool STAGE>
__device__ void mmv(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 mode,
                    const typename E::T* nw, float eps, const typename E::T* residual, typename E::T* y, u32 ks,
                    unsigned long long* amax) {
    typedef typename E::T T;
    constexpr u32 TA = GLU ? 2 : 1;
    constexpr u32 CH = NT == 1 ? 2 : MMV_WIDE_CH;  // 32-column chunks a round
    constexpr u32 PW = 8 * NT + 1;
    extern __shared__ uint4 mmv_dyn[];  // STAGE: f(x) [8 * NT][K / 8 + MMV_PAD], nw [K / 8 + MMV_PAD]; the sums
    __shared__ float inv_s[MMV_MAX_M];
    __shared__ unsigned long long bmax[MMV_MAX_M];
    const u32 nthreads = blockDim.x, nwarps = nthreads / 32;
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, t = lane % 4;
    const u32 tiles_blk = nwarps / ks, tile_in = warp / ks, slice = warp % ks;
    const u32 tiles = (N + 15) / 16, groups = (tiles + tiles_blk - 1) / tiles_blk;
    const u32 chunks = (K + 31) / 32, per = (chunks + ks - 1) / ks;
    const u32 c_begin = min(chunks, slice * per), c_end = min(chunks, c_begin + per);
    const u32 xstride = K / 8 + MMV_PAD;
    uint4* xs = mmv_dyn;
    float* part = reinterpret_cast<float*>(mmv_dyn + (STAGE ? (8 * NT + 1) * xstride : 0));
    auto P = [&](u32 w, u32 row, u32 m) -> float& { return part[(w * TA * 16 + row) * PW + m]; };

    uint4 a0[CH][TA][2], a1[CH][TA][2];
    auto load_a = [&](uint4 (&a)[CH][TA][2], u32 tile, u32 c0) {
#pragma unroll
        for (u32 ch = 0; ch < CH; ++ch) {
            const u32 c = c0 + ch, k = c * 32 + t * 8;
            const bool ok = c < c_end && k < K;
            mma_load_w<E>(a[ch], W, N, K, tile, g, k, ok);
        }
    };
    auto product = [&](const uint4 (&a)[CH][TA][2], u32 c0, float (&acc)[TA][NT][4]) {
#pragma unroll
        for (u32 ch = 0; ch < CH; ++ch) {
            const u32 c = c0 + ch, k = c * 32 + t * 8;
            const bool ok = c < c_end && k < K;
            uint4 b[NT];
#pragma unroll
            for (u32 j = 0; j < NT; ++j) {
                const u32 m = g + 8 * j;
                if (STAGE) b[j] = ok ? xs[m * xstride + k / 8] : make_uint4(0, 0, 0, 0);
                else b[j] = mmv_ldx(x + (u64)m * K + k, ok && m < M);
            }
            mma_chunk<E>(acc, a[ch], b);
        }
    };
    // The first two rounds of weights, in flight while f(x) is formed (STAGE: issued after
    // the first round of x's loads, so these are not queued behind them; under PDL before the
    // wait, and so before x's loads).
    const bool pre = blockIdx.x < groups && blockIdx.x * tiles_blk + tile_in < tiles;
    auto preload = [&]() {
        if (pre) {
            load_a(a0, blockIdx.x * tiles_blk + tile_in, c_begin);
            load_a(a1, blockIdx.x * tiles_blk + tile_in, c_begin + CH);
        }
    };
    if (amax && tid < MMV_MAX_M) bmax[tid] = 0;
    // PDL (decode_pdl.ptx): the successor may launch now; the first weights are issued, then
    // the block waits for its predecessor before it reads x or the residual, or writes to global
    // memory (STAGE: the norm weight goes to shared memory before the wait).
#if defined(DECODE_PDL)
    constexpr bool PDL = true;
#else
    constexpr bool PDL = false;
#endif
    // STAGE under PDL: the norm weight to shared memory (row 8 * NT) before the wait (a weight),
    // with the first weights in flight.
    const u32 words = K / 8;
    if (PDL) {
        if ((pdl_mode() & 3) == 0) pdl_trigger();
        preload();
        if (STAGE)
            for (u32 q = tid; q < words; q += nthreads) xs[8 * NT * xstride + q] = mmv_ldx(nw + q * 8, true);
        pdl_wait();
    }
    if (!STAGE && !PDL) preload();
    if (STAGE && PDL) {
        // One warp a row of x: its words to shared memory as they are and its sum of squares
        // in registers (lane l adds words l, l + 32, ..., the order of the path below), then
        // the row's 1 / rms; rows past M zero. 8 loads a lane in flight.
        for (u32 m = warp; m < 8 * NT; m += nwarps) {
            const bool on = m < M;
            float ss = 0.f;
            for (u32 base = lane; base < words; base += 32 * 8) {
                uint4 v[8];
#pragma unroll
                for (u32 j = 0; j < 8; ++j) {
                    const u32 q = base + 32 * j;
                    v[j] = mmv_ldx(x + (u64)m * K + q * 8, on && q < words);
                }
#pragma unroll
                for (u32 j = 0; j < 8; ++j) {
                    const u32 q = base + 32 * j;
                    if (q < words) {
                        xs[m * xstride + q] = v[j];
                        add_squares<E>(v[j], ss);
                    }
                }
            }
            ss = warp_sum(ss);
            if (lane == 0) inv_s[m] = rsqrtf(ss / K + eps);
        }
        __syncthreads();
        // f(x) in place, each warp over the rows it loaded.
        for (u32 m = warp; m < M; m += nwarps) {
            const float inv = inv_s[m];
            for (u32 q = lane; q < words; q += 32) {
                float v[8], gv[8];
                Pack<E>::unpack(xs[m * xstride + q], v);
                Pack<E>::unpack(xs[8 * NT * xstride + q], gv);
#pragma unroll
                for (u32 j = 0; j < 8; ++j) v[j] = v[j] * inv * gv[j];
                xs[m * xstride + q] = pack16<E>(v);
            }
        }
    }
    if (STAGE && !PDL) {
        // Without PDL: every thread loads words of x and of the norm weight (row 8 * NT), 8 in
        // flight, then issues its first weights; the sums are taken from shared memory (see
        // above for why the two launches stage differently).
        const u32 total = (8 * NT + 1) * words;
        for (u32 base = tid; base < total; base += 8 * nthreads) {
            uint4 v[8];
#pragma unroll
            for (u32 j = 0; j < 8; ++j) {
                const u32 i = base + j * nthreads, m = i / words, q = i % words;
                const bool w = m == 8 * NT;
                v[j] = mmv_ldx(w ? nw + q * 8 : x + (u64)m * K + q * 8, i < total && (w || m < M));
            }
            if (base == tid) preload();
#pragma unroll
            for (u32 j = 0; j < 8; ++j) {
                const u32 i = base + j * nthreads;
                if (i < total) xs[(i / words) * xstride + i % words] = v[j];
            }
        }
        if (tid >= total) preload();  // threads that had no word to load
        __syncthreads();
        for (u32 m = warp; m < M; m += nwarps) {
            float ss = 0.f;
            for (u32 q = lane; q < words; q += 32) {
                float v[8];
                Pack<E>::unpack(xs[m * xstride + q], v);
#pragma unroll
                for (u32 j = 0; j < 8; ++j) ss += v[j] * v[j];
            }
            ss = warp_sum(ss);
            if (lane == 0) inv_s[m] = rsqrtf(ss / K + eps);
        }
        __syncthreads();
        for (u32 i = tid; i < M * words; i += nthreads) {
            const u32 m = i / words, q = i % words;
            float v[8], gv[8];
            Pack<E>::unpack(xs[m * xstride + q], v);
            Pack<E>::unpack(xs[8 * NT * xstride + q], gv);
            const float inv = inv_s[m];
#pragma unroll
            for (u32 j = 0; j < 8; ++j) v[j] = v[j] * inv * gv[j];
            xs[m * xstride + q] = pack16<E>(v);
        }
    }
    __syncthreads();

    bool first = true;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 tile = grp * tiles_blk + tile_in;
        float acc[TA][NT][4];
        mma_zero(acc);
        if (tile < tiles) {
            if (!first) {
                load_a(a0, tile, c_begin);
                load_a(a1, tile, c_begin + CH);
            }
            for (u32 c0 = c_begin; c0 < c_end; c0 += 2 * CH) {
                product(a0, c0, acc);
                load_a(a0, tile, c0 + 2 * CH);
                if (c0 + CH >= c_end) break;
                product(a1, c0 + CH, acc);
                load_a(a1, tile, c0 + 3 * CH);
            }
        }
        first = false;
        // The warp's sums to shared memory.
#pragma unroll
        for (u32 ta = 0; ta < TA; ++ta)
#pragma unroll
            for (u32 j = 0; j < NT; ++j) {
                P(warp, ta * 16 + g, 8 * j + 2 * t) = acc[ta][j][0];
                P(warp, ta * 16 + g, 8 * j + 2 * t + 1) = acc[ta][j][1];
                P(warp, ta * 16 + g + 8, 8 * j + 2 * t) = acc[ta][j][2];
                P(warp, ta * 16 + g + 8, 8 * j + 2 * t + 1) = acc[ta][j][3];
            }
        __syncthreads();
        // The group's outputs, consecutive threads on consecutive columns of y.
        const u32 FB = tiles_blk * 16;
        for (u32 i = tid; i < FB * M; i += nthreads) {
            const u32 m = i / FB, f = i % FB, ti = f / 16, r = f % 16;
            const u32 n = (grp * tiles_blk + ti) * 16 + r;
            if (n >= N) continue;
            float s = 0.f, su = 0.f;
            for (u32 sl = 0; sl < ks; ++sl) {
                const u32 w = ti * ks + sl;
                s += P(w, r, m);
                if (GLU) su += P(w, 16 + r, m);
            }
            const u64 o = (u64)m * N + n;
            const T v = product_out<E, GLU>(s, su, residual != nullptr, residual ? E::ld(residual, o) : 0.f);
            y[o] = v;
            if (amax) {
                const unsigned long long pk = ((unsigned long long)key_of(E::ld(&v, 0)) << 32) | (0xffffffffu - n);
                if (pk > bmax[m]) atomicMax(&bmax[m], pk);
            }
        }
        __syncthreads();
    }
    if (amax && tid < M && bmax[tid]) atomicMax(amax + tid, bmax[tid]);
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

// A key back to its float.
static __device__ __forceinline__ float float_of_key(u32 k) {
    return __uint_as_float((k & 0x80000000u) ? (k & 0x7fffffffu) : ~k);
}
// A logit's fixed-point probability, exp((v - xmax) / t) * 2^24 (NaN weighs 0, as -inf does).
static __device__ __forceinline__ u64 weight_of(float v, float xmax, float inv_t) {
    const float w = expf((v - xmax) * inv_t) * 16777216.f;
    return w == w ? (u64)w : 0;
}

// Adds `val` (< 2^32) to hist[bin] for every lane with `p`, one atomic per distinct bin of
// the warp: the lanes of a bin sum their values first, in 16-bit halves (integer sums: the
// same totals in any order). Every lane of the warp must call it.
static __device__ __forceinline__ void warp_hist_add(unsigned long long* hist, u32 bin, u64 val, bool p) {
    const unsigned act = __ballot_sync(0xffffffffu, p);
    if (p) {
        const unsigned peers = __match_any_sync(act, bin);
        const u32 l = __reduce_add_sync(peers, (u32)(val & 0xffffu)), h = __reduce_add_sync(peers, (u32)(val >> 16));
        if ((threadIdx.x % 32) == (u32)(__ffs(peers) - 1))
            atomicAdd(&hist[bin], (unsigned long long)l + ((unsigned long long)h << 16));
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
                const u64 w = !in ? 0 : weighted ? weight_of(v[j], xmax, inv_t) : 1;
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

// One row drawn by one block, scanning the whole row (every pass over the vocabulary runs
// on one multiprocessor): the reference the multi-block path below must equal, and its
// fallback. Returns the token; advances the row's counter when it draws. Every thread of the
// block calls it.
// Not inlined: the fallback of sample_pick, whose draw would otherwise share its registers.
template <typename E>
__device__ __noinline__ u32 sample_scan(const typename E::T* x, u32 V, float temp, float top_p, u32 top_k, u32* g) {
    const u32 tid = threadIdx.x, nt = blockDim.x;
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
                if (c * 8 + j < V && key_of(v[j]) >= kmin) total += weight_of(v[j], xmax, inv_t);
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
                if (i0 + j < hi && key_of(v[j]) >= keep) mine += weight_of(v[j], xmax, inv_t);
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
            const u64 c0 = ((u64)g[2]) | ((u64)g[3] << 32);
            const u64 seed = ((u64)g[0]) | ((u64)g[1] << 32);
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
                    run += weight_of(v, xmax, inv_t);
                    if (r < run) { chosen = i; break; }
                }
            }
        }
        __syncthreads();
        token = chosen;
        if (tid == 0) {
            const u64 c1 = (((u64)g[2]) | ((u64)g[3] << 32)) + 1;
            g[2] = (u32)c1;
            g[3] = (u32)(c1 >> 32);
        }
    }
    return token;
}

template <typename E>
__device__ void sample(const typename E::T* logits, u32 V, const float* params, u32* rng, u32* tokens,
                       u32* pos, const u32* active, u32 advance, unsigned long long* amax) {
    const u32 b = blockIdx.x, tid = threadIdx.x;
    // The LM head's packed argmax of this row (when it computed one), then the slot is set
    // back to 0 for the next step, whether or not the row is active.
    const unsigned long long pre = amax ? amax[b] : 0;
    __syncthreads();
    if (amax && tid == 0) amax[b] = 0;
    if (active && active[b] == 0) return;
    const float temp = params[b * 3 + 0], top_p = params[b * 3 + 1];
    const u32 top_k = (u32)params[b * 3 + 2];
    u32 token;
    if ((!(temp > 0.f) || top_k == 1) && pre != 0)
        token = 0xffffffffu - (u32)(pre & 0xffffffffu);  // greedy, and the argmax is known: no scan
    else
        token = sample_scan<E>(logits + (u64)b * V, V, temp, top_p, top_k, rng + b * 4);
    if (tid == 0) {
        tokens[b] = token;
        pos[b] += advance;
    }
}

// ---------------------------------------------------------------------------------------
// Sampling across many blocks a row (issue #32): the draw of `sample_scan`, bit for bit,
// without one multiprocessor scanning the whole vocabulary several times.
//
// The row is cut into P parts of `chunk` logits (a multiple of 8). Four kernels:
//   sample_max   (grid P x B, only when the LM head gave no packed argmax): each part's
//                largest key and first index, atomicMax'ed into the row's scratch slot.
//   sample_part  (grid P x B): each part's candidates, at most SP_C of its largest logits,
//                in index order, with a threshold key: every logit of the part above it is a
//                candidate. When no top-k applies, the part's exact fixed-point weight sum
//                instead, and with top-p its weights by bin (sp_bin) into the row's histogram,
//                and the part's own running weight by bin into the scratch.
//   sample_gather (grid P x B, top-p alone only): each part's keys in top-p's bin of the
//                histogram, listed in the row's scratch.
//   sample_pick  (grid B): one block a row merges the candidates, finds the top-k and top-p
//                thresholds among them and draws. With neither filter it draws from the
//                parts' sums and scans only the part that holds the draw. With top-p alone it
//                finds the bin where the kept weight reaches top-p's share from the histogram,
//                the threshold among that bin's keys (sample_gather's list),
//                then each part's kept weight (its running weight before that bin, plus its
//                gathered keys at or above the threshold), and scans only the part that holds
//                the draw.
//
// Why the candidates suffice: a part's list holds every logit of the part above its threshold
// key. Let L be the largest threshold among the parts whose list is full; every logit of the
// row with a key above L is a candidate. A threshold (top-k's k-th largest key, top-p's cut)
// found among the candidates and above L is therefore the row's own threshold, and every
// logit it keeps is a candidate. When a threshold falls at or below L (ties, or a top-p set
// too wide for the candidates), the block falls back to `sample_scan`: the same draw, slower.
// Sums are of integers (exact in any order), thresholds are keys, and the uniform, the
// weights and the index order of the draw are `sample_scan`'s: the token is the same.
//
// scratch [B, SP_WORDS] u32, a row: the packed argmax slot (u64, when the LM head gave
// none), the parts' weight sums (u64 [SP_PARTS]), the parts' counts and thresholds
// ([SP_PARTS][2]: count | full << 31, threshold key), candidate keys and indices
// ([SP_PARTS][SP_C] each), top-p alone's histogram (u64 [SP_BINS], the parts' weights by
// sp_bin), and each part's running weight by bin (u64 [SP_PARTS][SP_BINS]: entry b is the
// part's weight in bins before b; written whole by every top-p-alone step that uses it).
// Last, top-p alone's gather (u32 [2]): how many keys sample_gather found in the threshold bin
// (their keys in the candidate keys' words and their parts in the indices', which a top-p-alone
// row does not use otherwise), and that bin + 1 (0: no gather ran).
// sample_pick sets the argmax slot, the histogram and the gather's two words back to 0.
#define SP_PARTS 128  // sample_pick's scan of the parts' sums takes 4 a lane
#define SP_C 64
#define SP_LB 32  // sample_part's first try: candidates from the 32nd largest of its threads' maxima
#define SP_PART_THREADS 256
#define SP_PICK_THREADS 1024
#define SP_RANK_GRID 128  // sample_part ranks its threads' maxima directly up to this many blocks
#define SP_BINS 256  // top-p alone: bins of the scaled distance from the row's maximum
#define SP_RUN 65536  // top-p alone: the longest part whose histogram's 32-bit halves cannot wrap
#define SP_SUMS 2
#define SP_INFO (SP_SUMS + 2 * SP_PARTS)
#define SP_KEYS (SP_INFO + 2 * SP_PARTS)
#define SP_IDX (SP_KEYS + SP_PARTS * SP_C)
#define SP_HIST (SP_IDX + SP_PARTS * SP_C)
#define SP_PHIST (SP_HIST + 2 * SP_BINS)
#define SP_GATHER (SP_PHIST + 2 * SP_PARTS * SP_BINS)
#define SP_WORDS (SP_GATHER + 2)

// Top-p alone's bin of a logit: its distance below the row's maximum over the temperature,
// (xmax - v) / t, in steps of 1/15 (bins 0-254 cover [0, 17)); bin 255 holds the rest, whose
// fixed-point weights are all 0 (exp(-17) * 2^24 < 1), and NaN. A larger logit never falls
// in a larger bin, so a bin is a range of keys. Rounded explicitly: sample_part and
// sample_pick must bin alike.
static __device__ __forceinline__ u32 sp_bin(float v, float xmax, float inv_t) {
    const float f = __fmul_rn(__fmul_rn(__fsub_rn(xmax, v), inv_t), 15.f);
    return f < 255.f ? (u32)f : 255u;
}


// Inclusive scan of `v` over the block (blockDim.x a multiple of 32, at most 1024); `sm`
// holds 33 values of shared memory; `total` gets the block's sum. Every thread calls it.
static __device__ __forceinline__ u64 block_scan(u64 v, u64* sm, u64& total) {
    const u32 tid = threadIdx.x, lane = tid % 32, warp = tid / 32, nw = blockDim.x / 32;
    u64 inc = v;
    for (int o = 1; o < 32; o <<= 1) {
        const u64 n = __shfl_up_sync(0xffffffffu, inc, o);
        if ((int)lane >= o) inc += n;
    }
    if (lane == 31) sm[warp] = inc;
    __syncthreads();
    if (warp == 0) {
        u64 w = lane < nw ? sm[lane] : 0, wi = w;
        for (int o = 1; o < 32; o <<= 1) {
            const u64 n = __shfl_up_sync(0xffffffffu, wi, o);
            if ((int)lane >= o) wi += n;
        }
        if (lane < nw) sm[lane] = wi - w;  // exclusive: the warps before
        if (lane == 31) sm[32] = wi;
    }
    __syncthreads();
    inc += sm[warp];
    total = sm[32];
    __syncthreads();
    return inc;
}

static __device__ __forceinline__ u64 block_sum(u64 v, u64* sm) {
    u64 t;
    block_scan(v, sm, t);
    return t;
}

// Top-p alone's bin, found alike by sample_gather and sample_pick: the row's total weight
// (the parts' sums, returned), then the first bin of the row's histogram (sample_part's, bins
// from the largest logits down) where the running weight reaches top_p's share of the total.
// `sbin` gets that bin (SP_BINS: none) and `srest` what the bin's keys at or above the
// threshold must weigh. `ok` is false when the row takes the whole-row scan instead: parts too
// long for a histogram, no such bin, or bins that do not sum to the parts' sums. `clear` sets
// the histogram back to 0 (sample_pick, for the next step). Every thread of the block calls
// it; blockDim.x is at least SP_BINS. Sums of integers: the same in any block shape.
static __device__ u64 sp_top_p_bin(u32* s, u32 parts, u32 chunk, float top_p, bool clear, u64* red, u32& sbin,
                                   u64& srest, bool& ok) {
    const u32 tid = threadIdx.x, nt = blockDim.x;
    const unsigned long long* sums = reinterpret_cast<const unsigned long long*>(s + SP_SUMS);
    unsigned long long* gh = reinterpret_cast<unsigned long long*>(s + SP_HIST);
    if (tid == 0) sbin = SP_BINS;  // (block_sum's barriers order this before the bin's write)
    u64 t = 0;
    for (u32 q = tid; q < parts; q += nt) t += sums[q];
    const u64 total = block_sum(t, red);
    u64 hv = 0;
    if (tid < SP_BINS) {
        hv = gh[tid];
        if (clear) gh[tid] = 0;
    }
    u64 bins_total;
    const u64 inc = block_scan(hv, red, bins_total);  // running weight from bin 0
    u64 target = (u64)ceil((double)top_p * (double)total);
    if (target < 1) target = 1;
    if (total > 0 && tid < SP_BINS && hv > 0 && inc >= target && inc - hv < target) {
        sbin = tid;
        srest = target - (inc - hv);
    }
    __syncthreads();
    ok = chunk <= SP_RUN && sbin != SP_BINS && bins_total == total;
    return total;
}

// From the top of a 256-bin histogram (bin b holds lo[b] + hi[b] * 2^16; hi may be null):
// the bin where the running count reaches `need` (summed from bin 255 down), and what is
// still needed inside it. Warp 0 calls it.
static __device__ __forceinline__ void top_bin(const u32* lo, const u32* hi, u64 need, u32& bin_out, u64& rest_out,
                                               bool& exact_out, bool& found_out) {
    const u32 lane = threadIdx.x % 32;
    auto at = [&](u32 b) -> u64 { return (u64)lo[b] + (hi ? (u64)hi[b] << 16 : 0); };
    // Lane l holds bins 255 - 8l ..= 248 - 8l, from the top.
    u64 own = 0;
#pragma unroll
    for (u32 j = 0; j < 8; ++j) own += at(255 - lane * 8 - j);
    u64 inc = own;
    for (int o = 1; o < 32; o <<= 1) {
        const u64 n = __shfl_up_sync(0xffffffffu, inc, o);
        if ((int)lane >= o) inc += n;
    }
    const unsigned hit = __ballot_sync(0xffffffffu, inc >= need);
    if (!hit) {
        if (lane == 0) found_out = false;
        return;
    }
    const u32 l = __ffs(hit) - 1;
    if (lane == l) {
        u64 run = inc - own;
        for (u32 j = 0; j < 8; ++j) {
            const u32 bin = 255 - l * 8 - j;
            const u64 h = at(bin);
            if (run + h >= need) {
                bin_out = bin;
                rest_out = need - run;
                exact_out = h == need - run;
                found_out = true;
                break;
            }
            run += h;
        }
    }
}

// hist[bin] += 1 for each active lane with `p`: one shared atomic per distinct bin of the
// warp (logits crowd into a few bins of their top bits).
static __device__ __forceinline__ void hist_add32(u32* hist, u32 bin, bool p) {
    const unsigned act = __ballot_sync(__activemask(), p);
    if (p) {
        const unsigned peers = __match_any_sync(act, bin);
        if ((threadIdx.x % 32) == (u32)(__ffs(peers) - 1)) atomicAdd(&hist[bin], (u32)__popc(peers));
    }
}

// lo[bin] += w mod 2^16 and hi[bin] += w / 2^16 (w < 2^25) for each active lane with `p`:
// exact sums in native 32-bit shared atomics, one pair per distinct bin of the warp.
static __device__ __forceinline__ void hist_add_w(u32* lo, u32* hi, u32 bin, u64 w, bool p) {
    const unsigned act = __ballot_sync(__activemask(), p);
    if (p) {
        const unsigned peers = __match_any_sync(act, bin);
        const u32 l = __reduce_add_sync(peers, (u32)(w & 0xffffu)), h = __reduce_add_sync(peers, (u32)(w >> 16));
        if ((threadIdx.x % 32) == (u32)(__ffs(peers) - 1)) {
            atomicAdd(&lo[bin], l);
            if (h) atomicAdd(&hi[bin], h);
        }
    }
}

template <typename E>
__device__ void sample_max(const typename E::T* logits, u32 V, u32 chunk, const u32* active, u32* scratch) {
    const u32 p = blockIdx.x, b = blockIdx.y, tid = threadIdx.x;
    if (active && active[b] == 0) return;
    const typename E::T* x = logits + (u64)b * V;
    const bool vec = V % 8 == 0 && ((unsigned long long)x & 15) == 0;
    const u32 lo = p * chunk, hi = min(lo + chunk, V);
    unsigned long long best = 0;
    for (u32 i0 = lo + tid * 8; i0 < hi; i0 += blockDim.x * 8) {
        float v[8];
        load8<E>(x, V, i0, vec, v);
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
            const unsigned long long pk = ((unsigned long long)key_of(v[j]) << 32) | (0xffffffffu - (i0 + j));
            if (i0 + j < hi && pk > best) best = pk;
        }
    }
    for (int o = 16; o > 0; o >>= 1) {
        const unsigned long long n = __shfl_xor_sync(0xffffffffu, best, o);
        if (n > best) best = n;
    }
    if (tid % 32 == 0 && best) atomicMax(reinterpret_cast<unsigned long long*>(scratch + (u64)b * SP_WORDS), best);
}

// The row's sampling parameters, as both kernels read them.
struct SpRow {
    float temp, top_p, inv_t, xmax;
    u32 top_k;      // 0: no top-k (also for k >= V)
    bool top_p_on;  // top_p in (0, 1)
};

template <typename E>
__device__ void sample_part(const typename E::T* logits, u32 V, u32 chunk, const float* params,
                            const u32* active, const unsigned long long* amax, u32* scratch) {
    const u32 p = blockIdx.x, b = blockIdx.y, tid = threadIdx.x, nt = blockDim.x;
    if (active && active[b] == 0) return;
    u32* s = scratch + (u64)b * SP_WORDS;
    // The gather's count starts each step at 0 here, whatever the last step left (sample_pick
    // clears it too): a count left over would shift the list, not fall back.
    if (p == 0 && tid == 0) s[SP_GATHER] = 0;
    const unsigned long long pre = amax ? amax[b] : *reinterpret_cast<const unsigned long long*>(s);
    const float temp = params[b * 3 + 0], top_p = params[b * 3 + 1];
    const u32 top_k0 = (u32)params[b * 3 + 2];
    if (!(temp > 0.f) || top_k0 == 1 || pre == 0) return;  // greedy, or sample_pick scans
    const float xmax = float_of_key((u32)(pre >> 32));
    if (!(xmax > -INFINITY)) return;
    const float inv_t = 1.f / temp;
    const u32 top_k = top_k0 > 0 && top_k0 < V ? top_k0 : 0;
    const bool top_p_on = top_p < 1.f && top_p > 0.f;
    const typename E::T* x = logits + (u64)b * V;
    const bool vec = V % 8 == 0 && ((unsigned long long)x & 15) == 0;
    const u32 lo = p * chunk, hi = min(lo + chunk, V), n = hi > lo ? hi - lo : 0;
    __shared__ u64 red[33];
    __shared__ u32 hist[256];
    __shared__ u32 sbin;
    __shared__ u64 srest;
    __shared__ bool sexact, sfound;
    if (!top_k) {
        // The part's weight sum (no top-k: sample_pick needs the row's total). With top-p,
        // also its weights by bin of the scaled distance from the maximum (sp_bin), added
        // into the row's histogram: sample_pick finds top-p's bin there.
        // Each warp bins into a histogram of its own with plain shared atomics: a lane's
        // weight in 16-bit halves, exact while a part has at most SP_RUN logits (lo < 2^16 a
        // logit, hi <= 2^8). Past that (a vocabulary of more than SP_PARTS * SP_RUN logits) no
        // histogram is kept, and sample_pick falls back to the whole-row scan. (Matching a
        // warp's lanes by bin first, hist_add_w, took 11x longer over flat logits: 186 against
        // 17 us at 32 rows, run 211.)
        const bool hist = top_p_on && chunk <= SP_RUN;
        constexpr u32 NW = SP_PART_THREADS / 32;
        __shared__ u32 wlo[NW][SP_BINS], whi[NW][SP_BINS];
        const u32 warp = tid / 32;
        if (hist) {
            for (u32 j = tid; j < NW * SP_BINS; j += nt) (&wlo[0][0])[j] = (&whi[0][0])[j] = 0;
            __syncthreads();
        }
        u64 w = 0;
        for (u32 i0 = lo + tid * 8; i0 < hi; i0 += nt * 8) {
            float v[8];
            load8<E>(x, V, i0, vec, v);
#pragma unroll
            for (u32 j = 0; j < 8; ++j) {
                const u64 wj = i0 + j < hi ? weight_of(v[j], xmax, inv_t) : 0;
                w += wj;
                if (hist && wj) {
                    const u32 bin = sp_bin(v[j], xmax, inv_t);
                    atomicAdd(&wlo[warp][bin], (u32)(wj & 0xffffu));
                    if (wj >> 16) atomicAdd(&whi[warp][bin], (u32)(wj >> 16));
                }
            }
        }
        w = block_sum(w, red);  // (its barriers order the histogram's adds before the reads below)
        if (tid == 0) reinterpret_cast<unsigned long long*>(s + SP_SUMS)[p] = w;
        if (hist) {
            // Thread j takes bin j (SP_PART_THREADS == SP_BINS): the bin's weight into the
            // row's histogram, and the part's weight in the bins before it into the part's
            // running weights, which sample_pick reads at top-p's bin.
            static_assert(SP_PART_THREADS == SP_BINS, "sample_part: a thread a bin");
            unsigned long long* gh = reinterpret_cast<unsigned long long*>(s + SP_HIST);
            unsigned long long h = 0;
            for (u32 q = 0; q < NW; ++q) h += (unsigned long long)wlo[q][tid] + ((unsigned long long)whi[q][tid] << 16);
            if (h) atomicAdd(&gh[tid], h);
            u64 ht;
            const u64 before = block_scan(h, red, ht) - h;
            reinterpret_cast<unsigned long long*>(s + SP_PHIST)[(u64)p * SP_BINS + tid] = before;
        }
        return;  // the sums (and the histograms) are all sample_pick needs
    }
    // The usual case, at most 8 logits a thread: lb, the SP_LB-th largest of the threads'
    // maxima, is at most the part's SP_LB-th largest logit. When no more than SP_C logits reach
    // it, they are the candidates, and every logit above lb - 1 is listed. Otherwise (and for
    // longer parts) the exact selection below.
    if (n > SP_C && n <= nt * 8) {
        const u32 i0 = lo + tid * 8;
        float v[8];
        u32 k[8], tm = 0;
        if (i0 < hi) load8<E>(x, V, i0, vec, v);
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
            k[j] = i0 + j < hi ? key_of(v[j]) : 0u;
            tm = max(tm, k[j]);
        }
        // lb, found one of two ways (the same value either way). On a small grid (a launch
        // latency-bound, batch 1 and 2) each thread ranks its maximum against the others' (256
        // shared reads a thread). On larger ones, where those reads were most of the kernel's
        // time (44 us at 32 rows, run 206), a radix selection over the nonzero maxima, 8 bits a
        // pass from the top: where a bin holds exactly the count still needed, every maximum in
        // it is among the SP_LB largest and the smallest of them is lb; after four passes the
        // prefix is lb. 0 when fewer than SP_LB maxima are nonzero.
        __shared__ u32 slb;
        if (gridDim.x * gridDim.y <= SP_RANK_GRID) {
            __shared__ u32 tmax[SP_PART_THREADS];
            tmax[tid] = tm;
            if (tid == 0) slb = 0;
            __syncthreads();
            u32 gt = 0, ge = 0;
            for (u32 q = 0; q < nt; ++q) {
                gt += tmax[q] > tm;
                ge += tmax[q] >= tm;
            }
            if (tm && gt < SP_LB && SP_LB <= ge) slb = tm;
        } else {
            u32 prefix = 0, mask = 0;
            u64 need = SP_LB;
            bool found = true;
            if (tid == 0) slb = 0xffffffffu;
            for (int shift = 24; shift >= 0; shift -= 8) {
                for (u32 j = tid; j < 256; j += nt) hist[j] = 0;
                __syncthreads();
                hist_add32(hist, (tm >> shift) & 255u, tm != 0 && (tm & mask) == prefix);
                __syncthreads();
                if (tid < 32) top_bin(hist, nullptr, need, sbin, srest, sexact, sfound);
                __syncthreads();
                found = sfound;
                const bool exact = sexact;
                prefix |= sbin << shift;
                mask |= 255u << shift;
                need = srest;
                __syncthreads();
                if (!found || exact) break;
            }
            if (found && tm != 0 && (tm & mask) == prefix) atomicMin(&slb, tm);
            __syncthreads();
            if (!found && tid == 0) slb = 0;
        }
        __syncthreads();
        const u32 lb = slb;
        if (lb) {
            u32 c = 0;
#pragma unroll
            for (u32 j = 0; j < 8; ++j) c += k[j] >= lb;
            u64 tot;
            u32 at = (u32)(block_scan(c, red, tot) - c);
            if (tot <= SP_C) {
                u32* ckey = s + SP_KEYS + p * SP_C;
                u32* cidx = s + SP_IDX + p * SP_C;
#pragma unroll
                for (u32 j = 0; j < 8; ++j) {
                    if (k[j] >= lb) {
                        ckey[at] = k[j];
                        cidx[at] = i0 + j;
                        ++at;
                    }
                }
                if (tid == 0) {
                    s[SP_INFO + 2 * p] = (u32)tot | (n > tot ? 0x80000000u : 0u);
                    s[SP_INFO + 2 * p + 1] = lb - 1;
                }
                return;
            }
        }
    }
    // The part's threshold: its SP_C-th largest key (radix selection, 8 bits a pass), or 0
    // when the part holds no more than SP_C logits.
    const bool full = n > SP_C;
    u32 thr = 0;
    if (full) {
        u32 prefix = 0, mask = 0;
        u64 need = SP_C;
        for (int shift = 24; shift >= 0; shift -= 8) {
            for (u32 j = tid; j < 256; j += nt) hist[j] = 0;
            __syncthreads();
            for (u32 i0 = lo + tid * 8; i0 < hi; i0 += nt * 8) {
                float v[8];
                load8<E>(x, V, i0, vec, v);
#pragma unroll
                for (u32 j = 0; j < 8; ++j) {
                    const u32 k = key_of(v[j]);
                    hist_add32(hist, (k >> shift) & 255u, i0 + j < hi && (k & mask) == prefix);
                }
            }
            __syncthreads();
            if (tid < 32) top_bin(hist, nullptr, need, sbin, srest, sexact, sfound);
            __syncthreads();
            prefix |= sbin << shift;
            mask |= 255u << shift;
            need = srest;
            const bool exact = sexact;
            __syncthreads();
            // Every key of this bin is needed: the bin's lowest key is a threshold.
            if (exact) break;
        }
        thr = prefix;
    }
    // Candidates in index order: every key above the threshold, then keys equal to it in
    // index order while fewer than SP_C are taken.
    u32 above = 0;
    for (u32 i0 = lo + tid * 8; i0 < hi; i0 += nt * 8) {
        float v[8];
        load8<E>(x, V, i0, vec, v);
#pragma unroll
        for (u32 j = 0; j < 8; ++j) above += i0 + j < hi && key_of(v[j]) > thr;
    }
    const u32 quota = SP_C - (u32)block_sum(above, red);  // ties that may be taken
    u32* ckey = s + SP_KEYS + p * SP_C;
    u32* cidx = s + SP_IDX + p * SP_C;
    u32 base_gt = 0, base_eq = 0;
    for (u32 r0 = lo; r0 < hi; r0 += nt * 8) {
        const u32 i0 = r0 + tid * 8;
        float v[8];
        u32 gt = 0, eq = 0;
        if (i0 < hi) load8<E>(x, V, i0, vec, v);
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
            if (i0 + j < hi) {
                const u32 k = key_of(v[j]);
                gt += k > thr;
                eq += k == thr;
            }
        }
        u64 tot;
        const u64 inc = block_scan(((u64)gt << 32) | eq, red, tot);
        u32 bgt = base_gt + (u32)((inc >> 32) - gt), beq = base_eq + (u32)(inc & 0xffffffffu) - eq;
#pragma unroll
        for (u32 j = 0; j < 8; ++j) {
            if (i0 + j < hi) {
                const u32 k = key_of(v[j]);
                if (k > thr || (k == thr && beq < quota)) {
                    const u32 at = bgt + min(beq, quota);
                    ckey[at] = k;
                    cidx[at] = i0 + j;
                }
                bgt += k > thr;
                beq += k == thr;
            }
        }
        base_gt += (u32)(tot >> 32);
        base_eq += (u32)(tot & 0xffffffffu);
    }
    if (tid == 0) {
        s[SP_INFO + 2 * p] = (base_gt + min(base_eq, quota)) | (full ? 0x80000000u : 0u);
        s[SP_INFO + 2 * p + 1] = thr;
    }
}

// Radix selection over the candidate keys in shared memory (0: an empty slot): the largest
// key K >= floor such that the keys >= max(K, floor) weigh at least `need` (each key 1, or
// its fixed-point weight). `found` false when all of them weigh less. `lo` and `hi` are 256
// u32 each of shared memory.
static __device__ u32 select_keys(const u32* keys, u32 n, u64 need, bool weighted, u32 floor, float xmax,
                                  float inv_t, u32* lo, u32* hi, u32& sbin, u64& srest, bool& sexact,
                                  bool& sfound, bool& found) {
    const u32 tid = threadIdx.x, nt = blockDim.x;
    u32 prefix = 0, mask = 0;
    found = true;
    for (int shift = 24; shift >= 0; shift -= 8) {
        for (u32 j = tid; j < 256; j += nt) lo[j] = hi[j] = 0;
        __syncthreads();
        for (u32 i = tid; i < n; i += nt) {
            const u32 k = keys[i];
            const bool in = k != 0 && k >= floor && (k & mask) == prefix;
            const u64 w = !in ? 0 : weighted ? weight_of(float_of_key(k), xmax, inv_t) : 1;
            hist_add_w(lo, hi, (k >> shift) & 255u, w, w != 0);
        }
        __syncthreads();
        if (tid < 32) top_bin(lo, hi, need, sbin, srest, sexact, sfound);
        __syncthreads();
        if (!sfound) {
            found = false;
            return 0;
        }
        prefix |= sbin << shift;
        mask |= 255u << shift;
        need = srest;
        const bool exact = sexact;
        __syncthreads();
        if (exact) break;
    }
    return prefix > floor ? prefix : floor;
}

// The draw in index order over `units` units, sample_scan's: the r-th of the kept weight
// (r = u * kept), each thread a run of units. `unit(c, r, at)` returns unit c's kept weight
// and, where r is less than it, sets `at` to the token whose weight holds r (r counted from
// the unit's start). The thread holding the draw sets `stoken`. Every thread calls it.
template <typename F>
static __device__ __forceinline__ void draw_in_order(u32 units, double u, u64* red, u32& stoken, F unit) {
    const u32 nt = blockDim.x, per = (units + nt - 1) / nt;
    const u32 a = min(threadIdx.x * per, units), z = min(a + per, units);
    u32 at = 0;
    u64 mine = 0;
    for (u32 c = a; c < z; ++c) mine += unit(c, ~0ull, at);
    u64 kept;
    const u64 excl = block_scan(mine, red, kept) - mine;
    if (kept == 0) return;
    u64 r = (u64)(u * (double)kept);
    if (r >= kept) r = kept - 1;
    if (r < excl || r >= excl + mine) return;
    u64 run = excl;
    for (u32 c = a; c < z; ++c) {
        const u64 w = unit(c, r - run, at);
        if (r - run < w) {
            stoken = at;
            return;
        }
        run += w;
    }
}

// Top-p alone's gather (grid P x B, after sample_part): each block finds the row's top-p bin
// from the histogram (sp_top_p_bin, as sample_pick will) and appends its part's keys in that
// bin, with the part, to the row's list in scratch: one atomic a block on the row's count
// (sample_part set it to 0), the block's keys from there. Done by one block a row inside sample_pick, the
// gather was most of top-p alone's draw (one multiprocessor over the whole row: 54,500 of its
// cycles at batch 1, run 231). The keys land in an order that depends on which block comes
// first; the selection and the parts' integer sums that read them do not depend on it.
template <typename E>
__device__ void sample_gather(const typename E::T* logits, u32 V, u32 chunk, const float* params,
                              const u32* active, const unsigned long long* amax, u32* scratch) {
    const u32 p = blockIdx.x, b = blockIdx.y, tid = threadIdx.x, nt = blockDim.x, parts = gridDim.x;
    if (active && active[b] == 0) return;
    u32* s = scratch + (u64)b * SP_WORDS;
    const unsigned long long pre = amax ? amax[b] : *reinterpret_cast<const unsigned long long*>(s);
    const float temp = params[b * 3 + 0], top_p = params[b * 3 + 1];
    const u32 top_k0 = (u32)params[b * 3 + 2];
    // sample_pick's branches: only a row it draws by top-p alone is gathered.
    if (!(temp > 0.f) || top_k0 == 1 || pre == 0) return;
    const float xmax = float_of_key((u32)(pre >> 32));
    if (!(xmax > -INFINITY)) return;
    const bool top_k = top_k0 > 0 && top_k0 < V, top_p_on = top_p < 1.f && top_p > 0.f;
    if (top_k || !top_p_on) return;
    const float inv_t = 1.f / temp;
    __shared__ u64 red[33];
    __shared__ u32 sbin, sbase;
    __shared__ u64 srest;
    bool ok;
    const u64 total = sp_top_p_bin(s, parts, chunk, top_p, false, red, sbin, srest, ok);
    if (total == 0 || !ok) return;
    const u32 bs = sbin;
    if (p == 0 && tid == 0) s[SP_GATHER + 1] = bs + 1;  // the bin gathered, for sample_pick to check
    const typename E::T* x = logits + (u64)b * V;
    const bool vec = V % 8 == 0 && ((unsigned long long)x & 15) == 0;
    const u32 lo = p * chunk, hi = min(lo + chunk, V);
    // Two passes over the part (the second from cache): the thread's count, then its keys.
    u32 mine = 0;
    for (u32 i0 = lo + tid * 8; i0 < hi; i0 += nt * 8) {
        float v[8];
        load8<E>(x, V, i0, vec, v);
#pragma unroll
        for (u32 j = 0; j < 8; ++j) mine += i0 + j < hi && sp_bin(v[j], xmax, inv_t) == bs;
    }
    u64 tot;
    const u64 excl = block_scan(mine, red, tot) - mine;
    if (tot == 0) return;
    if (tid == 0) sbase = atomicAdd(s + SP_GATHER, (u32)tot);
    __syncthreads();
    if (mine == 0) return;
    constexpr u32 CAP = SP_PARTS * SP_C;  // a longer list: sample_pick takes the whole-row scan
    u32 at = sbase + (u32)excl;
    for (u32 i0 = lo + tid * 8; i0 < hi && at < CAP; i0 += nt * 8) {
        float v[8];
        load8<E>(x, V, i0, vec, v);
#pragma unroll
        for (u32 j = 0; j < 8; ++j)
            if (i0 + j < hi && sp_bin(v[j], xmax, inv_t) == bs) {
                if (at < CAP) {
                    s[SP_KEYS + at] = key_of(v[j]);
                    s[SP_IDX + at] = p;
                }
                ++at;
            }
    }
}

template <typename E>
__device__ void sample_pick(const typename E::T* logits, u32 V, u32 parts, u32 chunk, const float* params,
                            u32* rng, u32* tokens, u32* pos, const u32* active, u32 advance,
                            unsigned long long* amax, u32* scratch) {
    const u32 b = blockIdx.x, tid = threadIdx.x, nt = blockDim.x;
    u32* s = scratch + (u64)b * SP_WORDS;
    unsigned long long* slot = amax ? amax + b : reinterpret_cast<unsigned long long*>(s);
    const unsigned long long pre = *slot;
    const u32 gcount = s[SP_GATHER], gbin = s[SP_GATHER + 1];  // top-p alone's gather
    __syncthreads();
    if (tid == 0) {
        *slot = 0;  // for the next step's argmax, whether or not the row is active
        s[SP_GATHER] = s[SP_GATHER + 1] = 0;
    }
    if (active && active[b] == 0) return;
    const float temp = params[b * 3 + 0], top_p = params[b * 3 + 1];
    const u32 top_k0 = (u32)params[b * 3 + 2];
    const typename E::T* x = logits + (u64)b * V;
    u32* g = rng + b * 4;
    const u32 argmax = 0xffffffffu - (u32)(pre & 0xffffffffu);
    const float xmax = float_of_key((u32)(pre >> 32));
    u32 token;
    if (pre == 0) {
        token = sample_scan<E>(x, V, temp, top_p, top_k0, g);  // no argmax was computed
    } else if (!(temp > 0.f) || top_k0 == 1 || !(xmax > -INFINITY)) {
        token = argmax;  // greedy: nothing drawn
    } else {
        const float inv_t = 1.f / temp;
        const u32 top_k = top_k0 > 0 && top_k0 < V ? top_k0 : 0;
        const bool top_p_on = top_p < 1.f && top_p > 0.f;
        __shared__ u32 keys[SP_PARTS * SP_C];
        __shared__ __align__(8) u32 hlo[256];  // (top-p alone: the parts' kept weights after select_keys)
        __shared__ u32 hhi[256];
        __shared__ u64 red[33];
        __shared__ u32 sbin, stoken, sfall;
        __shared__ u64 srest;
        __shared__ bool sexact, sfound;
        const unsigned long long* sums = reinterpret_cast<const unsigned long long*>(s + SP_SUMS);
        const u64 c0 = ((u64)g[2]) | ((u64)g[3] << 32), seed = ((u64)g[0]) | ((u64)g[1] << 32);
        const double u = (double)(mix64(seed ^ mix64(c0 + 0x9e3779b97f4a7c15ull)) >> 11) * 0x1.0p-53;
        if (tid == 0) {
            stoken = argmax;
            sfall = 0;
        }
        // The part that holds the draw: parts' kept weights `wp(q)` in index order, r = u
        // times their total (sample_scan's r), the part where the running weight passes r
        // into sbin and r's offset inside it into srest; red[32] the total. Warp 0 scans.
        auto find_part = [&](auto wp) {
            if (tid < 32) {
                // Lane l sums parts 4l .. 4l + 3 (SP_PARTS = 128), then a scan over the lanes.
                u64 own[4], t = 0;
#pragma unroll
                for (u32 j = 0; j < 4; ++j) {
                    const u32 q = tid * 4 + j;
                    own[j] = q < parts ? wp(q) : 0;
                    t += own[j];
                }
                u64 inc = t;
                for (int o = 1; o < 32; o <<= 1) {
                    const u64 nb = __shfl_up_sync(0xffffffffu, inc, o);
                    if ((int)tid >= o) inc += nb;
                }
                const u64 total = __shfl_sync(0xffffffffu, inc, 31);
                u64 r = (u64)(u * (double)total);
                if (r >= total && total > 0) r = total - 1;
                const unsigned hit = __ballot_sync(0xffffffffu, total > 0 && r < inc);
                if (tid == 0) red[32] = total;
                if (hit && tid == (u32)(__ffs(hit) - 1)) {
                    u64 run = inc - t;
                    u32 j = 0;
                    for (; j < 3; ++j) {
                        if (r < run + own[j]) break;
                        run += own[j];
                    }
                    sbin = tid * 4 + j;
                    srest = r - run;
                }
            }
            __syncthreads();
        };
        // The token inside part sbin at offset srest, over the logits whose keys are at least
        // `keep` (0: all), in index order.
        auto draw_part = [&](u32 keep) {
            if (red[32] == 0) return;
            const u32 q = sbin;
            const u64 r = srest;
            const u32 lo = q * chunk, hi = min(lo + chunk, V);
            const u32 per = (hi - lo + nt - 1) / nt, a = min(lo + tid * per, hi), z = min(a + per, hi);
            auto wt = [&](u32 i) -> u64 {
                const float v = E::ld(x, i);
                return key_of(v) >= keep ? weight_of(v, xmax, inv_t) : 0;
            };
            u64 mine = 0;
            for (u32 i = a; i < z; ++i) mine += wt(i);
            u64 tot;
            const u64 excl = block_scan(mine, red, tot) - mine;
            if (r >= excl && r < excl + mine) {
                u64 run = excl;
                for (u32 i = a; i < z; ++i) {
                    run += wt(i);
                    if (r < run) {
                        stoken = i;
                        break;
                    }
                }
            }
        };
        if (!top_k && !top_p_on) {
            // No filter: the part that holds the draw, from the parts' sums, then the token
            // inside it.
            find_part([&](u32 q) -> u64 { return sums[q]; });
            draw_part(0);
        } else if (!top_k) {
            // Top-p alone. Its kept set can reach far past the parts' candidates (a flat
            // row), so it is found from the parts' histogram instead: bins run from the
            // largest logits down, so the first bin where the running weight reaches the
            // target holds the threshold, every key of the bins before it is kept, and no key
            // of the bins after it is. The threshold is then selected among that bin's keys,
            // which sample_gather listed, each with its part. A part's kept weight
            // is its weight in the bins before (sample_part's running weights) plus its
            // gathered keys at or above the threshold; the draw then scans the part that
            // holds it, as with no filter: sample_scan's token. A bin of more keys than fit in
            // shared memory falls back to sample_scan.
            constexpr u32 CAP = SP_PARTS * SP_C;
            __shared__ u32 scount;
            __shared__ unsigned char kpart[CAP];  // the part of each gathered key
            bool ok;
            const u64 total = sp_top_p_bin(s, parts, chunk, top_p, true, red, sbin, srest, ok);
            // The bins' sum is the parts' sums, the same weights of the same logits, so some
            // bin reaches the target. Parts too long for a histogram (sample_part), one that
            // disagrees (no bin found, a sum other than the parts'), or a gather of another
            // bin fall back to the whole-row scan.
            if (total > 0 && (!ok || gbin != sbin + 1)) {
                if (tid == 0) sfall = 1;
            } else if (total > 0) {
                const u32 bs = sbin;
                const u64 need = srest;
                // The bin's keys, from sample_gather (more than CAP: the whole-row scan).
                const u32 cnt = gcount;
                if (cnt <= CAP)
                    for (u32 i = tid; i < cnt; i += nt) {
                        keys[i] = s[SP_KEYS + i];
                        kpart[i] = (unsigned char)s[SP_IDX + i];
                    }
                __syncthreads();
                bool found = false;
                if (cnt <= CAP) {
                    const u32 k = select_keys(keys, cnt, need, true, 1, xmax, inv_t, hlo, hhi, sbin, srest, sexact,
                                              sfound, found);
                    // select_keys may stop at a bin of its radix passes whose keys are all
                    // needed and return that bin's lowest possible key; keys of later bins of
                    // sp_bin could lie between it and the smallest key gathered. The
                    // threshold is the smallest gathered key at or above it.
                    if (tid == 0) scount = 0xffffffffu;
                    __syncthreads();
                    if (found)
                        for (u32 i = tid; i < cnt; i += nt)
                            if (keys[i] >= k) atomicMin(&scount, keys[i]);
                    __syncthreads();
                }
                if (!found) {
                    if (tid == 0) sfall = 1;
                } else {
                    const u32 keep = scount;
                    // The parts' kept weights (hlo's words, free again: select_keys is done).
                    unsigned long long* pw = reinterpret_cast<unsigned long long*>(hlo);
                    const unsigned long long* run = reinterpret_cast<const unsigned long long*>(s + SP_PHIST);
                    if (tid < parts) pw[tid] = run[(u64)tid * SP_BINS + bs];
                    __syncthreads();
                    for (u32 i = tid; i < cnt; i += nt)
                        if (keys[i] >= keep) atomicAdd(&pw[kpart[i]], (unsigned long long)weight_of(float_of_key(keys[i]), xmax, inv_t));
                    __syncthreads();
                    find_part([&](u32 q) -> u64 { return pw[q]; });
                    draw_part(keep);
                }
            }
        } else {
            // Top-k, with or without top-p: the thresholds among the candidates, slot
            // p * SP_C + j (index order); 0 marks an empty slot. The parts' counts and
            // thresholds come first, into shared memory (one 8-byte read a part, not one read
            // a slot before each slot's key), then every slot's key.
            const u32 n = parts * SP_C;
            __shared__ uint2 pinfo[SP_PARTS];  // count | full << 31, threshold key
            if (tid < parts) pinfo[tid] = *reinterpret_cast<const uint2*>(s + SP_INFO + 2 * tid);
            __syncthreads();
#pragma unroll 4
            for (u32 i = tid; i < n; i += nt) {
                const u32 q = i / SP_C, j = i - q * SP_C;
                keys[i] = j < (pinfo[q].x & 0x7fffffffu) ? s[SP_KEYS + i] : 0u;
            }
            // L: the largest threshold of a full part; every key above it is a candidate.
            if (tid < 32) {
                u32 l = 0, cnt = 0;
                for (u32 q = tid; q < parts; q += 32) {
                    const uint2 info = pinfo[q];
                    cnt += info.x & 0x7fffffffu;
                    if (info.x & 0x80000000u) l = max(l, info.y);
                }
                for (int o = 16; o > 0; o >>= 1) {
                    l = max(l, __shfl_xor_sync(0xffffffffu, l, o));
                    cnt += __shfl_xor_sync(0xffffffffu, cnt, o);
                }
                if (tid == 0) {
                    sbin = l;
                    red[32] = cnt;
                }
            }
            __syncthreads();
            const u32 L = sbin;
            const u64 count = red[32];
            __syncthreads();
            bool ok = true, found = true, done = false;
            u32 kmin = 0;
            if (count >= top_k && top_k <= nt) {
                // Top-k among few: the k-th largest of the parts' maxima bounds the row's k-th
                // largest key from below (k distinct logits reach it), so only candidates at or
                // above it matter. When at most a block's worth do, they are compacted (in index
                // order) and the thresholds found by counting, with no histogram.
                __shared__ u32 pm[SP_PARTS];
                const u32 warp = tid / 32, lane = tid % 32;
                for (u32 q = warp; q < parts; q += nt / 32) {
                    u32 m = max(keys[q * SP_C + lane], keys[q * SP_C + 32 + lane]);
                    for (int o = 16; o > 0; o >>= 1) m = max(m, __shfl_xor_sync(0xffffffffu, m, o));
                    if (lane == 0) pm[q] = m;
                }
                if (tid == 0) sbin = 1;
                __syncthreads();
                if (top_k <= parts && tid < parts) {
                    u32 gt = 0, ge = 0;
                    for (u32 q = 0; q < parts; ++q) {
                        gt += pm[q] > pm[tid];
                        ge += pm[q] >= pm[tid];
                    }
                    if (gt < top_k && top_k <= ge && pm[tid] > 0) sbin = pm[tid];
                }
                __syncthreads();
                const u32 lb = sbin;
                // Each thread a run of slots (at most 8: n <= SP_PARTS * SP_C).
                const u32 per = (n + nt - 1) / nt, a = min(tid * per, n), z = min(a + per, n);
                u32 rk[8], c = 0;
#pragma unroll
                for (u32 j = 0; j < 8; ++j) {
                    rk[j] = a + j < z ? keys[a + j] : 0u;
                    c += rk[j] >= lb;
                }
                u64 mtot;
                const u32 at0 = (u32)(block_scan(c, red, mtot) - c);
                const u32 m = (u32)mtot;
                if (m <= nt) {
                    // In place: ck = keys[0, m), the slot of each at keys[2048 + i], its weight
                    // (at most 2^24) at keys[3072 + i]; every slot was read above.
                    u32* ck = keys;
                    u32* cs = keys + 2048;
                    u32* cw = keys + 3072;
                    u32 at = at0;
#pragma unroll
                    for (u32 j = 0; j < 8; ++j) {
                        if (rk[j] >= lb) {
                            ck[at] = rk[j];
                            cs[at] = a + j;
                            cw[at] = (u32)weight_of(float_of_key(rk[j]), xmax, inv_t);
                            ++at;
                        }
                    }
                    __syncthreads();
                    // kmin: the key with fewer than k keys above it and at least k at or above.
                    const u32 mine = tid < m ? ck[tid] : 0u;
                    if (tid < m) {
                        u32 gt = 0, ge = 0;
                        for (u32 j = 0; j < m; ++j) {
                            gt += ck[j] > mine;
                            ge += ck[j] >= mine;
                        }
                        if (gt < top_k && top_k <= ge) sbin = mine;
                    }
                    __syncthreads();
                    kmin = sbin;
                    ok = kmin > L;
                    if (ok) {
                        const bool in = tid < m && mine >= kmin;
                        const u64 total = block_sum(in ? cw[tid] : 0u, red);
                        u32 keep = kmin;
                        if (top_p_on && total > 0) {
                            u64 target = (u64)ceil((double)top_p * (double)total);
                            if (target < 1) target = 1;
                            // top_p: the largest kept key whose keys at or above it weigh the target.
                            u32 cand = 0;
                            if (in) {
                                u64 w = 0;
                                for (u32 j = 0; j < m; ++j)
                                    if (ck[j] >= mine) w += cw[j];
                                if (w >= target) cand = mine;
                            }
                            for (int o = 16; o > 0; o >>= 1) cand = max(cand, __shfl_xor_sync(0xffffffffu, cand, o));
                            if (tid == 0) sbin = 0;
                            __syncthreads();
                            if (lane == 0 && cand) atomicMax(&sbin, cand);
                            __syncthreads();
                            keep = max(keep, sbin);
                        }
                        // The draw, in index order over the kept.
                        const u64 w = tid < m && mine >= keep ? cw[tid] : 0u;
                        u64 kept;
                        const u64 inc = block_scan(w, red, kept);
                        if (kept > 0) {
                            u64 r = (u64)(u * (double)kept);
                            if (r >= kept) r = kept - 1;
                            if (w && r >= inc - w && r < inc) stoken = s[SP_IDX + cs[tid]];
                        }
                    }
                    done = true;
                }
            }
            if (!done) {
                if (count < top_k) ok = false;
                else kmin = select_keys(keys, n, top_k, false, 1, xmax, inv_t, hlo, hhi, sbin, srest, sexact, sfound, found);
                ok = ok && found && kmin > L;
            }
            u32 keep = kmin;
            if (ok && !done) {
                // The weight the top-p share is of: the candidates top-k keeps.
                u64 w = 0;
                for (u32 i = tid; i < n; i += nt)
                    if (keys[i] != 0 && keys[i] >= kmin) w += weight_of(float_of_key(keys[i]), xmax, inv_t);
                const u64 total = block_sum(w, red);
                if (top_p_on && total > 0) {
                    u64 target = (u64)ceil((double)top_p * (double)total);
                    if (target < 1) target = 1;
                    const u32 pmin = select_keys(keys, n, target, true, max(kmin, 1u), xmax, inv_t, hlo, hhi, sbin,
                                                 srest, sexact, sfound, found);
                    ok = found;
                    keep = max(keep, pmin);
                }
            }
            if (ok && !done) {
                keep = max(keep, 1u);
                // The draw over the kept candidates in index order, a unit a slot.
                auto slot = [&](u32 i, u64 r, u32& at) -> u64 {
                    const u64 w = keys[i] >= keep ? weight_of(float_of_key(keys[i]), xmax, inv_t) : 0;
                    if (r < w) at = s[SP_IDX + i];
                    return w;
                };
                draw_in_order(n, u, red, stoken, slot);
            }
            if (!ok && tid == 0) sfall = 1;
        }
        __syncthreads();
        if (sfall) {
            token = sample_scan<E>(x, V, temp, top_p, top_k0, g);  // advances the counter itself
        } else {
            token = stoken;
            if (tid == 0) {
                const u64 c1 = c0 + 1;
                g[2] = (u32)c1;
                g[3] = (u32)(c1 >> 32);
            }
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
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(SP_PART_THREADS) sample_max_##SUF(                      \
        const E::T* logits, u32 V, u32 chunk, const u32* active, u32* scratch) {                          \
        sample_max<E>(logits, V, chunk, active, scratch);                                                 \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(SP_PART_THREADS) sample_part_##SUF(                     \
        const E::T* logits, u32 V, u32 chunk, const float* params, const u32* active,                     \
        const unsigned long long* amax, u32* scratch) {                                                   \
        sample_part<E>(logits, V, chunk, params, active, amax, scratch);                                  \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(SP_PART_THREADS) sample_gather_##SUF(                   \
        const E::T* logits, u32 V, u32 chunk, const float* params, const u32* active,                     \
        const unsigned long long* amax, u32* scratch) {                                                   \
        sample_gather<E>(logits, V, chunk, params, active, amax, scratch);                                \
    }                                                                                                     \
    extern "C" __global__ void __launch_bounds__(SP_PICK_THREADS) sample_pick_##SUF(                     \
        const E::T* logits, u32 V, u32 parts, u32 chunk, const float* params, u32* rng, u32* tokens,      \
        u32* pos, const u32* active, u32 advance, unsigned long long* amax, u32* scratch) {               \
        sample_pick<E>(logits, V, parts, chunk, params, rng, tokens, pos, active, advance, amax, scratch); \
    }

// gemv_m0 / gemv_m1 / gemv_glu_m1: the same kernels for one mode (FIXED), which gpu.rs
// launches for modes 0 and 1; gemv / gemv_glu read `mode` (mode 2). Measured on an H200
// (docs/gpu-runs/2026-11-29c-d128/, run 163): bench/stream_gemv_probe.cu's 16-layer chain of
// Llama-3.2-1B's four products under PDL took 38.76-38.79 µs a layer against 39.15-39.21 (QKV
// 5.79-5.80 µs a launch against 6.03-6.04, gate/up 19.24-19.25 against 19.47-19.48; O and down
// level), bit for bit the same output; llama_bench's step at batch 1, 0.812 ms against
// 0.830-0.832 at position 64 and 0.885 against 0.893-0.897 at 2,000 (three rounds each).
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
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_m0_##SUF(            \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps,                \
        const E::T* residual, E::T* y, u32 ks, unsigned long long* amax) {                                   \
        gemv<E, false, 0, 0>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);                            \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_m1_##SUF(            \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps,                \
        const E::T* residual, E::T* y, u32 ks, unsigned long long* amax) {                                   \
        gemv<E, false, 0, 1>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);                            \
    }                                                                                                         \
    extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_glu_m1_##SUF(        \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps,                \
        E::T* y, u32 ks) {                                                                                    \
        gemv<E, true, 0, 1>(x, W, M, N, K, mode, nw, eps, nullptr, y, ks, nullptr);                           \
    }
INSTANTIATE_GEMV(F32, f32)
INSTANTIATE_GEMV(F16, f16)
INSTANTIATE_GEMV(BF16, bf16)
// mmv1[_glu][_st]_{SUF}: 2 to 8 rows of x; the GLU epilogue; mode 1 (f(x) staged) or mode 0.
#define INSTANTIATE_MMV(E, SUF)                                                                             \
    extern "C" __global__ void __launch_bounds__(MMV_WARPS_MAX * 32, 1) mmv1_##SUF(                          \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps,             \
        const E::T* residual, E::T* y, u32 ks, unsigned long long* amax) {                                  \
        mmv<E, 1, false, false>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);                        \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(MMV_WARPS_MAX * 32, 1) mmv1_st_##SUF(                       \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps,             \
        const E::T* residual, E::T* y, u32 ks, unsigned long long* amax) {                                  \
        mmv<E, 1, false, true>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);                         \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(MMV_WARPS_MAX * 32, 1) mmv1_glu_##SUF(                      \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps, E::T* y,    \
        u32 ks) {                                                                                           \
        mmv<E, 1, true, false>(x, W, M, N, K, mode, nw, eps, nullptr, y, ks, nullptr);                       \
    }                                                                                                       \
    extern "C" __global__ void __launch_bounds__(MMV_WARPS_MAX * 32, 1) mmv1_glu_st_##SUF(                   \
        const E::T* x, const E::T* W, u32 M, u32 N, u32 K, u32 mode, const E::T* nw, float eps, E::T* y,    \
        u32 ks) {                                                                                           \
        mmv<E, 1, true, true>(x, W, M, N, K, mode, nw, eps, nullptr, y, ks, nullptr);                        \
    }
INSTANTIATE_MMV(F16, f16)
INSTANTIATE_MMV(BF16, bf16)
#if !defined(DECODE_PDL_ONLY)
INSTANTIATE(F32, f32)
INSTANTIATE(F16, f16)
INSTANTIATE(BF16, bf16)
#endif
