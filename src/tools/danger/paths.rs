//! Where a write lands: inside the working tree, a temporary directory, a system directory,
//! a file that runs code later (persistence), or a raw disk.
//!
//! Paths are normalised lexically (no file system access): `.` segments drop, `..` pops a
//! segment, `~`, `$HOME` and `${HOME}` anchor at the home directory.

use std::path::Path;

use crate::danger_policy::{Classification, DangerClass};

/// Where relative paths point while a command string runs: `cd` moves it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum WorkingDirectory {
    /// The working tree the agent was started in (or a directory below it).
    Tree,
    /// Somewhere else (`cd ..`, `cd /tmp`, `cd "$X"`).
    Outside,
    /// The file system root, the home directory or a top-level system directory, where
    /// `rm -rf *` wipes the machine.
    RootLike,
    /// `/proc`, somewhere below it or below `/dev/fd` (`cd /proc/1`): relative paths there
    /// may name any process's environment, memory or open files, or lead anywhere through
    /// its `root` and `cwd` links; every one a program reads counts as a secret read.
    Proc,
}

/// What a path is relative to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Anchor {
    Root,
    Home,
    Relative,
}

/// A lexically normalised path.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct NormalPath {
    pub anchor: Anchor,
    pub segments: Vec<String>,
    /// `..` climbed above the anchor (only meaningful for home and relative paths).
    pub escapes: bool,
}

impl NormalPath {
    /// The path as text: `/a/b`, `~/a/b` or `a/b` (`.` for the empty relative path).
    pub fn display(&self) -> String {
        let joined = self.segments.join("/");
        match self.anchor {
            Anchor::Root => format!("/{joined}"),
            Anchor::Home if joined.is_empty() => "~".to_string(),
            Anchor::Home => format!("~/{joined}"),
            Anchor::Relative if joined.is_empty() => ".".to_string(),
            Anchor::Relative => joined,
        }
    }

    fn first_segment(&self) -> &str {
        self.segments.first().map(String::as_str).unwrap_or("")
    }
}

/// Top-level directories whose loss or modification breaks the machine.
const SYSTEM_TOP_DIRS: &[&str] = &[
    "bin", "boot", "dev", "etc", "lib", "lib32", "lib64", "libx32", "proc", "sbin", "sys", "usr",
    "System", "Library",
];

/// Top-level directories that `rm -rf` must never touch (system ones plus the places where
/// users and services keep their data).
const PROTECTED_TOP_DIRS: &[&str] = &[
    "bin",
    "boot",
    "dev",
    "etc",
    "lib",
    "lib32",
    "lib64",
    "libx32",
    "proc",
    "sbin",
    "sys",
    "usr",
    "var",
    "home",
    "root",
    "opt",
    "srv",
    "mnt",
    "media",
    "snap",
    "run",
    "System",
    "Library",
    "Applications",
    "Users",
    "Volumes",
    "private",
];

/// Shell and tool start-up files: whatever is written there runs at the next login, shell,
/// `cd` (direnv) or git command.
const STARTUP_FILE_NAMES: &[&str] = &[
    ".bashrc",
    ".bash_profile",
    ".bash_login",
    ".bash_logout",
    ".profile",
    ".zshrc",
    ".zshenv",
    ".zprofile",
    ".zlogin",
    ".zlogout",
    ".kshrc",
    ".mkshrc",
    ".cshrc",
    ".tcshrc",
    ".login",
    ".logout",
    ".xprofile",
    ".xinitrc",
    ".xsessionrc",
    ".envrc",
    ".gitconfig",
    "config.fish",
];

/// Path prefixes (after normalisation, compared case-insensitively) whose files run
/// automatically: cron, init systems, login scripts, sudoers, the dynamic loader.
const PERSISTENCE_PREFIXES: &[&str] = &[
    "/etc/cron",
    "/etc/anacrontab",
    "/var/spool/cron",
    "/var/spool/anacron",
    "/etc/systemd/",
    "/lib/systemd/",
    "/usr/lib/systemd/",
    "/etc/init.d/",
    "/etc/rc.local",
    "/etc/profile",
    "/etc/bash.bashrc",
    "/etc/bashrc",
    "/etc/zshrc",
    "/etc/zsh/",
    "/etc/environment",
    "/etc/sudoers",
    "/etc/ld.so.preload",
    "/etc/xdg/autostart/",
    "/library/launchagents/",
    "/library/launchdaemons/",
    "~/library/launchagents/",
    "~/.config/autostart/",
    "~/.config/systemd/",
    "~/.config/fish/",
];

/// Block devices (and raw memory): writing to them destroys file systems or the running
/// system.
const BLOCK_DEVICE_PREFIXES: &[&str] = &[
    "sd", "hd", "vd", "xvd", "nvme", "mmcblk", "disk", "rdisk", "md", "dm-", "loop", "sr", "nbd",
    "zd", "mapper", "root", "mem", "kmem", "port",
];

