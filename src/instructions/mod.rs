//! Layered instructions (see docs/INSTRUCTIONS.md): the user's `<home>/AGENTS.md`, then
//! from the repository's top folder down to the working directory each folder's
//! `AGENTS.md` (or the first of `instructions.fallbacks` it has), each a leading injection
//! of its own; and the nested files below the working directory, attached once to the
//! result of the first tool call that reads a file under their folder.
//!
//! Every file is a regular UTF-8 text file of at most [`MAX_FILE_BYTES`], never a symbolic
//! link; a file that cannot be used is skipped with a warning, never silently.

mod chain;
mod ignored;
mod nested;

use std::path::{Path, PathBuf};

pub use chain::{discover, repository_top};
pub use nested::{NESTED_HEADER_PREFIX, Nested, attached_in, loaded_in};

use crate::llm::Message;
use crate::transcript::INJECTION_PREFIX;

/// The name every folder is looked at for first.
pub const AGENTS_FILE: &str = "AGENTS.md";

/// Largest instruction file read (256 KiB, as `--ctx` attachments).
pub const MAX_FILE_BYTES: u64 = 256 * 1024;

/// What the chain is read with: the odek home, the working directory, the settings.
#[derive(Debug, Clone)]
pub struct ChainOptions<'a> {
    /// The odek home (`$ODEK_HOME` or `~/.odek`), where the user's own `AGENTS.md` is.
    pub home: &'a Path,
    /// The working directory.
    pub cwd: &'a Path,
    /// Names read where a folder has no `AGENTS.md`, the first found wins.
    pub fallbacks: &'a [String],
    /// Bytes of all the files together at most.
    pub max_bytes: u64,
}

impl<'a> ChainOptions<'a> {
    /// The options the configuration gives (`instructions.fallbacks`, `instructions.max_kb`).
    pub fn from_config(home: &'a Path, cwd: &'a Path, config: &'a crate::config::Config) -> Self {
        ChainOptions {
            home,
            cwd,
            fallbacks: &config.instructions.fallbacks,
            max_bytes: config.instructions.max_kb.saturating_mul(1024),
        }
    }
}

/// Whose a file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The user's own, for every project: `<home>/AGENTS.md`.
    Global,
    /// A folder of the project, from the repository's top to the working directory.
    Project,
}

/// One instruction file read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionFile {
    /// Whose it is.
    pub scope: Scope,
    /// Where it is, as the model and the user are told: `~/.odek/AGENTS.md`, `../AGENTS.md`,
    /// `./AGENTS.md` (relative to the working directory; the home's with `~`).
    pub label: String,
    /// The file.
    pub path: PathBuf,
    /// Its text, trailing blanks taken off.
    pub text: String,
}

impl InstructionFile {
    /// The file as a leading injection: a system message whose first line says where it is
    /// from. The same file gives the same bytes (the prompt cache holds).
    pub fn message(&self) -> Message {
        let from = match self.scope {
            Scope::Global => format!(
                "the user's own instructions from {}, for every project",
                self.label
            ),
            Scope::Project => format!("project instructions from {}", self.label),
        };
        Message::system(format!(
            "{INJECTION_PREFIX} {from}; follow them where they do not conflict with the system prompt or the user]\n\n{}",
            self.text
        ))
    }
}

/// The chain as read: the files in order (the global one, then from the repository's top
/// down to the working directory) and why others were left out.
#[derive(Debug, Default)]
pub struct Chain {
    /// The files, in the order they are sent.
    pub files: Vec<InstructionFile>,
    /// What was skipped, each to be shown once.
    pub warnings: Vec<InstructionsError>,
}

impl Chain {
    /// One leading injection per file, in order.
    pub fn messages(&self) -> Vec<Message> {
        self.files.iter().map(InstructionFile::message).collect()
    }

    /// The warnings as one value, when there are any (a surface shows it on one line).
    pub fn warning(self) -> Option<Warnings> {
        (!self.warnings.is_empty()).then_some(Warnings(self.warnings))
    }
}

