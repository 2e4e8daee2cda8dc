//! The table of what `#[capturable]` rejects: forbidden names, the category each belongs to, and
//! the message each category gives.
//!
//! A message has three lines, in the order a reader needs them: what the code does, why that
//! breaks a capture, and what to write instead.

/// Why a piece of code cannot run while a stream is capturing. One message per category.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Category {
    /// `cudaMallocManaged` and friends.
    ManagedAlloc,
    /// Synchronous device or pinned allocation, and frees.
    SyncAlloc,
    /// Synchronous copies and memsets.
    SyncCopy,
    /// Stream, event, context and device synchronization and queries.
    Synchronize,
    /// A parameter that hands the function an idle stream or a raw cudarc handle.
    IdleHandle,
    /// Any other call into cudarc's `driver::sys` / `driver::result` or a `cu*` FFI function.
    RawDriver,
    /// `async fn`.
    AsyncFn,
}

#[allow(dead_code)] // `ALL` and `label` are for summaries, which the corpus test prints
impl Category {
    pub(crate) const ALL: [Category; 7] = [
        Category::ManagedAlloc,
        Category::SyncAlloc,
        Category::SyncCopy,
        Category::Synchronize,
        Category::IdleHandle,
        Category::RawDriver,
        Category::AsyncFn,
    ];

    /// A short label, for summaries.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Category::ManagedAlloc => "managed allocation",
            Category::SyncAlloc => "synchronous allocation or free",
            Category::SyncCopy => "synchronous copy or memset",
            Category::Synchronize => "synchronization or query",
            Category::IdleHandle => "idle stream or raw handle parameter",
            Category::RawDriver => "raw driver call",
            Category::AsyncFn => "async fn",
        }
    }

    /// Why this breaks a capture.
    fn why(self) -> &'static str {
        match self {
            Category::ManagedAlloc => {
                "managed allocation is not a stream operation and cannot be recorded into a \
                 graph: while a stream captures it fails the capture, and on some systems it \
                 hangs without an error"
            }
            Category::SyncAlloc => {
                "synchronous allocation and free are not stream operations and are never \
                 recorded into the graph: while a stream captures they invalidate the capture, \
                 or run once, now, and never on replay"
            }
            Category::SyncCopy => {
                "a synchronous copy or memset is not recorded into the graph: it invalidates \
                 the capture, or runs once at capture time, returns Ok, and is missing from \
                 every replay, which then reads stale data"
            }
            Category::Synchronize => {
                "while a stream captures, nothing it recorded has run yet: synchronizing or \
                 querying a stream, an event, the context or the device fails and invalidates \
                 the capture"
            }
            Category::IdleHandle => {
                "work enqueued through it is not recorded into the graph, and it offers \
                 blocking calls (`synchronize`, `upload`, `alloc_zeros`, ...) that break the \
                 capture; the capture type-state cannot check a handle that is not a \
                 capturing stream"
            }
            Category::RawDriver => {
                "raw driver calls bypass the capture type-state, so nothing checks that the \
                 call is legal while the stream captures, or that what it touches outlives \
                 the graph"
            }
            Category::AsyncFn => {
                "a capture belongs to the thread that began it, but an `.await` can suspend \
                 this function halfway through the capture and resume it on another thread, \
                 which invalidates the capture or records another task's work into the graph"
            }
        }
    }

    /// What to write instead.
    fn help(self) -> &'static str {
        match self {
            Category::ManagedAlloc => {
                "allocate managed memory before `stream.capture()`, on the idle stream, and pass \
                 it in; inside the capture use `stream.alloc_async::<T>(len)` or a pre-allocated \
                 buffer"
            }
            Category::SyncAlloc => {
                "allocate before `stream.capture()` and pass the buffer in, or call \
                 `stream.alloc_async::<T>(len)` on the capturing stream, which records an \
                 allocation node into the graph; free graph memory with \
                 `stream.free_async(buf)`, and other buffers after the graph's last launch"
            }
            Category::SyncCopy => {
                "use the capturing stream's asynchronous copies: `upload_async(&dst, &pinned)` \
                 and `download_async(&pinned, &src)` through a `PinnedBuffer` allocated before \
                 capture, `copy_async(&dst, &src)` between device buffers, and \
                 `memset_async(&buf, byte)`"
            }
            Category::Synchronize => {
                "order work inside the graph with `record_event`/`wait_event`, and synchronize \
                 after `graph.launch(..)`, outside the capture"
            }
            Category::IdleHandle => {
                "take `&mut Stream<Capturing<'a>>`, or a generic `S: capture_core::Records<'a>`, \
                 and call this function from inside `stream.capture()`"
            }
            Category::RawDriver => {
                "use the capturing stream's methods (`launch`, `copy_async`, `memset_async`, \
                 `alloc_async`, `record_event`, ...); if this call is known to be capture-safe, \
                 write `#[capturable(allow(NAME), reason = \"...\")]`"
            }
            Category::AsyncFn => {
                "make it a plain `fn` that takes `&mut Stream<Capturing<'a>>`, and await before \
                 `stream.capture()` or after `graph.launch(..)`"
            }
        }
    }

    /// The full message: `what` is the one-line headline, already naming the offending code;
    /// `why` and `help` follow, wrapped so that the compiler's output stays within 100 columns.
    pub(crate) fn message(self, what: &str, name: &str) -> String {
        let mut out = what.to_owned();
        for (label, text) in [("why", self.why().to_owned()), ("help", self.help().replace("NAME", name))] {
            out.push('\n');
            out.push_str(&wrap(&format!("{label}: {text}"), label.len() + 2, 92));
        }
        out
    }
}

