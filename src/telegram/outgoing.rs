//! Files the agent sends the user: `MEDIA:document:<path>` and `MEDIA:photo:<path>` lines of
//! an answer (the original's convention, told to the model in a Telegram session's system
//! prompt), taken out of the text and sent as files — only regular files inside the working
//! directory, at most [`MAX_SEND_BYTES`] each and [`MAX_FILES_PER_ANSWER`] per answer, text
//! (UTF-8 without NUL bytes) redacted like every message the bot sends.

use std::path::{Path, PathBuf};

pub use super::api::{MediaKind, OutgoingFile};
use super::error::SendError;
use crate::redact::Redactor;

/// Largest file the bot sends (the Bot API takes 50 MB; a chat is not a file server).
pub const MAX_SEND_BYTES: u64 = 20 * 1024 * 1024;

/// Largest photo: the Bot API's limit for `sendPhoto`; a larger picture goes as a document.
pub const MAX_PHOTO_BYTES: u64 = 10 * 1024 * 1024;

/// Most files one answer sends; further lines are answered with a refusal.
pub const MAX_FILES_PER_ANSWER: usize = 10;

/// What a Telegram session's system prompt adds.
pub const SURFACE_NOTE: &str = "You are talking with the user over Telegram. When they ask \
for a file from the working directory, send it with a line of its own in your answer: \
`MEDIA:document:<path>` (or `MEDIA:photo:<path>` for a picture). The line is taken out of the \
text they see; each file at most 20 MiB, at most 10 per answer.";

/// One `MEDIA:` line of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MediaLine {
    /// How it asks the file to go.
    pub kind: MediaKind,
    /// The path as written (quotes and backticks around it removed).
    pub path: String,
}

/// The answer without its `MEDIA:` lines, and those lines in order. A line counts when,
/// trimmed, it is `MEDIA:document:<path>` or `MEDIA:photo:<path>` (the kind in any case);
/// lines inside fenced code blocks stay text.
pub fn take_media_lines(answer: &str) -> (String, Vec<MediaLine>) {
    let mut kept = Vec::new();
    let mut media = Vec::new();
    let mut fenced = false;
    for line in answer.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            fenced = !fenced;
        }
        match (!fenced).then(|| media_line(trimmed)).flatten() {
            Some(m) => media.push(m),
            None => kept.push(line),
        }
    }
    (kept.join("\n").trim().to_string(), media)
}

fn media_line(line: &str) -> Option<MediaLine> {
    let rest = line.strip_prefix("MEDIA:")?;
    let (kind, path) = rest.split_once(':')?;
    let kind = match kind.to_ascii_lowercase().as_str() {
        "document" => MediaKind::Document,
        "photo" => MediaKind::Photo,
        _ => return None,
    };
    let path = path.trim().trim_matches(['`', '"', '\'']).trim();
    (!path.is_empty()).then(|| MediaLine {
        kind,
        path: path.to_string(),
    })
}

/// Reads the file a line names, relative to `cwd`: refused (with the reason to show) when
/// it is not a regular file inside `cwd` once links are resolved, or is over
/// [`MAX_SEND_BYTES`]. UTF-8 text is sent redacted.
pub fn read_for_sending(
    cwd: &Path,
    line: &MediaLine,
    redactor: &Redactor,
) -> Result<OutgoingFile, SendError> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let path = inside(cwd, &line.path)?;
    // Opened once, never through a link put there since, never blocking on a FIFO; what
    // is checked is what is read, and no more than the cap is read even if it grows.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(&path)
        .map_err(SendError::Unreadable)?;
    let meta = file.metadata().map_err(SendError::Unreadable)?;
    if !meta.is_file() {
        return Err(SendError::NotARegularFile);
    }
    let too_large = |size: u64| SendError::TooLarge {
        size,
        max: MAX_SEND_BYTES,
    };
    if meta.len() > MAX_SEND_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SEND_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(SendError::Unreadable)?;
    if bytes.len() as u64 > MAX_SEND_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    // Text (UTF-8 without NUL bytes) goes redacted; anything else as it is.
    let bytes = match std::str::from_utf8(&bytes) {
        Ok(text) if !text.contains('\0') => redactor.redact(text).into_owned().into_bytes(),
        _ => bytes,
    };
    let kind = match line.kind {
        MediaKind::Photo if bytes.len() as u64 <= MAX_PHOTO_BYTES => MediaKind::Photo,
        _ => MediaKind::Document,
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "file".into());
    Ok(OutgoingFile { kind, name, bytes })
}

