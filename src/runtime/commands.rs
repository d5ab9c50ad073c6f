//! Custom slash commands for every surface: the catalog as it is now, a typed `/NAME args`
//! expanded into the prompt and the turn's [`TurnScope`], and what a turn does with a scope —
//! the model of that name on the same endpoint, the tools narrowed (see docs/COMMANDS.md).
//! Surfaces call [`Runtime::expand_command`] and submit the invocation's prompt with its
//! scope; nothing here is surface-specific.

use super::Runtime;
use crate::commands::{Catalog, CommandError, Places, Source};
use crate::config::ToolsConfig;
use crate::tools::claude_names::allows;
use crate::tools::{ToolRegistry, catalog as tool_table};

/// What one turn is narrowed to by a custom command (docs/COMMANDS.md): another model of the
/// same endpoint and provider, and fewer tools. The default changes nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TurnScope {
    /// The model this turn asks instead of the configured one.
    pub model: Option<String>,
    /// The only tools this turn may offer (odek's names), intersected with the turn's
    /// selection: never more than the configuration gives. `plan` stays when planning is on.
    pub tools: Option<Vec<String>>,
    /// The session's mode (`--mode`, `/mode`, ACP's picker): its policy over the configured
    /// one, and its note to the model (docs/MODES.md); `None` changes nothing.
    pub mode: Option<crate::danger_policy::Mode>,
}

impl TurnScope {
    /// True when it narrows nothing.
    pub fn is_default(&self) -> bool {
        self.model.is_none() && self.tools.is_none() && self.mode.is_none()
    }
}

/// What a typed `/NAME args` runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    /// The command's name, without the slash.
    pub name: String,
    /// Where the command comes from.
    pub source: Source,
    /// The user message of the turn: the command's prompt with its arguments put in.
    pub prompt: String,
    /// What the turn is narrowed to: pass it as `Submission::scope`.
    pub scope: TurnScope,
    /// Lines the surface shows before the turn (names in `allowed-tools` odek does not
    /// know, patterns it cannot keep).
    pub warnings: Vec<String>,
}

impl Runtime {
    /// Where this runtime looks for commands: `<home>/commands`, the project root's
    /// `.odek/commands` and, with `commands.import_claude`, `.claude/commands`.
    pub fn command_places(&self) -> Places {
        Places::new(
            &self.home,
            std::path::Path::new(&self.project_key),
            &self.config,
        )
    }

    /// The commands as they are now (files read again, trust as recorded now), with the
    /// skills offered (none when skills are off).
    pub fn commands(&self) -> Catalog {
        Catalog::discover(&self.command_places(), self.skills_catalog_peek())
    }

    /// What `text` runs when it is a custom command (`/NAME args`): `Ok(None)` when it is
    /// not one (no leading `/NAME`, a path, a built-in's name: the surface's own); an error
    /// when the command is unknown, not trusted, or sets a model this runtime cannot ask.
    pub fn expand_command(&self, text: &str) -> Result<Option<Invocation>, CommandError> {
        self.expand_in(&self.commands(), text)
    }

    /// [`Runtime::expand_command`] against a catalog the surface already holds.
    pub fn expand_in(
        &self,
        catalog: &Catalog,
        text: &str,
    ) -> Result<Option<Invocation>, CommandError> {
        let Some(expansion) = catalog.expand(text)? else {
            return Ok(None);
        };
        if let Some(model) = &expansion.model
            && self.scoped_models.is_none()
            && model != &self.config.model
        {
            return Err(CommandError::ModelNeedsEndpoint {
                name: expansion.name,
                model: model.clone(),
            });
        }
        Ok(Some(Invocation {
            name: expansion.name,
            source: expansion.source,
            prompt: expansion.prompt,
            scope: TurnScope {
                model: expansion.model,
                tools: expansion.tools,
                mode: None,
            },
            warnings: expansion.warnings,
        }))
    }

    /// What the sub-agents of a turn of `scope` may use: the configuration's selection, or,
    /// narrowed, only the tools the scope keeps and `plan` (never `delegate_tasks`: depth 1).
    /// Every other tool is named in `disabled` too, so a scope that keeps none gives none.
    pub(super) fn child_tools(&self, scope: &TurnScope) -> ToolsConfig {
        let Some(allowed) = &scope.tools else {
            return self.config.tools.clone();
        };
        let (enabled, dropped): (Vec<String>, Vec<String>) = self
            .tool_names()
            .into_iter()
            .filter(|name| name != tool_table::DELEGATE_TASKS.name)
            .partition(|name| name == tool_table::PLAN.name || allows(allowed, name));
        let mut disabled = self.config.tools.disabled.clone();
        disabled.extend(dropped);
        disabled.push(tool_table::DELEGATE_TASKS.name.to_string());
        ToolsConfig { enabled, disabled }
    }

    /// The policy of a turn of `scope` (and of its sub-agents): the configured one, changed
    /// by the scope's mode.
    pub(super) fn policy_for(&self, scope: &TurnScope) -> crate::danger_policy::DangerPolicy {
        let mut policy = self.config.dangerous.clone();
        if let Some(mode) = scope.mode {
            mode.apply(&mut policy);
        }
        policy
    }
}

/// A turn's block (skills, memory) with the scope's mode note after it: the note is the
/// same on every request of a session in that mode, and absent without a mode.
pub(super) fn with_mode_note(block: Option<String>, scope: &TurnScope) -> Option<String> {
    match (block, scope.mode.and_then(crate::danger_policy::Mode::note)) {
        (Some(block), Some(note)) => Some(format!("{block}\n\n{note}")),
        (block, note) => block.or(note.map(str::to_string)),
    }
}

/// `tools` narrowed to what `allowed` names (odek names; `<server>__*` a whole MCP server).
/// `plan` stays: it is odek's structure of the work, not a capability. The order is the
/// registry's, so the tools sent keep their order.
pub(super) fn narrow_tools(tools: ToolRegistry, allowed: Option<&[String]>) -> ToolRegistry {
    let Some(allowed) = allowed else {
        return tools;
    };
    let kept = tools
        .names()
        .into_iter()
        .filter(|name| *name == tool_table::PLAN.name || allows(allowed, name))
        .filter_map(|name| tools.get(name).cloned())
        .collect();
    ToolRegistry::new(kept)
}
