//! `read_file`: numbered lines of a text file, a window at a time.

use async_trait::async_trait;
use serde::Deserialize;
use serde_json::{Value, json};

use super::danger::{Classification, classify_read_path};
use super::{Tool, ToolContext, ToolError, decode_args, paths};

pub(super) const DEFAULT_LIMIT: usize = 500;
pub(super) const MAX_LIMIT: usize = 2000;
const MAX_FILE_BYTES: u64 = 50 * 1024 * 1024;
const MAX_LINE_CHARS: usize = 2000;

/// Reads a text file as numbered lines.
pub struct ReadFileTool;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    path: String,
    #[serde(default)]
    offset: Option<usize>,
    #[serde(default)]
    limit: Option<usize>,
}

#[async_trait]
impl Tool for ReadFileTool {
    fn name(&self) -> &str {
        super::catalog::READ_FILE.name
    }

    fn description(&self) -> &str {
        "Read a text file. Returns numbered lines (`<n>|<text>`), at most `limit` lines starting at line `offset` (1-based). Use search_files to find files; directories and binary files are refused."
    }

    fn parameters(&self) -> Value {
        crate::tools::schema(
            r#"{
              "type":"object",
              "properties":{
                "path":{"type":"string","description":"File path, relative to the working directory or absolute."},
                "offset":{"type":"integer","minimum":1,"description":"First line to return (1-based, default 1)."},
                "limit":{"type":"integer","minimum":1,"maximum":2000,"description":"Most lines to return (default 500, max 2000)."}
              },
              "required":["path"]
            }"#,
        )
    }

    fn classify(&self, args: &Value, ctx: &ToolContext) -> Option<Classification> {
        classify_read_path(paths::path_arg(args), &ctx.cwd)
    }

    fn untrusted_source(&self, args: &Value) -> Option<String> {
        Some(format!("read_file:{}", paths::path_arg(args)))
    }

    fn summary(&self, args: &Value) -> String {
        paths::path_arg(args).to_string()
    }

    fn event_summary(&self, args: &Value) -> Option<Value> {
        Some(json!({"path": paths::path_arg(args)}))
    }

    async fn call(&self, args: &str, ctx: &ToolContext) -> Result<String, ToolError> {
        let args: Args = decode_args(self.name(), args)?;
        let files = ctx.files.as_ref();
        read_window(
            self.name(),
            &ctx.cwd,
            &args.path,
            args.offset,
            args.limit,
            files,
        )
        .await
    }
}

/// What `read_file` answers for `path` (`offset`, `limit` as the model gave them), its errors
/// prefixed with `tool` (`batch_read` reads each of its files through here).
pub(super) async fn read_window(
    tool: &str,
    cwd: &std::path::Path,
    shown: &str,
    offset: Option<usize>,
    limit: Option<usize>,
    files: super::Files<'_>,
) -> Result<String, ToolError> {
    let path = paths::resolve(cwd, shown);
    if let Some(text) = editor_text(tool, shown, &path, files).await? {
        return window(tool, &text, shown, offset, limit);
    }
    // A small regular file is read where the call runs; anything else in one hand-off to a
    // blocking thread (docs/PERFORMANCE.md, "The loop's cost").
    let read = match read_small_file(&path) {
        Some(read) => read,
        None => tokio::task::spawn_blocking(move || read_text_file(&path))
            .await
            .map_err(|e| ToolError(format!("{tool}: {shown}: {e}")))?,
    };
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(Unreadable::Io(e)) => return Err(ToolError(format!("{tool}: {shown}: {e}"))),
        Err(Unreadable::Directory) => {
            return Err(ToolError(format!(
                "{tool}: {shown} is a directory; use glob or search_files with target \"files\" to list it"
            )));
        }
        Err(Unreadable::TooLarge(len)) => {
            return Err(ToolError(format!(
                "{tool}: {shown} is {len} bytes, over the {MAX_FILE_BYTES}-byte limit; use shell (head, tail, grep) to look inside"
            )));
        }
        Err(Unreadable::Binary) => {
            return Err(ToolError(format!(
                "{tool}: {shown} looks like a binary file; it only reads text"
            )));
        }
    };
    window(tool, &String::from_utf8_lossy(&bytes), shown, offset, limit)
}

