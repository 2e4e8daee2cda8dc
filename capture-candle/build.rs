//! Compiles the decode kernels' checked-in PTX (`kernels/decode.ptx`, `kernels/decode_pdl.ptx`)
//! to machine code (cubins) for the GPU that candle's own kernels are built for, so that a
//! process loads them in milliseconds instead of waiting for the driver to compile the PTX at
//! first use (30-32 s for both files on an H200 with the driver's cache empty,
//! docs/gpu-runs/2026-12-02-issue32/).
//!
//! - The GPU: `CUDA_COMPUTE_CAP` (`90`, `8.6`, `90a`: what candle's build reads), else the
//!   first GPU `nvidia-smi` lists.
//! - ptxas: beside nvcc in `CUDA_ROOT`, `CUDA_PATH`, `CUDA_HOME` or `/usr/local/cuda`, else on
//!   `PATH` (candle's `cuda` build needs nvcc, which ships ptxas).
//! - `decode_pdl.ptx` is PTX for compute 9.0: compiled only for a GPU of 9.0 or later (below
//!   that the crate never launches it).
//!
//! Without the `cuda` feature (docs.rs), without ptxas, or without a GPU to build for, no
//! cubin is built and the crate loads the PTX as before; a build that has ptxas but cannot use
//! it says why in a cargo warning. The result is `$OUT_DIR/sass.rs`, included by
//! `src/decode/code.rs`.
use std::env;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-changed=kernels/decode.ptx");
    println!("cargo::rerun-if-changed=kernels/decode_pdl.ptx");
    for v in ["CUDA_COMPUTE_CAP", "CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"] {
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
    let Some(ptxas) = find_ptxas() else {
        // No CUDA toolkit: candle's own `cuda` build will stop on nvcc; nothing to add here.
        return None;
    };
    let cap = match env::var("CUDA_COMPUTE_CAP") {
        Ok(v) => v,
        Err(_) => match nvidia_smi_cap() {
            Some(v) => v,
            None => {
                println!(
                    "cargo::warning=capture-candle: no CUDA_COMPUTE_CAP and no GPU found: the decode kernels \
                     ship as PTX only, which the driver compiles at first use (about 30 s the first time \
                     on a machine); set CUDA_COMPUTE_CAP (e.g. 90) to build machine code for that GPU"
                );
                return None;
            }
        },
    };
    let Some((digits, suffix)) = parse_cap(&cap) else {
        println!(
            "cargo::warning=capture-candle: CUDA_COMPUTE_CAP={cap:?} is not a compute capability such as 90, \
             8.6 or 90a: the decode kernels ship as PTX only"
        );
        return None;
    };
    let arch = format!("sm_{digits}{suffix}");
    let decode = out.join(format!("decode.{arch}.cubin"));
    if !ptxas_ok(&ptxas, &arch, "kernels/decode.ptx", &decode) {
        return None;
    }
    let pdl = if digits >= 90 {
        let p = out.join(format!("decode_pdl.{arch}.cubin"));
        if !ptxas_ok(&ptxas, &arch, "kernels/decode_pdl.ptx", &p) {
            return None;
        }
        Some(p)
    } else {
        None
    };
    Some((arch, decode, pdl))
}

/// `90`, `9.0`, `90a`, `100f`, `8.6` → (90, ""), (90, ""), (90, "a"), (100, "f"), (86, "").
fn parse_cap(v: &str) -> Option<(u32, &str)> {
    let v = v.trim();
    let cut = v.find(|c: char| c.is_ascii_alphabetic()).unwrap_or(v.len());
    let (num, suffix) = v.split_at(cut);
    if !matches!(suffix, "" | "a" | "f") {
        return None;
    }
    let digits: String = num.chars().filter(|&c| c != '.').collect();
    if digits.is_empty() || !digits.chars().all(|c| c.is_ascii_digit()) || num.matches('.').count() > 1 {
        return None;
    }
    let n: u32 = digits.parse().ok()?;
    (50..=1000).contains(&n).then_some((n, suffix))
}

fn nvidia_smi_cap() -> Option<String> {
    let o = Command::new("nvidia-smi").args(["--query-gpu=compute_cap", "--format=csv,noheader"]).output().ok()?;
    if !o.status.success() {
        return None;
    }
    String::from_utf8(o.stdout).ok()?.lines().next().map(str::to_string)
}

fn find_ptxas() -> Option<PathBuf> {
    let roots = ["CUDA_ROOT", "CUDA_PATH", "CUDA_HOME"].into_iter().filter_map(env::var_os).map(PathBuf::from);
    for root in roots.chain([PathBuf::from("/usr/local/cuda")]) {
        let p = root.join("bin").join("ptxas");
        if p.is_file() {
            return Some(p);
        }
    }
    env::split_paths(&env::var_os("PATH")?).map(|d| d.join("ptxas")).find(|p| p.is_file())
}

fn ptxas_ok(ptxas: &Path, arch: &str, ptx: &str, out: &Path) -> bool {
    let src = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR")).join(ptx);
    let r = Command::new(ptxas).args(["-O3", &format!("-arch={arch}")]).arg(&src).arg("-o").arg(out).output();
    match r {
        Ok(o) if o.status.success() => true,
        Ok(o) => {
            let err = String::from_utf8_lossy(&o.stderr);
            let first = err.lines().next().unwrap_or("").to_string();
            println!(
                "cargo::warning=capture-candle: {} could not compile {ptx} for {arch} ({first}): the decode \
                 kernels ship as PTX only",
                ptxas.display()
            );
            false
        }
        Err(e) => {
            println!(
                "cargo::warning=capture-candle: could not run {} ({e}): the decode kernels ship as PTX only",
                ptxas.display()
            );
            false
        }
    }
}
