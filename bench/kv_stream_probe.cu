// Probe for issue #32, target 2: how fast the decode attention's keys and values can be read
// on this GPU, and how far the crate's kernel is from that.
//
// Over Llama-3.2-1B's caches (8 key heads of 64, bf16, S = 8,256 positions a row, 16 layers each
// with its own caches), at B rows and position P (B 8 at 8,000 and 2,000; 32 at 2,000 and 8,000), graphs
// of 16 launches (one a layer's caches), µs a launch and the rate over the bytes a launch must
// read (B x 8 x (P + 1) x 64 x 2 x 2):
//   crate    the crate's `attention_rope_d64w8_bf16` on gpu.rs's grid for decode (8 warps, one
//            wave of at most 264 blocks);
//   ld-D     the same grid and the same 16-byte loads of each group of 16 keys and values into
//            registers as the crate's kernel (one warp a group, warps taking groups in turn),
//            with D groups in flight a warp (the crate keeps 2: the one it computes and the
//            next) and no arithmetic but an XOR of what was loaded;
//   bulk-D   the same grid, each group's keys and values copied by the copy engine
//            (cp.async.bulk, one 2 KB copy each) into a ring of D groups a warp in shared
//            memory, completion counted on an mbarrier; the lanes read them as the crate's
//            kernel reads its registers (16 bytes a lane) and XOR them. D 3: 96 KB a block, two
//            blocks a multiprocessor as the crate's kernel; D 4: 128 KB, one block;
//   flat     a plain read of the whole of one launch's caches' prefixes laid end to end (one
//            buffer of the same bytes), grid-stride 16-byte loads, 4 in flight a thread.
// Every launch but a graph's first is programmatic (as the step launches attention), and each
// kernel waits at its start (griddepcontrol.wait) and lets the next one launch.
//
// `kv_stream_probe crate` times the crate's kernel alone, at batch 8 (positions 8,000, 2,000 and
// 64), 32 (2,000 and 8,000) and 1 (8,000), and prints a hash of its output where the prefix is
// split (so two builds of decode.cu can be compared bit for bit). (Commit 19903f2's build with
// -DATT_CLUSTER=1 also timed the kernel launched in clusters of its chunks, combining them
// through distributed shared memory: run 133; removed since.)
// `kv_stream_probe trace` (built with -DKV_TRACE) times no graph: it launches the crate's kernel
// and ld-2 alone, 48 times each (the first 16 discarded), and prints where a launch's time goes
// from %globaltimer stamps at decode.cu's DECODE_TRACE sites.
//
// (Commit 1b8297b put bulk-3's ring into the crate's fused 8-warp kernel, with this probe
// timing it against the kernel before and checking the bits: runs 121-125; the step in run
// 127. Reverted: see docs/benchmarks-llama.md, 2026-11-28's sixth session.)
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -o kv_stream_probe bench/kv_stream_probe.cu
#include <cstdint>
// KV_TRACE (kv_stream_probe_trace, `trace` mode): thread 0 of each block stamps %globaltimer
// (ns) at decode.cu's attention sites 9 (start) .. 14 (combined) into slots 1 .. 6 of its row
// of g_kv_st; ld-2 stamps its start (slot 1) and its end (slot 5).
#if defined(KV_TRACE)
__device__ unsigned long long g_kv_st[1024 * 8];
static __device__ __forceinline__ void kv_trace(unsigned site) {
    if (threadIdx.x != 0 || site < 9 || site > 14) return;
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    const unsigned blk = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    g_kv_st[blk * 8 + (site - 8)] = t;
}
#define DECODE_TRACE(site, a, b, c) kv_trace(site)
static void* g_kv_st_ptr() {
    void* p = nullptr;
    cudaGetSymbolAddress(&p, g_kv_st);
    return p;
}
#else
#define DECODE_TRACE(site, a, b, c)
#endif
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

static const u32 L = 16, NQ = 32, NK = 8, D = 64, S = 8256, NW = 8;

// The crate's chunking (decode.cu's att_prefix and att_chunk, gpu.rs's decode minimum of 256
// keys): chunk c of row b's prefix.
struct Chunk { u32 start, end; bool live; };
static __device__ __forceinline__ Chunk chunk_of(const u32* pos, u32 b, u32 c, u32 nsplit, u32 max_chunk) {
    const u32 len = att_prefix(pos[b], 0, S);
    const u32 chunk = att_chunk(len, nsplit, 256, max_chunk);
    const u32 start = c * chunk;
    return {start, min(start + chunk, len), start < len};
}

