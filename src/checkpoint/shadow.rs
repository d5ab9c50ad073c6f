//! Checkpoints of shell commands: before a command that is not `safe` runs inside a git work
//! tree, the tree's tracked and untracked-not-ignored files are staged into a shadow
//! repository of odek's own (`<home>/checkpoints/<project>.git`); after it, what changed
//! against that snapshot becomes an ordinary checkpoint — each pre-image copied into the blob
//! store, so `rewind` treats a `sed -i` like a `patch`.
//!
//! The user's `.git`, index and stash are never touched: every git command runs with the
//! shadow as `GIT_DIR`, an index file of its own per call (parallel calls never share one),
//! no global or system configuration, and attributes that turn every conversion off (a
//! pre-image must be the bytes that were on disk).

use std::collections::HashMap;
use std::ffi::OsStr;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::SystemTime;

use super::store::{hash_bytes, new_id};
use super::walk::Found;
use super::{Checkpoint, Checkpoints, FileChange, Image, RecordLine, Taken};
use crate::util::files::ensure_dir;
use crate::util::timestamp::now_rfc3339;

/// Attributes of the shadow repository: nothing converted, filtered or re-encoded, whatever
/// the work tree's `.gitattributes` say (`info/attributes` comes before them).
const SHADOW_ATTRIBUTES: &str = "* -text -eol -filter -ident -working-tree-encoding\n";

/// What was taken before a shell command: a snapshot, or why there is none.
#[derive(Debug)]
pub struct ShellCheckpoint {
    owner: Arc<Checkpoints>,
    state: State,
}

#[derive(Debug)]
enum State {
    /// The command's changes cannot be covered; the reason is recorded after it.
    NotCovered(NotCovered),
    Snapshot(Snapshot),
}

/// A work tree staged into the shadow's per-call index.
#[derive(Debug)]
struct Snapshot {
    git: Git,
    /// Each snapshotted file's permission bits (git keeps only 644/755).
    modes: HashMap<PathBuf, u32>,
    /// Files left out (over the size limit, symbolic links), with why and how they looked.
    left_out: Vec<LeftOut>,
}

#[derive(Debug)]
struct LeftOut {
    path: PathBuf,
    why: String,
    seen: Option<(u64, SystemTime)>,
}

impl Checkpoints {
    /// Snapshots the git work tree around `cwd` before a shell command; never fails (what
    /// cannot be snapshotted is recorded as not covered once the command has run).
    pub fn before_shell(self: &Arc<Self>, cwd: &Path) -> ShellCheckpoint {
        let state = match self.snapshot(cwd) {
            Ok(snapshot) => State::Snapshot(snapshot),
            Err(reason) => State::NotCovered(reason),
        };
        ShellCheckpoint {
            owner: self.clone(),
            state,
        }
    }

    fn snapshot(&self, cwd: &Path) -> Result<Snapshot, NotCovered> {
        let Some(tree) = work_tree_of(cwd) else {
            return Err(NotCovered::NoWorkTree {
                cwd: cwd.to_path_buf(),
            });
        };
        // The tree as the kernel names it, without a link in its path (an editor may give a
        // working directory through one): a rewind walks each path from `/` without following
        // a link, so a path recorded through one would not be covered.
        let tree = tree.canonicalize().unwrap_or(tree);
        let git = Git::prepare(&self.root, &tree).map_err(|error| NotCovered::NoShadow {
            tree: tree.clone(),
            error,
        })?;
        let listed = git
            .lines(&[
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ])
            .map_err(|error| NotCovered::Git {
                tree: tree.clone(),
                error,
            })?;
        if listed.len() as u64 > self.max_files {
            git.discard();
            return Err(NotCovered::TooManyFiles {
                tree,
                files: listed.len(),
                max: self.max_files,
            });
        }
        let mut snapshot = Snapshot {
            git,
            modes: HashMap::new(),
            left_out: Vec::new(),
        };
        snapshot.survey(&listed, self.max_file_bytes);
        snapshot
            .stage()
            .map_err(|error| NotCovered::Git { tree, error })?;
        Ok(snapshot)
    }
}

