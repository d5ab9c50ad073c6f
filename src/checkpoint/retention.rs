//! Retention: checkpoints older than `checkpoints.keep_days` go, and then, oldest first,
//! more until the pre-images they hold fit in `checkpoints.max_mb`; the blobs no remaining
//! checkpoint names go with them, and the shadow repositories drop what no snapshot holds.
//!
//! A record file written in the last hour belongs to a session that may be appending to it
//! now: it is left alone (its checkpoints are recent anyway).

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use super::store::{BlobStore, read_history, sweep};
use super::{Checkpoint, RecordLine};
use crate::util::files::{Permissions, write_atomically};

/// Record files touched more recently than this are never rewritten.
const BUSY: Duration = Duration::from_secs(3600);
/// How often a run looks at retention at most.
const EVERY: Duration = Duration::from_secs(24 * 3600);

/// The limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Checkpoints older than this many days go.
    pub keep_days: u64,
    /// The pre-images may take this many bytes at most.
    pub max_bytes: u64,
}

/// What a pass removed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Pruned {
    /// Checkpoints dropped.
    pub checkpoints: usize,
    /// Blobs deleted.
    pub blobs: usize,
}

/// One checkpoint as retention sees it.
struct Held {
    file: PathBuf,
    id: String,
    at: String,
    hashes: Vec<String>,
}

/// Applies `limits` to everything under `root` now.
pub fn prune(root: &Path, limits: Retention) -> io::Result<Pruned> {
    let records = root.join("sessions");
    let mut held = Vec::new();
    if records.is_dir() {
        for entry in fs::read_dir(&records)?.flatten() {
            let file = entry.path();
            if is_busy(&file) {
                continue;
            }
            for c in read_history(&file)?.checkpoints {
                held.push(held_of(&file, c));
            }
        }
    }
    held.sort_by(|a, b| a.at.cmp(&b.at));
    let cutoff = jiff::Timestamp::now()
        .checked_sub(jiff::SignedDuration::from_secs(
            i64::try_from(limits.keep_days.saturating_mul(86_400)).unwrap_or(i64::MAX),
        ))
        .map(crate::util::timestamp::rfc3339_millis)
        .unwrap_or_default();
    let sizes = blob_sizes(&BlobStore::new(root).dir)?;
    let mut refs: HashMap<&str, usize> = HashMap::new();
    for h in held.iter().flat_map(|c| &c.hashes) {
        *refs.entry(h.as_str()).or_default() += 1;
    }
    let mut total: u64 = sizes.values().sum();
    let mut dropped: HashSet<(PathBuf, String)> = HashSet::new();
    for c in &held {
        if c.at >= cutoff && total <= limits.max_bytes {
            break;
        }
        for h in &c.hashes {
            if let Some(n) = refs.get_mut(h.as_str()) {
                *n -= 1;
                if *n == 0 {
                    total = total.saturating_sub(sizes.get(h).copied().unwrap_or(0));
                }
            }
        }
        dropped.insert((c.file.clone(), c.id.clone()));
    }
    let mut by_file: HashMap<&Path, HashSet<&str>> = HashMap::new();
    for (file, id) in &dropped {
        by_file.entry(file).or_default().insert(id);
    }
    for (file, ids) in by_file {
        rewrite_without(file, &ids)?;
    }
    let blobs = sweep(root, BUSY)?;
    prune_shadows(root);
    Ok(Pruned {
        checkpoints: dropped.len(),
        blobs,
    })
}

/// Runs [`prune`] when the last pass is more than a day old (a stamp file says when), on a
/// thread of its own: a run never waits for it.
pub fn prune_now_and_then(root: &Path, limits: Retention) {
    let stamp = root.join("pruned-at");
    let recent = fs::metadata(&stamp)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_some_and(|age| age < EVERY);
    if recent || !root.is_dir() {
        return;
    }
    if fs::write(&stamp, b"").is_err() {
        return;
    }
    let root = root.to_path_buf();
    std::thread::spawn(move || match prune(&root, limits) {
        Ok(p) if p.checkpoints > 0 => tracing::info!(
            "checkpoints: retention removed {} checkpoint(s) and {} stored copies",
            p.checkpoints,
            p.blobs
        ),
        Ok(_) => {}
        Err(e) => tracing::warn!("checkpoints: retention failed: {e}"),
    });
}

fn held_of(file: &Path, c: Checkpoint) -> Held {
    Held {
        file: file.to_path_buf(),
        hashes: c
            .files
            .into_iter()
            .filter_map(|f| f.before.map(|b| b.hash))
            .collect(),
        id: c.id,
        at: c.at,
    }
}

fn is_busy(file: &Path) -> bool {
    fs::metadata(file)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| SystemTime::now().duration_since(t).ok())
        .is_none_or(|age| age < BUSY)
}

fn blob_sizes(dir: &Path) -> io::Result<HashMap<String, u64>> {
    let mut sizes = HashMap::new();
    if !dir.is_dir() {
        return Ok(sizes);
    }
    for folder in fs::read_dir(dir)?.flatten() {
        let prefix = folder.file_name().to_string_lossy().into_owned();
        for blob in fs::read_dir(folder.path())?.flatten() {
            let len = blob.metadata().map(|m| m.len()).unwrap_or(0);
            sizes.insert(
                format!("{prefix}{}", blob.file_name().to_string_lossy()),
                len,
            );
        }
    }
    Ok(sizes)
}

/// Rewrites a record file without the lines of checkpoints `ids` (atomically; gone when
/// nothing is left).
fn rewrite_without(file: &Path, ids: &HashSet<&str>) -> io::Result<()> {
    let text = fs::read_to_string(file)?;
    let kept: Vec<&str> = text
        .lines()
        .filter(|line| match serde_json::from_str::<RecordLine>(line) {
            Ok(RecordLine::Checkpoint(c)) => !ids.contains(c.id.as_str()),
            Ok(RecordLine::Completed { completed }) => !ids.contains(completed.as_str()),
            Err(_) => false,
        })
        .collect();
    if kept.is_empty() {
        return fs::remove_file(file);
    }
    let mut bytes = Vec::with_capacity(text.len());
    for line in kept {
        bytes.extend_from_slice(line.as_bytes());
        bytes.push(b'\n');
    }
    write_atomically(file, &bytes, Permissions::Private)
}

/// Drops the objects of the shadow repositories that their last snapshot no longer holds
/// (an hour's grace, and never while a snapshot is being taken).
fn prune_shadows(root: &Path) {
    let Ok(entries) = fs::read_dir(root) else {
        return;
    };
    for entry in entries.flatten() {
        let dir = entry.path();
        if dir.extension().is_none_or(|e| e != "git") {
            continue;
        }
        let busy = fs::read_dir(&dir)
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("index-"));
        if !busy {
            super::shadow::prune_objects(&dir);
        }
    }
}
