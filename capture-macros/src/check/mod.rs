//! The checker: reads one function's signature and body and collects every place that would break
//! or silently corrupt a CUDA graph capture.
//!
//! It works on names, so it sees what the function's own tokens say: calls, method calls, paths to
//! functions, `use` aliases declared inside the function, and the arguments of macros that parse as
//! expressions. It does not follow calls into other functions, and skips nested items (a `fn`
//! declared inside the body is a separate function: annotate it too).

mod aliases;
mod handles;
#[cfg(test)]
mod tests;

use aliases::Aliases;
pub(crate) use handles::{nameable, named_or_allowed};
#[allow(unused_imports)]
use handles::{Handle, HandleFinder};

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
