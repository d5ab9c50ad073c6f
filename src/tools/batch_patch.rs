//! `batch_patch`: up to ten exact-string replacements, applied in order. The edits of one
//! file apply together or not at all; each changed file answers with its unified diff.
//! Asked about once: the call's risk is the riskiest of its files.

use std::path::PathBuf;

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::danger::{Classification, classify_write_path};
use super::patch::{Edit, read_text, replace, unified_diff, write_text};
use super::{MAX_TOOL_OUTPUT_BYTES, Tool, ToolContext, ToolError, decode_args, paths};
use crate::checkpoint::CallCheckpoint;

/// Most edits of one call.
pub const MAX_PATCHES: usize = 10;

/// Applies several edits, file by file.
pub struct BatchPatchTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    patches: Vec<Edit>,
}

/// The edits of one file, in call order.
struct FileEdits<'a> {
    /// The path as first given.
    shown: &'a str,
    target: PathBuf,
    edits: Vec<(usize, &'a Edit)>,
}

/// How one file fared.
enum Outcome {
    Changed(String),
    Unchanged(String),
}

fn paths_of(args: &Value) -> Vec<&str> {
    super::catalog::BATCH_PATCH.paths(args)
}

#[async_trait]
impl Tool for BatchPatchTool {
    fn name(&self) -> &str {
        "batch_patch"
    }

    fn description(&self) -> &str {
        "Apply up to 10 patch edits in order. A file changes only if all its edits apply; returns each file's diff or why it was left unchanged."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "patches":{"type":"array","maxItems":10,"items":{"type":"object","properties":{"path":{"type":"string"},"old_string":{"type":"string"},"new_string":{"type":"string"},"replace_all":{"type":"boolean"}},"required":["path","old_string"]}}
              },
              "required":["patches"]
            }"#,
        )
    }

    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        paths_of(args)
            .into_iter()
            .map(|p| classify_write_path(p, &ctx.cwd))
            .reduce(Classification::worse)
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!("batch_patch:{}", paths_of(args).join(",")))
    }

    fn summary(&self, args: &Value) -> String {
        paths_of(args).join(", ")
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(paths::paths_summary(&paths_of(args)))
    }

    fn output_limit(&self, args: &Value) -> usize {
        paths::per_file_limit(paths::list_len(args, "patches"), MAX_PATCHES)
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        if args.patches.is_empty() {
            return Err(ToolError::new(
                "batch_patch: patches is empty; give 1 to 10 edits",
            ));
        }
        if args.patches.len() > MAX_PATCHES {
            return Err(ToolError(format!(
                "batch_patch: {} edits given, at most {MAX_PATCHES} per call; split them over several calls",
                args.patches.len()
            )));
        }
        let mut parts = Vec::new();
        let mut unchanged = 0;
        let files = group_by_file(&args.patches, ctx);
        let total = files.len();
        let checkpoint = ctx.checkpoint("batch_patch");
        for file in files {
            let (shown, outcome) = match file {
                Ok(file) => {
                    let applied = apply(&file, checkpoint.as_ref(), ctx.files.as_ref()).await;
                    (file.shown, applied)
                }
                Err((shown, e)) => (shown, Outcome::Unchanged(e.0)),
            };
            let body = match outcome {
                Outcome::Changed(diff) => diff,
                Outcome::Unchanged(why) => {
                    unchanged += 1;
                    format!("not changed: {why}")
                }
            };
            let body = ctx.redactor.redact(&body);
            let body = crate::text::head_and_tail(&body, MAX_TOOL_OUTPUT_BYTES);
            parts.push(format!("==> {shown} <==\n{body}"));
        }
        ctx.report_checkpoint(checkpoint.as_ref());
        let report = parts.join("\n");
        if unchanged > 0 {
            return Err(ToolError(format!(
                "batch_patch: {unchanged} of {total} files not changed (the others were, as shown)\n{report}"
            )));
        }
        Ok(report)
    }
}

/// The edits grouped by the file they change (by real path: `./a`, `a`, `link-to-a` and
/// `dir-link/a` are one file), in the order files first appear; a path that may not be
/// changed is its own error.
fn group_by_file<'a>(
    patches: &'a [Edit],
    ctx: &ToolContext,
) -> Vec<Result<FileEdits<'a>, (&'a str, ToolError)>> {
    let mut files: Vec<Result<FileEdits<'a>, (&'a str, ToolError)>> = Vec::new();
    for (i, edit) in patches.iter().enumerate() {
        let target = match paths::resolve_inside(&ctx.cwd, &edit.path, "batch_patch") {
            Ok(target) => paths::real_path(target),
            Err(e) => {
                if !files
                    .iter()
                    .any(|f| matches!(f, Err((p, _)) if *p == edit.path))
                {
                    files.push(Err((&edit.path, e)));
                }
                continue;
            }
        };
        let same = files
            .iter_mut()
            .filter_map(|f| f.as_mut().ok())
            .find(|f| f.target == target);
        match same {
            Some(file) => file.edits.push((i + 1, edit)),
            None => files.push(Ok(FileEdits {
                shown: &edit.path,
                target,
                edits: vec![(i + 1, edit)],
            })),
        }
    }
    files
}

