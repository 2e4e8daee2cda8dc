//! Owned means owned (issue #30): the resources a graph holds list their tensors, and every
//! graph this crate captures proves, from its own nodes, that it owns every address it
//! uses.
//!
//! candle's ops record no borrow, so the compiler cannot stop a graph of candle work from
//! outliving a tensor it reads. [`CandleGraph`](crate::CandleGraph) owns its resources and
//! its step, and its step is `'static`; but a step can still reach a tensor through a
//! `Mutex`, a `static` or a thread-local, or through what its closure captured, and that
//! tensor can be replaced and freed after the capture. So after every capture the graph's
//! nodes are read (capture-core's [`own`](capture_core::own) proof) and every address in
//! them must be:
//!
//! - **graph memory**, allocated and freed by the graph itself (a step's intermediate
//!   tensors);
//! - **inside a tensor the resources list** ([`Resources`]): the graph holds the resources,
//!   and a type that lists its tensors cannot swap one through a shared reference;
//! - **an entry of candle's upload caches**, proven to be one by asking candle's cache for
//!   the same bytes and getting the same address back: entries of candle's layout cache
//!   live in a process-wide map candle never empties; entries of its upload cache live in a
//!   thread-local map it never empties, of the thread that captured — and a graph is not
//!   `Send`, so it is replayed on that thread only.
//!
//! Anything else refuses the graph with [`Error::Capture`](crate::Error::Capture) holding
//! [`capture_core::Error::NotOwned`], which names the node, the address and its allocation.

// `Resources` is an `unsafe trait`: implementing it is a promise (see its Safety section).
// Nothing in this file does an unsafe operation.
#![allow(unsafe_code)]

use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use candle_core::{DType, Device, Shape, Tensor};
use capture_core::diff::{GraphSnapshot, NodeKind, Target};
use capture_core::own::{self, Owners, OwnershipProof, Place, Unowned};
use capture_core::{CaptureMode, CaptureOptions};

use crate::error::Result;
use crate::stream::CandleStream;

/// Memory a [`CandleGraph`](crate::CandleGraph) can own: a type that lists every tensor it
/// holds, and cannot let one be replaced through a shared reference.
///
/// Implemented for [`Tensor`]; for `Arc`, `Rc`, `Box`, `&'static`, `Vec`, slices, arrays,
/// `Option` and tuples of resources; for plain data that holds no tensor (numbers, `bool`,
/// `String`, atomics, candle's `DType`, `Device` and `Shape`); for candle-nn's `Linear`,
/// `Embedding`, `LayerNorm` and `RmsNorm`; and for this crate's models, states and caches. Derive it for your own
/// structs and enums: `#[derive(capture_candle::Resources)]` requires it of every field.
///
/// There is no implementation for `Mutex`, `RwLock`, `RefCell`, `Cell`, `OnceCell` or
/// `OnceLock`: through any of them a tensor could be swapped after the capture, freeing the
/// memory the graph reads. This does not compile:
///
/// ```compile_fail,E0277
/// use std::sync::Mutex;
/// use candle_core::Tensor;
/// #[derive(capture_candle::Resources)]
/// struct Step {
///     w: Mutex<Tensor>, // error: `Mutex<Tensor>` cannot be held by a graph
///     y: Tensor,
/// }
/// ```
///
/// Nor through the other cells, nor as a direct resource:
///
/// ```compile_fail,E0277
/// fn held<R: capture_candle::Resources>(_: &R) {}
/// # let t = candle_core::Tensor::zeros(4, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
/// held(&std::sync::RwLock::new(t)); // error: `RwLock<Tensor>` cannot be held by a graph
/// ```
/// ```compile_fail,E0277
/// fn held<R: capture_candle::Resources>(_: &R) {}
/// # let t = candle_core::Tensor::zeros(4, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
/// held(&std::cell::RefCell::new(t)); // error: `RefCell<Tensor>` cannot be held by a graph
/// ```
/// ```compile_fail,E0277
/// fn held<R: capture_candle::Resources>(_: &R) {}
/// # let t = candle_core::Tensor::zeros(4, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
/// held(&std::cell::Cell::new(Some(t))); // error: `Cell<Option<Tensor>>` cannot be held by a graph
/// ```
/// ```compile_fail,E0277
/// fn held<R: capture_candle::Resources>(_: &R) {}
/// held(&std::sync::OnceLock::<candle_core::Tensor>::new()); // error: `OnceLock<Tensor>` cannot be held by a graph
/// ```
/// ```compile_fail,E0277
/// fn held<R: capture_candle::Resources>(_: &R) {}
/// # let t = candle_core::Tensor::zeros(4, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
/// held(&std::sync::Arc::new(std::sync::Mutex::new(t))); // error: `Mutex<Tensor>` cannot be held by a graph
/// ```
///
/// The same without the cell compiles:
///
/// ```
/// fn held<R: capture_candle::Resources>(_: &R) {}
/// # let t = candle_core::Tensor::zeros(4, candle_core::DType::F32, &candle_core::Device::Cpu).unwrap();
/// held(&std::sync::Arc::new((t.clone(), vec![t], 3usize)));
/// ```
///
/// # Safety
/// An implementation promises that [`visit_tensors`](Self::visit_tensors) visits every
/// tensor whose memory code holding `&Self` can reach, and that none of them can be
/// replaced, or its memory freed, through `&Self` while the value lives. A graph holding
/// the value relies on both: every address its nodes use must lie in a visited tensor (or
/// in memory proven otherwise owned), and the tensors visited at capture must still hold
/// that memory at every replay. (candle's in-place ops write into a tensor's memory and
/// keep it; a custom `InplaceOp` that replaces its storage with new memory breaks the
/// promise, and no implementation can stop it: don't run one on a resource.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be held by a graph: it does not list its tensors (`Resources`)",
    label = "not `Resources`",
    note = "a graph keeps its resources' tensors alive and refuses any other memory; a `Mutex`, `RwLock`, `RefCell`, \
            `Cell` or `OnceCell` could swap a tensor after the capture and free the memory the graph reads",
    note = "hold the tensor itself (or an `Arc` of it) in the resources, and write what changes between replays \
            into a tensor made before the capture; for a type of your own, `#[derive(capture_candle::Resources)]`"
)]
pub unsafe trait Resources {
    /// Calls `visitor` with every tensor held.
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor));
}

