//! The loop's settings, all resolved from the configuration, and its execution budgets.

use crate::plan::PlanPlacement;

/// Execution budgets; 0 = no limit.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Budgets {
    /// Wall-clock seconds.
    pub max_runtime_seconds: u64,
    /// Tool calls.
    pub max_tool_calls: u64,
    /// Input tokens.
    pub max_input_tokens: u64,
    /// Output tokens.
    pub max_output_tokens: u64,
    /// US dollars, at `price`.
    pub max_cost_usd: f64,
    /// The model's price, when known: the run's cost is reported, and `max_cost_usd` holds.
    pub price: Option<crate::llm::pricing::Price>,
}

/// Loop settings, all resolved from the configuration.
#[derive(Debug, Clone)]
pub struct EngineSettings {
    /// Model calls per run before the partial summary.
    pub max_iterations: u32,
    /// Tool calls of one batch running at once.
    pub max_tool_parallel: usize,
    /// Ask for streamed answers.
    pub stream: bool,
    /// Execution budgets.
    pub budgets: Budgets,
    /// Working directory of the tools.
    pub cwd: std::path::PathBuf,
    /// Context window in tokens; 0 = ask the model client (discovery, profile table).
    pub context_window: u64,
    /// Compaction: on or off, digest or summary, when, what a summary keeps.
    pub compaction: crate::config::CompactionConfig,
    /// Where requests carry the plan message.
    pub plan_placement: PlanPlacement,
    /// The model takes images: messages' images go as image parts (else a note says how
    /// many were left out).
    pub images: bool,
    /// The configuration's own prices (`pricing`): a call is priced as the model that
    /// answered it, a fallback's at its own.
    pub pricing: std::collections::BTreeMap<String, crate::llm::pricing::Price>,
}
