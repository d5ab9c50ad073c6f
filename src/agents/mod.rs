//! Named sub-agents: Markdown files in `<home>/agents/`, the project's `.odek/agents/` and
//! Claude Code's `.claude/agents/` (read unchanged), each a name, a description, the tools
//! and model it runs with and the child's system prompt (see docs/NAMED_AGENTS.md). A project's
//! agents choose tools and models, so they run only while the user trusts their exact bytes
//! (`odek agents trust NAME`, recorded by hash in `<home>/agents-trust.json`).

mod error;
pub mod file;

use std::path::{Path, PathBuf};

use crate::protocol::subagent::Trust;
use crate::skills::trust::{TrustState, TrustStore, content_hash};
use file::{AgentFile, MAX_AGENT_FILE_BYTES};

pub use error::{AgentError, AgentRule};

/// The folder of agent files, in the odek home and in a project's `.odek`.
pub const AGENTS_DIR: &str = "agents";
/// The trust records of project agent files, in the odek home.
pub const TRUST_FILE: &str = "agents-trust.json";
/// The `model` that means the parent's model (Claude Code's spelling).
pub const INHERIT: &str = "inherit";
/// The provider id on which Claude Code's model aliases name Claude models.
pub const ANTHROPIC: &str = "anthropic";
/// Claude Code's model aliases and the Anthropic model each names.
pub const CLAUDE_MODELS: &[(&str, &str)] = &[
    ("sonnet", "claude-sonnet-4-5"),
    ("opus", "claude-opus-4-5"),
    ("haiku", "claude-haiku-4-5"),
];

/// Where an agent file was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The project's `.odek/agents`.
    Project,
    /// The project's `.claude/agents` (Claude Code's).
    Claude,
    /// `<home>/agents`: the user's own, trusted.
    User,
}

impl Origin {
    /// How `odek agents list` names it.
    pub fn label(self) -> &'static str {
        match self {
            Origin::Project => "project",
            Origin::Claude => "project (.claude)",
            Origin::User => "user",
        }
    }

    /// True for the folders a cloned repository can bring.
    pub fn from_project(self) -> bool {
        self != Origin::User
    }
}

/// A valid agent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Agent {
    /// Its name.
    pub name: String,
    /// When to use it (what the model reads).
    pub description: String,
    /// odek's names of the tools it may use (MCP tools `<server>__<tool>`, a whole server
    /// `<server>__*`: test with [`Agent::allows`]); `None`: every tool the parent may give.
    pub tools: Option<Vec<String>>,
    /// `model` as written: `inherit`, a Claude Code alias or a model id (see
    /// [`Agent::model_for`]).
    pub model: Option<String>,
    /// An odek provider id.
    pub provider: Option<String>,
    /// The child's tool-call budget.
    pub max_iter: Option<u32>,
    /// How far the child is trusted.
    pub trust_level: Option<Trust>,
    /// The child's system prompt (the file's body, trimmed).
    pub prompt: String,
    /// Where it was found.
    pub origin: Origin,
    /// Its file.
    pub path: PathBuf,
    /// The hash of the bytes it was read from.
    pub hash: String,
    /// What the trust records say (a user agent is trusted without one).
    pub trust: TrustState,
    /// What reading its file found to say (unknown tool names, dropped patterns).
    pub notes: Vec<String>,
    /// Front matter keys odek does not read (`color`, …).
    pub other_keys: Vec<String>,
}

impl Agent {
    fn new(file: AgentFile, origin: Origin, path: &Path, hash: String, trust: TrustState) -> Self {
        Agent {
            name: file.name,
            description: file.description,
            tools: file.tools,
            model: file.model,
            provider: file.provider,
            max_iter: file.max_iter,
            trust_level: file.trust_level,
            prompt: file.prompt,
            origin,
            path: path.to_path_buf(),
            hash,
            trust,
            notes: file.notes,
            other_keys: file.other_keys,
        }
    }

