//! Files a user sends the bot — documents, and photos as files — saved into the working
//! directory and named in the turn they start.

use std::io::Write;
use std::path::Path;

use super::api::Message;

/// Largest file the bot fetches: the Bot API's own limit for downloads.
pub const MAX_FILE_BYTES: u64 = 20 * 1024 * 1024;

/// A file in a message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incoming {
    /// What `getFile` takes.
    pub file_id: String,
    /// Its name as sent (`photo-<width>x<height>.jpg` for a photo).
    pub name: String,
    /// Its size, when Telegram says.
    pub size: Option<u64>,
    /// True for a photo (a picture Telegram compressed), false for a document.
    pub photo: bool,
}

/// The file a message carries: its document, or the largest size of its photo.
pub fn incoming(message: &Message) -> Option<Incoming> {
    if let Some(d) = &message.document {
        return Some(Incoming {
            file_id: d.file_id.clone(),
            name: d.file_name.clone().unwrap_or_else(|| "file".into()),
            size: d.file_size,
            photo: false,
        });
    }
    let largest = message
        .photo
        .iter()
        .max_by_key(|p| u64::from(p.width) * u64::from(p.height))?;
    Some(Incoming {
        file_id: largest.file_id.clone(),
        name: format!("photo-{}x{}.jpg", largest.width, largest.height),
        size: largest.file_size,
        photo: true,
    })
}

/// Files odek reads as instructions or configuration when it starts in a directory: a file
/// someone sends never takes one of these names.
const RESERVED: &[&str] = &["agents.md", "odek.json"];

/// A name safe to create in the working directory: the last path segment of what was sent,
/// no leading dot or dash, no control or bidirectional-formatting characters, at most 100
/// characters, never a name odek reads at start (`AGENTS.md`, `odek.json`: prefixed
/// `telegram-`).
fn safe_name(sent: &str) -> String {
    let last = sent.rsplit(['/', '\\']).next().unwrap_or(sent);
    let bidi = |c: &char| matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
    let cleaned: String = last
        .chars()
        .filter(|c| !c.is_control() && !bidi(c))
        .collect::<String>()
        .trim()
        .trim_start_matches(['.', '-'])
        .to_string();
    let cut = crate::text::truncate(&cleaned, 100).into_owned();
    if cut.is_empty() {
        "file".into()
    } else if RESERVED.contains(&cut.to_ascii_lowercase().as_str()) {
        format!("telegram-{cut}")
    } else {
        cut
    }
}

/// Writes `bytes` as a new file in `dir` named after `sent` (`name-2.ext` … when taken; an
/// existing file is never replaced); answers the name used.
pub fn save(dir: &Path, sent: &str, bytes: &[u8]) -> std::io::Result<String> {
    let name = safe_name(sent);
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (name.clone(), String::new()),
    };
    for n in 1..1000 {
        let candidate = match n {
            1 => name.clone(),
            n => format!("{stem}-{n}{ext}"),
        };
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(&candidate));
        match created {
            Ok(mut f) => return f.write_all(bytes).map(|()| candidate),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "{name}: 999 files of that name already"
    )))
}

/// The turn a file starts: the caption (or a plain request) and where the file is; a photo
/// sent as an image part (`attached`) says so.
pub fn turn_text(
    caption: Option<&str>,
    sent: &str,
    saved: &str,
    bytes: usize,
    attached: bool,
) -> String {
    let ask = caption
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .unwrap_or(if attached {
            "I sent you a photo; have a look at it."
        } else {
            "I sent you a file; have a look at it."
        });
    let sent: String = crate::text::strip_controls(sent).replace(['"', '\n', '\t'], " ");
    if attached {
        return format!(
            "{ask}\n\n[Telegram: the user sent a photo ({bytes} bytes), attached to this message; it is also saved as ./{saved} in the working directory.]"
        );
    }
    format!(
        "{ask}\n\n[Telegram: the user sent the file \"{sent}\" ({bytes} bytes); it is saved as ./{saved} in the working directory.]"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_made_safe_and_never_replace_a_file() {
        assert_eq!(safe_name("../../etc/passwd"), "passwd");
        assert_eq!(safe_name("C:\\Users\\a\\report.pdf"), "report.pdf");
        assert_eq!(safe_name(".bashrc"), "bashrc");
        assert_eq!(safe_name("a\u{7}b\nc.txt"), "abc.txt");
        assert_eq!(safe_name(".."), "file");
        assert_eq!(safe_name("AGENTS.md"), "telegram-AGENTS.md");
        assert_eq!(safe_name("odek.JSON"), "telegram-odek.JSON");
        assert_eq!(safe_name("--rf.txt"), "rf.txt");
        assert_eq!(safe_name("invoice\u{202e}fdp.exe"), "invoicefdp.exe");
        let dir = tempfile::tempdir().expect("dir");
        std::fs::write(dir.path().join("notes.txt"), "mine").expect("existing");
        assert_eq!(
            save(dir.path(), "notes.txt", b"theirs").expect("save"),
            "notes-2.txt"
        );
        assert_eq!(
            save(dir.path(), "notes.txt", b"again").expect("save"),
            "notes-3.txt"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("notes.txt")).expect("read"),
            "mine"
        );
        assert_eq!(save(dir.path(), "README", b"x").expect("save"), "README");
        assert_eq!(save(dir.path(), "README", b"x").expect("save"), "README-2");
    }

    #[test]
    fn the_turn_names_the_file_and_keeps_the_caption() {
        assert_eq!(
            turn_text(Some(" summarise it "), "q3.csv", "q3.csv", 120, false),
            "summarise it\n\n[Telegram: the user sent the file \"q3.csv\" (120 bytes); it is saved as ./q3.csv in the working directory.]"
        );
        assert!(turn_text(None, "a", "a", 1, false).starts_with("I sent you a file;"));
        assert_eq!(
            turn_text(None, "photo-9x9.jpg", "photo-9x9.jpg", 7, true),
            "I sent you a photo; have a look at it.\n\n[Telegram: the user sent a photo (7 bytes), attached to this message; it is also saved as ./photo-9x9.jpg in the working directory.]"
        );
    }
}
