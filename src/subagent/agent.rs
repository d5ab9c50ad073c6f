//! Named agents at work (docs/SUBAGENTS.md): what a `delegate_tasks` task run as an agent
//! gets — its prompt, its provider and model, its tools within the parent's, its limit and
//! trust —, the list `delegate_tasks`' description shows, and the settings layer of a whole
//! session run as one (`odek run --agent NAME`). The agents themselves (files, front matter,
//! trust by hash) are [`crate::agents`].

use std::collections::BTreeMap;

use super::{TaskFile, TaskTools, Trust};
use crate::agents::{Agent, Catalog};
use crate::config::{AgentLayer, Config, Overrides, ProviderTarget};
use crate::tools::ToolSelection;
use crate::tools::catalog::{DELEGATE_TASKS, MCP_SEPARATOR};
use crate::tools::plan_tool::TOOL_NAME as PLAN;

/// Most agents the tool's description lists.
pub const MAX_LISTED: usize = 16;
/// Longest description of one listed agent, in characters (its first line, cut).
pub const MAX_LISTED_CHARS: usize = 100;

/// Why a task or a session cannot run as the agent it names.
#[derive(Debug, thiserror::Error)]
pub enum AgentUseError {
    /// No agent has that name.
    #[error("no agent named \"{name}\" ({})", known_list(.known))]
    Unknown {
        /// The name given.
        name: String,
        /// The agents that may run, by name.
        known: Vec<String>,
    },
    /// A project's agent nobody trusted, or one changed since it was trusted.
    #[error("agent \"{name}\" ({path}) is not trusted: {why}")]
    Untrusted {
        /// Its name.
        name: String,
        /// Its file.
        path: String,
        /// What to do (`odek agents trust NAME`).
        why: String,
    },
    /// None of its tools is one the parent offers.
    #[error(
        "agent \"{name}\" names no tool offered here (its tools: {}; the tool selection and the task's trust decide what is offered)",
        .tools.join(", ")
    )]
    NoTools {
        /// Its name.
        name: String,
        /// Its tools, as odek names them.
        tools: Vec<String>,
    },
    /// Its provider cannot be used from this configuration.
    #[error("agent \"{name}\": provider \"{provider}\": {reason}")]
    Provider {
        /// Its name.
        name: String,
        /// The provider it names.
        provider: String,
        /// Why not (the configuration's error).
        reason: String,
    },
}

impl crate::error::Classified for AgentUseError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            AgentUseError::Unknown { .. } => crate::error::ErrorKind::NotFound,
            AgentUseError::Untrusted { .. } | AgentUseError::NoTools { .. } => {
                crate::error::ErrorKind::Usage
            }
            AgentUseError::Provider { .. } => crate::error::ErrorKind::Config,
        }
    }

    fn hint(&self) -> Option<&'static str> {
        match self {
            AgentUseError::Unknown { .. } => Some("odek agents list shows every agent found"),
            AgentUseError::Untrusted { .. } => {
                Some("odek agents show NAME shows what the agent would run with")
            }
            AgentUseError::NoTools { .. } => Some("an agent's tools: docs/NAMED_AGENTS.md"),
            AgentUseError::Provider { .. } => Some("providers: docs/PROVIDERS.md"),
        }
    }
}

fn known_list(known: &[String]) -> String {
    if known.is_empty() {
        "none is defined: agent files go in <home>/agents, .odek/agents or .claude/agents"
            .to_string()
    } else {
        format!("known: {}", known.join(", "))
    }
}

/// The agents a `delegate_tasks` call may run its tasks as, and what running one needs from
/// the parent: the tools it offers and the endpoint and key of each other provider an agent
/// names (resolved here: the key reaches the child on its pipe, never in its environment).
#[derive(Debug, Default)]
pub struct DelegateAgents {
    /// Every agent found (usable or not), sorted by name.
    agents: Vec<Agent>,
    /// The names of the tools the parent offers, in registration order.
    offered: Vec<String>,
    /// Each provider a usable agent names other than the parent's: its endpoint, key and
    /// default model, or why it cannot be used.
    providers: BTreeMap<String, OtherProvider>,
}

