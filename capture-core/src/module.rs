//! PTX modules, kernels, launch configurations and typed kernel arguments.

use std::fmt;
use std::sync::Arc;

use std::marker::PhantomData;

use cudarc::driver::{CudaFunction, CudaModule};

use crate::buffer::GraphBuffer;
use crate::device::{RawFunction, RawModule};
use crate::error::{Error, Result};
use crate::handle::Handle;
use crate::interop::{DeviceMemory, MemCtx};
use crate::ptx::{self, KernelSignature, ParamClass};

pub(crate) struct ModuleInner {
    ctx: Handle,
    raw: RawModule,
    sigs: Vec<KernelSignature>,
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        if let Err(code) = self.ctx.b().module_unload(self.raw) {
            log::error!("capture-core: unloading a module failed: {code}");
        }
    }
}

/// A loaded PTX module. Kernels taken from it keep it loaded.
#[derive(Clone)]
pub struct Module {
    inner: Arc<ModuleInner>,
}

impl fmt::Debug for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Module").field("kernels", &self.kernel_names()).finish()
    }
}

impl Module {
    pub(crate) fn load(ctx: &Handle, text: &str) -> Result<Self> {
        let sigs = ptx::parse(text).map_err(|reason| Error::InvalidPtx { reason })?;
        let raw = ctx.b().module_load(text).map_err(|code| Error::InvalidPtx {
            reason: format!(
                "the driver rejected it with {code}; check that the PTX `.version` is supported by this driver and `.target` by this GPU"
            ),
        })?;
        Ok(Self { inner: Arc::new(ModuleInner { ctx: ctx.clone(), raw, sigs }) })
    }

    /// The names of the module's kernels.
    pub fn kernel_names(&self) -> Vec<&str> {
        self.inner.sigs.iter().map(|k| k.name.as_str()).collect()
    }

    /// The kernel named `name`.
    ///
    /// # Errors
    /// [`Error::KernelNotFound`] listing the kernels the module has.
    pub fn kernel(&self, name: &str) -> Result<Kernel> {
        let Some(idx) = self.inner.sigs.iter().position(|k| k.name == name) else {
            return Err(Error::KernelNotFound { name: name.to_owned(), available: self.kernel_names().join(", ") });
        };
        let raw = self
            .inner
            .ctx
            .b()
            .module_function(self.inner.raw, name)
            .map_err(|code| Error::Driver { op: "cuModuleGetFunction", code })?;
        let sig = Arc::new(self.inner.sigs[idx].clone());
        Ok(Kernel::with_sig(self.inner.ctx.clone(), Keep::Module(self.inner.clone()), raw, sig, true))
    }
}

/// What keeps a kernel's code loaded (held, never read).
#[derive(Clone)]
#[allow(dead_code)]
pub(crate) enum Keep {
    /// A module loaded by this crate.
    Module(Arc<ModuleInner>),
    /// A cudarc function (it holds its module).
    Cudarc(Arc<CudaFunction>),
}

/// A kernel of a loaded module (or a cudarc function), with its parameter list.
#[derive(Clone)]
pub struct Kernel {
    ctx: Handle,
    _keep: Keep,
    pub(crate) raw: RawFunction,
    sig: Arc<KernelSignature>,
    /// Whether the parameter list is known (false for a cudarc function without its PTX).
    checked: bool,
    /// Parameter sizes in bytes, read from the PTX once, for the per-launch check.
    sizes: [u8; MAX_KERNEL_ARGS],
    /// Per parameter, the argument classes it accepts (bit `ParamClass as u8`).
    accept: [u8; MAX_KERNEL_ARGS],
    /// Number of parameters, or `usize::MAX` when no launch can match (more than
    /// `MAX_KERNEL_ARGS` parameters, or one wider than a slot); `check_args` then says why.
    nparams: usize,
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Kernel({}: {})", self.name(), self.signature().describe())
    }
}

