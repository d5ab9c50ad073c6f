//! Known credential locations: reading them sends a secret to the model provider, so such a
//! read is its own class, `secret_read`, which asks and can never be trusted for a session.
//!
//! Matching is lexical, on the normalised path segments (see [`super::paths::normalize`]):
//! the credential directories and files are recognised wherever they appear in a path
//! (`~/.ssh/id_rsa`, `/home/ana/.ssh/id_rsa`, `../../.ssh/id_rsa`), and shell globs in a
//! segment are matched against the names they could expand to (`~/.ss?/id_*`). The file
//! tools also check the resolved path, symlinks followed.

use std::path::Path;
use std::sync::LazyLock;

use super::options::{self, OptionSpec};
use super::paths::{Anchor, NormalPath, WorkingDirectory, has_glob, is_glob_byte, normalize};
use super::syntax::Word;
use crate::danger_policy::{Classification, DangerClass};

/// Credential paths, as segment sequences that may appear anywhere in a path. `*` stands
/// for any one name (the entry then covers everything below too).
const CREDENTIAL_PATHS: &[(&[&str], &str)] = &[
    (&[".ssh", "*"], "an SSH key or configuration file"),
    (&[".gnupg", "*"], "the GnuPG keyring"),
    (&[".aws", "credentials"], "AWS credentials"),
    (&[".aws", "sso", "*"], "AWS SSO tokens"),
    (&[".config", "gcloud", "*"], "Google Cloud credentials"),
    (&[".azure", "*"], "Azure credentials"),
    (&[".netrc"], "the .netrc password file"),
    (&["_netrc"], "the .netrc password file"),
    (&[".git-credentials"], "stored git credentials"),
    (&[".pgpass"], "PostgreSQL passwords"),
    (&[".my.cnf"], "MySQL credentials"),
    (&[".docker", "config.json"], "Docker registry credentials"),
    (&[".kube", "config"], "Kubernetes credentials"),
    (&[".config", "gh", "hosts.yml"], "GitHub CLI tokens"),
    (&[".cargo", "credentials"], "crates.io tokens"),
    (&[".cargo", "credentials.toml"], "crates.io tokens"),
    (&[".npmrc"], "npm tokens"),
    (&[".pypirc"], "PyPI tokens"),
    (&[".vault-token"], "a Vault token"),
    (
        &[".terraform.d", "credentials.tfrc.json"],
        "Terraform Cloud tokens",
    ),
    (
        &[".odek", "config.json"],
        "odek's configuration (it holds the API key)",
    ),
];

/// Files under `.ssh` that hold nothing secret.
const PUBLIC_SSH_FILES: &[&str] = &["known_hosts", "known_hosts.old", "authorized_keys"];

/// System files that hold password hashes or host keys (absolute paths).
const SYSTEM_SECRETS: &[(&[&str], &str)] = &[
    (&["etc", "shadow"], "the password hashes"),
    (&["etc", "shadow-"], "the password hashes"),
    (&["etc", "gshadow"], "the group password hashes"),
    (&["etc", "gshadow-"], "the group password hashes"),
    (&["etc", "security", "opasswd"], "old password hashes"),
    (&["etc", "ssh", "ssh_host_*_key"], "an SSH host key"),
];

/// Private key files, by name.
const KEY_FILE_NAMES: &[&str] = &[
    "id_rsa",
    "id_dsa",
    "id_ecdsa",
    "id_ed25519",
    "id_ecdsa_sk",
    "id_ed25519_sk",
];

/// Private key files, by extension.
const KEY_FILE_EXTENSIONS: &[&str] = &["pem", "key", "p12", "pfx", "ppk"];

/// `.env` variants that only document the variables.
const ENV_TEMPLATES: &[&str] = &["example", "sample", "template", "dist", "defaults"];

