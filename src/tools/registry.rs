//! The tool table of a turn: which tools are registered ([`build_registry`], the only place
//! they are), in which order, and what a selection (`tools.enabled`, `tools.disabled`,
//! `--tool`, `--no-tool`) keeps of them.

use std::collections::HashMap;
use std::sync::Arc;

use super::approval::Approver;
use super::{
    BatchPatchTool, BatchReadTool, ClarifyTool, GlobTool, PatchTool, PlanTool, ReadFileTool,
    SearchFilesTool, ShellTool, Tool, WriteFileTool, background, catalog, web,
};
use crate::llm::ToolDef;
use crate::plan::PlanStore;
use crate::sandbox::Sandbox;

/// The registered tools, in a stable order (prompt caches depend on it).
pub struct ToolRegistry {
    tools: Vec<Arc<dyn Tool>>,
    index: HashMap<String, usize>,
    defs: Vec<ToolDef>,
}

impl ToolRegistry {
    /// A registry of the given tools, in this order.
    pub fn new(tools: Vec<Arc<dyn Tool>>) -> Self {
        let index = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.name().to_string(), i))
            .collect();
        let defs = tools
            .iter()
            .map(|t| ToolDef {
                name: t.name().to_string(),
                description: t.description().to_string(),
                parameters: t.parameters(),
            })
            .collect();
        ToolRegistry { tools, index, defs }
    }

    /// The tool with this name.
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Tool>> {
        self.index.get(name).map(|&i| &self.tools[i])
    }

    /// Definitions sent to the model, in registration order.
    pub fn defs(&self) -> &[ToolDef] {
        &self.defs
    }

    /// Names in registration order.
    pub fn names(&self) -> Vec<&str> {
        self.tools.iter().map(|t| t.name()).collect()
    }
}

/// Which tools to register.
#[derive(Debug, Clone, Default)]
pub struct ToolSelection {
    /// When non-empty, only these, in this order.
    pub enabled: Vec<String>,
    /// Never these.
    pub disabled: Vec<String>,
}

impl ToolSelection {
    /// The selection the `tools` section of a configuration makes.
    pub fn from_config(tools: &crate::config::ToolsConfig) -> Self {
        ToolSelection {
            enabled: tools.enabled.clone(),
            disabled: tools.disabled.clone(),
        }
    }

    /// True when the selection keeps the tool `name`.
    pub fn keeps(&self, name: &str) -> bool {
        !self.disabled.iter().any(|d| d == name)
            && (self.enabled.is_empty() || self.enabled.iter().any(|e| e == name))
    }

    /// Refuses names that are neither built-in tools nor tools of a configured MCP server
    /// (`<server>__<tool>`; which tools a server has is known only once it runs).
    pub fn check_names(&self, mcp_servers: &[&str]) -> Result<(), UnknownTool> {
        for name in self.enabled.iter().chain(&self.disabled) {
            let of_a_server = name
                .split_once(catalog::MCP_SEPARATOR)
                .is_some_and(|(server, _)| mcp_servers.contains(&server));
            if !catalog::is_builtin(name) && !of_a_server {
                let mut known = builtin_names();
                known.extend(
                    mcp_servers
                        .iter()
                        .map(|s| format!("{s}{}*", catalog::MCP_SEPARATOR)),
                );
                return Err(UnknownTool::new(name, &known));
            }
        }
        Ok(())
    }

    /// Refuses, once the tools are known, a name that is neither built in nor a tool of a
    /// running MCP server (a name of a server that is not running was accepted by
    /// [`ToolSelection::check_names`]: its failure to start was reported already).
    fn check_against(&self, all: &[Arc<dyn Tool>]) -> Result<(), UnknownTool> {
        for name in self.enabled.iter().chain(&self.disabled) {
            if catalog::is_builtin(name) || all.iter().any(|t| t.name() == name) {
                continue;
            }
            let server_running =
                name.split_once(catalog::MCP_SEPARATOR)
                    .is_some_and(|(server, _)| {
                        let prefix = format!("{server}{}", catalog::MCP_SEPARATOR);
                        all.iter().any(|t| t.name().starts_with(&prefix))
                    });
            if server_running || !name.contains(catalog::MCP_SEPARATOR) {
                let mut known = builtin_names();
                known.extend(
                    all.iter()
                        .map(|t| t.name().to_string())
                        .filter(|n| !catalog::is_builtin(n)),
                );
                return Err(UnknownTool::new(name, &known));
            }
        }
        Ok(())
    }
}

