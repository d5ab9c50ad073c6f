//! `search_files`: search file contents (regex) or file names (glob), respecting `.gitignore`.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::danger::{Classification, classify_read_path, is_secret_file};
use super::{Tool, ToolContext, ToolError, decode_args, paths};

const DEFAULT_LIMIT: usize = 50;
pub(super) const MAX_LIMIT: usize = 500;
const MAX_SEARCHED_FILE_BYTES: u64 = 10 * 1024 * 1024;
const MAX_MATCH_LINE_CHARS: usize = 300;
/// Directories never searched (build output and dependency trees), even without a .gitignore.
pub(super) const SKIPPED_DIRS: &[&str] = &[
    "node_modules",
    "vendor",
    "__pycache__",
    "target",
    "dist",
    "build",
    ".next",
    ".venv",
    ".git",
];

/// Searches contents or names of files.
pub struct SearchFilesTool;

#[derive(Deserialize, Clone)]
struct Args {
    pattern: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    file_glob: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Content,
    Files,
}

#[async_trait]
impl Tool for SearchFilesTool {
    fn name(&self) -> &str {
        "search_files"
    }

    fn description(&self) -> &str {
        "Search the working tree, respecting .gitignore. target \"content\" (default): regex search of file contents, answering `path:line:text`. target \"files\": find files whose name matches a glob (e.g. \"*.rs\") or contains the pattern. Results come newest-modified first."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "pattern":{"type":"string","description":"Regex for content search; glob or substring for file names."},
                "target":{"type":"string","enum":["content","files"],"description":"What to search (default content)."},
                "path":{"type":"string","description":"Directory or file to search (default the working directory)."},
                "file_glob":{"type":"string","description":"Only search files whose name matches this glob, e.g. \"*.py\"."},
                "limit":{"type":"integer","minimum":1,"maximum":500,"description":"Most results (default 50, max 500)."}
              },
              "required":["pattern"]
            }"#,
        )
    }

    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        classify_read_path(root_arg(args), &ctx.cwd)
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!(
            "search_files:{}",
            args.get("path").and_then(Value::as_str).unwrap_or(".")
        ))
    }

    fn summary(&self, args: &Value) -> String {
        let pattern = args.get("pattern").and_then(Value::as_str).unwrap_or("");
        let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
        format!("{pattern:?} in {path}")
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"path": root_arg(args)}))
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        let target = match args.target.as_deref().unwrap_or("content") {
            "content" => Target::Content,
            "files" => Target::Files,
            other => {
                return Err(ToolError(format!(
                    "search_files: unknown target {other:?} (want \"content\" or \"files\")"
                )));
            }
        };
        let root = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
        if !root.exists() {
            return Err(ToolError(format!(
                "search_files: {} does not exist",
                args.path.as_deref().unwrap_or(".")
            )));
        }
        let cwd = ctx.cwd.clone();
        let cancel = ctx.cancel.clone();
        tokio::task::spawn_blocking(move || search(&args, target, &root, &cwd, &cancel))
            .await
            .map_err(|e| ToolError(format!("search_files: {e}")))?
    }
}

fn search(
    args: &Args,
    target: Target,
    root: &Path,
    cwd: &Path,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<String, ToolError> {
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    let file_glob = match &args.file_glob {
        Some(g) if !g.is_empty() => Some(compile_glob(g)?),
        _ => None,
    };
    let mut files = walk(root, file_glob.as_ref(), cancel)?;
    let lines = match target {
        Target::Files => match_names(&files, &args.pattern, cwd)?,
        Target::Content => {
            let searched = files.len();
            files.retain(|file| file.as_path() == root || is_secret_file(file, cwd).is_none());
            let skipped = searched - files.len();
            let lines = match_contents(&files, &args.pattern, cwd, limit + 1, cancel)?;
            if skipped > 0 {
                return Ok(format_results(lines, limit, target) + &skipped_note(skipped));
            }
            lines
        }
    };
    Ok(format_results(lines, limit, target))
}

/// Why some files were not searched: their contents would go to the model provider.
fn skipped_note(skipped: usize) -> String {
    let files = if skipped == 1 { "file" } else { "files" };
    format!(
        "\n[{skipped} {files} not searched: credential locations (keys, .env files outside the working directory, …); read one with read_file to be asked]"
    )
}

/// The directory or file a call searches.
fn root_arg(args: &Value) -> &str {
    args.get("path").and_then(Value::as_str).unwrap_or(".")
}

fn compile_glob(glob: &str) -> Result<globset::GlobMatcher, ToolError> {
    globset::Glob::new(glob)
        .map(|g| g.compile_matcher())
        .map_err(|e| ToolError(format!("search_files: invalid glob {glob:?}: {e}")))
}

/// Every searchable file under `root`, newest-modified first.
fn walk(
    root: &Path,
    file_glob: Option<&globset::GlobMatcher>,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<PathBuf>, ToolError> {
    let mut found: Vec<(SystemTime, PathBuf)> = Vec::new();
    let walker = ignore::WalkBuilder::new(root)
        .require_git(false)
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && SKIPPED_DIRS.contains(&e.file_name().to_string_lossy().as_ref()))
        })
        .build();
    for entry in walker {
        if cancel.is_cancelled() {
            return Err(ToolError("search_files: cancelled".into()));
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|t| t.is_file()) {
            continue;
        }
        if let Some(g) = file_glob
            && !g.is_match(entry.file_name())
            && !g.is_match(entry.path())
        {
            continue;
        }
        let modified = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .unwrap_or(SystemTime::UNIX_EPOCH);
        found.push((modified, entry.into_path()));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Ok(found.into_iter().map(|(_, p)| p).collect())
}

