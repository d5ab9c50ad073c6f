//! `odek agents list|show|trust|untrust`: the named sub-agents, for people (docs/NAMED_AGENTS.md).

use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::Exit;
use crate::agents::{Agent, AgentError, Catalog, Origin};
use crate::config::LoadOptions;
use crate::text::visible;

/// Arguments of `odek agents`.
#[derive(Debug, Args)]
pub struct AgentsArgs {
    #[command(subcommand)]
    command: AgentsCommand,
}

#[derive(Debug, Subcommand)]
enum AgentsCommand {
    /// Every agent found (<home>/agents, the project's .odek/agents and .claude/agents):
    /// its source, tools, model and whether it may run
    List {
        /// Print JSON
        #[arg(long)]
        json: bool,
    },
    /// An agent's fields and its whole prompt
    Show {
        /// The agent's name
        name: String,
    },
    /// Let a project's agent run: records a hash of its file as it is now
    Trust {
        /// The agent's name
        name: String,
    },
    /// Stop a project's agent from running
    Untrust {
        /// The agent's name
        name: String,
    },
}

/// What the commands share: the odek home, the agents found and the provider in effect.
struct Ctx {
    home: PathBuf,
    catalog: Catalog,
    provider: Option<String>,
}

impl Ctx {
    /// The provider an agent's child talks to: its own, else the configuration's.
    fn provider_of<'a>(&'a self, agent: &'a Agent) -> &'a str {
        agent
            .provider
            .as_deref()
            .or(self.provider.as_deref())
            .unwrap_or("base_url")
    }
}

/// Runs `odek agents …`.
pub fn run(args: AgentsArgs) -> crate::error::Fallible<Exit> {
    let resolved = crate::config::load(&LoadOptions::from_process(Default::default()))?;
    resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
    let root = crate::agents::project_root(&std::env::current_dir()?);
    let ctx = Ctx {
        catalog: Catalog::discover(&resolved.home, Some(&root)),
        home: resolved.home,
        provider: resolved.config.provider,
    };
    match args.command {
        AgentsCommand::List { json } => list(&ctx, json),
        AgentsCommand::Show { name } => show(&ctx, &name),
        AgentsCommand::Trust { name } => trust(&ctx, &name),
        AgentsCommand::Untrust { name } => untrust(&ctx, &name),
    }
}

/// What `odek agents list --json` shows of an agent.
fn view(ctx: &Ctx, agent: &Agent) -> Value {
    json!({
        "name": agent.name,
        "description": agent.description,
        "source": agent.origin.label(),
        "path": agent.path,
        "tools": agent.tools,
        "model": agent.model,
        "model_used": agent.model_for(ctx.provider_of(agent)),
        "provider": agent.provider,
        "max_iter": agent.max_iter,
        "trust_level": agent.trust_level,
        "trusted": agent.trusted(),
        "why_not": agent.why_not(),
        "notes": agent.notes,
    })
}

fn list(ctx: &Ctx, as_json: bool) -> crate::error::Fallible<Exit> {
    let catalog = &ctx.catalog;
    if as_json {
        let agents: Vec<Value> = catalog.list().iter().map(|a| view(ctx, a)).collect();
        let broken: Vec<Value> = catalog
            .broken()
            .iter()
            .map(
                |b| json!({"path": b.path, "source": b.origin.label(), "rule": b.rule.to_string()}),
            )
            .collect();
        let hidden: Vec<Value> = catalog
            .shadowed()
            .iter()
            .map(|(a, winner)| json!({"name": a.name, "path": a.path, "hidden_by": winner}))
            .collect();
        let out = json!({"agents": agents, "broken": broken, "hidden": hidden});
        println!("{}", serde_json::to_string_pretty(&out)?);
        return Ok(Exit::Success);
    }
    if catalog.list().is_empty() && catalog.broken().is_empty() {
        println!(
            "No agents. Write one as <home>/agents/NAME.md or the project's .odek/agents/NAME.md (docs/NAMED_AGENTS.md)."
        );
    }
    for a in catalog.list() {
        let standing = a.why_not().unwrap_or_else(|| "may run".to_string());
        println!("{}  [{}] {}", a.name, a.origin.label(), standing);
        println!("    {}", visible(&a.summary(100), false));
        let tools = a.tools.as_ref().map_or("all".to_string(), |t| t.join(", "));
        println!(
            "    tools: {}; model: {}",
            visible(&tools, false),
            visible(&a.model_shown(ctx.provider_of(a)), false)
        );
    }
    ctx.catalog
        .warnings()
        .iter()
        .for_each(|w| eprintln!("{}", visible(w, false)));
    Ok(Exit::Success)
}

