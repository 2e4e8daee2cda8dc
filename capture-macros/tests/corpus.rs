//! Robustness: runs the checker over every function of a corpus of real Rust source and asserts
//! it never panics. Prints how many functions it checked and what it flagged, by category.
//!
//! The corpus is the source Cargo already downloaded for this workspace's build (issue #13,
//! item 8: the repository holds only code we wrote): cudarc, syn, proc-macro2 and quote, at the
//! versions `Cargo.lock` pins, found through `cargo metadata`. If a crate's source is missing the
//! test fails and says how to get it (`cargo fetch`). candle is a dependency of
//! `capture-candle/` (its own workspace): its CUDA backend, real capture-relevant code, is read
//! the same way from that workspace's metadata (`candle_cuda_backend_is_checked`).
//!
//! `cargo test -p capture-macros --test corpus -- --nocapture` shows the summary;
//! `cargo test -p capture-macros --release --test corpus -- --ignored --nocapture` times the whole
//! expansion per function (see `README.md`).

// A proc-macro crate exports only macros, so the modules are compiled into this test directly.
#[allow(dead_code)]
#[path = "../src/attr.rs"]
mod attr;
#[allow(dead_code)]
#[path = "../src/check/mod.rs"]
mod check;
#[allow(dead_code)]
#[path = "../src/expand.rs"]
mod expand;
#[allow(dead_code)]
#[path = "../src/rules.rs"]
mod rules;

use proc_macro2::TokenStream;
use quote::ToTokens;
use rules::Category;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use syn::visit::{self, Visit};

/// One function of the corpus, as the tokens `#[capturable]` would receive.
struct CorpusFn {
    file: PathBuf,
    name: String,
    tokens: TokenStream,
}

/// The one crate of the corpus that is made of CUDA calls; the others have none.
const CUDARC: &str = "cudarc";

/// The crates of the corpus, and the directories of each that it reads (relative to the crate's
/// root), with directories to skip: cudarc's generated FFI bindings (`*/sys/`) are left out, its
/// `result` layers, which call into them, are in.
const CRATES: &[(&str, &[&str], &[&str])] = &[
    (CUDARC, &["src", "examples", "build.rs"], &["sys"]),
    ("syn", &["src", "tests"], &[]),
    ("proc-macro2", &["src"], &[]),
    ("quote", &["src"], &[]),
];

/// `cargo metadata` of the workspace whose manifest is `manifest` (relative to this crate);
/// on failure, says to run `fetch` (the command that downloads its sources).
fn cargo_metadata(manifest: &str, fetch: &str) -> serde_json::Value {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join(manifest);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = std::process::Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path"])
        .arg(&manifest)
        .output()
        .unwrap_or_else(|e| panic!("running `{cargo} metadata` for {}: {e}", manifest.display()));
    assert!(
        output.status.success(),
        "`cargo metadata` for {} failed, so the corpus sources cannot be located (run `{fetch}` first):\n{}",
        manifest.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("`cargo metadata` prints JSON")
}

/// Each corpus crate's name, version and source directory, from `cargo metadata`.
fn corpus_crates() -> Vec<(String, PathBuf)> {
    let metadata = cargo_metadata("../Cargo.toml", "cargo fetch");
    let packages = metadata["packages"].as_array().expect("`cargo metadata` lists packages");
    CRATES
        .iter()
        .map(|(name, _, _)| {
            let mut found: Vec<_> = packages
                .iter()
                .filter(|p| p["name"] == *name && p["source"].as_str().is_some_and(|s| s.starts_with("registry+")))
                .collect();
            // syn 2 is the one this crate parses with; take the oldest major if several.
            found.sort_by_key(|p| p["version"].as_str().map(str::to_owned));
            let package = found.first().unwrap_or_else(|| {
                panic!("`{name}` is not among this workspace's registry dependencies: the corpus needs it")
            });
            let version = package["version"].as_str().unwrap_or("?");
            let manifest = Path::new(package["manifest_path"].as_str().expect("a manifest path"));
            let root = manifest.parent().expect("a crate directory").to_owned();
            assert!(
                root.join("src").is_dir(),
                "the source of `{name} {version}` is not at {}: run `cargo fetch` to download it",
                root.display()
            );
            (format!("{name}-{version}"), root)
        })
        .collect()
}

fn rust_files(dir: &Path, skip: &[&str], out: &mut Vec<PathBuf>) {
    if dir.is_file() {
        out.push(dir.to_owned());
        return;
    }
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|entry| entry.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            if !path.file_name().is_some_and(|n| skip.iter().any(|s| n == *s)) {
                rust_files(&path, skip, out);
            }
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            out.push(path);
        }
    }
}

/// Every function with a body: free functions, methods in `impl` blocks, trait methods with a
/// default body, through inline modules and nested inside other functions.
struct Collector<'a> {
    file: &'a Path,
    /// Names of the enclosing `impl` or `trait`, for the summary.
    owner: Vec<String>,
    out: &'a mut Vec<CorpusFn>,
}

