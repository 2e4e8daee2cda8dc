//! Generates the output: the function as written, plus one `compile_error!` per finding.
//!
//! The only addition to a clean function is the type-resolved parameter check (issue #13,
//! item 2): a never-called closure, first in the body, that asks the compiler whether each
//! parameter's type is an idle stream or context (see `capture_core::capturable_check`), so an
//! alias (`use Stream as S`, `type IdleStream = Stream<Idle>`) cannot hide one. It names runtime
//! items by absolute path (`::capture_core::__private`), adds no items and costs nothing at run
//! time. On errors the function is still emitted, so the rest of the crate and the IDE keep
//! seeing it.

use crate::attr;
use crate::check::{self, AnyFn};
use proc_macro2::TokenStream;
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Block, FnArg, Signature};

pub(crate) fn capturable(args: TokenStream, input: TokenStream) -> TokenStream {
    let (args, mut errors) = attr::parse(args);
    let mut output = input.clone();
    match AnyFn::parse(input.clone()) {
        Ok(mut function) => {
            if function.body().is_none() {
                errors.push(syn::Error::new_spanned(
                    function.sig(),
                    "this trait method has no body, so `#[capturable]` has nothing to check: put \
                     it on the default body, or on the method in each `impl`",
                ));
            }
            errors.extend(check::check(&function, &args.allow).into_iter().map(|f| f.error));
            if let Some(checks) = parameter_checks(function.sig(), &args.allow) {
                if let Some(body) = function.body_mut() {
                    insert_first(body, checks);
                    output = function.into_token_stream();
                }
            }
        }
        Err(error) => errors.push(not_a_function(&input, error)),
    }
    let combined = errors.into_iter().reduce(|mut all, error| {
        all.combine(error);
        all
    });
    if let Some(errors) = combined {
        output.extend(errors.into_compile_error());
    }
    output
}

/// The type-resolved check of every parameter the name-based rule did not already report (or
/// was told to allow), as one statement; `None` when there is nothing to check.
fn parameter_checks(sig: &Signature, allowed: &[String]) -> Option<TokenStream> {
    // A `const fn` cannot call the check's trait methods; it cannot do device work either.
    if sig.constness.is_some() {
        return None;
    }
    let checks: Vec<TokenStream> = sig
        .inputs
        .iter()
        .map(|input| match input {
            FnArg::Typed(typed) => &*typed.ty,
            FnArg::Receiver(receiver) => &*receiver.ty,
        })
        .filter(|ty| check::nameable(ty) && !check::named_or_allowed(ty, allowed))
        .map(|ty| {
            let m = quote!(::capture_core::__private::capturable_check);
            quote_spanned! {ty.span()=>
                #m::require_capturable::<#ty, _>((&&#m::Probe::<#ty>::NEW).__capturable_verdict());
            }
        })
        .collect();
    if checks.is_empty() {
        return None;
    }
    Some(quote! {
        let _ = || {
            #[allow(unused_imports)]
            use ::capture_core::__private::capturable_check::{IdleHandleVerdict as _, OtherVerdict as _};
            #(#checks)*
        };
    })
}

fn insert_first(body: &mut Block, statement: TokenStream) {
    // Always one `let` statement; should it ever fail to parse, the name-based rule still stands.
    if let Ok(statement) = syn::parse2::<syn::Stmt>(statement) {
        body.stmts.insert(0, statement);
    }
}

