//! Typed errors, held by a test (SPEC §16, docs/CLI.md "Exit codes"): `src/`'s production
//! code holds no `Result<_, String>` — in any spelling: `std::string::String`, `&str`,
//! `Box<str>`, `Cow<str>`, an alias of one of them, an alias of such a `Result` — and every
//! type that derives `thiserror::Error` implements `crate::error::Classified` (its kind and
//! hint). The crate is read from `src/lib.rs` and `src/main.rs` through every `mod` and parsed
//! with `syn`; `#[cfg(test)]` items and the files only they declare are skipped; comments and
//! strings are never read as code. Each finding names its file and line.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

use syn::ext::IdentExt;
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, GenericArgument, Item, Meta, PathArguments, Type};

/// A file of the crate: where it is (relative to `src/`), its text and its syntax tree.
struct Source {
    path: PathBuf,
    text: String,
    ast: syn::File,
}

/// The production files of the crate whose roots are `lib.rs` and `main.rs` under `read`.
fn crate_sources(read: &dyn Fn(&Path) -> Option<String>) -> Vec<Source> {
    let mut queue: Vec<PathBuf> = ["lib.rs", "main.rs"]
        .into_iter()
        .map(PathBuf::from)
        .filter(|p| read(p).is_some())
        .collect();
    let mut seen = BTreeSet::new();
    let mut sources = Vec::new();
    while let Some(path) = queue.pop() {
        if !seen.insert(path.clone()) {
            continue;
        }
        let text =
            read(&path).unwrap_or_else(|| panic!("{} is declared, not found", path.display()));
        let ast = syn::parse_file(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let here = path.parent().unwrap_or(Path::new("")).to_path_buf();
        let is_root = matches!(
            path.file_name().and_then(|n| n.to_str()),
            Some("lib.rs" | "main.rs" | "mod.rs")
        );
        let children = if is_root {
            here.clone()
        } else {
            here.join(path.file_stem().expect("a file name"))
        };
        declared_files(&ast.items, &here, &children, read, &mut queue);
        sources.push(Source { path, text, ast });
    }
    sources.sort_by(|a, b| a.path.cmp(&b.path));
    sources
}

/// Queues the files that `items` declare with `mod name;` (not under `#[cfg(test)]`):
/// `#[path]` ones relative to `base`, the others in `dir` as `name.rs` or `name/mod.rs`.
fn declared_files(
    items: &[Item],
    base: &Path,
    dir: &Path,
    read: &dyn Fn(&Path) -> Option<String>,
    queue: &mut Vec<PathBuf>,
) {
    for item in items {
        let Item::Mod(module) = item else { continue };
        if is_test(&module.attrs) {
            continue;
        }
        let name = module.ident.unraw().to_string();
        if let Some((_, inner)) = &module.content {
            let inner_dir = dir.join(&name);
            declared_files(inner, &inner_dir, &inner_dir, read, queue);
        } else if let Some(path) = path_attribute(&module.attrs) {
            queue.push(base.join(path));
        } else {
            let flat = dir.join(format!("{name}.rs"));
            let nested = dir.join(&name).join("mod.rs");
            queue.push(if read(&flat).is_some() { flat } else { nested });
        }
    }
}

/// The value of `#[path = "…"]`.
fn path_attribute(attrs: &[Attribute]) -> Option<String> {
    attrs.iter().find_map(|attr| match &attr.meta {
        Meta::NameValue(nv) if nv.path.is_ident("path") => match &nv.value {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }) => Some(s.value()),
            _ => None,
        },
        _ => None,
    })
}

/// Whether the attributes compile an item only for tests (`cfg(test)`, `cfg(all(test, …))`).
fn is_test(attrs: &[Attribute]) -> bool {
    fn needs_test(meta: &Meta) -> bool {
        match meta {
            Meta::Path(path) => path.is_ident("test"),
            Meta::List(list) if list.path.is_ident("all") => list
                .parse_args_with(Punctuated::<Meta, syn::Token![,]>::parse_terminated)
                .is_ok_and(|metas| metas.iter().any(needs_test)),
            _ => false,
        }
    }
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.parse_args::<Meta>().is_ok_and(|m| needs_test(&m))
    })
}

