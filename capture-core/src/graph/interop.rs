//! Interop with cudarc's graph types (issue #11, part 5).

use cudarc::driver::sys;

use super::{Graph, InstantiateFlags};
use crate::device::DeviceKind;

impl Graph<'_> {
    /// The flags this graph was instantiated with.
    pub fn instantiate_flags(&self) -> InstantiateFlags {
        self.flags
    }

    /// The driver's `CUgraph` behind this graph, for code that works with cudarc's raw
    /// graph API (`cudarc::driver::sys`); `None` on the simulated device.
    ///
    /// The handle is valid while this `Graph` lives, which also keeps everything the graph
    /// reads and writes borrowed. You may read it (`cuGraphGetNodes`, `cuGraphDebugDotPrint`,
    /// `cuGraphClone`, …). Do not destroy it (`Graph`'s `Drop` does), and do not add, remove
    /// or change its nodes: the executable graph and this crate's node counts and picture
    /// were made from it as captured. Every call on it is `unsafe` on your side, through
    /// `cudarc::driver::sys`, and its safety is yours to argue.
    pub fn as_raw_graph(&self) -> Option<sys::CUgraph> {
        (self.ctx.kind() == DeviceKind::Cuda).then(|| crate::raw::graph::graph_handle(self.graph.0))
    }

    /// The driver's `CUgraphExec` behind this graph; `None` on the simulated device.
    ///
    /// Valid while this `Graph` lives (and replaced by
    /// [`CaptureGuard::finish_update`](crate::CaptureGuard::finish_update) when it
    /// re-instantiates: fetch it again after an update). You may launch or upload it
    /// (`cuGraphLaunch`, `cuGraphUpload`, cudarc's `result::graph::launch`) on a stream of this
    /// graph's context — that is `unsafe` on your side: the buffers it uses are guaranteed
    /// alive only while this `Graph` lives, only one launch of it may run at a time, and it must
    /// not be used from two threads at once (`Graph` is not `Sync`). Do not destroy it, and do
    /// not update it (`cuGraphExecUpdate`, `cuGraphExecKernelNodeSetParams`): new parameters
    /// could point at memory this `Graph` does not borrow.
    pub fn as_raw_exec(&self) -> Option<sys::CUgraphExec> {
        (self.ctx.kind() == DeviceKind::Cuda).then(|| crate::raw::graph::exec_handle(self.exec.0))
    }
}