/// Another provider than the parent's, as the parent resolved it.
#[derive(Debug)]
enum OtherProvider {
    /// Its endpoint, key and default model.
    Ready(ProviderTarget),
    /// Why it cannot be used (the configuration's error, in words).
    Unusable(String),
}

impl DelegateAgents {
    /// The agents of `catalog` for a parent with `config` that offers the MCP tools
    /// `mcp_tools` (by name); `env` resolves the keys of the other providers agents name.
    pub fn new(
        catalog: &Catalog,
        config: &Config,
        mcp_tools: &[String],
        env: &BTreeMap<String, String>,
    ) -> DelegateAgents {
        let selection = ToolSelection::from_config(&config.tools);
        let offered = crate::tools::catalog::TOOLS
            .iter()
            .map(|row| row.name.to_string())
            .chain(mcp_tools.iter().cloned())
            .filter(|name| selection.keeps(name) && name != DELEGATE_TASKS.name)
            .collect();
        let mut providers = BTreeMap::new();
        for agent in catalog.usable() {
            let Some(id) = agent.provider.as_deref() else {
                continue;
            };
            if config.provider.as_deref() == Some(id) || providers.contains_key(id) {
                continue;
            }
            let target = match config.provider_target(id, env) {
                Ok(target) => OtherProvider::Ready(target),
                Err(e) => OtherProvider::Unusable(e.to_string()),
            };
            providers.insert(id.to_string(), target);
        }
        DelegateAgents {
            agents: catalog.list().to_vec(),
            offered,
            providers,
        }
    }

    /// The agents that may run, sorted by name.
    pub fn usable(&self) -> impl Iterator<Item = &Agent> {
        self.agents.iter().filter(|a| a.trusted())
    }

    /// True when no agent may run (the tool's description and parameters stay as they are).
    pub fn is_empty(&self) -> bool {
        self.usable().next().is_none()
    }

    /// What the tool's description adds: each usable agent's name and the first line of its
    /// description, sorted by name (byte-stable), at most [`MAX_LISTED`]; empty when none.
    pub fn listing(&self) -> String {
        let usable: Vec<&Agent> = self.usable().collect();
        if usable.is_empty() {
            return String::new();
        }
        let mut out = String::from(
            "\nNamed agents (a task's agent runs it with that agent's prompt, model and tools):",
        );
        for agent in usable.iter().take(MAX_LISTED) {
            out.push_str(&format!(
                "\n- {}: {}",
                agent.name,
                agent.summary(MAX_LISTED_CHARS)
            ));
        }
        if usable.len() > MAX_LISTED {
            out.push_str(&format!("\n(and {} more)", usable.len() - MAX_LISTED));
        }
        out
    }

    /// The agent `name`, when it may run.
    fn usable_agent(&self, name: &str) -> Result<&Agent, AgentUseError> {
        let agent =
            self.agents
                .iter()
                .find(|a| a.name == name)
                .ok_or_else(|| AgentUseError::Unknown {
                    name: name.to_string(),
                    known: self.usable().map(|a| a.name.clone()).collect(),
                })?;
        refuse_untrusted(agent)?;
        Ok(agent)
    }

