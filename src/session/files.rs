//! Filesystem primitives of the store: the sessions directory, atomic replacement of a file,
//! the cross-process lock, and reads that refuse oversized files before reading them.

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use super::SessionError;

/// Mode of session files, the index and the lock file.
const FILE_MODE: u32 = 0o600;
/// Mode of the sessions directory when odek creates it.
const DIR_MODE: u32 = 0o700;
/// Marker inside the names of in-flight temp files: `.<name>.tmp-<random>`.
const TEMP_MARKER: &str = ".tmp-";

/// Creates `dir` (and missing parents) with mode 0700 when it does not exist.
pub(crate) fn ensure_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// Replaces `dir/file_name` with `bytes` so that a crash at any moment leaves either the old
/// or the new content: write a temp file beside it, fsync, rename over, fsync the directory.
/// The temp file is removed on every failure path (tempfile's drop).
pub(crate) fn write_atomically(dir: &Path, file_name: &str, bytes: &[u8]) -> io::Result<()> {
    let prefix = format!(".{file_name}{TEMP_MARKER}");
    let mut temp = tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(16)
        .permissions(Permissions::from_mode(FILE_MODE))
        .tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(dir.join(file_name)).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// Makes a rename or unlink in `dir` durable. Filesystems that cannot fsync a directory
/// (EINVAL, ENOTSUP) are tolerated: there is nothing more the store could do on them.
pub(crate) fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTSUP)) => Ok(()),
        other => other,
    }
}

/// True for the name of an in-flight (or crashed) atomic write.
pub(crate) fn is_temp_file_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARKER)
}

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
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn atomic_write_replaces_the_file_with_mode_0600_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        write_atomically(dir.path(), "a.json", b"old").expect("first write");
        write_atomically(dir.path(), "a.json", b"new").expect("second write");
        let path = dir.path().join("a.json");
        assert_eq!(fs::read(&path).expect("read"), b"new");
        assert_eq!(fs::metadata(&path).expect("meta").mode() & 0o777, 0o600);
        let names: Vec<_> = fs::read_dir(dir.path())
            .expect("readdir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["a.json"]);
    }

    #[test]
    fn temp_names_are_recognised() {
        assert!(is_temp_file_name(".abc.json.tmp-0123456789abcdef"));
        assert!(is_temp_file_name(".index.json.tmp-x"));
        assert!(!is_temp_file_name("abc.json"));
        assert!(!is_temp_file_name(".index.lock"));
    }

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

    #[test]
    fn directories_are_created_0700() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("home/sessions");
        ensure_dir(&nested).expect("create");
        ensure_dir(&nested).expect("idempotent");
        assert_eq!(fs::metadata(&nested).expect("meta").mode() & 0o777, 0o700);
    }
}
