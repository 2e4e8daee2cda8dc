//! capture-core's layers, kept (issue #23): every file of `capture-core/src` belongs to the
//! layer that ARCHITECTURE.md's table gives its path, and imports only from its own layer and
//! those below; no files import one another in a circle.
//!
//! What counts is code: `use` declarations (grouped trees included) and `crate::…`,
//! `super::…` and `self::…` paths anywhere in code, test modules included. Comments, doc
//! links and string literals do not count. A path resolves to the file of the deepest module
//! it names, so `crate::Name` (a re-export of `lib.rs`) is an import of `lib.rs`, the top:
//! code below it names items by their own module.
//!
//! Run alone: `cargo test -p capture-tests --test layers`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The exceptions: (file, file it may import although that is in a layer above). Each is
/// explained in ARCHITECTURE.md; adding one is a design decision, not a fix.
const ALLOWED_UPWARD: &[(&str, &str)] = &[
    // The public `unsafe fn`s of the interop API (`DeviceBuffer::device_ptr`,
    // `KernelParam::raw_device_ptr`) are declared in the raw layer, the only place where
    // `unsafe` may be written.
    ("raw/interop.rs", "buffer.rs"),
    ("raw/interop.rs", "module.rs"),
];

/// One layer: its number (0 is the bottom), its name, and the paths it holds (a path ending
/// in `/` holds a folder; the longest matching path decides).
#[derive(Debug)]
struct Layer {
    number: usize,
    name: String,
    paths: Vec<String>,
}

/// Reads the layer table of ARCHITECTURE.md: the rows whose first cell is a number; the
/// third cell lists the layer's paths in backticks.
fn parse_layers(markdown: &str) -> Vec<Layer> {
    let mut layers = Vec::new();
    for line in markdown.lines() {
        let cells: Vec<&str> = line.trim().trim_matches('|').split('|').map(str::trim).collect();
        let Some(number) = cells.first().and_then(|c| c.parse::<usize>().ok()) else { continue };
        assert!(cells.len() >= 3, "ARCHITECTURE.md: layer row `{line}` has fewer than 3 cells");
        let paths = cells[2].split('`').skip(1).step_by(2).map(str::to_owned).collect();
        layers.push(Layer { number, name: cells[1].to_owned(), paths });
    }
    layers
}

fn layer_of<'l>(layers: &'l [Layer], file: &str) -> Option<&'l Layer> {
    let mut best: Option<(&Layer, usize)> = None;
    for l in layers {
        for p in &l.paths {
            let hit = if p.ends_with('/') { file.starts_with(p.as_str()) } else { file == p };
            if hit && best.is_none_or(|(_, len)| p.len() > len) {
                best = Some((l, p.len()));
            }
        }
    }
    best.map(|(l, _)| l)
}

/// The module path of a source file: `lib.rs` is the root, `a/mod.rs` and `a.rs` are `a`.
fn module_of(file: &str) -> Vec<String> {
    let mut parts: Vec<String> = file.trim_end_matches(".rs").split('/').map(str::to_owned).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib")) {
        parts.pop();
    }
    parts
}

