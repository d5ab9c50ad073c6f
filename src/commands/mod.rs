//! Custom slash commands: Markdown files in `<home>/commands/`, the project's
//! `.odek/commands/` and (with `commands.import_claude`) `.claude/commands/`, a sub-folder a
//! namespace (`frontend/build.md` is `/frontend:build`); every skill offered is also a
//! command. A typed `/NAME args` becomes the command's prompt with its arguments put in
//! ([`expand`]); a command's `model` and `allowed-tools` narrow that one turn. A project
//! command is text the user runs by name and needs no trust; one that sets `model` or
//! `allowed-tools` runs only while its exact bytes are trusted (`odek commands trust NAME`,
//! `<home>/commands-trust.json`). See docs/COMMANDS.md.

mod builtin;
mod error;
pub mod expand;
pub mod file;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use builtin::{BUILT_IN, is_built_in};
pub use error::CommandError;
pub use file::FileError;

use crate::protocol::api::{CommandList, CommandView, ShadowedCommand};
use crate::skills::trust::{TrustState, TrustStore, content_hash};

/// The trust records of project commands, in the odek home.
pub const TRUST_FILE: &str = "commands-trust.json";
/// The folder of commands in the odek home and in a project's `.odek`.
pub const FOLDER: &str = "commands";
/// Deepest namespace (folders below a commands folder).
pub const MAX_DEPTH: usize = 4;
/// Most command files read from one folder, all namespaces together.
pub const MAX_FILES: usize = 1_000;
/// What separates a namespace from a name.
pub const NAMESPACE_SEPARATOR: char = ':';

/// Where a command was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// `<home>/commands`: the user's own, trusted.
    User,
    /// The project's `.odek/commands`.
    Project,
    /// The project's `.claude/commands` (Claude Code's).
    Claude,
    /// A skill offered (`/skill-name args`).
    Skill,
}

impl Source {
    /// How `odek commands list` names it.
    pub fn label(self) -> &'static str {
        match self {
            Source::User => "user",
            Source::Project => "project",
            Source::Claude => "claude",
            Source::Skill => "skill",
        }
    }

    /// True for the folders a cloned repository can bring.
    pub fn from_project(self) -> bool {
        matches!(self, Source::Project | Source::Claude)
    }
}

/// One command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its name without the slash (`review`, `frontend:build`).
    pub name: String,
    /// Where it was found.
    pub source: Source,
    /// Its file (a skill's folder).
    pub path: PathBuf,
    /// What its file says (a skill's: its description, the body read when it runs).
    pub file: file::CommandFile,
    /// The hash of the file's bytes, what a trust record holds.
    pub hash: String,
    /// What the trust records say (a user's command and a skill: trusted).
    pub trust: TrustState,
}

impl Command {
    /// What it sets that changes a turn beyond its text: `model`, `allowed-tools`, both.
    pub fn narrows(&self) -> Option<&'static str> {
        match (&self.file.model, &self.file.allowed_tools) {
            (Some(_), Some(_)) => Some("model and allowed-tools"),
            (Some(_), None) => Some("model"),
            (None, Some(_)) => Some("allowed-tools"),
            (None, None) => None,
        }
    }

    /// Why it cannot run now: a project command that narrows the turn and whose bytes are
    /// not the ones trusted.
    pub fn refusal(&self) -> Option<CommandError> {
        let what = self.narrows()?;
        if !self.source.from_project() || self.trust == TrustState::Trusted {
            return None;
        }
        let state = match self.trust {
            TrustState::NotTrusted => "is not trusted",
            _ => "changed since you trusted it",
        };
        Some(CommandError::NotTrusted {
            name: self.name.clone(),
            path: self.path.clone(),
            what,
            state,
        })
    }

    /// In words: `runs`, or what to review and run first.
    pub fn status(&self) -> String {
        match self.refusal() {
            Some(why) => why.to_string(),
            None if self.source.from_project() && self.narrows().is_some() => {
                "runs (trusted)".into()
            }
            None => "runs".into(),
        }
    }

    /// What `odek commands list --json` shows of it.
    pub fn view(&self) -> CommandView {
        CommandView {
            name: self.name.clone(),
            description: self.file.description.clone(),
            argument_hint: self.file.argument_hint.clone(),
            source: self.source.label(),
            path: self.path.display().to_string(),
            model: self.file.model.clone(),
            allowed_tools: self.file.allowed_tools.clone(),
            runnable: self.refusal().is_none(),
            status: self.status(),
        }
    }
}