/// An item's attributes, and what the text calls it (`fn name`), when it has a name.
fn describe(item: &Item) -> (&[Attribute], Option<(&'static str, String)>) {
    let named = |word, ident: &syn::Ident| Some((word, ident.unraw().to_string()));
    match item {
        Item::Fn(i) => (&i.attrs, named("fn", &i.sig.ident)),
        Item::Type(i) => (&i.attrs, named("type", &i.ident)),
        Item::Struct(i) => (&i.attrs, named("struct", &i.ident)),
        Item::Enum(i) => (&i.attrs, named("enum", &i.ident)),
        Item::Union(i) => (&i.attrs, named("union", &i.ident)),
        Item::Trait(i) => (&i.attrs, named("trait", &i.ident)),
        Item::Const(i) => (&i.attrs, named("const", &i.ident)),
        Item::Static(i) => (&i.attrs, named("static", &i.ident)),
        Item::Mod(i) => (&i.attrs, named("mod", &i.ident)),
        Item::Impl(i) => (&i.attrs, None),
        Item::Use(i) => (&i.attrs, None),
        Item::Macro(i) => (&i.attrs, None),
        Item::ForeignMod(i) => (&i.attrs, None),
        Item::ExternCrate(i) => (&i.attrs, None),
        Item::TraitAlias(i) => (&i.attrs, None),
        _ => (&[], None),
    }
}

/// The 1-based line of the `nth` (0-based) `word name` in `text` (`fn positive_amount`).
fn line_of(text: &str, word: &str, name: &str, nth: usize) -> usize {
    let needle = format!("{word} {name}");
    let mut seen = 0;
    for (index, line) in text.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find(&needle) {
            let before = rest[..at].chars().next_back();
            let after = rest[at + needle.len()..].chars().next();
            let word_edge = |c: Option<char>| !c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if word_edge(before) && word_edge(after) {
                if seen == nth {
                    return index + 1;
                }
                seen += 1;
            }
            rest = &rest[at + needle.len()..];
        }
    }
    0
}

/// Walks one file's production items, knowing which named item it is in and where that is.
struct Walk<'a> {
    source: &'a Source,
    /// The named items around the current node (innermost last).
    around: Vec<(&'static str, String)>,
    /// How many items of each `word name` were entered so far (for [`line_of`]).
    entered: HashMap<(&'static str, String), usize>,
    /// The line of each item on `around`.
    lines: Vec<usize>,
}

impl<'a> Walk<'a> {
    fn new(source: &'a Source) -> Self {
        Walk {
            source,
            around: Vec::new(),
            entered: HashMap::new(),
            lines: Vec::new(),
        }
    }

    fn enter(&mut self, named: Option<(&'static str, String)>) {
        let line = match &named {
            Some((word, name)) => {
                let nth = self.entered.entry((*word, name.clone())).or_insert(0);
                let line = line_of(&self.source.text, word, name, *nth);
                *nth += 1;
                line
            }
            None => self.lines.last().copied().unwrap_or(0),
        };
        self.around.push(named.unwrap_or(("", String::new())));
        self.lines.push(line);
    }

    fn leave(&mut self) {
        self.around.pop();
        self.lines.pop();
    }

    /// `file:line (word name)` of the innermost named item.
    fn here(&self) -> String {
        let line = self.lines.last().copied().unwrap_or(0);
        let name = self
            .around
            .iter()
            .rev()
            .find(|(word, _)| !word.is_empty())
            .map(|(word, name)| format!(" ({word} {name})"))
            .unwrap_or_default();
        format!("{}:{line}{name}", self.source.path.display())
    }
}

/// Whether `ty` is a string used as an error: `String` (or an alias of it), `&str`,
/// `Box<str>`, `Cow<str>`.
fn is_stringly(ty: &Type, aliases: &BTreeSet<String>) -> bool {
    match ty {
        Type::Paren(inner) => is_stringly(&inner.elem, aliases),
        Type::Group(inner) => is_stringly(&inner.elem, aliases),
        Type::Reference(reference) => is_str(&reference.elem),
        Type::Path(path) if path.qself.is_none() => {
            let Some(last) = path.path.segments.last() else {
                return false;
            };
            let name = last.ident.to_string();
            match &last.arguments {
                PathArguments::None => name == "String" || aliases.contains(&name),
                PathArguments::AngleBracketed(args) if name == "Box" || name == "Cow" => args
                    .args
                    .iter()
                    .any(|arg| matches!(arg, GenericArgument::Type(t) if is_str(t))),
                _ => false,
            }
        }
        _ => false,
    }
}

fn is_str(ty: &Type) -> bool {
    matches!(ty, Type::Path(p) if p.qself.is_none() && p.path.is_ident("str"))
}

/// Whether `path` is a `Result<_, E>` whose `E` is a string.
fn is_string_result(path: &syn::TypePath, aliases: &BTreeSet<String>) -> bool {
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let PathArguments::AngleBracketed(args) = &last.arguments else {
        return false;
    };
    let types: Vec<&Type> = args
        .args
        .iter()
        .filter_map(|arg| match arg {
            GenericArgument::Type(t) => Some(t),
            _ => None,
        })
        .collect();
    last.ident == "Result" && types.len() == 2 && is_stringly(types[1], aliases)
}

/// The names of type aliases of a string (`type Reason = String;`), in every file.
fn string_aliases(sources: &[Source]) -> BTreeSet<String> {
    let mut aliases = BTreeSet::new();
    loop {
        let before = aliases.len();
        for source in sources {
            for item in &source.ast.items {
                if let Item::Type(alias) = item
                    && alias.generics.params.is_empty()
                    && !is_test(&alias.attrs)
                    && is_stringly(&alias.ty, &aliases)
                {
                    aliases.insert(alias.ident.to_string());
                }
            }
        }
        if aliases.len() == before {
            return aliases;
        }
    }
}

/// Finds `Result<_, String>` (every spelling) in production items.
struct StringErrors<'a> {
    walk: Walk<'a>,
    aliases: &'a BTreeSet<String>,
    found: Vec<String>,
}

impl<'ast> Visit<'ast> for StringErrors<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        let (attrs, named) = describe(item);
        if is_test(attrs) {
            return;
        }
        self.walk.enter(named);
        visit::visit_item(self, item);
        self.walk.leave();
    }

    fn visit_impl_item_fn(&mut self, item: &'ast syn::ImplItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        self.walk
            .enter(Some(("fn", item.sig.ident.unraw().to_string())));
        visit::visit_impl_item_fn(self, item);
        self.walk.leave();
    }

    fn visit_trait_item_fn(&mut self, item: &'ast syn::TraitItemFn) {
        if is_test(&item.attrs) {
            return;
        }
        self.walk
            .enter(Some(("fn", item.sig.ident.unraw().to_string())));
        visit::visit_trait_item_fn(self, item);
        self.walk.leave();
    }

    fn visit_impl_item_type(&mut self, item: &'ast syn::ImplItemType) {
        self.walk
            .enter(Some(("type", item.ident.unraw().to_string())));
        visit::visit_impl_item_type(self, item);
        self.walk.leave();
    }

    fn visit_type_path(&mut self, path: &'ast syn::TypePath) {
        if is_string_result(path, self.aliases) {
            self.found.push(self.walk.here());
        }
        visit::visit_type_path(self, path);
    }
}

