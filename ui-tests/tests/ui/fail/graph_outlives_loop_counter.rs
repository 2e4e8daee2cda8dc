// A graph holding a loop keeps its counter (the condition's step count lives in it):
// the counter cannot be dropped while the graph lives.
use capture_core::control::{LoopCounter, Until};
use capture_core::{Context, Result};

fn main() -> Result<()> {
    let ctx = Context::simulated();
    let mut s = ctx.new_stream()?;
    let counter = LoopCounter::new(&mut s)?;
    let (graph, _) = {
        let mut g = s.capture()?;
        g.stream().while_loop(&counter, 16, Until::Bound, |_| Ok(()))?;
        g.finish()?
    };
    drop(counter);
    graph.launch(&mut s)?;
    Ok(())
}