/// A command hidden by a built-in or by a command of the same name found first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shadowed {
    /// The hidden command.
    pub command: Command,
    /// What hides it, in words.
    pub by: String,
}

/// A file skipped, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broken {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub why: String,
}

/// Where to look.
#[derive(Debug, Clone)]
pub struct Places {
    /// The odek home (its `commands/` holds the user's commands and `commands-trust.json`
    /// the trust records).
    pub home: PathBuf,
    /// The project's root (its Git work tree's, else the working directory): the skills'.
    pub project: Option<PathBuf>,
    /// Also `.claude/commands` (`commands.import_claude`).
    pub import_claude: bool,
}

impl Places {
    /// The places of an odek home and a project root (see [`crate::memory::project_key`])
    /// under `config`'s `commands.import_claude`.
    pub fn new(home: &Path, project_root: &Path, config: &crate::config::Config) -> Places {
        Places {
            home: home.to_path_buf(),
            project: Some(project_root.to_path_buf()),
            import_claude: config.commands.import_claude,
        }
    }

    /// The folders searched, first winning: the project's `.odek/commands`, its
    /// `.claude/commands`, the user's `<home>/commands` (a project's folder that is the
    /// user's, odek run in `~`, counts as the user's).
    pub fn folders(&self) -> Vec<(PathBuf, Source)> {
        let user = self.home.join(FOLDER);
        let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => a == b,
        };
        let mut out = Vec::new();
        if let Some(project) = &self.project {
            out.push((project.join(".odek").join(FOLDER), Source::Project));
            if self.import_claude {
                out.push((project.join(".claude").join(FOLDER), Source::Claude));
            }
        }
        out.retain(|(folder, _)| !same(folder, &user));
        out.push((user, Source::User));
        out
    }
}

/// What a typed `/NAME args` becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The command's name.
    pub name: String,
    /// Where it comes from.
    pub source: Source,
    /// The prompt: the body with its arguments put in (a skill's: the skill, then the task).
    pub prompt: String,
    /// The model of this turn, when the command sets one.
    pub model: Option<String>,
    /// The tools of this turn as odek names (`<server>__*` for a whole MCP server), when
    /// the command sets `allowed-tools`.
    pub tools: Option<Vec<String>>,
    /// What the surface should show: names of `allowed-tools` odek does not know, patterns
    /// it cannot keep.
    pub warnings: Vec<String>,
}

/// Every command found, first of a name winning.
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// The commands, sorted by name.
    pub commands: Vec<Command>,
    /// The hidden ones, in search order.
    pub shadowed: Vec<Shadowed>,
    /// The files skipped.
    pub broken: Vec<Broken>,
    /// A problem with the trust records (a damaged file trusts nothing).
    pub trust_problem: Option<String>,
    /// The skills, whose bodies skill commands read when they run.
    skills: Option<Arc<crate::skills::Catalog>>,
}

impl Catalog {
    /// Finds the commands of `places`, and those of the skills `skills` offers.
    pub fn discover(places: &Places, skills: Option<Arc<crate::skills::Catalog>>) -> Catalog {
        let (store, trust_problem) = match TrustStore::load_in(&places.home, TRUST_FILE) {
            Ok(store) => (store, None),
            Err(e) => (TrustStore::default(), Some(e.to_string())),
        };
        let mut catalog = Catalog {
            trust_problem,
            ..Catalog::default()
        };
        for (folder, source) in places.folders() {
            let mut found = Vec::new();
            collect(&folder, &[], source, &mut found, &mut catalog.broken);
            for (name, path) in found {
                catalog.add_file(name, path, source, &store);
            }
        }
        if let Some(skills) = &skills {
            for skill in skills.offered() {
                catalog.add(skill_command(skill));
            }
        }
        catalog.skills = skills;
        catalog.commands.sort_by(|a, b| a.name.cmp(&b.name));
        catalog
    }

