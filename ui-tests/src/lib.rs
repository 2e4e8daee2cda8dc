//! Compile-fail and compile-pass tests (trybuild) live in `tests/ui/`.
