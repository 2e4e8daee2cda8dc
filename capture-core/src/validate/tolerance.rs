//! How far a replayed floating-point value may be from the eager one.

use std::fmt;

/// How far a replayed floating-point element may be from the eager one: they agree when
/// `|eager - replay| <= abs + rel * |eager|`. Two NaNs agree; a NaN and a number do not;
/// infinities agree only with themselves. Integer outputs are always compared exactly.
///
/// The same kernels on the same inputs give bit-equal results, so [`Tolerance::EXACT`] (the
/// default) is the right choice unless the eager path runs different kernels (another
/// GEMM algorithm, a fused kernel) than the captured one.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Tolerance {
    /// Absolute tolerance (finite, `>= 0`).
    pub abs: f64,
    /// Tolerance relative to the eager value's magnitude (finite, `>= 0`).
    pub rel: f64,
}

impl Tolerance {
    /// Bit-for-bit equal values (up to `0.0 == -0.0` and NaN agreeing with NaN).
    pub const EXACT: Self = Self { abs: 0.0, rel: 0.0 };

    /// An absolute and a relative tolerance.
    pub const fn new(abs: f64, rel: f64) -> Self {
        Self { abs, rel }
    }

    /// Whether both bounds are finite and non-negative.
    pub fn is_valid(&self) -> bool {
        self.abs.is_finite() && self.rel.is_finite() && self.abs >= 0.0 && self.rel >= 0.0
    }

    /// Whether `replay` is close enough to `eager`.
    #[inline]
    pub fn agrees(&self, eager: f64, replay: f64) -> bool {
        if eager == replay || (eager.is_nan() && replay.is_nan()) {
            return true;
        }
        if !eager.is_finite() || !replay.is_finite() {
            return false;
        }
        (eager - replay).abs() <= self.abs + self.rel * eager.abs()
    }
}

impl Default for Tolerance {
    fn default() -> Self {
        Self::EXACT
    }
}

impl fmt::Display for Tolerance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if *self == Self::EXACT {
            f.write_str("exact")
        } else {
            write!(f, "abs {} + rel {}", self.abs, self.rel)
        }
    }
}
