//! How a captured graph is instantiated: the driver's instantiate flags, as a capture takes
//! them (issue #11, part 5).

use crate::device::InstFlags;
use crate::error::{Error, Result};

/// How a captured graph is instantiated: the flags of `cuGraphInstantiateWithParams`
/// ([NVIDIA's reference](https://docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__GRAPH.html)).
/// Give them to a capture with [`CaptureOptions::instantiate`](crate::CaptureOptions::instantiate);
/// combinations the driver refuses are refused with [`Error::InvalidInstantiateFlags`] when the
/// capture begins, before any work is recorded.
///
/// - [`upload`](Self::upload): upload the executable graph into the capture's stream as part
///   of instantiation, so the first launch does not pay for it.
/// - [`auto_free_on_launch`](Self::auto_free_on_launch): graph memory the graph allocates and
///   does not free itself is freed before each relaunch. Without it the driver refuses to
///   relaunch (`CUDA_ERROR_INVALID_VALUE`) while such an allocation from the last launch is
///   live. On by default, unless device launch is asked for. (This crate frees its own
///   [`alloc_async`](crate::Stream::alloc_async) allocations inside the graph; the flag
///   matters for allocations made behind its back, through cudarc during a capture.)
/// - [`device_launch`](Self::device_launch): the graph can also be launched from device code.
///   The driver then allows only kernel, memcpy and memset nodes of one context, copies between
///   device memory or pinned host memory, and not auto-free-on-launch; the graph must be
///   uploaded (this flag's [`upload`](Self::upload), [`Graph::upload`](crate::Graph::upload), or a host launch)
///   before a kernel launches it. A capture that recorded memory nodes or copies from pageable
///   host memory ends with [`Error::DeviceLaunchUnsupported`].
/// - [`use_node_priority`](Self::use_node_priority): kernels run at the priority captured
///   into each kernel node (copied from its stream's priority during capture) instead of the
///   priority of the stream the graph is launched into.
///
/// ```
/// use capture_core::{CaptureOptions, InstantiateFlags};
/// let flags = InstantiateFlags::new().upload(true).use_node_priority(true);
/// assert!(flags.is_auto_free_on_launch()); // the default
/// let device = InstantiateFlags::new().device_launch(true);
/// assert!(!device.is_auto_free_on_launch()); // off with device launch
/// let opts = CaptureOptions::new().instantiate(flags);
/// # let _ = (opts, device);
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct InstantiateFlags {
    upload: bool,
    /// `None`: the default (on unless device launch).
    auto_free: Option<bool>,
    device_launch: bool,
    node_priority: bool,
}

impl InstantiateFlags {
    /// The default: auto-free-on-launch, nothing else (what this crate has always used).
    pub fn new() -> Self {
        Self::default()
    }
    /// Uploads the graph into the capture's stream when it is instantiated.
    pub fn upload(mut self, on: bool) -> Self {
        self.upload = on;
        self
    }
    /// Frees the graph's unfreed allocations before each relaunch (see the type's docs).
    pub fn auto_free_on_launch(mut self, on: bool) -> Self {
        self.auto_free = Some(on);
        self
    }
    /// Instantiates for launch from the device too (see the type's docs for the rules).
    pub fn device_launch(mut self, on: bool) -> Self {
        self.device_launch = on;
        self
    }
    /// Runs kernels at their nodes' captured priorities.
    pub fn use_node_priority(mut self, on: bool) -> Self {
        self.node_priority = on;
        self
    }
    /// Whether the graph is uploaded when instantiated.
    pub fn is_upload(&self) -> bool {
        self.upload
    }
    /// Whether auto-free-on-launch is on (as given, or the default: on unless device launch).
    pub fn is_auto_free_on_launch(&self) -> bool {
        self.auto_free.unwrap_or(!self.device_launch)
    }
    /// Whether the graph is instantiated for device launch.
    pub fn is_device_launch(&self) -> bool {
        self.device_launch
    }
    /// Whether kernels run at their nodes' priorities.
    pub fn is_use_node_priority(&self) -> bool {
        self.node_priority
    }

    /// `Err` for combinations the driver refuses.
    pub(crate) fn validate(&self) -> Result<()> {
        if self.device_launch && self.auto_free == Some(true) {
            return Err(Error::InvalidInstantiateFlags {
                reason: "`device_launch` cannot be combined with `auto_free_on_launch(true)` (the driver refuses it): drop `auto_free_on_launch(true)` — device launch turns it off by default — and free graph memory inside the graph (`free_async`) instead",
            });
        }
        Ok(())
    }

    /// The flags as the backends take them.
    pub(crate) fn resolve(&self) -> InstFlags {
        InstFlags {
            auto_free: self.is_auto_free_on_launch(),
            upload: self.upload,
            device_launch: self.device_launch,
            node_priority: self.node_priority,
        }
    }
}