/// Why a shell command's changes are not covered by a checkpoint (recorded after it runs).
#[derive(Debug, thiserror::Error)]
enum NotCovered {
    /// The command runs outside any git work tree.
    #[error("shell in {}: not inside a git work tree, so its changes are not covered", cwd.display())]
    NoWorkTree { cwd: PathBuf },
    /// The shadow repository could not be set up.
    #[error(
        "shell in {}: no snapshot could be taken ({error}), so its changes are not covered",
        tree.display()
    )]
    NoShadow { tree: PathBuf, error: io::Error },
    /// A git command on the shadow failed.
    #[error("shell in {}: {error}", tree.display())]
    Git { tree: PathBuf, error: io::Error },
    /// The work tree is over `checkpoints.max_files`.
    #[error(
        "shell in {}: the work tree has {files} files, over checkpoints.max_files ({max}), so its changes are not covered",
        tree.display()
    )]
    TooManyFiles {
        tree: PathBuf,
        files: usize,
        max: u64,
    },
}

impl crate::error::Classified for NotCovered {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            NotCovered::NoWorkTree { .. } | NotCovered::TooManyFiles { .. } => {
                crate::error::ErrorKind::Config
            }
            NotCovered::NoShadow { .. } | NotCovered::Git { .. } => crate::error::ErrorKind::Io,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            NotCovered::NoWorkTree { .. } => {
                Some("run `git init` in the project to have shell commands checkpointed")
            }
            NotCovered::TooManyFiles { .. } => Some(
                "raise checkpoints.max_files in config.json, or list what need not be kept in .gitignore",
            ),
            NotCovered::NoShadow { .. } | NotCovered::Git { .. } => None,
        }
    }
}

impl Snapshot {
    /// Notes each file's mode, and leaves out what a pre-image cannot hold exactly.
    fn survey(&mut self, listed: &[Vec<u8>], max_file_bytes: u64) {
        let mut seen = std::collections::HashSet::new();
        for relative in listed {
            if !seen.insert(relative.as_slice()) {
                continue;
            }
            let path = self.git.tree.join(OsStr::from_bytes(relative));
            let Ok(meta) = fs::symlink_metadata(&path) else {
                continue;
            };
            let why = if meta.file_type().is_symlink() {
                Some("a symbolic link".to_string())
            } else if meta.len() > max_file_bytes {
                Some(format!(
                    "{} bytes, over checkpoints.max_file_mb",
                    meta.len()
                ))
            } else {
                None
            };
            match why {
                Some(why) => self.left_out.push(LeftOut {
                    seen: fingerprint(&path),
                    path,
                    why,
                }),
                None => {
                    self.modes.insert(path, meta.mode() & 0o7777);
                }
            }
        }
    }

    /// Stages the work tree into the per-call index, without what was left out.
    fn stage(&self) -> io::Result<()> {
        let mut excludes = self.git.base_excludes.clone();
        let mut left_out = Vec::new();
        for item in &self.left_out {
            if let Ok(relative) = item.path.strip_prefix(&self.git.tree) {
                excludes.push_str(&exclude_line(relative));
                left_out.extend_from_slice(relative.as_os_str().as_bytes());
                left_out.push(0);
            }
        }
        fs::write(&self.git.excludes, excludes)?;
        if !left_out.is_empty() {
            self.git.run_with_input(
                &[
                    "rm",
                    "--cached",
                    "-q",
                    "--ignore-unmatch",
                    "--pathspec-from-file=-",
                    "--pathspec-file-nul",
                ],
                &left_out,
            )?;
        }
        self.git.run(&["add", "-A"])?;
        Ok(())
    }

    /// What the command changed against the snapshot.
    fn changes(&self) -> io::Result<(Vec<Change>, Vec<String>)> {
        // Not refreshed first: a file whose stat changed but whose content did not is listed,
        // and dropped once its bytes are compared (one git run less on every command).
        let diff = self.git.output(&["diff-files", "-z", "--no-renames"])?;
        let mut changes = parse_diff_files(&diff);
        for relative in self
            .git
            .lines(&["ls-files", "-z", "--others", "--exclude-standard"])?
        {
            if !relative.ends_with(b"/") {
                changes.push(Change {
                    relative,
                    before: None,
                });
            }
        }
        for (path, mode) in &self.modes {
            let Ok(relative) = path.strip_prefix(&self.git.tree) else {
                continue;
            };
            let relative = relative.as_os_str().as_bytes();
            let now = fs::symlink_metadata(path).map(|m| m.mode() & 0o7777);
            if now.is_ok_and(|now| now != *mode) && !changes.iter().any(|c| c.relative == relative)
            {
                changes.push(Change {
                    relative: relative.to_vec(),
                    before: Some((String::new(), String::new())),
                });
            }
        }
        let not_covered = self
            .left_out
            .iter()
            .filter(|item| fingerprint(&item.path) != item.seen)
            .map(|item| format!("{}: {}", item.path.display(), item.why))
            .collect();
        Ok((changes, not_covered))
    }
}

