//! Putting a new `odek` in place of the running one, and back: every step a rename in the
//! binary's own folder, so the path always holds a whole binary — the old one or the new
//! one — whenever the process stops. The replaced binary stays beside it as `odek.old`.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::ReleaseError;

/// Folders whose programs a package manager owns, and how to upgrade odek there.
const MANAGED: &[(&str, &str)] = &[
    (
        "/nix/store/",
        "upgrade it with Nix (nix profile upgrade, or your configuration)",
    ),
    (
        "/opt/homebrew/",
        "upgrade it with Homebrew: brew upgrade odek",
    ),
    (
        "/usr/local/Cellar/",
        "upgrade it with Homebrew: brew upgrade odek",
    ),
    (
        "/home/linuxbrew/.linuxbrew/",
        "upgrade it with Homebrew: brew upgrade odek",
    ),
    ("/snap/", "upgrade it with snap: snap refresh odek"),
    ("/usr/bin/", "upgrade it with the system's package manager"),
    ("/usr/sbin/", "upgrade it with the system's package manager"),
    ("/bin/", "upgrade it with the system's package manager"),
    ("/sbin/", "upgrade it with the system's package manager"),
    ("/usr/lib/", "upgrade it with the system's package manager"),
    (
        "/usr/libexec/",
        "upgrade it with the system's package manager",
    ),
];

/// How to install a release binary elsewhere, said after every refusal to replace one.
const INSTALL_ELSEWHERE: &str = "or install the release binary in a folder of yours: \
     curl -fsSL https://raw.githubusercontent.com/odek-rs/odek/main/install.sh | \
     ODEK_INSTALL_DIR=\"$HOME/.local/bin\" sh";

/// The running binary, its links resolved: the file `odek upgrade` replaces.
pub fn running_binary() -> Result<PathBuf, ReleaseError> {
    let exe = std::env::current_exe().map_err(|e| ReleaseError::Io {
        action: "finding the running odek",
        path: PathBuf::new(),
        source: e,
    })?;
    fs::canonicalize(&exe).map_err(|e| ReleaseError::Io {
        action: "resolving the running odek",
        path: exe,
        source: e,
    })
}

/// `<binary>.old`: where the replaced binary is kept.
pub fn previous_path(binary: &Path) -> PathBuf {
    let mut name = binary.file_name().unwrap_or_default().to_os_string();
    name.push(".old");
    binary.with_file_name(name)
}

/// Refuses a binary that `odek upgrade` must not or cannot replace: one a package manager
/// owns (by its folder), a cargo-installed one, or one whose folder odek cannot write.
pub fn check_replaceable(binary: &Path) -> Result<(), ReleaseError> {
    let text = binary.to_string_lossy();
    if let Some((_, how)) = MANAGED.iter().find(|(prefix, _)| text.starts_with(prefix)) {
        return Err(cannot_replace(
            binary,
            "a package manager installed it",
            how,
        ));
    }
    if text.contains("/.cargo/bin/") {
        return Err(cannot_replace(
            binary,
            "cargo installed it",
            "upgrade it with cargo install (from the repository)",
        ));
    }
    let folder = folder_of(binary)?;
    match tempfile::Builder::new()
        .prefix(".odek-upgrade-probe-")
        .tempfile_in(folder)
    {
        Ok(_) => Ok(()),
        Err(e) => Err(cannot_replace(
            binary,
            &format!("its folder cannot be written ({e})"),
            "run odek upgrade as a user who can write that folder",
        )),
    }
}

fn cannot_replace(binary: &Path, why: &str, how: &str) -> ReleaseError {
    ReleaseError::CannotReplace {
        path: binary.to_path_buf(),
        why: why.to_string(),
        how: format!("{how}; {INSTALL_ELSEWHERE}"),
    }
}

fn folder_of(binary: &Path) -> Result<&Path, ReleaseError> {
    binary.parent().ok_or_else(|| ReleaseError::Io {
        action: "finding the folder of",
        path: binary.to_path_buf(),
        source: std::io::Error::other("the binary has no folder"),
    })
}

/// Writes `bytes` as the new `binary` (mode 0755): a temporary file in the same folder,
/// synced, then the current binary linked (or copied) to `odek.old` and the new one renamed
/// over it. On any error before the last rename, `binary` is untouched.
pub fn replace(binary: &Path, bytes: &[u8]) -> Result<(), ReleaseError> {
    let folder = folder_of(binary)?;
    let io = |action: &'static str, path: &Path| {
        let path = path.to_path_buf();
        move |source| ReleaseError::Io {
            action,
            path,
            source,
        }
    };
    let mut new = tempfile::Builder::new()
        .prefix(".odek-upgrade-")
        .tempfile_in(folder)
        .map_err(io("creating a file in", folder))?;
    new.write_all(bytes)
        .and_then(|()| set_executable(new.as_file()))
        .and_then(|()| new.as_file().sync_all())
        .map_err(io("writing the new binary in", folder))?;
    keep_previous(binary)?;
    new.persist(binary).map_err(|e| ReleaseError::Io {
        action: "moving the new binary to",
        path: binary.to_path_buf(),
        source: e.error,
    })?;
    let _ = crate::util::files::sync_dir(folder);
    Ok(())
}

