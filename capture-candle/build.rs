//! Compiles the decode kernels' checked-in PTX (`kernels/decode.ptx`, `kernels/decode_pdl.ptx`)
//! to machine code (cubins) for one GPU architecture, so that a process loads them in
//! milliseconds instead of waiting for the driver to compile the PTX when it loads it (30-32 s
//! for both files on an H200 with the driver's cache empty, docs/gpu-runs/2026-12-02-issue32/).
//!
//! - The GPU: `CUDA_COMPUTE_CAP`, the variable candle's build reads (`90`, `sm_90`, `9`, `8.6`,
//!   `90a`; without a suffix the cubin is for the plain architecture, `sm_90`), else the first
//!   GPU `nvidia-smi` lists.
//! - ptxas: beside `NVCC`, in `CUDA_ROOT`, `CUDA_PATH` or `CUDA_HOME`, on `PATH` (then a change
//!   of `PATH` reruns this script), in `/usr/local/cuda` or `/opt/cuda` (candle's `cuda` build
//!   needs nvcc, which ships ptxas). Both files compile at once, on two threads.
//! - `decode_pdl.ptx` is PTX for compute 9.0: compiled only for a GPU of 9.0 or later (below
//!   that the crate never launches it).
//!
//! Without the `cuda` feature (docs.rs), without ptxas, or without a GPU to build for, no
//! cubin is built and the crate loads the PTX as before. Each of those but the first says why
//! in a cargo warning (which Cargo shows only for local packages; the crate also logs it at
//! run time). The result is `$OUT_DIR/sass.rs`, included by `src/decode/code.rs`.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=kernels/decode.ptx");
    println!("cargo::rerun-if-changed=kernels/decode_pdl.ptx");
    for v in ["CUDA_COMPUTE_CAP", "NVCC", "CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"] {
        println!("cargo::rerun-if-env-changed={v}");
    }
    let out = PathBuf::from(env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    let built = if env::var_os("CARGO_FEATURE_CUDA").is_some() { build(&out) } else { None };
    let (arch, decode, pdl) = match &built {
        Some((arch, decode, pdl)) => {
            (format!("Some({arch:?})"), bytes(decode), pdl.as_deref().map_or("None".into(), bytes))
        }
        None => ("None".into(), "None".into(), "None".into()),
    };
    let rs = format!(
        "// Written by build.rs.\n\
         /// The GPU the cubins below were built for (`sm_90`), if any were.\n\
         pub(crate) const SASS_ARCH: Option<&str> = {arch};\n\
         /// `kernels/decode.ptx` compiled for [`SASS_ARCH`].\n\
         pub(crate) const DECODE_SASS: Option<&[u8]> = {decode};\n\
         /// `kernels/decode_pdl.ptx` compiled for [`SASS_ARCH`] (9.0 and later only).\n\
         pub(crate) const DECODE_PDL_SASS: Option<&[u8]> = {pdl};\n"
    );
    std::fs::write(out.join("sass.rs"), rs).expect("OUT_DIR is writable");
}

fn bytes(path: &Path) -> String {
    format!("Some(include_bytes!({:?}))", path.display().to_string())
}

/// The architecture's name and the cubins, or `None` (with a warning where it is worth one).
fn build(out: &Path) -> Option<(String, PathBuf, Option<PathBuf>)> {
    let (ptxas, fixed) = find_ptxas();
    if !fixed {
        // Found on PATH, or not at all: another PATH may give another answer.
        println!("cargo::rerun-if-env-changed=PATH");
    }
    let Some(ptxas) = ptxas else {
        return ptx_only("no ptxas found (NVCC, CUDA_ROOT, CUDA_PATH, CUDA_HOME, PATH, /usr/local/cuda)");
    };
    let (cap, from) = match env::var("CUDA_COMPUTE_CAP") {
        Ok(v) => (v, "CUDA_COMPUTE_CAP"),
        Err(_) => match nvidia_smi_cap() {
            Some(v) => (v, "nvidia-smi's compute_cap"),
            None => {
                return ptx_only(
                    "no CUDA_COMPUTE_CAP and no GPU found (set CUDA_COMPUTE_CAP, e.g. 90, to build machine \
                     code for that GPU)",
                );
            }
        },
    };
    let Some((digits, suffix)) = parse_cap(&cap) else {
        return ptx_only(&format!("{from} {cap:?} is not a compute capability such as 90, sm_90, 8.6 or 90a"));
    };
    let arch = format!("sm_{digits}{suffix}");
    let decode = out.join(format!("decode.{arch}.cubin"));
    // decode_pdl.ptx is PTX for compute 9.0: below it, there is nothing to build.
    let pdl = (digits >= 90).then(|| out.join(format!("decode_pdl.{arch}.cubin")));
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| ptxas_ok(&ptxas, &arch, "kernels/decode.ptx", &decode));
        let b = pdl.as_ref().map(|p| s.spawn(|| ptxas_ok(&ptxas, &arch, "kernels/decode_pdl.ptx", p)));
        (a.join().unwrap_or(false), b.is_none_or(|b| b.join().unwrap_or(false)))
    });
    (a && b).then_some((arch, decode, pdl))
}

