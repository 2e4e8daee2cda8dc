//! Draws a captured graph: a fork/join with a few kernels, written as Graphviz DOT to
//! `docs/graph.dot` and rendered to `docs/graph.png` when Graphviz's `dot` is installed.
//! Runs on the GPU when present (the driver's picture, `cuGraphDebugDotPrint`), otherwise on
//! the simulated device (each node labelled with the operation and call site that recorded it).
//!
//! ```text
//! cargo run --example 05_graph_picture [-- OUT_DIR]
//! ```

use std::path::PathBuf;
use std::process::Command;

use capture_core::{kernels, CaptureOptions, LaunchConfig, Result};

fn main() -> Result<()> {
    env_logger::Builder::new().filter_level(log::LevelFilter::Warn).parse_default_env().init();
    let out_dir = std::env::args()
        .nth(1)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..").join("docs"));

    let ctx = capture_examples::open_device();

    let mut stream = ctx.new_stream()?;
    let module = ctx.load_module(kernels::CHAIN_PTX)?;
    let (scale, add, incr) = (module.kernel("scale_f32")?, module.kernel("add_f32")?, module.kernel("incr_f32")?);
    let n: usize = 1024;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let input = stream.alloc_pinned::<f32>(n)?;
    let output = stream.alloc_pinned::<f32>(n)?;
    let x = stream.alloc_zeros::<f32>(n)?;
    let y = stream.alloc_zeros::<f32>(n)?;
    let z = stream.alloc_zeros::<f32>(n)?;
    input.write(&vec![1.0f32; n])?;

    // x <- input; x += 1; then, side by side, y = 3x (on a forked stream) and z = x / 2;
    // joined: z = y + z; output <- z. Result per element: 3 * 2 + 1 = 7.
    let mut g = stream.capture_with(CaptureOptions::new().trace_ops())?; // list the operations in the picture
    g.upload_async(&x, &input)?;
    g.launch(&incr, cfg, (&x, n as u32))?;
    let mut side = g.fork()?;
    side.launch(&scale, cfg, (&x, &y, 3.0f32, n as u32))?;
    g.launch(&scale, cfg, (&x, &z, 0.5f32, n as u32))?;
    g.join(side)?;
    g.launch(&add, cfg, (&y, &z, &z, n as u32))?;
    g.download_async(&output, &z)?;
    let (graph, report) = g.finish()?;
    println!("{report}");

    graph.launch(&mut stream)?;
    stream.synchronize()?;
    println!("output[0] = {} (expected 7)", output.read()[0]);

    let dot_path = out_dir.join("graph.dot");
    let png_path = out_dir.join("graph.png");
    graph.write_dot(&dot_path)?;
    println!("wrote {}", dot_path.display());
    match Command::new("dot").arg("-Tpng").arg(&dot_path).arg("-o").arg(&png_path).status() {
        Ok(s) if s.success() => println!("rendered {}", png_path.display()),
        Ok(s) => println!("Graphviz `dot` failed ({s}); the DOT file is still in {}", dot_path.display()),
        Err(e) => println!(
            "Graphviz `dot` is not available ({e}): install it (Debian: `apt-get install graphviz`) and run `dot -Tpng {} -o {}`",
            dot_path.display(),
            png_path.display()
        ),
    }
    Ok(())
}
