// control.cu — kernels that steer a graph's conditional nodes (IF, WHILE) from device
// data. Compiled to PTX (control.ptx, committed next to this file) like chain.cu.
//
// Regenerate control.ptx (needs nvcc 12.4 or later):
//     nvcc -ptx -O3 -arch=compute_80 -o control.ptx control.cu
//
// Every kernel is meant for a launch of one thread: it reads a little device memory and
// sets the condition with cudaGraphSetConditional, which is defined only while a graph
// holding the handle's conditional node runs.

#include <cuda_runtime.h>

// WHILE a step counter is below k: *step += 1, then condition = (*step < k).
// Used at the end of a loop body, it makes the body run k times (loop_start sets the
// condition to 1 before the loop, so the body runs once before the first test).
extern "C" __global__ void cond_step_below(unsigned int* step, unsigned int k,
                                           cudaGraphConditionalHandle handle) {
    unsigned int s = *step + 1;
    *step = s;
    cudaGraphSetConditional(handle, s < k ? 1u : 0u);
}

// WHILE the last token is not the stop token and fewer than k steps ran:
// *step += 1; at the stop token *stopped = 1; condition = (*token != stop && *step < k).
extern "C" __global__ void cond_until_token(const unsigned int* token,
                                            unsigned int stop, unsigned int* stopped,
                                            unsigned int* step, unsigned int k,
                                            cudaGraphConditionalHandle handle) {
    unsigned int s = *step + 1;
    *step = s;
    bool at_stop = *token == stop;
    if (at_stop) *stopped = 1;
    cudaGraphSetConditional(handle, (!at_stop && s < k) ? 1u : 0u);
}

// condition = (*flag != 0): for an IF, or a WHILE steered by the user's own kernels.
extern "C" __global__ void cond_from_flag(const unsigned int* flag,
                                          cudaGraphConditionalHandle handle) {
    cudaGraphSetConditional(handle, *flag != 0 ? 1u : 0u);
}

// *x = 0: resets a counter inside a graph (before a loop).
extern "C" __global__ void zero_u32(unsigned int* x) { *x = 0; }

// The start of a loop, just before its WHILE node: *step = 0 and condition = 1, so the
// body runs at least once in every run of the enclosing graph or body (a handle's default
// is assigned once per launch of the whole graph; a loop nested in another's body needs it
// set again each time it is reached).
extern "C" __global__ void loop_start(unsigned int* step,
                                      cudaGraphConditionalHandle handle) {
    *step = 0;
    cudaGraphSetConditional(handle, 1u);
}

// As loop_start, and the loop's stop flag is lowered: *stopped = 0.
extern "C" __global__ void loop_start_flag(unsigned int* step, unsigned int* stopped,
                                           cudaGraphConditionalHandle handle) {
    *step = 0;
    *stopped = 0;
    cudaGraphSetConditional(handle, 1u);
}

// *x += v: advances a counter inside a graph (after a loop's unrolled remainder).
extern "C" __global__ void add_u32(unsigned int* x, unsigned int v) { *x += v; }

// Several steps per loop iteration: *step += per_iter, then
// condition = (*step + per_iter <= limit): another whole iteration fits under the bound.
extern "C" __global__ void cond_steps(unsigned int* step, unsigned int per_iter,
                                      unsigned int limit,
                                      cudaGraphConditionalHandle handle) {
    unsigned int s = *step + per_iter;
    *step = s;
    cudaGraphSetConditional(handle, s + per_iter <= limit ? 1u : 0u);
}

// As cond_steps, and the loop also ends once *stopped is not 0 (a stop raised by a kernel
// of the body: the library's stop_on_token, or the user's own).
extern "C" __global__ void cond_steps_until(const unsigned int* stopped,
                                            unsigned int* step, unsigned int per_iter,
                                            unsigned int limit,
                                            cudaGraphConditionalHandle handle) {
    unsigned int s = *step + per_iter;
    *step = s;
    cudaGraphSetConditional(handle, (*stopped == 0 && s + per_iter <= limit) ? 1u : 0u);
}

// Raises a sticky stop flag once the token is the stop id: *stopped = 1 if *token == stop.
extern "C" __global__ void stop_on_token(const unsigned int* token, unsigned int stop,
                                         unsigned int* stopped) {
    if (*token == stop) *stopped = 1;
}

// condition = (*flag == 0): an IF that runs while nothing has raised the flag.
extern "C" __global__ void cond_from_zero_flag(const unsigned int* flag,
                                               cudaGraphConditionalHandle handle) {
    cudaGraphSetConditional(handle, *flag == 0 ? 1u : 0u);
}
