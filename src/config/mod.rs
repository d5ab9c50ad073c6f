//! Layered configuration: built-in defaults → global `<home>/config.json` → project
//! `./odek.json` → `ODEK_*` environment → command-line flags.
//!
//! Every key is one row of the settings table ([`settings::SETTINGS`]); every layer is a list
//! of values by row (unset keys fall through). The project layer's values pass their row's
//! rule first (it may only lower limits or opt out), the layers are merged onto the defaults
//! while the source of every key is recorded, and finally out-of-range values are clamped
//! with a warning. The engine and tools only ever see the resolved [`Config`].
//!
//! This file is the folder's face: declarations and re-exports. The resolved values are
//! `values.rs` ([`Config`]) and `sections.rs` (its sections), the MCP server entries `mcp.rs`,
//! loading `load.rs`, where a value came from `source.rs`, the masked view `mask.rs`.

mod env;
mod error;
mod file;
mod layers;
mod load;
mod mask;
mod mcp;
mod model_ref;
mod provider_choice;
pub mod providers;
mod sections;
pub mod settings;
mod source;
pub mod template;
mod values;

pub use crate::plan::PlanPlacement;
pub use env::parse_bool;
pub use error::{ConfigError, MAX_CONFIG_BYTES};
pub use file::substitute_env;
pub use layers::{Overrides, known_keys};
pub use load::{
    AgentLayer, GLOBAL_FILE, LoadOptions, PROJECT_FILE, Resolved, home_dir_from, is_loopback_url,
    load,
};
pub use mask::{mask, masked_json};
pub use mcp::{MCP_DEFAULT_TIMEOUT_SECONDS, McpConfigError, McpServerConfig, PartialMcpServer};
pub use model_ref::{ModelRef, ModelRefError};
pub use provider_choice::ProviderTarget;
pub use providers::{DEFAULT_BASE_URL, DEFAULT_MODEL};
pub use sections::{
    BackgroundConfig, CheckpointsConfig, CompactionConfig, CompactionMode, EmbeddingsConfig,
    LimitsConfig, LlmConfig, MemoryConfig, PlanningConfig, RateLimits, SandboxNetwork,
    SchedulesConfig, ServeConfig, SessionsConfig, SkillsConfig, SubagentsConfig, TELEGRAM_API_BASE,
    TelegramConfig, ToolsConfig, WebConfig, WebSearchConfig,
};
pub use source::Source;
pub use values::{Config, THINKING_LEVELS};

#[cfg(test)]
mod tests;
