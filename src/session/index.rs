//! `index.json`: the list of [`SessionSummary`] that `list` reads instead of every file, and
//! its reconciliation with the directory when it is missing, unreadable or stale.

use std::collections::HashSet;
use std::io;
use std::path::Path;

use serde::Deserialize;

use super::files::{self, CappedRead};
use super::{SessionError, SessionSummary, shorten_title};
use crate::util::files::Permissions;

/// Name of the index file inside the sessions directory.
pub(crate) const INDEX_FILE: &str = "index.json";
/// Name of the lock file serialising writers of the index (and of session files).
pub(crate) const LOCK_FILE: &str = ".index.lock";
/// An index larger than this is treated as unreadable and rebuilt (10,000 entries are ~3 MB).
const MAX_INDEX_BYTES: u64 = 256 * 1024 * 1024;

/// What was found at `index.json`.
#[derive(Debug)]
pub(crate) enum IndexState {
    /// There is no index yet.
    Missing,
    /// The index exists but cannot be used (why).
    Unusable(String),
    /// The parsed entries.
    Entries(Vec<SessionSummary>),
}

/// Reads `<dir>/index.json`.
pub(crate) fn read_index(dir: &Path) -> IndexState {
    let path = dir.join(INDEX_FILE);
    match files::read_capped(&path, MAX_INDEX_BYTES) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => IndexState::Missing,
        Err(e) => IndexState::Unusable(format!("cannot read {}: {e}", path.display())),
        Ok(CappedRead::TooLarge(size)) => {
            IndexState::Unusable(format!("{} is {size} bytes", path.display()))
        }
        Ok(CappedRead::Bytes(bytes)) => match serde_json::from_slice(&bytes) {
            Ok(entries) => IndexState::Entries(entries),
            Err(e) => IndexState::Unusable(format!("{} is corrupt: {e}", path.display())),
        },
    }
}

/// Name of the file recording the directory's modification time as of the last index write.
pub(crate) const STAMP_FILE: &str = "index.stamp";
/// The stamp is trusted only when the directory has not changed for this long, so a change
/// within one tick of a coarse file-system clock cannot hide behind an equal time.
const STAMP_SETTLE: std::time::Duration = std::time::Duration::from_secs(2);

/// Atomically replaces `<dir>/index.json` with `entries` (newest first: sorted here if the
/// caller's order is off), then records the directory's state in the stamp.
pub(crate) fn write_index(dir: &Path, entries: &[SessionSummary]) -> io::Result<()> {
    let mut sorted;
    let entries = if is_newest_first(entries) {
        entries
    } else {
        sorted = entries.to_vec();
        sort_newest_first(&mut sorted);
        &sorted
    };
    let bytes = serde_json::to_vec(entries).map_err(io::Error::other)?;
    crate::util::files::write_atomically(&dir.join(INDEX_FILE), &bytes, Permissions::Private)?;
    write_stamp(dir)
}

/// The directory's modification time.
pub(crate) fn dir_mtime(dir: &Path) -> io::Result<std::time::SystemTime> {
    std::fs::metadata(dir)?.modified()
}

fn nanos(t: std::time::SystemTime) -> u128 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Records the directory's current modification time. The stamp is rewritten in place, which
/// leaves the directory untouched; only its first creation changes the directory, so the time
/// is read after that.
pub(crate) fn write_stamp(dir: &Path) -> io::Result<()> {
    use std::io::Write;
    let path = dir.join(STAMP_FILE);
    if !path.exists() {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(0o600)
            .open(&path)?;
    }
    let stamp = nanos(dir_mtime(dir)?).to_string();
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)?;
    f.write_all(stamp.as_bytes())
}

/// True when nothing was added to, removed from or renamed in the directory since the last
/// index write (and that was long enough ago to be sure): the index can then be trusted
/// without listing the directory.
pub(crate) fn stamp_is_current(dir: &Path) -> bool {
    let Ok(recorded) = std::fs::read_to_string(dir.join(STAMP_FILE)) else {
        return false;
    };
    let Ok(modified) = dir_mtime(dir) else {
        return false;
    };
    let settled = modified.elapsed().is_ok_and(|age| age >= STAMP_SETTLE);
    settled && recorded.trim() == nanos(modified).to_string()
}

