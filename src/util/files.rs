//! Private folders and atomic writes: the one way odek creates its folders (0700) and
//! replaces a file so that a crash at any moment leaves the old content or the new, never a
//! torn one.

use std::fs::{self, File};
use std::io::{self, Write};
use std::path::Path;

/// Marker inside the names of in-flight temp files: `.<name>.tmp-<random>`.
pub const TEMP_MARKER: &str = ".tmp-";

/// Mode of the folders odek creates for itself.
#[cfg(unix)]
const DIR_MODE: u32 = 0o700;
/// Mode of odek's own files.
#[cfg(unix)]
const PRIVATE_MODE: u32 = 0o600;
/// Mode of a user's new file written by a tool.
#[cfg(unix)]
const SHARED_MODE: u32 = 0o644;

/// The permissions an atomic write gives the file it writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permissions {
    /// 0600: odek's own files (sessions, the index, state, records, blobs).
    Private,
    /// The replaced file's own, or 0644 for a new one: a user's file a tool edits.
    KeepOrShared,
}

/// Creates `dir` and its missing parents, 0700, when it does not exist.
#[cfg(unix)]
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    fs::DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(dir)
}

/// Creates `dir` and its missing parents when it does not exist.
#[cfg(not(unix))]
pub fn ensure_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new().recursive(true).create(dir)
}

/// Replaces `path` with `bytes` so that a crash at any moment leaves either the old or the
/// new content: a temp file beside it (`.<name>.tmp-<random>`), synced, renamed over `path`,
/// then the folder synced so the rename itself is durable. The temp file is removed on every
/// failure path (tempfile's drop). The folder must exist.
pub fn write_atomically(path: &Path, bytes: &[u8], permissions: Permissions) -> io::Result<()> {
    let dir = folder_of(path);
    let name = path
        .file_name()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "no file name"))?;
    let prefix = format!(".{}{TEMP_MARKER}", name.to_string_lossy());
    let mut builder = tempfile::Builder::new();
    builder.prefix(&prefix).rand_bytes(16);
    if let Some(mode) = mode_for(path, permissions) {
        builder.permissions(mode);
    }
    let mut temp = builder.tempfile_in(dir)?;
    temp.write_all(bytes)?;
    temp.as_file().sync_all()?;
    temp.persist(path).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// The folder `path` is in (`.` for a bare name).
fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The permissions of the temp file that becomes `path`.
#[cfg(unix)]
fn mode_for(path: &Path, permissions: Permissions) -> Option<fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    Some(match permissions {
        Permissions::Private => fs::Permissions::from_mode(PRIVATE_MODE),
        Permissions::KeepOrShared => fs::metadata(path)
            .map(|meta| meta.permissions())
            .unwrap_or_else(|_| fs::Permissions::from_mode(SHARED_MODE)),
    })
}

/// The permissions of the temp file that becomes `path`: the replaced file's, else the
/// platform's default for a new file (no modes here).
#[cfg(not(unix))]
fn mode_for(path: &Path, _permissions: Permissions) -> Option<fs::Permissions> {
    fs::metadata(path).ok().map(|meta| meta.permissions())
}

/// Makes a rename or unlink in `dir` durable. Filesystems that cannot sync a folder
/// (EINVAL, ENOTSUP) are tolerated: there is nothing more to do on them.
#[cfg(unix)]
pub fn sync_dir(dir: &Path) -> io::Result<()> {
    match File::open(dir).and_then(|d| d.sync_all()) {
        Err(e) if matches!(e.raw_os_error(), Some(libc::EINVAL) | Some(libc::ENOTSUP)) => Ok(()),
        other => other,
    }
}

/// A folder cannot be opened and synced here: renames are as durable as the platform makes
/// them.
#[cfg(not(unix))]
pub fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

/// True for the name of an in-flight (or crashed) atomic write.
pub fn is_temp_file_name(name: &str) -> bool {
    name.starts_with('.') && name.contains(TEMP_MARKER)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    fn names(dir: &Path) -> Vec<std::ffi::OsString> {
        let mut names: Vec<_> = fs::read_dir(dir)
            .expect("readdir")
            .map(|e| e.expect("entry").file_name())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn atomic_write_replaces_the_file_with_mode_0600_and_leaves_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        write_atomically(&path, b"old", Permissions::Private).expect("first write");
        write_atomically(&path, b"new", Permissions::Private).expect("second write");
        assert_eq!(fs::read(&path).expect("read"), b"new");
        assert_eq!(fs::metadata(&path).expect("meta").mode() & 0o777, 0o600);
        assert_eq!(names(dir.path()), ["a.json"]);
    }

    #[test]
    fn a_users_file_keeps_its_mode_and_a_new_one_is_0644() {
        let dir = tempfile::tempdir().expect("tempdir");
        let new = dir.path().join("new.txt");
        write_atomically(&new, b"x", Permissions::KeepOrShared).expect("write");
        assert_eq!(fs::metadata(&new).expect("meta").mode() & 0o777, 0o644);
        let script = dir.path().join("run.sh");
        fs::write(&script, "old").expect("write");
        fs::set_permissions(&script, fs::Permissions::from_mode(0o751)).expect("chmod");
        write_atomically(&script, b"new", Permissions::KeepOrShared).expect("write");
        assert_eq!(fs::metadata(&script).expect("meta").mode() & 0o777, 0o751);
        assert_eq!(fs::read(&script).expect("read"), b"new");
        assert_eq!(names(dir.path()), ["new.txt", "run.sh"]);
    }

    #[test]
    fn a_failed_write_leaves_the_old_file_and_no_temp() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("a.json");
        write_atomically(&path, b"old", Permissions::Private).expect("write");
        fs::create_dir(dir.path().join("b")).expect("mkdir");
        // A folder in the way: the rename fails.
        let err = write_atomically(&dir.path().join("b"), b"x", Permissions::Private);
        assert!(err.is_err());
        assert_eq!(fs::read(&path).expect("read"), b"old");
        assert_eq!(names(dir.path()), ["a.json", "b"]);
    }

    #[test]
    fn temp_names_are_recognised() {
        assert!(is_temp_file_name(".abc.json.tmp-0123456789abcdef"));
        assert!(is_temp_file_name(".index.json.tmp-x"));
        assert!(!is_temp_file_name("abc.json"));
        assert!(!is_temp_file_name(".index.lock"));
    }

    #[test]
    fn directories_are_created_0700() {
        let dir = tempfile::tempdir().expect("tempdir");
        let nested = dir.path().join("home/sessions");
        ensure_dir(&nested).expect("create");
        ensure_dir(&nested).expect("idempotent");
        assert_eq!(fs::metadata(&nested).expect("meta").mode() & 0o777, 0o700);
        sync_dir(&nested).expect("a folder syncs");
    }
}
