//! The raw driver path: cudarc `sys` calls, nothing else.

#[allow(unused_imports)]
use super::*;

pub(crate) fn ck(r: sys::CUresult, what: &str) -> BResult<()> {
    if r == sys::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed: {r:?}").into())
    }
}

/// The raw path: one stream, the same PTX loaded as a second module, its own buffer.
/// Every call is a plain `sys` call with its result checked.
pub(crate) struct Raw {
    pub(crate) cu: Arc<CudaContext>,
    pub(crate) stream: sys::CUstream,
    pub(crate) module: sys::CUmodule,
    pub(crate) func: sys::CUfunction,
    pub(crate) ptr: u64,
}

impl Raw {
    pub(crate) fn new(cu: Arc<CudaContext>, ptr: u64) -> BResult<Self> {
        cu.bind_to_thread()?;
        let image = CString::new(kernels::CHAIN_PTX)?;
        let mut module = null_mut();
        // SAFETY: `image` is NUL-terminated PTX text that outlives the call; the context is current.
        ck(unsafe { sys::cuModuleLoadData(&mut module, image.as_ptr() as *const c_void) }, "cuModuleLoadData")?;
        let name = CString::new("incr_f32")?;
        let mut func = null_mut();
        // SAFETY: `module` was just loaded; `name` is NUL-terminated.
        ck(unsafe { sys::cuModuleGetFunction(&mut func, module, name.as_ptr()) }, "cuModuleGetFunction")?;
        let mut stream = null_mut();
        // SAFETY: writes a new stream handle; flags as capture-core's streams (non-blocking).
        ck(
            unsafe { sys::cuStreamCreate(&mut stream, sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32) },
            "cuStreamCreate",
        )?;
        Ok(Self { cu, stream, module, func, ptr })
    }

    /// `incr_f32(ptr, n)`, 1 block of 256 threads: the same launch as the library's.
    #[inline]
    pub(crate) fn launch(&self, n: u32) -> BResult<()> {
        let mut p = self.ptr;
        let mut n = n;
        let mut params = [&mut p as *mut u64 as *mut c_void, &mut n as *mut u32 as *mut c_void];
        // SAFETY: `func` takes (u64, u32), both pointed at by `params`, which outlive the call
        // (the driver copies parameter values at launch); `ptr` is a live 256-float buffer.
        ck(
            unsafe {
                sys::cuLaunchKernel(self.func, 1, 1, 1, ELEMS, 1, 1, 0, self.stream, params.as_mut_ptr(), null_mut())
            },
            "cuLaunchKernel",
        )
    }

    /// What capture-core's CUDA backend does before each driver call.
    #[inline]
    pub(crate) fn bind(&self) -> BResult<()> {
        Ok(self.cu.bind_to_thread()?)
    }

    pub(crate) fn sync(&self) -> BResult<()> {
        // SAFETY: live stream.
        ck(unsafe { sys::cuStreamSynchronize(self.stream) }, "cuStreamSynchronize")
    }

    pub(crate) fn begin(&self) -> BResult<()> {
        // SAFETY: live, non-legacy stream; Global mode as the library's default.
        ck(
            unsafe {
                sys::cuStreamBeginCapture_v2(self.stream, sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_GLOBAL)
            },
            "cuStreamBeginCapture_v2",
        )
    }

    pub(crate) fn end(&self) -> BResult<sys::CUgraph> {
        let mut g = null_mut();
        // SAFETY: the stream is capturing; the graph handle is written on success.
        ck(unsafe { sys::cuStreamEndCapture(self.stream, &mut g) }, "cuStreamEndCapture")?;
        Ok(g)
    }

    pub(crate) fn instantiate(&self, g: sys::CUgraph) -> BResult<sys::CUgraphExec> {
        let mut e = null_mut();
        let flags = u64::from(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH.0);
        // SAFETY: `g` is a live graph; same flags as capture-core.
        ck(unsafe { sys::cuGraphInstantiateWithFlags(&mut e, g, flags) }, "cuGraphInstantiateWithFlags")?;
        Ok(e)
    }

    pub(crate) fn graph_launch(&self, e: sys::CUgraphExec) -> BResult<()> {
        // SAFETY: live exec and stream.
        ck(unsafe { sys::cuGraphLaunch(e, self.stream) }, "cuGraphLaunch")
    }

    /// In-place update; an error unless the driver updated it in place.
    pub(crate) fn exec_update(&self, e: sys::CUgraphExec, g: sys::CUgraph) -> BResult<()> {
        let mut info = std::mem::MaybeUninit::<sys::CUgraphExecUpdateResultInfo>::zeroed();
        // SAFETY: live handles; `info` is writable for the call.
        ck(unsafe { sys::cuGraphExecUpdate_v2(e, g, info.as_mut_ptr()) }, "cuGraphExecUpdate_v2")
    }

    pub(crate) fn destroy_graph(&self, g: sys::CUgraph) -> BResult<()> {
        // SAFETY: live graph, not used afterwards.
        ck(unsafe { sys::cuGraphDestroy(g) }, "cuGraphDestroy")
    }

    pub(crate) fn destroy_exec(&self, e: sys::CUgraphExec) -> BResult<()> {
        // SAFETY: live exec, not used afterwards.
        ck(unsafe { sys::cuGraphExecDestroy(e) }, "cuGraphExecDestroy")
    }

    /// Captures a chain of `n` launches (the first with element count `first`); returns the graph.
    pub(crate) fn capture_chain(&self, n: usize, first: u32, bind: bool) -> BResult<sys::CUgraph> {
        self.begin()?;
        for i in 0..n {
            if bind {
                self.bind()?;
            }
            self.launch(if i == 0 { first } else { ELEMS })?;
        }
        self.end()
    }

    /// `cuGraphGetNodes` twice and `cuGraphNodeGetType` per node: what `finish()` does to count nodes.
    pub(crate) fn count_node_types(&self, g: sys::CUgraph) -> BResult<usize> {
        let mut n = 0usize;
        // SAFETY: a null array asks for the count only.
        ck(unsafe { sys::cuGraphGetNodes(g, null_mut(), &mut n) }, "cuGraphGetNodes")?;
        let mut nodes: Vec<sys::CUgraphNode> = vec![null_mut(); n];
        // SAFETY: room for `n` handles.
        ck(unsafe { sys::cuGraphGetNodes(g, nodes.as_mut_ptr(), &mut n) }, "cuGraphGetNodes")?;
        let mut kernels = 0;
        for node in nodes.iter().take(n) {
            let mut t = std::mem::MaybeUninit::<sys::CUgraphNodeType>::uninit();
            // SAFETY: `node` belongs to the live graph; `t` is written on success.
            ck(unsafe { sys::cuGraphNodeGetType(*node, t.as_mut_ptr()) }, "cuGraphNodeGetType")?;
            // SAFETY: written by the successful call above.
            if unsafe { t.assume_init() } == sys::CUgraphNodeType::CU_GRAPH_NODE_TYPE_KERNEL {
                kernels += 1;
            }
        }
        Ok(kernels)
    }
}

impl Drop for Raw {
    fn drop(&mut self) {
        // SAFETY: both were created in `new` and are no longer used.
        unsafe {
            let _ = sys::cuStreamDestroy_v2(self.stream);
            let _ = sys::cuModuleUnload(self.module);
        }
    }
}