/// Why an instruction file was left out (with a warning).
#[derive(Debug, thiserror::Error)]
pub enum InstructionsError {
    /// It could not be read.
    #[error("{}: {source}", path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A symbolic link (never followed).
    #[error("{} is a symbolic link; not reading it", path.display())]
    Symlink {
        /// The file.
        path: PathBuf,
    },
    /// A folder or a device by that name.
    #[error("{} is not a regular file; not reading it", path.display())]
    NotAFile {
        /// The file.
        path: PathBuf,
    },
    /// Over [`MAX_FILE_BYTES`].
    #[error("{} is {size} bytes, over the {MAX_FILE_BYTES}-byte limit; not reading it", path.display())]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// Its size.
        size: u64,
    },
    /// Binary.
    #[error("{} is not UTF-8 text; not reading it", path.display())]
    NotText {
        /// The file.
        path: PathBuf,
    },
    /// The files together were over `instructions.max_kb`: the farthest were left out.
    #[error("instruction files over instructions.max_kb ({max_kb} KiB) together; left out: {}", left_out.join(", "))]
    OverBudget {
        /// The setting's value.
        max_kb: u64,
        /// The labels of the files left out, farthest first.
        left_out: Vec<String>,
    },
}

impl crate::error::Classified for InstructionsError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            InstructionsError::Unreadable { .. } => crate::error::ErrorKind::Io,
            _ => crate::error::ErrorKind::Config,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            InstructionsError::Unreadable { .. } => None,
            InstructionsError::OverBudget { .. } => Some(
                "shorten the instruction files or raise instructions.max_kb in the global config",
            ),
            _ => Some(
                "an instruction file must be a regular UTF-8 text file under the limit: shorten it or make it one",
            ),
        }
    }
}

/// The warnings of one reading of the chain, shown together (`; ` between them).
#[derive(Debug)]
pub struct Warnings(pub Vec<InstructionsError>);

impl std::fmt::Display for Warnings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, w) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{w}")?;
        }
        Ok(())
    }
}

/// Reads one instruction file: `Ok(None)` when it does not exist or holds only blanks.
/// Never follows a symbolic link; refuses anything but a regular UTF-8 file of at most
/// [`MAX_FILE_BYTES`].
pub fn read_file(path: &Path) -> Result<Option<String>, InstructionsError> {
    let path_buf = || path.to_path_buf();
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(InstructionsError::Unreadable {
                path: path_buf(),
                source,
            });
        }
    };
    if meta.file_type().is_symlink() {
        return Err(InstructionsError::Symlink { path: path_buf() });
    }
    if !meta.is_file() {
        return Err(InstructionsError::NotAFile { path: path_buf() });
    }
    if meta.len() > MAX_FILE_BYTES {
        let size = meta.len();
        return Err(InstructionsError::TooLarge {
            path: path_buf(),
            size,
        });
    }
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(InstructionsError::NotText { path: path_buf() });
        }
        Err(source) => {
            return Err(InstructionsError::Unreadable {
                path: path_buf(),
                source,
            });
        }
    };
    let text = text.trim_end();
    Ok((!text.trim_start().is_empty()).then(|| text.to_string()))
}

/// The names looked for in one folder, in order: `AGENTS.md`, then the fallbacks.
fn candidates(fallbacks: &[String]) -> impl Iterator<Item = &str> {
    std::iter::once(AGENTS_FILE).chain(
        fallbacks
            .iter()
            .map(String::as_str)
            .filter(|name| *name != AGENTS_FILE),
    )
}

/// The instruction file of one folder: `AGENTS.md`, else the first fallback it has. A
/// symbolic link is passed over (the usual `AGENTS.md → CLAUDE.md`): its warning stands only
/// when no later name of the folder is read. Other refusals are warned about and end the
/// search in that folder.
pub fn folder_file(
    dir: &Path,
    fallbacks: &[String],
    warnings: &mut Vec<InstructionsError>,
) -> Option<(PathBuf, String)> {
    let mut links = Vec::new();
    for name in candidates(fallbacks) {
        let path = dir.join(name);
        match read_file(&path) {
            Ok(Some(text)) => return Some((path, text)),
            Ok(None) => {}
            Err(e @ InstructionsError::Symlink { .. }) => links.push(e),
            Err(e) => {
                warnings.extend(links);
                warnings.push(e);
                return None;
            }
        }
    }
    warnings.extend(links);
    None
}

/// `path` as the user sees it: `~/…` under the home directory, else as it is.
fn tilde(path: &Path) -> String {
    if let Some(home) = crate::home::user_home()
        && let Ok(rest) = path.strip_prefix(&home)
    {
        return format!("~/{}", rest.display());
    }
    path.display().to_string()
}

#[cfg(test)]
mod tests;