    /// True when it may run: a user agent, or a project's trusted with its bytes unchanged.
    pub fn trusted(&self) -> bool {
        self.origin == Origin::User || self.trust == TrustState::Trusted
    }

    /// Why it may not run (`None` when it may), saying what to do.
    pub fn why_not(&self) -> Option<String> {
        match &self.trust {
            _ if self.trusted() => None,
            TrustState::Changed(_) => Some(format!(
                "changed since it was trusted: review it, then run `odek agents trust {}` again",
                self.name
            )),
            _ => Some(format!(
                "a project's agent chooses tools and models: review it, then run `odek agents trust {}`",
                self.name
            )),
        }
    }

    /// True when its tools include `tool` (every tool when it names none).
    pub fn allows(&self, tool: &str) -> bool {
        self.tools
            .as_deref()
            .is_none_or(|tools| crate::tools::claude_names::allows(tools, tool))
    }

    /// The model the child asks for on the provider `provider` (the agent's own, else the
    /// parent's); `None`: the model the parent would use there. `inherit` is `None`; Claude
    /// Code's aliases (`sonnet`, `opus`, `haiku`) name Claude models on [`ANTHROPIC`] and are
    /// `None` on any other provider, where they mean nothing.
    pub fn model_for(&self, provider: &str) -> Option<String> {
        let model = self.model.as_deref()?;
        if model == INHERIT {
            return None;
        }
        match claude_model(model) {
            Some(id) if provider == ANTHROPIC => Some(id.to_string()),
            Some(_) => None,
            None => Some(model.to_string()),
        }
    }

    /// The model in words, for `odek agents show` on `provider`. Without a model of its own
    /// the child takes the parent's, or the default model of the agent's own `provider` when
    /// that is not the parent's (docs/SUBAGENTS.md).
    pub fn model_shown(&self, provider: &str) -> String {
        let fallback = match &self.provider {
            Some(own) => {
                format!("the parent's, or {own}'s default when {own} is not the parent's provider")
            }
            None => "the parent's".to_string(),
        };
        match (self.model.as_deref(), self.model_for(provider)) {
            (None, _) => fallback,
            (Some(INHERIT), _) => format!("{fallback} (inherit)"),
            (Some(alias), Some(id)) if id != alias => format!("{id} ({alias} on {provider})"),
            (Some(model), Some(_)) => model.to_string(),
            (Some(alias), None) => format!(
                "{fallback} (`{alias}` is Claude Code's alias of a Claude model; the provider is {provider}, not {ANTHROPIC})"
            ),
        }
    }

    /// Its description's first line, at most `max` characters (an ellipsis when cut): what
    /// a listing shows of a long Claude Code description with examples.
    pub fn summary(&self, max: usize) -> String {
        crate::text::first_line(self.description.trim(), max)
    }
}

/// The Claude model a Claude Code alias names.
pub fn claude_model(alias: &str) -> Option<&'static str> {
    CLAUDE_MODELS
        .iter()
        .find(|(a, _)| *a == alias)
        .map(|(_, id)| *id)
}

/// An agent file that breaks a rule: skipped with a warning.
#[derive(Debug)]
pub struct Broken {
    /// The file.
    pub path: PathBuf,
    /// Where it was found.
    pub origin: Origin,
    /// The rule it breaks.
    pub rule: AgentRule,
}

impl Broken {
    /// The one warning line: the file and the rule.
    pub fn warning(&self) -> String {
        format!(
            "odek: skipping agent {}: {}",
            self.path.display(),
            self.rule
        )
    }
}

/// Every agent found: a name's first usable file wins (project's `.odek` over its `.claude`
/// over the user's), and a project's file nobody trusted never hides one that may run.
#[derive(Debug, Default)]
pub struct Catalog {
    /// The winners, sorted by name.
    agents: Vec<Agent>,
    /// The skipped files, in search order.
    broken: Vec<Broken>,
    /// Agents hidden by one of the same name: (hidden, the winner's file).
    shadowed: Vec<(Agent, PathBuf)>,
    /// A problem with the trust records (a damaged file trusts nothing).
    trust_problem: Option<String>,
}

