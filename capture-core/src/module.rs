//! PTX modules, kernels, launch configurations and typed kernel arguments.

use std::fmt;
use std::sync::Arc;

use crate::buffer::{DeviceBuffer, GraphBuffer};
use crate::context::Context;
use crate::device::{RawFunction, RawModule};
use crate::error::{Error, Result};
use crate::ptx::{self, KernelSignature};

pub(crate) struct ModuleInner {
    ctx: Context,
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
    pub(crate) fn load(ctx: &Context, text: &str) -> Result<Self> {
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
        let params = &self.inner.sigs[idx].params;
        let mut sizes = [0u8; MAX_KERNEL_ARGS];
        for (s, p) in sizes.iter_mut().zip(params) {
            *s = u8::try_from(p.bytes).unwrap_or(u8::MAX);
        }
        let launchable = params.len() <= MAX_KERNEL_ARGS && params.iter().all(|p| p.bytes <= 8);
        let nparams = if launchable { params.len() } else { usize::MAX };
        Ok(Kernel { module: self.inner.clone(), raw, idx, sizes, nparams })
    }
}

/// A kernel of a loaded module, with its parameter list.
#[derive(Clone)]
pub struct Kernel {
    module: Arc<ModuleInner>,
    pub(crate) raw: RawFunction,
    idx: usize,
    /// Parameter sizes in bytes, read from the PTX once, for the per-launch check.
    sizes: [u8; MAX_KERNEL_ARGS],
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
    /// The kernel's name.
    pub fn name(&self) -> &str {
        &self.signature().name
    }
    /// The kernel's parameters as read from the PTX.
    pub fn signature(&self) -> &KernelSignature {
        &self.module.sigs[self.idx]
    }
    #[inline]
    pub(crate) fn context(&self) -> &Context {
        &self.module.ctx
    }

    /// Whether packed arguments match the parameter list in number and sizes: the
    /// per-launch check, against the sizes cached in the kernel. When it fails,
    /// [`check_args`] builds the error.
    #[inline]
    pub(crate) fn args_match(&self, sizes: &[u8]) -> bool {
        sizes.len() == self.nparams && sizes == &self.sizes[..sizes.len()]
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
    pub(crate) ctx: &'c Context,
    /// The active capture's id, 0 when the stream is idle.
    pub(crate) capture: u64,
}

/// A value that can be passed to a kernel. Implemented for references to device buffers
/// (passed as a device pointer, and borrowed for `'a`: by the graph, when captured) and for
/// numeric scalars (passed by value).
pub trait KernelArg<'a> {
    /// The argument's bits (in the low bytes, little-endian) and size in bytes.
    #[doc(hidden)]
    fn slot(&self, cx: &ArgCx<'_>) -> Result<(u64, u8)>;
    /// What the argument is, for error messages.
    #[doc(hidden)]
    fn describe(&self) -> &'static str;
}

impl<'a, T> KernelArg<'a> for &'a DeviceBuffer<T> {
    #[inline]
    fn slot(&self, cx: &ArgCx<'_>) -> Result<(u64, u8)> {
        if !self.ctx.same(cx.ctx) {
            return Err(Error::ContextMismatch { op: "Stream::launch", what: "device buffer" });
        }
        Ok((self.ptr.0, 8))
    }
    fn describe(&self) -> &'static str {
        "device pointer"
    }
}

// Graph memory belongs to the graph, not to the caller: no borrow for 'a is needed (and
// none is taken, so the buffer can still be moved into `free_async`).
impl<'a, T> KernelArg<'a> for &GraphBuffer<T> {
    #[inline]
    fn slot(&self, cx: &ArgCx<'_>) -> Result<(u64, u8)> {
        if self.capture != cx.capture || self.freed {
            let used_in = if cx.capture == 0 {
                "an eager launch".to_owned()
            } else if self.freed {
                format!("capture #{} after `free_async`", cx.capture)
            } else {
                format!("capture #{}", cx.capture)
            };
            return Err(Error::ForeignGraphBuffer { buffer_capture: self.capture, used_in });
        }
        Ok((self.ptr.0, 8))
    }
    fn describe(&self) -> &'static str {
        "graph buffer pointer"
    }
}

macro_rules! scalar_arg {
    ($($t:ty => $what:literal),* $(,)?) => {$(
        impl KernelArg<'_> for $t {
            #[inline]
            fn slot(&self, _: &ArgCx<'_>) -> Result<(u64, u8)> {
                let mut bits = [0u8; 8];
                let b = self.to_le_bytes();
                bits[..b.len()].copy_from_slice(&b);
                Ok((u64::from_le_bytes(bits), b.len() as u8))
            }
            fn describe(&self) -> &'static str {
                $what
            }
        }
    )*};
}
scalar_arg!(u8 => "u8", i8 => "i8", u16 => "u16", i16 => "i16", u32 => "u32", i32 => "i32",
    f32 => "f32", u64 => "u64", i64 => "i64", f64 => "f64");

/// The most arguments a launch takes.
pub const MAX_KERNEL_ARGS: usize = 12;

/// A tuple of [`KernelArg`]s: `()`, `(a,)`, `(a, b)`, … up to twelve.
pub trait KernelArgs<'a> {
    /// Packs the arguments' bits and sizes; returns how many there are.
    #[doc(hidden)]
    fn pack(
        &self,
        cx: &ArgCx<'_>,
        bits: &mut [u64; MAX_KERNEL_ARGS],
        sizes: &mut [u8; MAX_KERNEL_ARGS],
    ) -> Result<usize>;
    /// What each argument is, for error messages.
    #[doc(hidden)]
    fn describe(&self) -> Vec<&'static str>;
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
            ) -> Result<usize> {
                let mut i = 0;
                $( (bits[i], sizes[i]) = self.$n.slot(cx)?; i += 1; )*
                Ok(i)
            }
            fn describe(&self) -> Vec<&'static str> {
                vec![$(self.$n.describe()),*]
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
pub(crate) fn mismatch(kernel: &Kernel, sizes: &[u8], what: &[&'static str]) -> Error {
    let sig = kernel.signature();
    let given: Vec<String> = sizes.iter().zip(what).map(|(b, w)| format!("{w} ({b} bytes)")).collect();
    let expected: Vec<String> = sig.params.iter().map(|p| format!("{} ({} bytes)", p.ty, p.bytes)).collect();
    Error::ArgumentMismatch {
        kernel: sig.name.clone(),
        expected: format!("{} parameter(s): [{}]", expected.len(), expected.join(", ")),
        given: format!("{} argument(s): [{}]", given.len(), given.join(", ")),
    }
}
