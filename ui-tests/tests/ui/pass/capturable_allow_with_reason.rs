//! `allow(...)` with a reason: a profiler's own `query` method shares a name with the stream
//! query that `#[capturable]` rejects.

use capture_core::{capturable, Capturing, DeviceBuffer, Error, Stream};

pub struct Profiler;

impl Profiler {
    /// Looks up a host-side timer by name; touches no GPU state.
    pub fn query(&self, _name: &str) -> Option<f64> {
        None
    }
}

#[capturable(allow(query), reason = "Profiler::query reads a host-side table, not the stream")]
pub fn step<'a>(stream: &mut Stream<Capturing<'a>>, prof: &Profiler, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    let _ = prof.query("decode");
    stream.memset_async(buf, 0)
}

fn main() {
    let _ = step;
}