fn match_names(files: &[PathBuf], pattern: &str, cwd: &Path) -> Result<Vec<String>, ToolError> {
    let is_glob = pattern.contains(['*', '?', '[', '{']);
    let glob = if is_glob {
        Some(compile_glob(pattern)?)
    } else {
        None
    };
    let needle = pattern.to_lowercase();
    Ok(files
        .iter()
        .filter(|p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_default();
            match &glob {
                Some(g) => g.is_match(&name) || g.is_match(p.strip_prefix(cwd).unwrap_or(p)),
                None => name.to_lowercase().contains(&needle),
            }
        })
        .map(|p| paths::display(cwd, p))
        .collect())
}

fn match_contents(
    files: &[PathBuf],
    pattern: &str,
    cwd: &Path,
    cap: usize,
    cancel: &tokio_util::sync::CancellationToken,
) -> Result<Vec<String>, ToolError> {
    let re = regex::Regex::new(pattern).map_err(|e| {
        ToolError(format!(
            "search_files: invalid regex {pattern:?}: {e} (escape special characters like ( [ . * with a backslash)"
        ))
    })?;
    let mut out = Vec::new();
    for path in files {
        if cancel.is_cancelled() {
            return Err(ToolError("search_files: cancelled".into()));
        }
        if std::fs::metadata(path).is_ok_and(|m| m.len() > MAX_SEARCHED_FILE_BYTES) {
            continue;
        }
        let Ok(bytes) = std::fs::read(path) else {
            continue;
        };
        if paths::looks_binary(&bytes) {
            continue;
        }
        let text = String::from_utf8_lossy(&bytes);
        let shown = paths::display(cwd, path);
        for (i, line) in text.lines().enumerate() {
            if re.is_match(line) {
                out.push(format!(
                    "{shown}:{}:{}",
                    i + 1,
                    crate::text::truncate(line.trim_end(), MAX_MATCH_LINE_CHARS)
                ));
                if out.len() >= cap {
                    return Ok(out);
                }
            }
        }
    }
    Ok(out)
}

fn format_results(mut lines: Vec<String>, limit: usize, target: Target) -> String {
    let what = if target == Target::Files {
        "files"
    } else {
        "matches"
    };
    if lines.is_empty() {
        return format!("no {what} found");
    }
    let more = lines.len() > limit;
    lines.truncate(limit);
    let mut out = lines.join("\n");
    if more {
        out.push_str(&format!(
            "\n[showing the first {limit} {what}; narrow the pattern or raise limit]"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn setup() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        std::fs::write(p.join(".gitignore"), "ignored.txt\n").expect("w");
        std::fs::write(p.join("ignored.txt"), "needle\n").expect("w");
        std::fs::write(p.join("a.rs"), "fn main() {\n    needle();\n}\n").expect("w");
        std::fs::create_dir_all(p.join("node_modules/x")).expect("mkdir");
        std::fs::write(p.join("node_modules/x/b.rs"), "needle\n").expect("w");
        std::fs::write(p.join("bin.dat"), b"needle\0\x01").expect("w");
        dir
    }

    /// The arguments of a search for `pattern`, everything else left to the defaults.
    fn searching(pattern: &str) -> Args {
        Args {
            pattern: pattern.into(),
            target: None,
            path: None,
            file_glob: None,
            limit: None,
        }
    }

    #[test]
    fn content_search_respects_gitignore_and_skips() {
        let dir = setup();
        let args = searching("needle");
        let cancel = tokio_util::sync::CancellationToken::new();
        let out = search(&args, Target::Content, dir.path(), dir.path(), &cancel).expect("ok");
        assert_eq!(out, "a.rs:2:    needle();");
    }

    #[test]
    fn content_search_skips_credential_files_and_says_so() {
        let dir = setup();
        std::fs::write(dir.path().join("server.pem"), "needle in a key\n").expect("w");
        let args = searching("needle");
        let cancel = tokio_util::sync::CancellationToken::new();
        let out = search(&args, Target::Content, dir.path(), dir.path(), &cancel).expect("ok");
        assert!(
            out.starts_with("a.rs:2:    needle();\n[1 file not searched: credential locations"),
            "{out}"
        );
        assert!(!out.contains("in a key"), "{out}");
        // Named as the root, the file is searched: the gate asked about it first.
        let root = dir.path().join("server.pem");
        let out = search(&args, Target::Content, &root, dir.path(), &cancel).expect("ok");
        assert!(out.contains("needle in a key"), "{out}");
    }

    #[test]
    fn file_search_by_glob_and_substring() {
        let dir = setup();
        let cancel = tokio_util::sync::CancellationToken::new();
        let mut args = searching("*.rs");
        let out = search(&args, Target::Files, dir.path(), dir.path(), &cancel).expect("ok");
        assert_eq!(out, "a.rs");
        args.pattern = "BIN".into();
        let out = search(&args, Target::Files, dir.path(), dir.path(), &cancel).expect("ok");
        assert_eq!(out, "bin.dat");
    }

    #[test]
    fn bad_regex_is_explained() {
        let dir = setup();
        let cancel = tokio_util::sync::CancellationToken::new();
        let args = searching("(");
        let e = search(&args, Target::Content, dir.path(), dir.path(), &cancel).expect_err("bad");
        assert!(e.0.contains("invalid regex"));
    }

    #[test]
    fn limit_adds_a_footer() {
        let lines: Vec<String> = (0..5).map(|i| i.to_string()).collect();
        assert_eq!(
            format_results(lines, 2, Target::Content),
            "0\n1\n[showing the first 2 matches; narrow the pattern or raise limit]"
        );
    }
}
