//! Typed errors. Every variant says what went wrong and what to do about it.

use std::fmt;

/// A result whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

pub use crate::raw::code::DriverCode;

pub use crate::raw::site::CallSite;

/// An operation and where it was issued: what invalidated a capture, what ran eagerly
/// during one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpSite {
    /// The library operation, e.g. `"Stream::alloc_zeros"`.
    pub op: &'static str,
    /// Where the caller issued it.
    pub site: CallSite,
}

impl fmt::Display for OpSite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` at {}", self.op, self.site)
    }
}

/// A use of memory a graph does not own, as [`Error::NotOwned`] reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NotOwned {
    /// The capture's id.
    pub capture: u64,
    /// The node's index in the graph, in creation order.
    pub node: usize,
    /// What the node is: "kernel `affine_f32`", "256-byte copy", …
    pub node_kind: String,
    /// The library operation that recorded it and its call site, where known.
    pub op: Option<OpSite>,
    /// Where in the node the address is: "parameter 2", "the word at byte 40 of parameter
    /// 0", "the copy's source", …
    pub place: String,
    /// The address.
    pub addr: u64,
    /// The allocation the address falls in, as the device names it.
    pub allocation: crate::device::snapshot::Target,
    /// How many other uses of memory the graph does not own the proof found.
    pub more: usize,
    /// What to do, in the words of the integration that asked for the proof.
    pub hint: String,
}

impl fmt::Display for NotOwned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "capture #{}: node {}, {}", self.capture, self.node, self.node_kind)?;
        if let Some(op) = &self.op {
            write!(f, " ({op})")?;
        }
        write!(f, ": {} is {:#x}, {}, which the graph does not own", self.place, self.addr, self.allocation)?;
        if self.more > 0 {
            write!(f, " (and {} more such use(s))", self.more)?;
        }
        write!(f, ". {}", self.hint)
    }
}

/// Everything that can go wrong, each variant with what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The CUDA driver library could not be loaded.
    #[error("the CUDA driver (libcuda.so) could not be loaded: install an NVIDIA driver, or use `Context::simulated()` / `Context::open_default()` to run on the simulated device")]
    NoDriver,

    /// The driver is present but has no device with that ordinal.
    #[error("no CUDA device with ordinal {ordinal} ({count} present): pick an ordinal below {count}, or use `Context::open_default()` to fall back to the simulated device")]
    NoDevice {
        /// The ordinal asked for.
        ordinal: usize,
        /// How many devices the driver reports.
        count: usize,
    },

    /// A driver call failed.
    #[error("`{op}` failed with {code}{}", hint_for(*code))]
    Driver {
        /// The operation that failed.
        op: &'static str,
        /// The driver's result code.
        code: DriverCode,
    },

    /// Host memory for a copy out of the device could not be allocated.
    #[error("`{op}` needs {bytes} bytes of host memory and the host could not allocate them: copy the buffer out in parts (`download_into` a smaller slice of a smaller buffer), or free host memory")]
    HostOutOfMemory {
        /// The operation.
        op: &'static str,
        /// Bytes it needed.
        bytes: usize,
    },

    /// An allocation of zero elements was asked for.
    #[error("`{op}` asked for 0 elements: CUDA cannot allocate zero bytes; skip the allocation or ask for at least one element")]
    ZeroSizedAllocation {
        /// The allocating operation.
        op: &'static str,
    },

    /// An allocation larger than the device's memory.
    #[error("`{op}` asked for {requested} bytes but the device has {total} bytes in all ({free} free): allocate less, or split the buffer")]
    AllocationTooLarge {
        /// The allocating operation.
        op: &'static str,
        /// Bytes asked for.
        requested: usize,
        /// Bytes the device has.
        total: usize,
        /// Bytes free when asked.
        free: usize,
    },

    /// Element count times element size overflows `usize`.
    #[error("`{op}`: {len} elements of {elem_size} bytes overflow the address space; ask for fewer elements")]
    SizeOverflow {
        /// The operation.
        op: &'static str,
        /// Elements asked for.
        len: usize,
        /// Bytes per element.
        elem_size: usize,
    },

    /// Two buffers (or a buffer and a host slice) of different lengths.
    #[error("`{op}`: length mismatch, destination has {dst} elements and source has {src}; copy between buffers of equal length")]
    LengthMismatch {
        /// The operation.
        op: &'static str,
        /// Destination length.
        dst: usize,
        /// Source length.
        src: usize,
    },

    /// An offset into device memory past its end.
    #[error("`{op}`: offset {offset} is past the end of a {bytes}-byte buffer; give an offset below its size")]
    OffsetOutOfBounds {
        /// The operation.
        op: &'static str,
        /// The offset asked for, in bytes.
        offset: usize,
        /// The buffer's size, in bytes.
        bytes: usize,
    },

    /// The kernel is not in the module.
    #[error("no kernel named `{name}` in this module (it has: {available}); check the spelling and that the kernel is `extern \"C\"` so its name is not mangled")]
    KernelNotFound {
        /// The name asked for.
        name: String,
        /// The kernels the module has.
        available: String,
    },

    /// The PTX text could not be understood or loaded.
    #[error("the PTX module could not be loaded: {reason}")]
    InvalidPtx {
        /// What was wrong.
        reason: String,
    },

    /// A kernel was launched with arguments that do not match its parameters.
    #[error("kernel `{kernel}` was launched with arguments that do not match its parameters: {reason}. It takes {expected} and was given {given}; pass arguments whose number, sizes and types (float, signed, unsigned, pointer) match the kernel's `.param` list")]
    ArgumentMismatch {
        /// The first disagreement, naming the parameter (its index and PTX name) and the
        /// argument given for it.
        reason: String,
        /// The kernel.
        kernel: String,
        /// The kernel's parameters, described.
        expected: String,
        /// The arguments given, described.
        given: String,
    },

    /// A launch configuration the device cannot run.
    #[error("invalid launch configuration {grid:?}x{block:?}: {reason}")]
    InvalidLaunchConfig {
        /// Grid dimensions.
        grid: (u32, u32, u32),
        /// Block dimensions.
        block: (u32, u32, u32),
        /// Why.
        reason: &'static str,
    },

    /// The stream is already capturing (for example a cudarc stream wrapped twice).
    #[error("this stream is already capturing: finish or drop the existing capture guard before starting another capture on it")]
    AlreadyCapturing,

    /// An object of one context was used with another.
    #[error("`{op}`: the {what} belongs to a different context than the stream; use objects of one context together")]
    ContextMismatch {
        /// The operation.
        op: &'static str,
        /// Which object.
        what: &'static str,
    },

    /// A synchronous operation was refused because a capture that prohibits it is active
    /// (a Global-mode capture anywhere in the process, or a ThreadLocal-mode capture on this
    /// thread). The driver was not called, and the capture is intact.
    #[error("{op} was refused: capture #{capture} ({mode:?} mode, begun at {began_at}) is active, and this synchronous operation would invalidate it (or hang on some systems); do it before `capture()` or after `finish()`, or capture in `CaptureMode::Relaxed`")]
    CaptureActive {
        /// The refused operation and where it was issued.
        op: OpSite,
        /// The active capture's id.
        capture: u64,
        /// Its mode.
        mode: crate::device::CaptureMode,
        /// Where it began.
        began_at: CallSite,
    },

    /// The capture was invalidated by an illegal operation.
    #[error("the capture was invalidated{}: {code}{}; nothing was recorded into a graph. {}; the stream is idle again and usable", cause_text(cause, *cause_code), last_op_text(last_op), invalidation_hint(cause_code.unwrap_or(*code), cause.is_some()))]
    CaptureInvalidated {
        /// The operation that invalidated it, where known.
        cause: Option<OpSite>,
        /// The driver code that operation failed with, where known (e.g.
        /// `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`); `code` is then usually
        /// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`, the code of the end of capture.
        cause_code: Option<DriverCode>,
        /// The last operation this library saw recorded before the capture ended: work
        /// issued behind the library's back (through cudarc or a framework on the same
        /// stream) happened after it.
        last_op: Option<OpSite>,
        /// The driver code that reported it.
        code: DriverCode,
    },

    /// A stream forked into the capture was never joined back.
    #[error("a stream forked into the capture at {fork_site} was not joined back: call `join(side)` on the origin stream before `finish()`")]
    UnjoinedFork {
        /// Where the fork was made.
        fork_site: CallSite,
    },

    /// The capture's allocation policy is `Deny` and the capture asked for memory.
    #[error("`{op}` at {site} allocates {bytes} bytes during a capture whose policy is `AllocPolicy::Deny`: allocate before `capture()`, or capture with `AllocPolicy::Warn`/`Allow`")]
    AllocationDenied {
        /// The operation.
        op: &'static str,
        /// Bytes asked for.
        bytes: usize,
        /// Where.
        site: CallSite,
    },

    /// A graph buffer of one capture was used outside it.
    #[error("a `GraphBuffer` allocated in capture #{buffer_capture} was used in {used_in}: graph memory exists only inside the graph that allocated it; allocate it again in this capture, or use a `DeviceBuffer` allocated before capture")]
    ForeignGraphBuffer {
        /// The capture the buffer came from.
        buffer_capture: u64,
        /// Where it was used.
        used_in: String,
    },

    /// A workspace was asked of a sealed pool (or during capture) that was not allocated
    /// beforehand.
    #[error("workspace `{name}` ({bytes} bytes) requested at {site} was not allocated before {}: request it once on an idle stream before sealing the pool and capturing", if *capturing { "the capture began" } else { "the pool was sealed" })]
    PoolSealed {
        /// The workspace's name.
        name: String,
        /// Bytes asked for.
        bytes: usize,
        /// Where.
        site: CallSite,
        /// Whether the request came from a capturing stream.
        capturing: bool,
    },

    /// A pool workspace exists with another type or length.
    #[error("workspace `{name}` exists as {have} but {want} was asked for: use one name per buffer shape")]
    WorkspaceMismatch {
        /// The workspace's name.
        name: String,
        /// What it is.
        have: String,
        /// What was asked.
        want: String,
    },

    /// A GEMM whose shapes do not fit its buffers.
    #[error("invalid GEMM: {reason}")]
    InvalidGemm {
        /// What does not fit.
        reason: String,
    },

    /// An operation on a capturing stream whose capture has already ended: a stream forked
    /// from a guard that was finished or dropped, or the stream of a capture ended by
    /// [`Context::end_dangling_captures`](crate::Context::end_dangling_captures). Nothing
    /// was issued to the driver (the stream is no longer recording, so the work would run
    /// eagerly and be missing from every replay).
    #[error("`{op}` was refused: capture #{capture} has already ended, so this stream records into no graph (work on it would run once, now, and be missing from every replay); issue the work before `finish()`, join forked streams back before it, and drop them with the capture")]
    CaptureEnded {
        /// The refused operation.
        op: &'static str,
        /// The capture that ended.
        capture: u64,
    },

    /// A loop or branch body of this capture failed (an error, a panic, a stream swapped in
    /// it): the capture is lost, and its streams — forks made inside the body included —
    /// take no more work (work on a stream whose body recording ended would run eagerly).
    #[error("`{op}` was refused: capture #{capture} is lost, a loop or branch body of it failed ({cause}); drop its guard and capture again")]
    CaptureLost {
        /// The refused operation.
        op: &'static str,
        /// The capture.
        capture: u64,
        /// The loop or branch whose body failed, and where.
        cause: OpSite,
    },

    /// The capturing stream inside a guard was swapped with another one (for example
    /// `std::mem::swap(g1.stream(), g2.stream())`), so the guard no longer holds the stream
    /// of the capture it began. The capture was ended and discarded.
    #[error("capture #{capture}'s guard no longer holds its own capturing stream (it holds {found}): the streams of two guards were swapped (e.g. `std::mem::swap(g1.stream(), g2.stream())`), so work meant for one graph would land in the other's; the capture was ended and its graph discarded — issue work through each guard's own stream, and never move or swap a guard's stream")]
    CaptureStreamSwapped {
        /// The capture the guard began.
        capture: u64,
        /// What the guard holds instead, described.
        found: String,
    },

    /// One of the two captures of a capture diff
    /// ([`Stream::capture_diff`](crate::Stream::capture_diff)) failed: the step cannot be
    /// captured at all, which the error it carries names.
    #[error("capture {run} of the two a capture diff makes failed, so the graphs cannot be compared: {source}")]
    DiffCaptureFailed {
        /// Which capture failed: 1 (the first) or 2 (after the host inputs changed).
        run: u8,
        /// Why it failed.
        source: Box<Error>,
    },

    /// The ownership proof refused a graph: a node uses an address that is neither graph
    /// memory nor inside memory the graph was declared to own
    /// ([`own::prove`](crate::own::prove)). Replaying it could read or write memory that
    /// whoever really holds it frees or reuses after the capture.
    #[error("{0}")]
    NotOwned(Box<NotOwned>),

    /// The capture recorded nothing.
    #[error("the capture recorded no work, so there is no graph to replay: issue at least one operation on the capturing stream before `finish()`")]
    EmptyCapture,

    /// A replay check found an element where the graph's replay disagrees with the same
    /// work run eagerly on the same inputs ([`ReplayCheck`](crate::validate::ReplayCheck)).
    #[error("the graph's replay diverged from the eager run on output `{output}`, input set {input_set}, element {element}: eager {eager}, replay {replay} ({differing} of {len} elements differ). This usually means a host value was baked in at capture time: a position, length or step passed to a kernel by value or folded into a pointer offset (read it from device memory instead, e.g. a `DeviceScalar` set before each replay), or a small host-to-device upload served once (a synchronous copy during capture runs once and is not in the graph, see `CaptureReport::ran_eagerly`; a copy captured from host memory re-reads that same memory at each replay: write the fresh value into the `PinnedBuffer` the graph copies from). A replayed value that an earlier input set (or the capture) would give is a value the graph never refreshes")]
    ReplayDiverged {
        /// The output's name, as given to [`Outputs::with`](crate::validate::Outputs::with).
        output: String,
        /// The input set (0-based) whose outputs disagree.
        input_set: usize,
        /// The first element (0-based) that disagrees.
        element: usize,
        /// The eager run's value there.
        eager: crate::element::Scalar,
        /// The replay's value there.
        replay: crate::element::Scalar,
        /// How many elements of this output disagree.
        differing: usize,
        /// The output's length.
        len: usize,
    },

    /// The replay's outputs and the eager run's outputs do not have the same names,
    /// lengths or element types, so they cannot be compared.
    #[error("output `{output}` of input set {input_set} has a different shape after the replay ({replay}) than after the eager run ({eager}): `read_outputs` must return the same outputs, in the same order, with the same lengths and element types each time; read fixed-size buffers rather than sizes computed from the inputs")]
    OutputShapeChanged {
        /// The output's name (both names, where they differ).
        output: String,
        /// The input set (0-based).
        input_set: usize,
        /// `"<len> x <type>"` after the eager run, or `"absent"`.
        eager: String,
        /// `"<len> x <type>"` after the replay, or `"absent"`.
        replay: String,
    },

    /// A graph family was asked for with a bucket list it cannot use.
    #[error("invalid bucket list {buckets:?}: {reason}")]
    InvalidBuckets {
        /// The list as given.
        buckets: Vec<usize>,
        /// What is wrong and what to do.
        reason: &'static str,
    },

    /// A file could not be read or written (a graph picture, the driver's DOT output).
    #[error("`{op}` could not use the file `{path}`: {source}; check that the directory exists and is writable, or pick another path")]
    Io {
        /// The operation.
        op: &'static str,
        /// The file.
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// Instantiation flags that cannot be combined
    /// ([`InstantiateFlags`](crate::InstantiateFlags)). Checked when the capture begins, before
    /// any work is recorded.
    #[error("invalid instantiate flags: {reason}")]
    InvalidInstantiateFlags {
        /// What is wrong and what to do.
        reason: &'static str,
    },

    /// A batch is larger than the largest bucket of the family. Nothing was launched: a
    /// batch is never truncated to fit.
    #[error("a batch of {size} is larger than the largest bucket ({largest}) of this graph family: capture the family with a bucket of at least {size}, or split the batch into parts of at most {largest}")]
    NoBucketFits {
        /// The batch size asked for.
        size: usize,
        /// The family's largest bucket.
        largest: usize,
    },

    /// A batch of size 0 was asked for: there is nothing to run.
    #[error("a batch of size 0 was asked for: skip the launch when there is no work (a family's smallest bucket is at least 1)")]
    EmptyBatch,

    /// The capture recorded work a graph instantiated for device launch may not hold
    /// ([`InstantiateFlags::device_launch`](crate::InstantiateFlags::device_launch)). The
    /// graph was discarded; the stream is idle again.
    #[error("the graph cannot be instantiated for device launch: it holds {found}. A device-launchable graph may hold only kernel, memcpy and memset nodes (copies between device memory or pinned host memory) of one context (https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html#group__CUDA__GRAPH_1g070bf5517d3a7915667c256eefce4956); allocate before `capture()` instead of `alloc_async`, upload through a `PinnedBuffer`, or instantiate without `device_launch`")]
    DeviceLaunchUnsupported {
        /// The nodes that are not allowed, counted.
        found: String,
    },

    /// NCCL could not be loaded.
    #[error("NCCL (libnccl.so) could not be loaded: install NCCL or put its library on LD_LIBRARY_PATH (PyTorch's wheels ship it as nvidia/nccl/lib/libnccl.so.2; cudarc looks for `libnccl.so`, so link that name to it), or use `Context::simulated_world` to run on simulated devices")]
    NcclUnavailable,

    /// An NCCL call failed.
    #[error("`{op}` failed with NCCL error {code} ({text}); set NCCL_DEBUG=WARN for NCCL's own account")]
    Nccl {
        /// The NCCL function.
        op: &'static str,
        /// NCCL's result code.
        code: u32,
        /// NCCL's text for it.
        text: String,
    },

    /// A set of devices that cannot form a communicator or world.
    #[error("invalid world: {reason}")]
    InvalidWorld {
        /// What is wrong and what to do.
        reason: String,
    },

    /// A communicator was used from a stream of a device it does not cover.
    #[error("`{op}`: rank {rank}'s communicator is on device {comm_device}, the stream on device {stream_device}: issue each rank's call on a stream of that rank's device")]
    CommDeviceMismatch {
        /// The operation.
        op: &'static str,
        /// The communicator's rank.
        rank: usize,
        /// Its device's ordinal.
        comm_device: usize,
        /// The stream's device ordinal.
        stream_device: usize,
    },

    /// The ranks' collective calls of a group do not match: NCCL would wait forever, or
    /// compute garbage. Nothing was issued.
    #[error("collective calls do not match across ranks: {reason}; nothing was issued")]
    CollectiveMismatch {
        /// What differs.
        reason: String,
    },

    /// A graph holding collectives was launched alone: its collectives would wait forever
    /// for the other ranks' graphs.
    #[error("the graph of capture #{capture} holds {collectives} collective(s), which wait for the other ranks: launch the step with `MultiGraph::launch`, which launches every rank's graph")]
    CollectiveGraphAlone {
        /// The capture.
        capture: u64,
        /// Its collectives.
        collectives: usize,
    },

    /// The other ranks of a communicator made by
    /// [`Comm::init_rank`](crate::collective::Comm::init_rank) did not take part within its
    /// timeout — a peer process that never joins, or that stopped. Nothing is left waiting:
    /// the communicator was aborted (its kernels stop, any capture under way ends with this
    /// error when its guard finishes or drops), and the stream is usable.
    #[error("`{op}`: rank {rank} waited {waited:?} for the other ranks, which did not take part; the communicator was aborted, so nothing waits for them any more. Check that every process makes the same calls in the same order; then make a new communicator on every rank (`CommId::new` and `Comm::init_rank`), or give a longer timeout")]
    CollectiveTimeout {
        /// The operation.
        op: &'static str,
        /// This process's rank.
        rank: usize,
        /// How long it waited.
        waited: std::time::Duration,
    },

    /// A communicator aborted after a [timeout](Error::CollectiveTimeout) was used again.
    #[error("rank {rank}'s communicator was aborted after a timeout and cannot be used: make a new one on every rank (`CommId::new` and `Comm::init_rank`)")]
    CommAborted {
        /// Its rank.
        rank: usize,
    },

    /// Text that is not a communicator id.
    #[error("not a communicator id: {reason}; pass on exactly the text `CommId::to_string` gave (256 hex digits)")]
    InvalidCommId {
        /// What is wrong.
        reason: String,
    },

    /// An operation a conditional node's body cannot hold (a body graph may hold kernels,
    /// copies, memsets and conditional nodes only: no memory nodes).
    #[error("`{op}` at {site} cannot be recorded inside a loop or branch body (a conditional node's body holds kernels, copies and memsets only): allocate the buffer before the loop, in the capture or before `capture()`")]
    NotInConditionalBody {
        /// The operation.
        op: &'static str,
        /// Where it was called.
        site: CallSite,
    },

    /// A loop that cannot be recorded as asked.
    #[error("invalid loop: {reason}")]
    InvalidLoop {
        /// What is wrong and what to do.
        reason: String,
    },

    /// The driver has no conditional graph nodes.
    #[error("{form} needs a driver of API version {needed} or later (CUDA {}.{}; this driver is {found}): update the driver, or run the loop from the host", needed / 1000, needed % 1000 / 10)]
    ConditionalNodesUnsupported {
        /// The form asked for (a WHILE loop, an IF/ELSE branch).
        form: &'static str,
        /// The driver API version it needs (12040 for WHILE and IF, 12080 for IF/ELSE).
        needed: i32,
        /// The driver's API version.
        found: i32,
    },

    /// A collective the simulated device does not model.
    #[error("{what}")]
    NotModelled {
        /// What, and what to do instead.
        what: String,
    },

    /// A replay check was set up so that it could not check anything.
    #[error("invalid replay check: {reason}")]
    InvalidReplayCheck {
        /// What is wrong and what to do.
        reason: &'static str,
    },
}

