//! Flags shared by every command that runs turns (`run`, `continue`, `repl`), turned into a
//! plain configuration layer for `config::load`.

use std::path::PathBuf;

use clap::Args;

use crate::config::{LoadOptions, Overrides, Resolved};
use crate::danger_policy::DangerClass;

/// Per-turn flags.
#[derive(Debug, Clone, Default, Args)]
pub struct TurnFlags {
    /// Provider: deepseek, anthropic, openai, openrouter, gemini, ollama, local, or an id of `providers` (see docs/PROVIDERS.md)
    #[arg(long, value_name = "ID", help_heading = "Model")]
    pub provider: Option<String>,
    /// Model name (e.g. gpt-4.1, deepseek-v4-flash, qwen3:8b)
    #[arg(long, value_name = "NAME", help_heading = "Model")]
    pub model: Option<String>,
    /// OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1
    #[arg(long, value_name = "URL", help_heading = "Model")]
    pub base_url: Option<String>,
    /// Replace the built-in system prompt
    #[arg(long, value_name = "TEXT", help_heading = "Model")]
    pub system: Option<String>,
    /// Run the whole session as this named agent: its prompt, model, provider, tools and max_iter (see docs/NAMED_AGENTS.md; `odek agents list`)
    #[arg(long, value_name = "NAME", help_heading = "Model")]
    pub agent: Option<String>,
    /// Sampling temperature (0..2; omitted = the server's default)
    #[arg(long, value_name = "F", help_heading = "Model")]
    pub temperature: Option<f64>,
    /// Thinking / reasoning effort
    #[arg(long, value_name = "LEVEL", value_parser = clap::builder::PossibleValuesParser::new(crate::config::THINKING_LEVELS), help_heading = "Model")]
    pub thinking: Option<String>,
    /// Stream answers as they are generated (default on)
    #[arg(long, overrides_with = "no_stream", help_heading = "Model")]
    pub stream: bool,
    /// Wait for whole answers instead of streaming
    #[arg(long, overrides_with = "stream", help_heading = "Model")]
    pub no_stream: bool,
    /// Play model answers from a recorded JSONL file instead of calling a server
    #[arg(long, value_name = "FILE", help_heading = "Model")]
    pub replay: Option<PathBuf>,
    /// Append every model answer to FILE (a recording for --replay)
    #[arg(long, value_name = "FILE", help_heading = "Model")]
    pub record: Option<PathBuf>,

