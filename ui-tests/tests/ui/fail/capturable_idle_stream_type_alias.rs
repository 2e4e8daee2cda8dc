//! Issue #13, item 2: a type alias does not hide an idle stream from `#[capturable]`, nor does a
//! smart pointer around it.

use capture_core::{capturable, DeviceBuffer, Error, Idle, Stream};
use std::rc::Rc;

type IdleStream = Stream<Idle>;
type Shared = Rc<IdleStream>;

#[capturable]
fn clear<'a>(s: &mut IdleStream, buf: &'a DeviceBuffer<f32>) -> Result<(), Error> {
    s.memset_async(buf, 0)
}

#[capturable]
fn hold(s: Box<IdleStream>, shared: &Shared) {
    drop((s, shared));
}

fn main() {}