/// Directories with credential files somewhere below them (besides the `*` entries of
/// [`CREDENTIAL_PATHS`]): a recursive read of one reads secrets too.
const HOLDERS: &[&[&str]] = &[
    &[".config"],
    &[".aws"],
    &[".docker"],
    &[".kube"],
    &[".cargo"],
    &[".terraform.d"],
    &[".odek"],
];

/// odek's own configuration file, where `ODEK_HOME` puts it (the default, `~/.odek`, is in
/// [`CREDENTIAL_PATHS`]).
static ODEK_CONFIG: LazyLock<Option<NormalPath>> = LazyLock::new(|| {
    let home = std::env::var("ODEK_HOME").ok().filter(|h| !h.is_empty())?;
    Some(normalize(&format!("{home}/config.json")))
});

/// Programs that take paths without reading what is in the files: names, sizes, modes,
/// checksums, or changes that other rules classify (deleting, creating).
const METADATA_ONLY: &[&str] = &[
    "ls",
    "dir",
    "vdir",
    "stat",
    "du",
    "df",
    "test",
    "[",
    "[[",
    "realpath",
    "readlink",
    "basename",
    "dirname",
    "namei",
    "lsattr",
    "getfacl",
    "which",
    "whereis",
    "type",
    "file",
    "touch",
    "mkdir",
    "chmod",
    "chown",
    "chgrp",
    "cd",
    "pushd",
    "echo",
    "printf",
    "wc",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "tree",
    "rm",
    "unlink",
    "rmdir",
    "shred",
    "ssh-add",
];

/// Options whose value is a key or certificate the program uses without printing it.
const KEY_USE_OPTIONS: &[(&str, &[&str])] = &[
    ("ssh", &["-i"]),
    ("scp", &["-i"]),
    ("sftp", &["-i"]),
    ("ssh-copy-id", &["-i"]),
    (
        "curl",
        &[
            "--cert",
            "-E",
            "--key",
            "--cacert",
            "--proxy-cert",
            "--proxy-key",
        ],
    ),
    (
        "wget",
        &["--certificate", "--private-key", "--ca-certificate"],
    ),
];

