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

use super::{Refusal, Rule, SKILL_FILE, SkillError, read_skill_file};

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
    fn refuse(&self, why: Refusal) -> SkillError {
        SkillError::Refused {
            source_name: self.source.clone(),
            why,
        }
    }

    /// The checked relative path of an entry named `raw`.
    fn checked(&self, raw: &Path) -> Result<PathBuf, SkillError> {
        let mut out = PathBuf::new();
        for part in raw.components() {
            match part {
                Component::Normal(p) => out.push(p),
                Component::CurDir => {}
                Component::ParentDir => {
                    return Err(self.refuse(Refusal::ParentComponent(raw.to_path_buf())));
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(self.refuse(Refusal::Absolute(raw.to_path_buf())));
                }
            }
        }
        Ok(out)
    }

    /// Refuses when a folder on the way to `relative` is a link (or not a folder).
    fn no_link_on_the_way(&self, relative: &Path) -> Result<(), SkillError> {
        let mut at = self.root.clone();
        let parents: Vec<_> = relative.components().collect();
        for part in &parents[..parents.len().saturating_sub(1)] {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(meta) if meta.is_dir() => {}
                Ok(_) => {
                    return Err(self.refuse(Refusal::ThroughLink(relative.to_path_buf())));
                }
                Err(_) => break,
            }
        }
        Ok(())
    }

    /// Writes one entry; `content` is read for files (at most what is left of the limit).
    fn put(&mut self, raw: &Path, kind: Kind, content: &mut dyn Read) -> Result<(), SkillError> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(self.refuse(Refusal::TooManyEntries(MAX_ENTRIES)));
        }
        let relative = self.checked(raw)?;
        if relative.as_os_str().is_empty() {
            return Ok(());
        }
        self.no_link_on_the_way(&relative)?;
        let path = self.root.join(&relative);
        let io = |source: io::Error| SkillError::Write {
            path: path.clone(),
            source,
        };
        match kind {
            Kind::Dir => std::fs::create_dir_all(&path).map_err(io),
            Kind::Link(target) => {
                if target.is_absolute() {
                    return Err(self.refuse(Refusal::LinkOutside {
                        at: relative,
                        target,
                    }));
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
                            self.refuse(Refusal::Twice(relative.clone()))
                        }
                        _ => io(e),
                    })?;
                let left = MAX_BYTES - self.bytes;
                let written = io::copy(&mut content.take(left + 1), &mut file).map_err(io)?;
                self.bytes += written;
                if self.bytes > MAX_BYTES {
                    return Err(self.refuse(Refusal::TooLarge(MAX_BYTES >> 20)));
                }
                Ok(())
            }
        }
    }

    /// Makes the links, after everything else, each where no link is on its way.
    fn make_links(&mut self) -> Result<(), SkillError> {
        for (relative, target) in std::mem::take(&mut self.links) {
            self.no_link_on_the_way(&relative)?;
            let path = self.root.join(&relative);
            make_parent(&path)?;
            std::os::unix::fs::symlink(&target, &path).map_err(|source| {
                self.refuse(Refusal::Link {
                    at: relative.clone(),
                    source,
                })
            })?;
        }
        Ok(())
    }
}

/// Refuses a skill folder holding a link that does not resolve to a place inside it
/// (checked once every link exists, so chains of links are followed as the system will).
fn check_links(skill: &Path, source: &str) -> Result<(), SkillError> {
    let root = skill.canonicalize().map_err(SkillError::reading(skill))?;
    let mut pending = vec![skill.to_path_buf()];
    while let Some(dir) = pending.pop() {
        let entries = std::fs::read_dir(&dir).map_err(SkillError::reading(&dir))?;
        for entry in entries.filter_map(Result::ok) {
            let kind = entry
                .file_type()
                .map_err(SkillError::reading(&entry.path()))?;
            let path = entry.path();
            if kind.is_symlink() {
                let inside = path.canonicalize().is_ok_and(|t| t.starts_with(&root));
                if !inside {
                    let target = std::fs::read_link(&path).unwrap_or_default();
                    let at = path.strip_prefix(skill).unwrap_or(&path);
                    return Err(SkillError::Refused {
                        source_name: source.to_string(),
                        why: Refusal::LinkNowhere {
                            at: at.to_path_buf(),
                            target,
                        },
                    });
                }
            } else if kind.is_dir() {
                pending.push(path);
            }
        }
    }
    Ok(())
}

fn make_parent(path: &Path) -> Result<(), SkillError> {
    match path.parent() {
        Some(dir) => std::fs::create_dir_all(dir).map_err(SkillError::writing(dir)),
        None => Ok(()),
    }
}

/// Imports `source` into `skills_dir` (created when missing); `force` replaces skills of the
/// same name. Returns the names installed.
pub fn import(source: &Path, skills_dir: &Path, force: bool) -> Result<Vec<String>, SkillError> {
    std::fs::create_dir_all(skills_dir).map_err(SkillError::writing(skills_dir))?;
    let staging = tempfile::Builder::new()
        .prefix(".import-")
        .tempdir_in(skills_dir)
        .map_err(SkillError::writing(skills_dir))?;
    let mut stage = Stage {
        root: staging.path().join("unpacked"),
        entries: 0,
        bytes: 0,
        source: source.display().to_string(),
        links: Vec::new(),
    };
    std::fs::create_dir(&stage.root).map_err(SkillError::writing(&stage.root))?;
    unpack(source, &mut stage)?;
    stage.make_links()?;
    let found = staged_skills(&stage.root, staging.path(), &stage.source)?;
    for (name, _) in &found {
        let target = skills_dir.join(name);
        if target.exists() && !force {
            return Err(SkillError::AlreadyInstalled {
                name: name.clone(),
                path: target,
            });
        }
    }
    for (name, dir) in &found {
        install(dir, &skills_dir.join(name), staging.path())?;
    }
    Ok(found.into_iter().map(|(name, _)| name).collect())
}

