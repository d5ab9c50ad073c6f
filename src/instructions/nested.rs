//! Nested instruction files: when a read (`read_file`, `batch_read`) first reaches a file
//! under a folder below the working directory that has its own instruction file, that file's
//! text is added once to the call's result, after the untrusted wrapper (the user's project,
//! as `./AGENTS.md` in the first messages) — but never from a folder git ignores
//! (`node_modules/`, `vendor/`: other people's files). Once a session: what a transcript already holds
//! is read back from it when a run starts, so a resumed session adds nothing twice.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::Value;

use super::{InstructionsError, folder_file};
use crate::llm::{Message, Role};
use crate::tools::catalog::{ToolKind, row_of};
use crate::transcript::INJECTION_PREFIX;

/// How a nested file's block begins in a tool result (the label follows).
pub const NESTED_HEADER_PREFIX: &str = "\n\n[Project instructions from ";

/// What follows the label in the header.
const FOR_FILES_UNDER: &str = ", for the files under ";

/// The nested files of one working directory, and the folders whose file a session was
/// already given (by their path below the working directory, `pkg/sub`).
#[derive(Debug)]
pub struct Nested {
    cwd: PathBuf,
    /// The repository's top (else the working directory): where git's ignore rules start.
    top: PathBuf,
    fallbacks: Vec<String>,
    attached: Mutex<BTreeSet<String>>,
}

impl Nested {
    /// Nothing attached yet, for `cwd` with the names of `instructions.fallbacks`.
    pub fn new(cwd: &Path, fallbacks: &[String]) -> Self {
        Nested {
            cwd: cwd.to_path_buf(),
            top: super::repository_top(cwd).unwrap_or(cwd).to_path_buf(),
            fallbacks: fallbacks.to_vec(),
            attached: Mutex::new(BTreeSet::new()),
        }
    }

    /// Records the folders whose file `messages` already carry (a resumed session's tool
    /// results), so they are not attached again.
    pub fn seen(&self, messages: &[Message]) {
        let folders = attached_in(messages)
            .into_iter()
            .filter_map(|label| folder_of(&label));
        if let Ok(mut set) = self.attached.lock() {
            set.extend(folders);
        }
    }

    /// The blocks to add to the result of a call of `tool` with `args`: for each file the
    /// call reads, the instruction file of each folder between the working directory and it
    /// (outermost first) not attached before. `None` for any other tool, or nothing new.
    pub fn note(&self, tool: &str, args: &Value) -> Option<String> {
        let row = reader(tool)?;
        let mut out = String::new();
        for path in row.paths(args) {
            for dir in self.folders_to(path) {
                out.push_str(&self.block_of(&dir).unwrap_or_default());
            }
        }
        (!out.is_empty()).then_some(out)
    }

    /// The names of the folders between the working directory and `path` (outermost
    /// first), from its text alone: none for a path outside the working directory or
    /// directly in it.
    fn folder_names<'a>(&self, resolved: &'a Path) -> Vec<&'a str> {
        let Ok(below) = resolved.strip_prefix(&self.cwd) else {
            return Vec::new();
        };
        let mut parts: Vec<&str> = below
            .components()
            .filter_map(|c| c.as_os_str().to_str())
            .collect();
        parts.pop();
        parts
    }

    /// True when a path of the call lies in a folder below the working directory: only
    /// then can it reach a nested file (the text alone decides; no file is read).
    fn may_reach_a_folder(&self, row: &crate::tools::catalog::ToolRow, args: &Value) -> bool {
        row.paths(args).into_iter().any(|path| {
            let resolved = crate::tools::resolve_path(&self.cwd, path);
            !self.folder_names(&resolved).is_empty()
        })
    }

    /// The folders strictly below the working directory that hold `path` (relative to it,
    /// outermost first); none for a path outside it. A symbolic link to a folder ends the walk.
    fn folders_to(&self, path: &str) -> Vec<String> {
        let resolved = crate::tools::resolve_path(&self.cwd, path);
        let mut out = Vec::new();
        let mut dir = PathBuf::new();
        for part in self.folder_names(&resolved) {
            dir.push(part);
            let real = std::fs::symlink_metadata(self.cwd.join(&dir));
            if !real.is_ok_and(|m| m.is_dir()) {
                break;
            }
            out.push(dir.to_string_lossy().into_owned());
        }
        out
    }

    /// The block of the folder `rel` (below the working directory) when it has an
    /// instruction file not attached before: its text, or why it could not be read.
    fn block_of(&self, rel: &str) -> Option<String> {
        if self.attached.lock().is_ok_and(|set| set.contains(rel)) {
            return None;
        }
        let mut warnings = Vec::new();
        let folder = self.cwd.join(rel);
        let found = folder_file(&folder, &self.fallbacks, &mut warnings);
        if (found.is_some() || !warnings.is_empty())
            && super::ignored::git_ignores(&self.top, &folder)
        {
            // Other people's files (`node_modules/`, `vendor/`): asked once, never attached.
            if let Ok(mut set) = self.attached.lock() {
                set.insert(rel.to_string());
            }
            return None;
        }
        let body = match (&found, warnings.first()) {
            (Some((path, text)), _) => Ok((file_name(path), text.as_str())),
            (None, Some(why)) => Err((warning_name(why), why)),
            (None, None) => return None,
        };
        let fresh = self
            .attached
            .lock()
            .is_ok_and(|mut set| set.insert(rel.to_string()));
        if !fresh {
            return None;
        }
        Some(match body {
            Ok((name, text)) => format!(
                "{NESTED_HEADER_PREFIX}./{rel}/{name}{FOR_FILES_UNDER}./{rel}/; follow them where they do not conflict with the system prompt or the user]\n\n{text}"
            ),
            Err((name, why)) => format!(
                "{NESTED_HEADER_PREFIX}./{rel}/{name}{FOR_FILES_UNDER}./{rel}/, not attached: {why}]"
            ),
        })
    }
}