struct Grp { uint4 k0[2], k1[2], v[4]; };
static __device__ __forceinline__ void grp_load(Grp& G, const u16* kp, const u16* vp, u32 key0, u32 end, u32 lane) {
    const u32 r = lane / 4, cq = lane % 4, j = lane / 8, pv = lane % 8;
#pragma unroll
    for (u32 u = 0; u < 2; ++u) {
        const u32 vi = 4 * u + cq;
        G.k0[u] = att_ld16(kp + (u64)(key0 + r) * D + vi * 8, key0 + r < end);
        G.k1[u] = att_ld16(kp + (u64)(key0 + r + 8) * D + vi * 8, key0 + r + 8 < end);
    }
#pragma unroll
    for (u32 i = 0; i < 4; ++i) {
        const u32 key = key0 + i * 4 + j;
        G.v[i] = att_ld16(vp + (u64)key * D + pv * 8, key < end);
    }
}
static __device__ __forceinline__ u32 grp_xor(const Grp& G) {
    u32 x = 0;
#pragma unroll
    for (u32 u = 0; u < 2; ++u) x ^= G.k0[u].x ^ G.k0[u].y ^ G.k0[u].z ^ G.k0[u].w ^ G.k1[u].x ^ G.k1[u].y ^ G.k1[u].z ^ G.k1[u].w;
#pragma unroll
    for (u32 i = 0; i < 4; ++i) x ^= G.v[i].x ^ G.v[i].y ^ G.v[i].z ^ G.v[i].w;
    return x;
}

// ld-D: D groups of registers in flight a warp.
template <u32 DEPTH>
__global__ void __launch_bounds__(NW * 32, 2) ld_only(const u16* kc, const u16* vc, const u32* pos, u32 nsplit,
                                                     u32 max_chunk, u32* sink) {
    pdl_wait();
    pdl_trigger();
    const u32 bk = blockIdx.x, b = bk / NK, c = blockIdx.z;
    const Chunk ch = chunk_of(pos, b, c, nsplit, max_chunk);
    if (!ch.live) return;
    DECODE_TRACE(9, 0, 0, 0);
    const u32 w = threadIdx.x / 32, lane = threadIdx.x % 32;
    const u64 base = (u64)bk * S * D;
    const u16 *kp = kc + base, *vp = vc + base;
    const u32 ngroups = (ch.end - ch.start + 15) / 16;
    Grp ring[DEPTH];
#pragma unroll
    for (u32 s = 0; s < DEPTH; ++s) grp_load(ring[s], kp, vp, ch.start + (w + s * NW) * 16, ch.end, lane);
    u32 x = 0;
    for (u32 gi = w; gi < ngroups; gi += DEPTH * NW) {
#pragma unroll
        for (u32 s = 0; s < DEPTH; ++s) {
            x ^= grp_xor(ring[s]);
            grp_load(ring[s], kp, vp, ch.start + (gi + (s + DEPTH) * NW) * 16, ch.end, lane);
        }
    }
    if (x == 0x9e3779b9u) sink[0] = x;
#if defined(KV_TRACE)
    __syncthreads();
    DECODE_TRACE(13, 0, 0, 0);
#endif
}

// bulk-D: a ring of D groups a warp in shared memory (keys 2 KB, then values 2 KB a slot),
// filled by cp.async.bulk, one mbarrier a slot.
static __device__ __forceinline__ u32 smem_addr(const void* p) { return (u32)__cvta_generic_to_shared(p); }
static __device__ __forceinline__ void mbar_init(u64* bar) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(bar)));
}
static __device__ __forceinline__ void mbar_expect(u64* bar, u32 bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
static __device__ __forceinline__ void mbar_wait(u64* bar, u32 parity) {
    asm volatile(
        "{\n\t.reg .pred done;\n\t"
        "W: mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n\t"
        "@!done bra W;\n\t}" ::"r"(smem_addr(bar)),
        "r"(parity)
        : "memory");
}
static __device__ __forceinline__ void bulk_copy(void* dst, const void* src, u32 bytes, u64* bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
                     smem_addr(dst)),
                 "l"(src), "r"(bytes), "r"(smem_addr(bar))
                 : "memory");
}
template <u32 DEPTH>
__global__ void __launch_bounds__(NW * 32, 2) bulk_only(const u16* kc, const u16* vc, const u32* pos, u32 nsplit,
                                                       u32 max_chunk, u32* sink) {
    extern __shared__ __align__(128) uint4 ring[];  // [NW][DEPTH][256]: keys 128, values 128
    __shared__ __align__(8) u64 bar[NW][DEPTH];
    const u32 w = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane < DEPTH) mbar_init(&bar[w][lane]);
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    __syncwarp();
    pdl_wait();
    pdl_trigger();
    const u32 bk = blockIdx.x, b = bk / NK, c = blockIdx.z;
    const Chunk ch = chunk_of(pos, b, c, nsplit, max_chunk);
    if (!ch.live) return;
    const u64 base = (u64)bk * S * D;
    const u16 *kp = kc + base, *vp = vc + base;
    const u32 ngroups = (ch.end - ch.start + 15) / 16;
    uint4* my = ring + (u64)w * DEPTH * 256;
    auto issue = [&](u32 s, u32 gi) {
        if (lane != 0 || gi >= ngroups) return;
        const u32 key0 = ch.start + gi * 16, rows = min(16u, ch.end - key0), bytes = rows * D * 2;
        mbar_expect(&bar[w][s], 2 * bytes);
        bulk_copy(my + s * 256, kp + (u64)key0 * D, bytes, &bar[w][s]);
        bulk_copy(my + s * 256 + 128, vp + (u64)key0 * D, bytes, &bar[w][s]);
    };