/// One path the command changed; `before`: its staged blob and git mode (`None`: new).
struct Change {
    relative: Vec<u8>,
    before: Option<(String, String)>,
}

/// `:<mode> <mode> <oid> <oid> <status>\0<path>\0` records.
fn parse_diff_files(out: &[u8]) -> Vec<Change> {
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let (Some(meta), Some(path)) = (fields.next(), fields.next()) {
        let meta = String::from_utf8_lossy(meta);
        let parts: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        if let [mode, _, oid, ..] = parts.as_slice() {
            changes.push(Change {
                relative: path.to_vec(),
                before: Some((oid.to_string(), mode.to_string())),
            });
        }
    }
    changes
}

impl ShellCheckpoint {
    /// After the command: records what it changed (nothing changed: no checkpoint), or that
    /// its changes are not covered. Pre-images go to the blob store first.
    pub fn finish(self) -> io::Result<Option<Taken>> {
        let record = match self.state {
            State::NotCovered(reason) => Some(
                self.owner
                    .shell_record(Vec::new(), vec![reason.to_string()]),
            ),
            State::Snapshot(snapshot) => {
                let result = record_changes(&self.owner, &snapshot);
                snapshot.git.keep_index();
                result?
            }
        };
        let Some(record) = record else {
            return Ok(None);
        };
        self.owner.append(&RecordLine::Checkpoint(record.clone()))?;
        Ok(Some(Taken::of(&self.owner, &record)))
    }
}

fn record_changes(owner: &Checkpoints, snapshot: &Snapshot) -> io::Result<Option<Checkpoint>> {
    let (changes, mut not_covered) = snapshot.changes()?;
    let oids: Vec<&str> = changes
        .iter()
        .filter_map(|c| c.before.as_ref().map(|(oid, _)| oid.as_str()))
        .filter(|oid| !oid.is_empty())
        .collect();
    let mut blobs = snapshot.git.blobs(&oids)?;
    let store = owner.blobs();
    let mut files = Vec::new();
    for change in changes {
        let path = snapshot.git.tree.join(OsStr::from_bytes(&change.relative));
        // What the command left, reached without following a link: a file now under a link
        // (`mv sub old && ln -s $HOME sub`) is gone from the tree, whatever the link leads to.
        let now = match super::walk::look(&path)? {
            Found::File(image, bytes) => Some((image, bytes)),
            Found::Absent => None,
            Found::Blocked(blocked) if blocked.at != path => None,
            Found::Blocked(_) => {
                not_covered.push(format!("{}: not a regular file now", path.display()));
                continue;
            }
        };
        let before = match change.before {
            None => None,
            Some((oid, git_mode)) => {
                // A change of mode alone: the content is what is there now.
                let bytes = if oid.is_empty() {
                    now.as_ref().map(|(_, bytes)| bytes.clone())
                } else {
                    blobs.remove(&oid)
                };
                let Some(bytes) = bytes else {
                    not_covered.push(format!("{}: not a regular file before", path.display()));
                    continue;
                };
                let mode = snapshot
                    .modes
                    .get(&path)
                    .copied()
                    .unwrap_or(if git_mode == "100755" { 0o755 } else { 0o644 });
                Some(Image {
                    hash: store.put(&bytes)?,
                    mode,
                })
            }
        };
        let unchanged = match (&before, &now) {
            (Some(image), Some((after, _))) => {
                image.hash == after.hash && snapshot.modes.get(&path) == Some(&after.mode)
            }
            _ => false,
        };
        let after = now.map(|(image, _)| image.hash);
        if !unchanged {
            files.push(FileChange {
                path,
                before,
                after,
            });
        }
    }
    if files.is_empty() && not_covered.is_empty() {
        return Ok(None);
    }
    Ok(Some(owner.shell_record(files, not_covered)))
}

