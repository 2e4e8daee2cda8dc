//! The simulated device's memory: a paged address space backed lazily by host memory, and the
//! allocations, copies and memsets on it.

#[allow(unused_imports)]
use super::*;

#[derive(Copy, Clone, PartialEq, Eq, Debug)]
pub(super) enum AllocKind {
    Device,
    Host,
    Managed,
    Graph,
}

/// The simulated address space.
///
/// Allocations are paged and lazily backed: a page of host memory is allocated the first
/// time it is written (fallibly: a failed host allocation is `OUT_OF_MEMORY`, never an
/// abort), and reads of untouched pages give zeros. So the full advertised 80 GiB can be
/// allocated on a machine with less host memory, as long as the work touches less of it
/// (issue #13, item 1).
#[derive(Default)]
pub(crate) struct Memory {
    pub(super) allocs: BTreeMap<u64, Alloc>,
    pub(super) next: u64,
    /// Device memory in use (device, managed and graph allocations), as `mem_info` reports.
    pub(super) used: usize,
    /// Pinned host memory in use (not device memory: not in `mem_info`).
    pub(super) host_used: usize,
}

/// Bytes per page of simulated memory (the last page of an allocation may be shorter).
pub(super) const PAGE: usize = 64 << 10;

pub(super) struct Alloc {
    pub(super) kind: AllocKind,
    pub(super) len: usize,
    /// Backed pages by index; a missing page reads as zeros.
    pub(super) pages: HashMap<usize, Box<[u8]>>,
}

impl Alloc {
    pub(super) fn page_len(&self, i: usize) -> usize {
        PAGE.min(self.len - i * PAGE)
    }
    /// Page `i`, backed now if it was not.
    pub(super) fn page_mut(&mut self, i: usize) -> Result<&mut [u8], DriverCode> {
        let n = self.page_len(i);
        match self.pages.entry(i) {
            std::collections::hash_map::Entry::Occupied(e) => Ok(e.into_mut()),
            std::collections::hash_map::Entry::Vacant(e) => {
                let mut v = Vec::new();
                v.try_reserve_exact(n).map_err(|_| DriverCode::OUT_OF_MEMORY)?;
                v.resize(n, 0);
                Ok(e.insert(v.into_boxed_slice()))
            }
        }
    }
    /// Calls `f(page, offset in page, offset in range, length)` for each page piece of
    /// `off..off + len`.
    pub(super) fn pieces(
        off: usize,
        len: usize,
        mut f: impl FnMut(usize, usize, usize, usize) -> Result<(), DriverCode>,
    ) -> Result<(), DriverCode> {
        let mut done = 0;
        while done < len {
            let pos = off + done;
            let (i, o) = (pos / PAGE, pos % PAGE);
            let n = (PAGE - o).min(len - done);
            f(i, o, done, n)?;
            done += n;
        }
        Ok(())
    }
    pub(super) fn read(&self, off: usize, dst: &mut [u8]) {
        let _ = Self::pieces(off, dst.len(), |i, o, d, n| {
            match self.pages.get(&i) {
                Some(p) => dst[d..d + n].copy_from_slice(&p[o..o + n]),
                None => dst[d..d + n].fill(0),
            }
            Ok(())
        });
    }
    pub(super) fn write(&mut self, off: usize, src: &[u8]) -> Result<(), DriverCode> {
        Self::pieces(off, src.len(), |i, o, d, n| {
            self.page_mut(i)?[o..o + n].copy_from_slice(&src[d..d + n]);
            Ok(())
        })
    }
    pub(super) fn set(&mut self, off: usize, value: u8, len: usize) -> Result<(), DriverCode> {
        if value == 0 && off == 0 && len == self.len {
            self.pages.clear();
            return Ok(());
        }
        Self::pieces(off, len, |i, o, _, n| {
            if value == 0 {
                if o == 0 && n == self.page_len(i) {
                    self.pages.remove(&i);
                    return Ok(());
                }
                if !self.pages.contains_key(&i) {
                    return Ok(());
                }
            }
            self.page_mut(i)?[o..o + n].fill(value);
            Ok(())
        })
    }
}