fn not_a_function(input: &TokenStream, parse_error: syn::Error) -> syn::Error {
    let mentions_fn = input.clone().into_iter().any(|tt| matches!(&tt, proc_macro2::TokenTree::Ident(i) if i == "fn"));
    if mentions_fn {
        // A function syn cannot read; say so rather than guess.
        let message = format!("`#[capturable]` could not read this function: {parse_error}");
        syn::Error::new(parse_error.span(), message)
    } else {
        syn::Error::new(
            proc_macro2::Span::call_site(),
            "`#[capturable]` goes on a function: a free `fn`, a method in an `impl`, or a trait \
             method with a default body",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn expand(args: TokenStream, input: TokenStream) -> String {
        capturable(args, input).to_string()
    }

    /// The check inserted for a parameter of type `ty` (as `quote!` prints it).
    fn check_for(ty: &str) -> String {
        format!("require_capturable :: < {ty} , _ > ((& & :: capture_core :: __private :: capturable_check :: Probe :: < {ty} >")
    }

    #[test]
    fn a_clean_function_keeps_its_item_and_gains_only_the_parameter_checks() {
        let input = quote! {
            /// Docs stay.
            #[inline]
            pub fn step<'a>(s: &mut Stream<Capturing<'a>>, b: &'a DeviceBuffer<f32>) -> Result<(), Error> {
                s.memset_async(b, 0)
            }
        };
        let output = expand(quote!(), input);
        let head = "# [doc = r\" Docs stay.\"] # [inline] pub fn step < 'a > (s : & mut Stream < Capturing < 'a > > , b : & 'a \
                    DeviceBuffer < f32 >) -> Result < () , Error > { let _ = | | {";
        assert!(output.starts_with(head), "{output}");
        assert!(output.contains(&check_for("& mut Stream < Capturing < 'a > >")), "{output}");
        assert!(output.contains(&check_for("& 'a DeviceBuffer < f32 >")), "{output}");
        assert!(output.ends_with("} ; s . memset_async (b , 0) }"), "{output}");
        assert!(!output.contains("compile_error"), "{output}");
    }

    #[test]
    fn a_function_without_parameters_expands_to_itself() {
        let input = quote!(
            fn step() -> u32 {
                1
            }
        );
        assert_eq!(expand(quote!(), input.clone()), input.to_string());
    }

    /// Issue #13, item 2: a parameter whose type the name rule cannot read (an alias) is handed
    /// to the compiler; one the name rule reports is not checked twice.
    #[test]
    fn aliases_get_a_type_check_and_named_handles_one_error() {
        let input = quote!(
            fn step(a: &mut IdleStream, b: &mut S<Idle>, c: &Stream<Idle>, d: impl Records<'static>) {}
        );
        let output = expand(quote!(), input);
        assert!(output.contains(&check_for("& mut IdleStream")), "{output}");
        assert!(output.contains(&check_for("& mut S < Idle >")), "{output}");
        assert!(!output.contains(&check_for("& Stream < Idle >")), "{output}");
        assert!(!output.contains("Probe :: < impl"), "{output}");
        assert_eq!(output.matches("compile_error").count(), 1, "{output}");
    }

    #[test]
    fn an_allowed_alias_and_a_const_fn_are_not_type_checked() {
        let allowed = expand(
            quote!(allow(IdleStream), reason = "runs before the capture"),
            quote!(
                fn step(a: &mut IdleStream) {}
            ),
        );
        assert!(!allowed.contains("require_capturable"), "{allowed}");
        let constant = expand(
            quote!(),
            quote!(
                const fn step(a: &Ctx) {}
            ),
        );
        assert!(!constant.contains("require_capturable"), "{constant}");
    }

    #[test]
    fn errors_come_after_the_function() {
        let input = quote!(
            fn step(s: &S) {
                s.synchronize();
                cuCtxSynchronize();
            }
        );
        let output = expand(quote!(), input);
        assert!(output.starts_with("fn step (s : & S) {"), "{output}");
        assert!(
            output.contains("} ; s . synchronize () ; cuCtxSynchronize () ; } :: core :: compile_error !"),
            "{output}"
        );
        assert_eq!(output.matches("compile_error").count(), 2, "{output}");
    }

    #[test]
    fn argument_errors_and_body_errors_together() {
        let input = quote!(
            fn step(s: &S) {
                s.synchronize();
                s.query();
            }
        );
        let output = expand(quote!(allow(synchronize), bogus = 1), input);
        // Unknown key, missing reason, and `query` (`synchronize` is still allowed).
        assert_eq!(output.matches("compile_error").count(), 3, "{output}");
        assert!(output.contains("unknown argument `bogus`"), "{output}");
        assert!(output.contains("needs a reason"), "{output}");
        assert!(output.contains("`.query()`"), "{output}");
        assert!(!output.contains("`.synchronize()`"), "{output}");
    }

    #[test]
    fn allowed_with_a_reason_is_clean() {
        let input = quote!(
            fn step(s: &S) {
                s.synchronize();
            }
        );
        let output = expand(quote!(allow(synchronize), reason = "debug builds only"), input);
        assert!(!output.contains("compile_error"), "{output}");
        assert!(output.ends_with("s . synchronize () ; }"), "{output}");
    }

    #[test]
    fn trait_method_without_body() {
        let output = expand(
            quote!(),
            quote!(
                fn step(&mut self);
            ),
        );
        assert!(output.contains("has no body"), "{output}");
    }

    #[test]
    fn not_a_function() {
        let input = quote!(
            struct S;
        );
        let output = expand(quote!(), input.clone());
        assert!(output.starts_with(&input.to_string()), "{output}");
        assert!(output.contains("goes on a function"), "{output}");
    }
}