/// Every `Result<_, String>` of the crate's production code, as `file:line (item)`.
fn string_errors(sources: &[Source]) -> Vec<String> {
    let aliases = string_aliases(sources);
    let mut found = Vec::new();
    for source in sources {
        let mut finder = StringErrors {
            walk: Walk::new(source),
            aliases: &aliases,
            found: Vec::new(),
        };
        finder.visit_file(&source.ast);
        found.append(&mut finder.found);
    }
    found
}

/// Finds the types that derive `Error` and the types that implement `Classified`.
struct ErrorTypes<'a> {
    walk: Walk<'a>,
    /// Name → where it is defined.
    derived: Vec<(String, String)>,
    classified: BTreeSet<String>,
}

/// Whether the attributes derive `Error` (`thiserror::Error`, or `Error` imported from it).
fn derives_error(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("derive")
            && attr
                .parse_args_with(Punctuated::<syn::Path, syn::Token![,]>::parse_terminated)
                .is_ok_and(|paths| {
                    paths
                        .iter()
                        .any(|p| p.segments.last().is_some_and(|s| s.ident == "Error"))
                })
    })
}

impl<'ast> Visit<'ast> for ErrorTypes<'_> {
    fn visit_item(&mut self, item: &'ast Item) {
        let (attrs, named) = describe(item);
        if is_test(attrs) {
            return;
        }
        self.walk.enter(named.clone());
        if let (Some((_, name)), Item::Struct(_) | Item::Enum(_)) = (&named, item)
            && derives_error(attrs)
        {
            self.derived.push((name.clone(), self.walk.here()));
        }
        if let Item::Impl(imp) = item
            && let Some((_, trait_path, _)) = &imp.trait_
            && trait_path
                .segments
                .last()
                .is_some_and(|s| s.ident == "Classified")
            && let Type::Path(self_ty) = &*imp.self_ty
            && let Some(last) = self_ty.path.segments.last()
        {
            self.classified.insert(last.ident.unraw().to_string());
        }
        visit::visit_item(self, item);
        self.walk.leave();
    }
}

