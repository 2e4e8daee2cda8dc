//! The checker's tests, one per rule family and per way of writing a call.

use super::*;
use quote::quote;

/// `(category, allow-name, message)` for each finding.
fn run(function: TokenStream, allowed: &[&str]) -> Vec<(Category, String, String)> {
    let function = AnyFn::parse(function).expect("test input parses");
    let allowed: Vec<String> = allowed.iter().map(|s| s.to_string()).collect();
    check(&function, &allowed).into_iter().map(|f| (f.category, f.name, f.error.to_string())).collect()
}

fn categories(function: TokenStream) -> Vec<(Category, String)> {
    run(function, &[]).into_iter().map(|(category, name, _)| (category, name)).collect()
}

fn names_in(function: TokenStream, category: Category) -> Vec<String> {
    let found = categories(function);
    for (other, name) in &found {
        assert_eq!(*other, category, "`{name}` is in the wrong category");
    }
    found.into_iter().map(|(_, name)| name).collect()
}

#[test]
fn managed_allocation() {
    let names = names_in(
        quote! {
            fn step(stream: &mut Stream<Capturing<'_>>, ctx: &Ctx) {
                unsafe { cudarc::driver::sys::cuMemAllocManaged(&mut p, n, 1) };
                cudaMallocManaged(&mut p, n, 1);
                let a = unsafe { cudarc::driver::result::malloc_managed(n, flags) };
                let b = stream.alloc_managed::<f32>(n);
                let c = unsafe { ctx.alloc_unified::<f32>(n, true) };
            }
        },
        Category::ManagedAlloc,
    );
    assert_eq!(names, ["cuMemAllocManaged", "cudaMallocManaged", "malloc_managed", "alloc_managed", "alloc_unified"]);
}

#[test]
fn synchronous_allocation_and_free() {
    let names = names_in(
        quote! {
            fn step(s: &S, stream: &X) {
                sys::cuMemAlloc_v2(&mut p, n);
                cuMemAlloc(&mut p, n);
                cudaMalloc(&mut p, n);
                cuMemAllocHost_v2(&mut h, n);
                cudaMallocHost(&mut h, n);
                cuMemHostAlloc(&mut h, n, 0);
                result::malloc_sync(n);
                result::malloc_host(n, 0);
                let a = stream.alloc_zeros::<f32>(n);
                let b = unsafe { stream.alloc::<f32>(n) };
                let c = stream.clone_htod(&host);
                result::free_sync(p);
                cuMemFree_v2(p);
                cudaFree(p);
                cuMemFreeHost(h);
                cudaFreeHost(h);
                let d = s.alloc_uninit::<u8>(n);
                let e = s.alloc_pinned::<u8>(n);
                let f = s.upload_new(&host);
                s.free(d);
            }
        },
        Category::SyncAlloc,
    );
    assert_eq!(names.len(), 20, "{names:?}");
}

#[test]
fn synchronous_copies_and_memsets() {
    let names = names_in(
        quote! {
            fn step(s: &S, stream: &X) {
                cuMemcpyHtoD_v2(d, h, n);
                cuMemcpyDtoH_v2(h, d, n);
                cuMemcpy(a, b, n);
                cudaMemcpy(a, b, n, kind);
                cuMemsetD8_v2(d, 0, n);
                cuMemsetD16_v2(d, 0, n);
                cuMemsetD32_v2(d, 0, n);
                cudaMemset(d, 0, n);
                result::memcpy_htod_sync(d, &h);
                result::memcpy_dtoh_sync(&mut h, d);
                result::memcpy_dtod_sync(a, b, n);
                result::memset_d8_sync(d, 0, n);
                let v = stream.clone_dtoh(&d);
                let v = stream.memcpy_dtov(&d);
                let d2 = stream.memcpy_stod(&h);
                s.upload(&mut d, &h);
                s.download(&d);
                s.download_into(&d, &mut h);
                s.memset_sync(&d, 0);
            }
        },
        Category::SyncCopy,
    );
    assert_eq!(names.len(), 19, "{names:?}");
}

