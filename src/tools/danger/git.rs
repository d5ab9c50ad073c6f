//! The rules for `git`: its reading and writing subcommands, the configuration it may be
//! given (`-c`, `git config`), and the commands it runs (`rebase --exec`, `bisect run`,
//! aliases).

use super::analyzer::{Analyzer, Context, Worst, join_words, safe, write_target};
use super::options::{self, OptionSpec};
use super::syntax::Word;
use crate::danger_policy::classified;
use crate::danger_policy::{Classification, DangerClass};

/// Git subcommands that only read.
const GIT_READ_ONLY: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "ls-tree",
    "blame",
    "annotate",
    "shortlog",
    "describe",
    "cat-file",
    "rev-list",
    "whatchanged",
    "show-ref",
    "for-each-ref",
    "name-rev",
    "merge-base",
    "count-objects",
    "version",
    "help",
    "check-ignore",
    "check-attr",
    "check-ref-format",
    "var",
    "cherry",
    "range-diff",
    "diff-tree",
    "diff-files",
    "diff-index",
    "verify-commit",
    "verify-tag",
    "show-branch",
    "fsck",
    "request-pull",
];

/// Git subcommands that change only the local repository or working tree.
const GIT_LOCAL_WRITE: &[&str] = &[
    "add",
    "commit",
    "merge",
    "cherry-pick",
    "revert",
    "am",
    "apply",
    "mv",
    "rm",
    "init",
    "notes",
    "worktree",
    "sparse-checkout",
    "gc",
    "prune",
    "repack",
    "pack-refs",
    "maintenance",
    "update-index",
    "read-tree",
    "write-tree",
    "commit-tree",
    "symbolic-ref",
    "replace",
    "format-patch",
    "archive",
    "bundle",
    "rerere",
    "hash-object",
    "mktag",
    "mktree",
    "stripspace",
];

/// The git configuration keys a command may set without asking more than a local write:
/// none of them names a program, a file to include, a path, a URL or a protocol, so none
/// can make a later `git status` (the user's, or the editor's) run anything. Every other
/// key may: `core.fsmonitor`, `include.path` (whose file then sets anything),
/// `includeIf.*.path`, merge and diff drivers, `remote.*.uploadpack`, `submodule.*.update`,
/// `protocol.*.allow`, aliases, pagers, hooks — a list of the risky ones would never be
/// complete. `advice.*` only silences hints.
const HARMLESS_GIT_CONFIG_KEYS: &[&str] = &[
    "user.name",
    "user.email",
    "init.defaultbranch",
    "core.autocrlf",
    "core.quotepath",
    "color.ui",
    "pull.rebase",
];

/// True for a key (or `key=value`, as `git -c` takes it) of [`HARMLESS_GIT_CONFIG_KEYS`] or
/// `advice.*`; section and variable names are case-insensitive in git.
fn is_harmless_git_config(key_and_value: &str) -> bool {
    let key = key_and_value
        .split('=')
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    HARMLESS_GIT_CONFIG_KEYS.contains(&key.as_str())
        || key
            .strip_prefix("advice.")
            .is_some_and(|rest| !rest.is_empty() && !rest.contains('.'))
}

impl Analyzer {
    /// `git`: its global options (`-c`, `-C`, `--exec-path`, …), then its subcommand.
    pub(super) fn git(&mut self, args: &[Word], context: &Context) -> Classification {
        let mut result = Worst::default();
        // The directories `-C`, `--git-dir` and `--work-tree` point the command at: a
        // subcommand that writes, writes there.
        let mut places: Vec<Word> = Vec::new();
        let mut index = 0;
        while let Some(word) = args.get(index) {
            let text = word.text.as_str();
            if let Some((_, value)) = text
                .split_once('=')
                .filter(|(option, _)| matches!(*option, "--git-dir" | "--work-tree"))
            {
                places.push(if word.dynamic {
                    Word::dynamic(value)
                } else {
                    Word::literal(value)
                });
                index += 1;
                continue;
            }
            match text {
                "-c" => {
                    if !args
                        .get(index + 1)
                        .is_some_and(|kv| is_harmless_git_config(&kv.text))
                    {
                        result.add(classified(
                            DangerClass::CodeExecution,
                            "git -c sets a key that may run a program",
                        ));
                    }
                    index += 2;
                }
                "-C" | "--git-dir" | "--work-tree" => {
                    places.extend(args.get(index + 1).cloned());
                    index += 2;
                }
                "--namespace" | "--super-prefix" => {
                    index += 2;
                }
                _ if text.starts_with("--exec-path=") || text.starts_with("--config-env") => {
                    result.add(classified(
                        DangerClass::CodeExecution,
                        "git runs programs from a chosen path",
                    ));
                    index += 1;
                }
                _ if text.starts_with('-') => index += 1,
                _ => break,
            }
        }
        let Some(subcommand) = args.get(index) else {
            return result.or_safe("git without a subcommand only prints help");
        };
        if subcommand.dynamic {
            result.add(classified(
                DangerClass::Unknown,
                "the git subcommand is only known at run time",
            ));
            return result.or_safe("");
        }
        let rest = args.get(index + 1..).unwrap_or(&[]);
        let runs_remote_program = rest.iter().any(|word| {
            ["--upload-pack", "--receive-pack", "--exec="]
                .iter()
                .any(|prefix| word.text.starts_with(prefix))
        });
        if runs_remote_program {
            result.add(classified(
                DangerClass::CodeExecution,
                "git runs a chosen pack program",
            ));
        }
        if let Some(found) = git_new_repository_setup(&subcommand.text, rest) {
            result.add(found);
        }
        let done = self.git_subcommand(&subcommand.text, rest, context);
        if done.class > DangerClass::Safe {
            for place in &places {
                result.add(write_target(place, context));
            }
        }
        result.add(done);
        result.or_safe("")
    }

