//! Unit tests that span layers: they use the crate's private items from above every layer.

mod conformance;
mod diff_edges;
mod opaque_params;
