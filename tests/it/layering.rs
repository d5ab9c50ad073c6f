//! The layers of `src/`, held by a test: the layer table of `docs/ARCHITECTURE.md` ("Layers")
//! is read here, every `crate::` and `super::` path of the production code is mapped to the
//! module it names, and the test fails on any import that runs up the table, on a module
//! without a row, and on any circle — between the top-level modules, and between the files
//! of any folder (sub-folders taken whole; the folder's own root file, `mod.rs` or `x.rs`
//! beside `x/`, is the module itself: its files may use it and it may re-export them).
//!
//! Production code only: `#[cfg(test)]` items and the files only they declare are skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// One finding of the check.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Violation {
    /// `module` is not in the layer table.
    NoRow { module: String },
    /// `from` (layer `from_layer`) imports `to` from a higher layer.
    Upward {
        from: String,
        from_layer: usize,
        to: String,
        to_layer: usize,
        file: String,
        path: String,
    },
    /// These modules (or files of one folder) import each other round a circle.
    Circle {
        folder: String,
        members: Vec<String>,
    },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::NoRow { module } => write!(
                f,
                "module `{module}` has no row in the layer table of docs/ARCHITECTURE.md"
            ),
            Violation::Upward {
                from,
                from_layer,
                to,
                to_layer,
                file,
                path,
            } => write!(
                f,
                "upward import: `{from}` (layer {from_layer}) uses `{to}` (layer {to_layer}): {path} in src/{file}"
            ),
            Violation::Circle { folder, members } => {
                write!(f, "circle in {folder}: {}", members.join(" → "))
            }
        }
    }
}

/// The layer of every module, read from the table under `## Layers` (1 = the top).
fn read_layer_table(doc: &str) -> BTreeMap<String, usize> {
    let mut layers = BTreeMap::new();
    let mut in_section = false;
    let mut row = 0;
    for line in doc.lines() {
        if line.starts_with("## ") {
            in_section = line.trim() == "## Layers";
            continue;
        }
        if !in_section || !line.starts_with('|') || line.starts_with("|---") {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let Some(modules) = cells.get(2) else {
            continue;
        };
        let names: Vec<&str> = modules
            .split('`')
            .skip(1)
            .step_by(2)
            .filter(|n| !n.is_empty())
            .collect();
        if names.is_empty() {
            continue; // the header row
        }
        row += 1;
        for name in names {
            let earlier = layers.insert(name.to_string(), row);
            assert!(
                earlier.is_none(),
                "`{name}` has two rows in the layer table"
            );
        }
    }
    layers
}

/// The source with comments, string and character literals blanked (paths in them are not
/// imports).
fn code_only(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if let Some(end) = raw_string_end(&chars, i) {
            out.push_str("\"\"");
            i = end;
        } else if c == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("\"\"");
        } else if c == '\'' && is_char_literal(&chars, i) {
            i += 1;
            while i < chars.len() && chars[i] != '\'' {
                i += if chars[i] == '\\' { 2 } else { 1 };
            }
            i += 1;
            out.push_str("' '");
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// Where a raw string literal starting at `i` (`r"…"`, `r#"…"#`, `br"…"`) ends.
fn raw_string_end(chars: &[char], i: usize) -> Option<usize> {
    let before = i.checked_sub(1).map(|p| chars[p]);
    if before.is_some_and(|b| b.is_alphanumeric() || b == '_') {
        return None;
    }
    let mut j = i;
    if chars.get(j) == Some(&'b') {
        j += 1;
    }
    if chars.get(j) != Some(&'r') {
        return None;
    }
    j += 1;
    let mut hashes = 0;
    while chars.get(j) == Some(&'#') {
        hashes += 1;
        j += 1;
    }
    if chars.get(j) != Some(&'"') {
        return None;
    }
    j += 1;
    while j < chars.len() {
        if chars[j] == '"' && (0..hashes).all(|k| chars.get(j + 1 + k) == Some(&'#')) {
            return Some(j + 1 + hashes);
        }
        j += 1;
    }
    Some(chars.len())
}

/// A character literal (`'x'`, `'\n'`) rather than a lifetime (`'a`).
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

/// The code without its `#[cfg(test)]` items.
fn without_test_items(code: &str) -> String {
    const ATTR: &str = "#[cfg(test)]";
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find(ATTR) {
        out.push_str(&rest[..at]);
        let after = &rest[at + ATTR.len()..];
        let Some(stop) = after.find([';', '{']) else {
            rest = "";
            break;
        };
        if after.as_bytes()[stop] == b';' {
            rest = &after[stop + 1..];
            continue;
        }
        let mut depth = 0usize;
        let mut end = after.len();
        for (k, b) in after.bytes().enumerate().skip(stop) {
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = k + 1;
                        break;
                    }
                }
                _ => {}
            }
        }
        rest = &after[end..];
    }
    out.push_str(rest);
    out
}