#[test]
fn cudarc_async_copies_are_fine() {
    let found = categories(quote! {
        fn step(s: &mut S) {
            s.memcpy_htod(&host, &mut dev)?;
            s.memcpy_dtoh(&dev, &mut host)?;
            s.memcpy_dtod(&a, &mut b)?;
            s.memset_zeros(&mut b)?;
            let g = s.alloc_async::<f32>(n)?;
            s.upload_async(&dev, &pinned)?;
            s.download_async(&pinned, &dev)?;
            s.memset_async(&dev, 0)?;
            s.copy_async(&a, &b)?;
            s.launch(&kernel, cfg, (&a, &b, n))?;
            s.record_event(&e)?;
            s.wait_event(&e)?;
        }
    });
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn synchronization_and_queries() {
    let names = names_in(
        quote! {
            fn step(s: &S, e: &E) {
                s.synchronize()?;
                ctx.synchronize()?;
                self.inner.stream().synchronize()?;
                CudaStream::synchronize(&s)?;
                result::ctx::synchronize()?;
                cuStreamSynchronize(raw);
                cuCtxSynchronize();
                cudaDeviceSynchronize();
                cudaStreamSynchronize(raw);
                cuStreamQuery(raw);
                cudaStreamQuery(raw);
                cuEventQuery(ev);
                cudaEventQuery(ev);
                cuEventSynchronize(ev);
                cudaEventSynchronize(ev);
                let done = s.query()?;
                let done = e.is_complete();
                let done = e.try_is_complete()?;
                let done = CudaEvent::query(&e)?;
            }
        },
        Category::Synchronize,
    );
    assert_eq!(names.len(), 19, "{names:?}");
}

#[test]
fn idle_handles_in_the_signature() {
    let names = names_in(
        quote! {
            fn step(
                a: &Stream<Idle>,
                b: &mut Stream<Idle>,
                c: Stream,
                d: &mut capture_core::Stream<capture_core::Idle>,
                e: Arc<CudaStream>,
                f: &cudarc::driver::CudaStream,
                g: &Arc<CudaContext>,
                h: Option<&Stream>,
                ok1: &mut Stream<Capturing<'a>>,
                ok2: &mut S,
                ok3: impl Iterator<Item = u8>,
                ok4: Pin<&mut dyn Stream<Item = u8>>,
            ) {}
        },
        Category::IdleHandle,
    );
    assert_eq!(names, ["Stream", "Stream", "Stream", "Stream", "CudaStream", "CudaStream", "CudaContext", "Stream"]);
}

#[test]
fn idle_handle_message_names_the_parameter() {
    let found = run(
        quote!(
            fn step(stream: &Stream<Idle>) {}
        ),
        &[],
    );
    assert!(
        found[0].2.starts_with(
            "a `#[capturable]` function cannot take an idle stream: parameter `stream` is a `Stream<Idle>`"
        ),
        "{}",
        found[0].2
    );
    let found = run(
        quote!(
            fn step(self: &Arc<CudaStream>) {}
        ),
        &[],
    );
    assert!(found[0].2.starts_with("a `#[capturable]` function cannot take cudarc's `CudaStream`: parameter `self`"));
    let found = run(
        quote!(
            fn step(mut s: Stream) {}
        ),
        &[],
    );
    assert!(found[0].2.contains("parameter `mut s` is a `Stream`, which means `Stream<Idle>`"), "{}", found[0].2);
}

#[test]
fn raw_driver_calls() {
    let names = names_in(
        quote! {
            fn step() {
                unsafe {
                    cudarc::driver::sys::cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, s, p, e);
                    sys::cuGraphLaunch(exec, s);
                    result::launch_kernel(f, grid, block, 0, s, params);
                    cudarc::driver::result::stream::wait_event(s, e, flags);
                    ::cudarc::runtime::sys::cudaLaunchKernel(f, g, b, a, 0, s);
                    cuMemcpyHtoDAsync_v2(d, h, n, s);
                    result::graph::upload(exec, s);
                }
            }
        },
        Category::RawDriver,
    );
    assert_eq!(
        names,
        [
            "cuLaunchKernel",
            "cuGraphLaunch",
            "launch_kernel",
            "wait_event",
            "cudaLaunchKernel",
            "cuMemcpyHtoDAsync_v2",
            "upload"
        ]
    );
}

