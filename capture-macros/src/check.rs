//! The checker: reads one function's signature and body and collects every place that would break
//! or silently corrupt a CUDA graph capture.
//!
//! It works on names, so it sees what the function's own tokens say: calls, method calls, paths to
//! functions, `use` aliases declared inside the function, and the arguments of macros that parse as
//! expressions. It does not follow calls into other functions, and skips nested items (a `fn`
//! declared inside the body is a separate function: annotate it too).

use crate::rules::{self, Category, Reach};
use proc_macro2::TokenStream;
use quote::ToTokens;
use std::collections::HashMap;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{
    Block, Expr, ExprCall, ExprMethodCall, ExprPath, FnArg, GenericArgument, ImplItemFn, Item, ItemFn, ItemUse, Macro,
    PathArguments, Signature, Token, TraitItemFn, Type, TypePath, UseTree,
};

/// One place in the function that breaks capture.
#[cfg_attr(not(test), allow(dead_code))] // `category` and `name` are read by the tests
pub(crate) struct Finding {
    pub(crate) category: Category,
    /// The name an `allow(...)` matches, and the name a summary reports.
    pub(crate) name: String,
    /// The error, spanned on the offending call, path, type or keyword.
    pub(crate) error: syn::Error,
}

/// A function `#[capturable]` can go on: a free function, a method in an `impl`, or a trait
/// method (which needs a default body to have anything to check).
pub(crate) enum AnyFn {
    Free(ItemFn),
    Impl(ImplItemFn),
    Trait(TraitItemFn),
}

impl AnyFn {
    pub(crate) fn sig(&self) -> &Signature {
        match self {
            AnyFn::Free(f) => &f.sig,
            AnyFn::Impl(f) => &f.sig,
            AnyFn::Trait(f) => &f.sig,
        }
    }

    pub(crate) fn body_mut(&mut self) -> Option<&mut Block> {
        match self {
            AnyFn::Free(f) => Some(&mut f.block),
            AnyFn::Impl(f) => Some(&mut f.block),
            AnyFn::Trait(f) => f.default.as_mut(),
        }
    }

    pub(crate) fn body(&self) -> Option<&Block> {
        match self {
            AnyFn::Free(f) => Some(&f.block),
            AnyFn::Impl(f) => Some(&f.block),
            AnyFn::Trait(f) => f.default.as_ref(),
        }
    }

    /// Tries each kind of function in turn; the error is the free function's, which reads best.
    pub(crate) fn parse(tokens: TokenStream) -> syn::Result<Self> {
        let free_err = match syn::parse2::<ItemFn>(tokens.clone()) {
            Ok(f) => return Ok(AnyFn::Free(f)),
            Err(e) => e,
        };
        if let Ok(f) = syn::parse2::<ImplItemFn>(tokens.clone()) {
            return Ok(AnyFn::Impl(f));
        }
        if let Ok(f) = syn::parse2::<TraitItemFn>(tokens) {
            return Ok(AnyFn::Trait(f));
        }
        Err(free_err)
    }
}

impl ToTokens for AnyFn {
    fn to_tokens(&self, tokens: &mut TokenStream) {
        match self {
            AnyFn::Free(f) => f.to_tokens(tokens),
            AnyFn::Impl(f) => f.to_tokens(tokens),
            AnyFn::Trait(f) => f.to_tokens(tokens),
        }
    }
}

/// Checks one function. `allowed` holds the names given in `#[capturable(allow(...))]`.
pub(crate) fn check(function: &AnyFn, allowed: &[String]) -> Vec<Finding> {
    let mut checker = Checker { allowed, aliases: Aliases::default(), findings: Vec::new() };
    let sig = function.sig();
    checker.check_signature(sig);
    if let Some(body) = function.body() {
        checker.aliases.collect(body);
        checker.visit_block(body);
    }
    checker.findings
}

/// Parses `src` as one function and checks it with nothing allowed. A pure entry point for tests.
#[doc(hidden)]
#[allow(dead_code)]
pub fn check_fn_source(src: &str) -> syn::Result<Vec<Finding>> {
    let function = AnyFn::parse(src.parse()?)?;
    Ok(check(&function, &[]))
}

struct Checker<'a> {
    allowed: &'a [String],
    aliases: Aliases,
    findings: Vec<Finding>,
}

