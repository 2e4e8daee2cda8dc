//! The simulated device's picture of a graph, in Graphviz DOT (issue #11, part 4).
//!
//! It draws the node list the capture recorded, with the edges the capture implied: a node
//! depends on the previous node of its stream; a forked stream's first node depends on the
//! fork's event node; a join's event node depends on the last node of the joined stream.
//! Event record and wait are drawn as small grey event nodes, where the driver records no
//! node and draws the edge directly (its `NodeCounts::other` then differs too).

use std::collections::HashMap;
use std::fmt::Write;

use super::{AllocKind, Graph, Node, State};

/// Escapes `s` for a double-quoted DOT string.
pub(crate) fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out
}

/// "host", "device" or "?" for the memory at `addr`.
fn side(st: &State, addr: u64) -> &'static str {
    match st.mem.find(addr, 0).ok().and_then(|(base, _)| st.mem.allocs.get(&base)).map(|a| a.kind) {
        Some(AllocKind::Host) => "H",
        Some(AllocKind::Managed) => "M",
        Some(AllocKind::Device | AllocKind::Graph) => "D",
        None => "?",
    }
}

/// The node's kind (first line), details, and fill colour.
fn describe(st: &State, n: &Node) -> (&'static str, String, &'static str) {
    match n {
        Node::Kernel { name, grid, block, slots } => (
            "kernel",
            format!(
                "{name}\ngrid {}x{}x{}, block {}x{}x{}, {} args",
                grid.0,
                grid.1,
                grid.2,
                block.0,
                block.1,
                block.2,
                slots.len()
            ),
            "#cfe2ff",
        ),
        Node::Copy { dst, src, bytes } => {
            ("memcpy", format!("{}to{} {bytes} B", side(st, *src), side(st, *dst)), "#d1e7dd")
        }
        Node::HostCopy { data, .. } => (
            "memcpy",
            format!("HtoD {} B from pageable host memory\n(replays re-read a stale address)", data.len()),
            "#f8d7da",
        ),
        Node::Memset { value, bytes, .. } => ("memset", format!("{bytes} B to {value:#04x}"), "#fff3cd"),
        Node::MemAlloc { ptr, .. } => {
            let len = st.mem.len_of(*ptr, AllocKind::Graph).unwrap_or(0);
            ("mem alloc", format!("{len} B at {ptr:#x}"), "#e0cffc")
        }
        Node::MemFree { ptr } => ("mem free", format!("{ptr:#x}"), "#e0cffc"),
        Node::Event => ("event", "record / wait (an edge on the GPU)".to_owned(), "#e2e3e5"),
        Node::Collective(c) => (
            "collective",
            format!("{} (communicator #{}, rank {} of {})", c.call.name(), c.comm, c.rank, c.nranks),
            "#f8d7da",
        ),
        Node::CondReset { .. } => ("condition", "handle made (0 until a kernel sets it)".to_string(), "#ffe5d0"),
        Node::Cond { kind, bodies, .. } => {
            let inner: Vec<String> = bodies
                .iter()
                .enumerate()
                .map(|(i, b)| {
                    let names: Vec<&str> = b
                        .iter()
                        .map(|n| match n {
                            Node::Kernel { name, .. } => name.as_str(),
                            other => describe(st, other).0,
                        })
                        .collect();
                    format!("body {i}: {} node(s): {}", b.len(), names.join(", "))
                })
                .collect();
            let k = match kind {
                crate::device::CondKind::If => "IF",
                crate::device::CondKind::While => "WHILE",
            };
            ("conditional", format!("{k}\n{}", inner.join("\n")), "#ffe5d0")
        }
    }
}

/// The graph as DOT text.
pub(super) fn write(st: &State, g: &Graph) -> String {
    // Streams numbered in order of first use: 0 is the stream the capture began on.
    let mut streams: HashMap<usize, usize> = HashMap::new();
    streams.insert(g.origin, 0);
    for s in &g.stream_of {
        let next = streams.len();
        streams.entry(*s).or_insert(next);
    }
    let mut out = String::new();
    let _ = writeln!(out, "digraph \"capture-core graph\" {{");
    let _ = writeln!(
        out,
        "  graph [label=\"simulated device: {} nodes on {} stream(s)\", labelloc=t, fontname=\"Helvetica\", fontsize=12];",
        g.nodes.len(),
        streams.len()
    );
    let _ = writeln!(out, "  node [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];");
    for (i, n) in g.nodes.iter().enumerate() {
        let (kind, detail, color) = describe(st, n);
        let stream = g.stream_of.get(i).and_then(|s| streams.get(s)).copied().unwrap_or(0);
        let mut label = format!("{i}: {kind}\n{detail}\nstream {stream}");
        match g.labels.get(i).copied().flatten() {
            Some(l) => {
                let _ = write!(label, "\n{}", l.op);
                if let Some(site) = l.site {
                    let _ = write!(label, "\n{site}");
                }
            }
            None => label.push_str("\n(not issued through this library)"),
        }
        let shape = if matches!(n, Node::Event) { ", shape=ellipse" } else { "" };
        let _ = writeln!(out, "  n{i} [label=\"{}\", fillcolor=\"{color}\"{shape}];", escape(&label));
    }
    for (from, to) in &g.edges {
        let _ = writeln!(out, "  n{from} -> n{to};");
    }
    out.push_str("}\n");
    out
}
