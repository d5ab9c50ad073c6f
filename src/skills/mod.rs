//! Skills in the open `SKILL.md` format: folders found in `<home>/skills`, the project's
//! `.odek/skills` and `.agents/skills`, and `skills.dirs`; their front matter checked; the
//! project's offered only once trusted by hash; listed to the model in one stable block and
//! loaded on demand with `skill_load` (see docs/SKILLS.md).

pub mod block;
mod error;
pub mod frontmatter;
pub mod import;
pub mod tools;
pub mod trust;

use std::path::{Path, PathBuf};

use frontmatter::{FrontMatter, MAX_SKILL_FILE_BYTES, SkillFile};
use trust::{TrustState, TrustStore};

pub use error::{Refusal, Rule, SkillError};

/// A skill's file.
pub const SKILL_FILE: &str = "SKILL.md";

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// `<home>/skills`: the user's own, trusted.
    Home,
    /// The project's `.odek/skills`.
    Project,
    /// The project's `.agents/skills` (the folder other agents share).
    Agents,
    /// A folder of `skills.dirs` in the global config.
    Configured,
}

impl Origin {
    /// How `odek skill list` names it.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Home => "home",
            Origin::Project => "project",
            Origin::Agents => "project (.agents)",
            Origin::Configured => "skills.dirs",
        }
    }

    /// True for the folders a cloned repository can bring.
    pub fn from_project(self) -> bool {
        matches!(self, Origin::Project | Origin::Agents)
    }
}

/// A valid skill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its front matter.
    pub front: FrontMatter,
    /// Its folder.
    pub dir: PathBuf,
    /// Where it was found.
    pub origin: Origin,
    /// What the trust records say (home skills are trusted without one).
    pub trust: TrustState,
}

impl Skill {
    /// The skill's name.
    pub fn name(&self) -> &str {
        &self.front.name
    }

    /// True when its instructions reach the model unwrapped: a home skill, or one trusted by
    /// hash.
    pub fn trusted(&self) -> bool {
        self.origin == Origin::Home || self.trust == TrustState::Trusted
    }

    /// True when the model may see and load it: every trusted skill, and those of
    /// `skills.dirs` (the user named the folder; its bodies arrive wrapped until trusted).
    /// A project's skill is offered only once trusted, and no longer after it changed.
    pub fn offered(&self) -> bool {
        self.trusted() || self.origin == Origin::Configured
    }

    /// Why it is not offered, for `odek skill list` (`None` when it is).
    pub fn why_not_offered(&self) -> Option<String> {
        if self.offered() {
            return None;
        }
        Some(match &self.trust {
            TrustState::NotTrusted => {
                format!("not trusted: run `odek skill trust {}`", self.name())
            }
            TrustState::Changed(None) => format!(
                "changed since it was trusted: review it, then run `odek skill trust {}` again",
                self.name()
            ),
            TrustState::Changed(Some(why)) => format!("cannot be checked: {why}"),
            TrustState::Trusted => String::new(),
        })
    }
}

impl Skill {
    /// `offered`, `offered, auto-loaded`, `offered (its text reaches the model as untrusted
    /// data)`, or why it is not offered.
    pub fn status(&self) -> String {
        match self.why_not_offered() {
            Some(why) => why,
            None if self.front.auto_load => "offered, auto-loaded".into(),
            None if !self.trusted() => {
                "offered (its text reaches the model as untrusted data)".into()
            }
            None => "offered".into(),
        }
    }

    /// What `odek skill list --json` and `GET /api/skills` show of it.
    pub fn view(&self) -> crate::protocol::api::SkillView {
        crate::protocol::api::SkillView {
            name: self.name().to_string(),
            description: self.front.description.clone(),
            origin: self.origin.label(),
            dir: self.dir.display().to_string(),
            offered: self.offered(),
            trusted: self.trusted(),
            status: self.status(),
        }
    }

    /// Records the user's trust in it (its folder's hash now); false for a home skill,
    /// trusted without a record.
    pub fn trust_now(&self, home: &Path) -> Result<bool, SkillError> {
        if self.origin == Origin::Home {
            return Ok(false);
        }
        TrustStore::update(home, |store| store.trust(&self.dir, self.name()))?;
        Ok(true)
    }
}