    /// Model calls before the run stops with a partial summary (default 90)
    #[arg(long = "max-iter", value_name = "N", value_parser = clap::value_parser!(u32).range(1..), help_heading = "Loop")]
    pub max_iter: Option<u32>,
    /// Keep a structured plan with the plan tool (default on)
    #[arg(long, overrides_with = "no_planning", help_heading = "Loop")]
    pub planning: bool,
    /// Turn the plan tool and every piece of plan logic off
    #[arg(long, overrides_with = "planning", help_heading = "Loop")]
    pub no_planning: bool,
    /// Summarise dropped turns when the context is trimmed (default on)
    #[arg(long, overrides_with = "no_compaction", help_heading = "Loop")]
    pub compaction: bool,
    /// Drop old turns without summarising them
    #[arg(long, overrides_with = "compaction", help_heading = "Loop")]
    pub no_compaction: bool,
    /// Only register this tool (repeatable; order is kept)
    #[arg(long = "tool", value_name = "NAME", help_heading = "Loop")]
    pub tools: Vec<String>,
    /// Do not register this tool (repeatable)
    #[arg(long = "no-tool", value_name = "NAME", help_heading = "Loop")]
    pub no_tools: Vec<String>,
    /// Attach files as context (comma-separated, repeatable)
    #[arg(
        long,
        short = 'c',
        value_name = "FILE[,FILE]",
        value_delimiter = ',',
        help_heading = "Loop"
    )]
    pub ctx: Vec<String>,

    /// Stop after this many seconds
    #[arg(long, value_name = "SECS", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Budgets")]
    pub max_runtime: Option<u64>,
    /// Stop after this many tool calls
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Budgets")]
    pub max_tool_calls: Option<u64>,
    /// Stop after this many input tokens
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Budgets")]
    pub max_input_tokens: Option<u64>,
    /// Stop after this many output tokens
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..), help_heading = "Budgets")]
    pub max_output_tokens: Option<u64>,
    /// Stop once the run has cost this many US dollars (sub-agents included; needs the model's price)
    #[arg(long, value_name = "USD", value_parser = positive_amount, help_heading = "Budgets")]
    pub max_cost_usd: Option<f64>,

    /// Write odek.event/v1 JSON lines to PATH (appended), or to stdout with -
    #[arg(long, value_name = "PATH|-", help_heading = "Output")]
    pub events_jsonl: Option<String>,
    /// Include (redacted) tool arguments in tool_call_started events
    #[arg(long, help_heading = "Output")]
    pub events_include_args: bool,
    /// Allow this risk class without asking (repeatable), e.g. --allow code_execution
    #[arg(long = "allow", value_name = "CLASS", help_heading = "Safety")]
    pub allow: Vec<DangerClass>,
    /// Allow every tool call except blocked commands, without asking (printed loudly, recorded in the session)
    #[arg(long, help_heading = "Safety")]
    pub yolo: bool,
    /// Mode: plan (only reads and the plan; the model plans, changes nothing), ask (file edits ask too) or accept_edits (see docs/MODES.md)
    #[arg(long, value_name = "MODE", help_heading = "Safety")]
    pub mode: Option<crate::danger_policy::Mode>,
    /// Run shell commands in the Landlock sandbox (default where the kernel offers it)
    #[arg(long, overrides_with = "no_sandbox", help_heading = "Safety")]
    pub sandbox: bool,
    /// Run shell commands without the sandbox
    #[arg(long, overrides_with = "sandbox", help_heading = "Safety")]
    pub no_sandbox: bool,
    /// Do not read instruction files (AGENTS.md, CLAUDE.md, ~/.odek/AGENTS.md)
    #[arg(long, help_heading = "Loop")]
    pub no_agents: bool,
    /// No delegate_tasks: the model cannot start sub-agents
    #[arg(long, help_heading = "Loop")]
    pub no_subagents: bool,
    /// No memory: no memory block, no memory or session_search tool, no episodes
    #[arg(long, help_heading = "Loop")]
    pub no_memory: bool,
    /// No skills: no skills block, no skill_load or skill_list tool
    #[arg(long, help_heading = "Loop")]
    pub no_skills: bool,
    /// No colours
    #[arg(long, help_heading = "Output")]
    pub no_color: bool,
    /// Print answers as the model wrote them, without rendering their Markdown
    #[arg(long, help_heading = "Output")]
    pub raw: bool,
    /// Print only the final answer
    #[arg(short, long, help_heading = "Output")]
    pub quiet: bool,
    /// More detail: hints, reasoning, the context window (-v); debug logs (-vv)
    #[arg(short, long, action = clap::ArgAction::Count, help_heading = "Output")]
    pub verbose: u8,
}

fn toggle(on: bool, off: bool) -> Option<bool> {
    match (on, off) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    }
}

impl TurnFlags {
    /// The configuration layer these flags set.
    pub fn overrides(&self) -> Overrides {
        let mut o = Overrides::default();
        if let Some(v) = &self.model {
            o.set("model", v.as_str());
        }
        if let Some(v) = &self.base_url {
            o.set("base_url", v.as_str());
        }
        if let Some(v) = &self.provider {
            o.set("provider", v.as_str());
        }
        if let Some(v) = &self.system {
            o.set("system", v.as_str());
        }
        if let Some(v) = self.temperature {
            o.set("temperature", v);
        }
        if let Some(v) = &self.thinking {
            o.set("thinking", v.as_str());
        }
        if let Some(v) = self.max_iter {
            o.set("max_iterations", v);
        }
        let toggles = [
            ("stream", toggle(self.stream, self.no_stream)),
            (
                "compaction.enabled",
                toggle(self.compaction, self.no_compaction),
            ),
            ("planning.enabled", toggle(self.planning, self.no_planning)),
            ("sandbox", toggle(self.sandbox, self.no_sandbox)),
            ("no_color", self.no_color.then_some(true)),
            ("raw", self.raw.then_some(true)),
            ("no_agents", self.no_agents.then_some(true)),
            ("subagents.enabled", self.no_subagents.then_some(false)),
            ("memory.enabled", self.no_memory.then_some(false)),
            ("skills.enabled", self.no_skills.then_some(false)),
        ];
        for (key, value) in toggles {
            if let Some(v) = value {
                o.set(key, v);
            }
        }
        if !self.tools.is_empty() {
            o.set("tools.enabled", self.tools.clone());
        }
        if !self.no_tools.is_empty() {
            o.set("tools.disabled", self.no_tools.clone());
        }
        let budgets = [
            ("limits.max_runtime_seconds", self.max_runtime),
            ("limits.max_tool_calls", self.max_tool_calls),
            ("limits.max_input_tokens", self.max_input_tokens),
            ("limits.max_output_tokens", self.max_output_tokens),
        ];
        if let Some(v) = self.max_cost_usd {
            o.set("limits.max_cost_usd", v);
        }
        for (key, value) in budgets {
            if let Some(v) = value {
                o.set(key, v);
            }
        }
        if self.yolo {
            o.set("dangerous.action", "allow");
        }
        if !self.allow.is_empty() {
            let classes: serde_json::Map<String, serde_json::Value> = self
                .allow
                .iter()
                .map(|c| (c.to_string(), serde_json::Value::from("allow")))
                .collect();
            o.set("dangerous.classes", serde_json::Value::Object(classes));
        }
        o
    }

