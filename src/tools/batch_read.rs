//! `batch_read`: up to ten files in one call, read in parallel, each exactly as `read_file`
//! reads it (the same classification, limits and errors, file by file).

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::Value;

use super::danger::{Classification, classify_read_path};
use super::read_file::read_window;
use super::{MAX_TOOL_OUTPUT_BYTES, Tool, ToolContext, ToolError, decode_args, paths};

/// Most files of one call.
pub const MAX_FILES: usize = 10;

/// Reads several text files at once.
pub struct BatchReadTool;

#[derive(Deserialize)]
struct Args {
    files: Vec<FileArgs>,
}

#[derive(Deserialize)]
struct FileArgs {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

fn paths_of(args: &Value) -> Vec<&str> {
    super::catalog::BATCH_READ.paths(args)
}

/// The heading of one file's part of the result.
fn heading(path: &str) -> String {
    format!("==> {path} <==")
}

#[async_trait]
impl Tool for BatchReadTool {
    fn name(&self) -> &str {
        "batch_read"
    }

    fn description(&self) -> &str {
        "Read up to 10 text files in one call, as read_file reads each (`==> path <==` before each file; an error for one file does not stop the others)."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "files":{"type":"array","maxItems":10,"items":{"type":"object","properties":{"path":{"type":"string"},"offset":{"type":"integer","minimum":1},"limit":{"type":"integer","minimum":1,"maximum":2000}},"required":["path"]}}
              },
              "required":["files"]
            }"#,
        )
    }

    /// The riskiest of its files, as `read_file` would classify each.
    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        paths_of(args)
            .into_iter()
            .filter_map(|p| classify_read_path(p, &ctx.cwd))
            .reduce(Classification::worse)
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!("batch_read:{}", paths_of(args).join(",")))
    }

    fn summary(&self, args: &Value) -> String {
        paths_of(args).join(", ")
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(paths::paths_summary(&paths_of(args)))
    }

    /// Each file's part is cut as a `read_file` result would be, so the whole may hold one
    /// such result per file.
    fn output_limit(&self, args: &Value) -> usize {
        paths::per_file_limit(paths::list_len(args, "files"), MAX_FILES)
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        if args.files.is_empty() {
            return Err(ToolError::new(
                "batch_read: files is empty; name 1 to 10 files",
            ));
        }
        if args.files.len() > MAX_FILES {
            return Err(ToolError(format!(
                "batch_read: {} files asked, at most {MAX_FILES} per call; split them over several calls",
                args.files.len()
            )));
        }
        let reads = args.files.iter().map(|f| {
            let files = ctx.files.as_ref();
            read_window("read_file", &ctx.cwd, &f.path, f.offset, f.limit, files)
        });
        let results = futures_util::future::join_all(reads).await;
        let failed = results.iter().filter(|r| r.is_err()).count();
        let parts: Vec<String> = args
            .files
            .iter()
            .zip(results)
            .map(|(f, result)| {
                let body = match result {
                    Ok(text) => text,
                    Err(e) => format!("error: {e}"),
                };
                let body = ctx.redactor.redact(&body);
                let cut = crate::text::head_and_tail(&body, MAX_TOOL_OUTPUT_BYTES);
                format!("{}\n{cut}", heading(&f.path))
            })
            .collect();
        let out = parts.join("\n\n");
        if failed == args.files.len() {
            return Err(ToolError(format!(
                "batch_read: no file could be read\n{out}"
            )));
        }
        Ok(out)
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
    async fn every_file_as_read_file_reads_it_and_one_error_does_not_stop_the_rest() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "one\ntwo\n").expect("w");
        std::fs::write(dir.path().join("b.txt"), "x\ny\nz\n").expect("w");
        let args = r#"{"files":[{"path":"a.txt"},{"path":"missing.txt"},{"path":"b.txt","offset":2,"limit":1}]}"#;
        let out = BatchReadTool
            .call(args, &ctx(dir.path()))
            .await
            .expect("ok");
        let single = super::super::ReadFileTool
            .call(r#"{"path":"b.txt","offset":2,"limit":1}"#, &ctx(dir.path()))
            .await
            .expect("ok");
        assert!(out.starts_with("==> a.txt <==\n1|one\n2|two\n\n==> missing.txt <==\nerror: read_file: missing.txt: "), "{out}");
        assert!(out.ends_with(&format!("==> b.txt <==\n{single}")), "{out}");
    }

    #[tokio::test]
    async fn too_many_files_none_and_all_failing_are_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let eleven: Vec<Value> = (0..11).map(|i| json!({"path": format!("{i}")})).collect();
        let e = BatchReadTool
            .call(&json!({"files": eleven}).to_string(), &ctx(dir.path()))
            .await
            .expect_err("too many");
        assert!(e.0.contains("at most 10 per call"), "{e}");
        let e = BatchReadTool
            .call(r#"{"files":[]}"#, &ctx(dir.path()))
            .await
            .expect_err("none");
        assert!(e.0.contains("files is empty"), "{e}");
        let e = BatchReadTool
            .call(r#"{"files":[{"path":"nope"}]}"#, &ctx(dir.path()))
            .await
            .expect_err("none readable");
        assert!(e.0.starts_with("batch_read: no file could be read"), "{e}");
    }

    #[test]
    fn a_secret_among_the_files_classifies_the_call() {
        let dir = tempfile::tempdir().expect("tempdir");
        let args = json!({"files": [{"path": "a.txt"}, {"path": "~/.ssh/id_rsa"}]});
        let class = BatchReadTool
            .classify(&args, &ctx(dir.path()))
            .expect("classified");
        assert_eq!(class.class, crate::tools::danger::DangerClass::SecretRead);
        let plain = json!({"files": [{"path": "a.txt"}]});
        assert!(BatchReadTool.classify(&plain, &ctx(dir.path())).is_none());
    }
}