impl Checkpoints {
    fn shell_record(&self, files: Vec<FileChange>, not_covered: Vec<String>) -> Checkpoint {
        Checkpoint {
            n: 0,
            id: new_id(),
            turn: self.turn(),
            at: now_rfc3339(),
            tool: "shell".into(),
            files,
            not_covered,
            rewound_to: None,
        }
    }
}

/// The top of the git work tree holding `cwd` (the first folder upwards with a `.git`).
pub fn work_tree_of(cwd: &Path) -> Option<PathBuf> {
    cwd.ancestors()
        .find(|dir| dir.join(".git").exists())
        .map(Path::to_path_buf)
}

/// A file's size and modification time (`None`: gone).
fn fingerprint(path: &Path) -> Option<(u64, SystemTime)> {
    let meta = fs::symlink_metadata(path).ok()?;
    Some((meta.len(), meta.modified().ok()?))
}

/// An exclude pattern that matches exactly `relative` (glob characters escaped).
fn exclude_line(relative: &Path) -> String {
    let mut line = String::from("/");
    for c in relative.to_string_lossy().chars() {
        if matches!(c, '*' | '?' | '[' | '\\' | '!' | '#' | ' ') {
            line.push('\\');
        }
        line.push(c);
    }
    line.push('\n');
    line
}

/// The shadow repository of one work tree, driven with an index of this call's own.
#[derive(Debug)]
struct Git {
    /// The `git` odek runs, resolved once outside the places commands may write.
    program: PathBuf,
    dir: PathBuf,
    tree: PathBuf,
    index: PathBuf,
    excludes: PathBuf,
    /// What every call excludes: the user's own `info/exclude`, and the store itself when
    /// it lies inside the tree.
    base_excludes: String,
}