// SAFETY: a tensor visits itself. Its storage is reference-counted: holding the tensor holds
// the memory, and candle's own ops never replace a tensor's storage.
unsafe impl Resources for Tensor {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        visitor(self)
    }
}

macro_rules! through_pointer {
    ($($p:ident),*) => {$(
        // SAFETY: shared ownership (or a box) of a `Resources`: it lists what it points at,
        // and gives only shared access to it.
        unsafe impl<T: Resources + ?Sized> Resources for $p<T> {
            fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
                (**self).visit_tensors(visitor)
            }
        }
    )*};
}
through_pointer!(Arc, Rc, Box);

// SAFETY: a reference that lives for the whole program to a `Resources`.
unsafe impl<T: Resources + ?Sized> Resources for &'static T {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        (**self).visit_tensors(visitor)
    }
}

// SAFETY: every element is visited; a shared slice cannot be changed.
unsafe impl<T: Resources> Resources for [T] {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        self.iter().for_each(|t| t.visit_tensors(visitor))
    }
}

// SAFETY: as for slices.
unsafe impl<T: Resources, const N: usize> Resources for [T; N] {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        self.iter().for_each(|t| t.visit_tensors(visitor))
    }
}

// SAFETY: as for slices: a shared `Vec` cannot be changed.
unsafe impl<T: Resources> Resources for Vec<T> {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        self.iter().for_each(|t| t.visit_tensors(visitor))
    }
}

// SAFETY: the value, if any, is visited; a shared `Option` cannot be changed.
unsafe impl<T: Resources> Resources for Option<T> {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        if let Some(t) = self {
            t.visit_tensors(visitor)
        }
    }
}

macro_rules! tuples {
    ($(($($t:ident $i:tt),*)),*) => {$(
        // SAFETY: every element is visited; a shared tuple cannot be changed.
        unsafe impl<$($t: Resources),*> Resources for ($($t,)*) {
            fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
                $(self.$i.visit_tensors(visitor);)*
            }
        }
    )*};
}
tuples!(
    (A 0),
    (A 0, B 1),
    (A 0, B 1, C 2),
    (A 0, B 1, C 2, D 3),
    (A 0, B 1, C 2, D 3, E 4),
    (A 0, B 1, C 2, D 3, E 4, F 5),
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6),
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
);

