// chain.cu — small CUDA kernels used by capture-core's tests, examples and
// benchmarks. They are compiled to PTX (chain.ptx, committed next to this
// file and embedded with include_str!) so that no CUDA toolkit is needed to
// build the crate; the driver JIT-compiles the PTX at module load time.
//
// Regenerate chain.ptx (needs nvcc):
//     nvcc -ptx -O3 -arch=compute_80 -o chain.ptx chain.cu
// or run gen_ptx.sh in this folder, which also runs selfcheck.cu.
//
// Conventions:
//   * every kernel is extern "C" (unmangled entry names) and template-free;
//   * element counts are `unsigned int n`;
//   * every kernel uses a grid-stride loop, so any grid size is correct
//     (a 1-block launch still covers all n elements).

#define GRID_STRIDE_LOOP(i, n)                                           \
    for (unsigned int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); \
         i += blockDim.x * gridDim.x)

// out[i] = a[i] + b[i]
extern "C" __global__ void add_f32(const float* a, const float* b, float* out,
                                   unsigned int n) {
    GRID_STRIDE_LOOP(i, n) { out[i] = a[i] + b[i]; }
}

// out[i] = alpha * x[i]
extern "C" __global__ void scale_f32(const float* x, float* out, float alpha,
                                     unsigned int n) {
    GRID_STRIDE_LOOP(i, n) { out[i] = alpha * x[i]; }
}

// y[i] += alpha * x[i]
extern "C" __global__ void axpy_f32(float* y, const float* x, float alpha,
                                    unsigned int n) {
    GRID_STRIDE_LOOP(i, n) { y[i] += alpha * x[i]; }
}

// out[i] = value
extern "C" __global__ void fill_f32(float* out, float value, unsigned int n) {
    GRID_STRIDE_LOOP(i, n) { out[i] = value; }
}

// x[i] += 1.0f — a tiny kernel for building chains of N dependent kernels.
extern "C" __global__ void incr_f32(float* x, unsigned int n) {
    GRID_STRIDE_LOOP(i, n) { x[i] += 1.0f; }
}

// x[i] += (float)(*pos) — reads a device-resident scalar by address, so a
// captured graph can pick up a new value on each replay (the host updates
// *pos between replays instead of re-capturing with a new kernel argument).
extern "C" __global__ void add_scalar_from_ptr_f32(float* x,
                                                   const unsigned int* pos,
                                                   unsigned int n) {
    const float v = (float)(*pos);
    GRID_STRIDE_LOOP(i, n) { x[i] += v; }
}

// Empty kernel, for launch-overhead benchmarks.
extern "C" __global__ void noop() {}