/// Programs that read whole directory trees when given a directory.
fn reads_recursively(program: &str, args: &[Word]) -> bool {
    let line = options::parse(args, OptionSpec::new("", &["directories"]));
    let has = |short: &[char], long: &[&str]| {
        short.iter().any(|letter| line.has_short(*letter))
            || long.iter().any(|name| line.has_long(name))
    };
    let first_is = |wanted: fn(&str) -> bool| args.first().is_some_and(|w| wanted(&w.text));
    match program {
        "rg" | "ag" | "ack" | "ugrep" | "zip" | "rsync" => true,
        // `tar czf x.tgz DIR` or `tar -c -f x.tgz DIR`: creating reads the operands.
        "tar" | "bsdtar" | "gtar" => {
            first_is(|first| !first.starts_with('-') && first.contains('c'))
                || has(&['c'], &["create", "append"])
        }
        "7z" => first_is(|first| first == "a"),
        "grep" | "egrep" | "fgrep" | "zgrep" => {
            has(&['r', 'R'], &["recursive", "dereference-recursive"])
                || line.values(' ', "directories").any(|v| v.text == "recurse")
        }
        "cp" | "scp" => has(&['r', 'R', 'a'], &["recursive", "archive"]),
        "fd" | "fdfind" => has(&['x', 'X'], &["exec", "exec-batch"]),
        "find" => args
            .iter()
            .any(|w| matches!(w.text.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir")),
        _ => false,
    }
}

/// The worst secret read of one command: an argument or option value naming a credential
/// location, or a directory holding them given to a program that reads whole trees.
pub(super) fn command_reads_secret(
    program: &str,
    args: &[Word],
    cwd: WorkingDirectory,
) -> Option<Classification> {
    if METADATA_ONLY.contains(&program) {
        return None;
    }
    let outside_tree = cwd != WorkingDirectory::Tree;
    let key_options = KEY_USE_OPTIONS
        .iter()
        .find(|(name, _)| *name == program)
        .map_or(&[][..], |(_, options)| *options);
    let recursive = reads_recursively(program, args);
    let mut skip_next = false;
    for word in args {
        if std::mem::take(&mut skip_next) {
            continue;
        }
        let text = word.text.as_str();
        if key_options.contains(&text) {
            skip_next = true;
            continue;
        }
        if key_options.iter().any(|option| {
            text.strip_prefix(option)
                .is_some_and(|rest| rest.starts_with('='))
        }) {
            continue;
        }
        if word.process_substitution {
            continue;
        }
        for candidate in path_candidates(text) {
            if let Some(what) =
                read_below_proc(candidate, cwd).or_else(|| secret_at(candidate, outside_tree))
            {
                return Some(read_of(program, candidate, what));
            }
            if recursive && !candidate.starts_with('-') && holds_secrets(candidate) {
                return Some(Classification::new(
                    DangerClass::SecretRead,
                    format!("{program} reads every file under {candidate}, credentials included"),
                ));
            }
            if program == "ln" && !candidate.starts_with('-') && holds_secrets(candidate) {
                return Some(Classification::new(
                    DangerClass::SecretRead,
                    format!(
                        "ln links to {candidate}, where credentials or processes' files are \
                         (what is behind the link would be read past this check)"
                    ),
                ));
            }
        }
    }
    None
}

/// A redirection that reads a credential location (`< ~/.ssh/id_rsa`).
pub(super) fn redirect_reads_secret(target: &str, cwd: WorkingDirectory) -> Option<Classification> {
    read_below_proc(target, cwd)
        .or_else(|| secret_at(target, cwd != WorkingDirectory::Tree))
        .map(|what| read_of("a redirection", target, what))
}

fn read_of(program: &str, path: &str, what: &str) -> Classification {
    Classification::new(
        DangerClass::SecretRead,
        format!("{program} reads {path} ({what})"),
    )
}

/// The texts in one word that may be paths: the word, the value after `=` (`--file=x`,
/// `if=x`), the value glued to a short option (`-f/etc/shadow`) and after `@` (`-d @file`).
fn path_candidates(text: &str) -> impl Iterator<Item = &str> {
    let after_equals = text.split_once('=').map(|(_, value)| value);
    let glued = text
        .strip_prefix('-')
        .filter(|rest| !rest.starts_with('-'))
        .and_then(|rest| {
            let mut chars = rest.chars();
            chars.next()?;
            Some(chars.as_str())
        });
    let after_at = text.strip_prefix('@');
    [Some(text), after_equals, glued, after_at]
        .into_iter()
        .flatten()
        .filter(|candidate| !candidate.is_empty())
}

/// What a path names, when it is a known credential location. `outside_tree` tells whether
/// a relative path lies outside the working tree (for `.env` files).
pub(super) fn secret_at(text: &str, outside_tree: bool) -> Option<&'static str> {
    let odek_variable = ["$ODEK_HOME/", "${ODEK_HOME}/"]
        .iter()
        .any(|prefix| text.strip_prefix(prefix) == Some("config.json"));
    if odek_variable {
        return Some("odek's configuration (it holds the API key)");
    }
    let path = normalize(text);
    let outside_tree = outside_tree || path.anchor != Anchor::Relative || path.escapes;
    process_secret_at(text, outside_tree).or_else(|| secret_in(&path, outside_tree))
}

/// [`secret_at`] for a path the file tools resolved: `cwd` decides what is outside.
pub(super) fn secret_at_resolved(path: &Path, cwd: &Path) -> Option<&'static str> {
    let outside = !path.starts_with(cwd);
    secret_in(&normalize(&path.to_string_lossy()), outside)
}