impl Kernel {
    pub(crate) fn with_sig(
        ctx: Handle,
        keep: Keep,
        raw: RawFunction,
        sig: Arc<KernelSignature>,
        checked: bool,
    ) -> Self {
        let params = &sig.params;
        let mut sizes = [0u8; MAX_KERNEL_ARGS];
        let mut accept = [0u8; MAX_KERNEL_ARGS];
        for ((s, a), p) in sizes.iter_mut().zip(accept.iter_mut()).zip(params) {
            *s = u8::try_from(p.bytes).unwrap_or(u8::MAX);
            *a = p.class.accept_mask();
        }
        let launchable = params.len() <= MAX_KERNEL_ARGS && params.iter().all(|p| p.bytes <= 8);
        let nparams = if launchable { params.len() } else { usize::MAX };
        Self { ctx, _keep: keep, raw, sig, checked, sizes, accept, nparams }
    }

    /// [`Kernel::from_cudarc`], on the handle of the context.
    pub(crate) fn from_cudarc_in(ctx: &Handle, function: CudaFunction, name: &str, ptx: Option<&str>) -> Result<Self> {
        if ctx.cudarc().is_none() {
            return Err(Error::ContextMismatch { op: "Kernel::from_cudarc", what: "cudarc function" });
        }
        let (sig, checked) = match ptx {
            Some(text) => {
                let sigs = ptx::parse(text).map_err(|reason| Error::InvalidPtx { reason })?;
                let names: Vec<&str> = sigs.iter().map(|k| k.name.as_str()).collect();
                let Some(sig) = sigs.iter().find(|k| k.name == name) else {
                    return Err(Error::KernelNotFound { name: name.to_owned(), available: names.join(", ") });
                };
                (sig.clone(), true)
            }
            None => (KernelSignature { name: name.to_owned(), params: Vec::new() }, false),
        };
        let raw = RawFunction(function.cu_function() as usize);
        Ok(Self::with_sig(ctx.clone(), Keep::Cudarc(Arc::new(function)), raw, Arc::new(sig), checked))
    }

    /// [`Kernel::from_cudarc_module`], on the handle of the context.
    pub(crate) fn from_cudarc_module_in(
        ctx: &Handle,
        module: &Arc<CudaModule>,
        name: &str,
        ptx: Option<&str>,
    ) -> Result<Self> {
        if ctx.cudarc().is_none() {
            return Err(Error::ContextMismatch { op: "Kernel::from_cudarc_module", what: "cudarc module" });
        }
        let f = module
            .load_function(name)
            .map_err(|e| Error::Driver { op: "cuModuleGetFunction", code: crate::error::DriverCode(e.0 as u32) })?;
        Self::from_cudarc_in(ctx, f, name, ptx)
    }

    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.sig.name
    }
    /// The kernel's parameters as read from the PTX (empty for a cudarc function given
    /// without its PTX; see [`is_checked`](Self::is_checked)).
    pub fn signature(&self) -> &KernelSignature {
        &self.sig
    }
    /// Whether launches are checked against a known parameter list.
    pub fn is_checked(&self) -> bool {
        self.checked
    }
    #[inline]
    pub(crate) fn context(&self) -> &Handle {
        &self.ctx
    }

    /// Whether packed arguments match the parameter list in number, sizes and type classes:
    /// the per-launch check, against what is cached in the kernel. When it fails,
    /// [`mismatch`] builds the error.
    #[inline]
    pub(crate) fn args_match(&self, sizes: &[u8], classes: &[u8]) -> bool {
        if !self.checked {
            return true;
        }
        sizes.len() == self.nparams
            && sizes == &self.sizes[..sizes.len()]
            && classes.iter().zip(&self.accept).all(|(c, a)| (a >> c) & 1 == 1)
    }
}