impl Checker<'_> {
    fn report(&mut self, category: Category, names: &[&str], tokens: impl ToTokens, what: String) {
        let allowable = category != Category::AsyncFn;
        let allowed = |name: &&str| self.allowed.iter().any(|allowed| allowed == name);
        if allowable && names.iter().any(allowed) {
            return;
        }
        let name = names[0];
        let error = syn::Error::new_spanned(tokens, category.message(&what, name));
        self.findings.push(Finding { category, name: name.to_owned(), error });
    }

    fn check_signature(&mut self, sig: &Signature) {
        if let Some(asyncness) = &sig.asyncness {
            self.report(
                Category::AsyncFn,
                &["async"],
                asyncness,
                "a `#[capturable]` function cannot be `async`".to_owned(),
            );
        }
        for input in &sig.inputs {
            let (who, ty) = match input {
                FnArg::Typed(typed) => (typed.pat.to_token_stream().to_string(), &*typed.ty),
                FnArg::Receiver(receiver) if receiver.colon_token.is_some() => ("self".to_owned(), &*receiver.ty),
                FnArg::Receiver(_) => continue,
            };
            let mut finder = HandleFinder::default();
            finder.visit_type(ty);
            if let Some(handle) = finder.found {
                let what = handle.describe(&who);
                self.report(Category::IdleHandle, &[handle.name()], ty, what);
            }
        }
    }

    /// Checks a path used as a value or called as a function. `tokens` is what the error spans.
    fn check_path(&mut self, path: &ExprPath, in_call: bool, tokens: &dyn ToTokens) {
        let resolved = self.aliases.resolve(&path.path);
        let Some(last) = resolved.segments.last() else {
            return;
        };
        let written = path_to_string(&path.path);
        let shown = if resolved.via_alias {
            format!("`{written}` (that is, `{}`)", resolved.segments.join("::"))
        } else {
            format!("`{written}`")
        };
        let written_last = path.path.segments.last().map(|s| s.ident.to_string()).unwrap_or_default();
        let names = [last.as_str(), written_last.as_str()];
        let verb = if in_call { "call" } else { "use" };

        // A value path with one segment is usually a local variable: only flag FFI names there.
        if !in_call && resolved.segments.len() < 2 && !rules::is_ffi_name(last) {
            return;
        }
        let raw = rules::is_raw_path(&resolved.segments);
        if let Some(rule) = rules::lookup(last) {
            let reached = match rule.reach {
                Reach::Anywhere => true,
                // `result::graph::upload` is cuGraphUpload, not a copy: an ordinary word on a
                // raw path is reported as a raw call below.
                Reach::Method => path.qself.is_some() || names_a_type(&resolved.segments),
            };
            if reached {
                let what = format!("cannot {verb} {shown} in a `#[capturable]` function: it {}", rule.does);
                self.report(rule.category, &names, tokens, what);
                return;
            }
        }
        let is_fn = last.starts_with(|c: char| c.is_ascii_lowercase());
        if is_fn && (raw || rules::is_ffi_name(last)) {
            let what = format!("cannot {verb} {shown} in a `#[capturable]` function: it is a raw CUDA driver call");
            self.report(Category::RawDriver, &names, tokens, what);
        }
    }
}

impl<'ast> Visit<'ast> for Checker<'_> {
    fn visit_expr_call(&mut self, call: &'ast ExprCall) {
        if let Expr::Path(path) = &*call.func {
            self.check_path(path, true, call);
            for attr in &call.attrs {
                self.visit_attribute(attr);
            }
            for arg in &call.args {
                self.visit_expr(arg);
            }
        } else {
            visit::visit_expr_call(self, call);
        }
    }

    fn visit_expr_path(&mut self, path: &'ast ExprPath) {
        self.check_path(path, false, path);
        visit::visit_expr_path(self, path);
    }

    fn visit_expr_method_call(&mut self, call: &'ast ExprMethodCall) {
        let method = call.method.to_string();
        if let Some(rule) = rules::lookup(&method) {
            // Span `method::<T>(args)`, not the receiver chain before it.
            let mut tokens = TokenStream::new();
            call.method.to_tokens(&mut tokens);
            call.turbofish.to_tokens(&mut tokens);
            call.paren_token.surround(&mut tokens, |tokens| call.args.to_tokens(tokens));
            let args = if call.args.is_empty() { "" } else { ".." };
            let what = format!("cannot call `.{method}({args})` in a `#[capturable]` function: it {}", rule.does);
            self.report(rule.category, &[&method], tokens, what);
        }
        visit::visit_expr_method_call(self, call);
    }

    fn visit_macro(&mut self, mac: &'ast Macro) {
        // `println!`, `assert!`, `vec!`, `format!`, ...: arguments that are expressions.
        let args = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated);
        if let Ok(args) = args {
            for arg in &args {
                self.visit_expr(arg);
            }
            return;
        }
        // Macros whose body is a list of statements.
        if let Ok(stmts) = mac.parse_body_with(Block::parse_within) {
            for stmt in &stmts {
                self.visit_stmt(stmt);
            }
        }
    }

    /// Nested items are separate functions, types and constants: not part of this body.
    fn visit_item(&mut self, _: &'ast Item) {}
}

