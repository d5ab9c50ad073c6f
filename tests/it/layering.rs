//! The layers of `src/`, held by a test: the layer table of `docs/ARCHITECTURE.md` ("Layers")
//! is read here, the production code is parsed with `syn` and every name it uses is followed
//! to the FILE that defines it — through `crate::`, `super::` and `self::`, the names a module
//! declares or imports, `mod.rs`/`x.rs` roots and their re-exports (glob ones too) — paths in
//! macro invocations and in attributes (`#[serde(default = "crate::…")]`) included. The test
//! fails on any use that runs up the table, on a module without a row, and on any circle:
//! between the top-level modules, and between the files of any folder, whose root (`mod.rs`,
//! or `x.rs` beside `x/`) is one of its files (a sub-folder counts as one file). A root may
//! declare its children and re-export their items — that alone is no use of them — but when
//! its own code uses a child's item, that child may not use the root's.
//!
//! Production code only: `#[cfg(test)]` items and the files only they declare are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::rc::Rc;

use syn::buffer::{Cursor, TokenBuffer};
use syn::visit::{self, Visit};
use syn::{Attribute, ImplItem, Item, Meta, UseTree, Visibility};

/// The layer of every module, read from the table under `## Layers` (1 = the top).
fn read_layer_table(doc: &str) -> BTreeMap<String, usize> {
    let section = doc.split("\n## ").find(|s| s.starts_with("Layers\n"));
    let lines = section.unwrap_or_default().lines();
    let rows = lines
        .filter(|l| l.starts_with('|') && !l.starts_with("|---"))
        .skip(1);
    let mut layers = BTreeMap::new();
    for (row, line) in rows.enumerate() {
        let modules = line.split('|').nth(2).unwrap_or_default();
        for name in modules.split('`').skip(1).step_by(2) {
            let earlier = layers.insert(name.to_string(), row + 1);
            assert!(
                earlier.is_none(),
                "`{name}` has two rows in the layer table"
            );
        }
    }
    layers
}

/// Whether attributes gate an item on `cfg(test)` (also `all(test, …)`).
fn is_test(attrs: &[Attribute]) -> bool {
    fn needs_test(meta: &Meta) -> bool {
        type Metas = syn::punctuated::Punctuated<Meta, syn::Token![,]>;
        let nested = |list: &syn::MetaList| -> Vec<bool> {
            let metas = list.parse_args_with(Metas::parse_terminated);
            metas.map_or(Vec::new(), |ms| ms.iter().map(needs_test).collect())
        };
        match meta {
            Meta::Path(path) => path.is_ident("test"),
            Meta::List(list) if list.path.is_ident("all") => nested(list).contains(&true),
            Meta::List(list) if list.path.is_ident("any") => !nested(list).contains(&false),
            _ => false,
        }
    }
    let cfg = |attr: &Attribute| {
        attr.path()
            .is_ident("cfg")
            .then(|| attr.parse_args::<Meta>())
    };
    attrs
        .iter()
        .any(|attr| cfg(attr).is_some_and(|m| m.is_ok_and(|m| needs_test(&m))))
}

/// `Some(&value.field)` for the variants named of one of `syn`'s enums, None for others.
macro_rules! field_of {
    ($value:expr, $enum:ident::{$($variant:ident),*}.$field:ident) => {
        match $value {
            $($enum::$variant(i) => Some(&i.$field),)*
            _ => None,
        }
    };
}

/// Whether an item is test code.
fn is_test_item(item: &Item) -> bool {
    field_of!(item, Item::{Const, Enum, ExternCrate, Fn, ForeignMod, Impl, Macro, Mod, Static,
        Struct, Trait, TraitAlias, Type, Union, Use}.attrs)
    .is_some_and(|attrs| is_test(attrs))
}