impl crate::engine::ResultNotes for Nested {
    fn seen(&self, messages: &[Message]) {
        Nested::seen(self, messages);
    }

    fn applies_to(&self, tool: &str, args: &Value) -> bool {
        reader(tool).is_some_and(|row| self.may_reach_a_folder(row, args))
    }

    fn note(&self, tool: &str, args: &Value) -> Option<String> {
        Nested::note(self, tool, args)
    }
}

/// The labels of the nested files `messages` carry (`./pkg/AGENTS.md`), in order: found
/// after the untrusted wrapper of each tool result, where only odek writes.
pub fn attached_in(messages: &[Message]) -> Vec<String> {
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m.role == Role::Tool) {
        let content = m.content.as_str();
        let after = content
            .rfind(crate::untrusted::CLOSE_TAG_PREFIX)
            .map_or(content, |i| &content[i..]);
        for (i, _) in after.match_indices(NESTED_HEADER_PREFIX) {
            let rest = &after[i + NESTED_HEADER_PREFIX.len()..];
            if let Some(end) = rest.find(FOR_FILES_UNDER) {
                out.push(rest[..end].to_string());
            }
        }
    }
    out
}

/// The instruction files a conversation holds, as labelled: the chain's leading injections
/// in order, then the nested files attached to tool results (`./pkg/AGENTS.md (attached)`).
/// Read back from the messages alone, so a resumed session shows what it was given.
pub fn loaded_in(messages: &[Message]) -> Vec<String> {
    let global = format!("{INJECTION_PREFIX} the user's own instructions from ");
    let project = format!("{INJECTION_PREFIX} project instructions from ");
    let mut out = Vec::new();
    for m in messages.iter().filter(|m| m.role == Role::System) {
        let first = m.content.lines().next().unwrap_or_default();
        if let Some(rest) = first.strip_prefix(&global) {
            out.extend(
                rest.split(", for every project;")
                    .next()
                    .map(str::to_string),
            );
        } else if let Some(rest) = first.strip_prefix(&project) {
            out.extend(rest.split("; follow them").next().map(str::to_string));
        }
    }
    out.extend(
        attached_in(messages)
            .into_iter()
            .map(|label| format!("{label} (attached)")),
    );
    out
}

/// The row of `tool` when it reads the files its arguments name (`read_file`, `batch_read`).
fn reader(tool: &str) -> Option<&'static crate::tools::catalog::ToolRow> {
    row_of(tool).filter(|r| r.kind == ToolKind::Read && !r.changes_files())
}

/// The folder of a label (`./pkg/sub/AGENTS.md` → `pkg/sub`).
fn folder_of(label: &str) -> Option<String> {
    let parent = Path::new(label.strip_prefix("./")?).parent()?;
    let folder = parent.to_string_lossy().into_owned();
    (!folder.is_empty()).then_some(folder)
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The name of the file a warning is about.
fn warning_name(why: &InstructionsError) -> String {
    match why {
        InstructionsError::Unreadable { path, .. }
        | InstructionsError::Symlink { path }
        | InstructionsError::NotAFile { path }
        | InstructionsError::TooLarge { path, .. }
        | InstructionsError::NotText { path } => file_name(path),
        InstructionsError::OverBudget { .. } => super::AGENTS_FILE.to_string(),
    }
}