/// What identifies one written index: inode, modification time and size. An index is
/// replaced by renaming a new file over it, so any rewrite changes the inode.
pub(crate) type IndexFingerprint = (u64, i64, i64, u64);

/// The fingerprint of `<dir>/index.json`, when it exists.
pub(crate) fn index_fingerprint(dir: &Path) -> Option<IndexFingerprint> {
    use std::os::unix::fs::MetadataExt;
    let meta = std::fs::metadata(dir.join(INDEX_FILE)).ok()?;
    Some((meta.ino(), meta.mtime(), meta.mtime_nsec(), meta.size()))
}

/// The first `limit` entries of the index and the total count, parsing only those entries
/// (the rest is skimmed). Only meaningful for an index this module wrote (newest first).
/// The first `limit` entries that `keep` accepts, and the count of all entries.
pub(crate) fn read_index_head_where(
    dir: &Path,
    limit: usize,
    keep: fn(&SessionSummary) -> bool,
) -> Option<(Vec<SessionSummary>, usize)> {
    read_index_with(dir, HeadSeed { limit, keep })
}

/// The first (newest) index entry that `keep` accepts: `Some(None)` when none does, `None`
/// when the index cannot be read. Entries after the match are only skimmed.
pub(crate) fn first_matching(
    dir: &Path,
    keep: fn(&SessionSummary) -> bool,
) -> Option<Option<SessionSummary>> {
    let (mut head, _) = read_index_with(dir, HeadSeed { limit: 1, keep })?;
    Some(head.pop())
}

fn read_index_with(dir: &Path, seed: HeadSeed) -> Option<(Vec<SessionSummary>, usize)> {
    let path = dir.join(INDEX_FILE);
    let bytes = match files::read_capped(&path, MAX_INDEX_BYTES) {
        Ok(CappedRead::Bytes(bytes)) => bytes,
        _ => return None,
    };
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    let head = serde::de::DeserializeSeed::deserialize(seed, &mut de).ok()?;
    de.end().ok()?;
    Some(head)
}

/// Reads the first `limit` entries that `keep` accepts, and counts all entries.
struct HeadSeed {
    limit: usize,
    keep: fn(&SessionSummary) -> bool,
}

impl<'de> serde::de::DeserializeSeed<'de> for HeadSeed {
    type Value = (Vec<SessionSummary>, usize);

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> serde::de::Visitor<'de> for HeadSeed {
    type Value = (Vec<SessionSummary>, usize);

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("an array of session summaries")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut head = Vec::with_capacity(self.limit.min(1024));
        let mut total = 0;
        while head.len() < self.limit {
            match seq.next_element::<SessionSummary>()? {
                Some(entry) => {
                    total += 1;
                    if (self.keep)(&entry) {
                        head.push(entry);
                    }
                }
                None => return Ok((head, total)),
            }
        }
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            total += 1;
        }
        Ok((head, total))
    }
}

/// Ids of the `<id>.json` session files in `dir`, from one `readdir` (no `stat`, no parse).
pub(crate) fn session_ids_on_disk(dir: &Path) -> io::Result<HashSet<String>> {
    let mut ids = HashSet::new();
    for entry in std::fs::read_dir(dir)? {
        let name = entry?.file_name();
        if let Some(id) = name.to_str().and_then(files::session_id_of_file_name) {
            ids.insert(id.to_string());
        }
    }
    Ok(ids)
}

/// True when the index names exactly the session files on disk, each once.
pub(crate) fn index_matches(entries: &[SessionSummary], ids_on_disk: &HashSet<String>) -> bool {
    if entries.len() != ids_on_disk.len() {
        return false;
    }
    let mut seen = HashSet::with_capacity(entries.len());
    entries
        .iter()
        .all(|e| ids_on_disk.contains(&e.id) && seen.insert(e.id.as_str()))
}