/// Swaps `binary` and `odek.old` (each rename atomic; `binary` always present).
pub fn rollback(binary: &Path) -> Result<(), ReleaseError> {
    let folder = folder_of(binary)?;
    let previous = previous_path(binary);
    if !previous.is_file() {
        return Err(ReleaseError::NoPrevious { path: previous });
    }
    let hold = temporary_name(folder, ".odek-rollback-");
    link_or_copy(binary, &hold)?;
    fs::rename(&previous, binary).map_err(|source| {
        let _ = fs::remove_file(&hold);
        ReleaseError::Io {
            action: "putting back",
            path: previous.clone(),
            source,
        }
    })?;
    fs::rename(&hold, &previous).map_err(|source| ReleaseError::Io {
        action: "keeping the replaced binary as",
        path: previous.clone(),
        source,
    })?;
    let _ = crate::util::files::sync_dir(folder);
    Ok(())
}

/// `odek.old` becomes a copy of the current binary (a hard link when the file system has
/// them), through a temporary name and a rename, so an earlier `odek.old` is replaced whole.
fn keep_previous(binary: &Path) -> Result<(), ReleaseError> {
    let folder = folder_of(binary)?;
    let previous = previous_path(binary);
    let hold = temporary_name(folder, ".odek-old-");
    link_or_copy(binary, &hold)?;
    fs::rename(&hold, &previous).map_err(|source| {
        let _ = fs::remove_file(&hold);
        ReleaseError::Io {
            action: "keeping the current binary as",
            path: previous,
            source,
        }
    })
}

fn link_or_copy(from: &Path, to: &Path) -> Result<(), ReleaseError> {
    if fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    fs::copy(from, to)
        .and_then(|_| fs::File::open(to)?.sync_all())
        .map_err(|source| {
            let _ = fs::remove_file(to);
            ReleaseError::Io {
                action: "copying the current binary to",
                path: to.to_path_buf(),
                source,
            }
        })
}

/// A name in `folder` that nothing uses yet.
fn temporary_name(folder: &Path, prefix: &str) -> PathBuf {
    loop {
        let name = folder.join(format!("{prefix}{}", crate::random::hex_id::<8>()));
        if fs::symlink_metadata(&name).is_err() {
            return name;
        }
    }
}

#[cfg(unix)]
fn set_executable(file: &fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_file: &fs::File) -> std::io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replace_keeps_the_old_binary_and_rollback_swaps_them() {
        let dir = tempfile::tempdir().expect("dir");
        let binary = dir.path().join("odek");
        fs::write(&binary, b"version one").expect("write");
        replace(&binary, b"version two").expect("replaced");
        assert_eq!(fs::read(&binary).expect("new"), b"version two");
        assert_eq!(
            fs::read(previous_path(&binary)).expect("old"),
            b"version one"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(&binary).expect("meta").permissions().mode();
            assert_eq!(mode & 0o777, 0o755);
        }
        replace(&binary, b"version three").expect("again");
        assert_eq!(
            fs::read(previous_path(&binary)).expect("old"),
            b"version two"
        );

        rollback(&binary).expect("rolled back");
        assert_eq!(fs::read(&binary).expect("back"), b"version two");
        assert_eq!(
            fs::read(previous_path(&binary)).expect("old"),
            b"version three"
        );
        let names: Vec<String> = fs::read_dir(dir.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 2, "no temporary file left: {names:?}");
    }

    #[test]
    fn rollback_without_an_old_binary_is_refused() {
        let dir = tempfile::tempdir().expect("dir");
        let binary = dir.path().join("odek");
        fs::write(&binary, b"only").expect("write");
        assert!(matches!(
            rollback(&binary),
            Err(ReleaseError::NoPrevious { .. })
        ));
        assert_eq!(fs::read(&binary).expect("kept"), b"only");
    }

    #[test]
    fn package_managers_folders_are_refused_with_how_to_upgrade() {
        for (path, says) in [
            ("/usr/bin/odek", "package manager"),
            ("/opt/homebrew/Cellar/odek/1.0.0/bin/odek", "brew upgrade"),
            ("/usr/local/Cellar/odek/1.0.0/bin/odek", "brew upgrade"),
            ("/nix/store/abc-odek-1.0.0/bin/odek", "Nix"),
            ("/home/me/.cargo/bin/odek", "cargo install"),
        ] {
            let refused = check_replaceable(Path::new(path)).expect_err(path);
            let text = refused.to_string();
            assert!(text.contains(says), "{path}: {text}");
            assert!(text.contains("ODEK_INSTALL_DIR"), "{text}");
        }
        let dir = tempfile::tempdir().expect("dir");
        assert!(check_replaceable(&dir.path().join("odek")).is_ok());
    }
}
