//! A picture of a graph (issue #11, part 4): `Graph::to_dot` draws the driver's DOT on the
//! GPU (`cuGraphDebugDotPrint`, with a note listing the library's operations and call sites)
//! and the simulated device's own node list, each node labelled with the operation and call
//! site that recorded it, with the capture's dependency edges.

use std::collections::{HashMap, HashSet};

use capture_core::{Context, DeviceKind, Error, LaunchConfig};
use capture_tests::{on_both, Fixture};

const N: u32 = 256;

/// Node ids by their label's first line (`"<i>: <kind>"`) and the edges, of the simulated
/// device's DOT.
fn parse(dot: &str) -> (HashMap<usize, String>, HashSet<(usize, usize)>) {
    let mut labels = HashMap::new();
    let mut edges = HashSet::new();
    for line in dot.lines().map(str::trim) {
        if let Some((a, b)) = line.strip_suffix(';').and_then(|l| l.split_once(" -> ")) {
            let id = |s: &str| s.trim_start_matches('n').parse::<usize>().unwrap();
            edges.insert((id(a), id(b)));
        } else if let Some(rest) = line.strip_prefix('n') {
            if let Some((id, label)) = rest.split_once(" [label=\"") {
                if let Ok(id) = id.parse() {
                    labels.insert(id, label.split("\", fillcolor").next().unwrap().to_owned());
                }
            }
        }
    }
    (labels, edges)
}

/// Whether `to` is reachable from `from` along `edges`.
fn reaches(edges: &HashSet<(usize, usize)>, from: usize, to: usize) -> bool {
    let mut todo = vec![from];
    let mut seen = HashSet::new();
    while let Some(n) = todo.pop() {
        if n == to {
            return true;
        }
        if seen.insert(n) {
            todo.extend(edges.iter().filter(|e| e.0 == n).map(|e| e.1));
        }
    }
    false
}

on_both!(fork_join_picture, |ctx: Context| {
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let cfg = LaunchConfig::for_num_elems(N);
    let x = f.stream.upload_new(&[1.0f32; N as usize]).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    let z = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    let out = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    // On a GPU the operations are listed only when asked for (they cost time per op).
    let mut g = f.stream.capture_with(capture_core::CaptureOptions::new().trace_ops()).unwrap();
    g.launch(&f.incr, cfg, (&x, N)).unwrap(); // x = 2
    let mut side = g.fork().unwrap();
    side.launch(&f.scale, cfg, (&x, &y, 3.0f32, N)).unwrap(); // y = 6, on the fork
    g.launch(&f.scale, cfg, (&x, &z, 0.5f32, N)).unwrap(); // z = 1, beside it
    g.join(side).unwrap();
    g.launch(&f.add, cfg, (&y, &z, &out, N)).unwrap(); // out = 7
    let (graph, _) = g.finish().unwrap();
    graph.launch(&mut f.stream).unwrap();
    assert_eq!(f.stream.download(&out).unwrap()[0], 7.0);

    let dot = graph.to_dot().unwrap();
    assert!(dot.trim_start().starts_with("digraph"), "{dot}");
    assert!(dot.trim_end().ends_with('}'), "{dot}");
    for k in ["incr_f32", "scale_f32", "add_f32"] {
        assert!(dot.contains(k), "kernel {k} missing from the picture:\n{dot}");
    }
    // The library's operations and call sites are in it on both devices.
    assert!(dot.contains("Stream::launch") && dot.contains("Stream::fork") && dot.contains("Stream::join"), "{dot}");
    assert!(dot.contains("graph_picture.rs:"), "call sites missing:\n{dot}");

    if ctx.kind() == DeviceKind::Simulated {
        let (labels, edges) = parse(&dot);
        let find = |needle: &str| -> Vec<usize> {
            let mut v: Vec<usize> = labels.iter().filter(|(_, l)| l.contains(needle)).map(|(i, _)| *i).collect();
            v.sort();
            v
        };
        let incr = find("incr_f32")[0];
        let scales = find("scale_f32");
        let add = find("add_f32")[0];
        assert_eq!(scales.len(), 2, "{dot}");
        // Both scales run after incr; add runs after both; the two scales are independent.
        for &s in &scales {
            assert!(reaches(&edges, incr, s), "scale n{s} does not depend on incr n{incr}:\n{dot}");
            assert!(reaches(&edges, s, add), "add n{add} does not depend on scale n{s}:\n{dot}");
        }
        assert!(!reaches(&edges, scales[0], scales[1]) && !reaches(&edges, scales[1], scales[0]), "{dot}");
        // The fork's scale is on stream 1, labelled with its call site.
        assert!(labels.values().any(|l| l.contains("scale_f32") && l.contains("stream 1")), "{dot}");
        // Every node is labelled with the operation that recorded it.
        assert!(labels.values().all(|l| l.contains("Stream::")), "{dot}");
    } else {
        // The driver's picture, with the note listing the library's operations.
        assert!(dot.contains("capture_core_ops"), "{dot}");
        assert!(dot.contains("5 operation(s)") || dot.contains("operation(s) issued"), "{dot}");
    }
});

// The simulated device labels memory nodes, the frees the guard adds at the end of capture,
// and work issued behind the library's back.
#[test]
fn sim_picture_labels_memory_nodes_and_foreign_work() {
    let ctx = capture_tests::sim();
    let mut f = Fixture::new(ctx.clone()).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    let mut g = f.stream.capture().unwrap();
    let tmp = g.alloc_async::<f32>(N as usize).unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(N), (&tmp, N)).unwrap();
    ctx.sim().unwrap().foreign_memcpy_htod(&g, &x, &[1.0f32; 4]).unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(N), (&x, N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    let dot = graph.to_dot().unwrap();
    let (labels, edges) = parse(&dot);
    let kinds: Vec<&str> = (0..labels.len()).map(|i| labels[&i].split("\\n").next().unwrap()).collect();
    assert_eq!(kinds, ["0: mem alloc", "1: kernel", "2: memcpy", "3: kernel", "4: mem free"], "{dot}");
    assert!(labels[&0].contains("Stream::alloc_async") && labels[&1].contains("Stream::launch"), "{dot}");
    assert!(labels[&2].contains("behind the library's back") && labels[&2].contains("pageable"), "{dot}");
    assert!(labels[&4].contains("end of capture"), "{dot}");
    // One stream: a chain.
    let chain: HashSet<_> = (0..4).map(|i| (i, i + 1)).collect();
    assert_eq!(edges, chain, "{dot}");
}

#[test]
#[cfg_attr(miri, ignore = "Miri isolates the file system")]
fn write_dot_writes_the_file_and_reports_a_bad_path() {
    let mut f = Fixture::new(capture_tests::sim()).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N as usize).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, LaunchConfig::for_num_elems(N), (&x, N)).unwrap();
    let (graph, _) = g.finish().unwrap();
    let path = std::env::temp_dir().join(format!("capture-core-picture-test-{}.dot", std::process::id()));
    graph.write_dot(&path).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), graph.to_dot().unwrap());
    let _ = std::fs::remove_file(&path);
    let bad = std::env::temp_dir().join("capture-core-no-such-dir").join("x").join("graph.dot");
    let e = graph.write_dot(&bad).unwrap_err();
    assert!(matches!(e, Error::Io { op: "Graph::write_dot", .. }), "{e}");
    assert!(e.to_string().contains("writable"), "{e}");
}
