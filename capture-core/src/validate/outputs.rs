//! What a replay check compares: named outputs of any supported element type.

use std::borrow::Cow;

use super::tolerance::Tolerance;
use crate::element::{bf16_to_f64, f16_to_f64, Scalar};

pub(crate) mod sealed {
    /// The outputs' storage, one variant per element type. Public only inside this crate's
    /// private module, so it cannot be named outside it.
    #[derive(Clone, Debug)]
    pub enum Column {
        F32(Vec<f32>),
        F64(Vec<f64>),
        F16(Vec<u16>),
        Bf16(Vec<u16>),
        I8(Vec<i8>),
        I16(Vec<i16>),
        I32(Vec<i32>),
        I64(Vec<i64>),
        U8(Vec<u8>),
        U16(Vec<u16>),
        U32(Vec<u32>),
        U64(Vec<u64>),
    }

    pub trait Sealed: Sized {
        fn into_column(values: Vec<Self>) -> Column;
    }
}

use sealed::Column;

/// Element types a [`ReplayCheck`](super::ReplayCheck) can compare: `f32` and `f64`
/// within the [`Tolerance`], integers exactly. Half-precision outputs go in as their bits
/// with [`Outputs::with_f16_bits`] and [`Outputs::with_bf16_bits`]. Sealed.
pub trait ReplayElement: sealed::Sealed + Copy {}

macro_rules! element {
    ($($t:ty => $variant:ident),*) => {$(
        impl sealed::Sealed for $t {
            #[inline]
            fn into_column(values: Vec<Self>) -> Column {
                Column::$variant(values)
            }
        }
        impl ReplayElement for $t {}
    )*};
}

element!(f32 => F32, f64 => F64, i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32, u64 => U64);

/// The first element that disagrees, and how many do.
#[derive(Copy, Clone, Debug)]
pub(crate) struct Divergence {
    pub element: usize,
    pub eager: Scalar,
    pub replay: Scalar,
    pub differing: usize,
}

/// Compares two equally long slices; returns the largest float difference seen (0 for
/// integers) and the first divergence, if any.
#[inline]
fn diff_by<T: Copy>(
    eager: &[T],
    replay: &[T],
    agrees: impl Fn(T, T) -> bool,
    scalar: impl Fn(T) -> Scalar,
    distance: impl Fn(T, T) -> f64,
) -> (f64, Option<Divergence>) {
    let mut max = 0.0f64;
    let mut first: Option<Divergence> = None;
    for (i, (&e, &r)) in eager.iter().zip(replay).enumerate() {
        let d = distance(e, r);
        if d > max {
            max = d;
        }
        if !agrees(e, r) {
            match &mut first {
                Some(div) => div.differing += 1,
                None => first = Some(Divergence { element: i, eager: scalar(e), replay: scalar(r), differing: 1 }),
            }
        }
    }
    (max, first)
}

/// `|e - r|` where both are finite, else 0 (non-finite pairs are judged by `agrees`).
#[inline]
fn float_distance(e: f64, r: f64) -> f64 {
    let d = (e - r).abs();
    if d.is_finite() {
        d
    } else {
        0.0
    }
}