/// Grid and block dimensions and dynamic shared memory of a launch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LaunchConfig {
    /// Blocks in the grid.
    pub grid: (u32, u32, u32),
    /// Threads per block.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory per block, bytes.
    pub shared_mem_bytes: u32,
}

/// cudarc's launch configuration, so code that already builds one keeps it.
impl From<cudarc::driver::LaunchConfig> for LaunchConfig {
    fn from(c: cudarc::driver::LaunchConfig) -> Self {
        Self { grid: c.grid_dim, block: c.block_dim, shared_mem_bytes: c.shared_mem_bytes }
    }
}

impl LaunchConfig {
    /// One thread per element, 256 threads a block (at least one block).
    pub fn for_num_elems(n: u32) -> Self {
        Self { grid: (n.div_ceil(256).max(1), 1, 1), block: (256, 1, 1), shared_mem_bytes: 0 }
    }

    #[inline]
    pub(crate) fn validate(&self) -> Result<()> {
        let bad = |reason| Err(Error::InvalidLaunchConfig { grid: self.grid, block: self.block, reason });
        let (g, b) = (self.grid, self.block);
        if g.0 == 0 || g.1 == 0 || g.2 == 0 || b.0 == 0 || b.1 == 0 || b.2 == 0 {
            return bad("every dimension must be at least 1");
        }
        if u64::from(b.0) * u64::from(b.1) * u64::from(b.2) > 1024 {
            return bad("a block has at most 1024 threads");
        }
        if b.2 > 64 {
            return bad("block z is at most 64");
        }
        if g.1 > 65535 || g.2 > 65535 {
            return bad("grid y and z are at most 65535");
        }
        Ok(())
    }
}

/// What a launch knows when it packs its arguments.
#[doc(hidden)]
pub struct ArgCx<'c> {
    pub(crate) ctx: &'c Handle,
    /// The active capture's id, 0 when the stream is idle.
    pub(crate) capture: u64,
}

/// One kernel argument, ready to be checked against the kernel's PTX parameter and packed.
///
/// An opaque value built by safe constructors: [`KernelParam::from`] a number (passed by
/// value), [`KernelParam::device_ptr`] of any [`DeviceMemory`] (passed as its device address,
/// and *borrowed for `'a`*: when captured, the graph cannot outlive it),
/// [`KernelParam::graph_buffer`] for memory allocated inside the capture, and the `unsafe`
/// [`KernelParam::raw_device_ptr`] for an address the library cannot see the owner of.
#[derive(Copy, Clone)]
pub struct KernelParam<'a> {
    pub(crate) kind: ParamKind,
    _borrow: PhantomData<&'a ()>,
}

#[derive(Copy, Clone, Debug)]
pub(crate) enum ParamKind {
    Scalar { bits: u64, size: u8, class: ParamClass, what: &'static str },
    Memory { ptr: u64, ctx: MemCtx },
    Graph { ptr: u64, capture: u64, freed: bool },
    Raw(u64),
}

impl fmt::Debug for KernelParam<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KernelParam({})", self.describe())
    }
}

#[cold]
fn foreign_memory() -> Error {
    Error::ContextMismatch { op: "Stream::launch", what: "device buffer" }
}

#[cold]
fn foreign_graph_buffer(buffer_capture: u64, freed: bool, capture: u64) -> Error {
    let used_in = if capture == 0 {
        "an eager launch".to_owned()
    } else if freed {
        format!("capture #{capture} after `free_async`")
    } else {
        format!("capture #{capture}")
    };
    Error::ForeignGraphBuffer { buffer_capture, used_in }
}

impl<'a> KernelParam<'a> {
    #[inline(always)]
    pub(crate) fn new(kind: ParamKind) -> Self {
        Self { kind, _borrow: PhantomData }
    }

