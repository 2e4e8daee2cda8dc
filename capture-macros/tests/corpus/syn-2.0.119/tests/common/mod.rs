#![allow(dead_code)]
#![allow(clippy::module_name_repetitions, clippy::shadow_unrelated)]

pub mod eq;
pub mod parse;
pub mod visit;
