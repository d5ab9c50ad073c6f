//! Merging layers onto the defaults while recording where each key came from, and the range
//! clamps applied afterwards.

use std::collections::BTreeMap;

use super::env::ENV_VARS;
use super::{Config, PartialConfig, Source};
use crate::policy::Action;

/// Accumulates layers in precedence order.
pub(super) struct Merger {
    config: Config,
    sources: BTreeMap<String, Source>,
}

impl Merger {
    pub(super) fn new() -> Self {
        Merger {
            config: Config::default(),
            sources: BTreeMap::new(),
        }
    }

    /// The configuration merged so far (the project policy compares against it).
    pub(super) fn config(&self) -> &Config {
        &self.config
    }

    fn record(&mut self, key: &str, source: &Source) {
        let source = match source {
            Source::Env(_) => Source::Env(
                ENV_VARS
                    .iter()
                    .find(|(_, k)| *k == key)
                    .map_or("ODEK_*", |(v, _)| v)
                    .to_string(),
            ),
            other => other.clone(),
        };
        self.sources.insert(key.to_string(), source);
    }

    /// `mcp_servers`: an entry with a transport defines the server; one without changes only
    /// the fields it sets on a server defined below (a project's `disabled`). A project entry
    /// for a server that is not defined is dropped.
    fn apply_mcp_servers(
        &mut self,
        cfg: &mut Config,
        servers: &BTreeMap<String, super::PartialMcpServer>,
        source: &Source,
    ) {
        for (name, p) in servers {
            let key = format!("mcp_servers.{name}");
            let defines = p.command.is_some() || p.url.is_some();
            let exists = cfg.mcp_servers.contains_key(name);
            if defines || (!exists && !matches!(source, Source::Project(_))) {
                // A new entry without a transport stays, so validation names what is missing.
                let server = super::McpServerConfig::from_partial(p);
                cfg.mcp_servers.insert(name.clone(), server);
                self.record(&key, source);
            } else if let Some(server) = cfg.mcp_servers.get_mut(name) {
                if let Some(d) = p.disabled {
                    server.disabled = d;
                }
                if let Some(t) = p.timeout_seconds {
                    server.timeout_seconds = t;
                }
                if let Some(a) = &p.auto_approve {
                    server.auto_approve = a.clone();
                }
                self.record(&key, source);
            }
        }
    }