/// The lines of `text` the call asked for, numbered.
fn window(
    tool: &str,
    text: &str,
    shown: &str,
    offset: Option<usize>,
    limit: Option<usize>,
) -> Result<String, ToolError> {
    let offset = offset.unwrap_or(1).max(1);
    let limit = limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIMIT);
    number_lines(text, offset, limit, shown)
        .map_err(|e| ToolError(e.0.replacen("read_file:", &format!("{tool}:"), 1)))
}

/// The editor's text of `path`, when the editor reads files (a directory is never its).
pub(super) async fn editor_text(
    tool: &str,
    shown: &str,
    path: &std::path::Path,
    files: super::Files<'_>,
) -> Result<Option<String>, ToolError> {
    let Some(files) = files.filter(|f| f.reads()) else {
        return Ok(None);
    };
    if path.is_dir() {
        return Ok(None);
    }
    match files.read(path).await {
        Ok(text) if text.len() as u64 > MAX_FILE_BYTES => Err(ToolError(format!(
            "{tool}: {shown} is {} bytes in the editor, over the {MAX_FILE_BYTES}-byte limit",
            text.len()
        ))),
        Ok(text) => Ok(Some(text)),
        Err(e) => Err(ToolError(format!("{tool}: {shown}: {e}"))),
    }
}

/// Why a file was not read.
#[cfg_attr(test, derive(Debug))]
enum Unreadable {
    Io(std::io::Error),
    Directory,
    TooLarge(u64),
    Binary,
}

/// The bytes of the text file at `path` (blocking).
fn read_text_file(path: &std::path::Path) -> Result<Vec<u8>, Unreadable> {
    let file = std::fs::File::open(path).map_err(Unreadable::Io)?;
    let meta = file.metadata().map_err(Unreadable::Io)?;
    read_opened(file, &meta)
}

/// Largest file read on the calling thread: reading it costs less than the hand-off to a
/// blocking thread and back (two thread wake-ups per call).
const INLINE_READ_BYTES: u64 = 256 * 1024;

/// Reads `path` on the calling thread when it is a regular file of at most
/// [`INLINE_READ_BYTES`]; `None` for anything else (a FIFO, a device, a larger file), which
/// [`read_text_file`] reads on a blocking thread. Opened without blocking (`O_NONBLOCK`), so a
/// FIFO cannot hold the caller, even one put in the file's place meanwhile.
fn read_small_file(path: &std::path::Path) -> Option<Result<Vec<u8>, Unreadable>> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .and_then(|file| Ok((file.metadata()?, file)));
    match opened {
        Err(e) => Some(Err(Unreadable::Io(e))),
        Ok((meta, _)) if meta.is_dir() => Some(Err(Unreadable::Directory)),
        Ok((meta, file)) if meta.is_file() && meta.len() <= INLINE_READ_BYTES => {
            Some(read_opened(file, &meta))
        }
        Ok(_) => None,
    }
}

/// The text of an opened file whose metadata is `meta`, within [`MAX_FILE_BYTES`].
fn read_opened(file: std::fs::File, meta: &std::fs::Metadata) -> Result<Vec<u8>, Unreadable> {
    use std::io::Read as _;
    if meta.is_dir() {
        return Err(Unreadable::Directory);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(Unreadable::TooLarge(meta.len()));
    }
    // Read no more than the limit allows, whatever the size said: a file that grows, a
    // device (`/dev/zero`) that never ends.
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0) + 1);
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(Unreadable::Io)?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(Unreadable::TooLarge(bytes.len() as u64));
    }
    if paths::looks_binary(&bytes) {
        return Err(Unreadable::Binary);
    }
    Ok(bytes)
}

