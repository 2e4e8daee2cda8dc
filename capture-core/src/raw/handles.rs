//! Handles and plain values as the driver takes and gives them: the vocabulary shared by the raw
//! FFI functions, the CUDA and simulated backends ([`crate::device`]) and the safe types above.
//! Nothing here is `unsafe`; it sits in the raw layer so that the layer knows nothing above it.

/// A stream handle (`CUstream` as an integer on the GPU; an index on the simulated device).
#[doc(hidden)]
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct RawStream(pub(crate) usize);
/// An event handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawEvent(pub usize);
/// A module handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawModule(pub usize);
/// A function handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawFunction(pub usize);
/// A graph handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawGraph(pub usize);
/// An executable-graph handle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct RawExec(pub usize);
/// A device address.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct DevPtr(pub u64);
/// A host allocation (pinned or managed) address.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct HostPtr(pub usize);

/// The capture mode, as `cuStreamBeginCapture` takes it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CaptureMode {
    /// Potentially unsafe calls (allocation, free, synchronous copies to the legacy stream…)
    /// fail on every thread of the process while the capture lasts. The safest; the default.
    #[default]
    Global,
    /// Potentially unsafe calls fail on the capturing thread only.
    ThreadLocal,
    /// No calls are prohibited beyond those that touch the capturing stream itself.
    Relaxed,
}

/// The driver's view of a stream's capture.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CaptureStatus {
    None,
    Active,
    Invalidated,
}

/// The kind of graph node, for counting.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct NodeCounts {
    /// All nodes.
    pub total: usize,
    /// Kernel nodes.
    pub kernels: usize,
    /// Copy nodes.
    pub memcpy: usize,
    /// Memset nodes.
    pub memset: usize,
    /// Host-function nodes.
    pub host: usize,
    /// Memory allocation nodes.
    pub mem_alloc: usize,
    /// Memory free nodes.
    pub mem_free: usize,
    /// Event record / wait and empty nodes, and any other kind.
    pub other: usize,
    /// Conditional nodes (IF, WHILE), each counted once whatever its bodies hold.
    pub conditional: usize,
}

/// The kinds of conditional node the library records.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum CondKind {
    /// The body runs when the condition is non-zero (a second body, when given, otherwise).
    If,
    /// The body runs while the condition is non-zero, tested before each iteration.
    While,
}

/// Advice for a managed range.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Preferred location: this context's device.
    PreferDevice,
    /// Accessed by the host (CPU) too: mapped there, so host access does not migrate it.
    AccessedByHost,
}

/// A column-major single-precision GEMM: `C = alpha * op(A) * op(B) + beta * C`.
#[derive(Copy, Clone, Debug)]
#[cfg_attr(not(feature = "cublas"), allow(dead_code))]
pub(crate) struct Gemm {
    pub trans_a: bool,
    pub trans_b: bool,
    pub m: i32,
    pub n: i32,
    pub k: i32,
    pub alpha: f32,
    pub a: DevPtr,
    pub lda: i32,
    pub b: DevPtr,
    pub ldb: i32,
    pub beta: f32,
    pub c: DevPtr,
    pub ldc: i32,
}

/// Instantiation flags as the backends take them (`CUgraphInstantiate_flags`).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct InstFlags {
    /// `CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH`.
    pub auto_free: bool,
    /// `CUDA_GRAPH_INSTANTIATE_FLAG_UPLOAD` (needs the upload stream).
    pub upload: bool,
    /// `CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH`.
    pub device_launch: bool,
    /// `CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY`.
    pub node_priority: bool,
}

/// Kernel launch geometry and parameter bytes (each argument in one 8-byte slot).
pub(crate) struct LaunchParams<'p> {
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub shared_mem_bytes: u32,
    pub slots: &'p mut [u64],
}

/// A graph copy node whose host side is pageable memory.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct HostCopy {
    /// Bytes copied.
    pub bytes: usize,
    /// Host to device (else device to host).
    pub to_device: bool,
}

/// The most arguments a launch takes.
pub const MAX_KERNEL_ARGS: usize = 12;