impl Collector<'_> {
    fn push(&mut self, ident: &syn::Ident, tokens: TokenStream) {
        let name = match self.owner.last() {
            Some(owner) => format!("{owner}::{ident}"),
            None => ident.to_string(),
        };
        self.out.push(CorpusFn { file: self.file.to_owned(), name, tokens });
    }
}

impl<'ast> Visit<'ast> for Collector<'_> {
    fn visit_item_fn(&mut self, f: &'ast syn::ItemFn) {
        self.push(&f.sig.ident, f.to_token_stream());
        visit::visit_item_fn(self, f);
    }

    fn visit_impl_item_fn(&mut self, f: &'ast syn::ImplItemFn) {
        self.push(&f.sig.ident, f.to_token_stream());
        visit::visit_impl_item_fn(self, f);
    }

    fn visit_trait_item_fn(&mut self, f: &'ast syn::TraitItemFn) {
        if f.default.is_some() {
            self.push(&f.sig.ident, f.to_token_stream());
        }
        visit::visit_trait_item_fn(self, f);
    }

    fn visit_item_impl(&mut self, imp: &'ast syn::ItemImpl) {
        let owner = imp.self_ty.to_token_stream().to_string().replace(' ', "");
        self.owner.push(owner);
        visit::visit_item_impl(self, imp);
        self.owner.pop();
    }

    fn visit_item_trait(&mut self, tr: &'ast syn::ItemTrait) {
        self.owner.push(tr.ident.to_string());
        visit::visit_item_trait(self, tr);
        self.owner.pop();
    }
}

fn load_corpus() -> (usize, usize, Vec<CorpusFn>) {
    let mut files = 0;
    let mut bytes = 0;
    let mut fns = Vec::new();
    for ((label, root), (_, dirs, skip)) in corpus_crates().into_iter().zip(CRATES) {
        let mut paths = Vec::new();
        for dir in dirs.iter().map(|d| root.join(d)).filter(|d| d.exists()) {
            rust_files(&dir, skip, &mut paths);
        }
        files += paths.len();
        for path in &paths {
            let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
            bytes += src.len();
            let file = syn::parse_file(&src).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
            // Shown as `cudarc-0.19.10/src/...`.
            let relative = Path::new(&label).join(path.strip_prefix(&root).unwrap());
            Collector { file: &relative, owner: Vec::new(), out: &mut fns }.visit_file(&file);
        }
    }
    (files, bytes, fns)
}

#[test]
fn checker_never_panics_on_real_code() {
    let started = Instant::now();
    let (files, bytes, fns) = load_corpus();
    let mut flagged_fns = 0;
    let mut by_category: BTreeMap<Category, (usize, BTreeMap<String, usize>)> = BTreeMap::new();
    let mut examples: BTreeMap<Category, Vec<String>> = BTreeMap::new();
    let mut flagged_by_crate: BTreeMap<String, usize> = BTreeMap::new();
    let mut syn_flags = Vec::new();
    for f in &fns {
        let function = check::AnyFn::parse(f.tokens.clone())
            .unwrap_or_else(|e| panic!("{}: `{}` does not parse as a function: {e}", f.file.display(), f.name));
        let findings = check::check(&function, &[]);
        if !findings.is_empty() {
            flagged_fns += 1;
            let krate = f.file.iter().next().unwrap().to_string_lossy().into_owned();
            *flagged_by_crate.entry(krate).or_insert(0) += 1;
        }
        let from_cudarc = f.file.iter().next().is_some_and(|c| c.to_string_lossy().starts_with("cudarc-"));
        if !findings.is_empty() && !from_cudarc {
            // syn, proc-macro2 and quote have no CUDA in them: anything flagged there is a
            // false positive.
            for finding in &findings {
                syn_flags.push(format!("{} `{}`: {}", f.file.display(), f.name, finding.name));
            }
        }
        for finding in findings {
            let (count, names) = by_category.entry(finding.category).or_default();
            *count += 1;
            *names.entry(finding.name).or_default() += 1;
            let list = examples.entry(finding.category).or_default();
            let example = format!("{} `{}`", f.file.display(), f.name);
            if list.len() < 3 && !list.contains(&example) {
                list.push(example);
            }
        }
    }

    println!(
        "checked {} functions from {files} files ({:.1} MB) in {:.2?}; {flagged_fns} flagged",
        fns.len(),
        bytes as f64 / 1e6,
        started.elapsed()
    );
    println!("  flagged functions by crate: {flagged_by_crate:?}");
    for flag in &syn_flags {
        println!("  false positive outside cudarc: {flag}");
    }
    for category in Category::ALL {
        let Some((count, names)) = by_category.get(&category) else {
            println!("  {:<36} 0", category.label());
            continue;
        };
        let mut names: Vec<_> = names.iter().collect();
        names.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = names.iter().take(8).map(|(name, n)| format!("{name} x{n}")).collect();
        println!("  {:<36} {count:>5}  {}", category.label(), top.join(", "));
        for example in &examples[&category] {
            println!("  {:<36}        e.g. {example}", "");
        }
    }

    // 5,282 functions at the time of writing; this guards against the walker or the corpus
    // quietly shrinking.
    assert!(fns.len() >= 5_000, "only {} functions in the corpus", fns.len());
    // cudarc's raw layers are made of the calls `#[capturable]` rejects.
    for category in [
        Category::ManagedAlloc,
        Category::SyncAlloc,
        Category::SyncCopy,
        Category::Synchronize,
        Category::IdleHandle,
        Category::RawDriver,
    ] {
        assert!(by_category.contains_key(&category), "nothing in cudarc was flagged as {}", category.label());
    }
}

