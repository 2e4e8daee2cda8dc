//! The examples are in this folder: `cargo run --example 01_capture_and_replay`.