/// The name an item declares, if any (`impl` blocks and `use` declare none here).
fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Fn(i) => Some(&i.sig.ident),
        Item::Macro(i) => i.ident.as_ref(),
        _ => field_of!(item, Item::{Const, Enum, Static, Struct, Trait, TraitAlias, Type,
            Union}.ident),
    };
    ident.map(ToString::to_string)
}

/// The leaves of a `use` tree: the name each binds (none for `as _` and globs) and its full
/// path (a glob's ends in `*`).
fn use_leaves(tree: &UseTree, prefix: &[String], out: &mut Vec<(Option<String>, Vec<String>)>) {
    let with = |ident: &syn::Ident| {
        let mut path = prefix.to_vec();
        path.extend((ident != "self").then(|| ident.to_string()));
        path
    };
    match tree {
        UseTree::Path(p) => use_leaves(&p.tree, &with(&p.ident), out),
        UseTree::Name(n) => out.push((with(&n.ident).last().cloned(), with(&n.ident))),
        UseTree::Rename(r) => {
            out.push((
                (r.rename != "_").then(|| r.rename.to_string()),
                with(&r.ident),
            ));
        }
        UseTree::Glob(_) => out.push((None, [prefix, &["*".to_string()]].concat())),
        UseTree::Group(g) => g.items.iter().for_each(|t| use_leaves(t, prefix, out)),
    }
}

/// The names of a path (`crate::a::B` → crate, a, B).
fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// What a name of a module stands for.
enum Def {
    /// An item defined in a file (by index).
    Item(usize),
    /// A module (by index).
    Module(usize),
    /// An import of a path, relative to the module.
    Import(Vec<String>),
}

/// What a path leads to: a module, or an item defined in a file (both by index).
#[derive(Clone, Copy)]
enum Found {
    Module(usize),
    Item(usize),
}

/// A module: its file, its parent, the names it declares or imports, its glob imports.
#[derive(Default)]
struct Module {
    file: usize,
    parent: Option<usize>,
    /// A `mod x { … }` inside its file.
    inline: bool,
    names: BTreeMap<String, Vec<Def>>,
    globs: Vec<Vec<String>>,
}

/// The crate as parsed from `lib.rs` down its `mod` declarations (production ones only).
#[derive(Default)]
struct Crate {
    /// Files (index 0 is `lib.rs`): their path under `src/` and their syntax.
    files: Vec<(PathBuf, Rc<syn::File>)>,
    /// The place of each file among the folders (see `Crate::node`).
    nodes: Vec<Vec<String>>,
    /// Modules (index 0 is the crate).
    modules: Vec<Module>,
}

impl Crate {
    /// Parses the crate of `sources` (paths under `src/` → text).
    fn load(sources: &BTreeMap<PathBuf, String>) -> Crate {
        let mut krate = Crate::default();
        krate.add_file(sources, PathBuf::from("lib.rs"), None, Path::new(""));
        krate.nodes = (0..krate.files.len()).map(|f| krate.node(f)).collect();
        krate
    }

    /// Adds the module of file `rel`, a child of `parent` (its own children in `dir`).
    fn add_file(
        &mut self,
        sources: &BTreeMap<PathBuf, String>,
        rel: PathBuf,
        parent: Option<usize>,
        dir: &Path,
    ) -> usize {
        let shown = rel.display();
        let text = sources
            .get(&rel)
            .unwrap_or_else(|| panic!("src/{shown} is missing"));
        let ast = syn::parse_file(text).unwrap_or_else(|e| panic!("src/{shown}: {e}"));
        let ast = Rc::new(ast);
        self.files.push((rel, Rc::clone(&ast)));
        let at = self.add_module(self.files.len() - 1, parent, false);
        self.add_items(sources, at, &ast.items, dir);
        at
    }

    /// Adds a module of `file`, a child of `parent` (`inline`: a `mod x { … }` in that file).
    fn add_module(&mut self, file: usize, parent: Option<usize>, inline: bool) -> usize {
        let mut module = Module::default();
        (module.file, module.parent, module.inline) = (file, parent, inline);
        self.modules.push(module);
        self.modules.len() - 1
    }

