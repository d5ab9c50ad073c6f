//! `glob`: files and directories whose path matches a pattern (`*` within one name, `**`
//! across directories, `?`, `[abc]`, `{a,b}`), respecting `.gitignore`, newest first.

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::danger::{Classification, classify_read_path};
use super::search_files::SKIPPED_DIRS;
use super::{Tool, ToolContext, ToolError, decode_args, paths};

const DEFAULT_LIMIT: usize = 50;
pub(super) const MAX_LIMIT: usize = 1000;
/// Largest answer: matches past it are counted in `more`, so the JSON is never cut.
const MAX_ANSWER_BYTES: usize = 64 * 1024;

/// Finds paths by pattern.
pub struct GlobTool;

#[derive(Deserialize)]
struct Args {
    pattern: String,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

/// One path found.
#[derive(Debug, Serialize, PartialEq)]
struct Found {
    path: String,
    size: u64,
    is_dir: bool,
}

/// What a call answers: the paths, newest first, and how many more matched.
#[derive(Serialize)]
struct Answer {
    matches: Vec<Found>,
    #[serde(skip_serializing_if = "is_zero")]
    more: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

fn root_arg(args: &Value) -> &str {
    args.get("path").and_then(Value::as_str).unwrap_or(".")
}

/// The directory a call really walks: its `path` joined with the pattern's leading literal
/// directories (`../../.ssh/*` or `/home/u/.aws/**` walk there, whatever `path` says).
fn base_arg(args: &Value) -> String {
    let pattern = args.get("pattern").and_then(Value::as_str).unwrap_or("");
    let (prefix, _) = split_literal_prefix(pattern);
    if prefix.as_os_str().is_empty() {
        return root_arg(args).to_string();
    }
    Path::new(root_arg(args))
        .join(prefix)
        .to_string_lossy()
        .into_owned()
}

#[async_trait]
impl Tool for GlobTool {
    fn name(&self) -> &str {
        "glob"
    }

    fn description(&self) -> &str {
        "Find files and directories by path pattern (`*` within a name, `**` across directories, `?`, `{a,b}`), respecting .gitignore. JSON `{matches: [{path, size, is_dir}]}`, newest first."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "pattern":{"type":"string","description":"e.g. \"src/**/*.rs\""},
                "path":{"type":"string","description":"Directory to search (default .)."},
                "limit":{"type":"integer","minimum":1,"maximum":1000,"description":"Default 50."}
              },
              "required":["pattern"]
            }"#,
        )
    }

    /// Classified like `read_file` on the directory it walks (a credential folder is
    /// `secret_read`, however the pattern reaches it).
    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        classify_read_path(&base_arg(args), &ctx.cwd)
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!("glob:{}", root_arg(args)))
    }

    fn summary(&self, args: &Value) -> String {
        let pattern = args.get("pattern").and_then(Value::as_str).unwrap_or("");
        match root_arg(args) {
            "." => pattern.to_string(),
            root => format!("{pattern} in {root}"),
        }
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"path": base_arg(args)}))
    }

    fn output_limit(&self, _args: &Value) -> usize {
        MAX_ANSWER_BYTES
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        let root = paths::resolve(&ctx.cwd, args.path.as_deref().unwrap_or("."));
        if !root.is_dir() {
            return Err(ToolError(format!(
                "glob: {} is not a directory",
                args.path.as_deref().unwrap_or(".")
            )));
        }
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
        let (cwd, cancel) = (ctx.cwd.clone(), ctx.cancel.clone());
        let answer =
            tokio::task::spawn_blocking(move || find(&args.pattern, &root, &cwd, limit, &cancel))
                .await
                .map_err(|e| ToolError(format!("glob: {e}")))??;
        serde_json::to_string(&answer).map_err(|e| ToolError(format!("glob: {e}")))
    }
}

