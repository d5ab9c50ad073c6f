//! `odek skill import PATH|ARCHIVE`: a skill folder, a folder of skill folders, or a `.zip`
//! / `.tar.gz` of either, copied into `<home>/skills` — after checks, all or nothing.
//!
//! Nothing outside the skill is ever written or linked to: an entry with a `..` component or
//! an absolute path, a hard link, or a symbolic link whose target leaves the skill refuses the
//! whole import; so do more than [`MAX_ENTRIES`] entries or [`MAX_BYTES`] bytes unpacked
//! (counted as written, whatever an archive's headers claim). Every skill is checked against
//! the format's rules before any is installed.

use std::fs::File;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};

use super::{SKILL_FILE, read_skill_file};

/// Most entries an import may unpack.
pub const MAX_ENTRIES: usize = super::trust::MAX_FILES;
/// Most bytes an import may unpack.
pub const MAX_BYTES: u64 = 64 * 1024 * 1024;

/// One thing to unpack, its path checked.
enum Kind {
    Dir,
    File,
    Link(PathBuf),
}

/// Unpacks into a staging folder, counting what it writes. Links are made last, after every
/// file and folder, and nothing is ever written through a link: each entry's folders are
/// checked not to be links, and files are created new.
struct Stage {
    root: PathBuf,
    entries: usize,
    bytes: u64,
    source: String,
    links: Vec<(PathBuf, PathBuf)>,
}

impl Stage {
    fn refuse(&self, why: impl std::fmt::Display) -> String {
        format!("refusing {}: {why}", self.source)
    }

    /// The checked relative path of an entry named `raw`.
    fn checked(&self, raw: &Path) -> Result<PathBuf, String> {
        let mut out = PathBuf::new();
        for part in raw.components() {
            match part {
                Component::Normal(p) => out.push(p),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(
                        self.refuse(format!("entry \"{}\" has a `..` component", raw.display()))
                    );
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(
                        self.refuse(format!("entry \"{}\" is an absolute path", raw.display()))
                    );
                }
            }
        }
        Ok(out)
    }

    /// Refuses when a folder on the way to `relative` is a link (or not a folder).
    fn no_link_on_the_way(&self, relative: &Path) -> Result<(), String> {
        let mut at = self.root.clone();
        let parents: Vec<_> = relative.components().collect();
        for part in &parents[..parents.len().saturating_sub(1)] {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(self.refuse(format!(
                        "entry \"{}\" would be written through a link or a file",
                        relative.display()
                    )));
                }
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Writes one entry; `content` is read for files (at most what is left of the limit).
    fn put(&mut self, raw: &Path, kind: Kind, content: &mut dyn Read) -> Result<(), String> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(self.refuse(format!("more than {MAX_ENTRIES} entries")));
        }
        let relative = self.checked(raw)?;
        if relative.as_os_str().is_empty() {
            return Ok(());
        }
        self.no_link_on_the_way(&relative)?;
        let path = self.root.join(&relative);
        let io = |e: io::Error| format!("cannot write {}: {e}", path.display());
        match kind {
            Kind::Dir => std::fs::create_dir_all(&path).map_err(io),
            Kind::Link(target) => {
                if target.is_absolute() {
                    return Err(self.refuse(format!(
                        "link \"{}\" points outside the skill ({})",
                        relative.display(),
                        target.display()
                    )));
                }
                self.links.push((relative, target));
                Ok(())
            }
            Kind::File => {
                make_parent(&path)?;
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
                    .map_err(|e| match e.kind() {
                        io::ErrorKind::AlreadyExists => {
                            self.refuse(format!("entry \"{}\" appears twice", relative.display()))
                        }
                        _ => io(e),
                    })?;
                let left = MAX_BYTES - self.bytes;
                let written = io::copy(&mut content.take(left + 1), &mut file).map_err(io)?;
                self.bytes += written;
                if self.bytes > MAX_BYTES {
                    return Err(self.refuse(format!("it unpacks to over {} MiB", MAX_BYTES >> 20)));
                }
                Ok(())
            }
        }
    }

    /// Makes the links, after everything else, each where no link is on its way.
    fn make_links(&mut self) -> Result<(), String> {
        for (relative, target) in std::mem::take(&mut self.links) {
            self.no_link_on_the_way(&relative)?;
            let path = self.root.join(&relative);
            make_parent(&path)?;
            std::os::unix::fs::symlink(&target, &path)
                .map_err(|e| self.refuse(format!("link \"{}\": {e}", relative.display())))?;
        }
        Ok(())
    }
}

