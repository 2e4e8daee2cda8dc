//! Parses the attribute's arguments: `#[capturable(allow(name, ...), reason = "...")]`.
//!
//! Parsing goes on after an error, so one build reports every mistake in the arguments, and the
//! names that did parse are still allowed while the body is checked.

use proc_macro2::TokenStream;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{token, LitStr, Token};

mod kw {
    syn::custom_keyword!(allow);
    syn::custom_keyword!(reason);
}

const VALID: &str = "`#[capturable]` takes `allow(name, ...)` and `reason = \"...\"`";

/// The parsed arguments.
#[derive(Default)]
pub(crate) struct Args {
    /// The names in `allow(...)`: a path's last segment or a method's name.
    pub(crate) allow: Vec<String>,
}

/// Parses the arguments, returning what parsed and every error found.
pub(crate) fn parse(args: TokenStream) -> (Args, Vec<syn::Error>) {
    let mut state = State::default();
    let parsed = (|input: ParseStream| state.parse_all(input)).parse2(args);
    if let Err(error) = parsed {
        state.errors.push(error);
    }
    state.finish()
}

#[derive(Default)]
struct State {
    allow: Option<(kw::allow, Vec<syn::Path>)>,
    reason: Option<(kw::reason, LitStr)>,
    errors: Vec<syn::Error>,
}

impl State {
    fn parse_all(&mut self, input: ParseStream) -> syn::Result<()> {
        while !input.is_empty() {
            if let Err(error) = self.parse_one(input) {
                self.errors.push(error);
                skip_to_comma(input)?;
            }
            if input.is_empty() {
                break;
            }
            if let Err(error) = input.parse::<Token![,]>() {
                self.errors.push(syn::Error::new(error.span(), format!("expected `,` between arguments; {VALID}")));
                skip_to_comma(input)?;
                if !input.is_empty() {
                    input.parse::<Token![,]>()?;
                }
            }
        }
        Ok(())
    }

    fn parse_one(&mut self, input: ParseStream) -> syn::Result<()> {
        let lookahead = input.lookahead1();
        if lookahead.peek(kw::allow) {
            let keyword: kw::allow = input.parse()?;
            if !input.peek(token::Paren) {
                return Err(syn::Error::new(
                    keyword.span,
                    "write the calls to allow in parentheses: `allow(name, ...)`",
                ));
            }
            let content;
            syn::parenthesized!(content in input);
            let names =
                Punctuated::<syn::Path, Token![,]>::parse_terminated_with(&content, syn::Path::parse_mod_style)?;
            if names.is_empty() {
                return Err(syn::Error::new(
                    keyword.span,
                    "`allow()` is empty: name the calls to allow, e.g. `allow(synchronize)`",
                ));
            }
            if self.allow.is_some() {
                return Err(syn::Error::new(
                    keyword.span,
                    "`allow` is given twice: list every name in one `allow(...)`",
                ));
            }
            self.allow = Some((keyword, names.into_iter().collect()));
        } else if lookahead.peek(kw::reason) {
            let keyword: kw::reason = input.parse()?;
            input.parse::<Token![=]>()?;
            let reason: LitStr = input.parse()?;
            if self.reason.is_some() {
                return Err(syn::Error::new(keyword.span, "`reason` is given twice: give one reason"));
            }
            if reason.value().trim().is_empty() {
                return Err(syn::Error::new(
                    reason.span(),
                    "the reason is empty: say why the allowed calls are safe during capture",
                ));
            }
            self.reason = Some((keyword, reason));
        } else if input.peek(syn::Ident) {
            let unknown: syn::Ident = input.parse()?;
            return Err(syn::Error::new(unknown.span(), format!("unknown argument `{unknown}`: {VALID}")));
        } else {
            return Err(syn::Error::new(lookahead.error().span(), VALID));
        }
        Ok(())
    }

