//! What the REPL makes of a line: `@path` attaches that file's text (or, an image, the
//! image) to the turn, and the line editor completes paths after `@` (and slash commands) on
//! Tab. `odek run` takes the images a prompt names the same way.

use std::borrow::Cow;
use std::path::{Path, PathBuf};

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::validate::Validator;
use rustyline::{Context, Helper};

use crate::llm::ImagePart;
use crate::prompt::{ContextFile, ContextFileError, ImageBudget, ImageError};

/// The REPL's slash commands, for completion.
pub const SLASH_COMMANDS: &[&str] = &[
    "/compact", "/exit", "/help", "/info", "/jobs", "/kill", "/memory", "/mode", "/model", "/plan",
    "/queue", "/quit", "/rewind", "/skills", "/undo",
];

use crate::prompt::MAX_ATTACHED_FILES;

/// A line ready to send: its text with the named files attached.
#[derive(Debug)]
pub struct Expanded {
    /// The user message.
    pub text: String,
    /// The files attached (name, bytes).
    pub attached: Vec<(String, usize)>,
    /// `@words` that name no file (sent as the text they are).
    pub not_files: Vec<String>,
    /// The images named (name, part): see [`prompt_images`].
    pub images: Vec<(String, ImagePart)>,
}

/// Why a line is not sent.
#[derive(Debug, thiserror::Error)]
pub enum AttachError {
    /// A named file that exists cannot be attached.
    #[error(transparent)]
    File(#[from] ContextFileError),
    /// A named image cannot be sent.
    #[error(transparent)]
    Image(#[from] ImageError),
    /// Too many files.
    #[error(
        "the line names {0} files with @; at most {MAX_ATTACHED_FILES} can be attached to one turn"
    )]
    TooMany(usize),
}

/// The terminal's line editor failed (exit 1, as every failure after parsing).
impl crate::error::Classified for rustyline::error::ReadlineError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Io
    }
}

impl crate::error::Classified for AttachError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            AttachError::File(e) => e.kind(),
            AttachError::Image(e) => e.kind(),
            AttachError::TooMany(_) => crate::error::ErrorKind::Usage,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            AttachError::File(e) => e.hint(),
            AttachError::Image(e) => e.hint(),
            AttachError::TooMany(_) => Some("split the files over several turns"),
        }
    }
}

/// The `@path` words of a line: an `@` at the start or after a space, then the path up to the
/// next space.
pub fn at_words(line: &str) -> Vec<&str> {
    line.split(char::is_whitespace)
        .filter_map(|w| w.strip_prefix('@'))
        .filter(|w| !w.is_empty())
        .collect()
}

/// Expands `~/` at the start of a path.
fn resolve(word: &str, cwd: &Path) -> PathBuf {
    match (word.strip_prefix("~/"), crate::home::user_home()) {
        (Some(rest), Some(home)) => home.join(rest),
        _ => cwd.join(word),
    }
}

/// The path a word names: punctuation that ends a sentence (`.,;:!?)`) is not part of it when
/// the path without it names something and the path with it does not.
fn named_path<'a>(word: &'a str, cwd: &Path) -> Option<&'a str> {
    if resolve(word, cwd).exists() {
        return Some(word);
    }
    let trimmed = word.trim_end_matches(['.', ',', ';', ':', '!', '?', ')', '"', '\'']);
    (!trimmed.is_empty() && trimmed != word && resolve(trimmed, cwd).exists()).then_some(trimmed)
}

/// Adds `path`, named `name`, to `named` unless it is a file already there (`a.md` and
/// `./a.md` are one file).
fn push_once<'a>(named: &mut Vec<(&'a str, PathBuf)>, name: &'a str, path: PathBuf) {
    let key = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
    let new = key(&path);
    if !named.iter().any(|(_, p)| key(p) == new) {
        named.push((name, path));
    }
}

