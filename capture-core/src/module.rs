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
        Ok(Kernel { module: self.inner.clone(), raw, idx })
    }
}

/// A kernel of a loaded module, with its parameter list.
#[derive(Clone)]
pub struct Kernel {
    module: Arc<ModuleInner>,
    pub(crate) raw: RawFunction,
    idx: usize,
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
    pub(crate) fn context(&self) -> &Context {
        &self.module.ctx
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

/// One packed kernel argument.
#[doc(hidden)]
#[derive(Copy, Clone, Debug)]
pub struct ArgSlot {
    pub(crate) bits: u64,
    pub(crate) bytes: usize,
    pub(crate) what: &'static str,
}

/// A value that can be passed to a kernel. Implemented for references to device buffers
/// (passed as a device pointer, and borrowed for `'a`: by the graph, when captured) and for
/// numeric scalars (passed by value).
pub trait KernelArg<'a> {
    #[doc(hidden)]
    fn slot(&self, cx: &ArgCx<'_>) -> Result<ArgSlot>;
}

impl<'a, T> KernelArg<'a> for &'a DeviceBuffer<T> {
    fn slot(&self, cx: &ArgCx<'_>) -> Result<ArgSlot> {
        if !self.ctx.same(cx.ctx) {
            return Err(Error::ContextMismatch { op: "Stream::launch", what: "device buffer" });
        }
        Ok(ArgSlot { bits: self.ptr.0, bytes: 8, what: "device pointer" })
    }
}

// Graph memory belongs to the graph, not to the caller: no borrow for 'a is needed (and
// none is taken, so the buffer can still be moved into `free_async`).
impl<'a, T> KernelArg<'a> for &GraphBuffer<T> {
    fn slot(&self, cx: &ArgCx<'_>) -> Result<ArgSlot> {
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
        Ok(ArgSlot { bits: self.ptr.0, bytes: 8, what: "graph buffer pointer" })
    }
}

macro_rules! scalar_arg {
    ($($t:ty => $what:literal),* $(,)?) => {$(
        impl KernelArg<'_> for $t {
            fn slot(&self, _: &ArgCx<'_>) -> Result<ArgSlot> {
                let mut bits = [0u8; 8];
                let b = self.to_le_bytes();
                bits[..b.len()].copy_from_slice(&b);
                Ok(ArgSlot { bits: u64::from_le_bytes(bits), bytes: b.len(), what: $what })
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
    #[doc(hidden)]
    fn pack(&self, cx: &ArgCx<'_>, out: &mut [ArgSlot; MAX_KERNEL_ARGS]) -> Result<usize>;
}

macro_rules! tuple_args {
    ($($n:tt $name:ident),*) => {
        impl<'a, $($name: KernelArg<'a>),*> KernelArgs<'a> for ($($name,)*) {
            #[allow(unused_variables, unused_mut)]
            fn pack(&self, cx: &ArgCx<'_>, out: &mut [ArgSlot; MAX_KERNEL_ARGS]) -> Result<usize> {
                let mut i = 0;
                $( out[i] = self.$n.slot(cx)?; i += 1; )*
                Ok(i)
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

/// Checks packed arguments against the kernel's PTX signature.
pub(crate) fn check_args(kernel: &Kernel, args: &[ArgSlot]) -> Result<()> {
    let sig = kernel.signature();
    let ok = sig.params.len() == args.len() && sig.params.iter().zip(args).all(|(p, a)| p.bytes == a.bytes);
    if ok {
        return Ok(());
    }
    let given: Vec<String> = args.iter().map(|a| format!("{} ({} bytes)", a.what, a.bytes)).collect();
    let expected: Vec<String> = sig.params.iter().map(|p| format!("{} ({} bytes)", p.ty, p.bytes)).collect();
    Err(Error::ArgumentMismatch {
        kernel: sig.name.clone(),
        expected: format!("{} parameter(s): [{}]", expected.len(), expected.join(", ")),
        given: format!("{} argument(s): [{}]", given.len(), given.join(", ")),
    })
}
