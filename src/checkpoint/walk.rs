//! Reaching a recorded file without following a symbolic link. Each folder from `/` down is
//! opened relative to the one before, with `O_NOFOLLOW`, so a link put on the way after the
//! checkpoint (`mv sub old && ln -s $HOME sub`) stops the walk instead of leading a rewind out
//! of the tree; what a rewind reads, writes and removes then goes through the folder the walk
//! opened, so nothing can be swapped for a link between the check and the use.

use std::ffi::{CString, OsStr};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};

use super::Image;
use super::store::hash_bytes;

/// How a folder on the way is opened: only to look things up in it (Linux: `O_PATH`, which
/// needs no read permission on the folder).
#[cfg(target_os = "linux")]
const LOOKUP: libc::c_int = libc::O_PATH;
#[cfg(not(target_os = "linux"))]
const LOOKUP: libc::c_int = libc::O_RDONLY;

/// Where a recorded path leads now.
#[derive(Debug)]
pub(super) enum Reached {
    /// Every folder on the way is a real folder: the last one, open, and the file's name.
    Folder(Place),
    /// A folder on the way does not exist (so neither does the file).
    Missing,
    /// A part of the path is a symbolic link or not a folder: the path is not covered.
    Blocked(Blocked),
}

/// A path a rewind cannot reach without following a link, and what stopped it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Blocked {
    /// The recorded file.
    pub path: PathBuf,
    /// The part of it that stopped the walk (the file itself, or a folder above it).
    pub at: PathBuf,
    /// What that part is now: `a symbolic link`, `not a folder`, `a folder`, ….
    pub what: &'static str,
}

impl Blocked {
    /// The line a rewind reports it with, among what it does not cover.
    pub(super) fn describe(&self) -> String {
        let why = if self.at == self.path {
            format!("{} now", self.what)
        } else {
            format!("{} is {} now", self.at.display(), self.what)
        };
        format!(
            "{}: {why} (a rewind never goes through a link or a non-folder)",
            self.path.display()
        )
    }
}

/// The folder holding a recorded file, reached without following a link, and the file's
/// name in it.
#[derive(Debug)]
pub(super) struct Place {
    dir: OwnedFd,
    name: CString,
    path: PathBuf,
}

/// What is at a recorded path now.
#[derive(Debug)]
pub(super) enum Found {
    /// A regular file: its image and bytes.
    File(Image, Vec<u8>),
    /// Nothing.
    Absent,
    /// Something a rewind does not touch (a link on the way or at the end, a folder, …).
    Blocked(Blocked),
}

/// Walks the folders of the absolute `path` from `/`, never following a link; with `create`,
/// a missing folder is made (inside the one reached before it).
pub(super) fn reach(path: &Path, create: bool) -> io::Result<Reached> {
    let Some((folders, name)) = split(path) else {
        return Ok(Reached::Blocked(Blocked {
            path: path.to_path_buf(),
            at: path.to_path_buf(),
            what: "not a plain absolute path",
        }));
    };
    let mut dir = open_root()?;
    let mut at = PathBuf::from("/");
    for folder in folders {
        at.push(folder);
        let step = c_name(folder)?;
        dir = match open_folder(&dir, &step) {
            Ok(next) => next,
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                if !create {
                    return Ok(Reached::Missing);
                }
                make_folder(&dir, &step)?;
                match open_folder(&dir, &step) {
                    Ok(next) => next,
                    Err(e) => return blocked_or(e, &dir, &step, path, &at),
                }
            }
            Err(e) => return blocked_or(e, &dir, &step, path, &at),
        };
    }
    Ok(Reached::Folder(Place {
        dir,
        name: c_name(name)?,
        path: path.to_path_buf(),
    }))
}

/// What is at the absolute `path` now, reached without following a link.
pub(super) fn look(path: &Path) -> io::Result<Found> {
    match reach(path, false)? {
        Reached::Folder(place) => place.read(),
        Reached::Missing => Ok(Found::Absent),
        Reached::Blocked(blocked) => Ok(Found::Blocked(blocked)),
    }
}

