// The decode GEMV as capture-candle shipped it before the register-lean version (decode.cu at
// commit e2a704e), renamed, for bench/gemv_probe.cu's "(a)" column. Included after decode.cu.
// Matrix-vector products for decode (M <= 2 rows): y [M, N] = f(x) [M, K] . W [N, K]^T
// (+ residual [M, N]), with the input transform f fused in:
//   mode 0: f(x) = x;
//   mode 1: f(x) = rms_norm(x) * nw (eps): the norm that precedes a projection;
//   mode 2: f(x) = silu(x[:, :K]) * x[:, K:], x being [M, 2K]: SwiGLU before the down
//           projection.
// f(x) is rounded to the element type (as the separate kernel's output would be) and staged
// once per block in shared memory (M*K elements). Blocks are persistent: each warp takes two
// rows of W at a time, grid-stride, and keeps the next OLD_GEMV_PF 16-byte loads of both rows in
// registers while it computes the current ones (the first ones are issued before the
// staging, so the weight stream starts at once). For a short N, `ks` (1, 2, 4 or 8) warps
// share each row pair, each streaming a slice of K, summed in a fixed order. With `residual`, y = round(round(acc) +
// residual), as a product followed by an add would round. K must be a multiple of 8.
// Block: OLD_GEMV_THREADS.
#define OLD_GEMV_THREADS 256
#define OLD_GEMV_WARPS (OLD_GEMV_THREADS / 32)
#define OLD_GEMV_MAX_M 2
#define OLD_GEMV_PF 4

// Its own copy of the 16-byte unpacking it shipped with (by reference: applied to a global or
// shared load it compiles to 2-byte loads), so that this column stays the shipped kernel
// whatever decode.cu's Pack becomes.
template <typename E> struct OldPack;
template <> struct OldPack<F32> {
    static constexpr u32 EL = 4;
    static __device__ __forceinline__ void unpack(const uint4& v, float* o) {
        o[0] = __uint_as_float(v.x); o[1] = __uint_as_float(v.y); o[2] = __uint_as_float(v.z); o[3] = __uint_as_float(v.w);
    }
};
template <typename E> struct OldPackHalf {
    static constexpr u32 EL = 8;
    static __device__ __forceinline__ void unpack(const uint4& v, float* o) {
        const u16* h = reinterpret_cast<const u16*>(&v);
#pragma unroll
        for (int k = 0; k < 8; ++k) o[k] = E::ld(h, k);
    }
};
template <> struct OldPack<BF16> : OldPackHalf<BF16> {};
template <> struct OldPack<F16> : OldPackHalf<F16> {};

template <typename E>
__device__ void gemv_old(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 mode,
                     const typename E::T* nw, float eps, const typename E::T* residual, typename E::T* y, u32 ks,
                     unsigned long long* amax) {
    typedef typename E::T T;
    constexpr u32 EL = OldPack<E>::EL;
    extern __shared__ float gsm[];
    T* xs = reinterpret_cast<T*>(gsm);  // [M][K]
    __shared__ float red[OLD_GEMV_WARPS];
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const u32 KS = 32 * EL;                    // elements of a row one warp step covers
    const u32 steps = (K + KS - 1) / KS;
    // ks warps share a row pair, each streaming one slice of K (small N, long K: more loads in
    // flight); their partial sums meet in shared memory, in a fixed order.
    const u32 per_block = OLD_GEMV_WARPS / ks, slice = warp % ks;
    const u32 slice_steps = (steps + ks - 1) / ks;
    const u32 s_begin = min(steps, slice * slice_steps), s_end = min(steps, s_begin + slice_steps);
    const u32 groups = (N + 2 * per_block - 1) / (2 * per_block);
    __shared__ float parts[OLD_GEMV_WARPS][OLD_GEMV_MAX_M][2];
    // With `amax`: each row of y's largest (rounded) value and its first index, packed as
    // key << 32 | ~index, kept per thread, then one atomicMax per block (max is order-free).
    unsigned long long best[OLD_GEMV_MAX_M] = {0, 0};
    auto row_of = [&](u32 grp) { return (grp * per_block + warp / ks) * 2; };
    uint4 pa[OLD_GEMV_PF], pb[OLD_GEMV_PF];
    auto fetch = [&](u32 row, u32 s0) {
        const T* ra = W + (u64)row * K;
        const T* rb = W + (u64)min(row + 1, N - 1) * K;
#pragma unroll
        for (u32 s = 0; s < OLD_GEMV_PF; ++s) {
            const u32 k = ((s0 + s) * 32 + lane) * EL;
            if (s0 + s < s_end && k < K) {
                pa[s] = __ldg(reinterpret_cast<const uint4*>(ra + k));
                pb[s] = __ldg(reinterpret_cast<const uint4*>(rb + k));
            }
        }
    };
    // The first weight loads, before the staging.
    if (blockIdx.x < groups && row_of(blockIdx.x) < N) fetch(row_of(blockIdx.x), s_begin);
    // Staging, 16 bytes a thread a round, four rounds in flight.
    for (u32 m = 0; m < M; ++m) {
        float inv = 1.f;
        if (mode == 1) {
            float ss = 0.f;
#pragma unroll 4
            for (u32 k = tid * EL; k < K; k += OLD_GEMV_THREADS * EL) {
                float v[EL];
                OldPack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * K + k), v);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) ss += v[j] * v[j];
            }
            ss = warp_sum(ss);
            if (lane == 0) red[warp] = ss;
            __syncthreads();
            float tot = 0.f;