macro_rules! no_tensors {
    ($($t:ty),* $(,)?) => {$(
        // SAFETY: holds no tensor.
        unsafe impl Resources for $t {
            fn visit_tensors(&self, _: &mut dyn FnMut(&Tensor)) {}
        }
    )*};
}
no_tensors!(
    (),
    bool,
    char,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
    i8,
    i16,
    i32,
    i64,
    i128,
    isize,
    f32,
    f64,
    str,
    String,
    Duration,
    // An atomic holds a number, never a tensor: a host value a step reads at capture (it
    // becomes a constant of the graph; see the capture diff), not memory the graph uses.
    std::sync::atomic::AtomicBool,
    std::sync::atomic::AtomicU32,
    std::sync::atomic::AtomicU64,
    std::sync::atomic::AtomicUsize,
    std::sync::atomic::AtomicI32,
    std::sync::atomic::AtomicI64,
    DType,
    Shape,
    // candle's device holds handles (its stream, cuBLAS, cuRAND, modules), never a tensor.
    Device,
    crate::model::Config,
    crate::model::Family,
    crate::decode::Llama3Scaling,
    crate::decode::RopeLayout,
    crate::decode::SamplingParams,
);

// SAFETY: holds no value at all.
unsafe impl<T: ?Sized> Resources for PhantomData<T> {
    fn visit_tensors(&self, _: &mut dyn FnMut(&Tensor)) {}
}

// SAFETY: a linear layer's weight and bias, which it gives out only by shared reference.
unsafe impl Resources for candle_nn::Linear {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        visitor(self.weight());
        if let Some(b) = self.bias() {
            visitor(b)
        }
    }
}

// SAFETY: a layer norm's weight and bias, which it gives out only by shared reference.
unsafe impl Resources for candle_nn::LayerNorm {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        visitor(self.weight());
        if let Some(b) = self.bias() {
            visitor(b)
        }
    }
}

// SAFETY: an RMS norm's weight, which it gives out only by shared reference.
unsafe impl Resources for candle_nn::RmsNorm {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        visitor(self.weight())
    }
}

// SAFETY: an embedding's table, which it gives out only by shared reference.
unsafe impl Resources for candle_nn::Embedding {
    fn visit_tensors(&self, visitor: &mut dyn FnMut(&Tensor)) {
        visitor(self.embeddings())
    }
}

/// How a graph's ownership was proved: capture-core's count of the addresses it checked,
/// what the resources listed, the candle cache entries proven, and what it cost.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Ownership {
    /// The addresses checked and where each was found.
    pub proof: OwnershipProof,
    /// CUDA tensors the resources listed (views of one memory counted once each).
    pub tensors: usize,
    /// Entries of candle's upload caches the graph uses, each proven by asking candle's
    /// cache for the same bytes and getting the same address back.
    pub cache_entries: usize,
    /// Reading the graph's nodes, checking every address, and proving the cache entries:
    /// paid once, at capture (replay costs nothing).
    pub time: Duration,
}

impl std::fmt::Display for Ownership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} resource tensors, {} candle cache entries proven) in {:.2} ms",
            self.proof,
            self.tensors,
            self.cache_entries,
            self.time.as_secs_f64() * 1e3
        )
    }
}

/// What the refusal says to do, in candle's terms.
const HINT: &str = "Hand every tensor the step reads or writes to the graph in its resources (a tuple, an `Arc`, a \
                    struct with `#[derive(capture_candle::Resources)]`), not through the step closure's captures, a \
                    `Mutex`, `RwLock` or `RefCell`, a `static` or a thread-local: those can be replaced or freed \
                    after the capture, and every replay would then read or write freed memory";

/// The memory `resources` holds: each CUDA tensor's whole storage (a view keeps all of it).
pub(crate) fn owners<R: Resources + ?Sized>(resources: &R) -> (Owners, usize) {
    let mut owners = Owners::new().with_hint(HINT);
    let mut tensors = 0;
    resources.visit_tensors(&mut |t| {
        if let Some((start, bytes)) = crate::raw::storage_range(t) {
            tensors += 1;
            owners.resource(start, bytes, format!("a {:?} {:?} tensor of the resources", t.dtype(), t.dims()));
        }
    });
    (owners, tensors)
}

