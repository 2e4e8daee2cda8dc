// Candidate decode GEMV for capture-candle (issue #22): the same computation as `gemv` in
// capture-candle/kernels/decode.cu (same modes, rounding, residual and argmax semantics), with
// a leaner register budget, a tunable shape, and the dependent loads moved off the critical
// path:
//  - the input row x (and the norm weight, or the gate/up halves) is loaded into registers
//    first, then the first weight loads go out, then f(x) is staged from the registers (the
//    input's small loads no longer wait behind the weight stream);
//  - the residual of each output is loaded at the start of its group, not after the sum;
//  - with ks = 1, each warp finishes its own rows (warp shuffles, no block barrier a group).
//
// Included after decode.cu (it uses its F32/F16/BF16, Pack, warp_sum and key_of).
//
// Template parameters:
//   NT: threads a block; R: rows of W a warp takes at a time; L: 16-byte loads a lane issues
//   per row before it consumes them (R*L in flight a lane; other warps hide the latency);
//   MM: the most rows of x (M <= MM); XR: 16-byte chunks of x's first row a thread holds in
//   registers (K <= NT*EL*XR takes the register path; otherwise, for rows after the first,
//   and always with XR = 0, the staging loads come after the first weight loads).
// Runtime: ks warps share each row tile, each streaming one slice of K (steps of 32*EL
// elements, ceil(steps/ks) a slice, as in `gemv`), summed in a fixed order. The grid strides
// over groups of NT/32/ks row tiles.
//
// With 256 threads, R = 2 and `gemv`'s ks, the summation order is `gemv`'s: bit-equal outputs.
template <typename E, u32 NT, u32 R, u32 L, u32 MM, u32 XR>
__device__ __forceinline__ void gemv_next(const typename E::T* x, const typename E::T* W, u32 M, u32 N, u32 K,
                                          u32 mode, const typename E::T* nw, float eps,
                                          const typename E::T* residual, typename E::T* y, u32 ks,
                                          unsigned long long* amax) {
    typedef typename E::T T;
    constexpr u32 EL = Pack<E>::EL;
    constexpr u32 NW = NT / 32;
    extern __shared__ float gsm[];
    T* xs = reinterpret_cast<T*>(gsm);  // [M][K]
    __shared__ float red[NW];
    __shared__ float parts[NW][MM][R];
    __shared__ unsigned long long bmax[MM];
    const u32 tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
    const u32 steps = (K + 32 * EL - 1) / (32 * EL);
    const u32 tiles_blk = NW / ks, slice = warp % ks, tile_in = warp / ks;
    const u32 slice_steps = (steps + ks - 1) / ks;
    const u32 s_begin = min(steps, slice * slice_steps), s_end = min(steps, s_begin + slice_steps);
    const u32 tiles = (N + R - 1) / R;
    const u32 groups = (tiles + tiles_blk - 1) / tiles_blk;
    // Who writes which output: with ks = 1, lane j < R*M of each warp takes its warp's
    // (m, r) = (j / R, j % R); otherwise thread j < tiles_blk*R*M of the block takes
    // (m, tile, r) after the slices meet in shared memory.
    const bool direct = ks == 1;
    u32 e_m, e_tile, e_r;
    bool e_on;
    if (direct) {
        e_on = lane < R * M;
        e_m = lane / R;
        e_r = lane % R;
        e_tile = tile_in;
    } else {
        e_on = tid < tiles_blk * R * M;
        e_m = tid / (tiles_blk * R);
        const u32 rem = tid % (tiles_blk * R);
        e_tile = rem / R;
        e_r = rem % R;
    }
    auto out_row = [&](u32 grp) { return (grp * tiles_blk + e_tile) * R + e_r; };
    float res_next = 0.f;
    auto load_res = [&](u32 grp) {
        if (residual && e_on && grp < groups) {
            const u32 n = out_row(grp);
            if (n < N) res_next = E::ld(residual, (u64)e_m * N + n);
        }
    };
    if (amax && tid < MM) bmax[tid] = 0;

    // 1. The first row of x (and nw, or the up half) into registers.
    constexpr u32 XA = XR ? XR : 1;
    const bool xreg = XR > 0 && K <= NT * EL * XR;
    uint4 xr[XA], ur[XA];
#pragma unroll
    for (u32 i = 0; i < XR; ++i) {
        const u32 k = (i * NT + tid) * EL;
        if (xreg && k < K) {
            if (mode == 2) {
                xr[i] = *reinterpret_cast<const uint4*>(x + k);
                ur[i] = *reinterpret_cast<const uint4*>(x + K + k);
            } else {
                xr[i] = *reinterpret_cast<const uint4*>(x + k);
                if (mode == 1) ur[i] = *reinterpret_cast<const uint4*>(nw + k);
            }
        }
    }
    // 2. The first group's residuals and weights.
    load_res(blockIdx.x);
    uint4 w[R][L];
    auto load = [&](u32 n0, u32 s0) {
#pragma unroll
        for (u32 r = 0; r < R; ++r) {
            const T* row = W + (u64)min(n0 + r, N - 1) * K;
#pragma unroll
            for (u32 s = 0; s < L; ++s) {
                const u32 k = ((s0 + s) * 32 + lane) * EL;
                if (s0 + s < s_end && k < K) w[r][s] = __ldg(reinterpret_cast<const uint4*>(row + k));
            }
        }
    };
    bool loaded = false;
    if (blockIdx.x < groups) {
        const u32 n0 = (blockIdx.x * tiles_blk + tile_in) * R;
        if (n0 < N && s_begin < s_end) {
            load(n0, s_begin);
            loaded = true;
        }
    }
    // 3. Staging f(x) into shared memory, rounded to T, in `gemv`'s order of operations.
    for (u32 m = 0; m < M; ++m) {
        const bool fromreg = xreg && m == 0;
        float inv = 1.f;
        if (mode == 1) {
            float ss = 0.f;
            if (fromreg) {
#pragma unroll
                for (u32 i = 0; i < XR; ++i) {
                    const u32 k = (i * NT + tid) * EL;
                    if (k < K) {
                        float v[EL];
                        Pack<E>::unpack(xr[i], v);
#pragma unroll
                        for (u32 j = 0; j < EL; ++j) ss += v[j] * v[j];
                    }
                }
            } else {
#pragma unroll 1
                for (u32 k = tid * EL; k < K; k += NT * EL) {
                    float v[EL];
                    Pack<E>::unpack(*reinterpret_cast<const uint4*>(x + (u64)m * K + k), v);
#pragma unroll
                    for (u32 j = 0; j < EL; ++j) ss += v[j] * v[j];
                }
            }
            ss = warp_sum(ss);
            if (lane == 0) red[warp] = ss;
            __syncthreads();
            float tot = 0.f;
#pragma unroll
            for (u32 i = 0; i < NW; ++i) tot += red[i];
            inv = rsqrtf(tot / K + eps);
            __syncthreads();
        }
        auto stage = [&](u32 k, const uint4& xa, const uint4& xb) {
            float v[EL];
            Pack<E>::unpack(xa, v);
            if (mode == 2) {
                float u[EL];
                Pack<E>::unpack(xb, u);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) v[j] = v[j] / (1.f + __expf(-v[j])) * u[j];
            } else if (mode == 1) {
                float nv[EL];
                Pack<E>::unpack(xb, nv);
#pragma unroll
                for (u32 j = 0; j < EL; ++j) v[j] = v[j] * inv * nv[j];
            }
            uint4 o;
            T* oh = reinterpret_cast<T*>(&o);
#pragma unroll
            for (u32 j = 0; j < EL; ++j) E::st(oh, j, v[j]);
            *reinterpret_cast<uint4*>(xs + (u64)m * K + k) = o;
        };
        if (fromreg) {
#pragma unroll
            for (u32 i = 0; i < XR; ++i) {
                const u32 k = (i * NT + tid) * EL;
                if (k < K) stage(k, xr[i], ur[i]);
            }
        } else {
#pragma unroll 1
            for (u32 k = tid * EL; k < K; k += NT * EL) {
                const uint4 xa = *reinterpret_cast<const uint4*>(x + (u64)m * (mode == 2 ? 2 * K : K) + k);
                uint4 xb = xa;
                if (mode == 2) xb = *reinterpret_cast<const uint4*>(x + (u64)m * 2 * K + K + k);
                else if (mode == 1) xb = *reinterpret_cast<const uint4*>(nw + k);
                stage(k, xa, xb);
            }
        }
    }
    __syncthreads();
    // 4. The products.
    unsigned long long best = 0;
    for (u32 grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        const u32 n0 = (grp * tiles_blk + tile_in) * R;
        const float res = res_next;
        load_res(grp + gridDim.x);  // the next group's, in flight during this one
        float acc[MM][R];
#pragma unroll
        for (u32 m = 0; m < MM; ++m)
#pragma unroll
            for (u32 r = 0; r < R; ++r) acc[m][r] = 0.f;
        if (n0 < N) {
            for (u32 s0 = s_begin; s0 < s_end; s0 += L) {
                if (!loaded) load(n0, s0);
                loaded = false;
#pragma unroll
                for (u32 s = 0; s < L; ++s) {
                    const u32 k = ((s0 + s) * 32 + lane) * EL;
                    if (s0 + s < s_end && k < K) {
#pragma unroll
                        for (u32 m = 0; m < MM; ++m) {
                            if (m < M) {
                                float xv[EL];
                                Pack<E>::unpack(*reinterpret_cast<const uint4*>(xs + (u64)m * K + k), xv);
#pragma unroll
                                for (u32 r = 0; r < R; ++r) {
                                    float a[EL];
                                    Pack<E>::unpack(w[r][s], a);
#pragma unroll
                                    for (u32 j = 0; j < EL; ++j) acc[m][r] += a[j] * xv[j];
                                }
                            }
                        }
                    }
                }
            }
        }
        // Sums: every lane gets each (m, r) total; the slices meet in shared memory.
        float mine = 0.f;
#pragma unroll
        for (u32 m = 0; m < MM; ++m)
            if (m < M)
#pragma unroll
                for (u32 r = 0; r < R; ++r) {
                    const float v = warp_sum(acc[m][r]);
                    if (direct) {
                        if (e_m == m && e_r == r) mine = v;
                    } else if (lane == 0) {
                        parts[warp][m][r] = v;
                    }
                }
        if (!direct) {
            __syncthreads();
            if (e_on) {
                float v = 0.f;
                for (u32 i = 0; i < ks; ++i) v += parts[e_tile * ks + i][e_m][e_r];
                mine = v;
            }
        }
        const u32 n = out_row(grp);
        if (e_on && n < N) {
            const u64 o = (u64)e_m * N + n;
            // Rounded as `gemv` rounds: the product to T, then the sum with the residual.
            T t;
            E::st(&t, 0, mine);
            if (residual) E::st(&t, 0, E::ld(&t, 0) + res);
            y[o] = t;
            if (amax) {
                const unsigned long long pk = ((unsigned long long)key_of(E::ld(&t, 0)) << 32) | (0xffffffffu - n);
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
