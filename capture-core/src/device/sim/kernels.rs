//! Kernel interpretation on the simulated device: host implementations of kernels, the calls
//! they see, modules, launches and the cuBLAS SGEMM model.

#[allow(unused_imports)]
use super::*;

/// A host implementation of a kernel for the simulated device.
pub type HostKernel = Arc<dyn Fn(&mut KernelCall<'_>) -> Result<(), KernelFault> + Send + Sync>;

/// A simulated kernel touched memory it does not own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelFault {
    /// What went wrong.
    pub reason: String,
}

impl fmt::Display for KernelFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

/// One kernel launch as a host implementation sees it: its geometry, its arguments (one
/// 8-byte slot per parameter) and the device's memory.
pub struct KernelCall<'m> {
    /// Grid dimensions.
    pub grid: (u32, u32, u32),
    /// Block dimensions.
    pub block: (u32, u32, u32),
    pub(super) slots: &'m [u64],
    pub(super) mem: &'m mut Memory,
}

impl KernelCall<'_> {
    /// Number of arguments.
    pub fn arg_count(&self) -> usize {
        self.slots.len()
    }
    pub(super) fn slot(&self, i: usize) -> Result<u64, KernelFault> {
        self.slots
            .get(i)
            .copied()
            .ok_or_else(|| KernelFault { reason: format!("argument {i} does not exist ({} given)", self.slots.len()) })
    }
    /// Argument `i` as a device address.
    pub fn ptr(&self, i: usize) -> Result<u64, KernelFault> {
        self.slot(i)
    }
    /// Argument `i` as a `u32`.
    pub fn u32(&self, i: usize) -> Result<u32, KernelFault> {
        Ok(self.slot(i)? as u32)
    }
    /// Argument `i` as an `f32`.
    pub fn f32(&self, i: usize) -> Result<f32, KernelFault> {
        Ok(f32::from_bits(self.slot(i)? as u32))
    }
    /// Reads `len` elements at device address `addr`.
    pub fn read<T: bytemuck::Pod>(&self, addr: u64, len: usize) -> Result<Vec<T>, KernelFault> {
        let mut out = Vec::new();
        out.try_reserve_exact(len)
            .map_err(|_| KernelFault { reason: format!("read of {len} elements: out of host memory") })?;
        out.resize(len, T::zeroed());
        self.mem
            .read(addr, bytemuck::cast_slice_mut(&mut out))
            .map_err(|_| KernelFault { reason: format!("read of {len} elements at {addr:#x} is out of bounds") })?;
        Ok(out)
    }
    /// Writes `data` at device address `addr`.
    pub fn write<T: bytemuck::Pod>(&mut self, addr: u64, data: &[T]) -> Result<(), KernelFault> {
        self.mem.write(addr, bytemuck::cast_slice(data)).map_err(|_| KernelFault {
            reason: format!("write of {} elements at {addr:#x} is out of bounds", data.len()),
        })
    }
}

/// The kernel name under which the simulated device records a cuBLAS SGEMM.
pub(super) const SGEMM: &str = "cublasSgemm";

/// Column-major `C = alpha * op(A) * op(B) + beta * C`, as cuBLAS computes it.
pub(super) fn sgemm_host(c: &mut KernelCall<'_>) -> Result<(), KernelFault> {
    let (ta, tb) = (c.slot(0)? != 0, c.slot(1)? != 0);
    let (m, n, k) = (c.slot(2)? as usize, c.slot(3)? as usize, c.slot(4)? as usize);
    let alpha = c.f32(5)?;
    let (lda, ldb, beta, ldc) = (c.slot(7)? as usize, c.slot(9)? as usize, c.f32(10)?, c.slot(12)? as usize);
    let a: Vec<f32> = c.read(c.ptr(6)?, lda * if ta { m } else { k })?;
    let b: Vec<f32> = c.read(c.ptr(8)?, ldb * if tb { k } else { n })?;
    let mut out: Vec<f32> = c.read(c.ptr(11)?, ldc * n)?;
    for j in 0..n {
        for i in 0..m {
            let mut acc = 0.0f32;
            for p in 0..k {
                let av = if ta { a[p + i * lda] } else { a[i + p * lda] };
                let bv = if tb { b[j + p * ldb] } else { b[p + j * ldb] };
                acc += av * bv;
            }
            let o = &mut out[i + j * ldc];
            *o = alpha * acc + if beta == 0.0 { 0.0 } else { beta * *o };
        }
    }
    c.write(c.ptr(11)?, &out)
}

