//! Rule family: names seen through `use … as alias` declared inside the function body.

#[allow(unused_imports)]
use super::*;

/// `use` declarations inside the function: `use cudarc::driver::result::malloc_sync as m;`.
#[derive(Default)]
pub(super) struct Aliases {
    /// Local name to the full path it stands for.
    pub(super) map: HashMap<String, Vec<String>>,
}

/// A path with aliases replaced by what they stand for.
pub(super) struct Resolved {
    pub(super) segments: Vec<String>,
    pub(super) via_alias: bool,
}

impl Aliases {
    pub(super) fn collect(&mut self, body: &Block) {
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

    pub(super) fn resolve(&self, path: &syn::Path) -> Resolved {
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

pub(super) fn add_use_tree(map: &mut HashMap<String, Vec<String>>, mut prefix: Vec<String>, tree: &UseTree) {
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