    /// Makes `task` (already filled with the parent's settings) run as the agent `name`:
    /// its prompt, its provider and model, its tools within the parent's offer, its
    /// `max_iter` within the parent's `subagents.max_iter`, and its trust level unless the
    /// task asked for less (`asked`: the task's own `trust_level`, if it gave one).
    pub fn apply(
        &self,
        name: &str,
        task: &mut TaskFile,
        asked: Option<Trust>,
    ) -> Result<(), AgentUseError> {
        let agent = self.usable_agent(name)?;
        task.trust_level = trust_of(agent.trust_level, asked);
        self.set_provider(agent, task)?;
        if let Some(tools) = &agent.tools {
            let enabled = self.tools_for(agent, task.trust_level);
            if enabled.is_empty() {
                return Err(AgentUseError::NoTools {
                    name: agent.name.clone(),
                    tools: tools.clone(),
                });
            }
            let disabled = task.tools.take().map(|t| t.disabled).unwrap_or_default();
            // Without its `plan` tool the child does not plan (nor is told to).
            if !enabled.iter().any(|t| t == PLAN) {
                task.planning = Some(false);
            }
            task.tools = Some(TaskTools { enabled, disabled });
        }
        if let Some(max_iter) = agent.max_iter {
            task.max_iter = task.max_iter.min(max_iter).max(1);
        }
        task.agent = Some(agent.name.clone());
        task.system = Some(agent.prompt.clone());
        Ok(())
    }

    /// The provider, endpoint and model of a task run as `agent`: the agent's provider when
    /// it names another than the parent's (with that provider's endpoint), the agent's
    /// model on it, else that provider's default model, else the parent's.
    fn set_provider(&self, agent: &Agent, task: &mut TaskFile) -> Result<(), AgentUseError> {
        let other = agent
            .provider
            .as_deref()
            .filter(|id| task.provider.as_deref() != Some(*id));
        let Some(id) = other else {
            let on = task.provider.clone().unwrap_or_default();
            if let Some(model) = agent.model_for(&on) {
                task.model = Some(model);
            }
            return Ok(());
        };
        let failed = |reason: String| AgentUseError::Provider {
            name: agent.name.clone(),
            provider: id.to_string(),
            reason,
        };
        let target = match self.providers.get(id) {
            Some(OtherProvider::Ready(target)) => target,
            Some(OtherProvider::Unusable(reason)) => return Err(failed(reason.clone())),
            None => return Err(failed("not resolved".into())),
        };
        task.provider = Some(id.to_string());
        task.base_url = Some(target.base_url.clone());
        if let Some(model) = agent.model_for(id).or_else(|| target.model.clone()) {
            task.model = Some(model);
        }
        Ok(())
    }

    /// The key a child of `task` gets: `None` when the task speaks to the parent's provider
    /// (the parent's key goes), else the key of the agent's provider (`Some(None)`: it has
    /// none here — the parent's key never goes to another provider).
    pub fn key_for(&self, task: &TaskFile, parent: Option<&str>) -> Option<Option<String>> {
        let id = task.provider.as_deref().filter(|id| Some(*id) != parent)?;
        Some(match self.providers.get(id) {
            Some(OtherProvider::Ready(target)) => target.api_key.clone(),
            _ => None,
        })
    }

    /// The tools the parent offers that `agent` names, in the parent's order: never
    /// `delegate_tasks` (depth 1), and for an untrusted child no MCP tool (it gets no MCP
    /// servers).
    fn tools_for(&self, agent: &Agent, trust: Trust) -> Vec<String> {
        self.offered
            .iter()
            .filter(|name| agent.allows(name))
            .filter(|name| trust == Trust::Trusted || !name.contains(MCP_SEPARATOR))
            .cloned()
            .collect()
    }
}

/// An untrusted agent is an error saying what to run.
fn refuse_untrusted(agent: &Agent) -> Result<(), AgentUseError> {
    match agent.why_not() {
        None => Ok(()),
        Some(why) => Err(AgentUseError::Untrusted {
            name: agent.name.clone(),
            path: agent.path.display().to_string(),
            why,
        }),
    }
}

/// The child's trust: the agent's, unless the task asked for less; the task's (untrusted
/// by default) when the agent says nothing.
fn trust_of(agent: Option<Trust>, asked: Option<Trust>) -> Trust {
    match (agent, asked) {
        (Some(Trust::Trusted), Some(Trust::Untrusted)) => Trust::Untrusted,
        (Some(agent), _) => agent,
        (None, asked) => asked.unwrap_or_default(),
    }
}

