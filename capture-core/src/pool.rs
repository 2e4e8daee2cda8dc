//! `CapturePool`: named workspaces allocated before capture, then sealed.

use std::any::Any;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use bytemuck::Pod;

use crate::buffer::DeviceBuffer;
use crate::context::Context;
use crate::error::{CallSite, Error, Result};
use crate::state::StreamState;
use crate::stream::Stream;

struct Slot {
    len: usize,
    type_name: &'static str,
    buf: Arc<dyn Any + Send + Sync>,
}

/// Named device workspaces for code that allocates lazily on first use (a scratch buffer, a
/// library's workspace): allocate each once before capture, [`seal`](Self::seal) the pool,
/// and every later request is served from the pool — or, if it asks for a workspace that
/// was not allocated beforehand, fails with [`Error::PoolSealed`] naming it and the call
/// site, instead of calling `cuMemAlloc` inside a capture (which invalidates it, or hangs
/// on some systems).
pub struct CapturePool {
    ctx: Context,
    slots: Mutex<HashMap<String, Slot>>,
    sealed: std::sync::atomic::AtomicBool,
}

impl fmt::Debug for CapturePool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names: Vec<String> = self.lock().keys().cloned().collect();
        f.debug_struct("CapturePool").field("sealed", &self.is_sealed()).field("workspaces", &names).finish()
    }
}

impl CapturePool {
    /// An empty, unsealed pool on `ctx`.
    pub fn new(ctx: &Context) -> Self {
        Self { ctx: ctx.clone(), slots: Mutex::new(HashMap::new()), sealed: false.into() }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Seals the pool: no workspace can be added until [`unseal`](Self::unseal).
    pub fn seal(&self) {
        self.sealed.store(true, std::sync::atomic::Ordering::Release);
    }

    /// Unseals the pool (outside capture, to add workspaces).
    pub fn unseal(&self) {
        self.sealed.store(false, std::sync::atomic::Ordering::Release);
    }

    /// Whether the pool is sealed.
    pub fn is_sealed(&self) -> bool {
        self.sealed.load(std::sync::atomic::Ordering::Acquire)
    }

    /// The workspace `name` of `len` elements of `T`: the one allocated earlier, or — on an
    /// idle stream, with the pool unsealed — a new zeroed one. Works on a stream in any
    /// state, so lazily-initialising code can call it on the hot path.
    ///
    /// # Errors
    /// [`Error::PoolSealed`] when the workspace does not exist and the pool is sealed or the
    /// stream is capturing; [`Error::WorkspaceMismatch`] when it exists with another type or
    /// length; allocation errors.
    #[track_caller]
    pub fn workspace<T: Pod + Send + Sync, S: StreamState>(
        &self,
        stream: &mut Stream<S>,
        name: &str,
        len: usize,
    ) -> Result<Arc<DeviceBuffer<T>>> {
        let site = CallSite::caller();
        if !self.ctx.same(&stream.ctx) {
            return Err(Error::ContextMismatch { op: "CapturePool::workspace", what: "stream" });
        }
        let mut slots = self.lock();
        if let Some(slot) = slots.get(name) {
            return match slot.buf.clone().downcast::<DeviceBuffer<T>>() {
                Ok(buf) if slot.len == len => Ok(buf),
                _ => Err(Error::WorkspaceMismatch {
                    name: name.to_owned(),
                    have: format!("{} x {}", slot.len, slot.type_name),
                    want: format!("{len} x {}", std::any::type_name::<T>()),
                }),
            };
        }
        let capturing = S::capture_id(&stream.ext) != 0;
        if self.is_sealed() || capturing {
            return Err(Error::PoolSealed {
                name: name.to_owned(),
                bytes: len.saturating_mul(std::mem::size_of::<T>()),
                site,
                capturing,
            });
        }
        stream.ctx.fail_fast("CapturePool::workspace", site)?;
        let buf = Arc::new(stream.alloc_zeros_at::<T>("CapturePool::workspace", site, len)?);
        slots.insert(
            name.to_owned(),
            Slot { len, type_name: std::any::type_name::<T>(), buf: buf.clone() as Arc<dyn Any + Send + Sync> },
        );
        Ok(buf)
    }
}