impl SimDevice {
    pub(crate) fn module_load(&self, text: &str) -> Result<RawModule, DriverCode> {
        let sigs = ptx::parse(text).map_err(|_| DriverCode(218))?;
        let mut st = self.st();
        let h = st.handle();
        st.modules.insert(h, sigs);
        Ok(RawModule(h))
    }
    pub(crate) fn module_unload(&self, m: RawModule) -> Result<(), DriverCode> {
        self.st().modules.remove(&m.0).map(|_| ()).ok_or(DriverCode::INVALID_HANDLE)
    }
    pub(crate) fn module_function(&self, m: RawModule, name: &str) -> Result<RawFunction, DriverCode> {
        let mut st = self.st();
        let sigs = st.modules.get(&m.0).ok_or(DriverCode::INVALID_HANDLE)?;
        if !sigs.iter().any(|k| k.name == name) {
            return Err(DriverCode::NOT_FOUND);
        }
        let h = st.handle();
        st.functions.insert(h, name.to_owned());
        Ok(RawFunction(h))
    }
    pub(crate) fn launch(&self, f: RawFunction, p: LaunchParams<'_>, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        let name = st.functions.get(&f.0).ok_or(DriverCode::INVALID_HANDLE)?.clone();
        let node = Node::Kernel { name, grid: p.grid, block: p.block, slots: p.slots.to_vec() };
        st.record_or_run(s.0, node)
    }

    #[cfg(feature = "cublas")]
    pub(crate) fn blas_create(&self) -> Result<usize, DriverCode> {
        let mut st = self.st();
        let h = st.handle();
        st.blas.insert(h);
        Ok(h)
    }
    #[cfg(feature = "cublas")]
    pub(crate) fn blas_destroy(&self, h: usize) -> Result<(), DriverCode> {
        if self.st().blas.remove(&h) {
            Ok(())
        } else {
            Err(DriverCode(DriverCode::BLAS_STATUS_BASE | 1))
        }
    }
    #[cfg(feature = "cublas")]
    pub(crate) fn blas_bind(&self, h: usize, s: RawStream, _ws: DevPtr, _bytes: usize) -> Result<(), DriverCode> {
        let st = self.st();
        if !st.blas.contains(&h) || !st.streams.contains_key(&s.0) {
            return Err(DriverCode(DriverCode::BLAS_STATUS_BASE | 1));
        }
        Ok(())
    }
    #[cfg(feature = "cublas")]
    pub(crate) fn blas_sgemm(
        &self,
        h: usize,
        s: RawStream,
        ws: DevPtr,
        bytes: usize,
        g: &crate::device::Gemm,
    ) -> Result<(), DriverCode> {
        self.blas_bind(h, s, ws, bytes)?;
        let slots = vec![
            u64::from(g.trans_a),
            u64::from(g.trans_b),
            g.m as u64,
            g.n as u64,
            g.k as u64,
            u64::from(g.alpha.to_bits()),
            g.a.0,
            g.lda as u64,
            g.b.0,
            g.ldb as u64,
            u64::from(g.beta.to_bits()),
            g.c.0,
            g.ldc as u64,
        ];
        let node = Node::Kernel { name: SGEMM.to_owned(), grid: (1, 1, 1), block: (1, 1, 1), slots };
        self.st().record_or_run(s.0, node)
    }
}