fn secret_in(path: &NormalPath, outside_tree: bool) -> Option<&'static str> {
    let segments = &path.segments;
    if ODEK_CONFIG
        .as_ref()
        .is_some_and(|config| config.segments == *segments)
    {
        return Some("odek's configuration (it holds the API key)");
    }
    if path.anchor == Anchor::Root
        && let Some(what) = process_secret(segments)
    {
        return Some(what);
    }
    if path.anchor == Anchor::Root
        && let Some((_, what)) = SYSTEM_SECRETS
            .iter()
            .find(|(wanted, _)| segments_match(segments, wanted))
    {
        return Some(what);
    }
    for start in 0..segments.len() {
        let rest = &segments[start..];
        let found = CREDENTIAL_PATHS
            .iter()
            .find(|(wanted, _)| window_matches(rest, wanted));
        if let Some((wanted, what)) = found {
            let public_ssh = wanted[0] == ".ssh" && rest.len() > 1 && is_public_ssh_file(&rest[1]);
            if !public_ssh {
                return Some(what);
            }
        }
    }
    let name = segments.last()?;
    if is_public_ssh_file(name) {
        return None;
    }
    if KEY_FILE_NAMES.iter().any(|key| name_matches(name, key))
        || KEY_FILE_EXTENSIONS
            .iter()
            .any(|extension| has_extension(name, extension))
    {
        return Some("a private key file");
    }
    (outside_tree && is_env_file(name)).then_some("a .env file outside the working directory")
}

/// A process's secrets under `/proc`: its environment (where a key it was given lies), its
/// memory, its open files — whatever the pid's spelling (`self`, `thread-self`, `$PPID`,
/// `$$`, digits, a glob, a variable), and the same below `task/<tid>`.
fn process_secret(segments: &[String]) -> Option<&'static str> {
    let [proc_dir, _pid, rest @ ..] = segments else {
        return None;
    };
    if !name_matches(proc_dir, "proc") {
        return None;
    }
    let rest = match rest {
        [task, _tid, below @ ..] if name_matches(task, "task") => below,
        _ => rest,
    };
    let [what, below @ ..] = rest else {
        return None;
    };
    if name_matches(what, "environ") && below.is_empty() {
        Some("a process's environment (the keys it was given)")
    } else if name_matches(what, "mem") && below.is_empty() {
        Some("a process's memory")
    } else if name_matches(what, "fd") && !below.is_empty() {
        Some("a process's open files")
    } else if MAGIC_LINKS.iter().any(|link| name_matches(what, link))
        && (!below.is_empty() || !name_matches(what, "exe"))
    {
        Some(THROUGH_A_LINK)
    } else {
        None
    }
}

/// Links below `/proc/<pid>` that lead out of `/proc`: the process's root and working
/// directory (`/proc/self/root/proc/1/environ` is `/proc/1/environ`), its open and mapped
/// files, its program.
const MAGIC_LINKS: &[&str] = &["root", "cwd", "fd", "map_files", "exe"];

/// Names below `/dev` that are links into `/proc/self/fd` (`/dev/fd/..` is `/proc/self`).
const DEV_LINKS: &[&str] = &["fd", "stdin", "stdout", "stderr"];

/// Spellings of a pid the model cannot choose: the shell sets them to a number.
const PID_VARIABLES: &[&str] = &["$$", "$PPID", "${PPID}", "$BASHPID", "${BASHPID}", "$!"];

const THROUGH_A_LINK: &str =
    "a path through a process's root, working directory or files (a link the check cannot follow)";
const UNRESOLVED: &str =
    "a /proc path with a part only known when it runs (it may name any process's environment)";
const UNFOLLOWED: &str = "a path that climbs out of a link under /proc or /dev/fd (it may reach any process's environment)";

/// Where a path leads under `/proc` or `/dev`, read from its text as written.
enum ProcPlace {
    /// Not under `/proc` nor a `/dev` link into it.
    Elsewhere,
    /// Under `/proc` (segments from `proc` on) or a `/dev` link (from `dev` on); `..`
    /// climbed lexically only where no link can be below.
    Inside(Vec<String>),
    /// A `..` after a link (`/dev/fd/..`, `/proc/self/cwd/..`): where it leads is only known
    /// when it runs.
    Unfollowed,
}

