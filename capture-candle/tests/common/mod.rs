//! Shared by the test files: the device under test, random inputs, comparisons.
#![allow(dead_code)]

use candle_core::{DType, Device, Tensor};

/// candle's CUDA device with its own stream, or `None` (skipped) without a GPU; with
/// `CAPTURE_REQUIRE_GPU=1`, a missing GPU fails.
pub fn gpu() -> Option<Device> {
    match Device::new_cuda_with_stream(0) {
        Ok(d) => Some(d),
        Err(e) => {
            assert!(std::env::var_os("CAPTURE_REQUIRE_GPU").is_none(), "CAPTURE_REQUIRE_GPU is set but no GPU: {e}");
            eprintln!("skipped: no CUDA device ({e})");
            None
        }
    }
}

/// Deterministic pseudo-random values in [-1, 1), from `seed`.
pub fn values(n: usize, seed: u64) -> Vec<f32> {
    let mut h = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0xdead_beef;
    (0..n)
        .map(|_| {
            h ^= h << 13;
            h ^= h >> 7;
            h ^= h << 17;
            ((h >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// A random tensor of `shape` and `dtype` on `dev`.
pub fn rand(shape: &[usize], dtype: DType, dev: &Device, seed: u64) -> Tensor {
    let n = shape.iter().product();
    Tensor::from_vec(values(n, seed), shape, &Device::Cpu).unwrap().to_dtype(dtype).unwrap().to_device(dev).unwrap()
}

pub fn f32s(t: &Tensor) -> Vec<f32> {
    t.to_device(&Device::Cpu).unwrap().to_dtype(DType::F32).unwrap().flatten_all().unwrap().to_vec1::<f32>().unwrap()
}

/// ‖a − b‖ / ‖b‖.
pub fn rel_err(a: &[f32], b: &[f32]) -> f64 {
    assert_eq!(a.len(), b.len(), "lengths differ");
    let (mut num, mut den) = (0f64, 0f64);
    for (x, y) in a.iter().zip(b) {
        assert!(x.is_finite(), "non-finite value {x}");
        num += ((x - y) as f64).powi(2);
        den += (*y as f64).powi(2);
    }
    (num / den.max(1e-30)).sqrt()
}

/// The tolerance of a dtype's result against an f32 reference.
pub fn tol(dtype: DType) -> f64 {
    match dtype {
        DType::F32 => 1e-5,
        DType::F16 => 2e-3,
        _ => 1.5e-2,
    }
}

pub fn u32t(v: &[u32], dev: &Device) -> Tensor {
    Tensor::new(v, dev).unwrap()
}