impl Column {
    pub(crate) fn len(&self) -> usize {
        match self {
            Column::F32(v) => v.len(),
            Column::F64(v) => v.len(),
            Column::F16(v) | Column::Bf16(v) | Column::U16(v) => v.len(),
            Column::I8(v) => v.len(),
            Column::I16(v) => v.len(),
            Column::I32(v) => v.len(),
            Column::I64(v) => v.len(),
            Column::U8(v) => v.len(),
            Column::U32(v) => v.len(),
            Column::U64(v) => v.len(),
        }
    }

    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Column::F32(_) => "f32",
            Column::F64(_) => "f64",
            Column::F16(_) => "f16",
            Column::Bf16(_) => "bf16",
            Column::I8(_) => "i8",
            Column::I16(_) => "i16",
            Column::I32(_) => "i32",
            Column::I64(_) => "i64",
            Column::U8(_) => "u8",
            Column::U16(_) => "u16",
            Column::U32(_) => "u32",
            Column::U64(_) => "u64",
        }
    }

    /// Compares `self` (eager) with `replay`, which must have the same type and length
    /// (`None` otherwise).
    pub(crate) fn compare(&self, replay: &Column, tol: Tolerance) -> Option<(f64, Option<Divergence>)> {
        macro_rules! ints {
            ($e:expr, $r:expr, $wrap:expr) => {
                diff_by($e, $r, |a, b| a == b, $wrap, |_, _| 0.0)
            };
        }
        if self.len() != replay.len() {
            return None;
        }
        Some(match (self, replay) {
            (Column::F32(e), Column::F32(r)) => diff_by(
                e,
                r,
                |a, b| tol.agrees(f64::from(a), f64::from(b)),
                Scalar::F32,
                |a, b| float_distance(f64::from(a), f64::from(b)),
            ),
            (Column::F64(e), Column::F64(r)) => diff_by(e, r, |a, b| tol.agrees(a, b), Scalar::F64, float_distance),
            (Column::F16(e), Column::F16(r)) => diff_by(
                e,
                r,
                |a, b| tol.agrees(f16_to_f64(a), f16_to_f64(b)),
                Scalar::F16Bits,
                |a, b| float_distance(f16_to_f64(a), f16_to_f64(b)),
            ),
            (Column::Bf16(e), Column::Bf16(r)) => diff_by(
                e,
                r,
                |a, b| tol.agrees(bf16_to_f64(a), bf16_to_f64(b)),
                Scalar::Bf16Bits,
                |a, b| float_distance(bf16_to_f64(a), bf16_to_f64(b)),
            ),
            (Column::I8(e), Column::I8(r)) => ints!(e, r, |v| Scalar::Int(v.into())),
            (Column::I16(e), Column::I16(r)) => ints!(e, r, |v| Scalar::Int(v.into())),
            (Column::I32(e), Column::I32(r)) => ints!(e, r, |v| Scalar::Int(v.into())),
            (Column::I64(e), Column::I64(r)) => ints!(e, r, Scalar::Int),
            (Column::U8(e), Column::U8(r)) => ints!(e, r, |v| Scalar::UInt(v.into())),
            (Column::U16(e), Column::U16(r)) => ints!(e, r, |v| Scalar::UInt(v.into())),
            (Column::U32(e), Column::U32(r)) => ints!(e, r, |v| Scalar::UInt(v.into())),
            (Column::U64(e), Column::U64(r)) => ints!(e, r, Scalar::UInt),
            _ => return None,
        })
    }
}

/// The named outputs of one run, read back by the `read_outputs` closure of a
/// [`ReplayCheck`](super::ReplayCheck): the replay's and the eager run's are compared
/// output by output, in the order they were added.
///
/// ```
/// # use capture_core::validate::Outputs;
/// let out = Outputs::new().with("logits", vec![0.5f32, 1.5]).with("next_token", vec![7u32]);
/// assert_eq!(out.len(), 2);
/// ```
#[derive(Clone, Debug, Default)]
pub struct Outputs {
    pub(crate) items: Vec<(Cow<'static, str>, Column)>,
}

impl Outputs {
    /// No outputs yet (does not allocate).
    pub fn new() -> Self {
        Self { items: Vec::new() }
    }

    /// Room for `n` outputs.
    pub fn with_capacity(n: usize) -> Self {
        Self { items: Vec::with_capacity(n) }
    }

    /// Adds output `name` (builder form of [`push`](Self::push)).
    #[must_use]
    pub fn with<T: ReplayElement>(mut self, name: impl Into<Cow<'static, str>>, values: Vec<T>) -> Self {
        self.push(name, values);
        self
    }

    /// Adds output `name`.
    pub fn push<T: ReplayElement>(&mut self, name: impl Into<Cow<'static, str>>, values: Vec<T>) {
        self.items.push((name.into(), T::into_column(values)));
    }