/// Reads `text` as a path under `/proc` or `/dev`. A relative path counts as one from `/`
/// when `outside_tree` (after `cd /`, `../../proc/…`). `$(…)` and `${…}` stay one segment
/// each, whatever slashes they hold.
fn proc_place(text: &str, outside_tree: bool) -> ProcPlace {
    let masked = mask_substitutions(text);
    let rest = match masked.strip_prefix('/') {
        Some(rest) => rest,
        None if outside_tree && !masked.starts_with('~') && !masked.starts_with("$HOME") => {
            masked.as_str()
        }
        None => return ProcPlace::Elsewhere,
    };
    let mut segments: Vec<String> = Vec::new();
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." if past_a_link(&segments) => return ProcPlace::Unfollowed,
            ".." => {
                segments.pop();
            }
            _ => segments.push(segment.to_string()),
        }
    }
    if is_dev_link(&segments)
        || segments
            .first()
            .is_some_and(|top| name_matches(top, "proc"))
    {
        ProcPlace::Inside(segments)
    } else {
        ProcPlace::Elsewhere
    }
}

/// `/dev/fd`, `/dev/stdin`, … and below.
fn is_dev_link(segments: &[String]) -> bool {
    matches!(segments, [dev, link, ..] if name_matches(dev, "dev")
        && DEV_LINKS.iter().any(|name| name_matches(link, name)))
}

/// True when a `..` here may climb out of a link: below a `/dev` link, or below
/// `/proc/<pid>` (where `root`, `cwd` and `fd` are).
fn past_a_link(segments: &[String]) -> bool {
    is_dev_link(segments)
        || (segments.len() >= 3
            && segments
                .first()
                .is_some_and(|top| name_matches(top, "proc")))
}

/// `text` with every `/` inside `$(…)` and `${…}` replaced by `_`: what they expand to is
/// one unknown part of the path.
fn mask_substitutions(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut depth = 0usize;
    let mut previous = '\0';
    for c in text.chars() {
        match c {
            '(' | '{' if previous == '$' || depth > 0 => depth += 1,
            ')' | '}' if depth > 0 => depth -= 1,
            _ => {}
        }
        out.push(if c == '/' && depth > 0 { '_' } else { c });
        previous = c;
    }
    out
}

/// A process's secret, or a place the classifier cannot follow, that `text` names under
/// `/proc` or `/dev/fd` (see [`proc_place`]).
fn process_secret_at(text: &str, outside_tree: bool) -> Option<&'static str> {
    // Only /proc has files named `environ`: one in a directory not known to be the tree's
    // (`cd "$P" && cat environ`, `$P/environ`, `$D/proc/1/environ`) is taken for one.
    let directory_unknown = outside_tree || text.starts_with('$');
    let name = text.rsplit('/').next().unwrap_or(text);
    if directory_unknown && name_matches(name, "environ") {
        return Some(
            "a file named environ where the directory is not known (a process's environment)",
        );
    }
    let segments = match proc_place(text, outside_tree) {
        ProcPlace::Elsewhere => return None,
        ProcPlace::Unfollowed => return Some(UNFOLLOWED),
        ProcPlace::Inside(segments) => segments,
    };
    if is_dev_link(&segments) {
        return (segments.len() > 2)
            .then_some("an open file of the shell, or /proc behind it (/dev/fd is /proc/self/fd)");
    }
    let unresolved = segments.iter().enumerate().skip(1).any(|(index, segment)| {
        segment.contains('$') && !(index == 1 && PID_VARIABLES.contains(&segment.as_str()))
    });
    if unresolved {
        return Some(UNRESOLVED);
    }
    process_secret(&segments)
}