    /// Declares the names of `items` in module `at`, loading the modules they declare.
    fn add_items(
        &mut self,
        sources: &BTreeMap<PathBuf, String>,
        at: usize,
        items: &[Item],
        dir: &Path,
    ) {
        let file = self.modules[at].file;
        for item in items.iter().filter(|i| !is_test_item(i)) {
            let (name, def) = match item {
                Item::Use(u) => {
                    let mut leaves = Vec::new();
                    use_leaves(&u.tree, &[], &mut leaves);
                    let module = &mut self.modules[at];
                    for (name, mut path) in leaves {
                        if let Some(name) = name {
                            let defs = module.names.entry(name).or_default();
                            defs.push(Def::Import(path));
                        } else if path.pop().is_some_and(|last| last == "*") {
                            module.globs.push(path);
                        }
                    }
                    continue;
                }
                Item::Mod(m) => {
                    let name = m.ident.to_string();
                    let child_dir = dir.join(&name);
                    let child = if let Some((_, inner)) = &m.content {
                        let child = self.add_module(file, Some(at), true);
                        self.add_items(sources, child, inner, &child_dir);
                        child
                    } else {
                        let flat = dir.join(format!("{name}.rs"));
                        let found = Some(flat).filter(|f| sources.contains_key(f));
                        let rel = found.unwrap_or_else(|| child_dir.join("mod.rs"));
                        self.add_file(sources, rel, Some(at), &child_dir)
                    };
                    (name, Def::Module(child))
                }
                _ => match item_name(item) {
                    Some(name) => (name, Def::Item(file)),
                    None => continue,
                },
            };
            self.modules[at].names.entry(name).or_default().push(def);
        }
    }

    /// What `path`, written in module `from`, leads to: the item, or the deepest module it
    /// reaches; None when its first name is none of the crate's (std, a dependency, a local).
    fn resolve(&self, from: usize, path: &[String], depth: usize) -> Option<Found> {
        let first = path.first()?;
        let (mut at, rest) = match first.as_str() {
            "crate" => (Found::Module(0), &path[1..]),
            "self" => (Found::Module(from), &path[1..]),
            "super" => (Found::Module(from), path),
            _ => (self.lookup(from, first, path.len() > 1, depth)?, &path[1..]),
        };
        for (i, segment) in rest.iter().enumerate() {
            let Found::Module(m) = at else { break };
            let next = match segment.as_str() {
                "super" => self.modules[m].parent.map(Found::Module),
                _ => self.lookup(m, segment, i + 1 < rest.len(), depth),
            };
            let Some(next) = next else { break };
            at = next;
        }
        Some(at)
    }

    /// What `name` stands for in module `m`: its own names first, then its glob imports.
    /// `more`: the path goes on (a module is then preferred to an item of the same name).
    fn lookup(&self, m: usize, name: &str, more: bool, depth: usize) -> Option<Found> {
        if depth > 12 {
            return None; // imports round a circle (the compiler rejects those anyway)
        }
        let mut best = None;
        for def in self.modules[m].names.get(name).into_iter().flatten() {
            let found = match def {
                Def::Item(file) => Some(Found::Item(*file)),
                Def::Module(child) => Some(Found::Module(*child)),
                Def::Import(path) => self.resolve(m, path, depth + 1),
            };
            match found {
                Some(f) if matches!(f, Found::Module(_)) == more => return Some(f),
                found => best = best.or(found),
            }
        }
        best.or_else(|| {
            let globs = &self.modules[m].globs;
            globs
                .iter()
                .find_map(|glob| match self.resolve(m, glob, depth + 1)? {
                    Found::Module(g) if g != m => self.lookup(g, name, more, depth + 1),
                    _ => None,
                })
        })
    }

