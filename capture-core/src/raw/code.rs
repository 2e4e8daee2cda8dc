//! The driver's status code, as both backends return it.

use std::fmt;

/// A CUDA driver result code (`CUresult`), kept as its number and name so that the same
/// values come out of the GPU and the simulated device.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DriverCode(pub u32);

impl DriverCode {
    /// `CUDA_ERROR_INVALID_VALUE`.
    pub const INVALID_VALUE: Self = Self(1);
    /// `CUDA_ERROR_OUT_OF_MEMORY`.
    pub const OUT_OF_MEMORY: Self = Self(2);
    /// `CUDA_ERROR_NOT_INITIALIZED`.
    pub const NOT_INITIALIZED: Self = Self(3);
    /// `CUDA_ERROR_NO_DEVICE`.
    pub const NO_DEVICE: Self = Self(100);
    /// `CUDA_ERROR_INVALID_DEVICE`.
    pub const INVALID_DEVICE: Self = Self(101);
    /// `CUDA_ERROR_INVALID_HANDLE`.
    pub const INVALID_HANDLE: Self = Self(400);
    /// `CUDA_ERROR_NOT_FOUND`.
    pub const NOT_FOUND: Self = Self(500);
    /// `CUDA_ERROR_NOT_READY`.
    pub const NOT_READY: Self = Self(600);
    /// `CUDA_ERROR_ILLEGAL_ADDRESS`.
    pub const ILLEGAL_ADDRESS: Self = Self(700);
    /// `CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED`: the operation is not permitted while a stream
    /// is capturing; the capture is invalidated.
    pub const STREAM_CAPTURE_UNSUPPORTED: Self = Self(900);
    /// `CUDA_ERROR_NOT_SUPPORTED`.
    pub const NOT_SUPPORTED: Self = Self(801);
    /// `CUDA_ERROR_LAUNCH_TIMEOUT`: a launch ran too long (the simulated device's bound on a
    /// WHILE whose condition is never cleared).
    pub const LAUNCH_TIMEOUT: Self = Self(702);
    /// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: the capture was invalidated by an earlier error.
    pub const STREAM_CAPTURE_INVALIDATED: Self = Self(901);
    /// `CUDA_ERROR_STREAM_CAPTURE_MERGE`.
    pub const STREAM_CAPTURE_MERGE: Self = Self(902);
    /// `CUDA_ERROR_STREAM_CAPTURE_UNMATCHED`.
    pub const STREAM_CAPTURE_UNMATCHED: Self = Self(903);
    /// `CUDA_ERROR_STREAM_CAPTURE_UNJOINED`: a stream forked into the capture was not joined
    /// back before the capture ended.
    pub const STREAM_CAPTURE_UNJOINED: Self = Self(904);
    /// `CUDA_ERROR_STREAM_CAPTURE_ISOLATION`.
    pub const STREAM_CAPTURE_ISOLATION: Self = Self(905);
    /// `CUDA_ERROR_STREAM_CAPTURE_IMPLICIT`.
    pub const STREAM_CAPTURE_IMPLICIT: Self = Self(906);
    /// `CUDA_ERROR_CAPTURED_EVENT`: the event was recorded in a capture and cannot be queried
    /// or waited on from the host.
    pub const CAPTURED_EVENT: Self = Self(907);
    /// `CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD`.
    pub const STREAM_CAPTURE_WRONG_THREAD: Self = Self(908);

    /// cuBLAS statuses are reported as `BLAS_STATUS_BASE | status`.
    pub const BLAS_STATUS_BASE: u32 = 0x4000_0000;

    /// The driver's name for the code, where this crate knows it.
    pub fn name(self) -> &'static str {
        if self.0 & Self::BLAS_STATUS_BASE != 0 {
            return match self.0 & !Self::BLAS_STATUS_BASE {
                1 => "CUBLAS_STATUS_NOT_INITIALIZED",
                3 => "CUBLAS_STATUS_ALLOC_FAILED",
                7 => "CUBLAS_STATUS_INVALID_VALUE",
                8 => "CUBLAS_STATUS_ARCH_MISMATCH",
                11 => "CUBLAS_STATUS_MAPPING_ERROR",
                13 => "CUBLAS_STATUS_EXECUTION_FAILED",
                14 => "CUBLAS_STATUS_INTERNAL_ERROR",
                15 => "CUBLAS_STATUS_NOT_SUPPORTED",
                _ => "CUBLAS_STATUS_UNKNOWN",
            };
        }
        match self.0 {
            0 => "CUDA_SUCCESS",
            1 => "CUDA_ERROR_INVALID_VALUE",
            2 => "CUDA_ERROR_OUT_OF_MEMORY",
            3 => "CUDA_ERROR_NOT_INITIALIZED",
            4 => "CUDA_ERROR_DEINITIALIZED",
            34 => "CUDA_ERROR_STUB_LIBRARY",
            100 => "CUDA_ERROR_NO_DEVICE",
            101 => "CUDA_ERROR_INVALID_DEVICE",
            200 => "CUDA_ERROR_INVALID_IMAGE",
            201 => "CUDA_ERROR_INVALID_CONTEXT",
            218 => "CUDA_ERROR_INVALID_PTX",
            222 => "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
            400 => "CUDA_ERROR_INVALID_HANDLE",
            500 => "CUDA_ERROR_NOT_FOUND",
            600 => "CUDA_ERROR_NOT_READY",
            700 => "CUDA_ERROR_ILLEGAL_ADDRESS",
            701 => "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES",
            702 => "CUDA_ERROR_LAUNCH_TIMEOUT",
            719 => "CUDA_ERROR_LAUNCH_FAILED",
            801 => "CUDA_ERROR_NOT_SUPPORTED",
            900 => "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED",
            901 => "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
            902 => "CUDA_ERROR_STREAM_CAPTURE_MERGE",
            903 => "CUDA_ERROR_STREAM_CAPTURE_UNMATCHED",
            904 => "CUDA_ERROR_STREAM_CAPTURE_UNJOINED",
            905 => "CUDA_ERROR_STREAM_CAPTURE_ISOLATION",
            906 => "CUDA_ERROR_STREAM_CAPTURE_IMPLICIT",
            907 => "CUDA_ERROR_CAPTURED_EVENT",
            908 => "CUDA_ERROR_STREAM_CAPTURE_WRONG_THREAD",
            910 => "CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE",
            _ => "CUDA_ERROR_UNKNOWN",
        }
    }

    /// Whether this code means "not allowed while capturing" or "the capture is broken".
    pub fn is_capture_error(self) -> bool {
        (900..=908).contains(&self.0)
    }
}

impl fmt::Display for DriverCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.name(), self.0)
    }
}