    fn add_file(&mut self, name: String, path: PathBuf, source: Source, store: &TrustStore) {
        let bytes = match file::read_bytes(&path, source == Source::User) {
            Ok(bytes) => bytes,
            Err(why) => return self.skip(path, why),
        };
        let parsed = match file::parse(&bytes) {
            Ok(parsed) => parsed,
            Err(why) => return self.skip(path, why),
        };
        let hash = content_hash(&bytes);
        let trust = match source {
            Source::User | Source::Skill => TrustState::Trusted,
            _ => store.state_hashed(&path, &hash),
        };
        self.add(Command {
            name,
            source,
            path,
            file: parsed,
            hash,
            trust,
        });
    }

    fn skip(&mut self, path: PathBuf, why: FileError) {
        self.broken.push(Broken {
            path,
            why: why.to_string(),
        });
    }

    fn add(&mut self, command: Command) {
        if is_built_in(&command.name) {
            let by = format!("the built-in /{}", command.name);
            self.shadowed.push(Shadowed { command, by });
            return;
        }
        match self.commands.iter().find(|c| c.name == command.name) {
            Some(winner) => {
                let by = format!(
                    "/{} in {} ({})",
                    winner.name,
                    winner.path.display(),
                    winner.source.label()
                );
                self.shadowed.push(Shadowed { command, by });
            }
            None => self.commands.push(command),
        }
    }

    /// The command called `name` (without its slash).
    pub fn get(&self, name: &str) -> Option<&Command> {
        self.commands.iter().find(|c| c.name == name)
    }

    /// What `text` runs: `Ok(None)` when it is not a command — it does not start with `/`
    /// and a name, the name holds a `/` or a `.` (a path), or it is a built-in's (the
    /// surface answers those) — an error when the command is unknown or may not run.
    pub fn expand(&self, text: &str) -> Result<Option<Expansion>, CommandError> {
        let Some((name, args)) = expand::split_invocation(text) else {
            return Ok(None);
        };
        if name.contains(['/', '.']) || is_built_in(name) {
            return Ok(None);
        }
        let command = self
            .get(name)
            .ok_or_else(|| CommandError::Unknown(name.to_string()))?;
        if let Some(why) = command.refusal() {
            return Err(why);
        }
        if command.source == Source::Skill {
            return self.expand_skill(command, args).map(Some);
        }
        let (tools, warnings) = match &command.file.allowed_tools {
            Some(entries) => {
                let mapped = crate::tools::claude_names::map(entries);
                let warnings = mapped
                    .warnings()
                    .into_iter()
                    .map(|w| format!("/{name}: allowed-tools: {w}"))
                    .collect();
                (Some(mapped.tools), warnings)
            }
            None => (None, Vec::new()),
        };
        Ok(Some(Expansion {
            name: command.name.clone(),
            source: command.source,
            prompt: expand::expand(&command.file.body, args),
            model: command.file.model.clone(),
            tools,
            warnings,
        }))
    }

    /// A skill run as a command: what `skill_load` gives of it, then the arguments as the
    /// task.
    fn expand_skill(&self, command: &Command, args: &str) -> Result<Expansion, CommandError> {
        let skill = self
            .skills
            .as_ref()
            .and_then(|s| s.get(&command.name).map(|skill| (s, skill)));
        let Some((skills, skill)) = skill else {
            return Err(CommandError::Unknown(command.name.clone()));
        };
        let body = skills.body(skill)?;
        let mut loaded = crate::skills::tools::loaded(skill, &body);
        if !skill.trusted() {
            loaded = crate::untrusted::wrap(&format!("skill:{}", skill.name()), &loaded);
        }
        let task = match args {
            "" => format!("Use the skill \"{}\" now.", skill.name()),
            args => format!("Use the skill \"{}\" for this task: {args}", skill.name()),
        };
        Ok(Expansion {
            name: command.name.clone(),
            source: Source::Skill,
            prompt: format!("{loaded}\n\n{task}"),
            model: None,
            tools: None,
            warnings: Vec::new(),
        })
    }

    /// One warning line per skipped or shadowed file and for damaged trust records.
    pub fn warnings(&self) -> Vec<String> {
        let shown = |p: &Path| crate::text::visible(&p.display().to_string(), false).into_owned();
        let mut out: Vec<String> = self
            .broken
            .iter()
            .map(|b| format!("odek: skipping command {}: {}", shown(&b.path), b.why))
            .collect();
        out.extend(self.shadowed.iter().map(|s| {
            format!(
                "odek: command /{} in {} is hidden by {}",
                s.command.name,
                shown(&s.command.path),
                s.by
            )
        }));
        if let Some(problem) = &self.trust_problem {
            out.push(format!("odek: warning: {problem}"));
        }
        out
    }