    /// Adds an output of IEEE half-precision values given as their bits (`half::f16::to_bits`,
    /// or a `DeviceBuffer<u16>` downloaded as is); compared as floats.
    #[must_use]
    pub fn with_f16_bits(mut self, name: impl Into<Cow<'static, str>>, bits: Vec<u16>) -> Self {
        self.items.push((name.into(), Column::F16(bits)));
        self
    }

    /// Adds an output of bfloat16 values given as their bits; compared as floats.
    #[must_use]
    pub fn with_bf16_bits(mut self, name: impl Into<Cow<'static, str>>, bits: Vec<u16>) -> Self {
        self.items.push((name.into(), Column::Bf16(bits)));
        self
    }

    /// Number of outputs.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The outputs' names, in order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.items.iter().map(|(n, _)| n.as_ref())
    }

    /// `"<len> x <type>"` of output `i`, for messages.
    pub(crate) fn shape(&self, i: usize) -> String {
        match self.items.get(i) {
            Some((_, c)) => format!("{} x {}", c.len(), c.type_name()),
            None => "absent".to_owned(),
        }
    }

    /// The first name that occurs twice, if any.
    pub(crate) fn duplicate_name(&self) -> Option<&str> {
        let items = &self.items;
        items
            .iter()
            .enumerate()
            .find(|(i, (n, _))| items[..*i].iter().any(|(m, _)| m == n))
            .map(|(_, (n, _))| n.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions() {
        assert_eq!(f16_to_f64(0x3c00), 1.0);
        assert_eq!(f16_to_f64(0xc000), -2.0);
        assert_eq!(f16_to_f64(0x0001), 5.960464477539063e-8); // 2^-24
        assert_eq!(f16_to_f64(0x7bff), 65504.0);
        assert!(f16_to_f64(0x7c01).is_nan());
        assert_eq!(f16_to_f64(0xfc00), f64::NEG_INFINITY);
        assert_eq!(bf16_to_f64(0x3f80), 1.0);
        assert_eq!(bf16_to_f64(0xc040), -3.0);
    }

    #[test]
    fn first_divergence_and_count() {
        let e = Column::F32(vec![1.0, 2.0, 3.0, 4.0]);
        let r = Column::F32(vec![1.0, 2.5, 3.0, 5.0]);
        let (max, d) = e.compare(&r, Tolerance::EXACT).unwrap();
        let d = d.unwrap();
        assert_eq!((d.element, d.differing, max), (1, 2, 1.0));
        assert_eq!(d.eager, Scalar::F32(2.0));
        assert!(e.compare(&r, Tolerance::new(1.0, 0.0)).unwrap().1.is_none());
        assert!(e.compare(&Column::F64(vec![1.0; 4]), Tolerance::EXACT).is_none());
        assert!(e.compare(&Column::F32(vec![1.0; 3]), Tolerance::EXACT).is_none());
        let (_, d) = Column::U64(vec![u64::MAX, 1])
            .compare(&Column::U64(vec![u64::MAX - 1, 1]), Tolerance::new(9.0, 9.0))
            .unwrap();
        assert_eq!(d.unwrap().replay, Scalar::UInt(u64::MAX - 1), "integers are exact whatever the tolerance");
        let (_, d) = Column::F16(vec![0x3c00]).compare(&Column::F16(vec![0x3c01]), Tolerance::new(1e-3, 0.0)).unwrap();
        assert!(d.is_none(), "one f16 ulp at 1.0 is 2^-10 < 1e-3");
    }

    #[test]
    fn nan_agrees_with_nan_only() {
        let t = Tolerance::new(1.0, 1.0);
        assert!(t.agrees(f64::NAN, f64::NAN));
        assert!(!t.agrees(f64::NAN, 0.0));
        assert!(!t.agrees(f64::INFINITY, 1e308));
        assert!(t.agrees(f64::INFINITY, f64::INFINITY));
    }
}
