//! Trust of the skills a project brings: `odek skill trust NAME` records a hash of the skill's
//! whole folder in `<home>/skills-trust.json`; a folder that no longer matches it (a file
//! added, changed, removed or renamed; a link retargeted) needs trust again.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::SkillError;
use crate::session::DirLock;
use crate::util::files::{Permissions, ensure_dir, write_atomically};
use crate::util::hex;

/// The trust records, in the odek home.
pub const TRUST_FILE: &str = "skills-trust.json";
/// Most files a skill folder may hold to be hashed (and trusted).
pub const MAX_FILES: usize = 2_000;
/// Most bytes a skill folder may hold to be hashed (and trusted).
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// The hash of everything in `dir`: each entry's relative path (its bytes) and kind, a
/// file's permission bits and bytes, a link's target (never followed; a link that resolves
/// outside the folder makes the folder untrustable, since the hash cannot cover what it
/// points to), in path order. `sha256:` + hex.
pub fn folder_hash(dir: &Path) -> Result<String, SkillError> {
    folder_hash_reading(dir, None).map(|(hash, _)| hash)
}

/// [`folder_hash`], also returning the bytes of the file `want` (relative) as they were
/// hashed, so what is then used is exactly what was checked.
pub fn folder_hash_reading(
    dir: &Path,
    want: Option<&Path>,
) -> Result<(String, Option<Vec<u8>>), SkillError> {
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;
    let root = dir.canonicalize().map_err(SkillError::reading(dir))?;
    let mut entries = Vec::new();
    collect(dir, Path::new(""), &mut entries)?;
    entries.sort();
    let mut hasher = Sha256::new();
    let mut field = |bytes: &[u8]| {
        hasher.update((bytes.len() as u64).to_le_bytes());
        hasher.update(bytes);
    };
    let mut bytes = 0u64;
    let mut wanted = None;
    for relative in &entries {
        let path = dir.join(relative);
        let meta = std::fs::symlink_metadata(&path).map_err(SkillError::reading(&path))?;
        field(relative.as_os_str().as_bytes());
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(&path).map_err(SkillError::reading(&path))?;
            if !path.canonicalize().is_ok_and(|t| t.starts_with(&root)) {
                return Err(SkillError::UnhashableLink(relative.clone()));
            }
            field(b"link");
            field(target.as_os_str().as_bytes());
        } else if meta.is_dir() {
            field(b"dir");
        } else if meta.is_file() {
            bytes += meta.len();
            if bytes > MAX_BYTES {
                return Err(SkillError::TooLargeToTrust(MAX_BYTES >> 20));
            }
            let content = std::fs::read(&path).map_err(SkillError::reading(&path))?;
            field(b"file");
            field(&(meta.permissions().mode() & 0o7777).to_le_bytes());
            field(&content);
            if want == Some(relative.as_path()) {
                wanted = Some(content);
            }
        } else {
            field(b"other");
        }
    }
    Ok((
        format!("sha256:{}", hex::encode(&hasher.finalize())),
        wanted,
    ))
}

/// The hash of a file's exact bytes: `sha256:` + hex.
pub fn content_hash(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(&Sha256::digest(bytes)))
}

fn collect(root: &Path, relative: &Path, out: &mut Vec<PathBuf>) -> Result<(), SkillError> {
    let dir = root.join(relative);
    let entries = std::fs::read_dir(&dir).map_err(SkillError::reading(&dir))?;
    for entry in entries {
        let entry = entry.map_err(SkillError::reading(&dir))?;
        let path = relative.join(entry.file_name());
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        out.push(path.clone());
        if out.len() > MAX_FILES {
            return Err(SkillError::TooManyToTrust(MAX_FILES));
        }
        if is_dir {
            collect(root, &path, out)?;
        }
    }
    Ok(())
}

/// One trusted skill folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Record {
    /// The skill's name when it was trusted.
    pub name: String,
    /// [`folder_hash`] of the folder when it was trusted.
    pub hash: String,
    /// When (RFC 3339, UTC).
    pub trusted_at: String,
}

