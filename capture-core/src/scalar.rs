//! `DeviceScalar<T>`: a value a graph reads by address, updated before each replay.

use std::fmt;

use bytemuck::Pod;

use crate::buffer::{DeviceBuffer, PinnedBuffer};
use crate::error::{Error, Result};
use crate::event::Event;
use crate::interop::{sealed, DeviceMemory, MemRef};
use crate::state::Idle;
use crate::stream::Stream;

/// A single value in device memory that a captured kernel reads *by address*, so a graph
/// can be replayed with a new value each time (a decode loop's position, a step counter)
/// without re-capturing.
///
/// [`set`](Self::set) writes the value into a pinned staging buffer and enqueues an async
/// copy to the device on the stream you replay the graph on, so the copy is ordered before
/// the next replay; before touching the staging buffer it waits for the previous copy to
/// have read it.
///
/// ```
/// # use capture_core::*;
/// # fn main() -> Result<()> {
/// # let ctx = Context::simulated();
/// # kernels::register_chain_kernels(ctx.sim().unwrap());
/// # let mut stream = ctx.new_stream()?;
/// # let module = ctx.load_module(kernels::CHAIN_PTX)?;
/// let add_pos = module.kernel("add_scalar_from_ptr_f32")?; // x[i] += *pos
/// let x = stream.alloc_zeros::<f32>(256)?;
/// let pos = DeviceScalar::new(&mut stream, 0u32)?;
/// let mut g = stream.capture()?;
/// g.launch(&add_pos, LaunchConfig::for_num_elems(256), (&x, &pos, 256u32))?;
/// let (graph, _) = g.finish()?;
/// for step in 1..=3u32 {
///     pos.set(&mut stream, step)?;
///     graph.launch(&mut stream)?;
/// }
/// assert_eq!(stream.download(&x)?[0], 6.0);
/// # Ok(()) }
/// ```
pub struct DeviceScalar<T> {
    pub(crate) dev: DeviceBuffer<T>,
    staging: PinnedBuffer<T>,
    copied: Event,
}

impl<T> fmt::Debug for DeviceScalar<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DeviceScalar<{}>({:#x})", std::any::type_name::<T>(), self.dev.ptr.0)
    }
}

impl<T: Pod> DeviceScalar<T> {
    /// Allocates the scalar (device and pinned staging memory) holding `initial`.
    ///
    /// # Errors
    /// Allocation errors ([`Error::Driver`]).
    pub fn new(stream: &mut Stream<Idle>, initial: T) -> Result<Self> {
        let dev = stream.upload_new(&[initial])?;
        let staging = stream.alloc_pinned::<T>(1)?;
        let copied = Event::new(&stream.ctx)?;
        Ok(Self { dev, staging, copied })
    }

    /// Sets the value the next replay on `stream` reads (asynchronously, in stream order).
    ///
    /// # Errors
    /// [`Error::ContextMismatch`], [`Error::Driver`].
    #[track_caller]
    pub fn set(&self, stream: &mut Stream<Idle>, value: T) -> Result<()> {
        if !self.dev.ctx.same(&stream.ctx.h) {
            return Err(Error::ContextMismatch { op: "DeviceScalar::set", what: "stream" });
        }
        // The previous copy must have read the staging buffer before it is overwritten.
        stream.wait_for_event(&self.copied)?;
        self.staging.write(&[value])?;
        stream.upload_async(&self.dev, &self.staging)?;
        stream.record_event(&self.copied)
    }

    /// Reads the value after `stream`'s pending work.
    ///
    /// # Errors
    /// [`Error::Driver`].
    pub fn get(&self, stream: &mut Stream<Idle>) -> Result<T> {
        Ok(stream.download(&self.dev)?[0])
    }

    /// The device buffer holding the value.
    pub fn buffer(&self) -> &DeviceBuffer<T> {
        &self.dev
    }
}

impl<T> sealed::Sealed for DeviceScalar<T> {
    #[inline]
    fn mem_ref(&self) -> MemRef {
        self.dev.mem_ref()
    }
}
impl<T> DeviceMemory for DeviceScalar<T> {
    type Elem = T;
}
