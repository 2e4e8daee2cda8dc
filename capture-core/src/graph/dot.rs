//! A picture of a graph: Graphviz DOT (issue #11, part 4).

use std::fmt::Write;
use std::path::Path;

use super::Graph;
use crate::device::sim::dot::escape;
use crate::device::{DeviceKind, DotError};
use crate::error::{Error, Result};

/// At most this many of the library's operations are listed in a GPU picture's note.
const MAX_LISTED: usize = 200;

impl Graph<'_> {
    /// The graph as Graphviz DOT text: one box per node with its kind (kernel, memcpy,
    /// memset, mem alloc, mem free, event, host, …) and parameters, and its dependency edges.
    /// Render it with `dot -Tpng graph.dot -o graph.png`.
    ///
    /// - **On the GPU** the picture is the driver's own (`cuGraphDebugDotPrint` with every
    ///   debug flag: kernel names, launch geometry and parameters, copy and memset
    ///   parameters, memory nodes, handles). The driver does not know this library's
    ///   operations, and matching them to nodes by position would be a guess where work was
    ///   issued behind the library's back, so they are not written into the nodes: a note
    ///   beside the graph lists the operations this library recorded, in order, with their
    ///   call sites.
    /// - **On the simulated device** the picture is drawn from the recorded node list, each
    ///   node labelled with the library operation that recorded it and its call site (or
    ///   marked as not issued through this library). Edges are the capture's dependencies: a
    ///   node depends on the previous node of its stream, a forked stream starts after the
    ///   fork, a join waits for the joined stream's last node. Event record and wait appear
    ///   as small event nodes where the driver draws a plain edge.
    ///
    /// ```
    /// # use capture_core::*;
    /// # fn main() -> Result<()> {
    /// # let ctx = Context::simulated();
    /// # kernels::register_chain_kernels(ctx.sim().unwrap());
    /// let mut stream = ctx.new_stream()?;
    /// let module = ctx.load_module(kernels::CHAIN_PTX)?;
    /// let incr = module.kernel("incr_f32")?;
    /// let x = stream.alloc_zeros::<f32>(256)?;
    /// let mut g = stream.capture()?;
    /// g.launch(&incr, LaunchConfig::for_num_elems(256), (&x, 256u32))?;
    /// let (graph, _) = g.finish()?;
    /// let dot = graph.to_dot()?;
    /// assert!(dot.starts_with("digraph"));
    /// assert!(dot.contains("incr_f32") && dot.contains("Stream::launch"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`Error::Driver`] if the driver cannot print the graph, [`Error::Io`] if its
    /// temporary file cannot be read back.
    pub fn to_dot(&self) -> Result<String> {
        let mut text = self.ctx.b().graph_dot(self.graph).map_err(|e| match e {
            DotError::Driver { op, code } => Error::Driver { op, code },
            DotError::Io { path, source } => {
                Error::Io { op: "Graph::to_dot (reading the driver's DOT file)", path, source }
            }
        })?;
        if self.ctx.kind() == DeviceKind::Cuda {
            self.append_op_note(&mut text);
        }
        Ok(text)
    }

    /// Writes [`to_dot`](Self::to_dot) to `path`.
    ///
    /// # Errors
    /// As [`to_dot`](Self::to_dot); [`Error::Io`] if the file cannot be written.
    pub fn write_dot(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let text = self.to_dot()?;
        std::fs::write(path, text).map_err(|source| Error::Io {
            op: "Graph::write_dot",
            path: path.display().to_string(),
            source,
        })
    }

    /// Adds a note listing the library's operations to the driver's DOT text.
    fn append_op_note(&self, text: &mut String) {
        let Some(end) = text.rfind('}') else { return };
        let mut label = format!(
            "capture #{}: {} operation(s) issued through capture-core, in order",
            self.capture_id, self.ops_total
        );
        label = escape(&label) + "\\l";
        if self.ops.is_empty() && self.ops_total > 0 {
            label += &escape("(capture with `CaptureOptions::new().trace_ops()` to list them here)");
            label += "\\l";
        }
        for (i, op) in self.ops.iter().take(MAX_LISTED).enumerate() {
            let _ = write!(label, "{}. {}\\l", i + 1, escape(&format!("{} at {}", op.op, op.site)));
        }
        let listed = self.ops.len().min(MAX_LISTED);
        if self.ops_total > listed {
            let _ = write!(label, "… and {} more\\l", self.ops_total - listed);
        }
        let note = format!(
            "capture_core_ops [shape=note, style=filled, fillcolor=\"#fffbe6\", fontname=\"Helvetica\", fontsize=10, label=\"{label}\"];\n"
        );
        text.insert_str(end, &note);
    }
}
