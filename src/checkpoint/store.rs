//! The blob store and a session's record file; what a tool call uses to take its checkpoint.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

use crate::util::files::{Permissions, ensure_dir, write_atomically};
use crate::util::timestamp::now_rfc3339;

use super::{Checkpoint, FileChange, History, Image, RecordLine};

const FILE_MODE: u32 = 0o600;

/// SHA-256 of `bytes`, lower-case hex.
pub fn hash_bytes(bytes: &[u8]) -> String {
    crate::util::hex::encode(&Sha256::digest(bytes))
}

/// Content-addressed blobs under `<root>/blobs`.
#[derive(Debug, Clone)]
pub struct BlobStore {
    pub(super) dir: PathBuf,
}

impl BlobStore {
    /// The store under a checkpoints root.
    pub fn new(root: &Path) -> Self {
        BlobStore {
            dir: root.join("blobs"),
        }
    }

    /// The folder and file of a blob; `None` for what is not a hash.
    pub(super) fn place_of(&self, hash: &str) -> Option<(PathBuf, PathBuf)> {
        let ok = hash.len() == 64 && hash.bytes().all(|b| b.is_ascii_hexdigit());
        ok.then(|| {
            let folder = self.dir.join(&hash[..2]);
            let file = folder.join(&hash[2..]);
            (folder, file)
        })
    }

    /// Stores `bytes` (once: the same content is never written twice) and returns its hash.
    pub fn put(&self, bytes: &[u8]) -> io::Result<String> {
        let hash = hash_bytes(bytes);
        let Some((folder, path)) = self.place_of(&hash) else {
            return Err(io::Error::other("not a blob hash"));
        };
        if path.exists() {
            return Ok(hash);
        }
        ensure_dir(&folder)?;
        write_atomically(&path, bytes, Permissions::Private)?;
        Ok(hash)
    }

    /// The bytes of `hash`, checked against it (a damaged blob is an error, never restored).
    pub fn get(&self, hash: &str) -> io::Result<Vec<u8>> {
        let (_, path) = self
            .place_of(hash)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "not a blob hash"))?;
        let bytes = fs::read(&path)?;
        if hash_bytes(&bytes) != hash {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                format!("the stored copy {} is damaged", path.display()),
            ));
        }
        Ok(bytes)
    }
}

/// What a file is now: its image, `None` when there is no file.
pub(super) fn image_of(path: &Path) -> io::Result<Option<(Image, Vec<u8>)>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    File::open(path)?.read_to_end(&mut bytes)?;
    let image = Image {
        hash: hash_bytes(&bytes),
        mode: meta.mode() & 0o7777,
    };
    Ok(Some((image, bytes)))
}

/// One session's checkpoints: its record file and the blob store, and the turn that takes
/// new ones.
#[derive(Debug)]
pub struct Checkpoints {
    pub(super) root: PathBuf,
    session: String,
    turn: u32,
    pub(super) max_file_bytes: u64,
    pub(super) max_files: u64,
}

impl Checkpoints {
    /// The checkpoints of `session` under `root` (`<home>/checkpoints`), new ones taken in
    /// `turn`; files above `max_file_bytes` are not captured.
    pub fn new(root: &Path, session: &str, turn: u32, max_file_bytes: u64) -> Self {
        Checkpoints {
            root: root.to_path_buf(),
            session: session.to_string(),
            turn,
            max_file_bytes,
            max_files: super::DEFAULT_MAX_FILES,
        }
    }

    /// Work trees above `max_files` files are not snapshotted before a shell command.
    pub fn with_max_files(mut self, max_files: u64) -> Self {
        self.max_files = max_files;
        self
    }

    /// The session.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The blob store.
    pub fn blobs(&self) -> BlobStore {
        BlobStore::new(&self.root)
    }

    /// The session's record file.
    pub fn record_file(&self) -> PathBuf {
        record_file(&self.root, &self.session)
    }