/// Refuses a skill folder holding a link that does not resolve to a place inside it
/// (checked once every link exists, so chains of links are followed as the system will).
fn check_links(skill: &Path, source: &str) -> Result<(), String> {
    let root = skill
        .canonicalize()
        .map_err(|e| format!("cannot read {}: {e}", skill.display()))?;
    let mut pending = vec![skill.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(|e| e.to_string())?;
        for entry in entries.filter_map(Result::ok) {
            let kind = entry.file_type().map_err(|e| e.to_string())?;
            let path = entry.path();
            if kind.is_symlink() {
                let inside = path.canonicalize().is_ok_and(|t| t.starts_with(&root));
                if !inside {
                    let target = std::fs::read_link(&path).unwrap_or_default();
                    let at = path.strip_prefix(skill).unwrap_or(&path);
                    return Err(format!(
                        "refusing {source}: link \"{}\" points outside the skill or to nothing ({})",
                        at.display(),
                        target.display()
                    ));
                }
            } else if kind.is_dir() {
                pending.push(path);
            }
        }
    }
    Ok(())
}

fn make_parent(path: &Path) -> Result<(), String> {
    match path.parent() {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot write {}: {e}", dir.display()))
        }
        None => Ok(()),
    }
}

/// Imports `source` into `skills_dir` (created when missing); `force` replaces skills of the
/// same name. Returns the names installed.
pub fn import(source: &Path, skills_dir: &Path, force: bool) -> Result<Vec<String>, String> {
    std::fs::create_dir_all(skills_dir)
        .map_err(|e| format!("cannot create {}: {e}", skills_dir.display()))?;
    let staging = tempfile::Builder::new()
        .prefix(".import-")
        .tempdir_in(skills_dir)
        .map_err(|e| format!("cannot stage the import in {}: {e}", skills_dir.display()))?;
    let mut stage = Stage {
        root: staging.path().join("unpacked"),
        entries: 0,
        bytes: 0,
        source: source.display().to_string(),
        links: Vec::new(),
    };
    std::fs::create_dir(&stage.root).map_err(|e| e.to_string())?;
    unpack(source, &mut stage)?;
    stage.make_links()?;
    let found = staged_skills(&stage.root, staging.path(), &stage.source)?;
    for (name, _) in &found {
        let target = skills_dir.join(name);
        if target.exists() && !force {
            return Err(format!(
                "skill \"{name}\" is already installed in {}: remove it first (odek skill remove {name}) or import with --force",
                target.display()
            ));
        }
    }
    for (name, dir) in &found {
        install(dir, &skills_dir.join(name), staging.path())?;
    }
    Ok(found.into_iter().map(|(name, _)| name).collect())
}

/// Moves `dir` to `target`; an installed skill there is moved aside first and deleted only
/// once the new one is in place (put back if the move fails).
fn install(dir: &Path, target: &Path, staging: &Path) -> Result<(), String> {
    let cannot = |e: io::Error| format!("cannot install {}: {e}", target.display());
    let aside = staging.join("replaced");
    let replacing = std::fs::symlink_metadata(target).is_ok();
    if replacing {
        std::fs::rename(target, &aside).map_err(cannot)?;
    }
    if let Err(e) = std::fs::rename(dir, target) {
        if replacing {
            let _ = std::fs::rename(&aside, target);
        }
        return Err(cannot(e));
    }
    if replacing {
        let _ = std::fs::remove_dir_all(&aside);
    }
    Ok(())
}

fn unpack(source: &Path, stage: &mut Stage) -> Result<(), String> {
    let meta =
        std::fs::metadata(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    if meta.is_dir() {
        return copy_folder(source, Path::new(""), stage);
    }
    let name = source.to_string_lossy().to_lowercase();
    let file = File::open(source).map_err(|e| format!("cannot read {}: {e}", source.display()))?;
    if name.ends_with(".zip") {
        unzip(file, stage)
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        untar(flate2::read::GzDecoder::new(file), stage)
    } else if name.ends_with(".tar") {
        untar(file, stage)
    } else {
        Err(format!(
            "{} is neither a folder nor a .zip, .tar.gz or .tar archive",
            source.display()
        ))
    }
}

fn copy_folder(root: &Path, relative: &Path, stage: &mut Stage) -> Result<(), String> {
    let dir = root.join(relative);
    let read = |e: io::Error| format!("cannot read {}: {e}", dir.display());
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .map_err(read)?
        .collect::<Result<_, _>>()
        .map_err(read)?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = relative.join(entry.file_name());
        let kind = entry.file_type().map_err(read)?;
        if kind.is_symlink() {
            let target = std::fs::read_link(entry.path()).map_err(read)?;
            stage.put(&path, Kind::Link(target), &mut io::empty())?;
        } else if kind.is_dir() {
            stage.put(&path, Kind::Dir, &mut io::empty())?;
            copy_folder(root, &path, stage)?;
        } else if kind.is_file() {
            let mut file = File::open(entry.path()).map_err(read)?;
            stage.put(&path, Kind::File, &mut file)?;
        } else {
            return Err(stage.refuse(format!(
                "\"{}\" is neither a file, a folder nor a link",
                path.display()
            )));
        }
    }
    Ok(())
}