/// The error types (deriving `Error`) without a `Classified` impl, as `file:line (item)`.
fn unclassified(sources: &[Source]) -> Vec<String> {
    let mut derived = Vec::new();
    let mut classified = BTreeSet::new();
    for source in sources {
        let mut finder = ErrorTypes {
            walk: Walk::new(source),
            derived: Vec::new(),
            classified: BTreeSet::new(),
        };
        finder.visit_file(&source.ast);
        derived.append(&mut finder.derived);
        classified.append(&mut finder.classified);
    }
    derived
        .into_iter()
        .filter(|(name, _)| !classified.contains(name))
        .map(|(_, at)| at)
        .collect()
}

fn the_crate() -> Vec<Source> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    crate_sources(&|path| std::fs::read_to_string(src.join(path)).ok())
}

fn planted(files: &[(&str, &str)]) -> Vec<Source> {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(path, text)| (PathBuf::from(path), (*text).to_string()))
        .collect();
    crate_sources(&|path| files.get(path).cloned())
}

#[test]
fn no_result_with_a_string_error_in_src() {
    let sources = the_crate();
    assert!(sources.len() > 100, "only {} files read", sources.len());
    let found = string_errors(&sources);
    assert!(
        found.is_empty(),
        "Result<_, String> in production code (give it a thiserror type, SPEC §16):\n{}",
        found.join("\n")
    );
}

#[test]
fn every_error_type_in_src_says_its_kind() {
    let sources = the_crate();
    let derived = sources.iter().filter(|s| derives_error_anywhere(s)).count();
    assert!(derived > 20, "only {derived} files with error types read");
    let missing = unclassified(&sources);
    assert!(
        missing.is_empty(),
        "error types without `impl crate::error::Classified` (a kind, and a hint where the user can act):\n{}",
        missing.join("\n")
    );
}

fn derives_error_anywhere(source: &Source) -> bool {
    let mut finder = ErrorTypes {
        walk: Walk::new(source),
        derived: Vec::new(),
        classified: BTreeSet::new(),
    };
    finder.visit_file(&source.ast);
    !finder.derived.is_empty()
}

#[test]
fn a_planted_string_error_is_found_in_every_spelling_and_only_in_code() {
    let lib = r#"mod a;
#[cfg(test)]
mod tests;
/// Returns Result<(), String> (a comment, not code).
pub fn f() -> Result<(), String> {
    let _text = "Result<(), String> in a string";
    Ok(())
}
#[cfg(test)]
mod inline {
    fn t() -> Result<(), String> { Ok(()) }
}
"#;
    let a = r#"type Reason = String;
pub type Outcome<T> = std::result::Result<T, std::string::String>;
pub struct S;
impl S {
    pub fn fine(&self) -> Result<u8, std::io::Error> { Ok(1) }
    pub fn g(&self) -> Result<u8, Reason> { Ok(1) }
}
pub fn h(x: &'static str) -> Result<(), &'static str> { Err(x) }
pub fn io() -> std::io::Result<String> { Ok(String::new()) }
pub fn closure() -> Box<dyn Fn() -> Result<u8, Box<str>>> { todo!() }
"#;
    let tests = "fn t() -> Result<(), String> { Ok(()) }\n";
    let sources = planted(&[("lib.rs", lib), ("a.rs", a), ("tests.rs", tests)]);
    assert_eq!(sources.len(), 2, "tests.rs is only declared for tests");
    assert_eq!(
        string_errors(&sources),
        [
            "a.rs:2 (type Outcome)",
            "a.rs:6 (fn g)",
            "a.rs:8 (fn h)",
            "a.rs:10 (fn closure)",
            "lib.rs:5 (fn f)",
        ]
    );
}

#[test]
fn a_planted_error_type_without_a_kind_is_found() {
    let lib = r#"mod nested;
#[derive(Debug, thiserror::Error)]
#[error("bare")]
pub struct Bare;

/// Has its kind.
#[derive(Debug, thiserror::Error)]
pub enum Kinded {
    #[error("x")]
    X,
}

impl crate::error::Classified for Kinded {
    fn kind(&self) -> crate::error::ErrorKind { crate::error::ErrorKind::Io }
}

#[derive(Debug)]
pub struct NotAnError;
"#;
    let nested = r#"use thiserror::Error;
#[derive(Debug, Error)]
#[error("inner")]
enum Inner { A }

#[cfg(test)]
#[derive(Debug, Error)]
#[error("test only")]
struct OnlyInTests;
"#;
    let sources = planted(&[("lib.rs", lib), ("nested/mod.rs", nested)]);
    assert_eq!(
        unclassified(&sources),
        ["lib.rs:4 (struct Bare)", "nested/mod.rs:4 (enum Inner)"]
    );
}