    /// Applies one layer: every `Some` value overrides what is there.
    pub(super) fn apply(&mut self, layer: &PartialConfig, source: &Source) {
        macro_rules! set {
            ($field:expr, $value:expr, $key:expr) => {
                if let Some(v) = $value {
                    $field = v.clone();
                    self.record($key, source);
                }
            };
        }
        macro_rules! set_opt {
            ($field:expr, $value:expr, $key:expr) => {
                if let Some(v) = $value {
                    $field = Some(v.clone());
                    self.record($key, source);
                }
            };
        }
        // Taken out so the macros can borrow `self` for `record` while writing the config.
        let mut cfg = std::mem::take(&mut self.config);
        set!(cfg.model, &layer.model, "model");
        set!(cfg.base_url, &layer.base_url, "base_url");
        set_opt!(
            cfg.api_key,
            layer.api_key.as_ref().filter(|k| !k.is_empty()),
            "api_key"
        );
        set_opt!(
            cfg.system,
            layer.system.as_ref().filter(|s| !s.is_empty()),
            "system"
        );
        set_opt!(cfg.temperature, &layer.temperature, "temperature");
        set_opt!(
            cfg.thinking,
            layer.thinking.as_ref().filter(|t| !t.is_empty()),
            "thinking"
        );
        set!(cfg.max_iterations, &layer.max_iterations, "max_iterations");
        set!(
            cfg.max_tool_parallel,
            &layer.max_tool_parallel,
            "max_tool_parallel"
        );
        set!(cfg.stream, &layer.stream, "stream");
        set!(cfg.compaction, &layer.compaction, "compaction");
        set!(cfg.context_window, &layer.context_window, "context_window");
        set!(cfg.no_color, &layer.no_color, "no_color");
        set!(cfg.no_agents, &layer.no_agents, "no_agents");
        if let Some(p) = &layer.planning {
            set!(cfg.planning.enabled, &p.enabled, "planning.enabled");
            set!(cfg.planning.max_steps, &p.max_steps, "planning.max_steps");
            set!(
                cfg.planning.max_render_chars,
                &p.max_render_chars,
                "planning.max_render_chars"
            );
            set!(cfg.planning.placement, &p.placement, "planning.placement");
        }
        set!(cfg.dangerous, &layer.dangerous, "dangerous");
        set!(cfg.sandbox, &layer.sandbox, "sandbox");
        set!(
            cfg.sandbox_allow_write,
            &layer.sandbox_allow_write,
            "sandbox_allow_write"
        );
        set!(
            cfg.sandbox_network,
            &layer.sandbox_network,
            "sandbox_network"
        );
        if let Some(action) = layer.dangerous_action {
            cfg.dangerous.action = Some(action);
            self.record("dangerous.action", source);
            if action == Action::Allow {
                cfg.dangerous.classes.retain(|_, a| *a == Action::Allow);
                let (by, source) = match source {
                    Source::Env(_) => (
                        "ODEK_DANGEROUS_ACTION=allow",
                        Source::Env("ODEK_DANGEROUS_ACTION".into()),
                    ),
                    other => ("--yolo", other.clone()),
                };
                cfg.dangerous_override = Some(by.to_string());
                self.sources.insert("dangerous_override".into(), source);
            }
        }
        for class in &layer.dangerous_allow {
            cfg.dangerous.classes.insert(*class, Action::Allow);
            self.record(&format!("dangerous.classes.{class}"), source);
        }
        if let Some(t) = &layer.tools {
            set!(cfg.tools.enabled, &t.enabled, "tools.enabled");
            if let Some(disabled) = &t.disabled {
                for name in disabled {
                    if !cfg.tools.disabled.contains(name) {
                        cfg.tools.disabled.push(name.clone());
                    }
                }
                self.record("tools.disabled", source);
            }
        }
        if let Some(s) = &layer.sessions {
            set!(cfg.sessions.autosave, &s.autosave, "sessions.autosave");
        }
        if let Some(r) = layer.serve.as_ref().and_then(|s| s.rate_limits.as_ref()) {
            let limits = &mut cfg.serve.rate_limits;
            set!(
                limits.reads_per_minute,
                &r.reads_per_minute,
                "serve.rate_limits.reads_per_minute"
            );
            set!(
                limits.prompts_per_minute,
                &r.prompts_per_minute,
                "serve.rate_limits.prompts_per_minute"
            );
        }
        if let Some(t) = &layer.telegram {
            let tg = &mut cfg.telegram;
            set!(tg.api_base, &t.api_base, "telegram.api_base");
            if let Some(token) = &t.bot_token
                && !token.is_empty()
            {
                tg.bot_token = Some(token.clone());
                self.record("telegram.bot_token", source);
            }
            set!(tg.allowed_users, &t.allowed_users, "telegram.allowed_users");
            set!(tg.allowed_chats, &t.allowed_chats, "telegram.allowed_chats");
            set!(tg.poll_timeout, &t.poll_timeout, "telegram.poll_timeout");
            set!(
                tg.session_ttl_hours,
                &t.session_ttl_hours,
                "telegram.session_ttl_hours"
            );
        }
        if let Some(servers) = &layer.mcp_servers {
            self.apply_mcp_servers(&mut cfg, servers, source);
        }
        if let Some(l) = &layer.limits {
            set!(
                cfg.limits.max_runtime_seconds,
                &l.max_runtime_seconds,
                "limits.max_runtime_seconds"
            );
            set!(
                cfg.limits.max_tool_calls,
                &l.max_tool_calls,
                "limits.max_tool_calls"
            );
            set!(
                cfg.limits.max_input_tokens,
                &l.max_input_tokens,
                "limits.max_input_tokens"
            );
            set!(
                cfg.limits.max_output_tokens,
                &l.max_output_tokens,
                "limits.max_output_tokens"
            );
        }
        if let Some(l) = &layer.llm {
            set!(
                cfg.llm.timeout_seconds,
                &l.timeout_seconds,
                "llm.timeout_seconds"
            );
            set!(
                cfg.llm.stream_idle_timeout_seconds,
                &l.stream_idle_timeout_seconds,
                "llm.stream_idle_timeout_seconds"
            );
            set!(cfg.llm.max_attempts, &l.max_attempts, "llm.max_attempts");
            set!(
                cfg.llm.retry_initial_delay_ms,
                &l.retry_initial_delay_ms,
                "llm.retry_initial_delay_ms"
            );
        }
        self.config = cfg;
    }