/// Wraps `text` at spaces to lines of at most `width` characters (a longer word gets a line of
/// its own), indenting continuation lines by `indent` so they line up after the label.
fn wrap(text: &str, indent: usize, width: usize) -> String {
    let mut out = String::new();
    let mut line_len = 0;
    for word in text.split(' ') {
        if line_len > indent && line_len + 1 + word.len() > width {
            out.push('\n');
            out.push_str(&" ".repeat(indent));
            line_len = indent;
        } else if !out.is_empty() {
            out.push(' ');
            line_len += 1;
        }
        out.push_str(word);
        line_len += word.len();
    }
    out
}

/// How a forbidden name can be reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reach {
    /// The name is distinctive: flag it as a method, a function call, or a path to a function.
    Anywhere,
    /// The name is an ordinary word (`free`, `query`, `upload`): flag it as a method call, or as a
    /// path whose previous segment names a type (`Stream::free(&mut s, buf)`), never as a free
    /// function (`libc::free`, `std::alloc::alloc`).
    Method,
}

/// One forbidden name.
#[derive(Debug)]
pub(crate) struct Rule {
    pub(crate) name: &'static str,
    pub(crate) category: Category,
    pub(crate) reach: Reach,
    /// Completes "`name` ...": what the call does.
    pub(crate) does: &'static str,
}

const MANAGED: &str = "allocates managed memory";
const DEVICE_ALLOC: &str = "allocates device memory synchronously";
const PINNED_ALLOC: &str = "allocates pinned host memory";
const NEW_BUFFER: &str = "allocates a new device buffer before copying into it";
const FREE: &str = "frees memory synchronously";
const COPY: &str = "copies memory synchronously";
const MEMSET: &str = "sets memory synchronously";
const WAIT: &str = "blocks until the GPU has finished";
const QUERY: &str = "asks whether the GPU has finished";

macro_rules! rules {
    ($($category:ident $reach:ident $does:ident [$($name:ident)*])*) => {
        &[$($(Rule {
            name: stringify!($name),
            category: Category::$category,
            reach: Reach::$reach,
            does: $does,
        },)*)*]
    };
}

/// Every forbidden name. Driver and runtime names are listed without their `_v2`/`_ptds`
/// suffixes; [`lookup`] strips those.
#[rustfmt::skip]
pub(crate) const RULES: &[Rule] = rules! {
    ManagedAlloc Anywhere MANAGED [cuMemAllocManaged cudaMallocManaged malloc_managed alloc_managed]
    ManagedAlloc Method MANAGED [alloc_unified]

    SyncAlloc Anywhere DEVICE_ALLOC [cuMemAlloc cuMemAllocPitch cudaMalloc cudaMallocPitch
        cudaMalloc3D malloc_sync]
    SyncAlloc Anywhere PINNED_ALLOC [cuMemAllocHost cuMemHostAlloc cudaMallocHost cudaHostAlloc
        malloc_host]
    SyncAlloc Anywhere FREE [cuMemFree cuMemFreeHost cudaFree cudaFreeHost free_sync free_host]
    SyncAlloc Method DEVICE_ALLOC [alloc alloc_zeros alloc_uninit]
    SyncAlloc Method PINNED_ALLOC [alloc_pinned]
    SyncAlloc Method NEW_BUFFER [clone_htod clone_dtod upload_new]
    SyncAlloc Method FREE [free]

    SyncCopy Anywhere COPY [cuMemcpy cuMemcpyHtoD cuMemcpyDtoH cuMemcpyDtoD cuMemcpyPeer
        cuMemcpy2D cuMemcpy3D cudaMemcpy cudaMemcpy2D cudaMemcpy3D cudaMemcpyPeer
        cudaMemcpyToSymbol cudaMemcpyFromSymbol memcpy_htod_sync memcpy_dtoh_sync
        memcpy_dtod_sync]
    SyncCopy Anywhere MEMSET [cuMemsetD8 cuMemsetD16 cuMemsetD32 cuMemsetD2D8 cuMemsetD2D16
        cuMemsetD2D32 cudaMemset cudaMemset2D cudaMemset3D memset_d8_sync memset_d16_sync
        memset_d32_sync memset_sync]
    SyncCopy Method COPY [clone_dtoh memcpy_dtov memcpy_stod upload download download_into
        read_managed write_managed]

    Synchronize Anywhere WAIT [synchronize cuStreamSynchronize cuCtxSynchronize
        cuEventSynchronize cudaDeviceSynchronize cudaThreadSynchronize cudaStreamSynchronize
        cudaEventSynchronize]
    Synchronize Anywhere QUERY [cuStreamQuery cuEventQuery cudaStreamQuery cudaEventQuery]
    Synchronize Method WAIT [wait_for_event elapsed_ms]
    Synchronize Method QUERY [query is_complete try_is_complete event_complete]
};