impl Memory {
    pub(super) fn alloc(&mut self, bytes: usize, kind: AllocKind) -> u64 {
        if self.next == 0 {
            self.next = 0x7000_0000_0000;
        }
        let base = self.next;
        // 256-byte alignment like the driver, plus a guard gap so overruns are detected.
        self.next = base + ((bytes as u64 + 255) & !255) + 4096;
        match kind {
            AllocKind::Host => self.host_used += bytes,
            // Graph allocations are virtual; their device memory is the graph pool's (see
            // `GraphPool`), counted when a graph using them launches.
            AllocKind::Graph => {}
            AllocKind::Device | AllocKind::Managed => self.used += bytes,
        }
        self.allocs.insert(base, Alloc { kind, len: bytes, pages: HashMap::new() });
        base
    }
    pub(super) fn free(&mut self, base: u64, kinds: &[AllocKind]) -> Result<(), DriverCode> {
        match self.allocs.get(&base) {
            Some(a) if kinds.contains(&a.kind) => {
                match a.kind {
                    AllocKind::Host => self.host_used -= a.len,
                    AllocKind::Graph => {}
                    AllocKind::Device | AllocKind::Managed => self.used -= a.len,
                }
                self.allocs.remove(&base);
                Ok(())
            }
            _ => Err(DriverCode::INVALID_VALUE),
        }
    }
    /// The allocation holding `addr..addr + len`, and the offset of `addr` in it.
    pub(super) fn find(&self, addr: u64, len: usize) -> Result<(u64, usize), DriverCode> {
        let (base, a) = self.allocs.range(..=addr).next_back().ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        let off = usize::try_from(addr - base).map_err(|_| DriverCode::ILLEGAL_ADDRESS)?;
        let end = off.checked_add(len).ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        if end > a.len {
            return Err(DriverCode::ILLEGAL_ADDRESS);
        }
        Ok((*base, off))
    }
    pub(super) fn at_mut(&mut self, addr: u64, len: usize) -> Result<(&mut Alloc, usize), DriverCode> {
        let (base, off) = self.find(addr, len)?;
        let a = self.allocs.get_mut(&base).ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        Ok((a, off))
    }
    pub(super) fn read(&self, addr: u64, dst: &mut [u8]) -> Result<(), DriverCode> {
        let (base, off) = self.find(addr, dst.len())?;
        let a = self.allocs.get(&base).ok_or(DriverCode::ILLEGAL_ADDRESS)?;
        a.read(off, dst);
        Ok(())
    }
    pub(super) fn write(&mut self, addr: u64, src: &[u8]) -> Result<(), DriverCode> {
        let (a, off) = self.at_mut(addr, src.len())?;
        a.write(off, src)
    }
    pub(super) fn copy(&mut self, dst: u64, src: u64, bytes: usize) -> Result<(), DriverCode> {
        // Both ends are checked first, so a bad copy changes nothing; then it goes a page
        // at a time (never a host buffer of the copy's full size).
        self.find(src, bytes)?;
        self.find(dst, bytes)?;
        let mut tmp = vec![0; bytes.min(PAGE)];
        let mut done = 0;
        while done < bytes {
            let n = tmp.len().min(bytes - done);
            self.read(src + done as u64, &mut tmp[..n])?;
            self.write(dst + done as u64, &tmp[..n])?;
            done += n;
        }
        Ok(())
    }
    pub(super) fn set(&mut self, dst: u64, value: u8, bytes: usize) -> Result<(), DriverCode> {
        let (a, off) = self.at_mut(dst, bytes)?;
        a.set(off, value, bytes)
    }
    /// The length of the allocation at `base` of kind `kind`, if there is one.
    pub(super) fn len_of(&self, base: u64, kind: AllocKind) -> Option<usize> {
        self.allocs.get(&base).filter(|a| a.kind == kind).map(|a| a.len)
    }
}