/// Device files that are harmless to write to.
const HARMLESS_DEVICES: &[&str] = &[
    "null", "zero", "full", "stdout", "stderr", "stdin", "tty", "random", "urandom", "fd",
];

/// Scratch directories: a shell redirection into them is a local write.
const TEMPORARY_DIRS: &[&str] = &["/tmp", "/var/tmp", "/private/tmp"];

/// Normalises `text` lexically.
pub(super) fn normalize(text: &str) -> NormalPath {
    let (anchor, rest) = split_anchor(text);
    let mut segments: Vec<String> = Vec::new();
    let mut escapes = false;
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() && anchor != Anchor::Root {
                    escapes = true;
                }
            }
            _ => segments.push(segment.to_string()),
        }
    }
    NormalPath {
        anchor,
        segments,
        escapes,
    }
}

fn split_anchor(text: &str) -> (Anchor, &str) {
    for home in ["$HOME", "${HOME}", "~"] {
        if let Some(rest) = text.strip_prefix(home) {
            if rest.is_empty() || rest.starts_with('/') {
                return (Anchor::Home, rest);
            }
            if home == "~" && !rest.starts_with('/') {
                // `~user/…`: another user's home directory.
                let after_user = rest.find('/').map_or("", |index| &rest[index..]);
                return (Anchor::Home, after_user);
            }
        }
    }
    match text.strip_prefix('/') {
        Some(rest) => (Anchor::Root, rest),
        None => (Anchor::Relative, text),
    }
}

/// True when `text` holds a shell glob character (`*`, `?`, `[`). A byte search: the
/// secret checks ask it of every path segment for each of their patterns.
pub(super) fn has_glob(text: &str) -> bool {
    memchr::memchr3(b'*', b'?', b'[', text.as_bytes()).is_some()
}

/// True for the bytes [`has_glob`] looks for.
pub(super) fn is_glob_byte(byte: u8) -> bool {
    matches!(byte, b'*' | b'?' | b'[')
}

/// True when deleting (or recursively changing) `path` would wipe the machine or the user's
/// data: `/`, `/*`, a top-level system directory or its contents, `~`, `~/*`, `$HOME`, and
/// `*` or `.` after `cd /`.
pub(super) fn is_root_like(path: &NormalPath, working_directory: WorkingDirectory) -> bool {
    let segments = &path.segments;
    match path.anchor {
        Anchor::Root => match segments.as_slice() {
            [] => true,
            [only] => has_glob(only) || PROTECTED_TOP_DIRS.contains(&only.as_str()),
            [top, second] => PROTECTED_TOP_DIRS.contains(&top.as_str()) && has_glob(second),
            _ => false,
        },
        Anchor::Home => {
            path.escapes
                || match segments.as_slice() {
                    [] => true,
                    [only] => has_glob(only),
                    _ => false,
                }
        }
        Anchor::Relative => {
            matches!(
                working_directory,
                WorkingDirectory::RootLike | WorkingDirectory::Proc
            ) && (path.escapes
                || match segments.as_slice() {
                    [] => true,
                    [only] => has_glob(only),
                    _ => false,
                })
        }
    }
}

/// True for block devices such as `/dev/sda1` or `/dev/nvme0n1`.
pub(super) fn is_block_device(path: &NormalPath) -> bool {
    match (path.anchor, path.segments.as_slice()) {
        (Anchor::Root, [dev, name, ..]) if dev == "dev" => BLOCK_DEVICE_PREFIXES
            .iter()
            .any(|prefix| name.starts_with(prefix)),
        _ => false,
    }
}

/// Classifies a write to `text`. `cwd` is the real working directory when known (the
/// `write_file` tool); shell commands pass `None` and the `cd`-tracked `working_directory`.
pub(super) fn classify_write(
    text: &str,
    cwd: Option<&Path>,
    working_directory: WorkingDirectory,
) -> Classification {
    let mut path = normalize(text);
    if path.anchor == Anchor::Relative
        && let Some(cwd) = cwd
    {
        path = normalize(&format!("{}/{}", cwd.display(), text));
    }
    if let Some(persistent) = persistence_reason(&path) {
        return Classification::new(DangerClass::Persistence, persistent);
    }
    match path.anchor {
        Anchor::Root => classify_absolute_write(&path, cwd),
        Anchor::Home => Classification::new(
            DangerClass::SystemWrite,
            format!("writes {} outside the working directory", path.display()),
        ),
        Anchor::Relative => classify_relative_write(text, &path, working_directory),
    }
}

fn classify_relative_write(
    text: &str,
    path: &NormalPath,
    working_directory: WorkingDirectory,
) -> Classification {
    if path.escapes || working_directory != WorkingDirectory::Tree {
        return Classification::new(
            DangerClass::SystemWrite,
            format!("writes {text} outside the working directory"),
        );
    }
    Classification::new(
        DangerClass::LocalWrite,
        "writes inside the working directory",
    )
}