/// The project root the agents (like the skills) are found under: the Git work tree's top
/// above `cwd`, else `cwd`.
pub fn project_root(cwd: &Path) -> PathBuf {
    PathBuf::from(crate::memory::project_key(cwd))
}

/// The folders searched, with their origin, in precedence order.
pub fn folders(home: &Path, project_root: Option<&Path>) -> Vec<(PathBuf, Origin)> {
    let mut out = Vec::new();
    if let Some(root) = project_root {
        out.push((root.join(".odek").join(AGENTS_DIR), Origin::Project));
        out.push((root.join(".claude").join(AGENTS_DIR), Origin::Claude));
    }
    out.push((home.join(AGENTS_DIR), Origin::User));
    out
}

impl Catalog {
    /// Finds the agents of the odek home `home` (which also holds the trust records) and of
    /// the project at `project_root` (see [`project_root`]). A broken file is a warning.
    pub fn discover(home: &Path, project_root: Option<&Path>) -> Catalog {
        let (store, trust_problem) = match TrustStore::load_in(home, TRUST_FILE) {
            Ok(store) => (store, None),
            Err(e) => (TrustStore::default(), Some(e.to_string())),
        };
        let mut catalog = Catalog {
            trust_problem,
            ..Catalog::default()
        };
        // `~/.odek/agents` is also the project's `.odek/agents` when odek runs in `~`: the
        // folder is the user's.
        let key = |folder: &Path| folder.canonicalize().ok();
        let home_key = key(&home.join(AGENTS_DIR));
        for (folder, origin) in folders(home, project_root) {
            if origin != Origin::User && home_key.is_some() && key(&folder) == home_key {
                continue;
            }
            for path in agent_files(&folder) {
                catalog.add(&path, origin, &store);
            }
        }
        catalog.agents.sort_by(|a, b| a.name.cmp(&b.name));
        catalog
    }

    fn add(&mut self, path: &Path, origin: Origin, store: &TrustStore) {
        let agent = match read_agent(path, origin, store) {
            Ok(agent) => agent,
            Err(rule) => {
                self.broken.push(Broken {
                    path: path.to_path_buf(),
                    origin,
                    rule,
                });
                return;
            }
        };
        match self.agents.iter_mut().find(|a| a.name == agent.name) {
            Some(earlier) if !earlier.trusted() && agent.trusted() => {
                let hidden = std::mem::replace(earlier, agent);
                let winner = earlier.path.clone();
                self.shadowed.push((hidden, winner));
            }
            Some(earlier) => {
                let winner = earlier.path.clone();
                self.shadowed.push((agent, winner));
            }
            None => self.agents.push(agent),
        }
    }

    /// The agent called `name`, trusted or not.
    pub fn get(&self, name: &str) -> Option<&Agent> {
        self.agents.iter().find(|a| a.name == name)
    }

    /// Every file of the agent `name`, the winner's and the hidden ones, in precedence
    /// order (the project's `.odek`, its `.claude`, the user's): what `odek agents trust`
    /// chooses from.
    pub fn all_named(&self, name: &str) -> Vec<&Agent> {
        let hidden = self.shadowed.iter().map(|(a, _)| a);
        let mut all: Vec<&Agent> = self.get(name).into_iter().chain(hidden).collect();
        all.retain(|a| a.name == name);
        all.sort_by_key(|a| a.origin as u8);
        all
    }

    /// Every agent found (the winner of each name), sorted by name.
    pub fn list(&self) -> &[Agent] {
        &self.agents
    }

    /// The agents that may run, sorted by name.
    pub fn usable(&self) -> impl Iterator<Item = &Agent> {
        self.agents.iter().filter(|a| a.trusted())
    }

