// A CPU check of the decode attention kernel (capture-candle/kernels/decode.cu, `attention<E,
// DP, GK, NW, MMA, PF>`), for machines with no GPU: the kernel's body, as written, runs on a
// small SIMT emulator. Each CUDA thread is a fiber (ucontext); __syncthreads, __syncwarp and
// __shfl_xor_sync are warp/block rendezvous; mma.sync m16n8k16 is computed from the 32 lanes'
// fragments as the PTX ISA lays them out (9.7.14.5.8: A row groupID (+8 for a2,a3,a6,a7), col
// 2*tig + (i&1) (+8 for i >= 4); B row 2*tig + (i&1) (+8 for b2,b3), col groupID; C row
// groupID (+8 for c2,c3), col 2*tig + (i&1)). Only the inline-PTX helpers (att_ld16, att_exp2,
// AttRaw, AttMma) are stand-ins here; everything else is decode.cu's text.
//
// What it checks, against a CPU reference in double, for every dtype and every variant
// (DP 64/128/256, GK 8/16, 4 or 8 warps, tensor-core or CUDA-core scores, prefetch on/off):
// the output (poisoned with NaN first: an unwritten element fails), rows at different
// positions (one past the cache's end: clamped), 1 and 3 tokens, g from 1 to 16 (several head
// groups), head_dim 16 to 256 (not multiples of 32 included), one chunk (direct write) and
// several (the last-block combine, blocks run in a random order), gpu.rs's split rule and
// forced ones; every load inside its buffer; guard words around the output and the partials
// untouched; the counters back at 0; no barrier reached by only part of a block or warp.
//
// Build and run (from the repository root; g++ or clang++, Linux):
//   { grep -E '^#define ATT_(WARPS|HEADS|MAX_SPLITS) ' capture-candle/kernels/decode.cu;
//     sed -n '/^template <typename E, u32 DP, u32 GK, u32 NW, bool MMA, bool PF>$/,/^\/\/ The entry points/p' \
//       capture-candle/kernels/decode.cu; } > /tmp/att_body.inc
//   g++ -O2 -std=c++17 -fno-strict-aliasing -DATT_BODY='"/tmp/att_body.inc"' -o /tmp/att_emu bench/attention_emu.cpp
//   /tmp/att_emu
#include <ucontext.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <functional>
#include <random>
#include <string>
#include <vector>

typedef unsigned short u16;
typedef unsigned int u32;
typedef unsigned long long u64;
using std::max;
using std::min;

// ---------------------------------------------------------------------------------------
// CUDA stand-ins.
#define __device__
#define __forceinline__ inline
#define __shared__ static
#define __align__(n) __attribute__((aligned(n)))
struct uint4 { u32 x, y, z, w; };
struct float4 { float x, y, z, w; };
struct float2 { float x, y; };
struct dim3u { u32 x, y, z; };
static inline uint4 make_uint4(u32 a, u32 b, u32 c, u32 d) { return {a, b, c, d}; }
static inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
static inline float2 make_float2(float a, float b) { return {a, b}; }
static inline float __uint_as_float(u32 u) { float f; memcpy(&f, &u, 4); return f; }
static inline u32 __float_as_uint(float f) { u32 u; memcpy(&u, &f, 4); return u; }

// Fibers: one a thread of the running block.
struct Fib {
    ucontext_t ctx;
    std::vector<char> stack;
    u32 tid;
    bool done, blocked;
};
static std::vector<Fib> fibs;
static u32 nthreads;
static ucontext_t sched_ctx;
static Fib* cur;
static dim3u g_block, g_grid;
static int g_errors;
#define threadIdx (dim3u{cur->tid, 0, 0})
#define blockIdx g_block
#define gridDim g_grid

