//! `patch`: exact-string replacement in one file, answered with a unified diff.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::danger::Classification;
use super::{Tool, ToolContext, ToolError, decode_args, paths};

/// Replaces an exact string in a file.
pub struct PatchTool;

#[derive(Deserialize)]
struct Args {
    path: String,
    old_string: String,
    #[serde(default)]
    new_string: String,
    #[serde(default)]
    replace_all: bool,
}

#[async_trait]
impl Tool for PatchTool {
    fn name(&self) -> &str {
        "patch"
    }

    fn description(&self) -> &str {
        "Replace an exact string in a file and return the unified diff. old_string must match the file exactly (including whitespace) and be unique unless replace_all is true; include surrounding lines to make it unique. An empty new_string deletes the text."
    }

    fn parameters(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "File to change, inside the working directory."},
                "old_string": {"type": "string", "description": "Exact text to replace."},
                "new_string": {"type": "string", "description": "Replacement text (empty deletes)."},
                "replace_all": {"type": "boolean", "description": "Replace every occurrence (default false: old_string must be unique)."}
            },
            "required": ["path", "old_string"]
        })
    }

    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        Some(paths::write_classification(args, ctx))
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!("patch:{}", paths::path_arg(args)))
    }

    fn summary(&self, args: &Value) -> String {
        paths::path_arg(args).to_string()
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"path": paths::path_arg(args)}))
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        let target = paths::resolve_inside(&ctx.cwd, &args.path, "patch")?;
        let bytes = tokio::fs::read(&target)
            .await
            .map_err(|e| ToolError(format!("patch: {}: {e}", args.path)))?;
        if paths::looks_binary(&bytes) {
            return Err(ToolError(format!(
                "patch: {} looks like a binary file",
                args.path
            )));
        }
        let old_text = String::from_utf8(bytes)
            .map_err(|_| ToolError(format!("patch: {} is not valid UTF-8", args.path)))?;
        let new_text = replace(&old_text, &args)?;
        let diff = unified_diff(&args.path, &old_text, &new_text);
        let content = new_text.into_bytes();
        tokio::task::spawn_blocking(move || paths::write_atomic(&target, &content))
            .await
            .map_err(|e| ToolError(format!("patch: {e}")))?
            .map_err(|e| ToolError(format!("patch: {}: {e}", args.path)))?;
        Ok(diff)
    }
}

fn replace(text: &str, args: &Args) -> Result<String, ToolError> {
    if args.old_string.is_empty() {
        return Err(ToolError(
            "patch: old_string is empty; use write_file to create a file".into(),
        ));
    }
    if args.old_string == args.new_string {
        return Err(ToolError(
            "patch: old_string and new_string are identical; nothing to change".into(),
        ));
    }
    let count = text.matches(&args.old_string).count();
    match count {
        0 => Err(ToolError(format!(
            "patch: old_string not found in {}; read the file again and copy the text exactly (whitespace and indentation included)",
            args.path
        ))),
        1 => Ok(text.replacen(&args.old_string, &args.new_string, 1)),
        n if args.replace_all => {
            let _ = n;
            Ok(text.replace(&args.old_string, &args.new_string))
        }
        n => Err(ToolError(format!(
            "patch: old_string occurs {n} times in {}; include more surrounding text to make it unique, or set replace_all",
            args.path
        ))),
    }
}

fn unified_diff(path: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{path}"), &format!("b/{path}"))
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(old: &str, new: &str, all: bool) -> Args {
        Args {
            path: "f.txt".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn unique_replace_and_ambiguity() {
        assert_eq!(
            replace("a b a", &args("b", "c", false)).expect("ok"),
            "a c a"
        );
        let e = replace("a b a", &args("a", "c", false)).expect_err("ambiguous");
        assert!(e.0.contains("occurs 2 times"));
        assert_eq!(
            replace("a b a", &args("a", "c", true)).expect("ok"),
            "c b c"
        );
        assert!(replace("abc", &args("x", "y", false)).is_err());
        assert!(replace("abc", &args("", "y", false)).is_err());
    }

    #[test]
    fn diff_has_headers() {
        let d = unified_diff("f.txt", "one\ntwo\n", "one\n2\n");
        assert!(d.starts_with("--- a/f.txt\n+++ b/f.txt\n"), "{d}");
        assert!(d.contains("-two\n+2\n"), "{d}");
    }
}
