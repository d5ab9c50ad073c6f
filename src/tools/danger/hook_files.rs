//! The files trusted project hooks run (`.odek/hooks.json`, the scripts its commands name,
//! `.claude/hooks/`): a write to one changes what runs outside the model's reach, so it is
//! persistence, like a write to `.git/hooks/`. The runtime registers them when it keeps a
//! project's trusted hooks (see `runtime::project_hooks`); the classifier, a pure function
//! of the command, reads them here.

use std::path::{Component, Path, PathBuf};
use std::sync::{PoisonError, RwLock};

/// One guarded file or folder: its segments from the root, and from its project.
#[derive(PartialEq, Eq)]
struct Guarded {
    full: Vec<String>,
    relative: Vec<String>,
}

/// Every guarded path of this process (a server may hold several projects).
static GUARDED: RwLock<Vec<Guarded>> = RwLock::new(Vec::new());

/// Marks `paths` (absolute, beneath the project folder `root`) — files, or folders with
/// everything beneath them — as run by a trusted project hook: writing them is
/// persistence. A path outside `root` is ignored.
pub fn protect(root: &Path, paths: &[PathBuf]) {
    let mut roots = vec![root.to_path_buf()];
    roots.extend(root.canonicalize().ok().filter(|real| real != root));
    let mut guarded = GUARDED.write().unwrap_or_else(PoisonError::into_inner);
    for path in paths {
        let Some(relative) = path.strip_prefix(root).ok().and_then(segments) else {
            continue;
        };
        for root in &roots {
            let Some(mut full) = segments(root) else {
                continue;
            };
            full.extend(relative.iter().cloned());
            let entry = Guarded {
                full,
                relative: relative.clone(),
            };
            if !guarded.contains(&entry) {
                guarded.push(entry);
            }
        }
    }
}

/// The named parts of `path`, `.` and `..` taken out; `None` when it climbs above its
/// start or names nothing.
fn segments(path: &Path) -> Option<Vec<String>> {
    let mut out: Vec<String> = Vec::new();
    for part in path.components() {
        match part {
            Component::Normal(name) => out.push(name.to_string_lossy().into_owned()),
            Component::ParentDir => {
                out.pop()?;
            }
            Component::CurDir | Component::RootDir | Component::Prefix(_) => {}
        }
    }
    (!out.is_empty()).then_some(out)
}

/// Whether a trusted project hook runs the file at `segments` (normalised): from the root
/// when `rooted`, else relative to a project (a shell command's path, in the project).
pub(super) fn runs(segments: &[String], rooted: bool) -> bool {
    let guarded = GUARDED.read().unwrap_or_else(PoisonError::into_inner);
    guarded.iter().any(|g| {
        let guarded = if rooted { &g.full } else { &g.relative };
        segments.starts_with(guarded)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the classifier asks for `text`: rooted or relative, already normalised.
    fn reason(text: &str) -> bool {
        let rooted = text.starts_with('/');
        segments(Path::new(text)).is_some_and(|parts| runs(&parts, rooted))
    }

    #[test]
    fn a_guarded_script_and_what_lies_under_a_guarded_folder_are_persistence() {
        let root = Path::new("/nonexistent-odek-test/project");
        protect(
            root,
            &[
                root.join("h60-test-scripts/guard.sh"),
                root.join(".h60-test-hooks"),
                PathBuf::from("/elsewhere/x.sh"),
            ],
        );
        for hit in [
            "/nonexistent-odek-test/project/h60-test-scripts/guard.sh",
            "h60-test-scripts/guard.sh",
            ".h60-test-hooks/pre.py",
            "/nonexistent-odek-test/project/.h60-test-hooks/a/b",
        ] {
            assert!(reason(hit), "{hit}");
        }
        for miss in [
            "h60-test-scripts/guard.sh.bak",
            "h60-test-scripts/other.sh",
            "/nonexistent-odek-test/other/h60-test-scripts/guard.sh",
            "/elsewhere/x.sh",
            ".h60-test-settings.json",
        ] {
            assert!(!reason(miss), "{miss}");
        }
    }
}
