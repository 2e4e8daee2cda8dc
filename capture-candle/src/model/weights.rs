//! Where a model's tensors come from: a safetensors checkpoint in the Hugging Face layout,
//! checked against the config, or random values of the config's shapes.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use candle_core::{DType, Device, Tensor};

use crate::error::{Error, Result};

/// A source of named tensors.
pub(crate) enum Source {
    /// Memory-mapped safetensors files, with each tensor's dtype and shape.
    Files {
        st: candle_core::safetensors::MmapedSafetensors,
        index: HashMap<String, (DType, Vec<usize>)>,
        expect_dtype: Option<DType>,
    },
    /// Random values (on a CUDA device, candle's seeded generator; on the CPU, a hash of
    /// the seed and the tensor's name).
    Random { seed: u64 },
}

fn st_dtype(d: safetensors::Dtype) -> Option<DType> {
    Some(match d {
        safetensors::Dtype::BF16 => DType::BF16,
        safetensors::Dtype::F16 => DType::F16,
        safetensors::Dtype::F32 => DType::F32,
        safetensors::Dtype::F64 => DType::F64,
        safetensors::Dtype::U32 => DType::U32,
        safetensors::Dtype::U8 => DType::U8,
        safetensors::Dtype::I64 => DType::I64,
        _ => return None,
    })
}

impl Source {
    pub(crate) fn files(paths: &[PathBuf], expect_dtype: Option<DType>) -> Result<Self> {
        for p in paths {
            if !p.is_file() {
                return Err(Error::Io {
                    path: p.display().to_string(),
                    source: std::io::Error::new(std::io::ErrorKind::NotFound, "no such safetensors file"),
                });
            }
        }
        let st = crate::raw::mmap_safetensors(paths)?;
        let mut index = HashMap::new();
        for (name, view) in st.tensors() {
            if let Some(d) = st_dtype(view.dtype()) {
                index.insert(name, (d, view.shape().to_vec()));
            }
        }
        Ok(Source::Files { st, index, expect_dtype })
    }

    /// The `*.safetensors` files of a directory, sorted.
    pub(crate) fn dir_files(dir: &Path) -> Result<Vec<PathBuf>> {
        let rd = std::fs::read_dir(dir).map_err(|source| Error::Io { path: dir.display().to_string(), source })?;
        let mut v: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
            .collect();
        v.sort();
        if v.is_empty() {
            return Err(Error::Io {
                path: dir.display().to_string(),
                source: std::io::Error::new(std::io::ErrorKind::NotFound, "no *.safetensors file in this directory"),
            });
        }
        Ok(v)
    }

    /// Whether the checkpoint has `name` (random sources have everything).
    pub(crate) fn has(&self, name: &str) -> bool {
        match self {
            Source::Files { index, .. } => index.contains_key(name),
            Source::Random { .. } => true,
        }
    }

    /// Tensor `name` of `shape`, as `dtype` on `device`. `std` is the spread of random
    /// values; `offset` is added to them (1 for norm weights).
    pub(crate) fn get(
        &self,
        name: &str,
        shape: &[usize],
        dtype: DType,
        device: &Device,
        std: f64,
        offset: f64,
    ) -> Result<Tensor> {
        match self {
            Source::Files { st, index, expect_dtype } => {
                let Some((found, dims)) = index.get(name) else {
                    return Err(Error::MissingWeight { name: name.to_string() });
                };
                if dims.as_slice() != shape {
                    return Err(Error::WeightShape {
                        name: name.to_string(),
                        expected: shape.to_vec(),
                        found: dims.clone(),
                    });
                }
                if let Some(e) = expect_dtype {
                    if e != found {
                        return Err(Error::WeightDtype {
                            name: name.to_string(),
                            expected: format!("{e:?}"),
                            found: format!("{found:?}"),
                        });
                    }
                }
                Ok(st.load(name, device)?.to_dtype(dtype)?)
            }
            Source::Random { seed } => {
                let t = match device {
                    Device::Cpu => {
                        let n: usize = shape.iter().product();
                        let mut h = crate::decode::hash_seed(*seed, name);
                        let v: Vec<f32> = (0..n)
                            .map(|_| {
                                // Sum of four uniforms: mean 0, variance 1/3; scaled to `std`.
                                let mut s = 0.0;
                                for _ in 0..4 {
                                    h = h.wrapping_add(0x9e37_79b9_7f4a_7c15);
                                    s += (crate::decode::mix(h) >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
                                }
                                (s * 3f64.sqrt() * std + offset) as f32
                            })
                            .collect();
                        Tensor::from_vec(v, shape, device)?
                    }
                    _ => (Tensor::randn(0f32, std as f32, shape, device)? + offset)?,
                };
                Ok(t.to_dtype(dtype)?)
            }
        }
    }
}