/// True when `cd target` from `cwd` ends below `/proc` or in a `/dev` link into it.
pub(super) fn leads_into_proc(target: &str, cwd: WorkingDirectory) -> bool {
    let relative = !target.starts_with(['/', '~']) && !target.starts_with("$HOME");
    if cwd == WorkingDirectory::Proc && relative {
        return true;
    }
    !matches!(
        proc_place(target, cwd != WorkingDirectory::Tree),
        ProcPlace::Elsewhere
    )
}

/// A read of the relative path `text` after `cd` into `/proc` ([`WorkingDirectory::Proc`]).
fn read_below_proc(text: &str, cwd: WorkingDirectory) -> Option<&'static str> {
    let relative = !text.starts_with(['/', '~', '-']) && !text.starts_with("$HOME");
    (cwd == WorkingDirectory::Proc && relative)
        .then_some("a file below /proc, after cd there (any process's environment may be it)")
}

/// True when `text` is a directory with credential locations below it: `/`, `/etc`, a home
/// directory, or one of the credential directories.
pub(super) fn holds_secrets(text: &str) -> bool {
    let path = normalize(text);
    let segments: Vec<&str> = path.segments.iter().map(String::as_str).collect();
    let top_level = match path.anchor {
        Anchor::Root => matches!(
            segments.as_slice(),
            [] | ["etc"]
                | ["etc", "ssh"]
                | ["home"]
                | ["home", _]
                | ["root"]
                | ["Users"]
                | ["Users", _]
        ),
        Anchor::Home => segments.is_empty(),
        Anchor::Relative => segments.is_empty() && path.escapes,
    };
    let ends_with = |wanted: &[&str]| {
        path.segments.len() >= wanted.len()
            && window_matches(&path.segments[path.segments.len() - wanted.len()..], wanted)
    };
    let processes = match proc_place(text, path.anchor == Anchor::Relative && path.escapes) {
        ProcPlace::Elsewhere => false,
        ProcPlace::Unfollowed => true,
        ProcPlace::Inside(segments) => {
            is_dev_link(&segments)
                || matches!(segments.as_slice(), [_] | [_, _])
                || matches!(segments.as_slice(), [_, _, task, _] if name_matches(task, "task"))
        }
    };
    top_level
        || processes
        || HOLDERS.iter().any(|holder| ends_with(holder))
        || CREDENTIAL_PATHS
            .iter()
            .filter_map(|(wanted, _)| wanted.strip_suffix(&["*"]))
            .any(ends_with)
        || secret_in(&path, true).is_some()
}

fn is_public_ssh_file(name: &str) -> bool {
    !has_glob(name) && (name.ends_with(".pub") || PUBLIC_SSH_FILES.contains(&name))
}

fn is_env_file(name: &str) -> bool {
    if name_matches(name, ".env") {
        return true;
    }
    match name.strip_prefix(".env.") {
        Some(variant) => !ENV_TEMPLATES.contains(&variant),
        None => false,
    }
}

fn has_extension(name: &str, extension: &str) -> bool {
    if has_glob(name) {
        return name_matches(name, &format!("x.{extension}"));
    }
    name.rsplit_once('.')
        .is_some_and(|(stem, found)| !stem.is_empty() && found.eq_ignore_ascii_case(extension))
}

/// The whole path is `wanted` (with `*` entries matching one name, and anything below).
fn segments_match(segments: &[String], wanted: &[&str]) -> bool {
    segments.len() == wanted.len() && window_matches(segments, wanted)
}

/// `segments` starts with `wanted`; a trailing `*` in `wanted` needs at least one name.
fn window_matches(segments: &[String], wanted: &[&str]) -> bool {
    segments.len() >= wanted.len()
        && wanted
            .iter()
            .zip(segments)
            .all(|(want, have)| *want == "*" || name_matches(have, want))
}