/// The files the `@words` of `line` name, each once, and the words that name nothing.
fn named_files<'a>(line: &'a str, cwd: &Path) -> (Vec<(&'a str, PathBuf)>, Vec<String>) {
    let mut named: Vec<(&str, PathBuf)> = Vec::new();
    let mut not_files = Vec::new();
    for word in at_words(line) {
        match named_path(word, cwd) {
            Some(name) => push_once(&mut named, name, resolve(name, cwd)),
            None => not_files.push(format!("@{word}")),
        }
    }
    (named, not_files)
}

/// Where a prompt's images go: whether the model takes them (the `images` setting), and its
/// name for the refusal.
#[derive(Debug, Clone, Copy)]
pub struct ImageTarget<'a> {
    /// The `images` setting.
    pub takes: bool,
    /// The model's name.
    pub model: &'a str,
}

/// Reads `named` images (`-i` files, `@` words naming images) within the caps every surface
/// shares; refused before anything is read when the model takes no images.
fn read_images(
    named: &[(&str, PathBuf)],
    target: ImageTarget<'_>,
) -> Result<Vec<(String, ImagePart)>, ImageError> {
    if let (false, Some((name, _))) = (target.takes, named.first()) {
        let (name, model) = (name.to_string(), target.model.to_string());
        return Err(ImageError::NotTaken { name, model });
    }
    let mut budget = ImageBudget::default();
    named
        .iter()
        .map(|(name, path)| Ok((name.to_string(), budget.read(name, path)?)))
        .collect()
}

/// The images of an `odek run` or `continue` prompt: the `-i` files, then the `@words` of
/// `text` that name images (other `@words` stay text). Nothing is sent when one cannot be.
pub fn prompt_images(
    files: &[PathBuf],
    text: &str,
    cwd: &Path,
    target: ImageTarget<'_>,
) -> Result<Vec<(String, ImagePart)>, AttachError> {
    let mut named: Vec<(&str, PathBuf)> = Vec::new();
    for f in files {
        push_once(&mut named, f.to_str().unwrap_or("image"), cwd.join(f));
    }
    for (name, path) in named_files(text, cwd).0 {
        if crate::prompt::names_image(&path) {
            push_once(&mut named, name, path);
        }
    }
    if named.len() > MAX_ATTACHED_FILES {
        return Err(AttachError::TooMany(named.len()));
    }
    Ok(read_images(&named, target)?)
}

/// Reads the files a line names and attaches them (images as image parts); a named file that
/// cannot be attached (too large, binary, a directory, unreadable, an image the model is not
/// sent) stops the line, so nothing is sent without the file the user meant.
pub fn expand(line: &str, cwd: &Path, target: ImageTarget<'_>) -> Result<Expanded, AttachError> {
    let (named, not_files) = named_files(line, cwd);
    // Counted before anything is read.
    if named.len() > MAX_ATTACHED_FILES {
        return Err(AttachError::TooMany(named.len()));
    }
    let (images, texts): (Vec<_>, Vec<_>) = named
        .into_iter()
        .partition(|(_, path)| crate::prompt::names_image(path));
    let images = read_images(&images, target)?;
    let files = texts
        .iter()
        .map(|(name, path)| crate::prompt::read_attachment(name, path, "@"))
        .collect::<Result<Vec<ContextFile>, _>>()?;
    Ok(Expanded {
        text: crate::prompt::with_attached_files(line, &files, "resource"),
        attached: files
            .iter()
            .map(|f| (f.name.clone(), f.text.len()))
            .collect(),
        not_files,
        images,
    })
}

/// The line editor's helper: completion only.
pub struct ReplHelper {
    cwd: PathBuf,
    /// The custom commands (`/review`, `/frontend:build`), completed after the built-ins.
    commands: Vec<String>,
}

impl ReplHelper {
    /// A helper completing paths relative to `cwd`.
    pub fn new(cwd: PathBuf) -> Self {
        ReplHelper {
            cwd,
            commands: Vec::new(),
        }
    }