    /// The place of file `f` among the folders: its path under `src/`, a root file (`mod.rs`,
    /// or `x.rs` beside `x/`) inside its folder (`tools/danger.rs` → tools, danger, danger.rs).
    fn node(&self, f: usize) -> Vec<String> {
        let rel = &self.files[f].0;
        let mut parts: Vec<String> = rel.iter().map(|c| c.to_string_lossy().into()).collect();
        let folder = rel.with_extension("");
        let has_children = || {
            self.files
                .iter()
                .any(|(o, _)| o != rel && o.starts_with(&folder))
        };
        if let Some(name) = folder.file_name()
            && has_children()
        {
            parts.insert(parts.len() - 1, name.to_string_lossy().into());
        }
        parts
    }

    /// The place of what `found` names (an item's file; a module's folder, or its file) and
    /// the file that holds it.
    fn place(&self, found: Found) -> (Vec<String>, &Path) {
        let (file, module) = match found {
            Found::Item(f) => (f, None),
            Found::Module(m) => (self.modules[m].file, Some(&self.modules[m])),
        };
        let mut node = self.nodes[file].clone();
        if module.is_some_and(|m| !m.inline) && is_root(&node) {
            node.pop();
        }
        (node, &self.files[file].0)
    }
}

/// Whether a place is a folder's root file (`mod.rs`, or `x.rs` inside folder `x`).
fn is_root(node: &[String]) -> bool {
    matches!(node, [.., folder, file] if file == "mod.rs" || *file == format!("{folder}.rs"))
}

/// Paths in a token stream (a macro's input, an attribute's arguments): runs of `a::b::c`
/// (`$crate::…` too, not `.field` nor `$var`), and, with `strings`, string literals after
/// `=` that parse as a path (`default = "crate::x::f"`).
fn token_paths(mut c: Cursor, strings: bool, out: &mut Vec<Vec<String>>) {
    let mut before = ' ';
    while !c.eof() {
        if let Some((inner, _, _, next)) = c.any_group() {
            token_paths(inner, strings, out);
            (c, before) = (next, ' ');
        } else if let Some((ident, mut next)) = c.ident() {
            let mut path = vec![ident.to_string()];
            while let Some((a, b)) = next.punct()
                && let Some((b, after)) = b.punct()
                && (a.as_char(), b.as_char()) == (':', ':')
                && let Some((segment, after)) = after.ident()
            {
                path.push(segment.to_string());
                next = after;
            }
            if !matches!(before, '.' | ':' | '\'' | '$') || (before == '$' && path[0] == "crate") {
                out.push(path);
            }
            (c, before) = (next, ' ');
        } else if let Some((literal, next)) = c.literal() {
            if let syn::Lit::Str(text) = syn::Lit::new(literal)
                && strings
                && before == '='
                && let Ok(path) = syn::parse_str::<syn::Path>(&text.value())
            {
                out.push(segments(&path));
            }
            (c, before) = (next, ' ');
        } else if let Some((punct, next)) = c.punct() {
            (c, before) = (next, punct.as_char());
        } else if let Some((_, next)) = c.token_tree() {
            (c, before) = (next, ' ');
        } else {
            break;
        }
    }
}

/// One use: the place used, the file that holds it, the path as written.
type Use = (Vec<String>, PathBuf, String);

/// The uses of one file's production code: where each path it writes leads.
struct Uses<'a> {
    krate: &'a Crate,
    file: usize,
    module: usize,
    found: Vec<Use>,
}