/// The module path of a file under `src/` (`tools/danger/lexer.rs` → tools, danger, lexer).
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .with_extension("")
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    if parts.last().is_some_and(|p| p == "mod") {
        parts.pop();
    }
    parts
}

/// Every `crate::…` and `super::…` path of `code`, with `{…}` groups of `use` expanded.
fn paths_in(code: &str) -> Vec<Vec<String>> {
    let mut found = Vec::new();
    let bytes = code.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let starts_word = i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
        let rest = &code[i..];
        let head = ["crate", "super"].into_iter().find(|h| {
            starts_word && rest.starts_with(h) && rest[h.len()..].trim_start().starts_with("::")
        });
        match head {
            Some(h) => {
                let (paths, used) = read_path(rest);
                found.extend(paths);
                i += used.max(h.len());
            }
            None => i += rest.chars().next().map_or(1, char::len_utf8),
        }
    }
    found
}

/// The path (or use-tree) at the start of `text`: every full path it names and the bytes
/// it took.
fn read_path(text: &str) -> (Vec<Vec<String>>, usize) {
    let mut segments = Vec::new();
    let mut pos = 0;
    loop {
        let rest = &text[pos..];
        let trimmed = rest.trim_start();
        pos += rest.len() - trimmed.len();
        if trimmed.starts_with('{') {
            let Some(close) = matching_brace(trimmed) else {
                return (vec![segments], pos);
            };
            let inner = &trimmed[1..close];
            let mut all = Vec::new();
            for item in split_top_level(inner) {
                let (subs, _) = read_path(item);
                for sub in subs {
                    let mut full = segments.clone();
                    full.extend(sub.into_iter().filter(|s| s != "self"));
                    all.push(full);
                }
            }
            return (all, pos + close + 1);
        }
        let ident_len = trimmed
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(trimmed.len());
        if ident_len == 0 {
            return (vec![segments], pos);
        }
        segments.push(trimmed[..ident_len].to_string());
        pos += ident_len;
        let after = &text[pos..];
        let after_trim = after.trim_start();
        if !after_trim.starts_with("::") {
            return (vec![segments], pos);
        }
        pos += after.len() - after_trim.len() + 2;
    }
}

fn matching_brace(text: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (k, b) in text.bytes().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return Some(k);
                }
            }
            _ => {}
        }
    }
    None
}

fn split_top_level(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0usize, 0);
    for (k, b) in text.bytes().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                parts.push(&text[start..k]);
                start = k + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .map(|p| p.split(" as ").next().unwrap_or("").trim())
        .filter(|p| !p.is_empty() && *p != "*")
        .collect()
}

/// A source tree read for the check.
struct Tree {
    root: PathBuf,
    /// Production files, relative to the root, with their code (comments, literals and test
    /// items removed).
    files: BTreeMap<PathBuf, String>,
}

impl Tree {
    fn read(root: &Path) -> Tree {
        let mut all = Vec::new();
        collect_rs(root, root, &mut all);
        let test_only = test_only_files(root, &all);
        let files = all
            .into_iter()
            .filter(|rel| !test_only.iter().any(|t| rel.starts_with(t)))
            .filter(|rel| rel != Path::new("lib.rs") && rel != Path::new("main.rs"))
            .map(|rel| {
                let text = std::fs::read_to_string(root.join(&rel)).unwrap();
                let code = without_test_items(&code_only(&text));
                (rel, code)
            })
            .collect();
        Tree {
            root: root.to_path_buf(),
            files,
        }
    }