/// The source with comments, string and character literals blanked out.
fn strip(src: &str) -> String {
    let b = src.as_bytes();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let rest = &src[i..];
        if rest.starts_with("//") {
            i += rest.find('\n').unwrap_or(rest.len());
        } else if rest.starts_with("/*") {
            let (mut depth, mut j) = (0usize, i);
            loop {
                if src[j..].starts_with("/*") {
                    depth += 1;
                    j += 2;
                } else if src[j..].starts_with("*/") {
                    depth -= 1;
                    j += 2;
                    if depth == 0 {
                        break;
                    }
                } else if j >= b.len() {
                    break;
                } else {
                    j += 1;
                }
            }
            out.push(' ');
            i = j;
        } else if let Some(len) = raw_string_len(rest).filter(|_| i == 0 || !is_ident(b[i - 1])) {
            out.push_str("\"\"");
            i += len;
        } else if b[i] == b'"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != b'"' {
                j += if b[j] == b'\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i = j + 1;
        } else if let Some(len) = char_literal_len(rest) {
            out.push_str("' '");
            i += len;
        } else {
            let c = rest.chars().next().unwrap();
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn is_ident(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_'
}

/// The length of a raw string literal (`r"…"`, `r#"…"#`, `br"…"`) at the start of `s`.
fn raw_string_len(s: &str) -> Option<usize> {
    let body = s.strip_prefix("br").or_else(|| s.strip_prefix('r'))?;
    let hashes = body.len() - body.trim_start_matches('#').len();
    let open = body[hashes..].strip_prefix('"')?;
    let close = format!("\"{}", "#".repeat(hashes));
    let end = open.find(&close)?;
    Some(s.len() - open.len() + end + close.len())
}

/// The length of a character literal at the start of `s` (`'a'`, `'\n'`), not a lifetime.
fn char_literal_len(s: &str) -> Option<usize> {
    let rest = s.strip_prefix('\'')?;
    let mut chars = rest.char_indices();
    let (_, c) = chars.next()?;
    let after = if c == '\\' { 2 + rest.get(2..)?.find('\'')? } else { c.len_utf8() };
    rest[after..].starts_with('\'').then_some(after + 2)
}

fn tokens(code: &str) -> Vec<String> {
    let b = code.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if is_ident(c) || (c == b'$' && b.get(i + 1).is_some_and(|&n| is_ident(n))) {
            let start = i;
            i += 1;
            while i < b.len() && is_ident(b[i]) {
                i += 1;
            }
            out.push(code[start..i].to_owned());
        } else if code[i..].starts_with("::") {
            out.push("::".to_owned());
            i += 2;
        } else {
            let ch = code[i..].chars().next().unwrap();
            out.push(ch.to_string());
            i += ch.len_utf8();
        }
    }
    out
}