fn classify_absolute_write(path: &NormalPath, cwd: Option<&Path>) -> Classification {
    let shown = path.display();
    if path.first_segment() == "dev" {
        return classify_device_write(path);
    }
    if SYSTEM_TOP_DIRS.contains(&path.first_segment()) {
        return Classification::new(
            DangerClass::SystemWrite,
            format!("writes {shown} in a system directory"),
        );
    }
    if let Some(cwd) = cwd {
        let cwd = normalize(&cwd.display().to_string());
        if path.segments.starts_with(&cwd.segments) {
            return Classification::new(
                DangerClass::LocalWrite,
                "writes inside the working directory",
            );
        }
    }
    // Shell commands scribble in /tmp all the time; `write_file` targets (known `cwd`) are
    // held to the working directory.
    let in_temporary_dir = TEMPORARY_DIRS
        .iter()
        .any(|dir| shown == *dir || shown.starts_with(&format!("{dir}/")));
    if cwd.is_none() && in_temporary_dir {
        return Classification::new(DangerClass::LocalWrite, "writes in a temporary directory");
    }
    Classification::new(
        DangerClass::SystemWrite,
        format!("writes {shown} outside the working directory"),
    )
}

fn classify_device_write(path: &NormalPath) -> Classification {
    let shown = path.display();
    let name = path.segments.get(1).map(String::as_str).unwrap_or("");
    if is_block_device(path) {
        return Classification::new(
            DangerClass::Blocked,
            format!("writes to the block device {shown}"),
        );
    }
    if name == "tcp" || name == "udp" {
        return Classification::new(
            DangerClass::NetworkUpload,
            format!("sends data over the network through {shown}"),
        );
    }
    if name == "shm" {
        return Classification::new(DangerClass::LocalWrite, "writes in a temporary directory");
    }
    if HARMLESS_DEVICES.contains(&name) {
        return Classification::new(DangerClass::Safe, format!("writes to {shown}"));
    }
    Classification::new(
        DangerClass::SystemWrite,
        format!("writes to the device {shown}"),
    )
}

/// Why a write to `path` would persist (run code later), if it would.
fn persistence_reason(path: &NormalPath) -> Option<String> {
    let shown = path.display();
    let lower = shown.to_ascii_lowercase();
    let file_name = path.segments.last().map(String::as_str).unwrap_or("");
    if STARTUP_FILE_NAMES.contains(&file_name) {
        return Some(format!("writes the start-up file {shown}"));
    }
    let segments = &path.segments;
    if segments.iter().any(|segment| segment == ".ssh") {
        return Some(format!("writes SSH configuration {shown}"));
    }
    // Hooks, `config`, `config.worktree`, `info/attributes`, the `.git` file that says where
    // the repository is: everything git keeps there decides what it runs later.
    if segments.iter().any(|segment| segment == ".git") {
        return Some(format!("writes {shown}, which git runs or obeys later"));
    }
    if PERSISTENCE_PREFIXES
        .iter()
        .any(|prefix| lower.starts_with(prefix))
    {
        return Some(format!("writes {shown}, which runs automatically"));
    }
    let rooted = path.anchor == Anchor::Root;
    let in_project = rooted || (path.anchor == Anchor::Relative && !path.escapes);
    (in_project && super::hook_files::runs(segments, rooted))
        .then(|| format!("writes {shown}, which a trusted project hook runs"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalisation() {
        assert_eq!(normalize("/tmp/../").display(), "/");
        assert_eq!(normalize("//usr/./bin/").display(), "/usr/bin");
        assert_eq!(normalize("$HOME/x").display(), "~/x");
        assert_eq!(normalize("${HOME}").display(), "~");
        assert_eq!(normalize("~bob/x").display(), "~/x");
        assert_eq!(normalize("a/../..").display(), ".");
        assert!(normalize("a/../..").escapes);
        assert!(normalize("~/..").escapes);
        assert!(!normalize("/..").escapes);
    }

    #[test]
    fn root_like_targets() {
        let tree = WorkingDirectory::Tree;
        for text in [
            "/", "/*", "/.", "//", "/etc", "/usr/*", "~", "~/", "~/*", "$HOME", "~/..",
        ] {
            assert!(is_root_like(&normalize(text), tree), "{text}");
        }
        for text in ["/tmp/x", "/usr/local/lib", "~/project", "*", ".", "build"] {
            assert!(!is_root_like(&normalize(text), tree), "{text}");
        }
        assert!(is_root_like(&normalize("*"), WorkingDirectory::RootLike));
        assert!(is_root_like(&normalize("."), WorkingDirectory::RootLike));
    }
}