    /// Completes these custom commands too (with their slash).
    pub fn set_commands(&mut self, commands: Vec<String>) {
        self.commands = commands;
    }

    /// Files and folders whose names start with the last segment of `partial` (a path after
    /// `@`), in its folder; folders end with `/`, hidden entries only when asked for.
    fn paths(&self, partial: &str) -> Vec<Pair> {
        let (folder, prefix) = match partial.rfind('/') {
            Some(i) => (&partial[..=i], &partial[i + 1..]),
            None => ("", partial),
        };
        let dir = if folder.is_empty() {
            self.cwd.clone()
        } else {
            resolve(folder, &self.cwd)
        };
        let Ok(entries) = std::fs::read_dir(dir) else {
            return Vec::new();
        };
        let mut found: Vec<Pair> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let wanted =
                    name.starts_with(prefix) && (prefix.starts_with('.') || !name.starts_with('.'));
                if !wanted || name.contains(char::is_whitespace) {
                    return None;
                }
                let slash = if e.path().is_dir() { "/" } else { "" };
                Some(Pair {
                    display: format!("{name}{slash}"),
                    replacement: format!("{folder}{name}{slash}"),
                })
            })
            .collect();
        found.sort_by(|a, b| a.display.cmp(&b.display));
        found
    }
}

impl Completer for ReplHelper {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        let before = &line[..pos];
        let start = before
            .char_indices()
            .rev()
            .find(|(_, c)| c.is_whitespace())
            .map_or(0, |(i, c)| i + c.len_utf8());
        let word = &before[start..];
        if let Some(partial) = word.strip_prefix('@') {
            return Ok((start + 1, self.paths(partial)));
        }
        if start == 0 && word.starts_with('/') {
            let commands = SLASH_COMMANDS
                .iter()
                .copied()
                .chain(self.commands.iter().map(String::as_str))
                .filter(|c| c.starts_with(word))
                .map(|c| Pair {
                    display: c.to_string(),
                    replacement: format!("{c} "),
                })
                .collect();
            return Ok((0, commands));
        }
        Ok((pos, Vec::new()))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Borrowed(prompt)
    }
}

impl Validator for ReplHelper {}

impl Helper for ReplHelper {}

#[cfg(test)]
mod tests {
    use super::*;