impl Uses<'_> {
    /// Notes `path`. A `use` of a module is a use of it; elsewhere a lone name that leads to
    /// a module is a local of that name. A root re-exporting its folder's items (`pub use`)
    /// does not use them.
    fn note(&mut self, path: Vec<String>, in_use: bool, re_export: bool) {
        let Some(found) = self.krate.resolve(self.module, &path, 0) else {
            return;
        };
        if !in_use && path.len() == 1 && matches!(found, Found::Module(_)) {
            return;
        }
        let me = &self.krate.nodes[self.file];
        let (target, file) = self.krate.place(found);
        if !(re_export && is_root(me) && target.starts_with(&me[..me.len() - 1])) {
            self.found
                .push((target, file.to_path_buf(), path.join("::")));
        }
    }

    fn note_tokens(&mut self, tokens: TokenBuffer, strings: bool) {
        let mut paths = Vec::new();
        token_paths(tokens.begin(), strings, &mut paths);
        paths
            .into_iter()
            .for_each(|path| self.note(path, false, false));
    }
}

impl<'ast> Visit<'ast> for Uses<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        match item {
            _ if is_test_item(item) => {}
            Item::Use(u) => {
                let mut leaves = Vec::new();
                use_leaves(&u.tree, &[], &mut leaves);
                let re_export = !matches!(u.vis, Visibility::Inherited);
                for (_, mut path) in leaves {
                    path.retain(|s| s != "*");
                    self.note(path, true, re_export);
                }
            }
            Item::Mod(m) => {
                let Some((_, inner)) = &m.content else { return };
                let defs = self.krate.modules[self.module]
                    .names
                    .get(&m.ident.to_string());
                let child = defs.into_iter().flatten().find_map(|d| match d {
                    Def::Module(child) => Some(*child),
                    _ => None,
                });
                let child = child.unwrap_or(self.module);
                let outer = std::mem::replace(&mut self.module, child);
                inner.iter().for_each(|i| self.visit_item(i));
                self.module = outer;
            }
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attrs = field_of!(item, ImplItem::{Const, Fn, Type, Macro}.attrs);
        if !attrs.is_some_and(|a| is_test(a)) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() {
            self.note(segments(path), false, false);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        self.note_tokens(TokenBuffer::new2(mac.tokens.clone()), false);
    }

    fn visit_attribute(&mut self, attr: &'ast Attribute) {
        let not_code = ["doc", "cfg", "path"]
            .iter()
            .any(|n| attr.path().is_ident(n));
        if let Meta::List(list) = &attr.meta
            && !not_code
        {
            self.note_tokens(TokenBuffer::new2(list.tokens.clone()), true);
        }
    }