    /// The session's checkpoints as saved (none yet: empty).
    pub fn history(&self) -> io::Result<History> {
        read_history(&self.record_file())
    }

    /// Appends one line and syncs it before anything it protects is written.
    pub(super) fn append(&self, line: &RecordLine) -> io::Result<()> {
        let path = self.record_file();
        ensure_dir(&self.root.join("sessions"))?;
        let mut text = serde_json::to_string(line).map_err(io::Error::other)?;
        text.push('\n');
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .mode(FILE_MODE)
            .open(&path)?;
        file.write_all(text.as_bytes())?;
        file.sync_all()
    }

    /// A checkpoint for one call of `tool`.
    pub fn begin(self: &Arc<Self>, tool: &str) -> CallCheckpoint {
        CallCheckpoint {
            owner: self.clone(),
            tool: tool.to_string(),
            id: new_id(),
            taken: Arc::default(),
        }
    }

    pub(super) fn turn(&self) -> u32 {
        self.turn
    }
}

/// A checkpoint's id: 16 random bytes in hex.
pub(super) fn new_id() -> String {
    crate::random::hex_id::<16>()
}

/// The record file of `session` under `root`.
pub(super) fn record_file(root: &Path, session: &str) -> PathBuf {
    // A session id is letters, digits and dashes: anything else (from a task file) can
    // never name a path outside the folder.
    let name: String = session
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    root.join("sessions").join(format!("{name}.jsonl"))
}

/// Reads a record file: lines of one checkpoint number are one checkpoint (a call that
/// changed several files writes one line per file, each before that file is written); a
/// torn last line (a crash while appending) is skipped.
pub(super) fn read_history(path: &Path) -> io::Result<History> {
    let text = match fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(History::default()),
        Err(e) => return Err(e),
    };
    let mut history = History::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match serde_json::from_str::<RecordLine>(line) {
            Ok(RecordLine::Checkpoint(c)) => merge(&mut history.checkpoints, c),
            Ok(RecordLine::Completed { completed }) => history.completed.push(completed),
            Err(_) => continue,
        }
    }
    for (i, c) in history.checkpoints.iter_mut().enumerate() {
        c.n = u32::try_from(i + 1).unwrap_or(u32::MAX);
    }
    Ok(history)
}

/// Adds a line to its checkpoint: calls that run in parallel (and sub-agents, in processes
/// of their own) write their lines interleaved.
fn merge(list: &mut Vec<Checkpoint>, c: Checkpoint) {
    match list.iter_mut().rev().find(|known| known.id == c.id) {
        Some(known) => {
            known.files.extend(c.files);
            known.not_covered.extend(c.not_covered);
        }
        None => list.push(c),
    }
}

/// The checkpoint of one tool call: each file's pre-image is stored and recorded before the
/// call writes it.
#[derive(Debug, Clone)]
pub struct CallCheckpoint {
    owner: Arc<Checkpoints>,
    tool: String,
    id: String,
    /// What it recorded so far (every line's files and gaps).
    taken: Arc<std::sync::Mutex<Option<Checkpoint>>>,
}

impl CallCheckpoint {
    /// Records `path` as it is now, and that the call is about to leave `new_content` there
    /// — before the call writes it. A file over the size limit is recorded as not covered.
    pub fn capture(&self, path: &Path, new_content: &[u8]) -> io::Result<()> {
        let mut record = Checkpoint {
            n: 0,
            id: self.id.clone(),
            turn: self.owner.turn(),
            at: now_rfc3339(),
            tool: self.tool.clone(),
            files: Vec::new(),
            not_covered: Vec::new(),
            rewound_to: None,
        };
        let size = fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if size > self.owner.max_file_bytes {
            record.not_covered.push(format!(
                "{}: {size} bytes, over checkpoints.max_file_mb",
                path.display()
            ));
        } else {
            let before = match image_of(path)? {
                Some((image, bytes)) => {
                    self.owner.blobs().put(&bytes)?;
                    Some(image)
                }
                None => None,
            };
            record.files.push(FileChange {
                path: path.to_path_buf(),
                before,
                after: Some(hash_bytes(new_content)),
            });
        }
        self.owner.append(&RecordLine::Checkpoint(record.clone()))?;
        if let Ok(mut taken) = self.taken.lock() {
            match taken.as_mut() {
                Some(known) => {
                    known.files.extend(record.files);
                    known.not_covered.extend(record.not_covered);
                }
                None => *taken = Some(record),
            }
        }
        Ok(())
    }