/// The index entries `known` brought in line with `ids_on_disk`: entries without a file are
/// dropped, duplicates collapse, and files without an entry are parsed. Files that cannot be
/// parsed are left out and described in the returned problems.
pub(crate) fn reconcile(
    dir: &Path,
    known: Vec<SessionSummary>,
    ids_on_disk: &HashSet<String>,
    limit: u64,
) -> (Vec<SessionSummary>, Vec<String>) {
    let mut entries = Vec::with_capacity(ids_on_disk.len());
    let mut covered: HashSet<String> = HashSet::with_capacity(ids_on_disk.len());
    for entry in known {
        if ids_on_disk.contains(&entry.id) && covered.insert(entry.id.clone()) {
            entries.push(entry);
        }
    }
    let mut unindexed: Vec<&String> = ids_on_disk.difference(&covered).collect();
    unindexed.sort();
    let mut problems = Vec::new();
    for id in unindexed {
        match summary_from_file(dir, id, limit) {
            Ok(summary) => entries.push(summary),
            Err(e) => problems.push(e.to_string()),
        }
    }
    sort_newest_first(&mut entries);
    (entries, problems)
}

/// The fields of a session file that an index entry needs; the transcript is skipped
/// (still checked for JSON syntax, so a torn file is reported).
#[derive(Deserialize)]
struct SummaryFields {
    id: String,
    created_at: String,
    updated_at: String,
    #[serde(default)]
    model: String,
    #[serde(default)]
    turns: u32,
    #[serde(default)]
    task: String,
    #[serde(default)]
    origin: Option<String>,
}

/// The index entry of `<dir>/<id>.json`, read from the file.
pub(crate) fn summary_from_file(
    dir: &Path,
    id: &str,
    limit: u64,
) -> Result<SessionSummary, SessionError> {
    let fields: SummaryFields = files::read_session_json(dir, id, limit)?;
    if fields.id != id {
        return Err(SessionError::IdMismatch {
            id: id.to_string(),
            path: files::session_path(dir, id),
            found: fields.id,
        });
    }
    Ok(SessionSummary {
        id: fields.id,
        title: shorten_title(&fields.task),
        created_at: fields.created_at,
        updated_at: fields.updated_at,
        turns: fields.turns,
        model: fields.model,
        origin: fields.origin,
    })
}

/// True when `entries` are already in [`sort_newest_first`] order.
fn is_newest_first(entries: &[SessionSummary]) -> bool {
    let times = |e: &SessionSummary| {
        let updated = crate::util::timestamp::parse_rfc3339(&e.updated_at).unwrap_or((i64::MIN, 0));
        let created = crate::util::timestamp::parse_rfc3339(&e.created_at).unwrap_or((i64::MIN, 0));
        (updated, created)
    };
    let keys: Vec<((i64, u32), (i64, u32))> = entries.iter().map(times).collect();
    entries
        .windows(2)
        .zip(keys.windows(2))
        .all(|(e, t)| (t[0], e[0].id.as_str()) >= (t[1], e[1].id.as_str()))
}