    fn visit_visibility(&mut self, _: &'ast Visibility) {}
}

/// The name of place `node` in its folder at depth `at`: a top-level module's name, a
/// file's name or a sub-folder's (`danger/`).
fn label(node: &[String], at: usize) -> String {
    match at {
        0 => node[0].trim_end_matches(".rs").to_string(),
        _ if at + 1 == node.len() => node[at].clone(),
        _ => format!("{}/", node[at]),
    }
}

/// The circles of a graph: its groups of nodes that reach each other.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> BTreeSet<Vec<String>> {
    let reach = |from: &String| -> BTreeSet<String> {
        let (mut seen, mut todo) = (BTreeSet::new(), vec![from.clone()]);
        while let Some(n) = todo.pop() {
            let next = graph.get(&n).into_iter().flatten();
            todo.extend(next.filter(|m| seen.insert(m.to_string())).cloned());
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|n| (n, reach(n))).collect();
    let back = |m: &String, n: &String| reached.get(m).is_some_and(|r| r.contains(n));
    let circle = |(n, r): (&&String, &BTreeSet<String>)| {
        r.contains(*n)
            .then(|| r.iter().filter(|m| back(m, n)).cloned().collect())
    };
    reached.iter().filter_map(circle).collect()
}

/// One use between two places of a folder (`folder` "": between top-level modules): the
/// user's and the used place's names there, and the use as shown.
type Edge = (String, String, String, String);

/// Every use of one file by another, as an edge of the folder where their paths part.
fn edges(krate: &Crate) -> Vec<Edge> {
    let mut edges = Vec::new();
    let files = krate.modules.iter().enumerate();
    let mut uses = Uses {
        krate,
        file: 0,
        module: 0,
        found: Vec::new(),
    };
    for (module, m) in files.filter(|(i, m)| *i > 0 && !m.inline) {
        (uses.file, uses.module) = (m.file, module);
        uses.visit_file(&krate.files[m.file].1);
        let me = &krate.nodes[m.file];
        for (target, defined_in, path) in std::mem::take(&mut uses.found) {
            let shared = me.iter().zip(&target).take_while(|(a, b)| a == b).count();
            if shared == me.len() || shared == target.len() {
                continue; // within one file, or its own folder named as a module
            }
            let (file, to_file) = (krate.files[m.file].0.display(), defined_in.display());
            let shown = format!("src/{file} uses {path} (src/{to_file})");
            let (from, to) = (label(me, shared), label(&target, shared));
            edges.push((me[..shared].join("/"), from, to, shown));
        }
    }
    edges
}

/// Every violation of the crate against the layer table, one message each.
fn check(krate: &Crate, layers: &BTreeMap<String, usize>) -> Vec<String> {
    let no_row = |m: &String| {
        (!layers.contains_key(m))
            .then(|| format!("module `{m}` has no row in the layer table of docs/ARCHITECTURE.md"))
    };
    let mut found: Vec<String> = top_level_modules(krate).iter().filter_map(no_row).collect();
    // folder → (user, used) → its first use (in the order of the files and their lines).
    let mut graphs: BTreeMap<String, BTreeMap<(String, String), String>> = BTreeMap::new();
    for (folder, from, to, shown) in edges(krate) {
        if let ("", Some(&from_layer), Some(&to_layer)) =
            (folder.as_str(), layers.get(&from), layers.get(&to))
            && to_layer < from_layer
        {
            found.push(format!(
                "upward import: `{from}` (layer {from_layer}) uses `{to}` (layer {to_layer}): {shown}"
            ));
        }
        let edges = graphs.entry(folder).or_default();
        edges.entry((from, to)).or_insert(shown);
    }
    for (folder, edges) in graphs {
        found.extend(circles_of(&folder, &edges));
    }
    found.sort();
    found
}

/// The circles of one folder's uses, one message each with the uses that close it.
fn circles_of(folder: &str, edges: &BTreeMap<(String, String), String>) -> Vec<String> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (from, to) in edges.keys() {
        graph.entry(from.clone()).or_default().insert(to.clone());
    }
    let place = match folder {
        "" => "the top-level modules".to_string(),
        _ => format!("src/{folder}/"),
    };
    let message = |members: Vec<String>| {
        let within = edges
            .iter()
            .filter(|((a, b), _)| members.contains(a) && members.contains(b));
        let uses: String = within.map(|(_, shown)| format!("\n    {shown}")).collect();
        format!("circle in {place} between {}:{uses}", members.join(", "))
    };
    circles(&graph).into_iter().map(message).collect()
}

/// The crate's top-level modules (production ones).
fn top_level_modules(krate: &Crate) -> BTreeSet<String> {
    let names = krate.modules[0].names.iter();
    let modules = names.filter(|(_, defs)| defs.iter().any(|d| matches!(d, Def::Module(_))));
    modules.map(|(name, _)| name.clone()).collect()
}

/// Every `.rs` file under `dir`: its path relative to `root` → its text.
fn read_sources(root: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            read_sources(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            let text = std::fs::read_to_string(&path).unwrap();
            out.insert(path.strip_prefix(root).unwrap().to_path_buf(), text);
        }
    }
}

#[test]
fn the_source_keeps_the_layers_of_architecture_md() {
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let layers =
        read_layer_table(&std::fs::read_to_string(repo.join("docs/ARCHITECTURE.md")).unwrap());
    assert!(layers.len() > 10, "no layer table under `## Layers`");
    let mut sources = BTreeMap::new();
    read_sources(&repo.join("src"), &repo.join("src"), &mut sources);
    let krate = Crate::load(&sources);
    let found = check(&krate, &layers);
    assert!(
        found.is_empty(),
        "{} layering violation(s):\n{}",
        found.len(),
        found.join("\n")
    );
    let present = top_level_modules(&krate);
    let stale: Vec<&String> = layers.keys().filter(|m| !present.contains(*m)).collect();
    assert!(
        stale.is_empty(),
        "rows for modules that do not exist: {stale:?}"
    );
}

