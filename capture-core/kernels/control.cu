// control.cu — kernels that steer a graph's conditional nodes (IF, WHILE) from device
// data. Compiled to PTX (control.ptx, committed next to this file) like chain.cu.
//
// Regenerate control.ptx (needs nvcc 12.4 or later):
//     nvcc -ptx -O3 -arch=compute_90 -o control.ptx control.cu
//
// Every kernel is meant for a launch of one thread: it reads a little device memory and
// sets the condition with cudaGraphSetConditional, which is defined only while a graph
// holding the handle's conditional node runs.

#include <cuda_runtime.h>

// WHILE a step counter is below k: *step += 1, then condition = (*step < k).
// Used at the end of a loop body, it makes the body run k times (with the handle's
// default value 1, the body runs once before the first test).
extern "C" __global__ void cond_step_below(unsigned int* step, unsigned int k,
                                           cudaGraphConditionalHandle handle) {
    unsigned int s = *step + 1;
    *step = s;
    cudaGraphSetConditional(handle, s < k ? 1u : 0u);
}

// WHILE the last token is not the stop token and fewer than k steps ran:
// *step += 1, then condition = (*token != stop && *step < k).
extern "C" __global__ void cond_until_token(const unsigned int* token,
                                            unsigned int stop, unsigned int* step,
                                            unsigned int k,
                                            cudaGraphConditionalHandle handle) {
    unsigned int s = *step + 1;
    *step = s;
    cudaGraphSetConditional(handle, (*token != stop && s < k) ? 1u : 0u);
}

// condition = (*flag != 0): for an IF, or a WHILE steered by the user's own kernels.
extern "C" __global__ void cond_from_flag(const unsigned int* flag,
                                          cudaGraphConditionalHandle handle) {
    cudaGraphSetConditional(handle, *flag != 0 ? 1u : 0u);
}

// *x = 0: resets a counter inside a graph (before a loop).
extern "C" __global__ void zero_u32(unsigned int* x) { *x = 0; }
