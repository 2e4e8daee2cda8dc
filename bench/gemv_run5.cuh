// The decode GEMV as capture-candle shipped it after run 5 (decode.cu at commit c32214c:
// register-lean, one row a warp, 16-byte staging loads), renamed, for bench/gemv_probe.cu's
// "(p)" column: the baseline that the GLU epilogue and the one-round RMSNorm staging are
// measured against. Included after decode.cu (it shares Pack and the GEMV_* limits).
template <typename E, u32 DIAG = 0>
__device__ void gemv_run5(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K, u32 mode,
                     const typename E::T* nw, float eps, const typename E::T* residual, typename E::T* y, u32 ks,
                     unsigned long long* amax) {
    typedef typename E::T T;
    constexpr u32 EL = Pack<E>::EL;
    extern __shared__ float gsm[];
    T* xs = reinterpret_cast<T*>(gsm);  // [M][K]
    __shared__ float red[GEMV_MAX_WARPS];
    __shared__ float parts[GEMV_MAX_WARPS][GEMV_MAX_M];
    __shared__ unsigned long long bmax[GEMV_MAX_M];
    const u32 nt = blockDim.x, nwarps = nt / 32;
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const u32 steps = (K + 32 * EL - 1) / (32 * EL);  // 16-byte loads a lane for a whole row
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
        const T* row = W + (u64)n * K;
#pragma unroll
        for (u32 s = 0; s < GEMV_L; ++s) {
            const u32 k = ((s0 + s) * 32 + lane) * EL;
            if (s0 + s < s_end && k < K) w[s] = __ldg(reinterpret_cast<const uint4*>(row + k));
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
    // Staging f(x), 16 bytes a thread a round.
    for (u32 m = 0; m < M && !(DIAG & 1); ++m) {
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
            float v[EL];
            if (mode == 2) {
                float u[EL];
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * 2 * K + k), v);
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * 2 * K + K + k), u);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) v[j] = v[j] / (1.f + __expf(-v[j])) * u[j];
            } else {
                Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * K + k), v);
                if (mode == 1) {
                    float g[EL];
                    Pack<E>::unpack(*reinterpret_cast<const uint4*>(nw + k), g);
#pragma unroll
                    for (u32 j = 0; j < EL; ++j) v[j] = v[j] * inv * g[j];
                }
            }
            uint4 o;
            T* oh = reinterpret_cast<T*>(&o);
#pragma unroll
            for (u32 j = 0; j < EL; ++j) E::st(oh, j, v[j]);
            *reinterpret_cast<uint4*>(xs + (u64)m * K + k) = o;
        }
    }
    __syncthreads();
    unsigned long long best = 0;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 n = grp * rows_blk + row_in;
        const float res = res_next;
        load_res(grp + gridDim.x);  // the next row's, in flight during this one
        float acc[GEMV_MAX_M] = {0.f, 0.f};
        u32 bits = 0;
        if (n < N) {
            for (u32 s0 = s_begin; s0 < s_end; s0 += GEMV_L) {
                if (!loaded) load(n, s0);
                loaded = false;
#pragma unroll
                for (u32 s = 0; s < GEMV_L; ++s) {
                    const u32 k = ((s0 + s) * 32 + lane) * EL;
                    if (s0 + s < s_end && k < K) {
                        if (DIAG & 2) {
                            bits ^= w[s].x ^ w[s].y ^ w[s].z ^ w[s].w;
                            continue;
                        }
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
                                    Pack<E>::unpack(*reinterpret_cast<const uint4*>(xs + (u64)m * K + k), xv);
                                }
#pragma unroll
                                for (u32 j = 0; j < EL; ++j) acc[m] += a[j] * xv[j];
                            }
                        }
                    }
                }
            }
        }
        if (DIAG & 2) acc[0] = __uint_as_float(bits & 0x3fffffffu);
        // The sums: every lane of the warp gets each row of x's total.
        float mine = 0.f;
#pragma unroll
        for (u32 m = 0; m < GEMV_MAX_M; ++m)
            if (m < M) {
                const float v = warp_sum(acc[m]);
                if (direct) {
                    if (e_m == m) mine = v;
                } else if (lane == 0) {
                    parts[warp][m] = v;
                }
            }
        if (!direct) {
            __syncthreads();
            if (e_on) {
                float v = 0.f;
                for (u32 i = 0; i < ks; ++i) v += parts[e_row * ks + i][e_m];
                mine = v;
            }
        }
        const u32 no = grp * rows_blk + e_row;
        if (e_on && no < N) {
            const u64 o = (u64)e_m * N + no;
            T t;
            E::st(&t, 0, mine);
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


extern "C" __global__ void __launch_bounds__(GEMV_MAX_THREADS, GEMV_MIN_BLOCKS) gemv_run5_bf16(
    const u16* x, const u16* W, u32 M, u32 N, u32 K, u32 mode, const u16* nw, float eps, const u16* residual, u16* y,
    u32 ks, unsigned long long* amax) {
    gemv_run5<BF16>(x, W, M, N, K, mode, nw, eps, residual, y, ks, amax);
}