/// The violations of a small crate against a layer table (`rows`, top first, of module
/// names apart by spaces). `tree` holds the crate's files, each after a line `--- path`.
fn check_planted(tree: &str, rows: &[&str]) -> Vec<String> {
    let files = tree.split("--- ").filter_map(|f| f.split_once('\n'));
    let sources = files
        .map(|(path, text)| (path.into(), text.into()))
        .collect();
    let row = |(i, row): (usize, &&str)| format!("| {i} | `{}` | x |\n", row.replace(' ', "`, `"));
    let table: String = rows.iter().enumerate().map(row).collect();
    let layers = read_layer_table(&format!("\n## Layers\n| layer | modules |\n|---|\n{table}"));
    check(&Crate::load(&sources), &layers)
}

/// The check itself, on a small tree with one of each fault planted: it must find them,
/// and nothing in comments, plain strings or tests.
#[test]
fn the_check_finds_an_upward_import_a_circle_and_a_module_without_a_row() {
    let found = check_planted(
        r#"--- lib.rs
pub mod surface; pub mod engine; pub mod leaf; pub mod stray;
--- surface.rs
use crate::engine::Engine;
pub fn go() { crate::leaf::f(); }
--- engine/mod.rs
mod a; mod b;
#[cfg(test)]
mod tests;
pub struct Engine;
--- engine/a.rs
use super::{b::B, super::leaf::f}; // the upward import, hidden in a use group
use crate::{surface::go};
// crate::nowhere::x in a comment
pub struct A;
--- engine/b.rs
pub struct B;
fn f() -> super::a::A { let _ = "crate::surface"; super::a::A }
--- engine/tests.rs
use crate::surface::go; // a test may import anything
--- leaf.rs
pub fn f() {}
#[cfg(test)]
mod tests { use crate::surface::go; }
--- stray.rs
pub fn s() { crate::leaf::f() }
"#,
        &["surface", "engine", "leaf"],
    );
    assert_eq!(
        found,
        [
            "circle in src/engine/ between a.rs, b.rs:\n    \
             src/engine/a.rs uses super::b::B (src/engine/b.rs)\n    \
             src/engine/b.rs uses super::a::A (src/engine/a.rs)",
            "circle in the top-level modules between engine, surface:\n    \
             src/engine/a.rs uses crate::surface::go (src/surface.rs)\n    \
             src/surface.rs uses crate::engine::Engine (src/engine/mod.rs)",
            "module `stray` has no row in the layer table of docs/ARCHITECTURE.md",
            "upward import: `engine` (layer 2) uses `surface` (layer 1): \
             src/engine/a.rs uses crate::surface::go (src/surface.rs)",
        ],
    );
}

