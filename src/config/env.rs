//! The `ODEK_*` environment layer. Invalid values are errors naming the variable, never
//! silently ignored.

use std::collections::BTreeMap;

use super::{
    ConfigError, PartialConfig, PartialLlm, PartialPlanning, PartialTelegram, PartialTools,
    PlanPlacement, SandboxNetwork,
};
use crate::policy::Action;

/// Parses a boolean the way users write them: 1/0, true/false, yes/no, on/off (any case).
pub fn parse_bool(value: &str) -> Option<bool> {
    match value.trim().to_ascii_lowercase().as_str() {
        "1" | "t" | "true" | "yes" | "y" | "on" => Some(true),
        "0" | "f" | "false" | "no" | "n" | "off" => Some(false),
        _ => None,
    }
}

fn invalid(var: &str, value: &str, expected: &str) -> ConfigError {
    ConfigError::InvalidValue {
        origin: "environment".to_string(),
        key: format!("{var}={value:?}"),
        message: format!("expected {expected}"),
    }
}

struct EnvReader<'a> {
    env: &'a BTreeMap<String, String>,
}

impl EnvReader<'_> {
    fn string(&self, var: &str) -> Option<String> {
        self.env.get(var).filter(|v| !v.is_empty()).cloned()
    }

    fn boolean(&self, var: &str) -> Result<Option<bool>, ConfigError> {
        match self.string(var) {
            None => Ok(None),
            Some(v) => parse_bool(&v)
                .map(Some)
                .ok_or_else(|| invalid(var, &v, "a boolean (true/false, 1/0, yes/no, on/off)")),
        }
    }

    fn number<T: std::str::FromStr>(
        &self,
        var: &str,
        expected: &str,
    ) -> Result<Option<T>, ConfigError> {
        match self.string(var) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse::<T>()
                .map(Some)
                .map_err(|_| invalid(var, &v, expected)),
        }
    }

    /// One of a few words (any case, surrounding spaces ignored); `expected` names them in
    /// the error.
    fn choice<T: Copy>(
        &self,
        var: &str,
        options: &[(&str, T)],
        expected: &str,
    ) -> Result<Option<T>, ConfigError> {
        let Some(v) = self.string(var) else {
            return Ok(None);
        };
        let word = v.trim().to_ascii_lowercase();
        match options.iter().find(|(name, _)| *name == word) {
            Some((_, value)) => Ok(Some(*value)),
            None => Err(invalid(var, &v, expected)),
        }
    }

    fn action(&self, var: &str) -> Result<Option<Action>, ConfigError> {
        let options = [
            ("allow", Action::Allow),
            ("deny", Action::Deny),
            ("prompt", Action::Prompt),
        ];
        self.choice(var, &options, "allow, deny or prompt")
    }

    fn sandbox_network(&self, var: &str) -> Result<Option<SandboxNetwork>, ConfigError> {
        let options = [
            ("allow", SandboxNetwork::Allow),
            ("none", SandboxNetwork::None),
        ];
        self.choice(var, &options, "allow or none")
    }

    fn placement(&self, var: &str) -> Result<Option<PlanPlacement>, ConfigError> {
        let options = [("tail", PlanPlacement::Tail), ("head", PlanPlacement::Head)];
        self.choice(var, &options, "tail or head")
    }

    fn list(&self, var: &str) -> Option<Vec<String>> {
        self.string(var).map(|v| {
            v.split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
    }
}

/// Reads every `ODEK_*` variable the configuration understands.
pub(super) fn read_env_layer(env: &BTreeMap<String, String>) -> Result<PartialConfig, ConfigError> {
    let r = EnvReader { env };
    let planning = PartialPlanning {
        enabled: r.boolean("ODEK_PLANNING")?,
        max_steps: r.number("ODEK_PLANNING_MAX_STEPS", "a positive integer")?,
        max_render_chars: r.number("ODEK_PLANNING_MAX_RENDER_CHARS", "a positive integer")?,
        placement: r.placement("ODEK_PLANNING_PLACEMENT")?,
    };
    let tools = PartialTools {
        enabled: r.list("ODEK_TOOLS_ENABLED"),
        disabled: r.list("ODEK_TOOLS_DISABLED"),
    };
    let llm = PartialLlm {
        timeout_seconds: r.number("ODEK_LLM_TIMEOUT_SECONDS", "a positive integer")?,
        stream_idle_timeout_seconds: r
            .number("ODEK_STREAM_IDLE_TIMEOUT_SECONDS", "a positive integer")?,
        max_attempts: r.number("ODEK_LLM_MAX_ATTEMPTS", "a positive integer")?,
        retry_initial_delay_ms: r.number("ODEK_LLM_RETRY_INITIAL_DELAY_MS", "a number")?,
    };
    Ok(PartialConfig {
        model: r.string("ODEK_MODEL"),
        base_url: r.string("ODEK_BASE_URL"),
        api_key: r.string("ODEK_API_KEY"),
        system: r.string("ODEK_SYSTEM"),
        temperature: r.number("ODEK_TEMPERATURE", "a number")?,
        thinking: r.string("ODEK_THINKING"),
        max_iterations: r.number("ODEK_MAX_ITER", "a positive integer")?,
        max_tool_parallel: r.number("ODEK_MAX_TOOL_PARALLEL", "a positive integer")?,
        stream: r.boolean("ODEK_STREAM")?,
        compaction: r.boolean("ODEK_COMPACTION")?,
        context_window: r.number("ODEK_CONTEXT_WINDOW", "a non-negative integer")?,
        no_color: r.boolean("ODEK_NO_COLOR")?,
        no_agents: r.boolean("ODEK_NO_AGENTS")?,
        planning: (planning != PartialPlanning::default()).then_some(planning),
        dangerous: None,
        dangerous_action: r.action("ODEK_DANGEROUS_ACTION")?,
        sandbox: r.boolean("ODEK_SANDBOX")?,
        sandbox_network: r.sandbox_network("ODEK_SANDBOX_NETWORK")?,
        tools: (tools != PartialTools::default()).then_some(tools),
        sessions: None,
        limits: None,
        llm: (llm != PartialLlm::default()).then_some(llm),
        serve: None,
        telegram: r
            .string("ODEK_TELEGRAM_TOKEN")
            .map(|token| PartialTelegram {
                bot_token: Some(token),
                ..PartialTelegram::default()
            }),
        ..PartialConfig::default()
    })
}

/// The environment variables read by [`read_env_layer`], with the key each one sets (for docs
/// and `odek config`).
pub const ENV_VARS: &[(&str, &str)] = &[
    ("ODEK_MODEL", "model"),
    ("ODEK_BASE_URL", "base_url"),
    ("ODEK_API_KEY", "api_key"),
    ("ODEK_TELEGRAM_TOKEN", "telegram.bot_token"),
    ("ODEK_SYSTEM", "system"),
    ("ODEK_TEMPERATURE", "temperature"),
    ("ODEK_THINKING", "thinking"),
    ("ODEK_MAX_ITER", "max_iterations"),
    ("ODEK_MAX_TOOL_PARALLEL", "max_tool_parallel"),
    ("ODEK_STREAM", "stream"),
    ("ODEK_COMPACTION", "compaction"),
    ("ODEK_CONTEXT_WINDOW", "context_window"),
    ("ODEK_NO_COLOR", "no_color"),
    ("ODEK_NO_AGENTS", "no_agents"),
    ("ODEK_PLANNING", "planning.enabled"),
    ("ODEK_PLANNING_MAX_STEPS", "planning.max_steps"),
    (
        "ODEK_PLANNING_MAX_RENDER_CHARS",
        "planning.max_render_chars",
    ),
    ("ODEK_PLANNING_PLACEMENT", "planning.placement"),
    ("ODEK_TOOLS_ENABLED", "tools.enabled"),
    ("ODEK_TOOLS_DISABLED", "tools.disabled"),
    ("ODEK_LLM_TIMEOUT_SECONDS", "llm.timeout_seconds"),
    (
        "ODEK_STREAM_IDLE_TIMEOUT_SECONDS",
        "llm.stream_idle_timeout_seconds",
    ),
    ("ODEK_LLM_MAX_ATTEMPTS", "llm.max_attempts"),
    ("ODEK_DANGEROUS_ACTION", "dangerous.action"),
    ("ODEK_SANDBOX", "sandbox"),
    ("ODEK_SANDBOX_NETWORK", "sandbox_network"),
    (
        "ODEK_LLM_RETRY_INITIAL_DELAY_MS",
        "llm.retry_initial_delay_ms",
    ),
];