impl SimDevice {
    pub(crate) fn mem_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.sync_alloc(bytes, AllocKind::Device).map(DevPtr)
    }
    pub(crate) fn mem_alloc_async(&self, bytes: usize, s: RawStream) -> Result<DevPtr, DriverCode> {
        let mut st = self.st();
        if bytes == 0 {
            return Err(DriverCode::INVALID_VALUE);
        }
        if st.mem.used.saturating_add(bytes) > self.total {
            return Err(DriverCode::OUT_OF_MEMORY);
        }
        match st.active_capture_of(s.0) {
            Some(cap) => {
                if st.captures.get(&cap).is_some_and(|c| c.state == CapState::Invalidated) {
                    return Err(DriverCode::STREAM_CAPTURE_INVALIDATED);
                }
                // Like the driver, a graph allocation may get the address of one freed earlier
                // in the same capture (seen on the H100).
                let reuse = st.captures.get(&cap).and_then(|c| c.graph_freed.iter().position(|&(_, len)| len >= bytes));
                let p = match reuse {
                    Some(i) => st.captures.get_mut(&cap).map_or(0, |c| c.graph_freed.swap_remove(i).0),
                    None => st.mem.alloc(bytes, AllocKind::Graph),
                };
                st.record(s.0, Node::MemAlloc { ptr: p, bytes })?;
                if let Some(c) = st.captures.get_mut(&cap) {
                    if reuse.is_none() {
                        c.graph_allocs.push(p);
                    }
                    c.graph_live_allocs.insert(p, bytes);
                    c.graph_live += bytes;
                    c.graph_peak = c.graph_peak.max(c.graph_live);
                }
                Ok(DevPtr(p))
            }
            None => {
                if !st.streams.contains_key(&s.0) {
                    return Err(DriverCode::INVALID_HANDLE);
                }
                Ok(DevPtr(st.mem.alloc(bytes, AllocKind::Device)))
            }
        }
    }
    pub(crate) fn mem_free(&self, p: DevPtr) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.prohibited()?;
        if st.free_live_graph_alloc(p.0) {
            return Ok(());
        }
        st.mem.free(p.0, &[AllocKind::Device, AllocKind::Managed])
    }
    pub(crate) fn mem_free_async(&self, p: DevPtr, s: RawStream) -> Result<(), DriverCode> {
        let mut st = self.st();
        match st.active_capture_of(s.0) {
            Some(cap) => {
                // Only memory this capture allocated, and has not freed yet, can be freed in its
                // graph; anything else (a double free included) is INVALID_VALUE, not
                // recorded, and the capture stays valid.
                let live = st.captures.get(&cap).is_some_and(|c| c.graph_live_allocs.contains_key(&p.0));
                if !live {
                    return Err(DriverCode::INVALID_VALUE);
                }
                // Freed in the graph; the memory stays reserved until the graph is destroyed.
                st.record(s.0, Node::MemFree { ptr: p.0 })?;
                let len = st.mem.len_of(p.0, AllocKind::Graph).unwrap_or(0);
                if let Some(c) = st.captures.get_mut(&cap) {
                    let bytes = c.graph_live_allocs.remove(&p.0).unwrap_or(0);
                    c.graph_live = c.graph_live.saturating_sub(bytes);
                    c.graph_freed.push((p.0, len));
                }
                Ok(())
            }
            None => {
                if st.free_live_graph_alloc(p.0) {
                    return Ok(());
                }
                st.mem.free(p.0, &[AllocKind::Device])
            }
        }
    }
    pub(crate) fn host_alloc(&self, bytes: usize) -> Result<HostPtr, DriverCode> {
        let mut st = self.st();
        st.prohibited()?;
        if bytes == 0 {
            return Err(DriverCode::INVALID_VALUE);
        }
        if st.mem.host_used.saturating_add(bytes) > SIM_HOST_MEM {
            return Err(DriverCode::OUT_OF_MEMORY);
        }
        Ok(HostPtr(st.mem.alloc(bytes, AllocKind::Host) as usize))
    }
    pub(crate) fn host_free(&self, p: HostPtr) -> Result<(), DriverCode> {
        let mut st = self.st();
        st.prohibited()?;
        st.mem.free(p.0 as u64, &[AllocKind::Host])
    }
    pub(crate) fn managed_alloc(&self, bytes: usize) -> Result<DevPtr, DriverCode> {
        self.sync_alloc(bytes, AllocKind::Managed).map(DevPtr)
    }
    pub(crate) fn mem_advise(&self, p: DevPtr, bytes: usize, _advice: Advice) -> Result<(), DriverCode> {
        let st = self.st();
        match st.mem.len_of(p.0, AllocKind::Managed) {
            Some(len) if bytes <= len => Ok(()),
            _ => Err(DriverCode::INVALID_VALUE),
        }
    }
    pub(crate) fn mem_prefetch_async(
        &self,
        p: DevPtr,
        bytes: usize,
        _to_device: bool,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        let st = self.st();
        if !st.streams.contains_key(&s.0) {
            return Err(DriverCode::INVALID_HANDLE);
        }
        // Host memory is the only memory: a prefetch has nothing to move.
        match st.mem.len_of(p.0, AllocKind::Managed) {
            Some(len) if bytes <= len => Ok(()),
            _ => Err(DriverCode::INVALID_VALUE),
        }
    }
    pub(crate) fn host_write(&self, dst: HostPtr, offset: usize, src: &[u8]) {
        // The safe layer checks bounds first; an error here would be a bug in it.
        let r = self.st().mem.write(dst.0 as u64 + offset as u64, src);
        debug_assert!(r.is_ok(), "host_write out of bounds");
    }
    pub(crate) fn host_read(&self, src: HostPtr, offset: usize, dst: &mut [u8]) {
        let r = self.st().mem.read(src.0 as u64 + offset as u64, dst);
        debug_assert!(r.is_ok(), "host_read out of bounds");
    }
    pub(crate) fn host_zero(&self, dst: HostPtr, bytes: usize) {
        // Lazily backed: zeroing drops the pages, so it costs no host memory.
        let r = self.st().mem.set(dst.0 as u64, 0, bytes);
        debug_assert!(r.is_ok(), "host_zero out of bounds");
    }
    pub(crate) fn managed_host_ptr(&self, p: DevPtr) -> HostPtr {
        HostPtr(p.0 as usize)
    }

    pub(crate) fn memcpy_htod(&self, dst: DevPtr, src: &[u8]) -> Result<(), DriverCode> {
        // Silent during capture: runs now, not recorded.
        self.st().mem.write(dst.0, src)
    }
    pub(crate) fn memcpy_dtoh(&self, dst: &mut [u8], src: DevPtr) -> Result<(), DriverCode> {
        self.st().mem.read(src.0, dst)
    }
    pub(crate) fn memset_d8(&self, dst: DevPtr, value: u8, bytes: usize) -> Result<(), DriverCode> {
        self.st().mem.set(dst.0, value, bytes)
    }
    pub(crate) fn memcpy_htod_async(
        &self,
        dst: DevPtr,
        src: HostPtr,
        bytes: usize,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        let node = Node::Copy { dst: dst.0, src: src.0 as u64, bytes };
        self.st().record_or_run(s.0, node)
    }
    pub(crate) fn memcpy_dtoh_async(
        &self,
        dst: HostPtr,
        src: DevPtr,
        bytes: usize,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        let node = Node::Copy { dst: dst.0 as u64, src: src.0, bytes };
        self.st().record_or_run(s.0, node)
    }
    pub(crate) fn memcpy_dtod_async(
        &self,
        dst: DevPtr,
        src: DevPtr,
        bytes: usize,
        s: RawStream,
    ) -> Result<(), DriverCode> {
        let node = Node::Copy { dst: dst.0, src: src.0, bytes };
        self.st().record_or_run(s.0, node)
    }
    pub(crate) fn memset_d8_async(&self, dst: DevPtr, value: u8, bytes: usize, s: RawStream) -> Result<(), DriverCode> {
        self.st().record_or_run(s.0, Node::Memset { dst: dst.0, value, bytes })
    }
}