#pragma unroll
            for (u32 w = 0; w < OLD_GEMV_WARPS; ++w) tot += red[w];
            inv = rsqrtf(tot / K + eps);
            __syncthreads();
        }
#pragma unroll 4
        for (u32 k = tid * EL; k < K; k += OLD_GEMV_THREADS * EL) {
            float v[EL];
            if (mode == 2) {
                float u[EL];
                OldPack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * 2 * K + k), v);
                OldPack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * 2 * K + K + k), u);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) v[j] = v[j] / (1.f + __expf(-v[j])) * u[j];
            } else {
                OldPack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * K + k), v);
                if (mode == 1) {
                    float w[EL];
                    OldPack<E>::unpack(*reinterpret_cast<const uint4*>(nw + k), w);
#pragma unroll
                    for (u32 j = 0; j < EL; ++j) v[j] = v[j] * inv * w[j];
                }
            }
#pragma unroll
            for (u32 j = 0; j < EL; ++j) E::st(xs, (u64)m * K + k + j, v[j]);
        }
    }
    __syncthreads();
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 n = row_of(grp);
        float acc[OLD_GEMV_MAX_M][2];
#pragma unroll
        for (u32 m = 0; m < OLD_GEMV_MAX_M; ++m) acc[m][0] = acc[m][1] = 0.f;
        if (n < N) {
            for (u32 s0 = s_begin; s0 < s_end; s0 += OLD_GEMV_PF) {
                uint4 ca[OLD_GEMV_PF], cb[OLD_GEMV_PF];
#pragma unroll
                for (u32 s = 0; s < OLD_GEMV_PF; ++s) {
                    ca[s] = pa[s];
                    cb[s] = pb[s];
                }
                // Prefetch what comes next: the rest of this slice, or the next group's.
                if (s0 + OLD_GEMV_PF < s_end) {
                    fetch(n, s0 + OLD_GEMV_PF);
                } else if (grp + gridDim.x < groups && row_of(grp + gridDim.x) < N) {
                    fetch(row_of(grp + gridDim.x), s_begin);
                }
#pragma unroll
                for (u32 s = 0; s < OLD_GEMV_PF; ++s) {
                    const u32 k = ((s0 + s) * 32 + lane) * EL;
                    if (s0 + s < s_end && k < K) {
                        float a[EL], b[EL];
                        OldPack<E>::unpack(ca[s], a);
                        OldPack<E>::unpack(cb[s], b);
#pragma unroll
                        for (u32 m = 0; m < OLD_GEMV_MAX_M; ++m) {
                            if (m < M) {
                                float xv[EL];
                                OldPack<E>::unpack(*reinterpret_cast<const uint4*>(xs + (u64)m * K + k), xv);
#pragma unroll
                                for (u32 j = 0; j < EL; ++j) {
                                    acc[m][0] += a[j] * xv[j];
                                    acc[m][1] += b[j] * xv[j];
                                }
                            }
                        }
                    }
                }
            }
        }
#pragma unroll
        for (u32 m = 0; m < OLD_GEMV_MAX_M; ++m)
#pragma unroll
            for (u32 r = 0; r < 2; ++r) {
                const float v = warp_sum(acc[m][r]);
                if (lane == 0) parts[warp][m][r] = v;
            }
        __syncthreads();
        if (slice == 0 && lane == 0 && n < N) {
            for (u32 m = 0; m < M; ++m)
                for (u32 r = 0; r < 2; ++r) {
                    if (n + r >= N) continue;
                    float v = 0.f;
                    for (u32 i = 0; i < ks; ++i) v += parts[warp + i][m][r];
                    const u64 o = (u64)m * N + n + r;
                    E::st(y, o, v);
                    if (residual) E::st(y, o, E::ld(y, o) + E::ld(residual, o));
                    if (amax) {
                        const unsigned long long pk =
                            ((unsigned long long)key_of(E::ld(y, o)) << 32) | (0xffffffffu - (n + r));
                        if (pk > best[m]) best[m] = pk;
                    }
                }
        }
        __syncthreads();
    }
    if (amax) {
        __shared__ unsigned long long bb[OLD_GEMV_WARPS][OLD_GEMV_MAX_M];
        if (lane == 0)
            for (u32 m = 0; m < OLD_GEMV_MAX_M; ++m) bb[warp][m] = best[m];
        __syncthreads();
        if (tid == 0)
            for (u32 m = 0; m < M; ++m) {
                unsigned long long mx = 0;
                for (u32 w = 0; w < OLD_GEMV_WARPS; ++w) mx = bb[w][m] > mx ? bb[w][m] : mx;
                if (mx) atomicMax(amax + m, mx);
            }
    }
}

extern "C" __global__ void __launch_bounds__(OLD_GEMV_THREADS) gemv_old_bf16(
    const u16* x, const u16* W, u32 M, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y,
    u32 ks, unsigned long long* amax) {
    gemv_old<BF16>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
}
extern "C" __global__ void __launch_bounds__(OLD_GEMV_THREADS) gemv_old_f16(
    const u16* x, const u16* W, u32 M, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y,
    u32 ks, unsigned long long* amax) {
    gemv_old<F16>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
}
extern "C" __global__ void __launch_bounds__(OLD_GEMV_THREADS) gemv_old_f32(
    const float* x, const float* W, u32 M, u32 N, u32 K, u32 mode, const float* nw, float eps, const float* residual,
    float* y, u32 ks, unsigned long long* amax) {
    gemv_old<F32>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
}