fn find<'a>(ctx: &'a Ctx, name: &str) -> Result<&'a Agent, AgentError> {
    ctx.catalog
        .get(name)
        .ok_or_else(|| AgentError::NotFound(name.to_string()))
}

fn show(ctx: &Ctx, name: &str) -> crate::error::Fallible<Exit> {
    let agent = find(ctx, name)?;
    let shown = |v: &str| visible(v, false).into_owned();
    println!("name: {}", agent.name);
    println!("file: {}", agent.path.display());
    println!("source: {}", agent.origin.label());
    let standing = agent.why_not().unwrap_or_else(|| "may run".to_string());
    println!("status: {standing}");
    println!("description: {}", visible(&agent.description, true));
    let tools = agent
        .tools
        .as_ref()
        .map_or("all the parent may give".to_string(), |t| t.join(", "));
    println!("tools: {}", shown(&tools));
    println!(
        "model: {}",
        shown(&agent.model_shown(ctx.provider_of(agent)))
    );
    let optional = [
        ("provider", agent.provider.clone()),
        ("max_iter", agent.max_iter.map(|n| n.to_string())),
        (
            "trust_level",
            agent.trust_level.map(|t| format!("{t:?}").to_lowercase()),
        ),
        (
            "other keys (ignored)",
            (!agent.other_keys.is_empty()).then(|| agent.other_keys.join(", ")),
        ),
    ];
    for (key, value) in optional {
        if let Some(v) = value {
            println!("{key}: {}", shown(&v));
        }
    }
    for note in &agent.notes {
        println!("note: {}", shown(note));
    }
    for (hidden, _) in ctx
        .catalog
        .shadowed()
        .iter()
        .filter(|(a, _)| a.name == name)
    {
        println!(
            "hides: {} [{}]",
            hidden.path.display(),
            hidden.origin.label()
        );
    }
    println!();
    println!("{}", visible(&agent.prompt, true));
    Ok(Exit::Success)
}

/// Trusts the first project file of the agent `name` (hidden or not) not trusted yet.
fn trust(ctx: &Ctx, name: &str) -> crate::error::Fallible<Exit> {
    let all = ctx.catalog.all_named(name);
    if all.is_empty() {
        return Err(AgentError::NotFound(name.to_string()).into());
    }
    let project: Vec<&Agent> = all
        .into_iter()
        .filter(|a| a.origin.from_project())
        .collect();
    let Some(agent) = project.iter().find(|a| !a.trusted()).or(project.first()) else {
        return Err(AgentError::UserAgent(name.to_string()).into());
    };
    crate::agents::trust(&ctx.home, agent)?;
    println!(
        "Trusted agent {name} ({}) as it is now; it needs trust again if the file changes.",
        agent.path.display()
    );
    if agent.origin == Origin::Claude
        && let Some(odek) = ctx
            .catalog
            .all_named(name)
            .into_iter()
            .find(|a| a.origin == Origin::Project)
    {
        println!(
            "(the project's {} comes first once trusted)",
            odek.path.display()
        );
    }
    Ok(Exit::Success)
}

/// Forgets the trust in every project file of the agent `name`.
fn untrust(ctx: &Ctx, name: &str) -> crate::error::Fallible<Exit> {
    let all = ctx.catalog.all_named(name);
    if all.is_empty() {
        return Err(AgentError::NotFound(name.to_string()).into());
    }
    let mut forgot = 0;
    for agent in all.into_iter().filter(|a| a.origin.from_project()) {
        if crate::agents::untrust(&ctx.home, agent)? {
            println!(
                "No longer trusting agent {name} ({}).",
                agent.path.display()
            );
            forgot += 1;
        }
    }
    if forgot == 0 {
        println!("Agent {name}: no trust was recorded for a project's file of it.");
    }
    Ok(Exit::Success)
}