    fn git_subcommand(
        &mut self,
        subcommand: &str,
        rest: &[Word],
        context: &Context,
    ) -> Classification {
        let line = options::parse(rest, OptionSpec::new("", &[]));
        let local = |reason: &str| classified(DangerClass::LocalWrite, format!("git {reason}"));
        let destructive =
            |reason: &str| classified(DangerClass::Destructive, format!("git {reason}"));
        match subcommand {
            "grep" if line.has('O', "open-files-in-pager") => classified(
                DangerClass::CodeExecution,
                "git grep -O runs a pager program",
            ),
            _ if GIT_READ_ONLY.contains(&subcommand) => git_read_only(subcommand, rest, context),
            "grep" => safe("git grep only reads"),
            "branch" => git_branch(&line),
            "tag" => {
                if line.operands.is_empty() || line.has('l', "list") || line.has('v', "verify") {
                    safe("git tag lists tags")
                } else {
                    local("tag changes tags")
                }
            }
            "remote" => git_remote(&line),
            "config" => git_config(rest, context),
            "stash" => match line.operands.first().map(|w| w.text.as_str()) {
                Some("list" | "show") => safe("git stash list only reads"),
                Some("drop" | "clear") => destructive("stash drop/clear discards stashed work"),
                _ => local("stash saves changes"),
            },
            "reset" if line.has_long("hard") || line.has_long("merge") => {
                destructive("reset --hard discards uncommitted changes")
            }
            "reset" => local("reset moves the branch"),
            "clean" if line.has('f', "force") => destructive("clean -f deletes untracked files"),
            "clean" if line.has('n', "dry-run") => safe("git clean -n only lists"),
            "clean" => local("clean"),
            "checkout" if line.has('f', "force") || discards_all(&line) => {
                destructive("checkout discards uncommitted changes")
            }
            "restore" if discards_all(&line) && !line.has('S', "staged") => {
                destructive("restore discards uncommitted changes")
            }
            "switch" if line.has('f', "force") || line.has_long("discard-changes") => {
                destructive("switch discards uncommitted changes")
            }
            "checkout" | "switch" | "restore" => {
                local(&format!("{subcommand} changes the working tree"))
            }
            "rebase" => self.git_rebase(rest, context),
            "reflog" => match line.operands.first().map(|w| w.text.as_str()) {
                Some("expire" | "delete") => destructive("reflog expire/delete discards history"),
                _ => safe("git reflog only reads"),
            },
            "update-ref" if line.has_short('d') => destructive("update-ref -d deletes a ref"),
            "update-ref" => local("update-ref moves a ref"),
            "filter-branch" | "filter-repo" => destructive("rewrites the whole history"),
            _ if GIT_LOCAL_WRITE.contains(&subcommand) => {
                local(&format!("{subcommand} changes the repository"))
            }
            "fetch" | "pull" | "clone" | "ls-remote" => classified(
                DangerClass::NetworkEgress,
                format!("git {subcommand} downloads from a remote"),
            ),
            "push" => git_push(&line),
            "send-email" | "daemon" => classified(
                DangerClass::NetworkUpload,
                format!("git {subcommand} sends data out"),
            ),
            "submodule" => self.git_submodule(rest, context),
            "bisect" => self.git_bisect(rest, context),
            "lfs" => match line.operands.first().map(|w| w.text.as_str()) {
                Some("push") => classified(DangerClass::NetworkUpload, "git lfs push uploads"),
                Some("pull" | "fetch" | "clone") => {
                    classified(DangerClass::NetworkEgress, "git lfs downloads")
                }
                _ => local("lfs changes the repository"),
            },
            "difftool" | "mergetool" | "gui" | "citool" | "instaweb" => classified(
                DangerClass::CodeExecution,
                format!("git {subcommand} runs an external program"),
            ),
            _ => classified(
                DangerClass::Unknown,
                format!("unknown git subcommand {subcommand} (aliases are not resolved)"),
            ),
        }
    }