/// Every path a file's code names that starts with `crate`, `super` or `self`, resolved
/// against the module it appears in (inline modules included).
fn paths_named(file: &str, src: &str) -> Vec<Vec<String>> {
    let t = tokens(&strip(src));
    let base = module_of(file);
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut found = Vec::new();
    let here = |inline: &[(String, usize)]| {
        let mut m = base.clone();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    let mut i = 0;
    while i < t.len() {
        match t[i].as_str() {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if t.get(i + 2).is_some_and(|x| x == "{") => {
                inline.push((t[i + 1].clone(), depth));
                depth += 1;
                i += 3;
                continue;
            }
            "use" => {
                let mut leaves = Vec::new();
                i = use_tree(&t, i + 1, Vec::new(), &mut leaves);
                for p in leaves {
                    if matches!(p.first().map(String::as_str), Some("crate" | "super" | "self")) {
                        found.push(resolve(&here(&inline), &p));
                    }
                }
                continue;
            }
            "crate" | "super" | "self"
                if t.get(i + 1).is_some_and(|x| x == "::") && !(i > 0 && matches!(t[i - 1].as_str(), "::" | "in")) =>
            {
                let mut p = Vec::new();
                let mut j = i;
                while j < t.len() && (is_ident(t[j].as_bytes()[0])) {
                    p.push(t[j].clone());
                    if t.get(j + 1).is_some_and(|x| x == "::") {
                        j += 2;
                    } else {
                        j += 1;
                        break;
                    }
                }
                found.push(resolve(&here(&inline), &p));
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    found
}

/// Reads one use tree from `t[i]`; pushes each leaf path; returns the index after it.
fn use_tree(t: &[String], mut i: usize, mut prefix: Vec<String>, leaves: &mut Vec<Vec<String>>) -> usize {
    while i < t.len() {
        match t[i].as_str() {
            "::" => i += 1,
            "{" => {
                i += 1;
                while i < t.len() && t[i] != "}" {
                    i = use_tree(t, i, prefix.clone(), leaves);
                    if t.get(i).is_some_and(|x| x == ",") {
                        i += 1;
                    }
                }
                return i + 1;
            }
            "*" => {
                leaves.push(prefix);
                return i + 1;
            }
            "as" => {
                leaves.push(prefix);
                return i + 2;
            }
            "," | "}" | ";" => {
                leaves.push(prefix);
                return if t[i] == ";" { i + 1 } else { i };
            }
            "self" if !prefix.is_empty() => i += 1,
            seg => {
                prefix.push(seg.to_owned());
                i += 1;
            }
        }
    }
    i
}

/// A path from module `here` as a path from the crate root.
fn resolve(here: &[String], path: &[String]) -> Vec<String> {
    let mut segs = path.iter().peekable();
    let mut at: Vec<String> = if path.first().is_some_and(|s| s == "crate") {
        segs.next();
        Vec::new()
    } else {
        here.to_vec()
    };
    while let Some(s) = segs.peek() {
        match s.as_str() {
            "super" => {
                at.pop();
            }
            "self" => {}
            _ => break,
        }
        segs.next();
    }
    at.extend(segs.cloned());
    at
}

/// What the check finds: imports that go up a layer, files in no layer, and circles.
#[derive(Debug, Default)]
struct Findings {
    upward: Vec<String>,
    unplaced: Vec<String>,
    circles: Vec<Vec<String>>,
}

/// Checks `files` (path under `src/` → source) against `layers`.
fn check(files: &BTreeMap<String, String>, layers: &[Layer], allowed: &[(&str, &str)]) -> Findings {
    let modules: BTreeMap<Vec<String>, &str> = files.keys().map(|f| (module_of(f), f.as_str())).collect();
    let mut found = Findings::default();
    let mut edges: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for (file, src) in files {
        let Some(from) = layer_of(layers, file) else {
            found.unplaced.push(file.clone());
            continue;
        };
        for path in paths_named(file, src) {
            let target = (0..=path.len()).rev().find_map(|k| modules.get(&path[..k]).copied()).unwrap_or("lib.rs");
            if target == file {
                continue;
            }
            edges.entry(file.as_str()).or_default().insert(target);
            let Some(to) = layer_of(layers, target) else { continue };
            if to.number > from.number && !allowed.contains(&(file.as_str(), target)) {
                found.upward.push(format!(
                    "{file} (layer {} {}) names `{}`, in {target} (layer {} {}): a layer above its own",
                    from.number,
                    from.name,
                    path.join("::"),
                    to.number,
                    to.name
                ));
            }
        }
    }
    found.upward.dedup();
    found.circles = circles(&edges);
    found
}

/// The strongly connected components of more than one file (Tarjan's algorithm).
fn circles(edges: &BTreeMap<&str, BTreeSet<&str>>) -> Vec<Vec<String>> {
    struct State<'a> {
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(v: &'a str, edges: &BTreeMap<&'a str, BTreeSet<&'a str>>, s: &mut State<'a>) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        for &w in edges.get(v).into_iter().flatten() {
            if !s.index.contains_key(w) {
                visit(w, edges, s);
                let lw = s.low[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if s.on_stack.contains(w) {
                let iw = s.index[w];
                let lv = s.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if s.low[v] == s.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = s.stack.pop().unwrap();
                s.on_stack.remove(w);
                comp.push(w.to_owned());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                s.out.push(comp);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for &v in edges.keys() {
        if !s.index.contains_key(v) {
            visit(v, edges, &mut s);
        }
    }
    s.out
}

fn read_tree(dir: &Path, under: &str, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_str().unwrap().to_owned();
        if path.is_dir() {
            read_tree(&path, &format!("{under}{name}/"), out);
        } else if name.ends_with(".rs") {
            out.insert(format!("{under}{name}"), std::fs::read_to_string(&path).unwrap());
        }
    }
}

#[test]
#[cfg_attr(miri, ignore = "reads the source tree; Miri isolates the file system")]
fn capture_core_keeps_its_layers() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let layers = parse_layers(&std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap());
    assert!(layers.len() >= 6, "ARCHITECTURE.md's layer table has {} rows", layers.len());
    let mut files = BTreeMap::new();
    read_tree(&root.join("capture-core/src"), "", &mut files);
    assert!(files.len() > 40 && files.contains_key("lib.rs"), "read {} files", files.len());
    let f = check(&files, &layers, ALLOWED_UPWARD);
    let mut problems = Vec::new();
    for u in &f.unplaced {
        problems.push(format!("{u} is in no layer: add its path to ARCHITECTURE.md's layer table"));
    }
    problems.extend(f.upward.iter().cloned());
    for c in &f.circles {
        problems.push(format!("these files import one another in a circle: {}", c.join(", ")));
    }
    assert!(
        problems.is_empty(),
        "capture-core's layers are broken (see ARCHITECTURE.md; move the item down, or the code that needs it up):\n  {}",
        problems.join("\n  ")
    );
}

/// The layers of the synthetic crate below.
const TOY_TABLE: &str = "
| Layer | Name | Paths | May import |
|---|---|---|---|
| 0 | raw | `raw/` | nothing |
| 1 | values | `buffer.rs`, `handle.rs` | raw |
| 2 | capture | `stream.rs` | below |
| 3 | top | `lib.rs` | all |
";

fn toy(files: &[(&str, &str)]) -> Findings {
    let layers = parse_layers(TOY_TABLE);
    let files = files.iter().map(|(p, s)| (p.to_string(), s.to_string())).collect();
    check(&files, &layers, &[("raw/mod.rs", "handle.rs")])
}

#[test]
fn the_table_is_read_from_markdown() {
    let l = parse_layers(TOY_TABLE);
    assert_eq!(l.iter().map(|l| l.number).collect::<Vec<_>>(), [0, 1, 2, 3]);
    assert_eq!(l[1].paths, ["buffer.rs", "handle.rs"]);
    assert_eq!(layer_of(&l, "raw/cuda.rs").unwrap().name, "raw");
    assert!(layer_of(&l, "nowhere.rs").is_none());
}

#[test]
fn a_clean_crate_passes() {
    let f = toy(&[
        ("lib.rs", "mod raw; mod buffer; mod stream; pub use stream::Stream;"),
        ("raw/mod.rs", "pub(crate) mod cuda; use self::cuda::X; fn f() { super::raw::cuda::g() }"),
        ("raw/cuda.rs", "pub struct X; fn f<'a>(_: &'a str) -> char { '}' }"),
        ("buffer.rs", "use crate::raw::cuda::X; /// [`crate::stream::Stream`]\nstruct B;"),
        ("stream.rs", "use crate::{buffer::B, raw::{cuda::X, self}}; #[cfg(test)] mod tests { use super::*; }"),
    ]);
    assert!(f.upward.is_empty() && f.unplaced.is_empty() && f.circles.is_empty(), "{f:?}");
}

#[test]
fn upward_imports_are_found_in_every_form() {
    let f = toy(&[
        ("lib.rs", ""),
        // A grouped use tree, a path in an expression, and `super::` out of a folder.
        ("raw/cuda.rs", "use crate::{handle::H, raw::code::{self, C}};\nfn f() { let _ = crate::buffer::B::new(); }"),
        ("raw/code.rs", "fn g() -> super::super::stream::Stream { todo!() }"),
        // `crate::Name` is a re-export of lib.rs: the top.
        ("buffer.rs", "use crate::Stream;"),
        // Comments, doc links and strings are not imports.
        ("handle.rs", "// use crate::stream::S;\n/// [`crate::stream::S`]\nconst X: &str = \"crate::stream::S\"; /* crate::stream */"),
        ("stream.rs", ""),
    ]);
    let text = f.upward.join("\n");
    assert!(text.contains("raw/cuda.rs (layer 0 raw) names `handle::H`"), "{text}");
    assert!(text.contains("raw/cuda.rs (layer 0 raw) names `buffer::B::new`"), "{text}");
    assert!(text.contains("raw/code.rs (layer 0 raw) names `stream::Stream`"), "{text}");
    assert!(text.contains("buffer.rs (layer 1 values) names `Stream`, in lib.rs"), "{text}");
    assert!(!text.lines().any(|l| l.starts_with("handle.rs")), "{text}");
    assert_eq!(f.upward.len(), 4, "{text}");
}

#[test]
fn an_allowed_exception_is_allowed_and_nothing_else() {
    let f = toy(&[("raw/mod.rs", "use crate::handle::H; use crate::buffer::B;"), ("handle.rs", ""), ("buffer.rs", "")]);
    assert_eq!(f.upward.len(), 1, "{:?}", f.upward);
    assert!(f.upward[0].contains("`buffer::B`"));
}

#[test]
fn circles_and_unplaced_files_are_found() {
    let f =
        toy(&[("buffer.rs", "use crate::handle::H;"), ("handle.rs", "fn f() { crate::buffer::B; }"), ("extra.rs", "")]);
    assert_eq!(f.circles, [vec!["buffer.rs".to_owned(), "handle.rs".to_owned()]]);
    assert_eq!(f.unplaced, ["extra.rs"]);
}

#[test]
fn literals_and_lifetimes_are_told_apart() {
    let code = strip("fn f<'a>(x: &'a str) -> char { let _ = r#\"crate::x\"#; let _ = b\"crate::y\"; '\\'' }");
    assert!(!code.contains("crate::"), "{code}");
    assert!(code.contains("<'a>") && code.contains("&'a str"), "{code}");
}