    const SEES: ImageTarget<'static> = ImageTarget {
        takes: true,
        model: "m",
    };

    #[test]
    fn images_go_as_parts_by_their_bytes_and_only_to_a_model_that_takes_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("shot"), b"\x89PNG\r\n\x1a\n....").expect("write");
        std::fs::write(dir.path().join("fake.png"), b"just text").expect("write");
        std::fs::write(dir.path().join("notes.md"), "alpha\n").expect("write");
        let e = expand("see @shot and @notes.md", dir.path(), SEES).expect("expand");
        assert_eq!(e.images.len(), 1);
        assert_eq!(e.images[0].0, "shot");
        assert!(e.images[0].1.url.starts_with("data:image/png;base64,"));
        assert_eq!(e.attached, vec![("notes.md".to_string(), 6)]);
        let err = |line: &str, target| {
            let e = expand(line, dir.path(), target).expect_err(line);
            e.to_string()
        };
        assert_eq!(
            err("@fake.png", SEES),
            "fake.png is not a PNG, JPEG, GIF or WebP image"
        );
        let blind = ImageTarget {
            takes: false,
            model: "m",
        };
        assert_eq!(
            err("@shot", blind),
            "shot is an image, and the model m does not take images (setting `images`)"
        );
        let files = [PathBuf::from("shot")];
        // `-i shot` and `@shot` are one image, sent once; `@notes.md` is no image.
        let images = prompt_images(&files, "and @shot @./shot @notes.md", dir.path(), SEES);
        assert_eq!(images.expect("images").len(), 1);
    }

    #[test]
    fn every_repl_command_is_reserved_for_every_surface() {
        for command in SLASH_COMMANDS {
            let name = command.strip_prefix('/').unwrap();
            assert!(crate::commands::is_built_in(name), "{command}");
        }
    }

    #[test]
    fn at_words_are_words_that_start_with_at() {
        assert_eq!(
            at_words("read @src/main.rs and @notes.md, not me@example.com @"),
            vec!["src/main.rs", "notes.md,"]
        );
    }

    #[test]
    fn a_line_attaches_the_files_it_names_once_and_keeps_other_words() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("notes.md"), "alpha\n").expect("write");
        let e = expand(
            "see @notes.md, then @./notes.md and @nobody",
            dir.path(),
            SEES,
        )
        .expect("expand");
        assert_eq!(e.attached, vec![("notes.md".to_string(), 6)]);
        assert_eq!(e.not_files, vec!["@nobody".to_string()]);
        assert!(
            e.text
                .starts_with("see @notes.md, then @./notes.md and @nobody\n\n--- notes.md ---\n")
        );
        let wrapped = crate::untrusted::wrappers(&e.text);
        assert_eq!(wrapped.len(), 1);
        assert_eq!(
            (wrapped[0].source, wrapped[0].body),
            ("resource:notes.md", "alpha")
        );
    }

    #[test]
    fn a_file_that_cannot_be_attached_stops_the_line() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("blob"), [0xff, 0xfe, 0]).expect("write");
        std::fs::create_dir(dir.path().join("folder")).expect("mkdir");
        let big = vec![b'a'; crate::prompt::MAX_CONTEXT_FILE_BYTES as usize + 1];
        std::fs::write(dir.path().join("big.log"), big).expect("write");
        let err = |line: &str| expand(line, dir.path(), SEES).expect_err(line).to_string();
        assert_eq!(err("@blob"), "@blob: not a UTF-8 text file");
        assert_eq!(err("look at @folder"), "@folder: not a regular file");
        assert_eq!(
            err("@big.log"),
            "@big.log: file is 262145 bytes, over the 262144-byte limit"
        );
    }

    #[test]
    fn tab_completes_paths_after_at_and_slash_commands() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/main.rs"), "").expect("write");
        std::fs::write(dir.path().join("notes.md"), "").expect("write");
        std::fs::write(dir.path().join(".hidden"), "").expect("write");
        let mut helper = ReplHelper::new(dir.path().to_path_buf());
        helper.set_commands(vec!["/review".into(), "/frontend:build".into()]);
        let history = rustyline::history::DefaultHistory::new();
        let ctx = Context::new(&history);
        let complete = |line: &str| {
            let (start, pairs) = helper.complete(line, line.len(), &ctx).expect("complete");
            let words: Vec<String> = pairs.into_iter().map(|p| p.replacement).collect();
            (start, words)
        };
        assert_eq!(
            complete("read @"),
            (6, vec!["notes.md".into(), "src/".into()])
        );
        assert_eq!(complete("read @s"), (6, vec!["src/".into()]));
        assert_eq!(complete("read @src/m"), (6, vec!["src/main.rs".into()]));
        assert_eq!(complete("@."), (1, vec![".hidden".into()]));
        assert_eq!(complete("/me"), (0, vec!["/memory ".into()]));
        assert_eq!(
            complete("/re"),
            (0, vec!["/rewind ".into(), "/review ".into()])
        );
        assert_eq!(complete("/fr"), (0, vec!["/frontend:build ".into()]));
        // A multi-byte space before the word (no panic inside a character).
        assert_eq!(complete("read\u{3000}@n"), (8, vec!["notes.md".into()]));
        assert_eq!(complete("a\u{a0}@s"), (4, vec!["src/".into()]));
        assert_eq!(complete("plain wor").1, Vec::<String>::new());
    }
}