/// `have` (which may hold shell glob characters) can name `want` (which may hold `*`).
fn name_matches(have: &str, want: &str) -> bool {
    if want.contains('*') {
        return wildcard(want.as_bytes(), have.as_bytes());
    }
    // A name that starts with another literal byte cannot match: no glob search for it (this
    // runs for every segment against every credential name, at every wrapper level).
    if let (Some(first), Some(wanted)) = (have.bytes().next(), want.bytes().next())
        && first != wanted
        && !is_glob_byte(first)
    {
        return false;
    }
    if has_glob(have) {
        return wildcard(have.as_bytes(), want.as_bytes());
    }
    have == want
}

/// Shell-style wildcard match of `pattern` (`*`, `?`; a `[…]` class counts as `?`).
fn wildcard(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some(b'*') => {
                backtrack = Some((p, t));
                p += 1;
                continue;
            }
            Some(b'[') => {
                if let Some(close) = pattern[p..].iter().position(|b| *b == b']') {
                    p += close + 1;
                    t += 1;
                    continue;
                }
            }
            Some(b'?') => {
                p += 1;
                t += 1;
                continue;
            }
            Some(c) if *c == text[t] => {
                p += 1;
                t += 1;
                continue;
            }
            _ => {}
        }
        match backtrack {
            Some((star, matched)) => {
                p = star + 1;
                t = matched + 1;
                backtrack = Some((star, matched + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|b| *b == b'*')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_locations_are_found_wherever_they_are_written() {
        for path in [
            "~/.ssh/id_rsa",
            "$HOME/.ssh/id_ed25519",
            "/home/ana/.ssh/config",
            "/root/.ssh/id_ecdsa",
            "../../.ssh/id_rsa",
            "~/.ssh/*",
            "~/.ss?/id_*",
            "/etc/shadow",
            "/etc/ssh/ssh_host_ed25519_key",
            "~/.aws/credentials",
            "~/.config/gcloud/application_default_credentials.json",
            "~/.netrc",
            "~/.docker/config.json",
            "~/.kube/config",
            "/srv/tls/server.pem",
            "deploy.key",
            "~/.odek/config.json",
            "$ODEK_HOME/config.json",
            "../other/.env",
            "/opt/app/.env.production",
        ] {
            assert!(secret_at(path, false).is_some(), "{path}");
        }
    }

    #[test]
    fn ordinary_paths_and_public_keys_are_not_secrets() {
        for path in [
            "~/.ssh/id_rsa.pub",
            "~/.ssh/known_hosts",
            "~/.ssh/authorized_keys",
            "/etc/passwd",
            "/etc/hosts",
            "src/main.rs",
            ".env",
            "config/.env.local",
            "../other/.env.example",
            "Cargo.toml",
            "keys.rs",
            ".keep",
            "~/.config/odek/notes.md",
            "~/.aws/config",
        ] {
            assert_eq!(secret_at(path, false), None, "{path}");
        }
        assert!(
            secret_at(".env", true).is_some(),
            "after cd outside the tree"
        );
    }

    #[test]
    fn holders_are_the_directories_above_secrets() {
        for path in [
            "/",
            "/etc",
            "~",
            "$HOME",
            "/home/ana",
            "~/.ssh",
            "~/.config",
            "~/.config/gcloud",
            "..",
        ] {
            assert!(holds_secrets(path), "{path}");
        }
        for path in [
            ".",
            "src",
            "/usr/share",
            "/tmp",
            "target/debug",
            "~/.config/odek",
        ] {
            assert!(!holds_secrets(path), "{path}");
        }
    }

    #[test]
    fn wildcards_match_like_the_shell() {
        assert!(wildcard(b"id_*", b"id_rsa"));
        assert!(wildcard(b"*.pem", b"x.pem"));
        assert!(wildcard(b"ssh_host_*_key", b"ssh_host_rsa_key"));
        assert!(!wildcard(b"ssh_host_*_key", b"ssh_host_rsa_key.pub"));
        assert!(wildcard(b".s[sz]h", b".ssh"));
        assert!(!wildcard(b"a?c", b"ac"));
    }
}
