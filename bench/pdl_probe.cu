// Probe for issue #22: does programmatic dependent launch (PDL) shorten a captured chain of
// decode-like kernels on this GPU, and by how much? Measures a premise before building on it.
//
// Two chains, each captured into a CUDA graph and replayed (median of 7 rounds of 20):
//  - "projections": 16 layers x 4 weight-streaming kernels shaped like the Llama-3.2-1B decode
//    step's projections (N x K bf16 rows: 3072x2048, 2048x2048, 16384x2048, 2048x8192), each
//    reading the previous kernel's small output vector;
//  - "tiny": 256 dependent kernels of one block that do almost nothing.
// Each chain is captured twice: plain launches, and launches with the programmatic stream
// serialization attribute, where each kernel issues its weight loads, then waits for its
// predecessor (griddepcontrol.wait) before it reads the predecessor's output, and lets its own
// successor launch once its main loop is done (griddepcontrol.launch_dependents).
//
// Build and run on the GPU machine: nvcc -O3 -arch=sm_90 -o pdl_probe bench/pdl_probe.cu && ./pdl_probe
#include <cstdio>
#include <cstdlib>
#include <vector>
#include <algorithm>
#include <cuda_runtime.h>

#define CK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s:%d %s\n", __FILE__, __LINE__, cudaGetErrorString(e)); exit(1); } } while (0)

typedef unsigned short u16;

__device__ __forceinline__ float bf(u16 h) { return __uint_as_float(((unsigned)h) << 16); }

// y[n] = sum_k W[n, k] * x[k % xlen]; one warp per row, 16-byte loads.
template <bool PDL>
__global__ void __launch_bounds__(256) project(const u16* __restrict__ W, const float* __restrict__ x, int xlen,
                                               float* __restrict__ y, int N, int K) {
    const int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
    const int nwarps = gridDim.x * blockDim.x / 32;
    // First row's first loads, issued before the dependency wait (weights do not depend on it).
    uint4 pre[4];
    int n0 = warp;
    if (n0 < N)
        for (int s = 0; s < 4; ++s) {
            int k = (s * 32 + lane) * 8;
            if (k < K) pre[s] = __ldg(reinterpret_cast<const uint4*>(W + (size_t)n0 * K + k));
        }
    if (PDL) asm volatile("griddepcontrol.wait;" ::: "memory");
    for (int n = n0; n < N; n += nwarps) {
        float acc = 0.f;
        for (int k0 = 0; k0 < K; k0 += 256) {
            int k = k0 + lane * 8;
            if (k >= K) continue;
            uint4 v = (n == n0 && k0 < 4 * 256) ? pre[k0 / 256] : __ldg(reinterpret_cast<const uint4*>(W + (size_t)n * K + k));
            const u16* h = reinterpret_cast<const u16*>(&v);
            for (int j = 0; j < 8; ++j) acc += bf(h[j]) * x[(k + j) % xlen];
        }
        for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
        if (lane == 0) y[n] = acc;
    }
    // Only now let the successor launch: it prefetches its weights while this grid drains.
    // (Triggering at the start launches every kernel of the chain at once: measured 2.4x slower.)
    if (PDL) asm volatile("griddepcontrol.launch_dependents;");
}

template <bool PDL>
__global__ void tiny(const float* x, float* y) {
    if (PDL) {
        asm volatile("griddepcontrol.launch_dependents;");
        asm volatile("griddepcontrol.wait;" ::: "memory");
    }
    if (threadIdx.x == 0) y[0] = x[0] + 1.f;
}

template <typename F, typename... A>
void launch(bool pdl, cudaStream_t s, F f, dim3 g, dim3 b, A... args) {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = g;
    cfg.blockDim = b;
    cfg.stream = s;
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = pdl ? attr : nullptr;
    cfg.numAttrs = pdl ? 1 : 0;
    CK(cudaLaunchKernelEx(&cfg, f, args...));
}

