//! Engine-grade graphs: graphs that own what they use, families of graphs per batch-size
//! bucket sharing one memory pool, and capture-or-eager fallback.
//!
//! A serving engine captures at start-up and replays for the life of the process. It
//! needs graphs it can keep in its own struct ([`OwnedGraph`]), one per batch-size bucket
//! with the batch padded to the next bucket and the graph memory shared across buckets
//! ([`GraphFamily`]), and a way to keep serving when a region cannot be captured
//! ([`Fallback`]).

mod fallback;
mod family;
mod owned;

pub use fallback::{Fallback, FallbackReason, Path, Region};
pub use family::{BucketStats, FamilyBuilder, FamilyStats, FamilySummary, GraphFamily, Selection};
pub use owned::OwnedGraph;
