//! `odek config`: the resolved configuration and the layer each value came from.

use std::path::PathBuf;

use clap::Args;
use serde_json::Value;

use super::Exit;
use super::flags::TurnFlags;
use crate::config::{LoadOptions, Resolved, Source};

/// Arguments of `odek config`.
#[derive(Debug, Args)]
pub struct ConfigArgs {
    /// Print JSON ({"key": {"value": …, "source": …}}) instead of a table
    #[arg(long)]
    json: bool,
    /// Flags to apply on top, exactly as `odek run` would
    #[command(flatten)]
    turn: TurnFlags,
    /// Show the settings of a sub-agent with this task file (its values tagged `subagent
    /// task`); inside a sub-agent, $ODEK_SUBAGENT_TASK names its own
    #[arg(long, value_name = "FILE")]
    subagent_task: Option<PathBuf>,
}

/// Runs `odek config`.
pub fn run(args: ConfigArgs) -> crate::error::Fallible<Exit> {
    let flags = args.turn.overrides();
    let agent = args.turn.agent.clone();
    let task_file = args.subagent_task.or_else(|| {
        std::env::var_os(crate::subagent::TASK_VAR)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let resolved = match &task_file {
        Some(path) => {
            let task = crate::subagent::read_task_file(path)?;
            super::subagent_child::load_for_task(&task, &Default::default(), flags)?
        }
        None => {
            let mut opts = LoadOptions::from_process(flags);
            if let Some(name) = &agent {
                super::agent_flag::add_agent_layer(&mut opts, name)?;
            }
            crate::config::load(&opts)?
        }
    };
    for w in &resolved.warnings {
        eprintln!("{w}");
    }
    let rows = rows(&resolved);
    if args.json {
        let map: serde_json::Map<String, Value> = rows
            .into_iter()
            .map(|(k, v, s)| (k, serde_json::json!({"value": v, "source": s})))
            .collect();
        println!("{}", serde_json::to_string_pretty(&Value::Object(map))?);
        return Ok(Exit::Success);
    }
    println!(
        "global config:  {}{}",
        resolved.global_path.display(),
        found(resolved.global_path.exists())
    );
    match &resolved.project_path {
        Some(p) => println!("project config: {}", p.display()),
        None => println!("project config: (none in this directory)"),
    }
    println!("sandbox:        {}", sandbox_line(&resolved));
    println!("instructions:   {}", instructions_line(&resolved));
    println!();
    let width = rows.iter().map(|(k, _, _)| k.len()).max().unwrap_or(10);
    for (key, value, source) in rows {
        let shown = match &value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        println!("{key:<width$}  {shown}  ({source})");
    }
    Ok(Exit::Success)
}

/// Whether shell commands run sandboxed here, and why not (its warnings are left to the
/// commands that run them: the line says it all).
fn sandbox_line(resolved: &Resolved) -> String {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let mut warnings = Vec::new();
    crate::runtime::sandbox_status(&resolved.config, &cwd, &resolved.home, &mut warnings).describe()
}

/// The instruction files a session started here reads, in order (docs/INSTRUCTIONS.md);
/// why any was left out goes to stderr.
fn instructions_line(resolved: &Resolved) -> String {
    if resolved.config.no_agents {
        return "none read (no_agents)".into();
    }
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    let opts =
        crate::instructions::ChainOptions::from_config(&resolved.home, &cwd, &resolved.config);
    let chain = crate::instructions::discover(&opts);
    for w in &chain.warnings {
        eprintln!("odek: warning: {w}");
    }
    if chain.files.is_empty() {
        return "(none found)".into();
    }
    let labels: Vec<&str> = chain.files.iter().map(|f| f.label.as_str()).collect();
    labels.join(", ")
}

fn found(exists: bool) -> &'static str {
    if exists { "" } else { " (not present)" }
}

/// Every leaf key with its (masked) value and source, in a stable order.
fn rows(resolved: &Resolved) -> Vec<(String, Value, String)> {
    let value = crate::config::masked_json(&resolved.config);
    let mut out = Vec::new();
    flatten("", &value, &mut |key, v| {
        let source = source_for(resolved, key);
        out.push((key.to_string(), v.clone(), source.to_string()));
    });
    out
}

/// Sections printed as one value rather than key by key: the policy's lists of commands.
const OPAQUE: &[&str] = &["dangerous.allowlist", "dangerous.denylist"];

fn flatten(prefix: &str, value: &Value, emit: &mut dyn FnMut(&str, &Value)) {
    match value {
        Value::Object(map) if !OPAQUE.contains(&prefix) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, emit);
            }
        }
        other => emit(prefix, other),
    }
}

/// The layer that set `key`, or the one that set the section it is in (`dangerous` from
/// the global file sets `dangerous.classes.install`).
fn source_for(resolved: &Resolved, key: &str) -> Source {
    let mut key = key;
    loop {
        let source = resolved.source_of(key);
        match key.rsplit_once('.') {
            Some((parent, _)) if source == Source::Default => key = parent,
            _ => return source,
        }
    }
}