/// The path resolved (links followed) when it lies inside the working directory.
fn inside(cwd: &Path, written: &str) -> Result<PathBuf, SendError> {
    let root = cwd.canonicalize().map_err(SendError::NoWorkingDirectory)?;
    let path = root
        .join(written)
        .canonicalize()
        .map_err(SendError::Unreadable)?;
    if path.starts_with(&root) {
        Ok(path)
    } else {
        Err(SendError::Outside)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(kind: MediaKind, path: &str) -> MediaLine {
        MediaLine {
            kind,
            path: path.into(),
        }
    }

    #[test]
    fn media_lines_are_taken_out_and_code_blocks_stay_text() {
        let answer = "Here is the report.\n  MEDIA:document:`out/report.md`  \nMEDIA:Photo:chart.png\n\
                      ```\nMEDIA:document:kept.txt\n```\nMEDIA:voice:memo.ogg\nMEDIA:document:\nDone.";
        let (text, media) = take_media_lines(answer);
        assert_eq!(
            media,
            [
                line(MediaKind::Document, "out/report.md"),
                line(MediaKind::Photo, "chart.png")
            ]
        );
        assert_eq!(
            text,
            "Here is the report.\n```\nMEDIA:document:kept.txt\n```\nMEDIA:voice:memo.ogg\nMEDIA:document:\nDone."
        );
        assert_eq!(
            take_media_lines("MEDIA:document:a.txt\n"),
            (String::new(), vec![line(MediaKind::Document, "a.txt")])
        );
        assert_eq!(
            take_media_lines("see MEDIA:document:a.txt"),
            ("see MEDIA:document:a.txt".into(), vec![])
        );
    }

    #[test]
    fn only_regular_files_inside_the_working_directory_are_read_and_text_is_redacted() {
        let dir = tempfile::tempdir().expect("tmp");
        let cwd = dir.path().join("work");
        std::fs::create_dir_all(cwd.join("out")).expect("dirs");
        let key = "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789";
        std::fs::write(cwd.join("out/report.md"), format!("key = {key}\n")).expect("write");
        std::fs::write(cwd.join("pic.png"), [0x89, b'P', b'N', b'G', 0xff]).expect("write");
        std::fs::write(dir.path().join("secret.txt"), "outside").expect("write");
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), cwd.join("link.txt"))
            .expect("link");
        let mut redactor = Redactor::new();
        redactor.add_secret(key);

        let report = read_for_sending(&cwd, &line(MediaKind::Document, "out/report.md"), &redactor)
            .expect("sent");
        assert_eq!(report.name, "report.md");
        let text = String::from_utf8(report.bytes).expect("utf-8");
        assert!(!text.contains(key) && text.starts_with("key = "), "{text}");

        let pic =
            read_for_sending(&cwd, &line(MediaKind::Photo, "./pic.png"), &redactor).expect("sent");
        assert_eq!((pic.kind, pic.bytes.len()), (MediaKind::Photo, 5));

        for (path, reason) in [
            ("../secret.txt", "only files inside"),
            ("link.txt", "only files inside"),
            ("out", "not a regular file"),
            ("missing.txt", "cannot read it"),
        ] {
            let err = read_for_sending(&cwd, &line(MediaKind::Document, path), &redactor)
                .expect_err(path);
            assert!(err.to_string().contains(reason), "{path}: {err}");
        }
        let abs = dir.path().join("secret.txt").display().to_string();
        assert!(read_for_sending(&cwd, &line(MediaKind::Document, &abs), &redactor).is_err());
    }

    #[test]
    fn a_large_photo_goes_as_a_document_and_a_file_over_the_cap_is_refused() {
        let dir = tempfile::tempdir().expect("tmp");
        let redactor = Redactor::new();
        let big = std::fs::File::create(dir.path().join("big.jpg")).expect("create");
        big.set_len(MAX_PHOTO_BYTES + 1).expect("size");
        let f = read_for_sending(dir.path(), &line(MediaKind::Photo, "big.jpg"), &redactor)
            .expect("sent");
        assert_eq!(f.kind, MediaKind::Document);
        big.set_len(MAX_SEND_BYTES + 1).expect("size");
        let err = read_for_sending(dir.path(), &line(MediaKind::Document, "big.jpg"), &redactor)
            .expect_err("too big");
        assert!(
            err.to_string().contains("over the 20971520-byte limit"),
            "{err}"
        );
    }
}
