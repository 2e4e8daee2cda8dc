//! Rotary-embedding tables.

use candle_core::{DType, Device, Tensor};

use crate::error::{Error, Result};

/// Which elements of a head a rotary embedding pairs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RopeLayout {
    /// Element `i` with `i + dim/2`: candle's `rope`, used by candle-transformers' Llama and
    /// Qwen2 (the Hugging Face layout).
    Halves,
    /// Element `2i` with `2i + 1`: candle's `rope_i` (the original Llama checkpoints).
    Interleaved,
}

/// Llama 3's frequency scaling (`rope_scaling` with `rope_type: "llama3"` in `config.json`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Llama3Scaling {
    /// `factor`.
    pub factor: f64,
    /// `low_freq_factor`.
    pub low_freq_factor: f64,
    /// `high_freq_factor`.
    pub high_freq_factor: f64,
    /// `original_max_position_embeddings`.
    pub original_max_position_embeddings: usize,
}

impl Llama3Scaling {
    /// What [`validate`](Self::validate) accepts, as its errors say it.
    pub const EXPECTED: &'static str =
        "finite factors with factor >= 1 and high_freq_factor > low_freq_factor > 0, and original_max_position_embeddings >= 1";

    /// Checks the values transformers' llama3 RoPE can use: any other gives NaN or
    /// meaningless frequencies (a zero factor, equal frequency factors).
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] saying [`EXPECTED`](Self::EXPECTED).
    pub fn validate(&self) -> Result<()> {
        let finite = self.factor.is_finite() && self.low_freq_factor.is_finite() && self.high_freq_factor.is_finite();
        if finite
            && self.factor >= 1.0
            && self.high_freq_factor > self.low_freq_factor
            && self.low_freq_factor > 0.0
            && self.original_max_position_embeddings > 0
        {
            Ok(())
        } else {
            Err(Error::invalid("llama3 rope scaling", format!("{self:?}"), Self::EXPECTED))
        }
    }
}

/// The cosines and sines of every position up to `max_seq`, on the device, in f32: the
/// decode kernels read the row of each token's device position.
#[derive(Clone, Debug, crate::Resources)]
pub struct RopeTable {
    table: Tensor,
    layout: RopeLayout,
    dim: usize,
    max_seq: usize,
}

impl RopeTable {
    /// The inverse frequencies of a head of `dim` elements: `theta^(-2i/dim)`, scaled as
    /// Llama 3 scales them when `scaling` is given.
    pub fn inv_freq(dim: usize, theta: f64, scaling: Option<&Llama3Scaling>) -> Vec<f64> {
        (0..dim / 2)
            .map(|i| {
                let f = 1.0 / theta.powf(2.0 * i as f64 / dim as f64);
                match scaling {
                    None => f,
                    Some(s) => {
                        let low_wavelen = s.original_max_position_embeddings as f64 / s.low_freq_factor;
                        let high_wavelen = s.original_max_position_embeddings as f64 / s.high_freq_factor;
                        let wavelen = 2.0 * std::f64::consts::PI / f;
                        if wavelen < high_wavelen {
                            f
                        } else if wavelen > low_wavelen {
                            f / s.factor
                        } else {
                            let smooth = (s.original_max_position_embeddings as f64 / wavelen - s.low_freq_factor)
                                / (s.high_freq_factor - s.low_freq_factor);
                            (1.0 - smooth) * f / s.factor + smooth * f
                        }
                    }
                }
            })
            .collect()
    }

    /// A table for heads of `dim` elements and positions `0..max_seq`.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an odd or zero `dim` (at most 2048), a zero `max_seq`,
    /// a `theta` that is not a finite number above 1, a `scaling` that
    /// [`Llama3Scaling::validate`] refuses, or a table too large for this machine's memory;
    /// candle's error if the upload fails.
    pub fn new(
        dim: usize,
        max_seq: usize,
        theta: f64,
        scaling: Option<&Llama3Scaling>,
        layout: RopeLayout,
        device: &Device,
    ) -> Result<Self> {
        if dim == 0 || !dim.is_multiple_of(2) || dim > 2048 {
            return Err(Error::invalid("rope head dim", dim, "an even number from 2 to 2048"));
        }
        if max_seq == 0 || max_seq > u32::MAX as usize / 2 {
            return Err(Error::invalid("max_seq", max_seq, "at least 1 (and below 2^31)"));
        }
        if !theta.is_finite() || theta <= 1.0 {
            return Err(Error::invalid("rope_theta", theta, "a finite number above 1"));
        }
        if let Some(s) = scaling {
            s.validate()?;
        }
        let inv = Self::inv_freq(dim, theta, scaling);
        let half = dim / 2;
        // At most 2^31 x 2048 entries: a failed allocation is an error, not an abort.
        let mut v = Vec::new();
        v.try_reserve_exact(max_seq * dim).map_err(|_| {
            Error::invalid(
                "rope table",
                format!("{max_seq} positions x {dim}"),
                "a table that fits this machine's memory",
            )
        })?;
        v.resize(max_seq * dim, 0f32);
        for p in 0..max_seq {
            for (i, f) in inv.iter().enumerate() {
                let a = p as f64 * f;
                v[p * dim + i] = a.cos() as f32;
                v[p * dim + half + i] = a.sin() as f32;
            }
        }
        let table = Tensor::from_vec(v, (max_seq, dim), device)?.to_dtype(DType::F32)?;
        Ok(Self { table, layout, dim, max_seq })
    }

    /// `[max_seq, dim]` f32: cosines in the first half of each row, sines in the second.
    pub fn table(&self) -> &Tensor {
        &self.table
    }
    /// The pairing.
    pub fn layout(&self) -> RopeLayout {
        self.layout
    }
    /// Elements per head.
    pub fn dim(&self) -> usize {
        self.dim
    }
    /// Positions covered.
    pub fn max_seq(&self) -> usize {
        self.max_seq
    }
}
