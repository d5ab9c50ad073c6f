//! Shell-command classification and the `dangerous` policy (facts §8.3–8.5).
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
//!   start-up files, `~/.ssh/`, `.git/hooks/`, `.git/config`, cron and init directories,
//!   `git config` keys that run programs.
//! * **unknown** — any other program, or one whose name is computed at run time.
//! * **destructive** — `rm -r`/`rm -f`, `rm` outside the tree, `find -delete`, `git reset
//!   --hard`, `git clean -f`, `git push --force`, `git checkout .`, `dd`, `shred`,
//!   `truncate`, `mkfs`, `rsync --delete`.
//! * **blocked** — `rm -r` on `/`, `/*`, a top-level system directory, `~`, `$HOME` (also
//!   after `cd /`), `--no-preserve-root`, fork bombs, `dd`/`mkfs`/`shred`/redirections onto
//!   block devices (`/dev/sd*`, `/dev/nvme*`, …), `chmod -R`/`chown -R` on root-like paths,
//!   `shutdown reboot halt poweroff`, `systemctl reboot`, `init 0`.

mod analyzer;
mod lexer;
mod network;
mod options;
mod paths;
mod programs;
mod sed_script;
mod software;
mod system;

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use analyzer::Analyzer;
use paths::WorkingDirectory;

/// How risky an action is. Declared in rank order, so `Ord` compares risk (facts §8.3, v2
/// ranks, with `network_upload` above `network_egress`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DangerClass {
    /// Only reads or prints.
    Safe,
    /// Changes files inside the working directory.
    LocalWrite,
    /// Installs or updates software packages.
    Install,
    /// Downloads from or connects to other hosts.
    NetworkEgress,
    /// Sends data to other hosts.
    NetworkUpload,
    /// Runs arbitrary code (interpreters, build tools, unknown executables).
    CodeExecution,
    /// Changes the system outside the working directory.
    SystemWrite,
    /// Makes something run automatically later.
    Persistence,
    /// Not recognised: fails closed.
    Unknown,
    /// Deletes or overwrites data irrecoverably.
    Destructive,
    /// Never allowed, whatever the configuration says.
    Blocked,
}

impl DangerClass {
    /// Every class, in rank order.
    pub const ALL: [DangerClass; 11] = [
        DangerClass::Safe,
        DangerClass::LocalWrite,
        DangerClass::Install,
        DangerClass::NetworkEgress,
        DangerClass::NetworkUpload,
        DangerClass::CodeExecution,
        DangerClass::SystemWrite,
        DangerClass::Persistence,
        DangerClass::Unknown,
        DangerClass::Destructive,
        DangerClass::Blocked,
    ];

    /// The snake_case name used in configuration, events and prompts.
    pub fn as_str(self) -> &'static str {
        match self {
            DangerClass::Safe => "safe",
            DangerClass::LocalWrite => "local_write",
            DangerClass::Install => "install",
            DangerClass::NetworkEgress => "network_egress",
            DangerClass::NetworkUpload => "network_upload",
            DangerClass::CodeExecution => "code_execution",
            DangerClass::SystemWrite => "system_write",
            DangerClass::Persistence => "persistence",
            DangerClass::Unknown => "unknown",
            DangerClass::Destructive => "destructive",
            DangerClass::Blocked => "blocked",
        }
    }
}

impl fmt::Display for DangerClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The error for a name that is not a danger class.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown danger class \"{0}\" (expected one of: safe, local_write, install, network_egress, network_upload, code_execution, system_write, persistence, unknown, destructive, blocked)"
)]
pub struct UnknownDangerClass(
    /// The name that was given.
    pub String,
);

impl FromStr for DangerClass {
    type Err = UnknownDangerClass;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        DangerClass::ALL
            .into_iter()
            .find(|class| class.as_str() == name)
            .ok_or_else(|| UnknownDangerClass(name.to_string()))
    }
}

/// What to do with an action of some class.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Run it.
    Allow,
    /// Refuse it.
    Deny,
    /// Ask the user (or apply `non_interactive` when there is no terminal).
    Prompt,
}

impl Action {
    /// The lowercase name used in configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Deny => "deny",
            Action::Prompt => "prompt",
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The built-in action for a class: safe and local writes run, destructive, unknown and
/// blocked actions are refused, everything else asks.
pub fn default_action(class: DangerClass) -> Action {
    match class {
        DangerClass::Safe | DangerClass::LocalWrite => Action::Allow,
        DangerClass::SystemWrite
        | DangerClass::NetworkEgress
        | DangerClass::NetworkUpload
        | DangerClass::CodeExecution
        | DangerClass::Install
        | DangerClass::Persistence => Action::Prompt,
        DangerClass::Destructive | DangerClass::Unknown | DangerClass::Blocked => Action::Deny,
    }
}

/// A class and a short human reason, e.g. "rm -rf outside the working directory".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Classification {
    /// The class (the worst over every part of a command).
    pub class: DangerClass,
    /// Why, in a few words, for prompts and events.
    pub reason: String,
}

impl Classification {
    /// A classification with its reason.
    pub fn new(class: DangerClass, reason: impl Into<String>) -> Self {
        Self {
            class,
            reason: reason.into(),
        }
    }

