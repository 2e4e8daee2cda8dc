//! The name of a communicator whose ranks are in several processes: [`CommId`].

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::context::Context;
use crate::device::DeviceKind;
use crate::error::{Error, Result};

/// The name of a communicator whose ranks are in several processes: made once, by one
/// process, with [`CommId::new`], handed to every other process by any means (its text,
/// from [`to_string`](ToString::to_string), on a command line, in a file, over a socket),
/// and given to [`Comm::init_rank`](crate::collective::Comm::init_rank) by every rank. On GPUs it is NCCL's unique id (a
/// bootstrap address in the process that made it); on the simulated device, a unique token
/// whose ranks are threads of one process.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct CommId([u8; 128]);

/// How a simulated device's ids begin (NCCL's never do: theirs begin with a socket family).
const SIM_MARK: &[u8; 16] = b"capture-core-sim";

impl CommId {
    /// A new id for a communicator of `ctx`'s kind of device: on a GPU
    /// `ncclGetUniqueId`, on the simulated device a token unique in the process.
    ///
    /// # Errors
    /// [`Error::NcclUnavailable`], [`Error::Nccl`].
    pub fn new(ctx: &Context) -> Result<CommId> {
        if ctx.kind() == DeviceKind::Simulated {
            static NEXT_SIM: AtomicU64 = AtomicU64::new(1);
            let mut b = [0u8; 128];
            b[..16].copy_from_slice(SIM_MARK);
            // Simulated ranks are threads of this process: a counter makes it unique.
            b[16..24].copy_from_slice(&NEXT_SIM.fetch_add(1, Ordering::Relaxed).to_le_bytes());
            return Ok(CommId(b));
        }
        if !crate::raw::nccl::present() {
            return Err(Error::NcclUnavailable);
        }
        crate::raw::nccl::unique_id().map(CommId).map_err(|f| Error::Nccl {
            op: "ncclGetUniqueId",
            code: f.code,
            text: f.text,
        })
    }

    /// Its 128 bytes.
    pub fn as_bytes(&self) -> &[u8; 128] {
        &self.0
    }

    /// The id with these bytes (as [`as_bytes`](Self::as_bytes) gave them).
    pub fn from_bytes(bytes: [u8; 128]) -> CommId {
        CommId(bytes)
    }

    pub(super) fn is_simulated(&self) -> bool {
        self.0.starts_with(SIM_MARK)
    }

    /// A number naming the communicator in this process (FNV-1a of the bytes; high bit set,
    /// apart from the numbers of `init_all`'s communicators).
    pub(super) fn key(&self) -> u64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.0 {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        h | 1 << 63
    }
}

impl fmt::Display for CommId {
    /// 256 lower-case hex digits.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for CommId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CommId({}{:016x}…)", if self.is_simulated() { "sim " } else { "" }, self.key())
    }
}

impl std::str::FromStr for CommId {
    type Err = Error;
    /// The id [`Display`](fmt::Display) wrote: 256 hex digits.
    fn from_str(s: &str) -> Result<CommId> {
        let s = s.trim();
        if s.len() != 256 {
            return Err(Error::InvalidCommId { reason: format!("{} characters, not 256", s.len()) });
        }
        let mut b = [0u8; 128];
        for (i, out) in b.iter_mut().enumerate() {
            let pair = s.get(2 * i..2 * i + 2).unwrap_or("");
            *out = u8::from_str_radix(pair, 16)
                .map_err(|_| Error::InvalidCommId { reason: format!("{pair:?} at {} is not a hex byte", 2 * i) })?;
        }
        Ok(CommId(b))
    }
}