impl Git {
    /// Creates the shadow (once) and this call's index, a copy of the last one (so git
    /// re-reads only what changed since).
    fn prepare(root: &Path, tree: &Path) -> io::Result<Git> {
        let program = git_program()?;
        let dir = root.join(format!("{}.git", project_name(tree)));
        if !dir.join("HEAD").exists() {
            ensure_dir(&dir)?;
            let status = Command::new(&program)
                .args(["init", "-q", "--bare"])
                .arg(&dir)
                .env_clear_git()
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| io::Error::other(format!("git could not be run: {e}")))?;
            if !status.success() {
                return Err(io::Error::other("git init failed"));
            }
            ensure_dir(&dir.join("info"))?;
            fs::write(dir.join("info").join("attributes"), SHADOW_ATTRIBUTES)?;
        }
        let call = new_id();
        let index = dir.join(format!("index-{call}"));
        match fs::copy(dir.join("index"), &index) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
        let mut base_excludes =
            fs::read_to_string(tree.join(".git/info/exclude")).unwrap_or_default();
        base_excludes.push('\n');
        let real_root = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
        if let Ok(inside) = real_root.strip_prefix(tree) {
            base_excludes.push_str(&exclude_line(inside));
        }
        Ok(Git {
            program,
            excludes: dir.join(format!("exclude-{call}")),
            dir,
            tree: tree.to_path_buf(),
            index,
            base_excludes,
        })
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(&self.program);
        cmd.env_clear_git()
            .env("GIT_DIR", &self.dir)
            .env("GIT_WORK_TREE", &self.tree)
            .env("GIT_INDEX_FILE", &self.index)
            .current_dir(&self.tree)
            .arg("-c")
            .arg(format!("core.excludesFile={}", self.excludes.display()));
        for setting in [
            "core.autocrlf=false",
            "core.safecrlf=false",
            "core.fileMode=true",
            "core.symlinks=true",
            "core.fsmonitor=false",
            "core.bare=false",
            "gc.auto=0",
            "maintenance.auto=false",
            "advice.addEmbeddedRepo=false",
            "safe.directory=*",
        ] {
            cmd.arg("-c").arg(setting);
        }
        cmd.args(args).stdin(Stdio::null());
        cmd
    }

    /// Runs git; its standard output, or its standard error as the error.
    fn output(&self, args: &[&str]) -> io::Result<Vec<u8>> {
        let out = self.command(args).output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "git {} failed: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(out.stdout)
    }

    fn run(&self, args: &[&str]) -> io::Result<()> {
        self.output(args).map(drop)
    }

    /// NUL-separated output, one entry each.
    fn lines(&self, args: &[&str]) -> io::Result<Vec<Vec<u8>>> {
        Ok(self
            .output(args)?
            .split(|b| *b == 0)
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect())
    }

    fn run_with_input(&self, args: &[&str], input: &[u8]) -> io::Result<()> {
        let mut child = self
            .command(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()?;
        if let Some(mut stdin) = child.stdin.take() {
            stdin.write_all(input)?;
        }
        let out = child.wait_with_output()?;
        if !out.status.success() {
            return Err(io::Error::other(format!(
                "git {} failed: {}",
                args.first().copied().unwrap_or_default(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        Ok(())
    }

    /// The blobs `oids` (what is not a blob is absent), read in one `cat-file --batch`.
    fn blobs(&self, oids: &[&str]) -> io::Result<HashMap<String, Vec<u8>>> {
        let mut found = HashMap::new();
        if oids.is_empty() {
            return Ok(found);
        }
        let mut child = self
            .command(&["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let input: String = oids.iter().map(|oid| format!("{oid}\n")).collect();
        let writer = child.stdin.take();
        let feeder = std::thread::spawn(move || {
            if let Some(mut stdin) = writer {
                let _ = stdin.write_all(input.as_bytes());
            }
        });
        let mut out = Vec::new();
        if let Some(mut stdout) = child.stdout.take() {
            stdout.read_to_end(&mut out)?;
        }
        let _ = feeder.join();
        child.wait()?;
        let mut rest = out.as_slice();
        while let Some(end) = rest.iter().position(|b| *b == b'\n') {
            let header = String::from_utf8_lossy(&rest[..end]).into_owned();
            rest = &rest[end + 1..];
            let parts: Vec<&str> = header.split(' ').collect();
            let [oid, kind, size] = parts.as_slice() else {
                continue; // "<oid> missing"
            };
            let size: usize = size.parse().unwrap_or(0);
            if rest.len() < size + 1 {
                break;
            }
            if *kind == "blob" {
                found.insert(oid.to_string(), rest[..size].to_vec());
            }
            rest = &rest[size + 1..];
        }
        Ok(found)
    }

    /// Keeps this call's index as the next call's starting point.
    fn keep_index(&self) {
        let _ = fs::remove_file(&self.excludes);
        if fs::rename(&self.index, self.dir.join("index")).is_err() {
            let _ = fs::remove_file(&self.index);
        }
    }

    /// Drops this call's index.
    fn discard(&self) {
        let _ = fs::remove_file(&self.excludes);
        let _ = fs::remove_file(&self.index);
    }
}

/// Drops the shadow's objects that its last snapshot (its index) no longer holds, after an
/// hour's grace (retention; a failure leaves them for the next pass).
pub(super) fn prune_objects(dir: &Path) {
    let Ok(program) = git_program() else {
        return;
    };
    let _ = Command::new(program)
        .env_clear_git()
        .env("GIT_DIR", dir)
        .env("GIT_INDEX_FILE", dir.join("index"))
        .args(["prune", "--expire=1.hour.ago"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

/// The `git` resolved at start outside the places shell commands may write (a `git` the model
/// wrote into an activated `.venv/bin` is never run), or why there is none.
fn git_program() -> io::Result<PathBuf> {
    crate::process_group::trusted_program(crate::process_group::TrustedProgram::Git).ok_or_else(
        || io::Error::other("no git was found on PATH outside the places shell commands may write"),
    )
}

/// `<folder name>-<16 hex of the path's hash>`: readable and unique per work tree.
fn project_name(tree: &Path) -> String {
    let name: String = tree
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let hash = hash_bytes(tree.as_os_str().as_bytes());
    format!("{name}-{}", &hash[..16])
}

/// Git started from odek's own environment, without anything that would point it at the
/// user's repository or configuration.
trait CleanGitEnv {
    fn env_clear_git(&mut self) -> &mut Self;
}

impl CleanGitEnv for Command {
    fn env_clear_git(&mut self) -> &mut Self {
        for (key, _) in std::env::vars_os() {
            if key.as_bytes().starts_with(b"GIT_") {
                self.env_remove(key);
            }
        }
        self.env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
    }
}
