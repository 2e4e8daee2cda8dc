//! Generates the output: the function exactly as written, plus one `compile_error!` per finding.
//!
//! A clean function expands to itself and nothing else, so the macro adds no runtime items and no
//! paths a user could shadow. On errors the function is still emitted, so the rest of the crate
//! and the IDE keep seeing it.

use crate::attr;
use crate::check::{self, AnyFn};
use proc_macro2::TokenStream;

pub(crate) fn capturable(args: TokenStream, input: TokenStream) -> TokenStream {
    let (args, mut errors) = attr::parse(args);
    match AnyFn::parse(input.clone()) {
        Ok(function) => {
            if function.body().is_none() {
                errors.push(syn::Error::new_spanned(
                    function.sig(),
                    "this trait method has no body, so `#[capturable]` has nothing to check: put \
                     it on the default body, or on the method in each `impl`",
                ));
            }
            errors.extend(check::check(&function, &args.allow).into_iter().map(|f| f.error));
        }
        Err(error) => errors.push(not_a_function(&input, error)),
    }
    let mut output = input;
    let combined = errors.into_iter().reduce(|mut all, error| {
        all.combine(error);
        all
    });
    if let Some(errors) = combined {
        output.extend(errors.into_compile_error());
    }
    output
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

    #[test]
    fn a_clean_function_expands_to_itself() {
        let input = quote! {
            /// Docs stay.
            #[inline]
            pub fn step<'a>(s: &mut Stream<Capturing<'a>>, b: &'a DeviceBuffer<f32>) -> Result<(), Error> {
                s.memset_async(b, 0)
            }
        };
        assert_eq!(expand(quote!(), input.clone()), input.to_string());
    }

    #[test]
    fn errors_come_after_the_unchanged_function() {
        let input = quote!(
            fn step(s: &S) {
                s.synchronize();
                cuCtxSynchronize();
            }
        );
        let output = expand(quote!(), input.clone());
        assert!(output.starts_with(&input.to_string()), "{output}");
        assert_eq!(output.matches("compile_error").count(), 2, "{output}");
        assert!(output.contains(":: core :: compile_error !"), "{output}");
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
        let output = expand(quote!(allow(synchronize), reason = "debug builds only"), input.clone());
        assert_eq!(output, input.to_string());
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