/// `Stream::free`, `<..>::query`, `CudaStream::alloc`: the segment before the method names a type.
fn names_a_type(segments: &[String]) -> bool {
    segments.len() >= 2 && segments[segments.len() - 2].starts_with(|c: char| c.is_ascii_uppercase())
}

fn path_to_string(path: &syn::Path) -> String {
    let mut out = String::new();
    if path.leading_colon.is_some() {
        out.push_str("::");
    }
    for (i, segment) in path.segments.iter().enumerate() {
        if i > 0 {
            out.push_str("::");
        }
        out.push_str(&segment.ident.to_string());
    }
    out
}

/// `use` declarations inside the function: `use cudarc::driver::result::malloc_sync as m;`.
#[derive(Default)]
struct Aliases {
    /// Local name to the full path it stands for.
    map: HashMap<String, Vec<String>>,
}

/// A path with aliases replaced by what they stand for.
struct Resolved {
    segments: Vec<String>,
    via_alias: bool,
}

impl Aliases {
    fn collect(&mut self, body: &Block) {
        struct Collector<'m>(&'m mut HashMap<String, Vec<String>>);
        impl<'ast> Visit<'ast> for Collector<'_> {
            fn visit_item(&mut self, item: &'ast Item) {
                // A `use` inside a nested fn or module applies there, not here.
                if let Item::Use(item) = item {
                    self.visit_item_use(item);
                }
            }
            fn visit_item_use(&mut self, item: &'ast ItemUse) {
                add_use_tree(self.0, Vec::new(), &item.tree);
            }
        }
        Collector(&mut self.map).visit_block(body);
    }

    fn resolve(&self, path: &syn::Path) -> Resolved {
        let mut segments: Vec<String> = path.segments.iter().map(|s| s.ident.to_string()).collect();
        let mut via_alias = false;
        if path.leading_colon.is_none() {
            // A few rounds follow `use cudarc::driver as d; use d::sys as s;` without looping
            // forever on `use a as b; use b as a;`.
            for _ in 0..4 {
                let Some(target) = segments.first().and_then(|first| self.map.get(first)) else {
                    break;
                };
                if target.len() == 1 && target[0] == segments[0] {
                    break;
                }
                segments.splice(0..1, target.iter().cloned());
                via_alias = true;
            }
        }
        Resolved { segments, via_alias }
    }
}

fn add_use_tree(map: &mut HashMap<String, Vec<String>>, mut prefix: Vec<String>, tree: &UseTree) {
    match tree {
        UseTree::Path(path) => {
            prefix.push(path.ident.to_string());
            add_use_tree(map, prefix, &path.tree);
        }
        UseTree::Name(name) => {
            let name = name.ident.to_string();
            if name == "self" {
                if let Some(last) = prefix.last().cloned() {
                    map.entry(last).or_insert(prefix);
                }
            } else {
                prefix.push(name.clone());
                map.entry(name).or_insert(prefix);
            }
        }
        UseTree::Rename(rename) => {
            let name = rename.ident.to_string();
            if name != "self" {
                prefix.push(name);
            }
            if !prefix.is_empty() {
                map.entry(rename.rename.to_string()).or_insert(prefix);
            }
        }
        UseTree::Group(group) => {
            for tree in &group.items {
                add_use_tree(map, prefix.clone(), tree);
            }
        }
        // A glob brings in names the checker already knows by their last segment.
        UseTree::Glob(_) => {}
    }
}

