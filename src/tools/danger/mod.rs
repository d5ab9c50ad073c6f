//! Shell-command classification and the `dangerous` policy (see docs/TOOLS.md).
//!
//! Every shell command and every file write is put in a [`DangerClass`]; the policy turns
//! the class into an [`Action`] (allow, deny, or ask the user).
//!
//! # How commands are classified
//!
//! A small shell lexer splits the command into simple commands (`;`, `&&`, `||`, `|`, `&`,
//! newlines, subshells), removes quoting (`'r''m'`, `"rm"`, `r\m`, `$'\x72m'`, brace
//! expansion) and collects what runs inside `$(…)`, backticks and `<(…)`. Each simple
//! command is classified after skipping `NAME=value` assignments and keywords; the command's
//! class is the worst (highest rank) over all of them. Nested text (`sh -c '…'`, `eval`,
//! substitutions, `env -S`, `watch`, `su -c`, `find -exec`, `xargs`, `git rebase --exec`,
//! `man -P`, tracers and runners such as `strace`, `uv run`, `bundle exec`) is
//! classified recursively; nesting deeper than 16 levels is blocked.
//!
//! Programs named by path count as the program (`/bin/rm` is `rm`); a program outside the
//! system `bin` directories (`./build.sh`, `/tmp/x`) is at least code execution. A program
//! name only known at run time (`$CMD`) and every program not in the tables is `unknown`,
//! which the default policy denies (fail closed).
//!
//! # The tables (rank order, lowest first)
//!
//! * **safe** — readers and printers: `ls cat head tail wc echo printf pwd grep rg ag find
//!   sort uniq cut tr diff cmp stat file which type whoami id date uname hostname true false
//!   test [ du df basename dirname realpath readlink tree jq xxd od hexdump sha256sum md5sum
//!   sleep seq ps cd`, `sed` without `-i`, `awk` without `system()`/pipes/`print >`, git's
//!   read-only subcommands (`status log diff show branch rev-parse ls-files blame grep …`).
//! * **local_write** — `mkdir touch cp mv ln tee rmdir tar zip unzip gzip`, `sed -i`,
//!   `chmod` inside the tree, `rm` of plain paths inside the tree (no `-r`/`-f`), redirections
//!   into the tree or `/tmp`, `git add commit checkout switch restore stash merge rebase tag
//!   init mv …`.
//! * **install** — `pip install`, `npm/yarn/pnpm install|add|ci`, `cargo install|add`,
//!   `go install|get`, `gem install`, `apt/apt-get/yum/dnf/brew/pacman/apk install`.
//! * **network_egress** — `curl`/`wget` downloads, `ping dig nslookup host traceroute`,
//!   `ssh` sessions, `git fetch pull clone`.
//! * **network_upload** — `curl -d/--data*/-F/-T/--json/-X POST|PUT|PATCH|DELETE`, `wget
//!   --post-*`, `scp`, `rsync` to or from a host, `git push`, `nc`, `telnet`, `ssh host CMD`,
//!   writes to `/dev/tcp/…`.
//! * **code_execution** — interpreters with a script or inline code (`python node ruby perl
//!   php …`), shells with a script or standard input, `eval`, `source`/`.`, build tools and
//!   compilers (`make cargo go npm run npx java gcc …`), programs run by path, assignments to
//!   `PATH`, `LD_PRELOAD` and similar variables, `sed e`, `awk system()`, `git -c
//!   alias.x=!…`.
//! * **system_write** — `sudo su doas chown mount umount kill pkill killall useradd passwd
//!   iptables`, `systemctl start|stop|restart`, `service`, writes outside the working tree or
//!   into system directories, `chmod` setuid bits.
//! * **persistence** — `crontab`, `at`, `systemctl enable`, `launchctl load`, writes to shell
//!   start-up files, `~/.ssh/`, anything inside `.git/`, cron and init directories, `git
//!   config` writes (all but a few harmless keys such as `user.name`), the files a trusted
//!   project hook runs ([`protect_hook_files`]).
//! * **unknown** — any other program, or one whose name is computed at run time.
//! * **destructive** — `rm -r`/`rm -f`, `rm` outside the tree, `find -delete`, `git reset
//!   --hard`, `git clean -f`, `git push --force`, `git checkout .`, `dd`, `shred`,
//!   `truncate`, `mkfs`, `rsync --delete`.
//! * **blocked** — `rm -r` on `/`, `/*`, a top-level system directory, `~`, `$HOME` (also
//!   after `cd /`), `--no-preserve-root`, fork bombs, `dd`/`mkfs`/`shred`/redirections onto
//!   block devices (`/dev/sd*`, `/dev/nvme*`, …), `chmod -R`/`chown -R` on root-like paths,
//!   `shutdown reboot halt poweroff`, `systemctl reboot`, `init 0`.