/// A folder that holds a `SKILL.md` breaking a rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// The `SKILL.md`.
    pub file: PathBuf,
    /// The rule it breaks.
    pub rule: String,
    /// Where it was found.
    pub origin: Origin,
}

impl Broken {
    /// The one warning line: the file and the rule.
    pub fn warning(&self) -> String {
        format!(
            "odek: skipping skill {}: {}",
            self.file.display(),
            self.rule
        )
    }
}

/// Every skill found, in search order, first of each name winning.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The valid skills, sorted by name.
    pub skills: Vec<Skill>,
    /// The skipped ones, in search order.
    pub broken: Vec<Broken>,
    /// Skills hidden by one of the same name found earlier: (hidden, winner).
    pub shadowed: Vec<(Skill, PathBuf)>,
    /// A problem with the trust records (a damaged file trusts nothing).
    pub trust_problem: Option<String>,
    /// The odek home, whose `skills-trust.json` holds the records.
    pub home: PathBuf,
}

/// Where to look, in order.
#[derive(Debug, Clone)]
pub struct Places {
    /// `<home>/skills`.
    pub home: PathBuf,
    /// The project's root (its Git work tree's, else the working directory).
    pub project: Option<PathBuf>,
    /// `skills.dirs`.
    pub configured: Vec<PathBuf>,
}

impl Places {
    /// The places of an odek home, a project (its root: see [`crate::memory::project_key`])
    /// and the `skills` settings (`~/` in `skills.dirs` is the user's home directory).
    pub fn new(home: &Path, project_root: &Path, config: &crate::config::SkillsConfig) -> Places {
        let user_home = crate::home::user_home();
        Places {
            home: home.join("skills"),
            project: Some(project_root.to_path_buf()),
            configured: config
                .dirs
                .iter()
                .map(|d| crate::sandbox::expand_home(d, user_home.as_deref()))
                .collect(),
        }
    }

    /// The folders searched, with their origin, in order.
    pub fn folders(&self) -> Vec<(PathBuf, Origin)> {
        let mut out = vec![(self.home.clone(), Origin::Home)];
        if let Some(project) = &self.project {
            out.push((project.join(".odek").join("skills"), Origin::Project));
            out.push((project.join(".agents").join("skills"), Origin::Agents));
        }
        out.extend(
            self.configured
                .iter()
                .map(|d| (d.clone(), Origin::Configured)),
        );
        out
    }
}

impl Catalog {
    /// Finds the skills of `places`; `home` holds the trust records.
    pub fn discover(places: &Places, home: &Path) -> Catalog {
        let (store, trust_problem) = match TrustStore::load(home) {
            Ok(store) => (store, None),
            Err(e) => (TrustStore::default(), Some(e.to_string())),
        };
        let mut catalog = Catalog {
            trust_problem,
            home: home.to_path_buf(),
            ..Catalog::default()
        };
        let mut searched = Vec::new();
        for (folder, origin) in places.folders() {
            // `~/.odek/skills` is also the project's `.odek/skills` when odek runs in `~`.
            let key = folder.canonicalize().unwrap_or_else(|_| folder.clone());
            if searched.contains(&key) {
                continue;
            }
            searched.push(key);
            for dir in skill_dirs(&folder) {
                catalog.add(&dir, origin, &store);
            }
        }
        catalog
            .skills
            .sort_by(|a, b| a.front.name.cmp(&b.front.name));
        catalog
    }

    fn add(&mut self, dir: &Path, origin: Origin, store: &TrustStore) {
        let trust = match origin {
            Origin::Home => TrustState::Trusted,
            _ if store.has(dir) => store.state(dir),
            _ => TrustState::NotTrusted,
        };
        // A skill nobody trusted gives its name and description, nothing more.
        let read = if trust == TrustState::Trusted {
            read_skill_file(dir)
        } else {
            read_skill_text(dir)
                .and_then(|(folder, text)| frontmatter::parse_listing(&text, &folder))
        };
        let file = match read {
            Ok(file) => file,
            Err(rule) => {
                self.broken.push(Broken {
                    file: dir.join(SKILL_FILE),
                    rule: rule.to_string(),
                    origin,
                });
                return;
            }
        };
        let skill = Skill {
            front: file.front,
            dir: dir.to_path_buf(),
            origin,
            trust,
        };
        match self.skills.iter_mut().find(|s| s.name() == skill.name()) {
            // A project's skill the user has not trusted never hides one they chose.
            Some(earlier) if !earlier.offered() && skill.offered() => {
                let hidden = std::mem::replace(earlier, skill);
                let winner = earlier.dir.clone();
                self.shadowed.push((hidden, winner));
            }
            Some(earlier) => {
                let winner = earlier.dir.clone();
                self.shadowed.push((skill, winner));
            }
            None => self.skills.push(skill),
        }
    }