/// The names of odek's own tools, in registration order.
fn builtin_names() -> Vec<String> {
    catalog::TOOLS.iter().map(|r| r.name.to_string()).collect()
}

/// A tool selection names a tool that does not exist.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool \"{name}\" (available: {available})")]
pub struct UnknownTool {
    /// The name given.
    pub name: String,
    /// The names that would have been accepted, comma-separated.
    pub available: String,
}

impl crate::error::Classified for UnknownTool {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Config
    }

    fn hint(&self) -> Option<&'static str> {
        Some(
            "name tools as listed in docs/TOOLS.md (tools.enabled, tools.disabled, --tool, --no-tool)",
        )
    }
}

impl UnknownTool {
    fn new(name: &str, known: &[String]) -> Self {
        UnknownTool {
            name: name.to_string(),
            available: known.join(", "),
        }
    }
}

/// Everything besides the selection that decides the tools of a turn.
#[derive(Clone, Default)]
pub struct RegistryParts {
    /// The turn's plan store: the `plan` tool exists exactly when there is one.
    pub plan: Option<Arc<PlanStore>>,
    /// The sandbox shell commands run in.
    pub sandbox: Option<Arc<Sandbox>>,
    /// Tools of the running MCP servers.
    pub mcp: Vec<Arc<dyn Tool>>,
    /// What `web_fetch` may reach without asking, and its time limit.
    pub web: Arc<web::WebSettings>,
    /// The SearXNG instance of `web_search`: the tool exists exactly when there is one.
    pub search: Option<Arc<web::SearchSettings>>,
    /// Who answers `clarify` (the surface's approver); nobody = the model decides alone.
    pub asker: Option<Arc<dyn Approver>>,
    /// `delegate_tasks`, where delegation is allowed (never inside a sub-agent).
    pub delegate: Option<Arc<dyn Tool>>,
    /// `memory` and `session_search`, when memory is on.
    pub memory: Vec<Arc<dyn Tool>>,
    /// `skill_load` and `skill_list`, when skills are on and one is offered.
    pub skills: Vec<Arc<dyn Tool>>,
    /// The session's background jobs: `shell`'s `background` and the `background` tool
    /// exist exactly when there are.
    pub jobs: Option<Arc<background::Jobs>>,
    /// `browser` over the session's page, when it is on and a browser is found.
    pub browser: Option<Arc<super::browser::BrowserTool>>,
}

/// Builds the tool registry. This is the only place tools are registered, so `run`,
/// `continue`, `repl` and every later entry point get exactly the same set. `mcp` tools
/// follow the built-in ones; one whose name is taken is left out, so they never shadow a
/// built-in.
pub fn build_registry(
    selection: &ToolSelection,
    parts: RegistryParts,
) -> Result<ToolRegistry, UnknownTool> {
    let mut all: Vec<Arc<dyn Tool>> = vec![
        Arc::new(ReadFileTool),
        Arc::new(WriteFileTool),
        Arc::new(SearchFilesTool),
        Arc::new(PatchTool),
        Arc::new(GlobTool),
        Arc::new(BatchReadTool),
        Arc::new(BatchPatchTool),
        Arc::new(ShellTool::new(parts.sandbox, parts.jobs.clone())),
    ];
    if let Some(jobs) = parts.jobs.filter(|_| selection.keeps("shell")) {
        all.push(Arc::new(background::BackgroundTool::new(jobs)));
    }
    all.extend(parts.delegate);
    all.push(Arc::new(web::WebFetchTool::new(parts.web)));
    if let Some(search) = parts.search {
        all.push(Arc::new(web::WebSearchTool::new(search)));
    }
    if let Some(browser) = parts.browser {
        all.push(browser);
    }
    all.push(Arc::new(ClarifyTool::new(parts.asker)));
    all.extend(parts.memory);
    all.extend(parts.skills);
    if let Some(store) = parts.plan {
        all.push(Arc::new(PlanTool::new(store)));
    }
    for tool in parts.mcp {
        let taken = catalog::is_builtin(tool.name()) || all.iter().any(|t| t.name() == tool.name());
        if !taken {
            all.push(tool);
        }
    }
    selection.check_against(&all)?;
    let chosen: Vec<Arc<dyn Tool>> = if selection.enabled.is_empty() {
        all.into_iter()
            .filter(|t| selection.keeps(t.name()))
            .collect()
    } else {
        selection
            .enabled
            .iter()
            .filter(|name| selection.keeps(name))
            .filter_map(|name| all.iter().find(|t| t.name() == name).cloned())
            .collect()
    };
    Ok(ToolRegistry::new(chosen))
}
