//! `patch`: exact-string replacement in one file, answered with a unified diff.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::danger::{Classification, classify_write_path};
use super::{Tool, ToolContext, ToolError, decode_args, paths};
use crate::checkpoint::CallCheckpoint;

/// Replaces an exact string in a file.
pub struct PatchTool;

/// One exact-string replacement (the arguments of `patch`, an entry of `batch_patch`).
/// Unknown fields are refused: a `file_path` beside `path` must not show a hook one file
/// while another is written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Edit {
    pub(super) path: String,
    pub(super) old_string: String,
    #[serde(default)]
    pub(super) new_string: String,
    #[serde(default)]
    pub(super) replace_all: bool,
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
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "path":{"type":"string","description":"File to change, inside the working directory."},
                "old_string":{"type":"string","description":"Exact text to replace."},
                "new_string":{"type":"string","description":"Replacement text (empty deletes)."},
                "replace_all":{"type":"boolean","description":"Replace every occurrence (default false: old_string must be unique)."}
              },
              "required":["path","old_string"]
            }"#,
        )
    }

    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        Some(classify_write_path(paths::path_arg(args), &ctx.cwd))
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
        let edit: Edit = decode_args(self.name(), args)?;
        let target = paths::resolve_inside(&ctx.cwd, &edit.path, "patch")?;
        let files = ctx.files.as_ref();
        let old_text = read_text("patch", &target, &edit.path, files).await?;
        let new_text = replace("patch", &old_text, &edit)?;
        let diff = unified_diff(&edit.path, &old_text, &new_text);
        let checkpoint = ctx.checkpoint("patch");
        let checkpoint_ref = checkpoint.as_ref();
        write_text("patch", target, &edit.path, new_text, checkpoint_ref, files).await?;
        ctx.report_checkpoint(checkpoint.as_ref());
        Ok(diff)
    }
}

/// The text of a file to change; binary and non-UTF-8 files are refused.
pub(super) async fn read_text(
    tool: &str,
    target: &std::path::Path,
    shown: &str,
    files: super::Files<'_>,
) -> Result<String, ToolError> {
    if let Some(text) = super::read_file::editor_text(tool, shown, target, files).await? {
        return Ok(text);
    }
    let bytes = tokio::fs::read(target)
        .await
        .map_err(|e| ToolError(format!("{tool}: {shown}: {e}")))?;
    if paths::looks_binary(&bytes) {
        return Err(ToolError(format!(
            "{tool}: {shown} looks like a binary file"
        )));
    }
    String::from_utf8(bytes).map_err(|_| ToolError(format!("{tool}: {shown} is not valid UTF-8")))
}

/// Replaces the file atomically (a crash leaves the old text or the new, never a mix).
pub(super) async fn write_text(
    tool: &str,
    target: std::path::PathBuf,
    shown: &str,
    text: String,
    checkpoint: Option<&CallCheckpoint>,
    files: super::Files<'_>,
) -> Result<(), ToolError> {
    write_checkpointed(tool, target, shown, text.into_bytes(), checkpoint, files).await
}

/// Writes `content` to `target` atomically, after its checkpoint (when the session takes
/// them) has recorded what was there: a file whose checkpoint cannot be taken is not
/// changed. Through the editor when it writes files (the checkpoint is still taken here).
pub(super) async fn write_checkpointed(
    tool: &str,
    target: std::path::PathBuf,
    shown: &str,
    content: Vec<u8>,
    checkpoint: Option<&CallCheckpoint>,
    files: super::Files<'_>,
) -> Result<(), ToolError> {
    // The real file: a link inside the tree is followed (resolve_inside checked where it
    // leads), so the checkpoint records a path a rewind reaches without a link.
    let target = paths::real_path(target);
    let editor = files.filter(|f| f.writes()).cloned();
    let checkpoint = checkpoint.cloned();
    let (target, content) = tokio::task::spawn_blocking(move || {
        if let Some(checkpoint) = &checkpoint {
            checkpoint.capture(&target, &content).map_err(|e| {
                format!("could not take a checkpoint, so the file was not changed: {e}")
            })?;
        }
        if editor.is_none() {
            paths::write_creating_folders(&target, &content).map_err(|e| e.to_string())?;
        }
        Ok((target, content))
    })
    .await
    .map_err(|e| ToolError(format!("{tool}: {e}")))?
    .map_err(|e: String| ToolError(format!("{tool}: {shown}: {e}")))?;
    let Some(editor) = files.filter(|f| f.writes()) else {
        return Ok(());
    };
    let text = String::from_utf8(content)
        .map_err(|_| ToolError(format!("{tool}: {shown}: the new text is not UTF-8")))?;
    editor
        .write(&target, &text)
        .await
        .map_err(|e| ToolError(format!("{tool}: {shown}: the editor did not write it: {e}")))
}

