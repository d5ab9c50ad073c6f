//! The chain read when a session starts: `<home>/AGENTS.md`, then each folder from the
//! repository's top down to the working directory, capped at `instructions.max_kb`.

use std::path::Path;

use super::{
    AGENTS_FILE, Chain, ChainOptions, InstructionFile, InstructionsError, Scope, folder_file,
    read_file, tilde,
};

/// The repository's top folder: the nearest folder at or above `cwd` that holds `.git` (a
/// folder, or the file of a linked work tree or a submodule); `None` outside a repository.
pub fn repository_top(cwd: &Path) -> Option<&Path> {
    cwd.ancestors()
        .find(|dir| std::fs::symlink_metadata(dir.join(".git")).is_ok())
}

/// The folders whose files are read, from the repository's top (else `cwd` alone) down to
/// `cwd`, each with how many levels it is above `cwd`.
fn folders(cwd: &Path) -> Vec<(&Path, usize)> {
    let top = repository_top(cwd).unwrap_or(cwd);
    let mut out: Vec<(&Path, usize)> = cwd
        .ancestors()
        .enumerate()
        .take_while(|(_, dir)| dir.starts_with(top))
        .map(|(up, dir)| (dir, up))
        .collect();
    out.reverse();
    out
}

/// A file `up` levels above the working directory, named as the model sees it: `./AGENTS.md`,
/// `../AGENTS.md`, `../../CLAUDE.md`.
fn relative_label(up: usize, name: &str) -> String {
    if up == 0 {
        format!("./{name}")
    } else {
        format!("{}{name}", "../".repeat(up))
    }
}

/// Reads the chain (see the module's doc): the files in order, each at most 256 KiB, all
/// together at most `max_bytes` — past it the files nearest the working directory are kept
/// and one warning names the others.
pub fn discover(opts: &ChainOptions<'_>) -> Chain {
    let mut warnings = Vec::new();
    let mut files = Vec::new();
    let global = opts.home.join(AGENTS_FILE);
    match read_file(&global) {
        Ok(Some(text)) => files.push(InstructionFile {
            scope: Scope::Global,
            label: tilde(&global),
            path: global.clone(),
            text,
        }),
        Ok(None) => {}
        Err(e) => warnings.push(e),
    }
    for (dir, up) in folders(opts.cwd) {
        let Some((path, text)) = folder_file(dir, opts.fallbacks, &mut warnings) else {
            continue;
        };
        if path == global {
            continue;
        }
        let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
        files.push(InstructionFile {
            scope: Scope::Project,
            label: relative_label(up, name.as_deref().unwrap_or(AGENTS_FILE)),
            path,
            text,
        });
    }
    let (files, left_out) = within_budget(files, opts.max_bytes);
    if !left_out.is_empty() {
        warnings.push(InstructionsError::OverBudget {
            max_kb: opts.max_bytes / 1024,
            left_out,
        });
    }
    Chain { files, warnings }
}

/// The files that fit `max_bytes` together, the nearest (last) first: a file that does not
/// fit is left out and a farther, smaller one may still fit. The labels of those left out,
/// farthest first.
fn within_budget(
    files: Vec<InstructionFile>,
    max_bytes: u64,
) -> (Vec<InstructionFile>, Vec<String>) {
    let mut used = 0u64;
    let mut kept = Vec::new();
    let mut left_out = Vec::new();
    for file in files.into_iter().rev() {
        let size = file.text.len() as u64;
        if used + size <= max_bytes {
            used += size;
            kept.push(file);
        } else {
            left_out.push(file.label);
        }
    }
    kept.reverse();
    left_out.reverse();
    (kept, left_out)
}

/// The folders of the chain as paths (for tests and listings).
#[cfg(test)]
pub(super) fn folder_paths(cwd: &Path) -> Vec<std::path::PathBuf> {
    folders(cwd)
        .into_iter()
        .map(|(d, _)| d.to_path_buf())
        .collect()
}