    fn git_rebase(&mut self, rest: &[Word], context: &Context) -> Classification {
        let line = options::parse(rest, OptionSpec::new("x", &["exec"]));
        let mut result = classified(DangerClass::LocalWrite, "git rebase rewrites commits");
        for command in line.values('x', "exec") {
            result = result
                .worse(classified(
                    DangerClass::CodeExecution,
                    "git rebase --exec runs commands",
                ))
                .worse(self.script(&command.text, context.depth + 1, context.cwd, &[]));
        }
        result
    }

    fn git_submodule(&mut self, rest: &[Word], context: &Context) -> Classification {
        let line = options::parse(rest, OptionSpec::new("", &[]));
        let Some(action) = line.operands.first() else {
            return safe("git submodule lists submodules");
        };
        match action.text.as_str() {
            "status" | "summary" => safe("git submodule status only reads"),
            "foreach" => {
                let position = rest.iter().position(|w| w.text == "foreach").unwrap_or(0);
                let command = join_words(rest.get(position + 1..).unwrap_or(&[]));
                classified(
                    DangerClass::CodeExecution,
                    "git submodule foreach runs commands",
                )
                .worse(self.script(&command, context.depth + 1, context.cwd, &[]))
            }
            "update" | "add" | "init" | "sync" => classified(
                DangerClass::NetworkEgress,
                "git submodule downloads from remotes",
            ),
            _ => classified(
                DangerClass::LocalWrite,
                "git submodule changes the repository",
            ),
        }
    }

    fn git_bisect(&mut self, rest: &[Word], context: &Context) -> Classification {
        match rest.split_first() {
            Some((action, command)) if action.text == "run" => {
                classified(DangerClass::CodeExecution, "git bisect run runs a command")
                    .worse(self.wrapped_command(command, context))
            }
            _ => classified(DangerClass::LocalWrite, "git bisect moves the working tree"),
        }
    }
}

/// `git checkout .`, `git checkout -- .`, `git restore .`: the whole tree reverts.
fn discards_all(line: &options::CommandLine) -> bool {
    line.operands
        .iter()
        .any(|word| matches!(word.text.as_str(), "." | "./" | ":/" | "*"))
}

/// Options of git's reading subcommands that run programs configured for the repository
/// (diff drivers, text conversion filters): a cloned repository's `.git/config` may name
/// anything.
const GIT_DRIVER_OPTIONS: &[&str] = &["--ext-diff", "--textconv", "--filters"];

/// A reading git subcommand (`log`, `diff`, `show`, …) is safe unless an option makes it
/// write (`--output=PATH`, `fsck --lost-found`) or run the repository's drivers.
fn git_read_only(subcommand: &str, rest: &[Word], context: &Context) -> Classification {
    let mut result = Worst::default();
    for (index, word) in rest.iter().enumerate() {
        let text = word.text.as_str();
        if text == "--" {
            break;
        }
        if GIT_DRIVER_OPTIONS.contains(&text) {
            result.add(classified(
                DangerClass::CodeExecution,
                format!("git {subcommand} {text} runs the drivers the repository configures"),
            ));
        } else if text == "--output" {
            if let Some(target) = rest.get(index + 1) {
                result.add(write_target(target, context));
            }
        } else if let Some(target) = text.strip_prefix("--output=") {
            result.add(write_target(&word.with_text(target), context));
        } else if text == "--lost-found" {
            result.add(classified(
                DangerClass::LocalWrite,
                "git fsck --lost-found writes into .git",
            ));
        }
    }
    result.or_safe(&format!("git {subcommand} only reads"))
}

fn git_branch(line: &options::CommandLine) -> Classification {
    let listing = ['l', 'a', 'r', 'v']
        .iter()
        .any(|flag| line.has_short(*flag))
        || [
            "list",
            "show-current",
            "contains",
            "merged",
            "no-merged",
            "points-at",
            "all",
            "remotes",
        ]
        .iter()
        .any(|long| line.has_long(long));
    if line.has_short('D') || (line.has('d', "delete") && line.has('f', "force")) {
        return classified(
            DangerClass::Destructive,
            "git branch -D deletes a branch even when unmerged",
        );
    }
    let changes = ['d', 'm', 'M', 'c', 'C', 'u']
        .iter()
        .any(|flag| line.has_short(*flag))
        || [
            "delete",
            "move",
            "copy",
            "set-upstream-to",
            "unset-upstream",
            "edit-description",
        ]
        .iter()
        .any(|long| line.has_long(long));
    if changes || (!listing && !line.operands.is_empty()) {
        return classified(DangerClass::LocalWrite, "git branch changes branches");
    }
    safe("git branch lists branches")
}