    /// The riskier of the two; on a tie, `self` (the first reason found) is kept.
    pub fn worse(self, other: Classification) -> Classification {
        if other.class > self.class {
            other
        } else {
            self
        }
    }
}

/// Classifies a shell command: the highest class over every simple command in it,
/// including substitutions, `sh -c` strings, `eval` and wrapped commands. Never panics.
pub fn classify_command(command: &str) -> Classification {
    Analyzer::default().classify(command)
}

/// Classifies a `write_file`/`patch` target: inside `cwd` → local_write; shell start-up
/// files, `.git/hooks`, `.git/config`, `~/.ssh`, cron, systemd and launchd directories →
/// persistence; system directories and everything else outside `cwd` → system_write; block
/// devices → blocked. (Shell redirections into `/tmp` count as local writes; these targets
/// do not.)
pub fn classify_write_path(path: &str, cwd: &Path) -> Classification {
    paths::classify_write(path, Some(cwd), WorkingDirectory::Tree)
}

/// The program a command runs, for event summaries (facts §7.3): the first word that is not
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
    let text = program.text.trim_end_matches('/');
    let base = text.rsplit('/').next().unwrap_or(text);
    base.replace(lexer::SUBSTITUTION_MARKER, "$(…)")
}

/// The `dangerous` configuration section (facts §8.4).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DangerPolicy {
    /// Global action for classes without an override (`"allow"` is YOLO mode; blocked
    /// commands are still denied).
    pub action: Option<Action>,
    /// What a prompt becomes when there is no terminal: allow or deny (default deny).
    pub non_interactive: Option<Action>,
    /// Per-class overrides.
    pub classes: BTreeMap<DangerClass, Action>,
    /// Commands allowed when they match exactly (after trimming).
    pub allowlist: Vec<String>,
    /// Command prefixes that are always denied.
    pub denylist: Vec<String>,
}

/// The verdict on one command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Decision {
    /// The command's class (computed even when a list decided).
    pub class: DangerClass,
    /// What to do.
    pub action: Action,
    /// Why: the classification reason, or the allowlist/denylist entry that decided.
    pub reason: String,
}

impl DangerPolicy {
    /// Checks the section: `non_interactive` must be allow or deny (a prompt cannot be
    /// answered without a terminal), `classes.blocked` may only be deny, and denylist entries
    /// must not be empty (an empty prefix would deny everything).
    pub fn validate(&self) -> Result<(), String> {
        if self.non_interactive == Some(Action::Prompt) {
            return Err(
                "dangerous.non_interactive must be \"allow\" or \"deny\", not \"prompt\" (there is nobody to ask)"
                    .to_string(),
            );
        }
        if let Some(action) = self.classes.get(&DangerClass::Blocked)
            && *action != Action::Deny
        {
            return Err(format!(
                "dangerous.classes.blocked cannot be \"{action}\": blocked commands are always denied"
            ));
        }
        if self.denylist.iter().any(|entry| entry.trim().is_empty()) {
            return Err(
                "dangerous.denylist contains an empty entry, which would deny every command"
                    .to_string(),
            );
        }
        Ok(())
    }

    /// Decides a shell command: blocked commands are always denied; then an exact allowlist
    /// match (trimmed) allows; then a denylist prefix match denies (checked against the whole
    /// command and against every simple command inside it, so `cd x && git push` matches
    /// `git push`); otherwise the class decides.
    pub fn decide_command(&self, command: &str) -> Decision {
        let trimmed = command.trim();
        let mut analyzer = Analyzer::default();
        let classification = analyzer.classify(command);
        let class = classification.class;
        if class == DangerClass::Blocked {
            return Decision {
                class,
                action: Action::Deny,
                reason: classification.reason,
            };
        }
        if self.allowlist.iter().any(|entry| entry.trim() == trimmed) {
            return Decision {
                class,
                action: Action::Allow,
                reason: "the command is on dangerous.allowlist".to_string(),
            };
        }
        let candidates: Vec<String> = std::iter::once(trimmed.to_string())
            .chain(analyzer.commands_seen)
            .map(|candidate| collapse_whitespace(&candidate))
            .collect();
        let denied = self.denylist.iter().find(|entry| {
            let prefix = collapse_whitespace(entry);
            !prefix.is_empty() && candidates.iter().any(|c| c.starts_with(&prefix))
        });
        if let Some(entry) = denied {
            return Decision {
                class,
                action: Action::Deny,
                reason: format!("the command matches dangerous.denylist entry \"{entry}\""),
            };
        }
        Decision {
            class,
            action: self.decide_class(class),
            reason: classification.reason,
        }
    }

    /// The action for a class: blocked is always deny; then the per-class override, the
    /// global `action`, and the built-in default.
    pub fn decide_class(&self, class: DangerClass) -> Action {
        if class == DangerClass::Blocked {
            return Action::Deny;
        }
        self.classes
            .get(&class)
            .copied()
            .or(self.action)
            .unwrap_or_else(|| default_action(class))
    }

    /// What a prompt resolves to when there is no terminal: `non_interactive` when it is
    /// allow, deny otherwise.
    pub fn non_interactive_action(&self) -> Action {
        match self.non_interactive {
            Some(Action::Allow) => Action::Allow,
            _ => Action::Deny,
        }
    }
}

fn collapse_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests;