impl Place {
    /// The file as it is now; a link, a folder or anything else that is not a regular file
    /// is `Blocked` (never opened through, never read: a FIFO would block).
    pub(super) fn read(&self) -> io::Result<Found> {
        let flags =
            libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY | libc::O_CLOEXEC;
        let file = match open_at(&self.dir, &self.name, flags, 0) {
            Ok(fd) => File::from(fd),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Found::Absent),
            Err(e) => {
                return match file_blocker(&self.dir, &self.name) {
                    Some(what) => Ok(Found::Blocked(self.blocked(what))),
                    None => Err(e),
                };
            }
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            let what = if meta.is_dir() {
                "a folder"
            } else {
                "not a regular file"
            };
            return Ok(Found::Blocked(self.blocked(what)));
        }
        let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        (&file).read_to_end(&mut bytes)?;
        let image = Image {
            hash: hash_bytes(&bytes),
            mode: meta.mode() & 0o7777,
        };
        Ok(Found::File(image, bytes))
    }

    /// Replaces the file with `bytes` and `mode` atomically: written to `temp` beside it
    /// (one left by an interrupted rewind is removed first), synced, renamed over it. The
    /// rename replaces a link at the file's own name; it never follows one.
    pub(super) fn replace(&self, bytes: &[u8], mode: u32, temp: &str) -> io::Result<()> {
        let temp = c_name(OsStr::new(temp))?;
        remove_at(&self.dir, &temp)?;
        let flags =
            libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW | libc::O_CLOEXEC;
        let file = File::from(open_at(&self.dir, &temp, flags, 0o600)?);
        let written =
            fill(file, bytes, mode).and_then(|()| rename_at(&self.dir, &temp, &self.name));
        if written.is_err() {
            let _ = remove_at(&self.dir, &temp);
        }
        written
    }

    /// Removes the file (gone already: nothing to do). A link at its name is removed
    /// itself, never what it points to.
    pub(super) fn remove(&self) -> io::Result<()> {
        remove_at(&self.dir, &self.name)
    }

    fn blocked(&self, what: &'static str) -> Blocked {
        Blocked {
            path: self.path.clone(),
            at: self.path.clone(),
            what,
        }
    }
}

/// Writes `bytes` into the new temp file, gives it `mode`, and syncs it.
fn fill(mut file: File, bytes: &[u8], mode: u32) -> io::Result<()> {
    file.write_all(bytes)?;
    file.set_permissions(std::fs::Permissions::from_mode(mode))?;
    file.sync_all()
}

/// The folders and the file name of a plain absolute path (`None`: relative, `..`, or no
/// name).
fn split(path: &Path) -> Option<(Vec<&OsStr>, &OsStr)> {
    let mut parts = path.components();
    if parts.next() != Some(Component::RootDir) {
        return None;
    }
    let mut names = Vec::new();
    for part in parts {
        match part {
            Component::Normal(name) => names.push(name),
            Component::CurDir => {}
            _ => return None,
        }
    }
    let name = names.pop()?;
    Some((names, name))
}

/// Why the walk stopped at `step`: a link or a non-folder is `Blocked`; anything else is
/// the error `e`.
fn blocked_or(
    e: io::Error,
    dir: &OwnedFd,
    step: &CString,
    path: &Path,
    at: &Path,
) -> io::Result<Reached> {
    match folder_blocker(dir, step) {
        Some(what) => Ok(Reached::Blocked(Blocked {
            path: path.to_path_buf(),
            at: at.to_path_buf(),
            what,
        })),
        None => Err(e),
    }
}