fn git_remote(line: &options::CommandLine) -> Classification {
    match line.operands.first().map(|w| w.text.as_str()) {
        None | Some("show" | "get-url") => safe("git remote only reads"),
        Some("update") => classified(DangerClass::NetworkEgress, "git remote update fetches"),
        Some(_) => classified(DangerClass::LocalWrite, "git remote changes remotes"),
    }
}

/// `git init`/`git clone` with `--template` (whose hooks and config are copied into the new
/// `.git`) or `clone -c`/`--config` of any key but the harmless ones: the new repository's
/// configuration is written, as by `git config` — persistence.
fn git_new_repository_setup(subcommand: &str, rest: &[Word]) -> Option<Classification> {
    if !matches!(subcommand, "init" | "clone") {
        return None;
    }
    let line = options::parse(rest, OptionSpec::new("c", &["config", "template"]));
    let configured = subcommand == "clone"
        && line
            .values('c', "config")
            .any(|pair| !is_harmless_git_config(&pair.text));
    (configured || line.has_long("template")).then(|| {
        classified(
            DangerClass::Persistence,
            format!("git {subcommand} writes the new repository's hooks or configuration"),
        )
    })
}

/// `git config`: reading is safe; writing a key of [`HARMLESS_GIT_CONFIG_KEYS`] is a local
/// write (outside the repository with `--global`/`--system`, and a write to the file named by
/// `--file`); every other write — set, add, replace, unset, a section renamed or removed,
/// `edit` — is persistence: the repository's configuration decides what programs git runs.
fn git_config(args: &[Word], context: &Context) -> Classification {
    let line = options::parse(
        args,
        OptionSpec::new(
            "f",
            &["file", "blob", "type", "default", "comment", "value", "url"],
        ),
    );
    let operands: Vec<&str> = line.operands.iter().map(|w| w.text.as_str()).collect();
    let (subcommand, keys) = match operands.split_first() {
        Some((&("get" | "list"), _)) => return safe("git config only reads"),
        Some((&name @ ("set" | "unset" | "rename-section" | "remove-section" | "edit"), keys)) => {
            (Some(name), keys)
        }
        _ => (None, operands.as_slice()),
    };
    let reads = [
        "get",
        "get-all",
        "get-regexp",
        "get-urlmatch",
        "get-color",
        "get-colorbool",
        "list",
    ]
    .iter()
    .any(|long| line.has_long(long))
        || line.has_short('l');
    let legacy_write = [
        "add",
        "replace-all",
        "unset",
        "unset-all",
        "rename-section",
        "remove-section",
        "edit",
    ]
    .iter()
    .any(|long| line.has_long(long))
        || line.has_short('e');
    let writes = subcommand.is_some() || legacy_write || (!reads && keys.len() >= 2);
    if !writes {
        return safe("git config only reads");
    }
    let whole_sections = matches!(
        subcommand,
        Some("rename-section" | "remove-section" | "edit")
    ) || ["rename-section", "remove-section", "edit"]
        .iter()
        .any(|long| line.has_long(long))
        || line.has_short('e');
    if whole_sections || !keys.first().is_some_and(|key| is_harmless_git_config(key)) {
        return classified(
            DangerClass::Persistence,
            "git config changes configuration that decides what git runs later \
             (only a few harmless keys such as user.name are plain writes)",
        );
    }
    let mut result = Worst::default();
    result.add(classified(
        DangerClass::LocalWrite,
        "git config changes the repository configuration",
    ));
    for file in line.values('f', "file") {
        result.add(write_target(file, context));
    }
    if line.has_long("global") || line.has_long("system") {
        result.add(classified(
            DangerClass::SystemWrite,
            "git config writes configuration outside the repository",
        ));
    }
    result.or_safe("")
}

fn git_push(line: &options::CommandLine) -> Classification {
    let forced = line.has('f', "force")
        || [
            "force-with-lease",
            "force-if-includes",
            "mirror",
            "delete",
            "prune",
        ]
        .iter()
        .any(|long| line.has_long_prefix(long))
        || line.has_short('d')
        || line
            .operands
            .iter()
            .any(|refspec| refspec.text.starts_with('+') || refspec.text.starts_with(':'));
    if forced {
        return classified(
            DangerClass::Destructive,
            "git push --force/--delete rewrites or deletes remote history",
        );
    }
    classified(DangerClass::NetworkUpload, "git push uploads commits")
}