/// Applies every edit of one file in memory, then writes the file once: the first edit that
/// fails leaves it as it was.
async fn apply(
    file: &FileEdits<'_>,
    checkpoint: Option<&CallCheckpoint>,
    files: super::Files<'_>,
) -> Outcome {
    let old = match read_text("batch_patch", &file.target, file.shown, files).await {
        Ok(text) => text,
        Err(e) => return Outcome::Unchanged(e.0),
    };
    let mut text = old.clone();
    for (number, edit) in &file.edits {
        match replace("batch_patch", &text, edit) {
            Ok(next) => text = next,
            Err(e) => return Outcome::Unchanged(format!("edit {number}: {e}")),
        }
    }
    let diff = unified_diff(file.shown, &old, &text);
    match write_text(
        "batch_patch",
        file.target.clone(),
        file.shown,
        text,
        checkpoint,
        files,
    )
    .await
    {
        Ok(()) => Outcome::Changed(diff),
        Err(e) => Outcome::Unchanged(e.0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ctx(dir: &std::path::Path) -> ToolContext {
        ToolContext::in_dir(dir)
    }

    #[tokio::test]
    async fn edits_of_one_file_apply_together_and_a_failing_one_leaves_its_file_untouched() {
        let dir = tempfile::tempdir().expect("tempdir");
        let (a, b) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
        std::fs::write(&a, "one\ntwo\nthree\n").expect("w");
        std::fs::write(&b, "alpha\nbeta\n").expect("w");
        let args = json!({"patches": [
            {"path": "a.txt", "old_string": "one", "new_string": "1"},
            {"path": "b.txt", "old_string": "alpha", "new_string": "A"},
            {"path": "./a.txt", "old_string": "three", "new_string": "3"},
            {"path": "b.txt", "old_string": "gamma", "new_string": "G"}
        ]});
        let e = BatchPatchTool
            .call(&args.to_string(), &ctx(dir.path()))
            .await
            .expect_err("b.txt fails");
        assert_eq!(std::fs::read_to_string(&a).expect("r"), "1\ntwo\n3\n");
        assert_eq!(
            std::fs::read_to_string(&b).expect("r"),
            "alpha\nbeta\n",
            "untouched"
        );
        assert!(
            e.0.starts_with("batch_patch: 1 of 2 files not changed"),
            "{e}"
        );
        assert!(
            e.0.contains("==> a.txt <==\n--- a/a.txt\n+++ b/a.txt\n"),
            "{e}"
        );
        assert!(
            e.0.contains("-one\n+1\n") && e.0.contains("-three\n+3\n"),
            "{e}"
        );
        assert!(
            e.0.contains(
                "==> b.txt <==\nnot changed: edit 4: batch_patch: old_string not found in b.txt"
            ),
            "{e}"
        );
    }

    #[tokio::test]
    async fn later_edits_see_earlier_ones_and_outside_paths_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "x\n").expect("w");
        let args = json!({"patches": [
            {"path": "a.txt", "old_string": "x", "new_string": "y"},
            {"path": "a.txt", "old_string": "y", "new_string": "z"}
        ]});
        let out = BatchPatchTool
            .call(&args.to_string(), &ctx(dir.path()))
            .await
            .expect("ok");
        assert!(out.contains("-x\n+z\n"), "{out}");
        let outside =
            json!({"patches": [{"path": "/etc/hostname", "old_string": "a", "new_string": "b"}]});
        let e = BatchPatchTool
            .call(&outside.to_string(), &ctx(dir.path()))
            .await
            .expect_err("outside");
        assert!(e.0.contains("is outside the working directory"), "{e}");
    }

    #[tokio::test]
    async fn two_spellings_of_one_file_through_symlinks_are_one_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("d")).expect("mkdir");
        std::fs::write(dir.path().join("d/a.txt"), "one\ntwo\n").expect("w");
        std::os::unix::fs::symlink("d", dir.path().join("dl")).expect("dir link");
        std::os::unix::fs::symlink("d/a.txt", dir.path().join("l")).expect("file link");
        let args = json!({"patches": [
            {"path": "d/a.txt", "old_string": "one", "new_string": "1"},
            {"path": "dl/a.txt", "old_string": "two", "new_string": "2"},
            {"path": "l", "old_string": "missing", "new_string": "x"}
        ]});
        let e = BatchPatchTool
            .call(&args.to_string(), &ctx(dir.path()))
            .await
            .expect_err("the third edit fails");
        assert!(
            e.0.starts_with("batch_patch: 1 of 1 files not changed"),
            "{e}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("d/a.txt")).expect("r"),
            "one\ntwo\n",
            "none of the three edits of the one file applied"
        );
        let fixed = json!({"patches": [
            {"path": "d/a.txt", "old_string": "one", "new_string": "1"},
            {"path": "l", "old_string": "two", "new_string": "2"}
        ]});
        BatchPatchTool
            .call(&fixed.to_string(), &ctx(dir.path()))
            .await
            .expect("applies");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("d/a.txt")).expect("r"),
            "1\n2\n"
        );
        assert!(
            std::fs::symlink_metadata(dir.path().join("l"))
                .expect("meta")
                .file_type()
                .is_symlink(),
            "the link is still a link"
        );
    }

    #[test]
    fn the_riskiest_file_classifies_the_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = json!({"patches": [
            {"path": "a.txt", "old_string": "x"},
            {"path": "/etc/passwd", "old_string": "x"}
        ]});
        let class = BatchPatchTool
            .classify(&args, &ctx(dir.path()))
            .expect("classified");
        assert_eq!(class.class, crate::tools::danger::DangerClass::SystemWrite);
        assert_eq!(BatchPatchTool.summary(&args), "a.txt, /etc/passwd");
    }
}