    /// The longest prefix of `path` that is a module of the tree (a file or a folder).
    fn module_of(&self, path: &[String]) -> Vec<String> {
        let mut known = Vec::new();
        let mut dir = self.root.clone();
        for segment in path {
            let as_dir = dir.join(segment);
            if as_dir.is_dir() || as_dir.with_extension("rs").is_file() {
                known.push(segment.clone());
                dir = as_dir;
            } else {
                break;
            }
        }
        known
    }

    /// Every import edge: (folder, from, to, file, path text), where `from` and `to` are
    /// children of `folder` ("" = the crate's top-level modules).
    fn edges(&self) -> Vec<(String, String, String, String, String)> {
        let mut edges = Vec::new();
        for (rel, code) in &self.files {
            let me = module_path(rel);
            for path in paths_in(code) {
                let text = path.join("::");
                let mut full: Vec<String> = match path.first().map(String::as_str) {
                    Some("crate") => Vec::new(),
                    // `super` of a file is its folder (of a folder's root file, the folder's
                    // parent): the module path without its last part either way.
                    _ => me[..me.len() - 1].to_vec(),
                };
                let mut segments = path[1..].iter().peekable();
                while segments.peek().is_some_and(|s| *s == "super") {
                    full.pop();
                    segments.next();
                }
                full.extend(segments.cloned());
                let target = self.module_of(&full);
                let shared = me.iter().zip(&target).take_while(|(a, b)| a == b).count();
                if shared < me.len() && shared < target.len() {
                    edges.push((
                        me[..shared].join("/"),
                        me[shared].clone(),
                        target[shared].clone(),
                        rel.display().to_string(),
                        text,
                    ));
                }
            }
        }
        edges
    }

    /// The top-level modules of the tree.
    fn modules(&self) -> BTreeSet<String> {
        self.files
            .keys()
            .filter_map(|rel| module_path(rel).first().cloned())
            .collect()
    }
}

fn collect_rs(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.path());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect_rs(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

/// Files (or folders) declared only under `#[cfg(test)]`: `mod tests;`, and those named by
/// a `#[path = "…"]` beside it.
fn test_only_files(root: &Path, files: &[PathBuf]) -> Vec<PathBuf> {
    let decl = regex::Regex::new(
        r#"#\[cfg\(test\)\]\s*(?:#\[path\s*=\s*"([^"]+)"\]\s*)?(?:#\[[^\]]*\]\s*)*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;"#,
    )
    .unwrap();
    let mut out = Vec::new();
    for rel in files {
        let text = std::fs::read_to_string(root.join(rel)).unwrap();
        let dir_of_children = if rel.ends_with("mod.rs") {
            rel.parent().unwrap().to_path_buf()
        } else {
            rel.with_extension("")
        };
        for found in decl.captures_iter(&text) {
            match found.get(1) {
                Some(path) => out.push(rel.parent().unwrap().join(path.as_str())),
                None => {
                    let name = &found[2];
                    out.push(dir_of_children.join(format!("{name}.rs")));
                    out.push(dir_of_children.join(name));
                }
            }
        }
    }
    out
}

/// The circles of a graph: its strongly connected groups of more than one node (and nodes
/// that import themselves), each in a stable order.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct State<'a> {
        graph: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        found: Vec<Vec<String>>,
    }
    fn visit<'a>(s: &mut State<'a>, v: &'a str) {
        let n = s.index.len();
        s.index.insert(v, n);
        s.low.insert(v, n);
        s.stack.push(v);
        s.on_stack.insert(v);
        let graph = s.graph;
        for w in graph.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !s.index.contains_key(w) {
                visit(s, w);
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
            let mut group = Vec::new();
            while let Some(w) = s.stack.pop() {
                s.on_stack.remove(w);
                group.push(w.to_string());
                if w == v {
                    break;
                }
            }
            let self_loop = graph.get(v).is_some_and(|out| out.contains(v));
            if group.len() > 1 || self_loop {
                group.sort();
                s.found.push(group);
            }
        }
    }
    let mut s = State {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !s.index.contains_key(v.as_str()) {
            visit(&mut s, v);
        }
    }
    s.found.sort();
    s.found
}