#[test]
fn raw_driver_types_and_constants_are_fine() {
    let found = categories(quote! {
        fn step() -> sys::CUresult {
            let status = cudarc::driver::sys::CUresult::CUDA_SUCCESS;
            let e: result::DriverError = make();
            let r = std::result::Result::<u8, ()>::Ok(1);
            sys::CUresult::CUDA_SUCCESS
        }
    });
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn async_fn() {
    let found = run(
        quote!(
            async fn step(s: &mut Stream<Capturing<'_>>) {}
        ),
        &[],
    );
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, Category::AsyncFn);
    assert!(found[0].2.starts_with("a `#[capturable]` function cannot be `async`"));
    // `async fn` cannot be allowed.
    assert_eq!(
        run(
            quote!(
                async fn step() {}
            ),
            &["async"]
        )
        .len(),
        1
    );
}

#[test]
fn aliases_inside_the_body() {
    let found = categories(quote! {
        fn step() {
            use cudarc::driver::result::malloc_sync as m;
            use cudarc::driver::sys as s;
            use cudarc::driver::{result::{self as r}, sys::cuMemFree_v2 as release};
            let p = unsafe { m(n) };
            unsafe { s::cuMemsetD8_v2(p, 0, n) };
            unsafe { r::stream::synchronize(raw) };
            unsafe { release(p) };
        }
    });
    let expected = [
        (Category::SyncAlloc, "malloc_sync"),
        (Category::SyncCopy, "cuMemsetD8_v2"),
        (Category::Synchronize, "synchronize"),
        (Category::SyncAlloc, "cuMemFree_v2"),
    ];
    let expected: Vec<_> = expected.map(|(c, n)| (c, n.to_owned())).into();
    assert_eq!(found, expected);
}

#[test]
fn alias_messages_show_both_names() {
    let found = run(
        quote! {
            fn step() {
                {
                    use cudarc::driver::result::malloc_sync as m;
                }
                let p = unsafe { m(n) };
            }
        },
        &[],
    );
    assert_eq!(found.len(), 1);
    assert!(
        found[0].2.starts_with(
            "cannot call `m` (that is, `cudarc::driver::result::malloc_sync`) in a `#[capturable]` function: \
             it allocates device memory synchronously"
        ),
        "{}",
        found[0].2
    );
}

#[test]
fn alias_to_a_raw_module() {
    let found = categories(quote! {
        fn step() {
            use cudarc::driver::result as raw;
            unsafe { raw::launch_kernel(f, g, b, 0, s, p) };
        }
    });
    assert_eq!(found, [(Category::RawDriver, "launch_kernel".to_owned())]);
}

#[test]
fn alias_cycles_terminate() {
    let found = categories(quote! {
        fn step() {
            use a as b;
            use b as a;
            a::synchronize();
        }
    });
    assert_eq!(found.len(), 1);
}

#[test]
fn closures_nested_blocks_and_macros() {
    let names = names_in(
        quote! {
            fn step(s: &mut S) {
                let f = |x: &S| x.synchronize();
                let g = move || { { loop { if ok { stream.synchronize()?; } } } };
                println!("{:?}", s.synchronize());
                assert!(ctx.synchronize().is_ok(), "msg");
                let v = vec![stream.synchronize(), other.synchronize()];
                let msg = format!("{}", nested!(x, inner.synchronize()));
                my_macro! { let a = 1; stream.synchronize()?; }
                let h = async move { stream.synchronize() };
                if let Some(x) = cond { match x { _ => cudarc::driver::result::ctx::synchronize() } };
            }
        },
        Category::Synchronize,
    );
    assert_eq!(names.len(), 10, "{names:?}");
}

#[test]
fn unparseable_macro_bodies_are_skipped() {
    let function = "fn step() { quote!(#a.synchronize()); sqlx::query!(\"SELECT 1\" => x); }";
    let found = categories(function.parse().unwrap());
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn paths_used_as_values() {
    let found = categories(quote! {
        fn step() {
            let f = cudarc::driver::result::free_sync;
            let g = cuMemAlloc_v2;
            ptrs.iter().for_each(CudaStream::synchronize);
            let synchronize = true;
            if synchronize {}
        }
    });
    assert_eq!(
        found,
        [
            (Category::SyncAlloc, "free_sync".to_owned()),
            (Category::SyncAlloc, "cuMemAlloc_v2".to_owned()),
            (Category::Synchronize, "synchronize".to_owned()),
        ]
    );
}

#[test]
fn ordinary_words_as_free_functions_are_fine() {
    let found = categories(quote! {
        fn step() {
            unsafe { libc::free(p) };
            let p = unsafe { std::alloc::alloc(layout) };
            let q = url::query(&u);
            let d = download(&url);
        }
    });
    assert!(found.is_empty(), "{found:?}");
    let found = categories(quote! {
        fn step(s: &mut S) {
            Stream::free(s, buf);
            <Stream<Idle>>::query(s);
        }
    });
    assert_eq!(found.len(), 2, "{found:?}");
}

#[test]
fn nested_items_are_separate_functions() {
    let found = categories(quote! {
        fn step() {
            fn helper() { cudaDeviceSynchronize(); }
            impl Foo { fn bar(&self) { self.s.synchronize(); } }
            const N: usize = 4;
        }
    });
    assert!(found.is_empty(), "{found:?}");
}

#[test]
fn allow_by_name() {
    let function = quote! {
        fn step(s: &S, raw: Arc<CudaStream>) {
            use cudarc::driver::result::malloc_sync as m;
            s.synchronize();
            m(4);
            cuLaunchKernel(a);
            cudaDeviceSynchronize();
        }
    };
    assert_eq!(run(function.clone(), &[]).len(), 5);
    let left = run(function, &["synchronize", "m", "cuLaunchKernel", "CudaStream"]);
    let left: Vec<_> = left.into_iter().map(|(_, name, _)| name).collect();
    assert_eq!(left, ["cudaDeviceSynchronize"]);
}

#[test]
fn every_finding_is_reported() {
    let found = categories(quote! {
        async fn step(s: &Stream<Idle>) {
            s.synchronize();
            s.upload(&d, &h);
            cuMemAllocManaged(p, n, 1);
        }
    });
    let mut cats: Vec<_> = found.iter().map(|(c, _)| *c).collect();
    cats.sort();
    assert_eq!(
        cats,
        [Category::ManagedAlloc, Category::SyncCopy, Category::Synchronize, Category::IdleHandle, Category::AsyncFn]
    );
}

#[test]
fn kinds_of_functions() {
    // A method with a receiver, a generic `unsafe fn`, a trait method with a default body,
    // and `default fn` (only an impl item).
    for function in [
        quote!(
            pub fn step(&mut self) {
                self.stream.synchronize();
            }
        ),
        quote!(
            pub(crate) unsafe fn step<T: Copy>(s: &mut T)
            where
                T: Send,
            {
                s.synchronize();
            }
        ),
        quote!(
            fn step(&self) -> u8
            where
                Self: Sized,
            {
                self.synchronize();
                0
            }
        ),
        quote!(default fn step(&self) { self.synchronize(); }),
        quote!(
            #[inline]
            const fn step() {
                cuCtxSynchronize();
            }
        ),
    ] {
        assert_eq!(categories(function.clone()).len(), 1, "{function}");
    }
    assert!(matches!(AnyFn::parse(quote!(default fn step(&self) {})), Ok(AnyFn::Impl(_))));
    assert!(matches!(
        AnyFn::parse(quote!(
            fn step(&self);
        )),
        Ok(AnyFn::Trait(_))
    ));
    assert!(AnyFn::parse(quote!(
        struct S;
    ))
    .is_err());
}

#[test]
fn check_fn_source_is_a_pure_entry_point() {
    let found = check_fn_source("fn f(s: &S) { s.synchronize(); }").unwrap();
    assert_eq!(found.len(), 1);
    assert!(check_fn_source("struct S;").is_err());
}
