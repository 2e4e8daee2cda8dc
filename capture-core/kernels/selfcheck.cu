// selfcheck.cu — dev tool: checks that chain.ptx loads through the CUDA
// driver API, that every kernel entry exists, and that add_f32 computes
// correctly. Not part of the crate build.
//
// How to run (on a machine with a GPU and the CUDA toolkit), from this folder:
//     nvcc -ptx -O3 -arch=compute_80 -o chain.ptx chain.cu
//     nvcc -O2 -o selfcheck selfcheck.cu -lcuda
//     ./selfcheck chain.ptx
// (gen_ptx.sh does all of this.) Prints "OK" and exits 0 on success.

#include <cuda.h>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#define CK(call)                                                          \
    do {                                                                  \
        CUresult r_ = (call);                                             \
        if (r_ != CUDA_SUCCESS) {                                         \
            const char* s_ = nullptr;                                     \
            cuGetErrorString(r_, &s_);                                    \
            std::fprintf(stderr, "%s:%d: %s failed: %d (%s)\n", __FILE__, \
                         __LINE__, #call, (int)r_, s_ ? s_ : "?");        \
            std::exit(1);                                                 \
        }                                                                 \
    } while (0)

int main(int argc, char** argv) {
    const char* path = argc > 1 ? argv[1] : "chain.ptx";
    std::ifstream f(path, std::ios::binary);
    if (!f) {
        std::fprintf(stderr, "cannot open %s\n", path);
        return 1;
    }
    std::stringstream ss;
    ss << f.rdbuf();
    std::string ptx = ss.str();  // NUL-terminated via c_str()

    CK(cuInit(0));
    CUdevice dev;
    CK(cuDeviceGet(&dev, 0));
    char name[256];
    CK(cuDeviceGetName(name, sizeof name, dev));
    int major = 0, minor = 0, drv = 0;
    CK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev));
    CK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev));
    CK(cuDriverGetVersion(&drv));
    std::printf("device: %s (sm_%d%d), driver API version %d\n", name, major,
                minor, drv);

    // The primary context has the same API on every CUDA version
    // (cuCtxCreate's signature changed in CUDA 13).
    CUcontext ctx;
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    CUmodule mod;
    CK(cuModuleLoadData(&mod, ptx.c_str()));

    const char* names[] = {"add_f32",  "scale_f32", "axpy_f32",
                           "fill_f32", "incr_f32",  "add_scalar_from_ptr_f32",
                           "noop"};
    CUfunction add = nullptr;
    for (const char* n : names) {
        CUfunction fn;
        CK(cuModuleGetFunction(&fn, mod, n));
        std::printf("found entry %s\n", n);
        if (std::string(n) == "add_f32") add = fn;
    }

    const unsigned int n = 1000;
    std::vector<float> a(n), b(n), out(n, -1.0f);
    for (unsigned int i = 0; i < n; ++i) {
        a[i] = (float)i;
        b[i] = 0.5f * (float)i + 1.0f;
    }
    CUdeviceptr da, db, dout;
    CK(cuMemAlloc(&da, n * sizeof(float)));
    CK(cuMemAlloc(&db, n * sizeof(float)));
    CK(cuMemAlloc(&dout, n * sizeof(float)));
    CK(cuMemcpyHtoD(da, a.data(), n * sizeof(float)));
    CK(cuMemcpyHtoD(db, b.data(), n * sizeof(float)));
    CK(cuMemsetD32(dout, 0, n));

    unsigned int nn = n;
    void* args[] = {&da, &db, &dout, &nn};
    // 2 blocks of 256 threads < 1000 elements: exercises the grid-stride loop.
    CK(cuLaunchKernel(add, 2, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
    CK(cuCtxSynchronize());
    CK(cuMemcpyDtoH(out.data(), dout, n * sizeof(float)));

    int bad = 0;
    for (unsigned int i = 0; i < n; ++i) {
        float want = a[i] + b[i];
        if (out[i] != want) {
            if (bad < 5)
                std::fprintf(stderr, "mismatch at %u: got %f want %f\n", i,
                             out[i], want);
            ++bad;
        }
    }
    CK(cuMemFree(da));
    CK(cuMemFree(db));
    CK(cuMemFree(dout));
    CK(cuModuleUnload(mod));
    CK(cuDevicePrimaryCtxRelease(dev));
    if (bad) {
        std::printf("FAIL: %d mismatches\n", bad);
        return 1;
    }
    std::printf("OK\n");
    return 0;
}