fn cause_text(cause: &Option<OpSite>, code: Option<DriverCode>) -> String {
    match (cause, code) {
        (Some(c), Some(code)) => format!(" by {c}, which failed with {code}"),
        (Some(c), None) => format!(" by {c}"),
        (None, _) => String::new(),
    }
}

fn last_op_text(last: &Option<OpSite>) -> String {
    match last {
        Some(l) => format!(" (the last operation this library recorded was {l})"),
        None => " (this library recorded no operation in it)".to_owned(),
    }
}

fn invalidation_hint(code: DriverCode, cause_known: bool) -> &'static str {
    match code {
        DriverCode::STREAM_CAPTURE_INVALIDATED if !cause_known => "No operation issued through this library failed, so something issued behind its back did: usually a synchronize, stream or event query, or synchronous copy made through a cudarc handle (a clone of `Stream::cudarc()`, a candle device) while the capture was active, right after the last operation named here. Issue such calls before `capture()` or after `finish()`",
        DriverCode::STREAM_CAPTURE_ISOLATION => "CUDA_ERROR_STREAM_CAPTURE_ISOLATION means work in the capture waited on an event recorded outside it, usually an event recorded before `capture()`: cudarc's per-buffer event tracking does this once a program has a second stream (this crate turns it off for the length of a capture on contexts it wraps; code that records or waits on its own events must do the same), or a `wait_event` on an event recorded before the capture. Record the event inside the capture, or wait on it before `capture()`",
        DriverCode::STREAM_CAPTURE_IMPLICIT => "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT means work went to the legacy default stream, which synchronizes with the capturing stream: use non-blocking streams",
        DriverCode::STREAM_CAPTURE_UNSUPPORTED => "An operation not allowed during capture (a synchronize, a synchronous copy or allocation, a query) was issued, perhaps through a cudarc handle: move it before `capture()` or after `finish()`",
        _ => "Move that operation before `capture()` or after `finish()`",
    }
}