/// As candle's build reads `CUDA_COMPUTE_CAP` (cudaforge's `GpuArch::parse`), and `8.6` too:
/// `90`, `sm_90`, `9`, `9.0`, `90a`, `100f`, `8.6` → (90, ""), (90, ""), (90, ""), (90, ""),
/// (90, "a"), (100, "f"), (86, "").
fn parse_cap(v: &str) -> Option<(u32, &'static str)> {
    let v = v.trim().to_ascii_lowercase();
    let v = v.strip_prefix("sm_").unwrap_or(&v);
    let (num, suffix) = match v.strip_suffix('a') {
        Some(n) => (n, "a"),
        None => v.strip_suffix('f').map_or((v, ""), |n| (n, "f")),
    };
    let n: u32 = match num.split_once('.') {
        Some((major, minor)) if minor.len() == 1 => major.parse::<u32>().ok()? * 10 + minor.parse::<u32>().ok()?,
        Some(_) => return None,
        None => {
            let n: u32 = num.parse().ok()?;
            if n < 20 {
                n * 10
            } else {
                n
            }
        }
    };
    (50..=1000).contains(&n).then_some((n, suffix))
}

fn nvidia_smi_cap() -> Option<String> {
    let o = Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader"]).output().ok()?;
    if !o.status.success() {
        return None;
    }
    String::from_utf8(o.stdout).ok()?.lines().next().map(str::to_string)
}

/// ptxas, and whether it was found without `PATH`.
fn find_ptxas() -> (Option<PathBuf>, bool) {
    let is = |p: PathBuf| p.is_file().then_some(p);
    if let Some(p) = env::var_os("NVCC").and_then(|n| is(Path::new(&n).with_file_name("ptxas"))) {
        return (Some(p), true);
    }
    let roots = ["CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"].into_iter().filter_map(env::var_os).map(PathBuf::from);
    if let Some(p) = roots.into_iter().find_map(|r| is(r.join("bin").join("ptxas"))) {
        return (Some(p), true);
    }
    let path = env::var_os("PATH").unwrap_or_default();
    if let Some(p) = env::split_paths(&path).find_map(|d| is(d.join("ptxas"))) {
        return (Some(p), false);
    }
    (["/usr/local/cuda", "/opt/cuda"].into_iter().find_map(|r| is(Path::new(r).join("bin").join("ptxas"))), false)
}

fn ptxas_ok(ptxas: &Path, arch: &str, ptx: &str, out: &Path) -> bool {
    let src = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join(ptx);
    let r = Command::new(ptxas).args(["-O3", &format!("-arch={arch}")]).arg(&src).arg("-o").arg(out).output();
    match r {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let first = err.lines().next().unwrap_or("").to_string();
            warn_ptx_only(&format!("{} could not compile {ptx} for {arch} ({first})", ptxas.display()));
            false
        }
        Err(e) => {
            warn_ptx_only(&format!("could not run {} ({e})", ptxas.display()));
            false
        }
    }
}

/// Says in a Cargo warning why the build makes no cubin.
fn warn_ptx_only(why: &str) {
    println!(
        "cargo::warning=capture-candle: {why}: the decode kernels ship as PTX only, which the driver \
         compiles when a process first loads them (about 30 s the first time on a machine)"
    );
}

/// [`warn_ptx_only`], and `None` for the caller to return.
fn ptx_only<T>(why: &str) -> Option<T> {
    warn_ptx_only(why);
    None
}
