// Probe for issue #32: the GEMV entry points compiled for one mode (gemv_m0, gemv_m1,
// gemv_glu_m1, which gpu.rs launches for modes 0 and 1) against the kernels that read the mode
// (gemv, gemv_glu), bit for bit, in f32, f16 and bf16. The one-mode kernels are the same
// template with the mode fixed, so the sums and their order should be the same; run 163
// compared bf16 only (stream_gemv_probe's chain).
//
// Shapes: Llama-3.2-1B's four products (QKV with the norm, O and down with a residual, gate/up
// with the norm and SwiGLU) and Llama-3.1-8B's QKV and gate/up, at 1 and 2 rows of x, each
// launched as gpu.rs `gemv_launch` launches it for that element size.
//
// Build and run (the GPU machine), once for each PTX file's variant:
//   nvcc -O3 -std=c++17 -arch=sm_90 -o gemv_mode_bits bench/gemv_mode_bits_probe.cu
//   nvcc -O3 -std=c++17 -arch=sm_90 -DDECODE_PDL -o gemv_mode_bits_pdl bench/gemv_mode_bits_probe.cu
#include "../capture-candle/kernels/decode.cu"
#include "probe_host.cuh"

template <typename E>
__global__ void fill_e(typename E::T* p, u64 n, u64 seed, float lo, float hi) {
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (u64)gridDim.x * blockDim.x) {
        const u64 h = mix64(seed ^ mix64(i + 0x9e3779b97f4a7c15ull));
        E::st(p, i, lo + (hi - lo) * (float)(h >> 40) * (1.f / 16777216.f));
    }
}

// gpu.rs gemv_launch: threads, ks, grid.
static void launch_of(u32 n, u32 k, u32 elem, bool glu, u32& threads, u32& ks, u32& grid) {
    threads = k >= 4096 ? 512 : 256;
    const u32 row = glu ? 2 * k : k, steps = (row + 32 * (16 / elem) - 1) / (32 * (16 / elem));
    ks = 1;
    while (ks < 8 && n * ks < 3072 && steps / (ks * 2) >= 4) ks *= 2;
    const u32 rows = threads / 32 / ks;
    grid = std::max(1u, std::min((n + rows - 1) / rows, 132u * (1024 / threads)));
}

struct Shape { const char* name; u32 n, k, mode; bool glu, res; };

template <typename E> struct Fn {
    typedef typename E::T T;
    typedef void (*G)(const T*, const T*, u32, u32, u32, u32, const T*, float, const T*, T*, u32, unsigned long long*);
    typedef void (*Glu)(const T*, const T*, u32, u32, u32, u32, const T*, float, T*, u32);
};