/// The settings layer of a session run as the agent `name` of `catalog` (`odek run --agent`,
/// `odek repl --agent`; source `agent NAME`), over `base`, the configuration without it: the
/// agent's prompt as `system`, its provider (with that provider's endpoint) and model, its
/// tools within `base`'s selection as `tools.enabled`, its `max_iter` as `max_iterations`.
/// An unknown name lists the known ones; an untrusted agent says what to run.
pub fn session_layer(
    catalog: &Catalog,
    name: &str,
    base: &Config,
    env: &BTreeMap<String, String>,
) -> Result<AgentLayer, AgentUseError> {
    let agent = catalog.get(name).ok_or_else(|| AgentUseError::Unknown {
        name: name.to_string(),
        known: catalog.usable().map(|a| a.name.clone()).collect(),
    })?;
    refuse_untrusted(agent)?;
    let mut values = Overrides::default();
    values.set("system", agent.prompt.as_str());
    let mut on = base.provider.clone().unwrap_or_default();
    if let Some(id) = agent.provider.as_deref().filter(|id| *id != on) {
        let target = base
            .provider_target(id, env)
            .map_err(|e| AgentUseError::Provider {
                name: agent.name.clone(),
                provider: id.to_string(),
                reason: e.to_string(),
            })?;
        values.set("provider", id);
        values.set("base_url", target.base_url.as_str());
        if let Some(model) = target.model.filter(|_| agent.model_for(id).is_none()) {
            values.set("model", model);
        }
        on = id.to_string();
    }
    if let Some(model) = agent.model_for(&on) {
        values.set("model", model);
    }
    if let Some(tools) = &agent.tools {
        let selection = ToolSelection::from_config(&base.tools);
        let enabled: Vec<String> = crate::tools::catalog::TOOLS
            .iter()
            .map(|row| row.name.to_string())
            .chain(
                tools
                    .iter()
                    .filter(|t| t.contains(MCP_SEPARATOR) && !t.ends_with('*'))
                    .cloned(),
            )
            .filter(|t| agent.allows(t) && selection.keeps(t))
            .collect();
        if enabled.is_empty() {
            return Err(AgentUseError::NoTools {
                name: agent.name.clone(),
                tools: tools.clone(),
            });
        }
        if !enabled.iter().any(|t| t == PLAN) {
            values.set("planning.enabled", false);
        }
        values.set("tools.enabled", enabled);
    }
    if let Some(max_iter) = agent.max_iter {
        values.set("max_iterations", max_iter);
    }
    Ok(AgentLayer {
        name: agent.name.clone(),
        values,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_agent_decides_the_trust_unless_the_task_asks_for_less() {
        use Trust::{Trusted, Untrusted};
        for (agent, asked, want) in [
            (None, None, Untrusted),
            (None, Some(Trusted), Trusted),
            (Some(Trusted), None, Trusted),
            (Some(Trusted), Some(Untrusted), Untrusted),
            (Some(Untrusted), Some(Trusted), Untrusted),
            (Some(Untrusted), None, Untrusted),
        ] {
            assert_eq!(trust_of(agent, asked), want, "{agent:?} {asked:?}");
        }
    }

    fn agent(name: &str, tools: Option<&[&str]>) -> Agent {
        Agent {
            name: name.into(),
            description: format!("{name} does things.\nExample: more"),
            tools: tools.map(|t| t.iter().map(|n| n.to_string()).collect()),
            model: Some("agent-model".into()),
            provider: None,
            max_iter: Some(40),
            trust_level: None,
            prompt: format!("You are {name}."),
            origin: crate::agents::Origin::User,
            path: format!("/home/u/.odek/agents/{name}.md").into(),
            hash: String::new(),
            trust: crate::skills::trust::TrustState::NotTrusted,
            notes: Vec::new(),
            other_keys: Vec::new(),
        }
    }

    fn task() -> TaskFile {
        serde_json::from_value(serde_json::json!({"goal": "g", "index": 1, "total": 1,
            "max_iter": 15, "timeout_seconds": 60, "provider": "deepseek", "model": "parent-model",
            "tools": {"enabled": [], "disabled": ["web_fetch"]}}))
        .expect("task")
    }

    fn agents(list: Vec<Agent>) -> DelegateAgents {
        DelegateAgents {
            agents: list,
            offered: ["read_file", "search_files", "patch", "srv__query"]
                .map(String::from)
                .to_vec(),
            providers: BTreeMap::new(),
        }
    }

    #[test]
    fn a_task_run_as_an_agent_gets_its_prompt_model_and_tools_within_the_parents() {
        let agents = agents(vec![agent(
            "reviewer",
            Some(&["read_file", "shell", "srv__*"]),
        )]);
        let mut untrusted = task();
        agents
            .apply("reviewer", &mut untrusted, None)
            .expect("applies");
        assert_eq!(untrusted.system.as_deref(), Some("You are reviewer."));
        assert_eq!(untrusted.agent.as_deref(), Some("reviewer"));
        assert_eq!(untrusted.model.as_deref(), Some("agent-model"));
        // `shell` is not the parent's; an untrusted child gets no MCP tool; `max_iter` stays
        // within the parent's 15; the parent's disabled tools stay disabled.
        let tools = untrusted.tools.as_ref().expect("tools");
        assert_eq!(tools.enabled, ["read_file"]);
        assert_eq!(tools.disabled, ["web_fetch"]);
        assert_eq!(untrusted.planning, Some(false), "no plan tool, no planning");
        assert_eq!(untrusted.max_iter, 15);
        let mut trusted = task();
        agents
            .apply("reviewer", &mut trusted, Some(Trust::Trusted))
            .expect("applies");
        let tools = trusted.tools.as_ref().expect("tools");
        assert_eq!(tools.enabled, ["read_file", "srv__query"]);
        // The parent's key goes: the agent names no other provider.
        assert_eq!(agents.key_for(&trusted, Some("deepseek")), None);
    }

    #[test]
    fn an_agent_whose_tools_the_parent_does_not_offer_is_refused() {
        let agents = agents(vec![agent("web", Some(&["web_fetch"]))]);
        let e = agents
            .apply("web", &mut task(), None)
            .expect_err("no tools");
        assert!(
            e.to_string()
                .contains("names no tool offered here (its tools: web_fetch"),
            "{e}"
        );
    }

    #[test]
    fn an_agent_on_another_provider_gets_its_endpoint_and_key_or_says_why_not() {
        let mut scout = agent("scout", None);
        scout.provider = Some("elsewhere".into());
        let mut lost = agent("lost", None);
        lost.provider = Some("nowhere".into());
        let mut agents = agents(vec![scout, lost]);
        agents.providers.insert(
            "elsewhere".into(),
            OtherProvider::Ready(ProviderTarget {
                base_url: "http://127.0.0.1:9/v1".into(),
                api_key: Some("sk-other".into()),
                model: Some("other-default".into()),
            }),
        );
        agents.providers.insert(
            "nowhere".into(),
            OtherProvider::Unusable("unknown provider".into()),
        );
        let mut task = task();
        agents.apply("scout", &mut task, None).expect("applies");
        assert_eq!(task.provider.as_deref(), Some("elsewhere"));
        assert_eq!(task.base_url.as_deref(), Some("http://127.0.0.1:9/v1"));
        assert_eq!(task.model.as_deref(), Some("agent-model"));
        assert_eq!(
            agents.key_for(&task, Some("deepseek")),
            Some(Some("sk-other".into()))
        );
        let e = agents
            .apply("lost", &mut self::task(), None)
            .expect_err("unusable");
        assert!(
            e.to_string()
                .contains("agent \"lost\": provider \"nowhere\": unknown provider"),
            "{e}"
        );
    }

    #[test]
    fn no_agents_list_nothing_and_an_unknown_name_says_where_agents_go() {
        let agents = DelegateAgents::default();
        assert!(agents.is_empty());
        assert_eq!(agents.listing(), "");
        let e = agents.usable_agent("reviewer").expect_err("unknown");
        assert!(e.to_string().contains("none is defined"), "{e}");
    }
}