    /// The device address of `mem`, borrowed for `'a`: a graph that records a launch with it
    /// cannot outlive `mem`. Accepts this crate's buffers and cudarc's `CudaSlice`,
    /// `CudaView` and `CudaViewMut` (and references, `Arc`, `Rc` and `Box` of them).
    #[inline]
    pub fn device_ptr<M: DeviceMemory + ?Sized>(mem: &'a M) -> Self {
        let m = mem.mem_ref();
        Self::new(ParamKind::Memory { ptr: m.ptr, ctx: m.ctx })
    }

    /// The device address `byte_offset` bytes into `mem`, borrowed for `'a` like
    /// [`device_ptr`](Self::device_ptr).
    ///
    /// A capture records the address as it is: an offset computed on the host (a decode
    /// position times a stride, say) is a constant of the graph, and every replay uses it.
    /// To index by a value that changes from replay to replay, pass the base and read the
    /// index from device memory in the kernel; a [capture diff](crate::diff) names offsets
    /// that were baked in.
    ///
    /// # Errors
    /// [`Error::OffsetOutOfBounds`] when `byte_offset` is not inside `mem`.
    pub fn device_ptr_at<M: DeviceMemory + ?Sized>(mem: &'a M, byte_offset: usize) -> Result<Self> {
        let m = mem.mem_ref();
        if byte_offset >= m.bytes {
            return Err(Error::OffsetOutOfBounds {
                op: "KernelParam::device_ptr_at",
                offset: byte_offset,
                bytes: m.bytes,
            });
        }
        Ok(Self::new(ParamKind::Memory { ptr: m.ptr + byte_offset as u64, ctx: m.ctx }))
    }

    /// The address of graph memory allocated in the capture being recorded. Graph memory
    /// belongs to the graph, so no borrow is taken; using it in another capture or an eager
    /// launch is [`Error::ForeignGraphBuffer`].
    #[inline]
    pub fn graph_buffer<T>(buf: &GraphBuffer<T>) -> Self {
        Self::new(ParamKind::Graph { ptr: buf.ptr.0, capture: buf.capture, freed: buf.freed })
    }

    /// What the argument is, for error messages ("f32", "device pointer", …).
    pub fn describe(&self) -> &'static str {
        match self.kind {
            ParamKind::Scalar { what, .. } => what,
            ParamKind::Memory { .. } => "device pointer",
            ParamKind::Graph { .. } => "graph buffer pointer",
            ParamKind::Raw(_) => "raw device pointer",
        }
    }

    /// The argument's type class (`Pointer` for every address).
    pub fn class(&self) -> ParamClass {
        match self.kind {
            ParamKind::Scalar { class, .. } => class,
            _ => ParamClass::Pointer,
        }
    }

    /// The slot's bits, size and type class, checked against the launch's context/capture.
    /// On every launch's path: kept small (errors built out of line) so that it inlines.
    #[inline(always)]
    pub(crate) fn slot(&self, cx: &ArgCx<'_>) -> Result<(u64, u8, ParamClass)> {
        match self.kind {
            ParamKind::Scalar { bits, size, class, .. } => Ok((bits, size, class)),
            ParamKind::Memory { ptr, ctx } => {
                if !ctx.matches(cx.ctx) {
                    return Err(foreign_memory());
                }
                Ok((ptr, 8, ParamClass::Pointer))
            }
            ParamKind::Graph { ptr, capture, freed } => {
                if capture != cx.capture || freed {
                    return Err(foreign_graph_buffer(capture, freed, cx.capture));
                }
                Ok((ptr, 8, ParamClass::Pointer))
            }
            ParamKind::Raw(ptr) => Ok((ptr, 8, ParamClass::Pointer)),
        }
    }
}

