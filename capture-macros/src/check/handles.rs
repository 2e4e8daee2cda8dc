//! Rule family: idle handles in the signature (`Stream<Idle>`, `Context`, cudarc's `CudaStream`
//! and `CudaContext`), found by name.

#[allow(unused_imports)]
use super::*;

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
pub(super) struct SegmentNames(Vec<String>);

impl<'ast> Visit<'ast> for SegmentNames {
    fn visit_path_segment(&mut self, segment: &'ast syn::PathSegment) {
        self.0.push(segment.ident.to_string());
        visit::visit_path_segment(self, segment);
    }
}

/// A handle type that must not reach a `#[capturable]` function.
pub(super) enum Handle {
    /// `defaulted`: written `Stream`, whose state parameter defaults to `Idle`.
    IdleStream {
        defaulted: bool,
    },
    Cudarc(&'static str),
}

impl Handle {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Handle::IdleStream { .. } => "Stream",
            Handle::Cudarc(name) => name,
        }
    }

    pub(super) fn describe(&self, parameter: &str) -> String {
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
pub(super) struct HandleFinder {
    pub(super) found: Option<Handle>,
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
pub(super) fn is_idle_state(arguments: &PathArguments) -> bool {
    match arguments {
        PathArguments::None => true,
        PathArguments::AngleBracketed(args) => args.args.iter().any(|arg| {
            matches!(arg, GenericArgument::Type(Type::Path(state))
                if state.path.segments.last().is_some_and(|s| s.ident == "Idle"))
        }),
        PathArguments::Parenthesized(_) => false,
    }
}