/// Planted (a): names imported through a root's re-exports (`pub use x::Name`, `pub use x::*`)
/// are credited to the files that define them, so the circles they close are found.
#[test]
fn an_import_through_a_roots_re_export_that_closes_a_circle_is_found() {
    let found = check_planted(
        r#"--- lib.rs
pub mod session; pub mod checkpoint;
--- session/mod.rs
mod store; mod writer;
pub use store::SessionStore;
pub use writer::SessionWriter;
--- session/store.rs
use super::writer::SessionWriter;
pub struct SessionStore(SessionWriter);
--- session/writer.rs
pub struct SessionWriter;
fn open() -> super::SessionStore { todo!() }
--- checkpoint/mod.rs
mod shadow; mod store;
pub use shadow::*;
--- checkpoint/shadow.rs
pub const DEFAULT_MAX_FILES: usize = 1;
pub fn keep() { super::store::prune(); }
--- checkpoint/store.rs
use super::DEFAULT_MAX_FILES;
pub fn prune() -> usize { DEFAULT_MAX_FILES }
"#,
        &["session checkpoint"],
    );
    assert_eq!(
        found,
        [
            "circle in src/checkpoint/ between shadow.rs, store.rs:\n    \
             src/checkpoint/shadow.rs uses super::store::prune (src/checkpoint/store.rs)\n    \
             src/checkpoint/store.rs uses super::DEFAULT_MAX_FILES (src/checkpoint/shadow.rs)",
            "circle in src/session/ between store.rs, writer.rs:\n    \
             src/session/store.rs uses super::writer::SessionWriter (src/session/writer.rs)\n    \
             src/session/writer.rs uses super::SessionStore (src/session/store.rs)",
        ],
    );
}

/// Planted (b): a root whose own code uses its children's items while they use its items is
/// a circle like any other — through a re-export, a child's path, a macro's input — while a
/// root that only declares and re-exports (`serve/`) is none.
#[test]
fn a_circle_between_a_folders_root_and_its_children_is_found() {
    let found = check_planted(
        r#"--- lib.rs
pub mod runtime; pub mod llm; pub mod serve;
--- runtime/mod.rs
mod pending;
pub use pending::Pending;
pub struct SupervisorError;
pub fn submit(p: Pending) {}
--- runtime/pending.rs
pub struct Pending(super::SupervisorError);
--- llm/mod.rs
mod wire;
pub struct Config;
pub fn ask() -> String { format!("{}", wire::send()) }
--- llm/wire/mod.rs
mod chat;
pub fn send() -> usize { chat::size() }
--- llm/wire/chat.rs
pub fn size() -> usize { let _ = crate::llm::Config; 1 }
--- serve/mod.rs
mod api;
pub use api::Router;
pub struct State;
--- serve/api.rs
use super::State;
pub struct Router(State);
"#,
        &["serve", "runtime", "llm"],
    );
    assert_eq!(
        found,
        [
            "circle in src/llm/ between mod.rs, wire/:\n    \
             src/llm/mod.rs uses wire::send (src/llm/wire/mod.rs)\n    \
             src/llm/wire/chat.rs uses crate::llm::Config (src/llm/mod.rs)",
            "circle in src/runtime/ between mod.rs, pending.rs:\n    \
             src/runtime/mod.rs uses Pending (src/runtime/pending.rs)\n    \
             src/runtime/pending.rs uses super::SupervisorError (src/runtime/mod.rs)",
        ],
    );
}

/// Planted (c): paths in attributes (`#[serde(default = "…")]`, a path argument) and in a
/// macro's input are uses: here they run up the table. Doc comments are not.
#[test]
fn a_path_in_an_attribute_or_a_macro_running_up_the_table_is_found() {
    let found = check_planted(
        r#"--- lib.rs
pub mod cli; pub mod config;
--- cli.rs
pub fn default_port() -> u16 { 1 }
pub fn parse(s: &str) -> u16 { 2 }
pub const NAME: &str = "x";
--- config.rs
#[derive(serde::Deserialize)]
pub struct Settings {
    #[serde(default = "crate::cli::default_port")]
    pub port: u16,
    #[arg(value_parser = crate::cli::parse)]
    pub other: u16,
}
/// crate::cli::NAME in a doc comment is no use.
#[doc = "crate::cli::NAME"]
pub fn name() -> String { format!("{}", crate::cli::NAME) }
"#,
        &["cli", "config"],
    );
    let up = "upward import: `config` (layer 2) uses `cli` (layer 1): src/config.rs uses";
    let expected =
        ["NAME", "default_port", "parse"].map(|n| format!("{up} crate::cli::{n} (src/cli.rs)"));
    assert_eq!(found, expected);
}