    /// What the call's checkpoint holds (`None`: it captured nothing).
    pub fn taken(&self) -> Option<Taken> {
        let taken = self.taken.lock().ok()?.clone()?;
        Some(Taken::of(&self.owner, &taken))
    }
}

/// Forgets the checkpoints of deleted sessions: their record files, then every blob no
/// remaining record names (`odek session delete` and `session cleanup`). Returns how many
/// blobs went.
pub fn forget_sessions(root: &Path, sessions: &[String]) -> io::Result<usize> {
    for session in sessions {
        match fs::remove_file(record_file(root, session)) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    sweep(root, std::time::Duration::ZERO)
}

/// Removes the blobs no record file names and older than `grace` (a call stores its blob
/// just before the line that names it); returns how many.
pub(super) fn sweep(root: &Path, grace: std::time::Duration) -> io::Result<usize> {
    let blobs = BlobStore::new(root);
    if !blobs.dir.is_dir() {
        return Ok(0);
    }
    let mut kept = std::collections::HashSet::new();
    let records = root.join("sessions");
    if records.is_dir() {
        for entry in fs::read_dir(&records)?.flatten() {
            for c in read_history(&entry.path())?.checkpoints {
                kept.extend(c.files.into_iter().filter_map(|f| f.before.map(|b| b.hash)));
            }
        }
    }
    let mut removed = 0;
    for folder in fs::read_dir(&blobs.dir)?.flatten() {
        let prefix = folder.file_name().to_string_lossy().into_owned();
        for blob in fs::read_dir(folder.path())?.flatten() {
            let hash = format!("{prefix}{}", blob.file_name().to_string_lossy());
            let young = blob
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| std::time::SystemTime::now().duration_since(t).ok())
                .is_none_or(|age| age < grace);
            if !kept.contains(&hash) && !young {
                fs::remove_file(blob.path())?;
                removed += 1;
            }
        }
        let _ = fs::remove_dir(folder.path());
    }
    Ok(removed)
}

/// What a call's checkpoint holds, for its `checkpoint` event: paths and what happened to
/// them, never contents.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taken {
    /// Its number in the session (what `odek rewind --to` takes).
    pub number: u32,
    /// The tool.
    pub tool: String,
    /// Each file and its kind (`added`, `changed`, `deleted`).
    pub files: Vec<(PathBuf, &'static str)>,
    /// What it does not hold, with why.
    pub not_covered: Vec<String>,
}

impl Taken {
    /// The summary of a recorded checkpoint (its number looked up in the record file).
    pub(crate) fn of(owner: &Checkpoints, checkpoint: &Checkpoint) -> Taken {
        let number = owner
            .history()
            .ok()
            .and_then(|h| h.number_of(&checkpoint.id))
            .unwrap_or_default();
        Taken {
            number,
            tool: checkpoint.tool.clone(),
            files: checkpoint
                .files
                .iter()
                .map(|f| (f.path.clone(), f.kind()))
                .collect(),
            not_covered: checkpoint.not_covered.clone(),
        }
    }
}

/// The checkpoints of session `id` under `home`, read for a rewind, which is recorded in
/// `turn` (the session's latest).
pub fn of_session(home: &Path, id: &str, turn: u32) -> Arc<Checkpoints> {
    Arc::new(Checkpoints::new(&super::root(home), id, turn, u64::MAX))
}