/// `text` with `edit` applied, or why it cannot be (errors prefixed with `tool`).
pub(super) fn replace(tool: &str, text: &str, edit: &Edit) -> Result<String, ToolError> {
    if edit.old_string.is_empty() {
        return Err(ToolError(format!(
            "{tool}: old_string is empty; use write_file to create a file"
        )));
    }
    if edit.old_string == edit.new_string {
        return Err(ToolError(format!(
            "{tool}: old_string and new_string are identical; nothing to change"
        )));
    }
    match text.matches(&edit.old_string).count() {
        0 => Err(ToolError(format!(
            "{tool}: old_string not found in {}; read the file again and copy the text exactly (whitespace and indentation included)",
            edit.path
        ))),
        1 => Ok(text.replacen(&edit.old_string, &edit.new_string, 1)),
        _ if edit.replace_all => Ok(text.replace(&edit.old_string, &edit.new_string)),
        n => Err(ToolError(format!(
            "{tool}: old_string occurs {n} times in {}; include more surrounding text to make it unique, or set replace_all",
            edit.path
        ))),
    }
}

/// The unified diff of a change, with `a/` and `b/` headers: `similar`'s Myers line diff
/// (with its compaction and replace detection, as `TextDiff` runs it) and its hunk headers,
/// called directly so that only this algorithm is in the binary (`TextDiff` links all five:
/// 235 KiB, docs/PERFORMANCE.md).
pub(super) fn unified_diff(path: &str, old: &str, new: &str) -> String {
    use similar::algorithms::{Capture, Compact, Replace, myers};
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let mut hook = Compact::new(Replace::new(Capture::new()), &a, &b);
    // Infallible: the capture hook never fails.
    let _ = myers::diff(&mut hook, &a, 0..a.len(), &b, 0..b.len());
    let ops = hook.into_inner().into_inner().into_grouped_ops(3);
    let mut out = String::new();
    for (n, hunk) in ops.iter().filter(|h| !h.is_empty()).enumerate() {
        if n == 0 {
            out.push_str(&format!("--- a/{path}\n+++ b/{path}\n"));
        }
        out.push_str(&format!(
            "{}\n",
            similar::udiff::UnifiedHunkHeader::new(hunk)
        ));
        for op in hunk {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            let lines: Vec<(char, &str)> = match tag {
                similar::DiffTag::Equal => a[old_range].iter().map(|l| (' ', *l)).collect(),
                similar::DiffTag::Delete => a[old_range].iter().map(|l| ('-', *l)).collect(),
                similar::DiffTag::Insert => b[new_range].iter().map(|l| ('+', *l)).collect(),
                similar::DiffTag::Replace => a[old_range]
                    .iter()
                    .map(|l| ('-', *l))
                    .chain(b[new_range].iter().map(|l| ('+', *l)))
                    .collect(),
            };
            for (sign, line) in lines {
                out.push(sign);
                out.push_str(line);
                if !line.ends_with('\n') {
                    out.push_str("\n\\ No newline at end of file\n");
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_is_textdiffs_unified_diff_byte_for_byte() {
        let long: String = (1..=30).map(|i| format!("line {i}\n")).collect();
        let cases = [
            ("a\nb\nc\n", "a\nB\nc\n"),
            ("a\nb\nc\n", "a\nb\nc\nd\n"),
            ("a\nb\nc\n", "b\nc\n"),
            ("a\nb", "a\nc"),
            ("a\nb\n", "a\nb"),
            ("", "new\n"),
            ("gone\n", ""),
            ("x\r\ny\r\n", "x\r\nz\r\n"),
            ("same\n", "same\n"),
        ];
        let edited = long
            .replace("line 2\n", "line two\n")
            .replace("line 25\n", "");
        for (old, new) in cases
            .iter()
            .copied()
            .chain([(long.as_str(), edited.as_str())])
        {
            let expected = similar::TextDiff::from_lines(old, new)
                .unified_diff()
                .context_radius(3)
                .header("a/f.txt", "b/f.txt")
                .to_string();
            assert_eq!(
                unified_diff("f.txt", old, new),
                expected,
                "{old:?} → {new:?}"
            );
        }
    }

    fn args(old: &str, new: &str, all: bool) -> Edit {
        Edit {
            path: "f.txt".into(),
            old_string: old.into(),
            new_string: new.into(),
            replace_all: all,
        }
    }

    #[test]
    fn unique_replace_and_ambiguity() {
        assert_eq!(
            replace("patch", "a b a", &args("b", "c", false)).expect("ok"),
            "a c a"
        );
        let e = replace("patch", "a b a", &args("a", "c", false)).expect_err("ambiguous");
        assert!(e.0.contains("occurs 2 times"));
        assert_eq!(
            replace("patch", "a b a", &args("a", "c", true)).expect("ok"),
            "c b c"
        );
        assert!(replace("patch", "abc", &args("x", "y", false)).is_err());
        assert!(replace("patch", "abc", &args("", "y", false)).is_err());
    }

    #[test]
    fn diff_has_headers() {
        let d = unified_diff("f.txt", "one\ntwo\n", "one\n2\n");
        assert!(d.starts_with("--- a/f.txt\n+++ b/f.txt\n"), "{d}");
        assert!(d.contains("-two\n+2\n"), "{d}");
    }
}
