//! Loading: the files read, the layers stacked and merged, the provider applied, the clamps
//! and the checks, into a [`Resolved`] configuration.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::error::ConfigError;
use super::layers::{self, Overrides};
use super::source::Source;
use super::values::Config;
use super::{file, provider_choice};

/// Name of the project configuration file, looked up in the working directory.
pub const PROJECT_FILE: &str = "odek.json";
/// Name of the global configuration file inside the odek home directory.
pub const GLOBAL_FILE: &str = "config.json";

/// Everything `load` needs; tests build it by hand, the CLI from the process.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// The odek home (`$ODEK_HOME` or `~/.odek`).
    pub home: PathBuf,
    /// Directory searched for the project file.
    pub cwd: PathBuf,
    /// A snapshot of the environment.
    pub env: BTreeMap<String, String>,
    /// Overrides from command-line flags.
    pub flags: Overrides,
    /// A sub-agent's settings, over the flags (empty outside a child).
    pub task: Overrides,
    /// A named agent's settings (`odek run --agent NAME`), between the environment and the
    /// flags: a flag still wins over the agent's file.
    pub agent: Option<AgentLayer>,
}

/// The layer of a named agent: its name (the source `agent NAME`) and the values it sets.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AgentLayer {
    /// The agent's name.
    pub name: String,
    /// What it sets: `system`, `model`, `provider`, `tools.enabled`, `max_iterations`.
    pub values: Overrides,
}

impl LoadOptions {
    /// Options for this process: `$ODEK_HOME` (or `~/.odek`), the current directory and the
    /// current environment.
    pub fn from_process(flags: Overrides) -> Self {
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        LoadOptions {
            home: home_dir_from(&env),
            cwd,
            env,
            flags,
            task: Overrides::default(),
            agent: None,
        }
    }
}

/// `$ODEK_HOME` when set and non-empty, else `~/.odek`.
pub fn home_dir_from(env: &BTreeMap<String, String>) -> PathBuf {
    match env.get("ODEK_HOME").filter(|v| !v.is_empty()) {
        Some(h) => PathBuf::from(h),
        None => crate::home::user_home()
            .unwrap_or_else(|| PathBuf::from("."))
            .join(".odek"),
    }
}

/// The result of loading: the configuration, where each key came from, and the warnings
/// (already formatted as `odek: …` lines) that the CLI prints.
#[derive(Debug, Clone)]
pub struct Resolved {
    /// The configuration to run with.
    pub config: Config,
    /// Source of every key, by dotted path.
    pub sources: BTreeMap<String, Source>,
    /// Warning lines for stderr.
    pub warnings: Vec<String>,
    /// The odek home directory.
    pub home: PathBuf,
    /// The global file path (whether or not it exists).
    pub global_path: PathBuf,
    /// The project file, when one was found.
    pub project_path: Option<PathBuf>,
}

impl Resolved {
    /// The source recorded for a dotted key path.
    pub fn source_of(&self, key: &str) -> Source {
        self.sources.get(key).cloned().unwrap_or(Source::Default)
    }
}

/// Loads and resolves the configuration.
pub fn load(opts: &LoadOptions) -> Result<Resolved, ConfigError> {
    let mut warnings = Vec::new();
    let global_path = opts.home.join(GLOBAL_FILE);
    let project_candidate = opts.cwd.join(PROJECT_FILE);

    let global = file::read_file(&global_path, &opts.env, &mut warnings)?;
    let project = file::read_file(&project_candidate, &opts.env, &mut warnings)?;
    let project_path = project.as_ref().map(|_| absolute(&project_candidate));

    let mut stack = Vec::new();
    if let Some(g) = &global {
        stack.push(layers::file_layer(g, Source::Global(global_path.clone())));
    }
    if let (Some(p), Some(path)) = (&project, &project_path) {
        stack.push(layers::file_layer(p, Source::Project(path.clone())));
    }
    stack.push(layers::env_layer(&opts.env)?);
    if let Some(agent) = &opts.agent {
        stack.push(agent.values.layer(Source::Agent(agent.name.clone())));
    }
    stack.push(opts.flags.layer(Source::Flag));
    if !opts.task.is_empty() {
        stack.push(opts.task.layer(Source::SubagentTask));
    }

    let places = layers::Places {
        global: &global_path,
    };
    let mut merger = layers::Merger::new();
    for layer in &stack {
        merger.apply(layer, &places, &mut warnings)?;
    }
    merger.apply_no_color_env(&opts.env);
    merger.apply_yolo();
    let (mut config, mut sources) = merger.finish();
    provider_choice::apply(&mut config, &mut sources, &opts.env)?;
    layers::clamp(&mut config, &sources, &mut warnings);
    validate(&config, &sources)?;
    Ok(Resolved {
        config,
        sources,
        warnings,
        home: opts.home.clone(),
        global_path,
        project_path,
    })
}

