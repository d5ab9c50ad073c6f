//! `--agent NAME` (`odek run`, `odek repl`, `odek config`): the whole session runs as that
//! named agent, through one settings layer whose values `odek config` shows with the source
//! `agent NAME` (see docs/NAMED_AGENTS.md and docs/SUBAGENTS.md).

use crate::config::LoadOptions;

/// Puts the layer of the agent `name` into `opts`: the configuration is resolved once
/// without it (the agent's tools are kept within its tool selection), the agents are found
/// in the odek home and the project, and an unknown or untrusted agent is an error that says
/// what to do — before any request is made.
pub fn add_agent_layer(opts: &mut LoadOptions, name: &str) -> crate::error::Fallible<()> {
    let base = crate::config::load(opts)?;
    let root = crate::agents::project_root(&opts.cwd);
    let catalog = crate::agents::Catalog::discover(&base.home, Some(&root));
    let layer = crate::subagent::session_layer(&catalog, name, &base.config, &opts.env)?;
    opts.agent = Some(layer);
    Ok(())
}