macro_rules! scalar_param {
    ($($t:ty => $what:literal, $class:ident),* $(,)?) => {$(
        impl From<$t> for KernelParam<'_> {
            /// Passed by value.
            #[inline]
            fn from(v: $t) -> Self {
                let mut bits = [0u8; 8];
                let b = v.to_le_bytes();
                bits[..b.len()].copy_from_slice(&b);
                Self::new(ParamKind::Scalar {
                    bits: u64::from_le_bytes(bits),
                    size: b.len() as u8,
                    class: ParamClass::$class,
                    what: $what,
                })
            }
        }
        impl KernelArg<'_> for $t {
            #[inline]
            fn to_param(&self) -> KernelParam<'static> {
                KernelParam::from(*self)
            }
        }
    )*};
}
scalar_param!(u8 => "u8", Unsigned, i8 => "i8", Signed, u16 => "u16", Unsigned, i16 => "i16", Signed,
    u32 => "u32", Unsigned, i32 => "i32", Signed, f32 => "f32", Float, u64 => "u64", Unsigned,
    i64 => "i64", Signed, f64 => "f64", Float);

/// A value that can be passed to a kernel: a public contract users may implement for their
/// own types.
///
/// Implemented for numbers (passed by value) and for references to any [`DeviceMemory`] —
/// this crate's buffers and cudarc's `CudaSlice`/`CudaView`/`CudaViewMut` — passed as a
/// device pointer and borrowed for `'a` (by the graph, when captured).
///
/// A tensor type that owns device memory becomes an argument by handing out a borrow of it:
///
/// ```
/// use capture_core::{DeviceBuffer, KernelArg, KernelParam};
///
/// struct Tensor {
///     data: DeviceBuffer<f32>,
///     shape: Vec<usize>,
/// }
///
/// impl<'a> KernelArg<'a> for &'a Tensor {
///     fn to_param(&self) -> KernelParam<'a> {
///         KernelParam::device_ptr(&self.data) // borrowed for 'a: a graph cannot outlive the tensor
///     }
/// }
/// ```
///
/// `to_param` must return a [`KernelParam`] borrowed for `'a`, so an implementation for an
/// owned value (`impl<'a> KernelArg<'a> for Tensor`) cannot hand out its memory: it does
/// not compile (ui test `kernel_arg_that_does_not_borrow`).
pub trait KernelArg<'a> {
    /// The argument as a kernel parameter.
    fn to_param(&self) -> KernelParam<'a>;
}

impl<'a, M: DeviceMemory + ?Sized> KernelArg<'a> for &'a M {
    #[inline]
    fn to_param(&self) -> KernelParam<'a> {
        KernelParam::device_ptr(*self)
    }
}

// An output passed as `&mut` (as cudarc code often does): borrowed exclusively for 'a.
impl<'a, M: DeviceMemory + ?Sized> KernelArg<'a> for &'a mut M {
    #[inline]
    fn to_param(&self) -> KernelParam<'a> {
        let m = (**self).mem_ref();
        KernelParam::new(ParamKind::Memory { ptr: m.ptr, ctx: m.ctx })
    }
}

// Graph memory belongs to the graph, not to the caller: no borrow for 'a is needed (and
// none is taken, so the buffer can still be moved into `free_async`).
impl<'a, T> KernelArg<'a> for &GraphBuffer<T> {
    #[inline]
    fn to_param(&self) -> KernelParam<'a> {
        KernelParam::graph_buffer(self)
    }
}

impl<'a> KernelArg<'a> for KernelParam<'a> {
    #[inline]
    fn to_param(&self) -> KernelParam<'a> {
        *self
    }
}

pub use crate::raw::handles::MAX_KERNEL_ARGS;

/// A tuple of [`KernelArg`]s: `()`, `(a,)`, `(a, b)`, … up to twelve.
pub trait KernelArgs<'a> {
    /// Packs the arguments' bits, sizes and classes; returns how many there are.
    #[doc(hidden)]
    fn pack(
        &self,
        cx: &ArgCx<'_>,
        bits: &mut [u64; MAX_KERNEL_ARGS],
        sizes: &mut [u8; MAX_KERNEL_ARGS],
        classes: &mut [u8; MAX_KERNEL_ARGS],
    ) -> Result<usize>;
    /// What each argument is, for error messages.
    #[doc(hidden)]
    fn describe(&self) -> Vec<(&'static str, ParamClass)>;
}