/// Moves `dir` to `target`; an installed skill there is moved aside first and deleted only
/// once the new one is in place (put back if the move fails).
fn install(dir: &Path, target: &Path, staging: &Path) -> Result<(), SkillError> {
    let cannot = |e: io::Error| SkillError::writing(target)(e);
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

fn unpack(source: &Path, stage: &mut Stage) -> Result<(), SkillError> {
    let meta = std::fs::metadata(source).map_err(SkillError::reading(source))?;
    if meta.is_dir() {
        return copy_folder(source, Path::new(""), stage);
    }
    let name = source.to_string_lossy().to_lowercase();
    let file = File::open(source).map_err(SkillError::reading(source))?;
    if name.ends_with(".zip") {
        unzip(file, stage)
    } else if name.ends_with(".tar.gz") || name.ends_with(".tgz") {
        untar(flate2::read::GzDecoder::new(file), stage)
    } else if name.ends_with(".tar") {
        untar(file, stage)
    } else {
        Err(SkillError::NotImportable(source.to_path_buf()))
    }
}

fn copy_folder(root: &Path, relative: &Path, stage: &mut Stage) -> Result<(), SkillError> {
    let dir = root.join(relative);
    let read = |e: io::Error| SkillError::reading(&dir)(e);
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
            return Err(stage.refuse(Refusal::Special(path)));
        }
    }
    Ok(())
}

fn unzip(file: File, stage: &mut Stage) -> Result<(), SkillError> {
    let source = stage.source.clone();
    let bad = |e: zip::result::ZipError| bad_archive(&source, "zip", Box::new(e));
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
                .map_err(|e| bad_archive(&source, "zip", Box::new(e)))?;
            stage.put(&raw, Kind::Link(PathBuf::from(target)), &mut io::empty())?;
        } else if entry.is_dir() {
            stage.put(&raw, Kind::Dir, &mut io::empty())?;
        } else {
            stage.put(&raw, Kind::File, &mut entry)?;
        }
    }
    Ok(())
}

fn untar(reader: impl Read, stage: &mut Stage) -> Result<(), SkillError> {
    let source = stage.source.clone();
    let bad = |e: io::Error| bad_archive(&source, "tar", Box::new(e));
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(bad)? {
        let mut entry = entry.map_err(bad)?;
        let raw = entry.path().map_err(bad)?.into_owned();
        let kind = entry.header().entry_type();
        if kind.is_symlink() {
            let target = entry.link_name().map_err(bad)?.unwrap_or_default();
            stage.put(&raw, Kind::Link(target.into_owned()), &mut io::empty())?;
        } else if kind.is_hard_link() {
            return Err(stage.refuse(Refusal::HardLink(raw)));
        } else if kind.is_dir() {
            stage.put(&raw, Kind::Dir, &mut io::empty())?;
        } else if kind.is_file() {
            stage.put(&raw, Kind::File, &mut entry)?;
        } else if !kind.is_pax_global_extensions() && !kind.is_pax_local_extensions() {
            return Err(stage.refuse(Refusal::Special(raw)));
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
) -> Result<Vec<(String, PathBuf)>, SkillError> {
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
        return Err(SkillError::NoSkillFound);
    }
    let mut found = Vec::new();
    for dir in candidates {
        check_links(&dir, source)?;
        let name = declared_name(&dir)?;
        let place = staging.join(format!("skill-{name}"));
        if place.exists() {
            return Err(SkillError::Duplicate(name));
        }
        std::fs::create_dir(&place).map_err(SkillError::writing(&place))?;
        let home = place.join(&name);
        std::fs::rename(&dir, &home).map_err(SkillError::writing(&home))?;
        read_skill_file(&home).map_err(|rule| SkillError::Breaks {
            name: name.clone(),
            rule: Box::new(rule.into()),
        })?;
        found.push((name, home));
    }
    Ok(found)
}

/// The `name` a `SKILL.md` declares, checked (the folder it lands in takes that name).
fn declared_name(dir: &Path) -> Result<String, SkillError> {
    let file = dir.join(SKILL_FILE);
    let text = std::fs::read_to_string(&file).map_err(SkillError::reading(&file))?;
    let in_file = |rule: Rule| SkillError::InFile {
        file: file.clone(),
        rule,
    };
    let name = super::frontmatter::declared_name(&text).ok_or_else(|| in_file(Rule::NoName))?;
    super::frontmatter::check_name(&name, &name).map_err(in_file)?;
    Ok(name)
}

fn bad_archive(
    source: &str,
    format: &'static str,
    reason: Box<dyn std::error::Error + Send + Sync>,
) -> SkillError {
    SkillError::BadArchive {
        source_name: source.to_string(),
        format,
        reason,
    }
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
mod tests;