    /// When no layer set an API key: `DEEPSEEK_API_KEY`, then `OPENAI_API_KEY`.
    pub(super) fn apply_api_key_fallback(&mut self, env: &BTreeMap<String, String>) {
        if self.config.api_key.is_some() {
            return;
        }
        for var in ["DEEPSEEK_API_KEY", "OPENAI_API_KEY"] {
            if let Some(v) = env.get(var).filter(|v| !v.is_empty()) {
                self.config.api_key = Some(v.clone());
                self.sources
                    .insert("api_key".into(), Source::Env(var.into()));
                return;
            }
        }
    }

    /// The informal `NO_COLOR` convention (any non-empty value) turns colour off.
    pub(super) fn apply_no_color_env(&mut self, env: &BTreeMap<String, String>) {
        if env.get("NO_COLOR").is_some_and(|v| !v.is_empty()) && !self.config.no_color {
            self.config.no_color = true;
            self.sources
                .insert("no_color".into(), Source::Env("NO_COLOR".into()));
        }
    }

    pub(super) fn finish(self) -> (Config, BTreeMap<String, Source>) {
        (self.config, self.sources)
    }
}

/// Clamps out-of-range values into range, with one warning line each.
pub(super) fn clamp(
    config: &mut Config,
    sources: &BTreeMap<String, Source>,
    warnings: &mut Vec<String>,
) {
    let mut clamp = |key: &str, value: u64, min: u64, max: u64| -> u64 {
        if (min..=max).contains(&value) {
            return value;
        }
        let clamped = value.clamp(min, max);
        let from = sources.get(key).cloned().unwrap_or(Source::Default);
        warnings.push(format!(
            "odek: warning: {key}={value} (from {from}) is outside {min}..{max}; using {clamped}"
        ));
        clamped
    };
    let mut narrow = |key: &str, value: &mut u32, min: u32, max: u32| {
        let clamped = clamp(key, u64::from(*value), u64::from(min), u64::from(max));
        *value = u32::try_from(clamped).unwrap_or(max);
    };
    narrow("planning.max_steps", &mut config.planning.max_steps, 1, 50);
    narrow(
        "planning.max_render_chars",
        &mut config.planning.max_render_chars,
        200,
        8000,
    );
    narrow("max_iterations", &mut config.max_iterations, 1, 10_000);
    let rates = &mut config.serve.rate_limits;
    narrow(
        "serve.rate_limits.reads_per_minute",
        &mut rates.reads_per_minute,
        1,
        1_000_000,
    );
    narrow(
        "serve.rate_limits.prompts_per_minute",
        &mut rates.prompts_per_minute,
        1,
        1_000_000,
    );
    narrow("max_tool_parallel", &mut config.max_tool_parallel, 1, 64);
    narrow("llm.max_attempts", &mut config.llm.max_attempts, 1, 10);
    config.telegram.poll_timeout =
        clamp("telegram.poll_timeout", config.telegram.poll_timeout, 1, 50);
    for (name, server) in &mut config.mcp_servers {
        server.timeout_seconds = clamp(
            &format!("mcp_servers.{name}.timeout_seconds"),
            server.timeout_seconds,
            1,
            600,
        );
    }
    config.llm.timeout_seconds = clamp("llm.timeout_seconds", config.llm.timeout_seconds, 1, 3600);
    config.llm.stream_idle_timeout_seconds = clamp(
        "llm.stream_idle_timeout_seconds",
        config.llm.stream_idle_timeout_seconds,
        1,
        3600,
    );
    config.llm.retry_initial_delay_ms = clamp(
        "llm.retry_initial_delay_ms",
        config.llm.retry_initial_delay_ms,
        0,
        60_000,
    );
    if let Some(t) = config.temperature
        && !(0.0..=2.0).contains(&t)
    {
        let clamped = if t.is_nan() { 0.0 } else { t.clamp(0.0, 2.0) };
        let from = sources
            .get("temperature")
            .cloned()
            .unwrap_or(Source::Default);
        warnings.push(format!(
            "odek: warning: temperature={t} (from {from}) is outside 0..2; using {clamped}"
        ));
        config.temperature = Some(clamped);
    }
}