impl CandleStream {
    /// Proves that `snapshot`'s graph owns every address it uses, given `resources` (see
    /// the [module](self)).
    pub(crate) fn prove_owned<R: Resources + ?Sized>(
        &mut self,
        snapshot: &GraphSnapshot,
        resources: &R,
    ) -> Result<Ownership> {
        let started = Instant::now();
        let (mut owners, tensors) = owners(resources);
        let (refused, _) = own::unowned(snapshot, &owners);
        let mut cache_entries = 0;
        if !refused.is_empty() {
            for (start, bytes, what) in self.candle_cache_entries(snapshot, &refused)? {
                owners.device_lifetime(start, bytes, what);
                cache_entries += 1;
            }
        }
        let proof = own::prove(snapshot, &owners)?;
        Ok(Ownership { proof, tensors, cache_entries, time: snapshot.describe_time + started.elapsed() })
    }

    /// Which of the `refused` uses are entries of candle's upload caches: each candidate's
    /// bytes are read, and candle's cache is asked for them while a throwaway capture is
    /// active (so that a miss adds nothing to it); a use is an entry only where the cache
    /// answers with the very same address.
    fn candle_cache_entries(
        &mut self,
        snapshot: &GraphSnapshot,
        refused: &[Unowned],
    ) -> Result<Vec<(u64, u64, String)>> {
        let dev = self.device().clone();
        let mut layout = Vec::new(); // (address, candidate keys)
        let mut uploads = Vec::new(); // (address, bytes)
        for u in refused {
            if !matches!(u.target, Target::Device { .. }) {
                continue;
            }
            let kernel = matches!(snapshot.nodes.get(u.node).map(|n| &n.kind), Some(NodeKind::Kernel(_)));
            match u.place {
                Place::Param(_) if kernel => {
                    // A layout entry is a list of usizes (dims and one or more strides: up
                    // to 4 lists of a rank up to 12): every length is a candidate key. Read
                    // as much as the allocation gives, up to 48 words (the driver refuses a
                    // read past the end of the allocation).
                    let bytes = (1..=48usize)
                        .rev()
                        .find_map(|n| crate::raw::read_device(&dev, u.addr, n * 8).ok())
                        .unwrap_or_default();
                    let words: Vec<usize> = bytes
                        .chunks_exact(8)
                        .map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8])) as usize)
                        .collect();
                    let keys = (1..=words.len()).map(|n| words[..n].to_vec()).collect::<Vec<_>>();
                    if !keys.is_empty() {
                        layout.push((u.addr, keys));
                    }
                }
                Place::CopySource if u.extent <= 4096 => {
                    if let Ok(bytes) = crate::raw::read_device(&dev, u.addr, u.extent as usize) {
                        uploads.push((u.addr, bytes));
                    }
                }
                _ => {}
            }
        }
        if layout.is_empty() && uploads.is_empty() {
            return Ok(Vec::new());
        }
        // Scratch destinations for the upload lookups, made before the throwaway capture.
        let mut scratch = crate::raw::CacheProbe::new(&dev, uploads.iter().map(|(_, b)| b.len()).max().unwrap_or(0))?;
        let mut proven = Vec::new();
        let options = CaptureOptions::new().mode(CaptureMode::ThreadLocal);
        let probe = self.capture_with(options)?;
        for (addr, keys) in &layout {
            for key in keys {
                if crate::raw::layout_cache_entry(&dev, key.clone()) == Some(*addr) {
                    proven.push((
                        *addr,
                        (key.len() * 8) as u64,
                        "an entry of candle's layout cache (`[dims, strides]`), \
                                 kept in a process-wide map that candle never empties"
                            .to_owned(),
                    ));
                    break;
                }
            }
        }
        for (_, bytes) in &uploads {
            scratch.look_up(&dev, bytes);
        }
        // The lookups that hit recorded a copy from the cache entry: its address is the
        // entry's.
        let copied_from: Vec<u64> = match probe.finish_snapshot() {
            Ok((snap, ..)) => snap
                .nodes
                .iter()
                .filter_map(|n| match n.kind {
                    NodeKind::Copy { src: Target::Device { base, offset }, .. } => Some(base + offset),
                    _ => None,
                })
                .collect(),
            Err(_) => Vec::new(), // nothing recorded: no lookup hit
        };
        for (addr, bytes) in &uploads {
            if copied_from.contains(addr) {
                proven.push((
                    *addr,
                    bytes.len() as u64,
                    "an entry of candle's upload cache, kept in a thread-local map \
                             of the capturing thread that candle never empties (the graph is not `Send`)"
                        .to_owned(),
                ));
            }
        }
        Ok(proven)
    }
}