    /// The skipped files.
    pub fn broken(&self) -> &[Broken] {
        &self.broken
    }

    /// The agents hidden by one of the same name, each with the winner's file.
    pub fn shadowed(&self) -> &[(Agent, PathBuf)] {
        &self.shadowed
    }

    /// One warning line per skipped or hidden file, per note of a winner's file (unknown
    /// tool names, a front matter read line by line) and for damaged trust records, with
    /// control characters shown as pictures.
    pub fn warnings(&self) -> Vec<String> {
        let mut out: Vec<String> = self.broken.iter().map(Broken::warning).collect();
        out.extend(self.shadowed.iter().map(|(hidden, winner)| {
            format!(
                "odek: agent \"{}\" in {} is hidden by the one in {}",
                hidden.name,
                hidden.path.display(),
                winner.display()
            )
        }));
        out.extend(self.agents.iter().flat_map(|a| {
            a.notes
                .iter()
                .map(|note| format!("odek: agent {}: {note}", a.path.display()))
        }));
        if let Some(problem) = &self.trust_problem {
            out.push(format!("odek: warning: {problem}"));
        }
        // File names and a file's text are the project's: escaped for a terminal.
        out.into_iter()
            .map(|line| crate::text::visible(&line, false).into_owned())
            .collect()
    }
}

/// Records the user's trust in `agent`'s file as it was read (its bytes' hash).
pub fn trust(home: &Path, agent: &Agent) -> Result<(), AgentError> {
    if agent.origin == Origin::User {
        return Err(AgentError::UserAgent(agent.name.clone()));
    }
    TrustStore::update_in(home, TRUST_FILE, |store| {
        store.trust_hashed(&agent.path, &agent.name, agent.hash.clone());
        Ok(())
    })?;
    Ok(())
}

/// Forgets the trust in `agent`'s file; false when none was recorded.
pub fn untrust(home: &Path, agent: &Agent) -> Result<bool, AgentError> {
    if agent.origin == Origin::User {
        return Err(AgentError::UserAgent(agent.name.clone()));
    }
    Ok(TrustStore::update_in(home, TRUST_FILE, |store| {
        Ok(store.untrust(&agent.path))
    })?)
}

/// The `*.md` files of `folder`, sorted (a missing folder has none).
pub fn agent_files(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    files.sort();
    files
}

/// Reads, hashes and checks one file; its trust is looked up by the hash of the bytes read.
fn read_agent(path: &Path, origin: Origin, store: &TrustStore) -> Result<Agent, AgentRule> {
    let bytes = read_bytes(path, origin)?;
    let hash = content_hash(&bytes);
    let trust = match origin {
        Origin::User => TrustState::Trusted,
        _ => store.state_hashed(path, &hash),
    };
    let text = String::from_utf8(bytes).map_err(|_| AgentRule::NotUtf8)?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    let file = file::parse(&text, &stem)?;
    Ok(Agent::new(file, origin, path, hash, trust))
}

/// The file's bytes: a regular file (a project's never a link) of at most
/// [`MAX_AGENT_FILE_BYTES`].
fn read_bytes(path: &Path, origin: Origin) -> Result<Vec<u8>, AgentRule> {
    let meta = std::fs::symlink_metadata(path).map_err(AgentRule::Unreadable)?;
    if meta.file_type().is_symlink() && origin.from_project() {
        return Err(AgentRule::Symlink);
    }
    let meta = std::fs::metadata(path).map_err(AgentRule::Unreadable)?;
    if !meta.is_file() {
        return Err(AgentRule::Unreadable(std::io::Error::other(
            "not a regular file",
        )));
    }
    if meta.len() > MAX_AGENT_FILE_BYTES {
        return Err(AgentRule::TooLarge {
            size: meta.len(),
            max: MAX_AGENT_FILE_BYTES,
        });
    }
    std::fs::read(path).map_err(AgentRule::Unreadable)
}

#[cfg(test)]
mod tests;
