//! Events: ordering between streams, inside and outside a capture, and timing.

use std::fmt;

use crate::device::RawEvent;
use crate::error::{Error, Result};
use crate::handle::Handle;

/// A CUDA event. Record it on one stream, wait on it from another; inside a capture that is
/// how a forked stream's work is ordered. Query and wait on it from the host only through an
/// idle stream ([`Stream::event_complete`](crate::Stream::event_complete),
/// [`Stream::wait_for_event`](crate::Stream::wait_for_event)).
pub struct Event {
    pub(crate) ctx: Handle,
    pub(crate) raw: RawEvent,
}

impl fmt::Debug for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Event")
    }
}

impl Event {
    /// Creates an event with timing enabled (the public form is
    /// [`Event::new`], on a [`Context`](crate::Context)).
    pub(crate) fn create(ctx: &Handle) -> Result<Self> {
        let raw = ctx.b().event_create(true).map_err(|code| Error::Driver { op: "cuEventCreate", code })?;
        Ok(Self { ctx: ctx.clone(), raw })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        if let Err(code) = self.ctx.b().event_destroy(self.raw) {
            log::error!("capture-core: destroying an event failed: {code}");
        }
    }
}