static void yield() { swapcontext(&cur->ctx, &sched_ctx); }
struct Bar {
    u32 arrived = 0;
    std::vector<Fib*> waiting;
};
static Bar block_bar, warp_bar[32];
// A rendezvous of the live threads in [lo, hi); a thread that has returned while others wait
// is a barrier reached by part of the group (an error in CUDA).
static void rendezvous(Bar& b, u32 lo, u32 hi, const char* what) {
    u32 live = 0;
    for (u32 i = lo; i < hi; ++i) live += !fibs[i].done;
    if (live != hi - lo) {
        printf("  ERROR: %s reached with %u of %u threads\n", what, live, hi - lo);
        ++g_errors;
    }
    if (++b.arrived == live) {
        b.arrived = 0;
        for (Fib* f : b.waiting) f->blocked = false;
        b.waiting.clear();
    } else {
        cur->blocked = true;
        b.waiting.push_back(cur);
        yield();
    }
}
static void __syncthreads() { rendezvous(block_bar, 0, nthreads, "__syncthreads"); }
static void __syncwarp() {
    const u32 w = cur->tid / 32;
    rendezvous(warp_bar[w], w * 32, min(nthreads, w * 32 + 32), "__syncwarp");
}
static u32 shfl_slot[32][32];
template <typename T>
static T __shfl_xor_sync(unsigned, T v, u32 o) {
    static_assert(sizeof(T) == 4, "");
    const u32 w = cur->tid / 32, l = cur->tid % 32;
    memcpy(&shfl_slot[w][l], &v, 4);
    __syncwarp();
    T r;
    memcpy(&r, &shfl_slot[w][l ^ o], 4);
    __syncwarp();
    return r;
}
static void __threadfence() {}
static u32 atomicAdd(u32* p, u32 v) {
    const u32 o = *p;
    *p = o + v;
    return o;
}
static float __ldcg(const float* p) { return *p; }
static float4 __ldcg(const float4* p) { return *p; }

// Memory checks: every load inside a registered buffer.
struct Range {
    const char *lo, *hi;
};
static std::vector<Range> ranges;
static void check_in(const void* p, size_t n) {
    const char* c = (const char*)p;
    for (auto& r : ranges)
        if (c >= r.lo && c + n <= r.hi) return;
    printf("  ERROR: a load at %p (%zu bytes) outside every buffer\n", p, n);
    ++g_errors;
}