/// What the records say about one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustState {
    /// No record.
    NotTrusted,
    /// Recorded, and the folder is as it was.
    Trusted,
    /// Recorded, but the folder changed since (or can no longer be hashed: why).
    Changed(Option<String>),
}

/// `<home>/skills-trust.json`: the trusted folders by canonical path (and, in
/// `<home>/hooks-trust.json`, the trusted project hooks files).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrustStore {
    #[serde(default, rename = "trusted", alias = "skills")]
    skills: BTreeMap<String, Record>,
}

/// The key of a folder: its canonical path (a project reached through a link is the same
/// project).
pub fn folder_key(dir: &Path) -> String {
    dir.canonicalize()
        .unwrap_or_else(|_| dir.to_path_buf())
        .display()
        .to_string()
}

impl TrustStore {
    /// The records of `home`; none when the file does not exist. A damaged file trusts
    /// nothing and says so.
    pub fn load(home: &Path) -> Result<TrustStore, SkillError> {
        TrustStore::load_in(home, TRUST_FILE)
    }

    /// The records of `home/file`.
    pub fn load_in(home: &Path, file: &str) -> Result<TrustStore, SkillError> {
        let path = home.join(file);
        match std::fs::read(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(TrustStore::default()),
            Err(e) => Err(SkillError::reading(&path)(e)),
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|source| SkillError::TrustDamaged { path, source }),
        }
    }

    /// What the records say about the skill folder `dir`.
    pub fn state(&self, dir: &Path) -> TrustState {
        let Some(record) = self.skills.get(&folder_key(dir)) else {
            return TrustState::NotTrusted;
        };
        match folder_hash(dir) {
            Ok(hash) if hash == record.hash => TrustState::Trusted,
            Ok(_) => TrustState::Changed(None),
            Err(why) => TrustState::Changed(Some(why.to_string())),
        }
    }

    /// What the records say about `path` whose content now hashes to `hash`.
    pub fn state_hashed(&self, path: &Path, hash: &str) -> TrustState {
        match self.skills.get(&folder_key(path)) {
            None => TrustState::NotTrusted,
            Some(record) if record.hash == hash => TrustState::Trusted,
            Some(_) => TrustState::Changed(None),
        }
    }

    /// True when a record names `dir`, whatever its hash.
    pub fn has(&self, dir: &Path) -> bool {
        self.skills.contains_key(&folder_key(dir))
    }

    /// The record of `dir`.
    pub fn record(&self, dir: &Path) -> Option<&Record> {
        self.skills.get(&folder_key(dir))
    }

    /// Changes the records of `home` under its lock: read, `change`, write atomically.
    /// Returns what `change` returned.
    pub fn update<T>(
        home: &Path,
        change: impl FnOnce(&mut TrustStore) -> Result<T, SkillError>,
    ) -> Result<T, SkillError> {
        TrustStore::update_in(home, TRUST_FILE, change)
    }

    /// [`Self::update`] of `home/file`.
    pub fn update_in<T>(
        home: &Path,
        file: &str,
        change: impl FnOnce(&mut TrustStore) -> Result<T, SkillError>,
    ) -> Result<T, SkillError> {
        ensure_dir(home).map_err(SkillError::writing(home))?;
        let lock_path = home.join(format!(".{file}.lock"));
        let _lock = DirLock::acquire(&lock_path).map_err(SkillError::writing(&lock_path))?;
        let mut store = TrustStore::load_in(home, file)?;
        let result = change(&mut store)?;
        let path = home.join(file);
        let mut bytes = serde_json::to_vec_pretty(&store)
            .map_err(|e| SkillError::writing(&path)(io::Error::other(e)))?;
        bytes.push(b'\n');
        write_atomically(&path, &bytes, Permissions::Private)
            .map_err(SkillError::writing(&path))?;
        Ok(result)
    }

    /// Records `dir` (the skill `name`) as trusted with its current hash.
    pub fn trust(&mut self, dir: &Path, name: &str) -> Result<(), SkillError> {
        let hash = folder_hash(dir)?;
        self.trust_hashed(dir, name, hash);
        Ok(())
    }

    /// Records `path` (named `name`) as trusted with the hash of its content.
    pub fn trust_hashed(&mut self, path: &Path, name: &str, hash: String) {
        let trusted_at = crate::util::timestamp::now_rfc3339_precise();
        self.skills.insert(
            folder_key(path),
            Record {
                name: name.to_string(),
                hash,
                trusted_at,
            },
        );
    }

    /// Forgets `dir`; false when it was not recorded.
    pub fn untrust(&mut self, dir: &Path) -> bool {
        self.skills.remove(&folder_key(dir)).is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill_dir() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("SKILL.md"), "---\nname: x\n---\n").unwrap();
        std::fs::create_dir(d.path().join("scripts")).unwrap();
        std::fs::write(d.path().join("scripts/run.sh"), "echo hi\n").unwrap();
        d
    }

    #[test]
    fn the_hash_sees_every_change_in_the_folder() {
        let d = skill_dir();
        let first = folder_hash(d.path()).unwrap();
        assert!(first.starts_with("sha256:") && first.len() == 7 + 64);
        assert_eq!(folder_hash(d.path()).unwrap(), first, "stable");
        std::fs::write(d.path().join("scripts/run.sh"), "echo ho\n").unwrap();
        let edited = folder_hash(d.path()).unwrap();
        assert_ne!(edited, first);
        std::fs::rename(
            d.path().join("scripts/run.sh"),
            d.path().join("scripts/go.sh"),
        )
        .unwrap();
        let renamed = folder_hash(d.path()).unwrap();
        assert_ne!(renamed, edited);
        std::os::unix::fs::symlink("SKILL.md", d.path().join("link")).unwrap();
        let linked = folder_hash(d.path()).unwrap();
        assert_ne!(linked, renamed);
        std::fs::remove_file(d.path().join("link")).unwrap();
        std::os::unix::fs::symlink("scripts/go.sh", d.path().join("link")).unwrap();
        assert_ne!(folder_hash(d.path()).unwrap(), linked, "a retargeted link");
        use std::os::unix::fs::PermissionsExt;
        let now = folder_hash(d.path()).unwrap();
        std::fs::set_permissions(
            d.path().join("scripts/go.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        assert_ne!(folder_hash(d.path()).unwrap(), now, "chmod +x is a change");
    }

    #[test]
    fn a_link_out_of_the_folder_cannot_be_trusted() {
        let d = skill_dir();
        std::os::unix::fs::symlink("../../docs", d.path().join("references")).unwrap();
        let e = folder_hash(d.path()).unwrap_err().to_string();
        assert!(e.contains("points outside the skill folder"), "{e}");
        let (_, bytes) =
            folder_hash_reading(skill_dir().path(), Some(Path::new("SKILL.md"))).unwrap();
        assert_eq!(bytes.as_deref(), Some(&b"---\nname: x\n---\n"[..]));
    }

    #[test]
    fn records_round_trip_and_a_change_needs_trust_again() {
        let home = tempfile::tempdir().unwrap();
        let d = skill_dir();
        assert_eq!(
            TrustStore::load(home.path()).unwrap().state(d.path()),
            TrustState::NotTrusted
        );
        TrustStore::update(home.path(), |s| s.trust(d.path(), "x")).unwrap();
        let store = TrustStore::load(home.path()).unwrap();
        assert_eq!(store.state(d.path()), TrustState::Trusted);
        std::fs::write(d.path().join("extra.md"), "new").unwrap();
        assert_eq!(store.state(d.path()), TrustState::Changed(None));
        let removed = TrustStore::update(home.path(), |s| Ok(s.untrust(d.path()))).unwrap();
        assert!(removed);
        assert!(!TrustStore::load(home.path()).unwrap().has(d.path()));
    }

    #[test]
    fn a_damaged_file_trusts_nothing_and_says_so() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join(TRUST_FILE), "{not json").unwrap();
        let e = TrustStore::load(home.path()).unwrap_err().to_string();
        assert!(e.contains("is damaged"), "{e}");
    }
}