/// The pattern's leading directories without glob characters, and the rest: `src/**/*.rs`
/// walks only `src`. An absolute pattern's literal part replaces the root.
fn split_literal_prefix(pattern: &str) -> (PathBuf, String) {
    let mut prefix = PathBuf::new();
    let parts: Vec<&str> = pattern.split('/').collect();
    let mut rest_from = 0;
    for (i, part) in parts.iter().enumerate() {
        if i + 1 == parts.len() || part.bytes().any(|b| matches!(b, b'*' | b'?' | b'[' | b'{')) {
            break;
        }
        if i == 0 && part.is_empty() {
            prefix.push("/");
        } else {
            prefix.push(part);
        }
        rest_from = i + 1;
    }
    (prefix, parts[rest_from..].join("/"))
}

fn find(
    pattern: &str,
    root: &Path,
    cwd: &Path,
    limit: usize,
    cancel: &CancellationToken,
) -> Result<Answer, ToolError> {
    if pattern.trim().is_empty() {
        return Err(ToolError::new("glob: pattern is empty"));
    }
    let (prefix, rest) = split_literal_prefix(pattern);
    let base = paths::resolve(root, &prefix.to_string_lossy());
    let matcher = globset::GlobBuilder::new(&rest)
        .literal_separator(true)
        .build()
        .map_err(|e| ToolError(format!("glob: invalid pattern {pattern:?}: {e}")))?
        .compile_matcher();
    if !base.is_dir() {
        return Ok(Answer {
            matches: Vec::new(),
            more: 0,
        });
    }
    let hidden_named = rest.starts_with('.') || rest.contains("/.");
    let walker = ignore::WalkBuilder::new(&base)
        .require_git(false)
        .hidden(!hidden_named)
        .filter_entry(|e| {
            !(e.file_type().is_some_and(|t| t.is_dir())
                && SKIPPED_DIRS.contains(&e.file_name().to_string_lossy().as_ref()))
        })
        .build();
    let mut found: Vec<(SystemTime, Found)> = Vec::new();
    for entry in walker {
        if cancel.is_cancelled() {
            return Err(ToolError::new("glob: cancelled"));
        }
        let Ok(entry) = entry else { continue };
        let Ok(relative) = entry.path().strip_prefix(&base) else {
            continue;
        };
        if relative.as_os_str().is_empty() || !matcher.is_match(relative) {
            continue;
        }
        let meta = entry.metadata().ok();
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        found.push((
            meta.as_ref()
                .and_then(|m| m.modified().ok())
                .unwrap_or(SystemTime::UNIX_EPOCH),
            Found {
                path: paths::display(cwd, entry.path()),
                size: if is_dir {
                    0
                } else {
                    meta.map_or(0, |m| m.len())
                },
                is_dir,
            },
        ));
    }
    found.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.path.cmp(&b.1.path)));
    let total = found.len();
    let mut bytes = 64;
    let matches: Vec<Found> = found
        .into_iter()
        .map(|(_, f)| f)
        .take(limit)
        .take_while(|f| {
            bytes += serde_json::to_string(f).map_or(0, |j| j.len() + 1);
            bytes <= MAX_ANSWER_BYTES
        })
        .collect();
    Ok(Answer {
        more: total - matches.len(),
        matches,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree() -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        let p = dir.path();
        for (file, text) in [
            ("src/a.rs", "a"),
            ("src/deep/b.rs", "bb"),
            ("src/c.txt", "c"),
            ("README.md", "r"),
            ("ignored/x.rs", "x"),
            ("node_modules/m/y.rs", "y"),
            (".hidden/z.rs", "z"),
        ] {
            std::fs::create_dir_all(p.join(file).parent().expect("parent")).expect("mkdir");
            std::fs::write(p.join(file), text).expect("w");
        }
        std::fs::write(p.join(".gitignore"), "ignored/\n").expect("w");
        dir
    }

    fn paths_found(pattern: &str, dir: &Path) -> Vec<String> {
        let cancel = CancellationToken::new();
        let mut found: Vec<String> = find(pattern, dir, dir, 100, &cancel)
            .expect("ok")
            .matches
            .into_iter()
            .map(|f| f.path)
            .collect();
        found.sort();
        found
    }

    #[test]
    fn star_stays_in_one_directory_double_star_crosses_them() {
        let dir = tree();
        assert_eq!(paths_found("src/*.rs", dir.path()), ["src/a.rs"]);
        assert_eq!(
            paths_found("**/*.rs", dir.path()),
            ["src/a.rs", "src/deep/b.rs"]
        );
        assert_eq!(
            paths_found("src/{a.rs,c.txt}", dir.path()),
            ["src/a.rs", "src/c.txt"]
        );
        assert_eq!(paths_found("src/?.rs", dir.path()), ["src/a.rs"]);
        assert_eq!(
            paths_found("src/*", dir.path()),
            ["src/a.rs", "src/c.txt", "src/deep"]
        );
        assert_eq!(paths_found(".hidden/*.rs", dir.path()), [".hidden/z.rs"]);
        assert!(paths_found("nowhere/*.rs", dir.path()).is_empty());
    }

    #[test]
    fn sizes_directories_newest_first_and_the_limit() {
        let dir = tree();
        let newer = dir.path().join("src/deep/b.rs");
        let later = SystemTime::now() + std::time::Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&newer)
            .and_then(|f| f.set_modified(later))
            .expect("touch");
        let answer = find(
            "**/*.rs",
            dir.path(),
            dir.path(),
            1,
            &CancellationToken::new(),
        )
        .expect("ok");
        assert_eq!(
            answer.matches,
            [Found {
                path: "src/deep/b.rs".into(),
                size: 2,
                is_dir: false
            }]
        );
        assert_eq!(answer.more, 1);
        let dirs = find(
            "src/deep",
            dir.path(),
            dir.path(),
            5,
            &CancellationToken::new(),
        )
        .expect("ok");
        assert!(dirs.matches[0].is_dir, "{:?}", dirs.matches);
    }

    #[test]
    fn the_directory_walked_is_classified_however_the_pattern_reaches_it() {
        let dir = tree();
        let ctx = ToolContext::in_dir(dir.path());
        let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
        let up = "../".repeat(dir.path().components().count());
        let escaping = format!("{up}{}/.ssh/id_rsa/*", home.trim_start_matches('/'));
        for (pattern, path, walked) in [
            ("/etc/*.conf", "src", "/etc".to_string()),
            ("../x/**", "src", "src/../x".to_string()),
            ("**/*.rs", ".", ".".to_string()),
            (
                escaping.as_str(),
                ".",
                format!("./{up}{}/.ssh/id_rsa", home.trim_start_matches('/')),
            ),
        ] {
            let args = json!({"pattern": pattern, "path": path});
            assert_eq!(
                GlobTool.event_summary(&args),
                Some(json!({"path": walked})),
                "{pattern}"
            );
        }
        // A credential location reached through the pattern is classified as such.
        let class = GlobTool.classify(&json!({"pattern": escaping}), &ctx);
        assert_eq!(
            class.map(|c| c.class),
            Some(crate::tools::danger::DangerClass::SecretRead)
        );
        assert!(
            GlobTool
                .classify(&json!({"pattern": "src/**/*.rs"}), &ctx)
                .is_none()
        );
    }

    #[test]
    fn a_long_answer_stops_at_its_budget_and_stays_json() {
        let dir = tempfile::tempdir().expect("tempdir");
        for i in 0..800 {
            let name = format!("{}{i}.txt", "n".repeat(120));
            std::fs::write(dir.path().join(name), "x").expect("w");
        }
        let answer = find(
            "*.txt",
            dir.path(),
            dir.path(),
            1000,
            &CancellationToken::new(),
        )
        .expect("ok");
        let text = serde_json::to_string(&answer).expect("json");
        assert!(text.len() <= MAX_ANSWER_BYTES, "{}", text.len());
        assert_eq!(answer.matches.len() + answer.more, 800);
        assert!(answer.more > 0);
    }

    #[test]
    fn literal_prefixes_are_walked_directly() {
        assert_eq!(
            split_literal_prefix("src/**/*.rs"),
            (PathBuf::from("src"), "**/*.rs".to_string())
        );
        assert_eq!(
            split_literal_prefix("/etc/*.conf"),
            (PathBuf::from("/etc"), "*.conf".to_string())
        );
        assert_eq!(
            split_literal_prefix("*.md"),
            (PathBuf::new(), "*.md".to_string())
        );
        assert_eq!(
            split_literal_prefix("a/b"),
            (PathBuf::from("a"), "b".to_string())
        );
    }
}