/// Times the whole expansion (parse the function, check it, emit it) per function.
#[test]
#[ignore = "a benchmark: run with --release --ignored --nocapture"]
fn expansion_time_per_function() {
    let (_, _, fns) = load_corpus();
    let rounds = 5;
    let mut per_fn: Vec<Duration> = vec![Duration::MAX; fns.len()];
    let started = Instant::now();
    for _ in 0..rounds {
        for (f, best) in fns.iter().zip(&mut per_fn) {
            let tokens = f.tokens.clone();
            let t = Instant::now();
            let output = expand::capturable(TokenStream::new(), tokens);
            let elapsed = t.elapsed();
            drop(output);
            *best = (*best).min(elapsed);
        }
    }
    let total = started.elapsed();
    per_fn.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    let pick = |q: f64| per_fn[((per_fn.len() - 1) as f64 * q) as usize];
    let mean = per_fn.iter().sum::<Duration>() / per_fn.len() as u32;
    println!(
        "{} functions, best of {rounds} rounds each: median {:.1} us/fn, mean {:.1} us/fn, \
         p90 {:.1} us, p99 {:.1} us, max {:.1} us ({:.2?} for all rounds)",
        fns.len(),
        us(pick(0.5)),
        us(mean),
        us(pick(0.9)),
        us(pick(0.99)),
        us(pick(1.0)),
        total
    );
}

/// candle-core's CUDA backend (issue #13, item 8): the code a candle decode step runs through
/// on the GPU, read from the source Cargo downloads for `capture-candle/` (the versions its
/// `Cargo.lock` pins). The checker must parse every function without panicking and flag the
/// synchronous device work candle does there (uploads, allocations, synchronization).
#[test]
fn candle_cuda_backend_is_checked() {
    let metadata =
        cargo_metadata("../capture-candle/Cargo.toml", "cargo fetch --manifest-path capture-candle/Cargo.toml");
    let package = metadata["packages"]
        .as_array()
        .expect("`cargo metadata` lists packages")
        .iter()
        .find(|p| p["name"] == "candle-core")
        .expect("capture-candle depends on candle-core");
    let version = package["version"].as_str().unwrap_or("?");
    let root = Path::new(package["manifest_path"].as_str().expect("a manifest path")).parent().unwrap().to_owned();
    let backend = root.join("src/cuda_backend");
    assert!(
        backend.is_dir(),
        "candle-core {version}'s CUDA backend is not at {}: run `cargo fetch --manifest-path capture-candle/Cargo.toml`",
        backend.display()
    );
    let mut paths = Vec::new();
    rust_files(&backend, &[], &mut paths);
    let label = format!("candle-core-{version}");
    let mut fns = Vec::new();
    for path in &paths {
        let src = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let file = syn::parse_file(&src).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()));
        let relative = Path::new(&label).join(path.strip_prefix(&root).unwrap());
        Collector { file: &relative, owner: Vec::new(), out: &mut fns }.visit_file(&file);
    }
    let mut flagged = 0;
    let mut by_category: BTreeMap<Category, usize> = BTreeMap::new();
    for f in &fns {
        let function = check::AnyFn::parse(f.tokens.clone())
            .unwrap_or_else(|e| panic!("{}: `{}` does not parse as a function: {e}", f.file.display(), f.name));
        let findings = check::check(&function, &[]);
        flagged += usize::from(!findings.is_empty());
        for finding in findings {
            *by_category.entry(finding.category).or_default() += 1;
        }
    }
    println!("{label} src/cuda_backend: {} functions from {} files; {flagged} flagged", fns.len(), paths.len());
    for category in Category::ALL {
        println!("  {:<36} {:>5}", category.label(), by_category.get(&category).copied().unwrap_or(0));
    }
    // 148 functions, 47 flagged, in candle-core 0.11.1 at the time of writing.
    assert!(fns.len() >= 100, "only {} functions in candle's CUDA backend", fns.len());
    for category in [Category::SyncCopy, Category::SyncAlloc, Category::Synchronize] {
        assert!(
            by_category.contains_key(&category),
            "nothing in candle's CUDA backend was flagged as {}",
            category.label()
        );
    }
}