/// The rule for `name`, ignoring the driver's versioned (`_v2`) and per-thread-stream
/// (`_ptds`, `_ptsz`) suffixes.
pub(crate) fn lookup(name: &str) -> Option<&'static Rule> {
    let base = strip_driver_suffixes(name);
    RULES.iter().find(|rule| rule.name == base)
}

fn strip_driver_suffixes(name: &str) -> &str {
    let mut base = name;
    for suffix in ["_ptds", "_ptsz"] {
        base = base.strip_suffix(suffix).unwrap_or(base);
    }
    if let Some(at) = base.rfind("_v") {
        let version = &base[at + 2..];
        if !version.is_empty() && version.bytes().all(|b| b.is_ascii_digit()) {
            base = &base[..at];
        }
    }
    base
}

/// `cuLaunchKernel`, `cudaGraphLaunch`: the shape of a CUDA driver or runtime FFI function.
pub(crate) fn is_ffi_name(name: &str) -> bool {
    let rest = name.strip_prefix("cuda").or_else(|| name.strip_prefix("cu"));
    rest.is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// A path into cudarc's raw layers: `cudarc::driver::sys::…`, `driver::result::…`,
/// `cudarc::runtime::sys::…`, `sys::cu…`, `result::…`.
pub(crate) fn is_raw_path(segments: &[String]) -> bool {
    let raw_layer = |s: &String| s == "sys" || s == "result";
    let under_api = segments.windows(2).any(|w| (w[0] == "driver" || w[0] == "runtime") && raw_layer(&w[1]));
    let short = match segments {
        [first, .., last] if first == "sys" => is_ffi_name(last),
        [first, _, ..] if first == "result" => true,
        _ => false,
    };
    under_api || short
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique() {
        for (i, rule) in RULES.iter().enumerate() {
            assert!(RULES[i + 1..].iter().all(|r| r.name != rule.name), "{} listed twice", rule.name);
        }
    }

    #[test]
    fn driver_suffixes_are_ignored() {
        assert_eq!(lookup("cuMemAlloc_v2").unwrap().name, "cuMemAlloc");
        assert_eq!(lookup("cuMemcpyHtoD_v2_ptds").unwrap().name, "cuMemcpyHtoD");
        assert_eq!(lookup("cuStreamSynchronize_ptsz").unwrap().name, "cuStreamSynchronize");
        assert!(lookup("cuMemAllocAsync").is_none());
        assert!(lookup("memcpy_htod").is_none(), "cudarc's CudaStream::memcpy_htod is async");
        assert!(lookup("memcpy_dtoh").is_none(), "cudarc's CudaStream::memcpy_dtoh is async");
    }

    #[test]
    fn messages_wrap_under_their_label() {
        let message = Category::SyncCopy.message("first line", "x");
        let lines: Vec<&str> = message.lines().collect();
        assert_eq!(lines[0], "first line");
        assert!(lines[1].starts_with("why: "));
        assert!(lines.iter().all(|line| line.len() <= 92), "{message}");
        let help = lines.iter().position(|line| line.starts_with("help: ")).unwrap();
        assert!(lines[2..help].iter().all(|line| line.starts_with("     ") && !line.starts_with("      ")));
        assert!(lines[help + 1..].iter().all(|line| line.starts_with("      ")));
        assert!(!message.contains("NAME"));
    }

    #[test]
    fn ffi_names() {
        assert!(is_ffi_name("cuLaunchKernel"));
        assert!(is_ffi_name("cudaGraphLaunch"));
        assert!(!is_ffi_name("cublasSgemm_v2"));
        assert!(!is_ffi_name("cursor"));
        assert!(!is_ffi_name("cuda"));
    }

    #[test]
    fn raw_paths() {
        let p = |s: &str| s.split("::").map(String::from).collect::<Vec<_>>();
        assert!(is_raw_path(&p("cudarc::driver::sys::cuLaunchKernel")));
        assert!(is_raw_path(&p("cudarc::driver::result::stream::synchronize")));
        assert!(is_raw_path(&p("driver::result::malloc_sync")));
        assert!(is_raw_path(&p("sys::cuGraphLaunch")));
        assert!(is_raw_path(&p("result::malloc_async")));
        assert!(!is_raw_path(&p("cudarc::driver::safe::CudaStream")));
        assert!(!is_raw_path(&p("std::result::Result")));
        assert!(!is_raw_path(&p("sys::exit")));
    }
}