fn unzip(file: File, stage: &mut Stage) -> Result<(), String> {
    let source = stage.source.clone();
    let bad = |e: zip::result::ZipError| format!("{source} is not a readable zip archive: {e}");
    let mut archive = zip::ZipArchive::new(file).map_err(bad)?;
    for i in 0..archive.len() {
        let mut entry = archive.by_index(i).map_err(bad)?;
        let raw = PathBuf::from(entry.name().map_err(bad)?.into_owned());
        if entry.is_symlink() {
            let mut target = String::new();
            entry
                .by_ref()
                .take(4096)
                .read_to_string(&mut target)
                .map_err(|e| e.to_string())?;
            stage.put(&raw, Kind::Link(PathBuf::from(target)), &mut io::empty())?;
        } else if entry.is_dir() {
            stage.put(&raw, Kind::Dir, &mut io::empty())?;
        } else {
            stage.put(&raw, Kind::File, &mut entry)?;
        }
    }
    Ok(())
}

fn untar(reader: impl Read, stage: &mut Stage) -> Result<(), String> {
    let source = stage.source.clone();
    let bad = |e: io::Error| format!("{source} is not a readable tar archive: {e}");
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let raw = entry.path().map_err(bad)?.into_owned();
        let kind = entry.header().entry_type();
        if kind.is_symlink() {
            let target = entry.link_name().map_err(bad)?.unwrap_or_default();
            stage.put(&raw, Kind::Link(target.into_owned()), &mut io::empty())?;
        } else if kind.is_hard_link() {
            return Err(stage.refuse(format!("entry \"{}\" is a hard link", raw.display())));
        } else if kind.is_dir() {
            stage.put(&raw, Kind::Dir, &mut io::empty())?;
        } else if kind.is_file() {
            stage.put(&raw, Kind::File, &mut entry)?;
        } else if !kind.is_pax_global_extensions() && !kind.is_pax_local_extensions() {
            return Err(stage.refuse(format!(
                "entry \"{}\" is neither a file, a folder nor a link",
                raw.display()
            )));
        }
    }
    Ok(())
}

/// The skills unpacked under `root`, each moved to `staging/<name>` and checked: a skill at
/// the root, skill folders at the root, or either inside one wrapping folder.
fn staged_skills(
    root: &Path,
    staging: &Path,
    source: &str,
) -> Result<Vec<(String, PathBuf)>, String> {
    let mut base = root.to_path_buf();
    if !base.join(SKILL_FILE).exists() {
        let subdirs = subdirs(&base);
        if let [only] = subdirs.as_slice()
            && !only.join(SKILL_FILE).exists()
        {
            base = only.clone();
        }
    }
    let candidates: Vec<PathBuf> = if base.join(SKILL_FILE).exists() {
        vec![base]
    } else {
        super::skill_dirs(&base)
            .into_iter()
            .filter(|d| std::fs::symlink_metadata(d).is_ok_and(|m| m.is_dir()))
            .collect()
    };
    if candidates.is_empty() {
        return Err("no SKILL.md found: a skill is a folder with a SKILL.md".into());
    }
    let mut found = Vec::new();
    for dir in candidates {
        check_links(&dir, source)?;
        let name = declared_name(&dir)?;
        let place = staging.join(format!("skill-{name}"));
        if place.exists() {
            return Err(format!("the import holds two skills named \"{name}\""));
        }
        std::fs::create_dir(&place).map_err(|e| e.to_string())?;
        let home = place.join(&name);
        std::fs::rename(&dir, &home).map_err(|e| e.to_string())?;
        read_skill_file(&home).map_err(|rule| format!("skill \"{name}\" breaks a rule: {rule}"))?;
        found.push((name, home));
    }
    Ok(found)
}

/// The `name` a `SKILL.md` declares, checked (the folder it lands in takes that name).
fn declared_name(dir: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(dir.join(SKILL_FILE))
        .map_err(|e| format!("cannot read {}: {e}", dir.join(SKILL_FILE).display()))?;
    let name = super::frontmatter::declared_name(&text).ok_or_else(|| {
        format!(
            "{} has no `name` in its front matter",
            dir.join(SKILL_FILE).display()
        )
    })?;
    super::frontmatter::check_name(&name, &name)
        .map_err(|rule| format!("{}: {rule}", dir.join(SKILL_FILE).display()))?;
    Ok(name)
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| e.path())
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
