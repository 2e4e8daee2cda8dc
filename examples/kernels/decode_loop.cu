// decode_loop.cu — the kernels of examples/08_device_loop that end its decode step: they
// commit the step's result only while the loop is live, and write the token, raising the
// stop flag at the stop id. Compiled to PTX (decode_loop.ptx, committed next to this file):
//     nvcc -ptx -O3 -arch=compute_80 -o decode_loop.ptx decode_loop.cu
//
// With several steps per loop iteration, the steps after the stop token in that iteration
// still run; these kernels make them change nothing, so every way of running the loop ends
// in the same state.

// dst[i] = a[i] + b[i], unless the loop has stopped.
extern "C" __global__ void commit_add_f32(float* dst, const float* a, const float* b,
                                          unsigned int n, const unsigned int* stopped) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (*stopped == 0 && i < n) dst[i] = a[i] + b[i];
}

// x[i] += 1, unless the loop has stopped.
extern "C" __global__ void advance_f32(float* x, unsigned int n,
                                       const unsigned int* stopped) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (*stopped == 0 && i < n) x[i] += 1.0f;
}

// One thread: unless stopped, the next token (*token + 1); at the stop id, raise *stopped.
extern "C" __global__ void emit_token(unsigned int* token, unsigned int stop,
                                      unsigned int* stopped) {
    if (*stopped != 0) return;
    unsigned int t = *token + 1;
    *token = t;
    if (t == stop) *stopped = 1;
}
