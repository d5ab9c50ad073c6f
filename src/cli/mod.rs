//! The command line: parse, run, map the outcome to an exit code. Each subcommand is one file;
//! all of them run their turns through `runtime::Runtime`.
//!
//! This file is the folder's face: declarations and re-exports. The clap definition and
//! `main` are `app.rs`, the exit codes `exit.rs`.

mod acp_cmd;
mod agent_flag;
mod agents_cmd;
mod app;
mod audit_cmd;
mod commands_cmd;
mod config_cmd;
mod continue_cmd;
mod docs_cmd;
mod error;
mod exit;
mod flags;
mod hooks_cmd;
mod init;
mod logging;
mod markdown;
mod mcp_cmd;
mod memory_cmd;
mod panic;
mod repl;
mod repl_input;
mod rewind_cmd;
mod run;
mod schedule_cmd;
mod serve_cmd;
mod session_cmd;
mod skill_cmd;
mod style;
mod subagent_child;
mod subagent_cmd;
mod telegram_cmd;
pub mod terminal;
mod turn;
mod upgrade_cmd;
mod usage_cmd;

pub use app::{Cli, VERSION_LINE, main};
pub use exit::Exit;
pub use flags::TurnFlags;