fn c_name(name: &OsStr) -> io::Result<CString> {
    CString::new(name.as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte in a path"))
}

fn open_root() -> io::Result<OwnedFd> {
    let root = c_name(OsStr::new("/"))?;
    // SAFETY: `root` is a NUL-terminated string that outlives the call; `open` reads it only.
    #[allow(unsafe_code)]
    let fd = unsafe { libc::open(root.as_ptr(), LOOKUP | libc::O_DIRECTORY | libc::O_CLOEXEC) };
    owned(fd)
}

/// The folder `name` in `dir`, never a link to one.
fn open_folder(dir: &OwnedFd, name: &CString) -> io::Result<OwnedFd> {
    open_at(
        dir,
        name,
        LOOKUP | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
        0,
    )
}

fn open_at(
    dir: &OwnedFd,
    name: &CString,
    flags: libc::c_int,
    mode: libc::c_uint,
) -> io::Result<OwnedFd> {
    // SAFETY: `dir` is an open descriptor and `name` a NUL-terminated string, both alive for
    // the call; `openat` reads the name only.
    #[allow(unsafe_code)]
    let fd = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags, mode) };
    owned(fd)
}

/// Makes the folder `name` in `dir` (0777 less the umask, as `mkdir -p`); one made meanwhile
/// is fine (it is opened without following a link next).
fn make_folder(dir: &OwnedFd, name: &CString) -> io::Result<()> {
    // SAFETY: as in `open_at`: a live descriptor and a NUL-terminated name, read only.
    #[allow(unsafe_code)]
    let done = unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), 0o777) };
    match check(done) {
        Err(e) if e.raw_os_error() == Some(libc::EEXIST) => Ok(()),
        other => other,
    }
}

/// Removes the entry `name` of `dir` (not a folder); gone already is fine.
fn remove_at(dir: &OwnedFd, name: &CString) -> io::Result<()> {
    // SAFETY: as in `open_at`: a live descriptor and a NUL-terminated name, read only.
    #[allow(unsafe_code)]
    let done = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
    match check(done) {
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => Ok(()),
        other => other,
    }
}

fn rename_at(dir: &OwnedFd, from: &CString, to: &CString) -> io::Result<()> {
    let fd = dir.as_raw_fd();
    // SAFETY: as in `open_at`: one live descriptor and two NUL-terminated names, read only.
    #[allow(unsafe_code)]
    let done = unsafe { libc::renameat(fd, from.as_ptr(), fd, to.as_ptr()) };
    check(done)
}

/// The type of the entry `name` of `dir` (`S_IFMT` bits), the entry itself, not what a link
/// points to (`None`: nothing there, or it cannot be seen).
fn type_at(dir: &OwnedFd, name: &CString) -> Option<libc::mode_t> {
    // SAFETY: `stat` is plain data, so all zeroes is a valid value.
    #[allow(unsafe_code)]
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a live descriptor, a NUL-terminated name and a pointer to the local `stat`,
    // which `fstatat` fills and nothing else reads meanwhile.
    #[allow(unsafe_code)]
    let done = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut stat,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    (done == 0).then_some(stat.st_mode & libc::S_IFMT)
}

/// What a part of the path above the file is, when the walk may not go through it.
fn folder_blocker(dir: &OwnedFd, name: &CString) -> Option<&'static str> {
    match type_at(dir, name)? {
        libc::S_IFLNK => Some("a symbolic link"),
        libc::S_IFDIR => None,
        _ => Some("not a folder"),
    }
}

/// What the file's own entry is, when a rewind may not read or replace it.
fn file_blocker(dir: &OwnedFd, name: &CString) -> Option<&'static str> {
    match type_at(dir, name)? {
        libc::S_IFLNK => Some("a symbolic link"),
        libc::S_IFDIR => Some("a folder"),
        libc::S_IFREG => None,
        _ => Some("not a regular file"),
    }
}

fn owned(fd: libc::c_int) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just returned by a successful open and is owned by nothing else.
    #[allow(unsafe_code)]
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn check(done: libc::c_int) -> io::Result<()> {
    if done == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