/// The `offset..offset+limit` window of `text` as `<n>|<line>` rows, with a footer saying how
/// to read on when the file is longer.
fn number_lines(
    text: &str,
    offset: usize,
    limit: usize,
    shown_path: &str,
) -> Result<String, ToolError> {
    if text.is_empty() {
        return Ok("(empty file)".to_string());
    }
    let total = text.lines().count();
    if offset > total {
        return Err(ToolError(format!(
            "read_file: offset {offset} is past the end of {shown_path} ({total} lines)"
        )));
    }
    let mut out = String::with_capacity(text.len().min(limit * 80));
    let last = (offset + limit - 1).min(total);
    for (i, line) in text.lines().enumerate().skip(offset - 1).take(limit) {
        out.push_str(&(i + 1).to_string());
        out.push('|');
        if line.chars().count() > MAX_LINE_CHARS {
            out.extend(line.chars().take(MAX_LINE_CHARS));
            out.push_str(" …[line truncated]");
        } else {
            out.push_str(line);
        }
        out.push('\n');
    }
    if last < total || offset > 1 {
        out.push_str(&format!("[lines {offset}-{last} of {total}"));
        if last < total {
            out.push_str(&format!("; continue with offset={}", last + 1));
        }
        out.push(']');
    } else {
        out.pop();
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_and_footer() {
        let text = "a\nb\nc\nd\n";
        assert_eq!(
            number_lines(text, 1, 10, "f").expect("ok"),
            "1|a\n2|b\n3|c\n4|d"
        );
        assert_eq!(
            number_lines(text, 2, 2, "f").expect("ok"),
            "2|b\n3|c\n[lines 2-3 of 4; continue with offset=4]"
        );
        assert!(number_lines(text, 9, 2, "f").is_err());
        assert_eq!(number_lines("", 1, 2, "f").expect("ok"), "(empty file)");
    }

    #[tokio::test]
    async fn what_is_not_a_readable_text_file_is_refused_with_its_reason() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bin"), b"\x00\x01\x02").unwrap();
        let refused = |shown: &'static str| {
            let cwd = dir.path().to_path_buf();
            async move {
                read_window("read_file", &cwd, shown, None, None, None)
                    .await
                    .unwrap_err()
                    .0
            }
        };
        assert!(refused(".").await.contains("is a directory"));
        assert!(refused("bin").await.contains("looks like a binary file"));
        assert!(refused("missing").await.contains("missing: No such file"));
        // A device that never ends is read no further than the limit.
        if std::path::Path::new("/dev/zero").exists() {
            let zero = refused("/dev/zero").await;
            assert!(zero.contains("over the 52428800-byte limit"), "{zero}");
        }
    }

    #[test]
    fn only_small_regular_files_are_read_on_the_calling_thread() {
        let dir = tempfile::tempdir().unwrap();
        let small = dir.path().join("small.txt");
        std::fs::write(&small, "one\ntwo\n").unwrap();
        assert_eq!(read_small_file(&small).unwrap().unwrap(), b"one\ntwo\n");
        let large = dir.path().join("large.txt");
        std::fs::write(&large, "x".repeat(INLINE_READ_BYTES as usize + 1)).unwrap();
        assert!(
            read_small_file(&large).is_none(),
            "a larger file goes to a blocking thread"
        );
        assert_eq!(
            read_text_file(&large).unwrap().len(),
            INLINE_READ_BYTES as usize + 1
        );
        assert!(matches!(
            read_small_file(dir.path()),
            Some(Err(Unreadable::Directory))
        ));
        assert!(matches!(
            read_small_file(&dir.path().join("missing")),
            Some(Err(Unreadable::Io(_)))
        ));
        // A FIFO without a writer: opening it does not wait, and it is left to a blocking
        // thread (where reading it would wait, as before).
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|status| status.success()) {
            assert!(read_small_file(&fifo).is_none());
        }
    }
}
