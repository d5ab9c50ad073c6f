//! Path handling shared by the file tools: resolving against the working directory and keeping
//! writes inside it.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::ToolError;

/// The `path` argument of a call (empty when missing).
pub fn path_arg(args: &Value) -> &str {
    args.get("path").and_then(Value::as_str).unwrap_or("")
}

/// How many entries the array `list` holds (0 when it is not an array).
pub fn list_len(args: &Value, list: &str) -> usize {
    args.get(list).and_then(Value::as_array).map_or(0, Vec::len)
}

/// Most paths an event summary of a batch tool names.
const SUMMARY_PATHS: usize = 16;

/// A batch tool's event summary: up to 16 of its paths, never content.
pub fn paths_summary(paths: &[&str]) -> Value {
    serde_json::json!({"path": paths.iter().take(SUMMARY_PATHS).collect::<Vec<_>>()})
}

/// A batch tool's output limit: one single-file result (and its heading) per file.
pub fn per_file_limit(files: usize, most: usize) -> usize {
    files.clamp(1, most) * (super::MAX_TOOL_OUTPUT_BYTES + 512)
}

/// `path` resolved against `cwd` and normalised lexically (`.` and `..` removed).
pub fn resolve(cwd: &Path, path: &str) -> PathBuf {
    let joined = if Path::new(path).is_absolute() {
        PathBuf::from(path)
    } else {
        cwd.join(path)
    };
    normalize(&joined)
}

fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// Resolves a write target and refuses anything outside `cwd`, including through symlinks.
pub fn resolve_inside(cwd: &Path, path: &str, tool: &str) -> Result<PathBuf, ToolError> {
    if path.trim().is_empty() {
        return Err(ToolError(format!("{tool}: path is empty")));
    }
    let root = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let target = resolve(&root, path);
    let outside = || {
        ToolError(format!(
            "{tool}: {path} is outside the working directory {}; only files under it can be changed",
            root.display()
        ))
    };
    if !target.starts_with(&root) {
        return Err(outside());
    }
    // The nearest existing ancestor must also resolve inside (a symlinked directory could
    // otherwise lead out of the tree).
    let mut probe = target.as_path();
    loop {
        if let Ok(real) = probe.canonicalize() {
            if !real.starts_with(&root) {
                return Err(outside());
            }
            break;
        }
        match probe.parent() {
            Some(parent) => probe = parent,
            None => break,
        }
    }
    Ok(target)
}

/// Where a file really is: symlinks followed (the file's own, or its nearest existing
/// folder's when it does not exist yet, the rest appended), so two spellings of one file are
/// one file, a link to a file stays a link, and a checkpoint records the path a rewind can
/// walk without meeting a link.
pub fn real_path(target: PathBuf) -> PathBuf {
    if let Ok(real) = target.canonicalize() {
        return real;
    }
    let mut rest = Vec::new();
    let mut probe = target.as_path();
    while let (Some(parent), Some(name)) = (probe.parent(), probe.file_name()) {
        rest.push(name.to_os_string());
        if let Ok(mut real) = parent.canonicalize() {
            real.extend(rest.iter().rev());
            return real;
        }
        probe = parent;
    }
    target
}

/// `path` shown relative to `cwd` when it is inside it.
pub fn display(cwd: &Path, path: &Path) -> String {
    path.strip_prefix(cwd)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| path.display().to_string())
}

/// True when the first 8 KiB contain a NUL byte.
pub fn looks_binary(bytes: &[u8]) -> bool {
    bytes.iter().take(8192).any(|&b| b == 0)
}

/// Writes `content` to `path` atomically (`crate::util::files::write_atomically`: the file
/// and then its folder synced), creating missing parent folders and keeping an existing
/// file's permissions (0644 for a new one).
pub fn write_creating_folders(path: &Path, content: &[u8]) -> std::io::Result<()> {
    if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    crate::util::files::write_atomically(
        path,
        content,
        crate::util::files::Permissions::KeepOrShared,
    )
}
