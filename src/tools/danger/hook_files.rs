//! The files trusted project hooks run (`.odek/hooks.json`, the scripts its commands name,
//! `.claude/hooks/`): a write to one changes what runs outside the model's reach, so it is
//! persistence, like a write to `.git/hooks/`. The runtime registers them when it keeps a
//! project's trusted hooks (see `runtime::project_hooks`); the classifier, a pure function
//! of the command, reads them here.

use std::path::{Path, PathBuf};
use std::sync::{PoisonError, RwLock};

use super::paths::{Anchor, NormalPath, normalize};

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
        let Ok(relative) = path.strip_prefix(root) else {
            continue;
        };
        let relative = normalize(&relative.display().to_string());
        if relative.escapes || relative.segments.is_empty() {
            continue;
        }
        for root in &roots {
            let entry = Guarded {
                full: normalize(&root.display().to_string())
                    .segments
                    .into_iter()
                    .chain(relative.segments.iter().cloned())
                    .collect(),
                relative: relative.segments.clone(),
            };
            if !guarded.contains(&entry) {
                guarded.push(entry);
            }
        }
    }
}

/// Why a write to `path` is persistence, when a trusted project hook runs it. A relative
/// path (a shell command's, in the project) is matched against the project's own paths.
pub(super) fn reason(path: &NormalPath) -> Option<String> {
    let guarded = GUARDED.read().unwrap_or_else(PoisonError::into_inner);
    let hit = guarded.iter().any(|g| match path.anchor {
        Anchor::Root => path.segments.starts_with(&g.full),
        Anchor::Relative => !path.escapes && path.segments.starts_with(&g.relative),
        Anchor::Home => false,
    });
    hit.then(|| {
        format!(
            "writes {}, which a trusted project hook runs",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_guarded_script_and_what_lies_under_a_guarded_folder_are_persistence() {
        let root = Path::new("/nonexistent-odek-test/project");
        protect(
            root,
            &[
                root.join("scripts/guard.sh"),
                root.join(".claude/hooks"),
                PathBuf::from("/elsewhere/x.sh"),
            ],
        );
        for hit in [
            "/nonexistent-odek-test/project/scripts/guard.sh",
            "scripts/guard.sh",
            "./scripts/../scripts/guard.sh",
            ".claude/hooks/pre.py",
            "/nonexistent-odek-test/project/.claude/hooks/a/b",
        ] {
            assert!(reason(&normalize(hit)).is_some(), "{hit}");
        }
        for miss in [
            "scripts/guard.sh.bak",
            "scripts/other.sh",
            "/nonexistent-odek-test/other/scripts/guard.sh",
            "../scripts/guard.sh",
            "/elsewhere/x.sh",
            ".claude/settings.local.json",
        ] {
            assert!(reason(&normalize(miss)).is_none(), "{miss}");
        }
    }
}