/// Every violation of `tree` against `layers`.
fn check(tree: &Tree, layers: &BTreeMap<String, usize>) -> Vec<Violation> {
    let mut found = Vec::new();
    for module in tree.modules() {
        if !layers.contains_key(&module) {
            found.push(Violation::NoRow { module });
        }
    }
    let mut graphs: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for (folder, from, to, file, path) in tree.edges() {
        if folder.is_empty()
            && let (Some(&from_layer), Some(&to_layer)) = (layers.get(&from), layers.get(&to))
            && to_layer < from_layer
        {
            found.push(Violation::Upward {
                from: from.clone(),
                from_layer,
                to: to.clone(),
                to_layer,
                file,
                path,
            });
        }
        graphs
            .entry(folder)
            .or_default()
            .entry(from)
            .or_default()
            .insert(to);
    }
    for (folder, graph) in &graphs {
        for members in circles(graph) {
            let folder = if folder.is_empty() {
                "the top-level modules".to_string()
            } else {
                format!("src/{folder}/")
            };
            found.push(Violation::Circle { folder, members });
        }
    }
    found.sort();
    found.dedup();
    found
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn the_source_keeps_the_layers_of_architecture_md() {
    let doc = std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).unwrap();
    let layers = read_layer_table(&doc);
    assert!(layers.len() > 10, "no layer table under `## Layers`");
    let tree = Tree::read(&repo().join("src"));
    let found = check(&tree, &layers);
    let report: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert!(
        found.is_empty(),
        "{} layering violation(s):\n{}",
        found.len(),
        report.join("\n")
    );
    let listed: BTreeSet<&String> = layers.keys().collect();
    let present = tree.modules();
    let stale: Vec<&&String> = listed.iter().filter(|m| !present.contains(**m)).collect();
    assert!(
        stale.is_empty(),
        "rows for modules that do not exist: {stale:?}"
    );
}

/// The check itself, on a small tree with one of each fault planted: it must find them.
#[test]
fn the_check_finds_an_upward_import_a_circle_and_a_module_without_a_row() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    let write = |rel: &str, text: &str| {
        let path = src.join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    write(
        "surface.rs",
        "use crate::engine::Engine;\npub fn go() { crate::leaf::f(); }\n",
    );
    write(
        "engine/mod.rs",
        "mod a;\nmod b;\n#[cfg(test)]\nmod tests;\npub struct Engine;\n",
    );
    // The planted upward import, hidden in a use group.
    write(
        "engine/a.rs",
        "use super::{b::B, super::leaf::f};\nuse crate::{surface::go};\n// crate::nowhere::x in a comment\npub struct A;\n",
    );
    // The file circle: a ↔ b.
    write(
        "engine/b.rs",
        "pub struct B;\nfn f() -> super::a::A { let _ = \"crate::surface\"; super::a::A }\n",
    );
    // A test may import anything.
    write("engine/tests.rs", "use crate::surface::go;\n");
    write(
        "leaf.rs",
        "pub fn f() {}\n#[cfg(test)]\nmod tests { use crate::surface::go; }\n",
    );
    write("stray.rs", "pub fn s() { crate::leaf::f() }\n");
    let doc = "# A\n\n## Layers\n\n| layer | modules | what |\n|---|---|---|\n| 1 | `surface` | top |\n| 2 | `engine` | middle |\n| 3 | `leaf` | bottom |\n\n## Next\n| 9 | `ignored` | x |\n";
    let layers = read_layer_table(doc);
    assert_eq!(layers.len(), 3);
    let found = check(&Tree::read(src), &layers);
    assert_eq!(
        found,
        vec![
            Violation::NoRow {
                module: "stray".into()
            },
            Violation::Upward {
                from: "engine".into(),
                from_layer: 2,
                to: "surface".into(),
                to_layer: 1,
                file: "engine/a.rs".into(),
                path: "crate::surface::go".into(),
            },
            Violation::Circle {
                folder: "src/engine/".into(),
                members: vec!["a".into(), "b".into()],
            },
            Violation::Circle {
                folder: "the top-level modules".into(),
                members: vec!["engine".into(), "surface".into()],
            },
        ],
        "{found:#?}"
    );
}