/// Sorts by `updated_at`, newest first (then `created_at`, then id); timestamps that do not
/// parse sort last.
pub(crate) fn sort_newest_first(entries: &mut [SessionSummary]) {
    let times = |e: &SessionSummary| {
        let updated = crate::util::timestamp::parse_rfc3339(&e.updated_at).unwrap_or((i64::MIN, 0));
        let created = crate::util::timestamp::parse_rfc3339(&e.created_at).unwrap_or((i64::MIN, 0));
        (updated, created)
    };
    // The index is written in this order, so `list` nearly always finds it sorted already:
    // checking costs one pass of timestamp parsing and no per-entry allocation, where the
    // sort also clones every id into its key.
    if is_newest_first(entries) {
        return;
    }
    entries.sort_by_cached_key(|e| {
        let (updated, created) = times(e);
        std::cmp::Reverse((updated, created, e.id.clone()))
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(id: &str, updated_at: &str) -> SessionSummary {
        SessionSummary {
            id: id.into(),
            title: String::new(),
            created_at: "2026-01-01T00:00:00Z".into(),
            updated_at: updated_at.into(),
            turns: 0,
            model: String::new(),
            origin: None,
        }
    }

    #[test]
    fn entries_sort_newest_updated_first_and_bad_times_last() {
        let mut entries = vec![
            entry("old", "2026-01-02T00:00:00Z"),
            entry("bad", "not a time"),
            entry("new", "2026-03-01T00:00:00Z"),
            entry("offset", "2026-02-01T05:00:00+04:00"),
        ];
        sort_newest_first(&mut entries);
        let ids: Vec<&str> = entries.iter().map(|e| e.id.as_str()).collect();
        assert_eq!(ids, ["new", "offset", "old", "bad"]);
    }

    /// The plain sort `sort_newest_first` must agree with, whether or not it skips sorting.
    fn reference_sort(entries: &mut [SessionSummary]) {
        entries.sort_by_cached_key(|e| {
            let updated =
                crate::util::timestamp::parse_rfc3339(&e.updated_at).unwrap_or((i64::MIN, 0));
            let created =
                crate::util::timestamp::parse_rfc3339(&e.created_at).unwrap_or((i64::MIN, 0));
            std::cmp::Reverse((updated, created, e.id.clone()))
        });
    }

    fn arbitrary_entries() -> impl proptest::strategy::Strategy<Value = Vec<SessionSummary>> {
        // Few distinct values, so equal times, equal ids and unparseable stamps all occur.
        let stamp = proptest::sample::select(vec![
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:01Z",
            "2026-03-01T12:00:00Z",
            "2026-03-01T13:00:00+01:00",
            "not a time",
            "",
        ]);
        let id = proptest::sample::select(vec!["a", "b", "c", "d"]);
        proptest::collection::vec((id, stamp.clone(), stamp), 0..12).prop_map(|raw| {
            raw.into_iter()
                .enumerate()
                .map(|(n, (id, created, updated))| SessionSummary {
                    id: id.into(),
                    title: format!("entry {n}"),
                    created_at: created.into(),
                    updated_at: updated.into(),
                    turns: 0,
                    model: String::new(),
                    origin: None,
                })
                .collect()
        })
    }

    use proptest::strategy::Strategy as _;

    proptest::proptest! {
        #[test]
        fn sorting_agrees_with_the_plain_sort(entries in arbitrary_entries()) {
            let mut expected = entries.clone();
            reference_sort(&mut expected);
            let mut got = entries;
            sort_newest_first(&mut got);
            proptest::prop_assert_eq!(&got, &expected);
            // An index already in order (the usual case) is left exactly as it is.
            sort_newest_first(&mut got);
            proptest::prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn the_index_matches_only_the_exact_id_set() {
        let ids: HashSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        let ok = [entry("a", ""), entry("b", "")];
        assert!(index_matches(&ok, &ids));
        assert!(!index_matches(&ok[..1], &ids));
        assert!(!index_matches(&[entry("a", ""), entry("a", "")], &ids));
        assert!(!index_matches(&[entry("a", ""), entry("c", "")], &ids));
    }

    #[test]
    fn only_session_files_count_as_sessions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let id = "20261130-0123456789abcdef0123456789abcdef";
        for name in [
            &format!("{id}.json"),
            &format!("{id}.journal"),
            &format!("{id}.lock"),
            "a.json",
            "vectors_meta.json",
            "index.json",
            ".a.json.tmp-123",
            ".index.lock",
            "notes.txt",
            "bad name.json",
        ] {
            std::fs::write(dir.path().join(name), "{}").expect("write");
        }
        let ids = session_ids_on_disk(dir.path()).expect("readdir");
        assert_eq!(ids, HashSet::from([id.to_string()]));
    }
}