macro_rules! tuple_args {
    ($($n:tt $name:ident),*) => {
        impl<'a, $($name: KernelArg<'a>),*> KernelArgs<'a> for ($($name,)*) {
            #[allow(unused_variables, unused_mut)]
            #[inline]
            fn pack(
                &self,
                cx: &ArgCx<'_>,
                bits: &mut [u64; MAX_KERNEL_ARGS],
                sizes: &mut [u8; MAX_KERNEL_ARGS],
                classes: &mut [u8; MAX_KERNEL_ARGS],
            ) -> Result<usize> {
                let mut i = 0;
                $(
                    let (b, s, c) = self.$n.to_param().slot(cx)?;
                    (bits[i], sizes[i], classes[i]) = (b, s, c as u8);
                    i += 1;
                )*
                Ok(i)
            }
            fn describe(&self) -> Vec<(&'static str, ParamClass)> {
                vec![$({
                    let p = self.$n.to_param();
                    (p.describe(), p.class())
                }),*]
            }
        }
    };
}
tuple_args!();
tuple_args!(0 A);
tuple_args!(0 A, 1 B);
tuple_args!(0 A, 1 B, 2 C);
tuple_args!(0 A, 1 B, 2 C, 3 D);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K);
tuple_args!(0 A, 1 B, 2 C, 3 D, 4 E, 5 F, 6 G, 7 H, 8 I, 9 J, 10 K, 11 L);

/// The error for arguments that do not match the kernel's PTX signature (the slow path;
/// launches check [`Kernel::args_match`] first).
#[cold]
pub(crate) fn mismatch(kernel: &Kernel, sizes: &[u8], what: &[(&'static str, ParamClass)]) -> Error {
    let sig = kernel.signature();
    let given: Vec<String> = sizes.iter().zip(what).map(|(b, w)| format!("{} ({b} bytes)", w.0)).collect();
    let expected: Vec<String> = sig.params.iter().map(|p| format!(".{} ({} bytes)", p.ty, p.bytes)).collect();
    let reason = if sizes.len() != sig.params.len() {
        format!("{} argument(s) for {} parameter(s)", sizes.len(), sig.params.len())
    } else if sig.params.len() > MAX_KERNEL_ARGS {
        format!("the kernel has more than {MAX_KERNEL_ARGS} parameters, the most a launch takes")
    } else {
        let bad = sig
            .params
            .iter()
            .zip(sizes.iter().zip(what))
            .enumerate()
            .find(|(_, (p, (b, w)))| p.bytes != usize::from(**b) || !p.class.accepts(w.1));
        match bad {
            Some((i, (p, (b, w)))) => {
                let name = if p.name.is_empty() { String::new() } else { format!(" `{}`", p.name) };
                if p.class == ParamClass::Aggregate {
                    format!(
                        "parameter {i}{name} is a by-value aggregate `.{}`, which no launch argument can fill",
                        p.ty
                    )
                } else if p.bytes != usize::from(*b) {
                    format!(
                        "parameter {i}{name} is `.{}` ({} bytes) but argument {i} is {} ({b} bytes)",
                        p.ty, p.bytes, w.0
                    )
                } else {
                    format!(
                        "parameter {i}{name} is `.{}` ({}) but argument {i} is {} ({}); pass a value of the parameter's type",
                        p.ty,
                        p.class.describe(),
                        w.0,
                        w.1.describe()
                    )
                }
            }
            None => "the arguments do not match".to_owned(),
        }
    };
    Error::ArgumentMismatch {
        kernel: sig.name.clone(),
        expected: format!("{} parameter(s): [{}]", expected.len(), expected.join(", ")),
        given: format!("{} argument(s): [{}]", given.len(), given.join(", ")),
        reason,
    }
}