double time_graph(cudaGraphExec_t ex, cudaStream_t s) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
    for (int i = 0; i < 5; ++i) CK(cudaGraphLaunch(ex, s));
    std::vector<double> t;
    for (int r = 0; r < 7; ++r) {
        CK(cudaEventRecord(a, s));
        for (int i = 0; i < 20; ++i) CK(cudaGraphLaunch(ex, s));
        CK(cudaEventRecord(b, s));
        CK(cudaEventSynchronize(b));
        float ms; CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms / 20);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main() {
    cudaStream_t s; CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    const int shapes[4][2] = {{3072, 2048}, {2048, 2048}, {16384, 2048}, {2048, 8192}};
    const int layers = 16;
    size_t total = 0;
    for (auto& sh : shapes) total += (size_t)sh[0] * sh[1];
    // Every layer its own weights (no cache reuse across layers).
    u16* W; CK(cudaMalloc(&W, total * layers * 2));
    CK(cudaMemset(W, 0x3c, total * layers * 2));
    float *bufA, *bufB; CK(cudaMalloc(&bufA, 16384 * 4)); CK(cudaMalloc(&bufB, 16384 * 4));
    CK(cudaMemset(bufA, 0, 16384 * 4)); CK(cudaMemset(bufB, 0, 16384 * 4));
    int sms; CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
    printf("device SMs %d; weights %.3f GB\n", sms, total * layers * 2 / 1e9);
    double res[2][2];
    for (int pdl = 0; pdl < 2; ++pdl) {
        cudaGraph_t g; cudaGraphExec_t ex;
        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        size_t off = 0;
        float *in = bufA, *out = bufB;
        int xlen = 2048;
        for (int l = 0; l < layers; ++l)
            for (auto& sh : shapes) {
                int N = sh[0], K = sh[1];
                int blocks = std::min((N + 7) / 8, 2 * sms);
                if (pdl) launch(true, s, project<true>, dim3(blocks), dim3(256), (const u16*)(W + off), (const float*)in, xlen, out, N, K);
                else launch(false, s, project<false>, dim3(blocks), dim3(256), (const u16*)(W + off), (const float*)in, xlen, out, N, K);
                off += (size_t)N * K;
                std::swap(in, out);
                xlen = N;
            }
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ex, g, 0));
        res[0][pdl] = time_graph(ex, s);
        CK(cudaGraphExecDestroy(ex)); CK(cudaGraphDestroy(g));

        CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
        for (int i = 0; i < 256; ++i) {
            if (pdl) launch(true, s, tiny<true>, dim3(1), dim3(32), (const float*)(i % 2 ? bufB : bufA), i % 2 ? bufA : bufB);
            else launch(false, s, tiny<false>, dim3(1), dim3(32), (const float*)(i % 2 ? bufB : bufA), i % 2 ? bufA : bufB);
        }
        CK(cudaStreamEndCapture(s, &g));
        CK(cudaGraphInstantiate(&ex, g, 0));
        res[1][pdl] = time_graph(ex, s);
        CK(cudaGraphExecDestroy(ex)); CK(cudaGraphDestroy(g));
    }
    CK(cudaDeviceSynchronize());
    printf("| chain | plain (ms) | PDL (ms) | plain / PDL | saved per kernel boundary |\n|---|---|---|---|---|\n");
    printf("| 64 projections (16 layers x 4) | %.4f | %.4f | %.3f | %.2f us |\n", res[0][0], res[0][1], res[0][0] / res[0][1], (res[0][0] - res[0][1]) * 1e3 / 63);
    printf("| 256 tiny kernels | %.4f | %.4f | %.3f | %.2f us |\n", res[1][0], res[1][1], res[1][0] / res[1][1], (res[1][0] - res[1][1]) * 1e3 / 255);
    printf("projections: %.1f GB/s plain, %.1f GB/s with PDL\n", total * layers * 2 / (res[0][0] * 1e-3) / 1e9, total * layers * 2 / (res[0][1] * 1e-3) / 1e9);
    return 0;
}