fn validate(config: &Config, sources: &BTreeMap<String, Source>) -> Result<(), ConfigError> {
    let origin = |key: &str| {
        sources
            .get(key)
            .cloned()
            .unwrap_or(Source::Default)
            .to_string()
    };
    let url = config.base_url.as_str();
    if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() < 10 {
        return Err(ConfigError::InvalidValue {
            origin: origin("base_url"),
            key: "base_url".into(),
            message: format!("expected an http:// or https:// URL, got {url:?}"),
        });
    }
    if config.limits.max_cost_usd > 0.0
        && crate::llm::pricing::price_for(&config.model, &config.pricing).is_none()
    {
        return Err(ConfigError::InvalidValue {
            origin: origin("limits.max_cost_usd"),
            key: "limits.max_cost_usd".into(),
            message: format!(
                "no price is known for the model {:?}, so a cost budget cannot hold: add its price to `pricing` in the global file (see PROVIDERS.md)",
                config.model
            ),
        });
    }
    if let Some(bad) = config
        .instructions
        .fallbacks
        .iter()
        .find(|name| !is_plain_file_name(name))
    {
        return Err(ConfigError::InvalidValue {
            origin: origin("instructions.fallbacks"),
            key: "instructions.fallbacks".into(),
            message: format!(
                "{bad:?} is not a plain file name: give names like \"CLAUDE.md\", without `/`"
            ),
        });
    }
    if let Some((entry, message)) = config
        .fallback_models
        .iter()
        .find_map(|e| fallback_problem(e, config).map(|m| (e, m)))
    {
        return Err(ConfigError::InvalidValue {
            origin: origin("fallback_models"),
            key: "fallback_models".into(),
            message: format!("{entry:?}: {message}"),
        });
    }
    for (name, server) in &config.mcp_servers {
        let key = format!("mcp_servers.{name}");
        server.check(name).map_err(|e| ConfigError::InvalidValue {
            origin: origin(&key),
            key,
            message: e.to_string(),
        })?;
    }
    config
        .dangerous
        .validate()
        .map_err(|e| ConfigError::InvalidValue {
            origin: origin("dangerous"),
            key: "dangerous".into(),
            message: e.to_string(),
        })
}

/// What is wrong with an entry of `fallback_models`, if anything: it names a known provider
/// and a model (`PROVIDER:MODEL`).
fn fallback_problem(entry: &str, config: &Config) -> Option<String> {
    match super::ModelRef::parse(entry, config) {
        Err(e) => Some(e.to_string()),
        Ok(r) if r.provider.is_none() => {
            let known: Vec<&str> = super::providers::BUILT_IN
                .iter()
                .map(|p| p.id)
                .chain(config.providers.keys().map(String::as_str))
                .collect();
            Some(format!(
                "expected PROVIDER:MODEL with a known provider ({}; or add a providers entry)",
                known.join(", ")
            ))
        }
        Ok(_) => None,
    }
}

/// A file name with no folder in it: not empty, no `/` or `\\`, not `.` or `..`.
fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\'])
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// True when `base_url` points at this machine (a local server needs no API key).
pub fn is_loopback_url(base_url: &str) -> bool {
    let rest = base_url
        .strip_prefix("http://")
        .or_else(|| base_url.strip_prefix("https://"))
        .unwrap_or(base_url);
    let host_port = rest.split('/').next().unwrap_or("");
    let host = if let Some(v6) = host_port.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    host == "localhost" || host == "::1" || host.starts_with("127.") || host == "0.0.0.0"
}
