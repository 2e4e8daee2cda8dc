// Probe: what loading capture-candle's decode kernels costs a process (the first-load cost
// noticed on 2026-12-01: the first test process on a fresh GPU machine took 31-42 s).
//
// For each file given (PTX, cubin or fatbin), in this order:
//   load   cuModuleLoadDataEx on the file's bytes (PTX: the driver compiles it now, or takes
//          the compiled code from its cache, CUDA_CACHE_PATH);
//   funcs  every function of the module enumerated and its register count read, which loads
//          each one (under CUDA_MODULE_LOADING=LAZY a cubin's functions load on first use);
// wall-clock ms each, and the functions' count. Run it with an empty CUDA_CACHE_PATH, then
// again (the cache warm), then with CUDA_CACHE_DISABLE=1 to time the compile itself.
//
// `--jit-to PTX CUBIN` instead writes the code the driver's JIT makes of PTX for this GPU (its
// linker, default options) to CUBIN, to set beside what ptxas builds (`cuobjdump -sass`).
//
// Build and run (the GPU machine):
//   nvcc -O3 -std=c++17 -o module_load_probe bench/module_load_probe.cu -lcuda
//   ./module_load_probe capture-candle/kernels/decode.ptx capture-candle/kernels/decode_pdl.ptx
#include <cuda.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

static double now_ms() {
    using namespace std::chrono;
    return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

static bool ok(CUresult r, const char* what) {
    if (r == CUDA_SUCCESS) return true;
    const char* s = nullptr;
    cuGetErrorString(r, &s);
    std::fprintf(stderr, "%s: %s\n", what, s ? s : "?");
    return false;
}

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s FILE...\n", argv[0]);
        return 2;
    }
    const double t0 = now_ms();
    CUdevice dev;
    CUcontext ctx;
    if (!ok(cuInit(0), "cuInit") || !ok(cuDeviceGet(&dev, 0), "cuDeviceGet") ||
        !ok(cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain") || !ok(cuCtxSetCurrent(ctx), "cuCtxSetCurrent"))
        return 1;
    std::printf("context: %.1f ms\n", now_ms() - t0);
    if (std::string(argv[1]) == "--jit-to") {
        if (argc != 4) return 2;
        std::ifstream f(argv[2], std::ios::binary);
        std::stringstream ss;
        ss << f.rdbuf();
        std::string ptx = ss.str();
        CUlinkState st;
        void* cubin = nullptr;
        size_t size = 0;
        const double a = now_ms();
        if (!ok(cuLinkCreate(0, nullptr, nullptr, &st), "cuLinkCreate") ||
            !ok(cuLinkAddData(st, CU_JIT_INPUT_PTX, ptx.data(), ptx.size() + 1, argv[2], 0, nullptr, nullptr), "cuLinkAddData") ||
            !ok(cuLinkComplete(st, &cubin, &size), "cuLinkComplete"))
            return 1;
        std::ofstream o(argv[3], std::ios::binary);
        o.write(static_cast<const char*>(cubin), (std::streamsize)size);
        std::printf("%s: JIT %.1f ms, %zu bytes to %s\n", argv[2], now_ms() - a, size, argv[3]);
        cuLinkDestroy(st);
        return 0;
    }
    int rc = 0;
    for (int i = 1; i < argc; ++i) {
        std::ifstream f(argv[i], std::ios::binary);
        if (!f) {
            std::fprintf(stderr, "cannot read %s\n", argv[i]);
            return 1;
        }
        std::stringstream ss;
        ss << f.rdbuf();
        std::string bytes = ss.str();
        bytes.push_back('\0');  // PTX is read as a C string
        CUmodule mod;
        const double a = now_ms();
        if (!ok(cuModuleLoadDataEx(&mod, bytes.data(), 0, nullptr, nullptr), argv[i])) {
            rc = 1;
            continue;
        }
        const double b = now_ms();
        unsigned int n = 0;
        if (!ok(cuModuleGetFunctionCount(&n, mod), "cuModuleGetFunctionCount")) return 1;
        std::vector<CUfunction> fs(n);
        if (!ok(cuModuleEnumerateFunctions(fs.data(), n, mod), "cuModuleEnumerateFunctions")) return 1;
        long regs = 0;
        for (CUfunction fn : fs) {
            int r = 0;
            if (!ok(cuFuncGetAttribute(&r, CU_FUNC_ATTRIBUTE_NUM_REGS, fn), "cuFuncGetAttribute")) return 1;
            regs += r;
        }
        const double c = now_ms();
        std::printf("%s: %zu bytes, load %.1f ms, %u functions %.1f ms (registers summed %ld)\n", argv[i],
                    bytes.size() - 1, b - a, n, c - b, regs);
        cuModuleUnload(mod);
    }
    std::printf("total: %.1f ms\n", now_ms() - t0);
    return rc;
}
