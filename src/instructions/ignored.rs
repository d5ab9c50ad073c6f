//! Folders git ignores: what the repository's `.gitignore` files (and `.git/info/exclude`)
//! leave out — `node_modules/`, `vendor/`, build output — holds other people's files, so an
//! instruction file there is not the project's and is never attached to a read.

use std::path::Path;

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

/// True when git would ignore `folder` (a folder below `top`): the rules of `top`'s
/// `.git/info/exclude`, then of each `.gitignore` from `top` down to `folder`'s parent, the
/// deepest rule that matches `folder` or a folder above it deciding, as in git. A rule file
/// that cannot be read counts as absent.
pub(super) fn git_ignores(top: &Path, folder: &Path) -> bool {
    if !folder.starts_with(top) || folder == top {
        return false;
    }
    let mut verdict = false;
    for rules in rule_files(top, folder) {
        match rules.matched_path_or_any_parents(folder, true) {
            Match::Ignore(_) => verdict = true,
            Match::Whitelist(_) => verdict = false,
            Match::None => {}
        }
    }
    verdict
}

/// The rule files that apply to `folder`, least precise first.
fn rule_files(top: &Path, folder: &Path) -> Vec<Gitignore> {
    let mut exclude = GitignoreBuilder::new(top);
    let _unreadable = exclude.add(top.join(".git/info/exclude"));
    let mut files: Vec<Gitignore> = exclude.build().into_iter().collect();
    let mut parents: Vec<&Path> = folder
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(top))
        .collect();
    parents.reverse();
    for dir in parents {
        let path = dir.join(".gitignore");
        if path.is_file() {
            files.push(Gitignore::new(&path).0);
        }
    }
    files
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ignored_folders_and_their_sub_folders_are_found_and_a_deeper_rule_wins() {
        let dir = tempfile::tempdir().expect("temp");
        let top = dir.path();
        std::fs::create_dir_all(top.join(".git/info")).expect("git");
        std::fs::write(top.join(".gitignore"), "node_modules/\nbuild\n").expect("w");
        std::fs::write(top.join(".git/info/exclude"), "scratch/\n").expect("w");
        std::fs::create_dir_all(top.join("web/gen")).expect("web");
        std::fs::write(top.join("web/.gitignore"), "gen/\n!build\n").expect("w");
        let ignored = |rel: &str| git_ignores(top, &top.join(rel));
        assert!(ignored("node_modules"));
        assert!(ignored("node_modules/pkg/lib"));
        assert!(ignored("web/node_modules/pkg"));
        assert!(ignored("scratch/notes"));
        assert!(ignored("web/gen"));
        assert!(ignored("build"));
        assert!(!ignored("web/build"), "a deeper `!build` lets it back in");
        assert!(!ignored("src/lib"));
        assert!(!ignored("web"));
        assert!(!git_ignores(top, top));
        assert!(
            !git_ignores(&top.join("web"), top),
            "a folder outside is not judged"
        );
    }
}
