//! Filesystem primitives of the store: the cross-process lock and reads that refuse
//! oversized files before reading them (folders and atomic writes are `crate::util::files`').

use std::fs::{File, OpenOptions};
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::SessionError;

/// Mode of session files, the index and the lock file.
const FILE_MODE: u32 = 0o600;

/// An exclusive `flock` on a lock file, held until dropped. Separate opens conflict even
/// within one process, so threads are serialised as well as processes.
pub(crate) struct DirLock {
    _file: File,
}

impl DirLock {
    /// Blocks until the lock on `path` (created 0600 when missing) is held.
    pub(crate) fn acquire(path: &Path) -> io::Result<Self> {
        let file = open_lock_file(path)?;
        // Closing the descriptor on drop releases the lock.
        file.lock()?;
        Ok(DirLock { _file: file })
    }
}

/// Opens (creating 0600 when missing) a lock file without truncating it.
pub(crate) fn open_lock_file(path: &Path) -> io::Result<File> {
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(FILE_MODE)
        .open(path)
}

/// The outcome of [`read_capped`].
#[derive(Debug)]
pub(crate) enum CappedRead {
    /// The whole file.
    Bytes(Vec<u8>),
    /// The file is larger than the limit (its size); nothing was read.
    TooLarge(u64),
}

/// Reads `path` unless it is larger than `limit` bytes, which is checked on the open handle
/// before reading; a file growing meanwhile is still cut off just past the limit.
pub(crate) fn read_capped(path: &Path, limit: u64) -> io::Result<CappedRead> {
    let file = File::open(path)?;
    let size = file.metadata()?.len();
    if size > limit {
        return Ok(CappedRead::TooLarge(size));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit + 1).read_to_end(&mut bytes)?;
    let read = bytes.len() as u64;
    if read > limit {
        return Ok(CappedRead::TooLarge(read));
    }
    Ok(CappedRead::Bytes(bytes))
}

/// `<dir>/<id>.json`; the id must already be validated.
pub(crate) fn session_path(dir: &Path, id: &str) -> PathBuf {
    dir.join(format!("{id}.json"))
}

/// The session id named by a directory entry: `YYYYMMDD-<32 hex>.json` only; `None` for the
/// index, temp files, journals, locks and anything else.
pub(crate) fn session_id_of_file_name(name: &str) -> Option<&str> {
    let stem = name.strip_suffix(".json")?;
    super::is_standard_id(stem).then_some(stem)
}

/// Reads and parses `<dir>/<id>.json` into `T`, refusing files over `limit` bytes before
/// reading them. Errors name the session and the file.
pub(crate) fn read_session_json<T: DeserializeOwned>(
    dir: &Path,
    id: &str,
    limit: u64,
) -> Result<T, SessionError> {
    let path = session_path(dir, id);
    let bytes = match read_capped(&path, limit) {
        Ok(CappedRead::Bytes(bytes)) => bytes,
        Ok(CappedRead::TooLarge(size)) => {
            return Err(SessionError::TooLarge {
                id: id.to_string(),
                path,
                size,
                limit,
            });
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(SessionError::NotFound {
                id: id.to_string(),
                dir: dir.to_path_buf(),
            });
        }
        Err(e) => {
            return Err(SessionError::io(
                format!("session {id}: cannot read"),
                path,
                e,
            ));
        }
    };
    serde_json::from_slice(&bytes).map_err(|e| SessionError::Corrupt {
        id: id.to_string(),
        path,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_reads_refuse_large_files_without_reading() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big");
        File::create(&path)
            .expect("create")
            .set_len(100)
            .expect("set_len");
        assert!(matches!(
            read_capped(&path, 99),
            Ok(CappedRead::TooLarge(100))
        ));
        assert!(matches!(read_capped(&path, 100), Ok(CappedRead::Bytes(b)) if b.len() == 100));
    }
}
