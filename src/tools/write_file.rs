//! `write_file`: create or overwrite a file inside the working directory, atomically.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::danger::{Classification, classify_write_path};
use super::{Tool, ToolContext, ToolError, decode_args, paths};

const MAX_CONTENT_BYTES: usize = 1024 * 1024;

/// Writes a whole file.
pub struct WriteFileTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    content: String,
}

#[async_trait]
impl Tool for WriteFileTool {
    fn name(&self) -> &str {
        "write_file"
    }

    fn description(&self) -> &str {
        "Create or overwrite a file with the given content (at most 1 MiB). Parent directories are created. Only paths inside the working directory can be written. To change part of an existing file, prefer patch."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "path":{"type":"string","description":"File path inside the working directory."},
                "content":{"type":"string","description":"The complete new content of the file."}
              },
              "required":["path","content"]
            }"#,
        )
    }

    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        Some(classify_write_path(paths::path_arg(args), &ctx.cwd))
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!("write_file:{}", paths::path_arg(args)))
    }

    fn summary(&self, args: &Value) -> String {
        let path = paths::path_arg(args);
        let bytes = args
            .get("content")
            .and_then(Value::as_str)
            .map_or(0, str::len);
        format!("{path} ({bytes} bytes)")
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"path": paths::path_arg(args)}))
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        if args.content.len() > MAX_CONTENT_BYTES {
            return Err(ToolError(format!(
                "write_file: content is {} bytes, over the {MAX_CONTENT_BYTES}-byte limit; write it in parts with patch",
                args.content.len()
            )));
        }
        let target = paths::resolve_inside(&ctx.cwd, &args.path, "write_file")?;
        if target.is_dir() {
            return Err(ToolError(format!(
                "write_file: {} is a directory",
                args.path
            )));
        }
        let previous = std::fs::metadata(&target).ok().map(|m| m.len());
        let content = args.content.into_bytes();
        let len = content.len();
        let checkpoint = ctx.checkpoint("write_file");
        super::patch::write_checkpointed(
            "write_file",
            target.clone(),
            &args.path,
            content,
            checkpoint.as_ref(),
            ctx.files.as_ref(),
        )
        .await?;
        ctx.report_checkpoint(checkpoint.as_ref());
        let what = match previous {
            Some(old) => format!("overwrote {old} bytes"),
            None => "new file".to_string(),
        };
        Ok(format!(
            "wrote {len} bytes to {} ({what})",
            paths::display(
                &ctx.cwd.canonicalize().unwrap_or_else(|_| ctx.cwd.clone()),
                &target
            )
        ))
    }
}
