//! Mistakes in `#[capturable(...)]`: an unknown key lists the valid ones, a key given twice says
//! so, and `allow` needs a reason.

use capture_core::{capturable, Capturing, Error, Stream};

#[capturable(deny(synchronize))]
fn unknown_key<'a>(_stream: &mut Stream<Capturing<'a>>) -> Result<(), Error> {
    Ok(())
}

#[capturable(allow(query), allow(synchronize), reason = "host-side profiler calls")]
fn duplicate_key<'a>(_stream: &mut Stream<Capturing<'a>>) -> Result<(), Error> {
    Ok(())
}

#[capturable(allow(synchronize))]
fn allow_without_reason<'a>(_stream: &mut Stream<Capturing<'a>>) -> Result<(), Error> {
    Ok(())
}

fn main() {}
