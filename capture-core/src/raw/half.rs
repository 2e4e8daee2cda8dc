//! Half-precision element types for collectives: `F16` and `Bf16`, as their bits (also the
//! simulated world's arithmetic for them).
#![cfg_attr(not(feature = "nccl"), allow(dead_code))]

use std::fmt;

/// An IEEE 754 half-precision value, as its bits (`f16` in NCCL, `__half` in CUDA).
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct F16(pub u16);

/// A bfloat16 value, as its bits (`bf16` in NCCL, `__nv_bfloat16` in CUDA).
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
#[repr(transparent)]
pub struct Bf16(pub u16);

impl F16 {
    /// The nearest half-precision value (ties to even; out of range: infinity).
    pub fn from_f32(x: f32) -> Self {
        let b = x.to_bits();
        let sign = ((b >> 16) & 0x8000) as u16;
        let exp = ((b >> 23) & 0xff) as i32;
        let man = b & 0x7f_ffff;
        if exp == 0xff {
            return F16(sign | 0x7c00 | if man != 0 { 0x200 } else { 0 });
        }
        let e = exp - 127 + 15;
        if e >= 0x1f {
            return F16(sign | 0x7c00);
        }
        if e <= 0 {
            // A subnormal half (or zero): the implicit bit joins the mantissa, shifted right.
            if e < -10 {
                return F16(sign);
            }
            let m = man | 0x80_0000;
            let shift = (14 - e) as u32;
            let rounded = m + (1 << (shift - 1)) - 1 + ((m >> shift) & 1);
            return F16(sign | (rounded >> shift) as u16);
        }
        let rounded = man + 0xfff + ((man >> 13) & 1);
        if rounded & 0x80_0000 != 0 {
            // The mantissa rounded up into the next power of two.
            if e + 1 >= 0x1f {
                return F16(sign | 0x7c00);
            }
            return F16(sign | (((e + 1) as u16) << 10));
        }
        F16(sign | ((e as u16) << 10) | (rounded >> 13) as u16)
    }

    /// The value (exact).
    pub fn to_f32(self) -> f32 {
        let sign = if self.0 & 0x8000 != 0 { -1.0f32 } else { 1.0 };
        let exp = i32::from((self.0 >> 10) & 0x1f);
        let man = f32::from(self.0 & 0x3ff);
        match exp {
            0 => sign * man * f32::from_bits(0x3380_0000), // man * 2^-24
            0x1f if man == 0.0 => sign * f32::INFINITY,
            0x1f => f32::NAN,
            _ => sign * (1.0 + man / 1024.0) * f32::from_bits(((exp - 15 + 127) as u32) << 23),
        }
    }
}

impl Bf16 {
    /// The nearest bfloat16 value (ties to even).
    pub fn from_f32(x: f32) -> Self {
        let bits = x.to_bits();
        if x.is_nan() {
            return Bf16(((bits >> 16) as u16) | 0x40);
        }
        let round = 0x7fff + ((bits >> 16) & 1);
        Bf16((bits.wrapping_add(round) >> 16) as u16)
    }

    /// The value (exact).
    pub fn to_f32(self) -> f32 {
        f32::from_bits(u32::from(self.0) << 16)
    }
}

impl fmt::Debug for F16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}f16", self.to_f32())
    }
}

impl fmt::Debug for Bf16 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}bf16", self.to_f32())
    }
}

#[cfg(test)]
mod tests {
    use super::{Bf16, F16};

    #[test]
    fn f16_round_trips_and_rounds_to_nearest_even() {
        for i in -2048..=2048 {
            let x = i as f32;
            assert_eq!(F16::from_f32(x).to_f32(), x, "{x}");
        }
        assert_eq!(F16::from_f32(65504.0).0, 0x7bff);
        assert_eq!(F16::from_f32(65520.0).0, 0x7c00, "rounds up to infinity");
        assert_eq!(F16::from_f32(1.0 + 1.0 / 2048.0).0, 0x3c00, "a tie goes to even");
        assert_eq!(F16::from_f32(1.0 + 3.0 / 2048.0).0, 0x3c02, "a tie goes to even");
        assert_eq!(F16::from_f32(5.960_464_5e-8).0, 0x0001, "the smallest subnormal");
        assert_eq!(F16::from_f32(0.1).to_f32(), 0.099_975_586);
        assert!(F16::from_f32(f32::NAN).to_f32().is_nan());
        assert_eq!(F16::from_f32(-0.0).0, 0x8000);
    }

    #[test]
    fn bf16_round_trips() {
        for i in -256..=256 {
            let x = i as f32;
            assert_eq!(Bf16::from_f32(x).to_f32(), x);
        }
        assert_eq!(Bf16::from_f32(1.0 + 1.0 / 256.0), Bf16::from_f32(1.0));
    }
}