// ---------------------------------------------------------------------------------------
// The element types (decode.cu's, with host conversions) and the inline-PTX helpers.
static float half_to_f(u16 h) {
    const u32 s = (h >> 15) & 1, e = (h >> 10) & 31, m = h & 1023;
    float f;
    if (e == 0) f = std::ldexp((float)m, -24);
    else if (e == 31) f = m ? NAN : INFINITY;
    else f = std::ldexp((float)(m | 1024), (int)e - 25);
    return s ? -f : f;
}
static u16 f_to_half(float v) {  // round to nearest even, via double steps (test data only)
    if (v != v) return 0x7e00;
    const u16 s = std::signbit(v) ? 0x8000 : 0;
    double a = std::fabs((double)v);
    if (a >= 65520.0) return s | 0x7c00;
    if (a < std::ldexp(1.0, -14)) return s | (u16)std::nearbyint(a / std::ldexp(1.0, -24));
    int e;
    std::frexp(a, &e);  // a = m * 2^e, m in [0.5, 1)
    const double q = std::ldexp(1.0, e - 11);
    double r = std::nearbyint(a / q) * q;
    std::frexp(r, &e);
    const u32 ex = (u32)(e - 1 + 15), man = (u32)(r / std::ldexp(1.0, e - 11)) & 1023;
    return s | (u16)(ex << 10) | (u16)man;
}
struct F32 {
    typedef float T;
    static float ld(const float* p, u64 i) { return p[i]; }
    static void st(float* p, u64 i, float v) { p[i] = v; }
};
struct BF16 {
    typedef u16 T;
    static float ld(const u16* p, u64 i) { return __uint_as_float(((u32)p[i]) << 16); }
    static void st(u16* p, u64 i, float v) {
        u32 x = __float_as_uint(v);
        if ((x & 0x7fffffffu) > 0x7f800000u) { p[i] = 0x7fc0; return; }
        x += 0x7fffu + ((x >> 16) & 1u);
        p[i] = (u16)(x >> 16);
    }
};
struct F16 {
    typedef u16 T;
    static float ld(const u16* p, u64 i) { return half_to_f(p[i]); }
    static void st(u16* p, u64 i, float v) { p[i] = f_to_half(v); }
};
static inline float warp_sum(float v) {
    for (u32 o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}
static inline float warp_max(float v) {
    for (u32 o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}
static uint4 att_ld16(const void* p, bool ok) {
    uint4 v{0, 0, 0, 0};
    if (ok) {
        check_in(p, 16);
        memcpy(&v, p, 16);
    }
    return v;
}
static float att_exp2(float x) { return exp2f(x); }
static u32 att_word(const uint4& x, u32 i) { return i == 0 ? x.x : i == 1 ? x.y : i == 2 ? x.z : x.w; }
template <typename E> struct AttRaw;
template <> struct AttRaw<BF16> {
    struct V { uint4 a; };
    static V load(const u16* p, bool ok) { return V{att_ld16(p, ok)}; }
    static void to_f(const V& x, float* o) {
        for (u32 k = 0; k < 4; ++k) {
            const u32 w = att_word(x.a, k);
            o[2 * k] = __uint_as_float(w << 16);
            o[2 * k + 1] = __uint_as_float(w & 0xffff0000u);
        }
    }
};
template <> struct AttRaw<F16> {
    struct V { uint4 a; };
    static V load(const u16* p, bool ok) { return V{att_ld16(p, ok)}; }
    static void to_f(const V& x, float* o) {
        for (u32 k = 0; k < 4; ++k) {
            const u32 w = att_word(x.a, k);
            o[2 * k] = half_to_f((u16)(w & 0xffffu));
            o[2 * k + 1] = half_to_f((u16)(w >> 16));
        }
    }
};
template <> struct AttRaw<F32> {
    struct V { uint4 a, b; };
    static V load(const float* p, bool ok) { return V{att_ld16(p, ok), att_ld16(p + 4, ok)}; }
    static void to_f(const V& x, float* o) {
        for (u32 k = 0; k < 4; ++k) {
            o[k] = __uint_as_float(att_word(x.a, k));
            o[4 + k] = __uint_as_float(att_word(x.b, k));
        }
    }
};
// mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}: a warp rendezvous.
static u32 mma_a[32][32][4], mma_b[32][32][2];
static float mma_c[32][32][4];
template <typename E>
static void emu_mma(float* d, const u32* a, u32 b0, u32 b1) {
    const u32 w = cur->tid / 32, l = cur->tid % 32;
    memcpy(mma_a[w][l], a, 16);
    mma_b[w][l][0] = b0;
    mma_b[w][l][1] = b1;
    memcpy(mma_c[w][l], d, 16);
    __syncwarp();
    auto el = [](u32 word, u32 hi) { return E::ld(reinterpret_cast<const u16*>(&word), hi); };  // low half first
    float A[16][16], B[16][8];
    for (u32 x = 0; x < 32; ++x) {
        const u32 gid = x >> 2, tig = x & 3;
        for (u32 i = 0; i < 8; ++i) {
            const u32 row = (i < 2 || (i >= 4 && i < 6)) ? gid : gid + 8;
            const u32 col = tig * 2 + (i & 1) + (i >= 4 ? 8 : 0);
            A[row][col] = el(mma_a[w][x][i / 2], i & 1);
        }
        for (u32 i = 0; i < 4; ++i) {
            const u32 row = tig * 2 + (i & 1) + (i >= 2 ? 8 : 0), col = gid;
            B[row][col] = el(mma_b[w][x][i / 2], i & 1);
        }
    }
    const u32 gid = l >> 2, tig = l & 3;
    for (u32 i = 0; i < 4; ++i) {
        const u32 row = i < 2 ? gid : gid + 8, col = tig * 2 + (i & 1);
        double s = mma_c[w][l][i];
        for (u32 k = 0; k < 16; ++k) s += (double)A[row][k] * B[k][col];
        d[i] = (float)s;
    }
    __syncwarp();
}
template <typename E> struct AttMma {
    static void run(float* d, const u32* a, u32 b0, u32 b1) { emu_mma<E>(d, a, b0, b1); }
};

// ---------------------------------------------------------------------------------------
// decode.cu's ATT_* constants and the kernel's body.
#include ATT_BODY

// ---------------------------------------------------------------------------------------
// Running a grid.
static std::function<void()>* g_body;
static void fiber_main() {
    (*g_body)();
    cur->done = true;
    // Wake nobody: a barrier that waits on this thread would report the divergence when the
    // scheduler finds everyone blocked.
}
static void run_block(u32 threads, const std::function<void()>& body) {
    nthreads = threads;
    fibs.resize(threads);
    g_body = const_cast<std::function<void()>*>(&body);
    for (u32 t = 0; t < threads; ++t) {
        Fib& f = fibs[t];
        f.stack.resize(1 << 18);
        f.tid = t;
        f.done = f.blocked = false;
        getcontext(&f.ctx);
        f.ctx.uc_stack.ss_sp = f.stack.data();
        f.ctx.uc_stack.ss_size = f.stack.size();
        f.ctx.uc_link = &sched_ctx;
        makecontext(&f.ctx, fiber_main, 0);
    }
    block_bar = Bar();
    for (auto& b : warp_bar) b = Bar();
    for (;;) {
        bool any = false, progress = false;
        for (u32 t = 0; t < threads; ++t) {
            Fib& f = fibs[t];
            if (f.done) continue;
            any = true;
            if (f.blocked) continue;
            cur = &f;
            progress = true;
            swapcontext(&sched_ctx, &f.ctx);
        }
        if (!any) break;
        if (!progress) {
            printf("  ERROR: deadlock (threads blocked at a barrier others never reach)\n");
            ++g_errors;
            break;
        }
    }
}

// ---------------------------------------------------------------------------------------
// Tests.
template <typename E> struct Host;
template <> struct Host<F32> { static constexpr int dt = 0; static constexpr const char* name = "f32"; };
template <> struct Host<F16> { static constexpr int dt = 1; static constexpr const char* name = "f16"; };
template <> struct Host<BF16> { static constexpr int dt = 2; static constexpr const char* name = "bf16"; };

struct Case {
    int B, nq, nk, T, dim, S;
    std::vector<u32> pos;
    float qrange;
    int blocks, min_chunk;  // the split rule (gpu.rs: ATT_BLOCKS, ATT_MIN_CHUNK)
};
static std::mt19937_64 rng(12345);

template <typename E, u32 DP, u32 GK, u32 NW, bool MMA, bool PF>
static bool run_case(const Case& c, const char* vname) {
    typedef typename E::T Elem;
    const int g = c.nq / c.nk, nhg = (g + ATT_HEADS - 1) / ATT_HEADS;
    const size_t nkv = (size_t)c.B * c.nk * c.S * c.dim, nqe = (size_t)c.B * c.nq * c.T * c.dim;
    const size_t nout = (size_t)c.B * c.T * c.nq * c.dim;
    std::uniform_real_distribution<float> U(-1.f, 1.f);
    std::vector<Elem> k(nkv), v(nkv), q(nqe);
    for (auto& x : k) E::st(&x, 0, U(rng));
    for (auto& x : v) E::st(&x, 0, U(rng));
    for (auto& x : q) E::st(&x, 0, U(rng) * c.qrange);
    // The rule (gpu.rs attention_launch).
    const long per = (long)c.B * c.nk * nhg * c.T;
    long nsplit = (c.blocks + per - 1) / per;
    nsplit = std::max(1L, std::min<long>({nsplit, (long)ATT_MAX_SPLITS, (long)((c.S + c.min_chunk - 1) / c.min_chunk)}));
    const u32 max_chunk = (u32)((c.S + nsplit - 1) / nsplit);
    // Output and partials with guard words on both sides.
    const size_t G = 64;
    std::vector<Elem> outb(nout + 2 * G);
    std::vector<float> partb((size_t)c.B * c.nq * c.T * nsplit * (c.dim + 4) + 2 * G);
    for (auto& x : outb) E::st(&x, 0, NAN);
    for (auto& x : partb) x = -12345.f;
    Elem* out = outb.data() + G;
    float* part = partb.data() + G;
    const Elem guard_out = outb[0];
    std::vector<u32> counters(c.B * c.nk * c.T, 0);
    ranges = {{(const char*)k.data(), (const char*)(k.data() + nkv)},
              {(const char*)v.data(), (const char*)(v.data() + nkv)},
              {(const char*)q.data(), (const char*)(q.data() + nqe)}};
    const float scale = 1.f / std::sqrt((float)c.dim);
    g_grid = {(u32)(c.B * c.nk * nhg), (u32)c.T, (u32)nsplit};
    std::vector<dim3u> order;
    for (u32 z = 0; z < g_grid.z; ++z)
        for (u32 y = 0; y < g_grid.y; ++y)
            for (u32 x = 0; x < g_grid.x; ++x) order.push_back({x, y, z});
    std::shuffle(order.begin(), order.end(), rng);
    const int err0 = g_errors;
    std::function<void()> body = [&]() {
        attention<E, DP, GK, NW, MMA, PF>(q.data(), k.data(), v.data(), c.pos.data(), c.T, c.nq, c.nk, c.S, c.dim,
                                          (u32)nsplit, max_chunk, (u32)c.min_chunk, scale, part, counters.data(), out);
    };
    for (auto& b : order) {
        g_block = b;
        run_block(NW * 32, body);
    }
    // The reference, in double.
    double num = 0, den = 0, mx = 0;
    bool nan = false;
    for (int b = 0; b < c.B; ++b)
        for (int t = 0; t < c.T; ++t) {
            long len = (long)c.pos[b] + t + 1;
            if (len > c.S) len = c.S;
            for (int h = 0; h < c.nq; ++h) {
                const int kh = h / g;
                std::vector<double> sc(len);
                double m = -1e300;
                for (long j = 0; j < len; ++j) {
                    double a = 0;
                    for (int d = 0; d < c.dim; ++d)
                        a += (double)E::ld(q.data(), (((size_t)b * c.nq + h) * c.T + t) * c.dim + d) *
                             E::ld(k.data(), (((size_t)b * c.nk + kh) * c.S + j) * c.dim + d);
                    sc[j] = a * scale;
                    m = std::max(m, sc[j]);
                }
                double s = 0;
                for (auto& x : sc) s += (x = std::exp(x - m));
                for (int d = 0; d < c.dim; ++d) {
                    double o = 0;
                    for (long j = 0; j < len; ++j) o += sc[j] / s * E::ld(v.data(), (((size_t)b * c.nk + kh) * c.S + j) * c.dim + d);
                    const double gv = E::ld(out, (((size_t)b * c.T + t) * c.nq + h) * c.dim + d);
                    if (gv != gv) nan = true;
                    num += (gv - o) * (gv - o);
                    den += o * o;
                    mx = std::max(mx, std::fabs(gv - o));
                }
            }
        }
    const double rel = std::sqrt(num / den);
    bool guards = true;
    for (size_t i = 0; i < G; ++i) {
        guards &= memcmp(&outb[i], &guard_out, sizeof(Elem)) == 0 && memcmp(&outb[G + nout + i], &guard_out, sizeof(Elem)) == 0;
        guards &= partb[i] == -12345.f && partb[partb.size() - 1 - i] == -12345.f;
    }
    const bool zero = std::all_of(counters.begin(), counters.end(), [](u32 x) { return x == 0; });
    const double tol = Host<E>::dt == 0 ? 1e-5 : Host<E>::dt == 1 ? 2e-3 : 1e-2;
    const bool ok = !nan && rel < tol && guards && zero && g_errors == err0;
    printf("  %s %-5s %-24s B%d nq%-2d nk%d T%d dim%-3d S%-4d nsplit %2ld min_chunk %3d: rel %.2e%s%s%s\n",
           ok ? "PASS" : "FAIL", Host<E>::name, vname, c.B, c.nq, c.nk, c.T, c.dim, c.S, nsplit, c.min_chunk, rel,
           nan ? " NaN" : "", guards ? "" : " GUARD WORDS CHANGED", zero ? "" : " COUNTERS NOT 0");
    return ok;
}

static int n_fail = 0, n_all = 0;
template <typename E, u32 DP, u32 GK, u32 NW, bool MMA, bool PF>
static void run(const Case& c, const char* vname) {
    ++n_all;
    n_fail += !run_case<E, DP, GK, NW, MMA, PF>(c, vname);
}

// The entry points' configurations (decode.cu INSTANTIATE_ATT) for a dtype, by head_dim.
template <typename E, bool M16>
static void prod(const Case& c) {
    if (c.dim <= 64) run<E, 64, 16, ATT_WARPS, M16, M16>(c, "prod d64");
    else if (c.dim <= 128) run<E, 128, M16 ? 16 : 8, ATT_WARPS, M16, false>(c, "prod d128");
    else run<E, 256, 8, ATT_WARPS, M16, false>(c, "prod d256");
}

int main() {
    // gpu.rs's rule, small shapes: every head ratio and size, 1 and 3 tokens.
    const int PB = 2048, PM = 128;
    for (int dim : {16, 64, 72, 128, 200, 256})
        for (int g : {1, 3, 4, 7, 16})
            for (int T : {1, 3}) {
                Case c{3, 2 * g, 2, T, dim, 300, T == 1 ? std::vector<u32>{0, 129, 290} : std::vector<u32>{5, 133, 299}, 2.f,
                       PB, PM};
                prod<BF16, true>(c);
                if (dim == 64 || dim == 72 || dim == 256 || g == 7) {
                    prod<F16, true>(c);
                    prod<F32, false>(c);
                }
            }
    // Large scores (the running max moves), the Llama shape at a few positions, more chunks.
    for (int mc : {64, 128}) {
        Case c{2, 32, 8, 1, 64, 700, {690, 37}, 20.f, PB, mc};
        prod<BF16, true>(c);
        prod<F16, true>(c);
        prod<F32, false>(c);
    }
    // Variants of the template (bench/attention_probe.cu times them), multi-chunk.
    {
        Case c{2, 8, 2, 2, 64, 520, {517, 100}, 3.f, 64, 64};
        run<BF16, 64, 16, 4, true, true>(c, "gk16 mma pf");
        run<BF16, 64, 16, 4, true, false>(c, "gk16 mma nopf");
        run<BF16, 64, 16, 4, false, true>(c, "gk16 cuda-core pf");
        run<BF16, 64, 16, 4, false, false>(c, "gk16 cuda-core nopf");
        run<BF16, 64, 8, 4, true, true>(c, "gk8 mma pf");
        run<BF16, 64, 8, 4, false, false>(c, "gk8 cuda-core nopf");
        run<BF16, 64, 16, 8, true, true>(c, "gk16 mma pf 8 warps");
        run<BF16, 64, 16, 8, true, false>(c, "gk16 mma nopf 8 warps");
        run<F16, 64, 16, 4, false, true>(c, "gk16 cuda-core pf");
        Case d{2, 12, 2, 1, 128, 400, {399, 250}, 3.f, 64, 64};
        run<BF16, 128, 16, 4, true, true>(d, "d128 gk16 mma pf");
        run<BF16, 128, 8, 4, false, false>(d, "d128 gk8 cuda-core");
        run<F32, 128, 16, 4, false, false>(d, "d128 gk16 f32");
        Case e{1, 16, 1, 1, 256, 300, {299}, 3.f, 64, 64};
        run<BF16, 256, 16, 4, true, false>(e, "d256 gk16 mma");
        run<F16, 256, 8, 8, true, true>(e, "d256 gk8 mma pf 8 warps");
    }
    printf("\n%s: %d of %d cases%s\n", n_fail || g_errors ? "FAIL" : "PASS", n_all - n_fail, n_all,
           g_errors ? " (emulator errors above)" : "");
    return n_fail || g_errors ? 1 : 0;
}