    fn finish(mut self) -> (Args, Vec<syn::Error>) {
        match (&self.allow, &self.reason) {
            (Some((keyword, _)), None) => self.errors.push(syn::Error::new(
                keyword.span,
                "`allow(...)` needs a reason: add `reason = \"...\"` saying why these calls are \
                 safe while the stream captures",
            )),
            (None, Some((keyword, _))) => self.errors.push(syn::Error::new(
                keyword.span,
                "`reason` explains an `allow(...)`, but nothing is allowed: add \
                 `allow(name, ...)` or remove the reason",
            )),
            _ => {}
        }
        let allow = self
            .allow
            .into_iter()
            .flat_map(|(_, paths)| paths)
            .filter_map(|path| path.segments.last().map(|s| s.ident.to_string()))
            .collect();
        (Args { allow }, self.errors)
    }
}

/// Skips the rest of a bad argument, up to (not past) the next top-level comma.
fn skip_to_comma(input: ParseStream) -> syn::Result<()> {
    while !input.is_empty() && !input.peek(Token![,]) {
        input.parse::<proc_macro2::TokenTree>()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use quote::quote;

    fn messages(args: TokenStream) -> (Vec<String>, Vec<String>) {
        let (args, errors) = parse(args);
        (args.allow, errors.iter().map(|e| e.to_string()).collect())
    }

    #[test]
    fn empty_args() {
        let (allow, errors) = messages(quote!());
        assert!(allow.is_empty());
        assert!(errors.is_empty());
    }

    #[test]
    fn allow_with_reason() {
        let (allow, errors) = messages(quote!(
            allow(synchronize, cudarc::driver::result::malloc_sync),
            reason = "runs before capture begins",
        ));
        assert_eq!(allow, ["synchronize", "malloc_sync"]);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn reason_first() {
        let (allow, errors) = messages(quote!(reason = "ok", allow(query)));
        assert_eq!(allow, ["query"]);
        assert!(errors.is_empty(), "{errors:?}");
    }

    #[test]
    fn allow_needs_reason() {
        let (allow, errors) = messages(quote!(allow(synchronize)));
        assert_eq!(allow, ["synchronize"], "the names are still applied");
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("needs a reason"), "{}", errors[0]);
    }

    #[test]
    fn reason_needs_allow() {
        let (_, errors) = messages(quote!(reason = "because"));
        assert_eq!(errors.len(), 1);
        assert!(errors[0].contains("nothing is allowed"), "{}", errors[0]);
    }

    #[test]
    fn empty_reason() {
        let (_, errors) = messages(quote!(allow(free), reason = "  "));
        assert!(errors.iter().any(|e| e.contains("the reason is empty")), "{errors:?}");
    }

    #[test]
    fn unknown_key_lists_valid_ones() {
        let (allow, errors) = messages(quote!(deny(free), allow(free), reason = "x"));
        assert_eq!(allow, ["free"], "parsing goes on after an unknown key");
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("unknown argument `deny`"), "{}", errors[0]);
        assert!(errors[0].contains("`allow(name, ...)`"), "{}", errors[0]);
        assert!(errors[0].contains("`reason = \"...\"`"), "{}", errors[0]);
    }

    #[test]
    fn not_a_key() {
        let (_, errors) = messages(quote!("synchronize"));
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("takes `allow(name, ...)`"), "{}", errors[0]);
    }

    #[test]
    fn duplicate_keys() {
        let (allow, errors) = messages(quote!(allow(free), allow(query), reason = "a", reason = "b"));
        assert_eq!(allow, ["free"], "the first allow wins");
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].contains("`allow` is given twice"), "{}", errors[0]);
        assert!(errors[1].contains("`reason` is given twice"), "{}", errors[1]);
    }

    #[test]
    fn allow_without_parens() {
        let (_, errors) = messages(quote!(allow = "free", reason = "x"));
        assert!(errors.iter().any(|e| e.contains("in parentheses")), "{errors:?}");
    }

    #[test]
    fn empty_allow() {
        let (_, errors) = messages(quote!(allow(), reason = "x"));
        assert!(errors.iter().any(|e| e.contains("`allow()` is empty")), "{errors:?}");
    }

    #[test]
    fn missing_comma() {
        let (allow, errors) = messages(quote!(allow(free) reason = "x"));
        assert_eq!(allow, ["free"]);
        assert!(errors.iter().any(|e| e.contains("expected `,`")), "{errors:?}");
    }
}