#pragma unroll
    for (u32 s = 0; s < DEPTH; ++s) issue(s, w + s * NW);
    const u32 r = lane / 4, cq = lane % 4, j = lane / 8, pv = lane % 8;
    u32 x = 0, phase = 0;
    for (u32 gi = w; gi < ngroups; gi += DEPTH * NW) {
#pragma unroll
        for (u32 s = 0; s < DEPTH; ++s) {
            const u32 g = gi + s * NW;
            if (g >= ngroups) break;
            mbar_wait(&bar[w][s], phase);
            const uint4* kk = my + s * 256;
            const uint4* vv = kk + 128;
            Grp G;
#pragma unroll
            for (u32 u = 0; u < 2; ++u) {
                G.k0[u] = kk[r * 8 + 4 * u + cq];
                G.k1[u] = kk[(r + 8) * 8 + 4 * u + cq];
            }
#pragma unroll
            for (u32 i = 0; i < 4; ++i) G.v[i] = vv[(i * 4 + j) * 8 + pv];
            x ^= grp_xor(G);
            __syncwarp();
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            issue(s, g + DEPTH * NW);
        }
        phase ^= 1;
    }
    if (x == 0x9e3779b9u) sink[0] = x;
}

// flat: n 16-byte words, 4 loads in flight a thread.
__global__ void __launch_bounds__(256) flat_read(const uint4* p, u64 n, u32* sink) {
    pdl_wait();
    pdl_trigger();
    u32 x = 0;
    const u64 stride = (u64)gridDim.x * blockDim.x;
    u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        uint4 a[4];
#pragma unroll
        for (u32 k = 0; k < 4; ++k) a[k] = att_ld16(p + i + k * stride, true);
#pragma unroll
        for (u32 k = 0; k < 4; ++k) x ^= a[k].x ^ a[k].y ^ a[k].z ^ a[k].w;
    }
    for (; i < n; i += stride) {
        const uint4 a = att_ld16(p + i, true);
        x ^= a.x ^ a.y ^ a.z ^ a.w;
    }
    if (x == 0x9e3779b9u) sink[0] = x;
}

#if defined(KV_TRACE)
// One launch's stamps (blocks x 8 slots), zeroed before it; the phases of its live blocks, ns.
struct Phases {
    double span = 0, last_keys = 0, tail = 0, skew = 0, wait = 0, pro = 0, keys = 0, out = 0, comb = 0, keys_max = 0;
    Phases& operator+=(const Phases& o) {
        span += o.span; last_keys += o.last_keys; tail += o.tail; skew += o.skew; wait += o.wait;
        pro += o.pro; keys += o.keys; out += o.out; comb += o.comb; keys_max += o.keys_max;
        return *this;
    }
};
static Phases phases(const std::vector<unsigned long long>& st, u32 blocks, bool crate) {
    Phases p;
    unsigned long long t0 = ~0ull, first_max = 0, keys_end = 0, end = 0;
    u32 live = 0, lasts = 0;
    for (u32 k = 0; k < blocks; ++k) {
        const unsigned long long* s = &st[k * 8];
        if (!s[1]) continue;
        ++live;
        t0 = std::min(t0, s[1]);
        first_max = std::max(first_max, s[1]);
        end = std::max(end, std::max(s[5], s[6]));
        if (!crate) continue;
        keys_end = std::max(keys_end, s[4]);
        p.wait += s[2] - s[1];
        p.pro += s[3] - s[2];
        p.keys += s[4] - s[3];
        p.keys_max = std::max(p.keys_max, (double)(s[4] - s[3]));
        p.out += s[5] - s[4];
        if (s[6]) { p.comb += s[6] - s[5]; ++lasts; }
    }
    p.span = end - t0;
    p.skew = first_max - t0;
    if (crate) {
        p.last_keys = keys_end - t0;
        p.tail = end - keys_end;
        p.wait /= live; p.pro /= live; p.keys /= live; p.out /= live;
        p.comb = lasts ? p.comb / lasts : 0;
    }
    return p;
}
#endif

