//! The capture guard for candle work.

use std::ops::{Deref, DerefMut};

use capture_core::{CaptureGuard, CaptureReport, Capturing, Graph, Stream};

use crate::error::{Error, Result};

/// A capture of candle's stream: candle ops issued while it lives are recorded into the
/// graph, and so is what is issued on the guard itself (it dereferences to capture-core's
/// capturing stream). Dropping it without [`finish`](Self::finish) ends the capture and
/// leaves the stream idle, as capture-core's guard does.
///
/// While it lives, candle's host-upload cache is on: small uploads are served from device
/// copies made during warm-up, and an upload never seen then fails the step.
pub struct CandleCapture<'s, 'a> {
    // Field order is drop order: the capture ends before candle's cache is turned off.
    guard: CaptureGuard<'s, 'a>,
    // candle's `CudaGraphHtodCacheGuard`, which candle does not export by name.
    _cache: Box<dyn std::any::Any>,
}

impl<'s, 'a> CandleCapture<'s, 'a> {
    pub(crate) fn new(guard: CaptureGuard<'s, 'a>, cache: Box<dyn std::any::Any>) -> Self {
        Self { guard, _cache: cache }
    }

    /// Borrows `value` for the graph's lifetime: the finished graph cannot outlive it, and it
    /// cannot be dropped or moved while the graph lives. Pass what the captured candle ops
    /// read and write — the model, its KV cache, input and output tensors — since candle
    /// ops do not borrow through capture-core.
    pub fn uses<T: ?Sized>(&mut self, value: &'a T) {
        let _ = value;
    }

    /// Ends the capture and instantiates the graph.
    ///
    /// # Errors
    /// [`Error::UnfreedGraphMemory`] when a tensor created during the capture is still
    /// alive (its memory would stay allocated after the graph runs, and the next replay
    /// would fail); every error of
    /// [`CaptureGuard::finish`](capture_core::CaptureGuard::finish).
    pub fn finish(self) -> Result<(Graph<'a>, CaptureReport)> {
        let Self { guard, _cache } = self;
        let (graph, report) = guard.finish()?;
        drop(_cache);
        let nodes = report.nodes;
        if nodes.mem_alloc > nodes.mem_free {
            return Err(Error::UnfreedGraphMemory {
                allocs: nodes.mem_alloc,
                frees: nodes.mem_free,
                unfreed: nodes.mem_alloc - nodes.mem_free,
            });
        }
        Ok((graph, report))
    }
}

impl<'a> Deref for CandleCapture<'_, 'a> {
    type Target = Stream<Capturing<'a>>;
    fn deref(&self) -> &Stream<Capturing<'a>> {
        &self.guard
    }
}

impl<'a> DerefMut for CandleCapture<'_, 'a> {
    fn deref_mut(&mut self) -> &mut Stream<Capturing<'a>> {
        &mut self.guard
    }
}