    /// What `odek commands list --json` prints.
    pub fn list(&self) -> CommandList {
        CommandList {
            commands: self.commands.iter().map(Command::view).collect(),
            shadowed: self
                .shadowed
                .iter()
                .map(|s| ShadowedCommand {
                    name: s.command.name.clone(),
                    source: s.command.source.label(),
                    path: s.command.path.display().to_string(),
                    by: s.by.clone(),
                })
                .collect(),
            warnings: self.warnings(),
        }
    }

    /// Records the user's trust in the project command `name` as its bytes are now, in
    /// `<home>/commands-trust.json`.
    pub fn trust(&self, home: &Path, name: &str) -> Result<&Command, CommandError> {
        let command = self.project_command(name)?;
        TrustStore::update_in(home, TRUST_FILE, |store| {
            store.trust_hashed(&command.path, &command.name, command.hash.clone());
            Ok(())
        })?;
        Ok(command)
    }

    /// Forgets the trust in the project command `name`; false when there was none.
    pub fn untrust(&self, home: &Path, name: &str) -> Result<bool, CommandError> {
        let command = self.project_command(name)?;
        Ok(TrustStore::update_in(home, TRUST_FILE, |store| {
            Ok(store.untrust(&command.path))
        })?)
    }

    fn project_command(&self, name: &str) -> Result<&Command, CommandError> {
        let name = name.strip_prefix('/').unwrap_or(name);
        let command = self
            .get(name)
            .ok_or_else(|| CommandError::Unknown(name.to_string()))?;
        if !command.source.from_project() {
            return Err(CommandError::AlwaysTrusted {
                name: command.name.clone(),
                source_label: match command.source {
                    Source::Skill => "a skill (odek skill trust covers skills)",
                    _ => "the user's own",
                },
            });
        }
        Ok(command)
    }
}

/// The commands of an odek home and a project root under `config`, with the skills it
/// offers (none when skills are off): what a runtime there finds, without building one.
pub fn discover_for(home: &Path, project_root: &Path, config: &crate::config::Config) -> Catalog {
    let skills = config.skills.enabled.then(|| {
        let places = crate::skills::Places::new(home, project_root, &config.skills);
        Arc::new(crate::skills::Catalog::discover(&places, home))
    });
    Catalog::discover(&Places::new(home, project_root, config), skills)
}

/// A skill as a command: its name and description (its body is read when it runs).
fn skill_command(skill: &crate::skills::Skill) -> Command {
    Command {
        name: skill.name().to_string(),
        source: Source::Skill,
        path: skill.dir.clone(),
        file: file::CommandFile {
            description: skill.front.description.clone(),
            ..file::CommandFile::default()
        },
        hash: String::new(),
        trust: TrustState::Trusted,
    }
}

/// The command files under `dir` (names with their namespace `prefix`), sorted: `.md`
/// files, sub-folders as namespaces down to [`MAX_DEPTH`], hidden entries skipped. A
/// project's links are never followed.
fn collect(
    dir: &Path,
    prefix: &[String],
    source: Source,
    found: &mut Vec<(String, PathBuf)>,
    broken: &mut Vec<Broken>,
) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        if found.len() >= MAX_FILES {
            return;
        }
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        let is_dir = match source {
            Source::User => path.is_dir(),
            _ => entry.file_type().is_ok_and(|t| t.is_dir()),
        };
        if is_dir {
            if prefix.len() < MAX_DEPTH && file::valid_part(&name) {
                let inner = [prefix, std::slice::from_ref(&name)].concat();
                collect(&path, &inner, source, found, broken);
            }
            continue;
        }
        let Some(stem) = name.strip_suffix(".md") else {
            continue;
        };
        if !file::valid_part(stem) {
            broken.push(Broken {
                path,
                why: FileError::BadName(stem.to_string()).to_string(),
            });
            continue;
        }
        let full = [prefix, &[stem.to_string()]]
            .concat()
            .join(&NAMESPACE_SEPARATOR.to_string());
        found.push((full, path));
    }
}

#[cfg(test)]
mod tests;