fn hint_for(code: DriverCode) -> &'static str {
    match code {
        DriverCode::STREAM_CAPTURE_UNSUPPORTED => ": the operation is not allowed while a stream captures (in Global mode, on any stream of the process); it invalidated the capture — move it before `capture()` or after `finish()`",
        DriverCode::STREAM_CAPTURE_INVALIDATED => ": an earlier illegal operation invalidated the capture; drop the guard and capture again",
        DriverCode::STREAM_CAPTURE_ISOLATION => ": the capturing stream was made to wait on an event recorded outside the capture (usually before `capture()`: cudarc's per-buffer event tracking does this, and this crate turns it off during captures on contexts it wraps; or a `wait_event` on such an event); it invalidated the capture — record the event inside the capture, or wait on it before `capture()`",
        DriverCode::CAPTURED_EVENT => ": the event was recorded inside a capture; query or wait on it only after `finish()`",
        DriverCode::OUT_OF_MEMORY => ": free buffers or allocate less",
        DriverCode::ILLEGAL_ADDRESS => ": a kernel touched memory it does not own; the context is now unusable — check buffer lengths and kernel bounds",
        _ => "",
    }
}

impl Error {
    /// Whether this error says the work could not be recorded into a graph (as opposed to
    /// bad input, a context mismatch or an exhausted device): an invalidated capture, an
    /// unjoined fork, an allocation the policy denied, a workspace asked of a sealed pool,
    /// graph memory used across captures, an empty capture, a capture-time driver code, or
    /// a replay that diverged from the eager run. [`Fallback`](crate::Fallback) falls back
    /// to eager execution on these.
    pub fn is_capture_failure(&self) -> bool {
        match self {
            Error::CaptureInvalidated { .. }
            | Error::UnjoinedFork { .. }
            | Error::AllocationDenied { .. }
            | Error::PoolSealed { .. }
            | Error::ForeignGraphBuffer { .. }
            | Error::EmptyCapture
            | Error::DiffCaptureFailed { .. }
            | Error::ReplayDiverged { .. }
            | Error::OutputShapeChanged { .. } => true,
            Error::Driver { code, .. } => code.is_capture_error(),
            _ => false,
        }
    }

    /// The driver code behind this error, if it came from the driver (or the simulated
    /// device's model of it).
    pub fn driver_code(&self) -> Option<DriverCode> {
        match self {
            Error::Driver { code, .. } | Error::CaptureInvalidated { code, .. } => Some(*code),
            _ => None,
        }
    }
}
