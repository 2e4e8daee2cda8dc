//! One element's value as read back from device memory: [`Scalar`], which errors report
//! (`Error::ReplayDiverged`) and replay checks compare.

use std::fmt;

/// One element's value, as reported in [`Error::ReplayDiverged`](crate::Error::ReplayDiverged).
#[derive(Copy, Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Scalar {
    /// An `f32`.
    F32(f32),
    /// An `f64`.
    F64(f64),
    /// An IEEE half-precision value, as its bits.
    F16Bits(u16),
    /// A bfloat16 value, as its bits.
    Bf16Bits(u16),
    /// A signed integer.
    Int(i64),
    /// An unsigned integer.
    UInt(u64),
}

impl Scalar {
    /// The value as an `f64` (exact for every float type and for integers up to 2^53).
    pub fn as_f64(self) -> f64 {
        match self {
            Scalar::F32(v) => v as f64,
            Scalar::F64(v) => v,
            Scalar::F16Bits(b) => f16_to_f64(b),
            Scalar::Bf16Bits(b) => bf16_to_f64(b),
            Scalar::Int(v) => v as f64,
            Scalar::UInt(v) => v as f64,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Scalar::F32(v) => write!(f, "{v:?}"),
            Scalar::F64(v) => write!(f, "{v:?}"),
            Scalar::F16Bits(b) => write!(f, "{:?} (f16 {b:#06x})", f16_to_f64(b)),
            Scalar::Bf16Bits(b) => write!(f, "{:?} (bf16 {b:#06x})", bf16_to_f64(b)),
            Scalar::Int(v) => write!(f, "{v}"),
            Scalar::UInt(v) => write!(f, "{v}"),
        }
    }
}

/// IEEE 754 binary16 to f64 (exact).
/// 2^e, exactly (built from its bits: `powi` is not guaranteed exact, and Miri shows it).
fn pow2(e: i32) -> f64 {
    debug_assert!((-1022..=1023).contains(&e));
    f64::from_bits(((e + 1023) as u64) << 52)
}

pub(crate) fn f16_to_f64(bits: u16) -> f64 {
    let sign = if bits & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((bits >> 10) & 0x1f);
    let mant = f64::from(bits & 0x3ff);
    let mag = match exp {
        0 => mant * pow2(-24),
        31 if mant == 0.0 => f64::INFINITY,
        31 => f64::NAN,
        _ => (1.0 + mant / 1024.0) * pow2(exp - 15),
    };
    sign * mag
}

/// bfloat16 to f64 (exact).
pub(crate) fn bf16_to_f64(bits: u16) -> f64 {
    f64::from(f32::from_bits(u32::from(bits) << 16))
}
