# Sourced on the GPU machine before running capture-candle's staged binaries:
#   source scripts/gpu-candle-env.sh DIR
# unpacks DIR's *.xz binaries in place, and puts the CUDA 13 libraries that candle's binaries
# link (cuBLAS, cuRAND, NVRTC, the runtime; PyTorch's NVIDIA wheels ship them there) on
# LD_LIBRARY_PATH.
python3 - "$1" <<'PY'
import lzma, glob, os, shutil, sys
for f in glob.glob(os.path.join(sys.argv[1], "*.xz")):
    with lzma.open(f) as i, open(f[:-3], "wb") as o:
        shutil.copyfileobj(i, o)
    os.chmod(f[:-3], 0o755)
    os.remove(f)
PY
_libs=$(python3 - <<'PY'
import os, site, glob
dirs = set()
for sp in site.getsitepackages() + [site.getusersitepackages()]:
    for f in glob.glob(os.path.join(sp, "nvidia", "**", "lib*.so*"), recursive=True):
        dirs.add(os.path.dirname(f))
print(":".join(sorted(dirs)))
PY
)
export LD_LIBRARY_PATH="$_libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
