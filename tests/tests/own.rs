//! The ownership proof (issue #30, part 3): a graph's snapshot checked against the memory
//! it owns. A node that uses an allocation outside the owner set is refused, and the
//! refusal names the node, its operation and call site, the place in the node and the
//! allocation; graph memory, resources, device-lifetime memory and plain values pass.
//! Each case runs on the simulated device (CI) and on the GPU.

use capture_core::own::{self, Holding, Owners, Place};
use capture_core::{Context, Error, KernelParam, LaunchConfig};
use capture_tests::{on_both, Fixture};

const N: usize = 256;

fn cfg() -> LaunchConfig {
    LaunchConfig::for_num_elems(N as u32)
}

// Every address held: proved, each use counted where it belongs.
on_both!(a_graph_that_owns_everything_is_proved, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture().unwrap();
    let t = g.alloc_async::<f32>(N).unwrap();
    g.launch(&f.add, cfg(), (&x, &t, &y, N as u32)).unwrap();
    g.free_async(t).unwrap();
    let (graph, snap, _) = g.finish_with_snapshot().unwrap();
    let mut owners = Owners::new();
    owners.hold(&x, "x").hold(&y, "y");
    let proof = own::prove(&snap, &owners).unwrap();
    assert_eq!(proof.resources, 2, "{proof}");
    assert!(proof.graph_memory >= 2, "the temporary, read by the kernel and freed: {proof}");
    assert_eq!(proof.addresses, proof.resources + proof.graph_memory, "{proof}");
    graph.launch(&mut f.stream).unwrap();
    f.stream.synchronize().unwrap();
});

// A kernel parameter in an allocation outside the owner set: refused, naming the node,
// the operation and its call site, the parameter, and the allocation.
on_both!(a_kernel_on_memory_not_owned_is_refused_naming_the_node, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let held = f.stream.alloc_zeros::<f32>(N).unwrap();
    let other = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture_with(capture_core::CaptureOptions::new().trace_nodes()).unwrap();
    g.launch(&f.incr, cfg(), (&held, N as u32)).unwrap();
    g.launch(&f.scale, cfg(), (&held, &other, 2.0f32, N as u32)).unwrap();
    let (_graph, snap, _) = g.finish_with_snapshot().unwrap();
    let mut owners = Owners::new();
    owners.hold(&held, "held");
    let (refused, _) = own::unowned(&snap, &owners);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0].node, 1);
    assert_eq!(refused[0].place, Place::Param(1));
    let err = own::prove(&snap, &owners).unwrap_err();
    let Error::NotOwned(ref n) = err else { panic!("{err}") };
    assert_eq!(n.node, 1);
    assert!(n.node_kind.contains("scale_f32"), "{}", n.node_kind);
    let op = n.op.as_ref().expect("a launch through the library is named");
    assert_eq!(op.op, "Stream::launch");
    assert!(op.site.file.ends_with("own.rs"), "{op}");
    assert_eq!(n.place, "parameter 1");
    let text = err.to_string();
    assert!(text.contains("which the graph does not own") && text.contains("resources"), "{text}");
});

// A copy from, and a memset of, memory not owned: both refused, each place named.
on_both!(copies_and_memsets_of_memory_not_owned_are_refused, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let held = f.stream.alloc_zeros::<f32>(N).unwrap();
    let other = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.copy_async(&held, &other).unwrap();
    g.memset_async(&other, 0).unwrap();
    let (_graph, snap, _) = g.finish_with_snapshot().unwrap();
    let mut owners = Owners::new();
    owners.hold(&held, "held");
    let (refused, _) = own::unowned(&snap, &owners);
    let places: Vec<_> = refused.iter().map(|u| u.place.clone()).collect();
    assert_eq!(places, [Place::CopySource, Place::MemsetDestination]);
    let Error::NotOwned(n) = own::prove(&snap, &owners).unwrap_err() else { panic!() };
    assert_eq!(n.more, 1);
});

// A range that is held only in part does not cover a copy that runs past it.
on_both!(a_copy_past_the_end_of_a_held_range_is_refused, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let a = f.stream.alloc_zeros::<f32>(N).unwrap();
    let b = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.copy_async(&b, &a).unwrap();
    let (_graph, snap, _) = g.finish_with_snapshot().unwrap();
    let own::Unowned { addr, .. } = own::unowned(&snap, &Owners::new()).0[0].clone();
    let mut owners = Owners::new();
    owners.hold(&b, "b").resource(addr, (N * 4 / 2) as u64, "half of a");
    assert!(own::prove(&snap, &owners).is_err(), "half a buffer does not hold a whole-buffer copy");
    owners.resource(addr, (N * 4) as u64, "all of a");
    own::prove(&snap, &owners).unwrap();
});

// Memory declared to live as long as the device: counted apart from resources.
on_both!(device_lifetime_memory_passes_and_is_counted, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let w = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.incr, cfg(), (&w, N as u32)).unwrap();
    let (_graph, snap, _) = g.finish_with_snapshot().unwrap();
    let addr = own::unowned(&snap, &Owners::new()).0[0].addr;
    let mut owners = Owners::new();
    owners.device_lifetime(addr, (N * 4) as u64, "a workspace the device keeps");
    assert_eq!(owners.held()[0].holding, Holding::DeviceLifetime);
    let proof = own::prove(&snap, &owners).unwrap();
    assert_eq!((proof.device_lifetime, proof.resources), (1, 0));
});

// Attack (part 4): memory reached behind the library's back — an address handed to a
// kernel raw, of a buffer then freed and its memory reused before the first replay — is
// refused at capture, before any replay can read it.
on_both!(a_raw_address_freed_before_the_first_replay_is_refused_at_capture, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let victim = f.stream.alloc_zeros::<f32>(N).unwrap();
    // SAFETY (of the test): the address is only recorded; the graph is refused and never replayed.
    let addr = unsafe { victim.device_ptr() };
    let mut g = f.stream.capture().unwrap();
    // SAFETY (of the test): the proof below refuses the graph, so it is never replayed.
    let raw = unsafe { KernelParam::raw_device_ptr(addr) };
    g.launch(&f.incr, cfg(), (raw, N as u32)).unwrap();
    let (graph, snap, _) = g.finish_with_snapshot().unwrap();
    let err = own::prove(&snap, &Owners::new()).unwrap_err();
    assert!(matches!(err, Error::NotOwned(ref n) if n.node == 0 && n.addr == addr), "{err}");
    drop(graph); // refused: never replayed
    f.stream.free(victim).unwrap();
    let _reuse = f.stream.alloc_zeros::<f32>(N).unwrap();
});

// Plain values — sizes, floats — are never taken for addresses.
on_both!(values_are_not_refused, |ctx: Context| {
    let mut f = Fixture::new(ctx).unwrap();
    let x = f.stream.alloc_zeros::<f32>(N).unwrap();
    let y = f.stream.alloc_zeros::<f32>(N).unwrap();
    let mut g = f.stream.capture().unwrap();
    g.launch(&f.scale, cfg(), (&x, &y, 1.5f32, N as u32)).unwrap();
    let (_graph, snap, _) = g.finish_with_snapshot().unwrap();
    let mut owners = Owners::new();
    owners.hold(&x, "x").hold(&y, "y");
    let proof = own::prove(&snap, &owners).unwrap();
    assert_eq!(proof.addresses, 2, "the float and the size are values: {proof}");
});