    /// The body of `skill`'s `SKILL.md`, read now. One trusted by hash (not a home skill) is
    /// read in the same pass that hashes its folder, and only while that hash still matches
    /// its record: what the model gets is exactly what the user trusted.
    pub fn body(&self, skill: &Skill) -> Result<String, SkillError> {
        if skill.origin == Origin::Home {
            return Ok(read_skill_file(&skill.dir)?.body);
        }
        if skill.trust != TrustState::Trusted {
            let (folder, text) = read_skill_text(&skill.dir)?;
            return Ok(frontmatter::parse_listing(&text, &folder)?.body);
        }
        let changed = || SkillError::ChangedSinceTrusted(skill.name().to_string());
        let store = TrustStore::load(&self.home)?;
        let record = store.record(&skill.dir).ok_or_else(changed)?;
        let (hash, bytes) = trust::folder_hash_reading(&skill.dir, Some(Path::new(SKILL_FILE)))
            .map_err(|_| changed())?;
        if hash != record.hash {
            return Err(changed());
        }
        let text = String::from_utf8(bytes.unwrap_or_default()).map_err(|_| Rule::NotUtf8)?;
        Ok(frontmatter::parse(&text, skill.name())?.body)
    }

    /// The skill called `name`, offered or not.
    pub fn get(&self, name: &str) -> Option<&Skill> {
        self.skills.iter().find(|s| s.name() == name)
    }

    /// The skills the model may see, sorted by name.
    pub fn offered(&self) -> impl Iterator<Item = &Skill> {
        self.skills.iter().filter(|s| s.offered())
    }

    /// One warning line per skipped or shadowed skill and for damaged trust records.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.broken.iter().map(Broken::warning).collect();
        out.extend(self.shadowed.iter().map(|(hidden, winner)| {
            format!(
                "odek: skill \"{}\" in {} is hidden by the one in {}",
                hidden.name(),
                hidden.dir.display(),
                winner.display()
            )
        }));
        if let Some(problem) = &self.trust_problem {
            out.push(format!("odek: warning: {problem}"));
        }
        out
    }
}

/// The folders of `parent` that hold a `SKILL.md`, sorted (a missing parent has none).
pub fn skill_dirs(parent: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return Vec::new();
    };
    let mut dirs: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.join(SKILL_FILE).exists())
        .collect();
    dirs.sort();
    dirs
}

/// Reads and checks `dir/SKILL.md`; the error is the rule broken.
pub fn read_skill_file(dir: &Path) -> Result<SkillFile, Rule> {
    let (folder, text) = read_skill_text(dir)?;
    frontmatter::parse(&text, &folder)
}

/// The folder's name and `dir/SKILL.md`'s text, checked as a file (no link, at most
/// [`MAX_SKILL_FILE_BYTES`], UTF-8).
pub fn read_skill_text(dir: &Path) -> Result<(String, String), Rule> {
    // `.` and `dir/..` have no name of their own: their real path's last part is it.
    let name_of = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
    let folder = name_of(dir)
        .or_else(|| name_of(&dir.canonicalize().ok()?))
        .unwrap_or_default();
    let path = dir.join(SKILL_FILE);
    let meta = std::fs::symlink_metadata(&path).map_err(Rule::Unreadable)?;
    if meta.file_type().is_symlink() {
        return Err(Rule::Symlink);
    }
    if !meta.is_file() {
        return Err(Rule::NotARegularFile);
    }
    if meta.len() > MAX_SKILL_FILE_BYTES {
        return Err(Rule::TooLarge {
            size: meta.len(),
            max: MAX_SKILL_FILE_BYTES,
        });
    }
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::InvalidData => {
            return Err(Rule::NotUtf8);
        }
        Err(e) => return Err(Rule::Unreadable(e)),
    };
    Ok((folder, text))
}

#[cfg(test)]
mod tests;