/// Whether the name-based rule already speaks for this parameter type: it names an idle handle
/// (reported, or allowed), or any of its path segments is a name given in `allow(...)` (an alias
/// the user allowed). The type-resolved check in `expand` skips such parameters, so a parameter
/// gets one error, not two.
pub(crate) fn named_or_allowed(ty: &Type, allowed: &[String]) -> bool {
    let mut finder = HandleFinder::default();
    finder.visit_type(ty);
    if finder.found.is_some() {
        return true;
    }
    let mut names = SegmentNames::default();
    names.visit_type(ty);
    names.0.iter().any(|name| allowed.contains(name))
}

/// Whether the type can be written inside the body: `impl Trait` in argument position cannot.
pub(crate) fn nameable(ty: &Type) -> bool {
    struct FindImpl(bool);
    impl<'ast> Visit<'ast> for FindImpl {
        fn visit_type_impl_trait(&mut self, _: &'ast syn::TypeImplTrait) {
            self.0 = true;
        }
    }
    let mut find = FindImpl(false);
    find.visit_type(ty);
    !find.0
}

#[derive(Default)]
struct SegmentNames(Vec<String>);

impl<'ast> Visit<'ast> for SegmentNames {
    fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
        self.0.push(segment.ident.to_string());
        visit::visit_path_segment(self, segment);
    }
}

/// A handle type that must not reach a `#[capturable]` function.
enum Handle {
    /// `defaulted`: written `Stream`, whose state parameter defaults to `Idle`.
    IdleStream {
        defaulted: bool,
    },
    Cudarc(&'static str),
}

impl Handle {
    fn name(&self) -> &'static str {
        match self {
            Handle::IdleStream { .. } => "Stream",
            Handle::Cudarc(name) => name,
        }
    }

    fn describe(&self, parameter: &str) -> String {
        let head = "a `#[capturable]` function cannot take";
        match self {
            Handle::IdleStream { defaulted: false } => {
                format!("{head} an idle stream: parameter `{parameter}` is a `Stream<Idle>`")
            }
            Handle::IdleStream { defaulted: true } => {
                format!("{head} an idle stream: parameter `{parameter}` is a `Stream`, which means `Stream<Idle>`")
            }
            Handle::Cudarc(name) => format!("{head} cudarc's `{name}`: parameter `{parameter}` holds one"),
        }
    }
}

/// Finds `Stream<Idle>`, `Stream` (whose state defaults to `Idle`), `CudaStream` and
/// `CudaContext` anywhere in a parameter's type: behind references, in `Arc<..>`, by full path.
#[derive(Default)]
struct HandleFinder {
    found: Option<Handle>,
}

impl<'ast> Visit<'ast> for HandleFinder {
    fn visit_type_path(&mut self, ty: &'ast TypePath) {
        if self.found.is_some() {
            return;
        }
        if let Some(last) = ty.path.segments.last() {
            if last.ident == "CudaStream" {
                self.found = Some(Handle::Cudarc("CudaStream"));
            } else if last.ident == "CudaContext" {
                self.found = Some(Handle::Cudarc("CudaContext"));
            } else if last.ident == "Stream" && is_idle_state(&last.arguments) {
                let defaulted = matches!(last.arguments, PathArguments::None);
                self.found = Some(Handle::IdleStream { defaulted });
            }
        }
        if self.found.is_none() {
            visit::visit_type_path(self, ty);
        }
    }
}

/// `Stream` with no arguments (the default state is `Idle`), or `Stream<Idle>`.
fn is_idle_state(arguments: &PathArguments) -> bool {
    match arguments {
        PathArguments::None => true,
        PathArguments::AngleBracketed(args) => args.args.iter().any(|arg| {
            matches!(arg, GenericArgument::Type(Type::Path(state))
                if state.path.segments.last().is_some_and(|s| s.ident == "Idle"))
        }),
        PathArguments::Parenthesized(_) => false,
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(
            names,
            ["cuMemAllocManaged", "cudaMallocManaged", "malloc_managed", "alloc_managed", "alloc_unified"]
        );
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
        assert_eq!(
            names,
            ["Stream", "Stream", "Stream", "Stream", "CudaStream", "CudaStream", "CudaContext", "Stream"]
        );
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
        assert!(found[0]
            .2
            .starts_with("a `#[capturable]` function cannot take cudarc's `CudaStream`: parameter `self`"));
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
            [
                Category::ManagedAlloc,
                Category::SyncCopy,
                Category::Synchronize,
                Category::IdleHandle,
                Category::AsyncFn
            ]
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
}