template <typename E>
static u64 run_dtype(const char* dname, typename Fn<E>::G plain, typename Fn<E>::G m0, typename Fn<E>::G m1,
                     typename Fn<E>::Glu glu, typename Fn<E>::Glu glu_m1) {
    typedef typename E::T T;
    const Shape shapes[] = {
        {"1B QKV", 3072, 2048, 1, false, false},  {"1B O", 2048, 2048, 0, false, true},
        {"1B gate/up", 8192, 2048, 1, true, false}, {"1B down", 2048, 8192, 0, false, true},
        {"8B QKV", 6144, 4096, 1, false, false},  {"8B gate/up", 14336, 4096, 1, true, false},
        {"small", 72, 256, 1, false, true},
    };
    u64 differ = 0;
    for (const Shape& s : shapes) {
        const u32 rows_w = s.glu ? 2 * s.n : s.n;
        T *x, *w, *nw, *r, *y0, *y1;
        CK(cudaMalloc(&x, 2ull * s.k * sizeof(T)));
        CK(cudaMalloc(&w, (u64)rows_w * s.k * sizeof(T)));
        CK(cudaMalloc(&nw, (u64)s.k * sizeof(T)));
        CK(cudaMalloc(&r, 2ull * s.n * sizeof(T)));
        CK(cudaMalloc(&y0, 2ull * s.n * sizeof(T)));
        CK(cudaMalloc(&y1, 2ull * s.n * sizeof(T)));
        fill_e<E><<<512, 256>>>(x, 2ull * s.k, 11, -1.f, 1.f);
        fill_e<E><<<1024, 256>>>(w, (u64)rows_w * s.k, 12, -0.04f, 0.04f);
        fill_e<E><<<64, 256>>>(nw, s.k, 13, 0.5f, 1.5f);
        fill_e<E><<<64, 256>>>(r, 2ull * s.n, 14, -1.f, 1.f);
        CK(cudaDeviceSynchronize());
        u32 threads, ks, grid;
        launch_of(s.n, s.k, sizeof(T), s.glu, threads, ks, grid);
        for (u32 m = 1; m <= 2; ++m) {
            const u32 smem = m * s.k * sizeof(T);
            for (auto f : {plain, m0, m1})
                CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
            for (auto f : {glu, glu_m1})
                CK(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, 64 * 1024));
            CK(cudaMemset(y0, 0xff, 2ull * s.n * sizeof(T)));
            CK(cudaMemset(y1, 0xff, 2ull * s.n * sizeof(T)));
            const T* res = s.res ? r : nullptr;
            if (s.glu) {
                glu<<<grid, threads, smem>>>(x, w, m, s.n, s.k, s.mode, nw, 1e-5f, y0, ks);
                glu_m1<<<grid, threads, smem>>>(x, w, m, s.n, s.k, s.mode, nw, 1e-5f, y1, ks);
            } else {
                plain<<<grid, threads, smem>>>(x, w, m, s.n, s.k, s.mode, nw, 1e-5f, res, y0, ks, nullptr);
                (s.mode ? m1 : m0)<<<grid, threads, smem>>>(x, w, m, s.n, s.k, s.mode, nw, 1e-5f, res, y1, ks, nullptr);
            }
            CK(cudaGetLastError());
            CK(cudaDeviceSynchronize());
            std::vector<unsigned char> a((u64)m * s.n * sizeof(T)), b(a.size());
            CK(cudaMemcpy(a.data(), y0, a.size(), cudaMemcpyDeviceToHost));
            CK(cudaMemcpy(b.data(), y1, b.size(), cudaMemcpyDeviceToHost));
            u64 d = 0, unwritten = 0;
            for (u64 i = 0; i < (u64)m * s.n; ++i) {
                d += memcmp(&a[i * sizeof(T)], &b[i * sizeof(T)], sizeof(T)) != 0;
                bool ff = true;
                for (u32 j = 0; j < sizeof(T); ++j) ff &= a[i * sizeof(T) + j] == 0xff;
                unwritten += ff;
            }
            printf("%-5s %-11s rows %u (threads %u, ks %u, grid %u): %s the mode-reading kernel (%llu of %u outputs "
                   "differ, %llu unwritten)\n",
                   dname, s.name, m, threads, ks, grid, d ? "DIFFERS FROM" : "equals", (unsigned long long)d, m * s.n,
                   (unsigned long long)unwritten);
            differ += d + unwritten;
        }
        for (T* p : {x, w, nw, r, y0, y1}) CK(cudaFree(p));
    }
    return differ;
}

int main() {
    setvbuf(stdout, nullptr, _IOLBF, 0);
    probe_device();
#if defined(DECODE_PDL)
    printf("build: decode_pdl.ptx's variant (DECODE_PDL), launched without the PDL attribute\n");
#else
    printf("build: decode.ptx's variant\n");
#endif
    u64 d = 0;
    d += run_dtype<F32>("f32", gemv_f32, gemv_m0_f32, gemv_m1_f32, gemv_glu_f32, gemv_glu_m1_f32);
    d += run_dtype<F16>("f16", gemv_f16, gemv_m0_f16, gemv_m1_f16, gemv_glu_f16, gemv_glu_m1_f16);
    d += run_dtype<BF16>("bf16", gemv_bf16, gemv_m0_bf16, gemv_m1_bf16, gemv_glu_bf16, gemv_glu_m1_bf16);
    printf("%s\n", d ? "SOME OUTPUTS DIFFER" : "every output equal, bit for bit");
    return d ? 1 : 0;
}