int main(int argc, char** argv) {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    const bool trace = argc > 1 && !strcmp(argv[1], "trace");
    const bool crate_only = argc > 1 && !strcmp(argv[1], "crate");  // the crate's kernel alone
#if !defined(KV_TRACE)
    if (trace) { printf("trace: build with -DKV_TRACE\n"); return 2; }
#endif
    probe_device();
    const u32 BM = 32;
    u64 seed = 5;
    const u64 cache = (u64)NK * S * D;  // a row's
    std::vector<u16*> kc(L), vc(L);
    for (u32 l = 0; l < L; ++l) {
        CK(cudaMalloc(&kc[l], BM * cache * 2)); fill(kc[l], BM * cache, ++seed, -1.f, 1.f);
        CK(cudaMalloc(&vc[l], BM * cache * 2)); fill(vc[l], BM * cache, ++seed, -1.f, 1.f);
    }
    u16 *qkv, *att;
    float* part;
    u32 *pos, *ctr, *ovf, *sink;
    CK(cudaMalloc(&qkv, BM * (NQ + 2 * NK) * D * 2)); fill(qkv, BM * (NQ + 2 * NK) * D, ++seed, -1.f, 1.f);
    CK(cudaMalloc(&att, BM * NQ * D * 2));
    // RoPE table [S, D]: cosines, then sines (theta 500,000).
    float* table = rope_table(S, D);
    CK(cudaMalloc(&pos, BM * 4)); CK(cudaMalloc(&ctr, BM * NK * 4)); CK(cudaMalloc(&ovf, BM * 4));
    CK(cudaMalloc(&sink, 4));
    CK(cudaMemset(ctr, 0, BM * NK * 4)); CK(cudaMemset(ovf, 0, BM * 4));
    CK(cudaMalloc(&part, (u64)BM * NQ * 16 * (D + 4) * 4));
    // One flat buffer a layer of the largest launch's bytes (32 rows at 8,001 keys).
    const u64 flat_max = 2ull * BM * NK * 8001 * D * 2;
    std::vector<uint4*> flat(L);
    for (u32 l = 0; l < L; ++l) { CK(cudaMalloc(&flat[l], flat_max)); fill((u16*)flat[l], flat_max / 2, ++seed, -1.f, 1.f); }

    {
        cudaFuncAttributes fa;
        CK(cudaFuncGetAttributes(&fa, attention_rope_d64w8_bf16));
        int occ = 0;
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&occ, attention_rope_d64w8_bf16, 256, 0));
        printf("crate: %d registers, %zu bytes local, %zu static shared, %d blocks a multiprocessor\n", fa.numRegs,
               fa.localSizeBytes, fa.sharedSizeBytes, occ);
    }
    auto report = [](const char* what, u32 B, u32 P, const Timing& t) {
        const double bytes = 2.0 * B * NK * (P + 1) * D * 2;
        printf("B %2u position %4u %-8s %8.2f us a launch (%.2f-%.2f), %.2f TB/s\n", B, P, what, t.med, t.lo, t.hi,
               bytes / t.med * 1e-6);
    };
    const std::vector<std::pair<u32, u32>> configs =
        trace || crate_only ? std::vector<std::pair<u32, u32>>{{8, 8000}, {8, 2000}, {32, 2000}, {32, 8000}, {1, 8000}, {8, 64}}
              : std::vector<std::pair<u32, u32>>{{8, 8000}, {32, 2000}, {32, 8000}, {8, 2000}};
    for (const auto bp : configs) {
        const u32 B = bp.first, P = bp.second;
        std::vector<u32> pv(BM, P);
        CK(cudaMemcpy(pos, pv.data(), BM * 4, cudaMemcpyHostToDevice));
        // gpu.rs's decode grid for the 8-warp kernel: chunks within 264 blocks, at most 16.
        const u32 ns = std::max(1u, std::min(264u / (B * NK), std::min(16u, (S + 255) / 256)));
        const u32 max_chunk = (S + ns - 1) / ns;
        const dim3 grid(B * NK, 1, ns);
        const u64 words = 2ull * B * NK * (P + 1) * D * 2 / 16;
        auto crate = [&](int l) {
            CK(launch_ex(l > 0, attention_rope_d64w8_bf16, grid, 256, 0u, (const u16*)qkv, (const u16*)kc[l],
                         (const u16*)vc[l], (const u32*)pos, 1u, NQ, NK, S, D, ns, max_chunk, 256u, 0.125f, part, ctr, att,
                         (const u16*)qkv, (const u16*)nullptr, (const float*)table, (const u32*)nullptr, 0u, kc[l], vc[l],
                         ovf));
        };
        auto ld = [&](auto kern) {
            return [&, kern](int l) {
                CK(launch_ex(l > 0, kern, grid, 256, 0u, (const u16*)kc[l], (const u16*)vc[l], (const u32*)pos, ns,
                             max_chunk, sink));
            };
        };
        auto bulk = [&](auto kern, u32 depth) {
            const u32 smem = NW * depth * 4096;
            CK(cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
            return [&, kern, smem](int l) {
                CK(launch_ex(l > 0, kern, grid, 256, smem, (const u16*)kc[l], (const u16*)vc[l], (const u32*)pos, ns,
                             max_chunk, sink));
            };
        };
        auto flat_l = [&](int l) {
            CK(launch_ex(l > 0, flat_read, dim3(g_sms * 8), 256, 0u, (const uint4*)flat[l], words, sink));
        };
        printf("B %u position %u: %u chunks, grid %u blocks\n", B, P, ns, B * NK * ns);
#if defined(KV_TRACE)
        if (trace) {
            // Single launches, not programmatic, each on the next layer's caches; 48 of each
            // kernel, alternating, the first 16 of each discarded; mean phases in µs.
            const u32 blocks = B * NK * ns;
            std::vector<unsigned long long> st(blocks * 8);
            auto run1 = [&](bool is_crate, int l) {
                CK(cudaMemset(g_kv_st_ptr(), 0, sizeof(unsigned long long) * blocks * 8));
                if (is_crate) crate(l);
                else ld(ld_only<2>)(l);
                CK(cudaStreamSynchronize(g_s));
                CK(cudaMemcpy(st.data(), g_kv_st_ptr(), sizeof(unsigned long long) * blocks * 8, cudaMemcpyDeviceToHost));
                return phases(st, blocks, is_crate);
            };
            Phases c{}, d{};
            u32 n = 0;
            for (int i = 0; i < 48; ++i) {
                const Phases pc = run1(true, i % L), pd = run1(false, i % L);
                if (i < 16) continue;
                ++n;
                c += pc;
                d += pd;
            }
            const double k = 1e-3 / n;
            printf("  crate: span %.2f (first to last block start %.2f; last keys done at %.2f, then %.2f to the end)\n",
                   c.span * k, c.skew * k, c.last_keys * k, c.tail * k);
            printf("  crate, a live block's mean: wait %.2f, queries and new key %.2f, keys %.2f (max %.2f), "
                   "merge + partials %.2f; a last block's combine %.2f\n",
                   c.wait * k, c.pro * k, c.keys * k, c.keys_max * k, c.out * k, c.comb * k);
            printf("  ld-2:  span %.2f (first to last block start %.2f)\n", d.span * k, d.skew * k);
            continue;
        }
#endif
        if (ns > 1 && crate_only) {
            // A hash of the output where chunks are combined (layer 0), to compare builds.
            std::vector<u16> a(B * NQ * D);
            crate(0);
            CK(cudaStreamSynchronize(g_s));
            CK(cudaMemcpy(a.data(), att, a.size() * 2, cudaMemcpyDeviceToHost));
            printf("  output hash %016llx\n", hash16(a));
        }
        for (int round = 0; round < 2; ++round) {
            report("crate", B, P, time_graph(L, crate));
            if (crate_only) continue;
            report("ld-1", B, P, time_graph(L, ld(ld_only<1>)));
            report("ld-2", B, P, time_graph(L, ld(ld_only<2>)));
            report("bulk-3", B, P, time_graph(L, bulk(bulk_only<3>, 3)));
            report("bulk-4", B, P, time_graph(L, bulk(bulk_only<4>, 4)));
            report("flat", B, P, time_graph(L, flat_l));
        }
    }
    CK(cudaDeviceSynchronize());
    printf("done\n");
    return 0;
}
