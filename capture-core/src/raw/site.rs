//! Where in the caller's code an operation was issued. A plain value, kept at the bottom
//! because every layer names it: the simulated device labels graph nodes with it.

use std::fmt;
use std::panic::Location;

/// Where in the caller's code an operation was issued (`#[track_caller]`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct CallSite {
    /// Source file.
    pub file: &'static str,
    /// Line, 1-based.
    pub line: u32,
    /// Column, 1-based.
    pub column: u32,
}

impl CallSite {
    /// The call site of the function this is called from (which must be `#[track_caller]`).
    #[track_caller]
    pub fn caller() -> Self {
        let l = Location::caller();
        Self { file: l.file(), line: l.line(), column: l.column() }
    }
}

impl fmt::Display for CallSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.column)
    }
}
