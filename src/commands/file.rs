//! A command file: Markdown with an optional YAML front matter (between `---` lines, split
//! and parsed as a skill's is) whose `description`, `argument-hint`, `model` and
//! `allowed-tools` odek reads; other keys (Claude Code's `disable-model-invocation`, …) are
//! ignored. The body is the prompt.

use serde_yaml_ng::{Mapping, Value};

/// Largest command file read.
pub const MAX_FILE_BYTES: u64 = 256 * 1024;
/// Longest description kept (one taken from the body's first line is cut to this).
pub const MAX_DESCRIPTION_CHARS: usize = 200;

/// What a command file says.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct CommandFile {
    /// `description`, else the body's first line that is not blank.
    pub description: String,
    /// `argument-hint`: what to type after the name.
    pub argument_hint: Option<String>,
    /// `model`: the model this command's turn asks.
    pub model: Option<String>,
    /// `allowed-tools` as written (Claude Code's names or odek's), when given.
    pub allowed_tools: Option<Vec<String>>,
    /// The prompt, before its arguments are put in.
    pub body: String,
}

/// Why a command file is skipped.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    /// The front matter breaks a rule of the format.
    #[error("{0}")]
    FrontMatter(#[from] crate::skills::Rule),
    /// The front matter is not YAML and has no closing `---` line.
    #[error("the front matter has no closing `---` line")]
    NotClosed,
    /// A key that must be text is not.
    #[error("`{0}` must be a string")]
    NotAString(&'static str),
    /// `allowed-tools` is neither a string nor a list.
    #[error("`allowed-tools` {0}")]
    Tools(#[from] crate::tools::claude_names::NotAToolList),
    /// The file is a symbolic link (never followed in a project).
    #[error("a symbolic link; not reading it")]
    Symlink,
    /// The file is too large.
    #[error("{size} bytes, over the {max}-byte limit")]
    TooLarge {
        /// Its size.
        size: u64,
        /// The limit.
        max: u64,
    },
    /// The file is not UTF-8.
    #[error("not UTF-8 text")]
    NotUtf8,
    /// The file could not be read.
    #[error("cannot read it: {0}")]
    Unreadable(#[source] std::io::Error),
    /// A part of its name is not letters, digits, `-` and `_`.
    #[error(
        "\"{0}\" is not a command name (letters, digits, `-` and `_`; a folder is a namespace)"
    )]
    BadName(String),
}

impl crate::error::Classified for FileError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            FileError::Unreadable(_) => crate::error::ErrorKind::Io,
            _ => crate::error::ErrorKind::Usage,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        Some("the format of a command file: docs/COMMANDS.md")
    }
}

/// Reads a command file's bytes: at most [`MAX_FILE_BYTES`], and no link unless
/// `follow_links` (the user's own folder).
pub fn read_bytes(path: &std::path::Path, follow_links: bool) -> Result<Vec<u8>, FileError> {
    let meta = match follow_links {
        true => std::fs::metadata(path),
        false => std::fs::symlink_metadata(path),
    }
    .map_err(FileError::Unreadable)?;
    if meta.file_type().is_symlink() {
        return Err(FileError::Symlink);
    }
    if meta.len() > MAX_FILE_BYTES {
        return Err(FileError::TooLarge {
            size: meta.len(),
            max: MAX_FILE_BYTES,
        });
    }
    std::fs::read(path).map_err(FileError::Unreadable)
}

/// Parses a command file's text.
pub fn parse(bytes: &[u8]) -> Result<CommandFile, FileError> {
    let text = std::str::from_utf8(bytes).map_err(|_| FileError::NotUtf8)?;
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let starts_with_front_matter = text.lines().next().is_some_and(|l| l.trim_end() == "---");
    if !starts_with_front_matter {
        return Ok(CommandFile {
            description: first_line(text),
            body: text.trim().to_string(),
            ..CommandFile::default()
        });
    }
    let (map, body) = match crate::skills::frontmatter::front_matter(text) {
        Err(crate::skills::Rule::NotYaml(_)) => lenient(text)?,
        parsed => parsed?,
    };
    let body = body.trim().to_string();
    let description = match text_of(&map, "description")? {
        Some(d) if !d.trim().is_empty() => cut(d.trim()),
        _ => first_line(&body),
    };
    Ok(CommandFile {
        description,
        argument_hint: text_of(&map, "argument-hint")?,
        model: text_of(&map, "model")?.filter(|m| !m.trim().is_empty()),
        allowed_tools: crate::tools::claude_names::entries_of(map.get("allowed-tools"))?,
        body,
    })
}

/// The keys that start an entry of a front matter read line by line: odek's and Claude
/// Code's.
const KEYS: &[&str] = &[
    "description",
    "argument-hint",
    "model",
    "allowed-tools",
    "disable-model-invocation",
];

/// A front matter that is not YAML read as Claude Code reads it (`argument-hint: [pr]
/// [priority]`): see [`crate::skills::frontmatter::lenient`]; the body after the closing `---`.
fn lenient(text: &str) -> Result<(Mapping, &str), FileError> {
    let (yaml, body) =
        crate::skills::frontmatter::split_front_matter(text).map_err(|_| FileError::NotClosed)?;
    Ok((
        crate::skills::frontmatter::lenient::mapping(yaml, KEYS),
        body,
    ))
}

/// A key's text (a number or a boolean read as text, a list of words as `[a] [b]`: YAML's
/// reading of Claude Code's `argument-hint: [message]`); `None` when absent or null.
fn text_of(map: &Mapping, key: &'static str) -> Result<Option<String>, FileError> {
    let scalar = |v: &Value| match v {
        Value::String(s) => Some(s.trim().to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    };
    match map.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Sequence(items)) => items
            .iter()
            .map(|v| scalar(v).map(|s| format!("[{s}]")))
            .collect::<Option<Vec<_>>>()
            .map(|words| Some(words.join(" ")))
            .ok_or(FileError::NotAString(key)),
        Some(v) => scalar(v).map(Some).ok_or(FileError::NotAString(key)),
    }
}

/// The first line of `body` that is not blank, headings' `#` taken off, cut.
fn first_line(body: &str) -> String {
    body.lines()
        .map(|l| l.trim().trim_start_matches('#').trim())
        .find(|l| !l.is_empty())
        .map(cut)
        .unwrap_or_default()
}

fn cut(text: &str) -> String {
    crate::text::fit(text, MAX_DESCRIPTION_CHARS).into_owned()
}

/// True when `part` (a folder's or a file's name without `.md`) may be part of a command
/// name: ASCII letters, digits, `-` and `_`, at most 64 characters.
pub fn valid_part(part: &str) -> bool {
    !part.is_empty()
        && part.len() <= 64
        && part
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}