mod analyzer;
mod braces;
mod file_commands;
mod git;
mod hook_files;
mod lexer;
mod network;
mod options;
mod paths;
mod safe_programs;
mod secrets;
mod sed_script;
mod syntax;
mod system;
mod toolchains;
mod wrappers;

use std::path::Path;

use analyzer::Analyzer;
use paths::WorkingDirectory;

pub use crate::danger_policy::{
    Action, Classification, DangerClass, DangerPolicy, Decision, UnknownDangerClass, default_action,
};

/// Marks the files trusted project hooks of the project in `root` run (absolute paths; a
/// folder covers what lies beneath it): writing them is persistence, for the file tools
/// and shell commands alike.
pub fn protect_hook_files(root: &Path, paths: &[std::path::PathBuf]) {
    hook_files::protect(root, paths);
}

/// Decides a shell command under `policy`: classifies it, then applies the policy's lists
/// and class actions (see [`DangerPolicy::decide_classified_command`]).
pub fn decide_command(policy: &DangerPolicy, command: &str) -> Decision {
    let mut analyzer = Analyzer::default();
    let classification = analyzer.classify(command);
    policy.decide_classified_command(command, classification, &analyzer.commands_seen)
}

/// Classifies a shell command: the highest class over every simple command in it,
/// including substitutions, `sh -c` strings, `eval` and wrapped commands. Never panics.
pub fn classify_command(command: &str) -> Classification {
    Analyzer::default().classify(command)
}

/// The parts of a shell command, each with its own class and reason, for approval prompts:
/// every simple command of the top level (its words with quotes removed, its redirections;
/// classified where it runs, after the `cd`s before it) and every substitution. The
/// command's own class is the worst of them (or worse: a fork bomb, an unclosed quote).
pub fn command_parts(command: &str) -> Vec<(String, Classification)> {
    let mut analyzer = Analyzer::default();
    analyzer.collect_parts = true;
    analyzer.classify(command);
    analyzer.parts
}

/// Classifies a `write_file`/`patch` target: inside `cwd` → local_write; shell start-up
/// files, anything inside `.git`, `~/.ssh`, cron, systemd and launchd directories →
/// persistence; system directories and everything else outside `cwd` → system_write; block
/// devices → blocked. (Shell redirections into `/tmp` count as local writes; these targets
/// do not.)
pub fn classify_write_path(path: &str, cwd: &Path) -> Classification {
    paths::classify_write(path, Some(cwd), WorkingDirectory::Tree)
}

/// Classifies a file tool reading `path` (`read_file`, the root of `search_files`): a known
/// credential location — as written, resolved against `cwd`, or behind a symlink — is
/// `secret_read`. `None` for everything else.
pub fn classify_read_path(path: &str, cwd: &Path) -> Option<Classification> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let resolved = super::paths::resolve(&cwd, path);
    let what = secrets::secret_at(path, false)
        .or_else(|| is_secret_file(&resolved, &cwd))
        .or_else(|| is_secret_file(&resolved.canonicalize().ok()?, &cwd));
    what.map(|what| Classification::new(DangerClass::SecretRead, format!("reads {path} ({what})")))
}

/// What the file at `path` (absolute, normalised) is, when it is a known credential
/// location; `.env` files count outside `cwd`. Lexical: [`classify_read_path`] also
/// checks where symlinks lead, and the file search yields no symlinks.
pub fn is_secret_file(path: &Path, cwd: &Path) -> Option<&'static str> {
    secrets::secret_at_resolved(path, cwd)
}

/// The program a command runs, for event summaries (docs/EVENTS.md): the first word that is not
/// a `NAME=value` assignment, with quotes removed, as a basename. Empty when there is none.
pub fn command_argv0(command: &str) -> String {
    let parsed = lexer::parse_script(command);
    let Some(first) = parsed.commands.first() else {
        return String::new();
    };
    let words = analyzer::skip_assignments(&first.words);
    let Some(program) = words.first() else {
        return String::new();
    };
    // A program named by another command's output has no name worth showing, and its
    // text (the substitution) is content.
    if program.substitution {
        return "$(…)".to_string();
    }
    let text = program.text.trim_end_matches('/');
    text.rsplit('/').next().unwrap_or(text).to_string()
}

#[cfg(test)]
mod tests;