    /// The flags a resumed session may not change, by name, when given. `--model` switches
    /// its model (`[PROVIDER:]MODEL`); `--provider` moves it to a provider, and then
    /// `--base-url` may go with it.
    pub fn session_fixed_flags(&self) -> Vec<&'static str> {
        let mut fixed = Vec::new();
        let retargeting = self.provider.is_some();
        if self.base_url.is_some() && !retargeting {
            fixed.push("--base-url");
        }
        if self.system.is_some() {
            fixed.push("--system");
        }
        if self.agent.is_some() {
            fixed.push("--agent");
        }
        fixed
    }
}

/// The flags of the long-running surfaces (`odek serve`, `odek telegram`): which model new
/// sessions use, the plan, the iteration cap and logging.
#[derive(Debug, Args)]
pub struct SurfaceFlags {
    /// Provider for new sessions (see docs/PROVIDERS.md)
    #[arg(long, value_name = "ID")]
    pub provider: Option<String>,
    /// Model name for new sessions (a resumed session keeps its own)
    #[arg(long, value_name = "NAME")]
    pub model: Option<String>,
    /// OpenAI-compatible endpoint for new sessions
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Give runs the structured plan (the default)
    #[arg(long, overrides_with = "no_planning")]
    pub planning: bool,
    /// Runs without the plan tool
    #[arg(long, overrides_with = "planning")]
    pub no_planning: bool,
    /// Iterations per run before the partial summary
    #[arg(long = "max-iter", value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_iter: Option<u32>,
    /// More log output on stderr (-vv for debug)
    #[arg(short, long, action = clap::ArgAction::Count)]
    pub verbose: u8,
}

impl SurfaceFlags {
    /// Starts logging, then resolves the configuration with these flags on top and prints
    /// its warnings: the first steps of every surface command.
    pub fn resolve(&self) -> crate::error::Fallible<(LoadOptions, Resolved)> {
        super::logging::init_tracing(self.verbose);
        let load = LoadOptions::from_process(self.overrides());
        let resolved = crate::config::load(&load)?;
        resolved.warnings.iter().for_each(|w| eprintln!("{w}"));
        Ok((load, resolved))
    }

    /// The configuration layer these flags set.
    pub fn overrides(&self) -> Overrides {
        let mut o = Overrides::default();
        if let Some(v) = &self.provider {
            o.set("provider", v.as_str());
        }
        if let Some(v) = &self.model {
            o.set("model", v.as_str());
        }
        if let Some(v) = &self.base_url {
            o.set("base_url", v.as_str());
        }
        if let Some(v) = self.max_iter {
            o.set("max_iterations", v);
        }
        if let Some(v) = toggle(self.planning, self.no_planning) {
            o.set("planning.enabled", v);
        }
        o
    }
}

/// A positive amount of dollars (`--max-cost-usd`).
fn positive_amount(text: &str) -> Result<f64, NotAnAmount> {
    match text.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v > 0.0 => Ok(v),
        _ => Err(NotAnAmount(text.to_string())),
    }
}

/// `--max-cost-usd` given something that is not a positive amount (clap prints it).
#[derive(Debug, thiserror::Error)]
#[error("expected a positive amount of US dollars, got {0:?}")]
pub struct NotAnAmount(String);

impl crate::error::Classified for NotAnAmount {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}
