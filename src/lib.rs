//! odek: an autonomous agent for any OpenAI-compatible chat model.
//!
//! The crate is organised as `docs/ARCHITECTURE.md` describes: `cli` is a thin edge over
//! `runtime`, one per process, which builds each turn's engine, plan store, tools, gate and
//! event context, and holds sessions for writing, for every surface. `plan`, `llm`,
//! `danger_policy` and `random` are leaves.

pub mod acp;
pub mod agents;
pub mod byte_copy;
pub mod checkpoint;
pub mod cli;
pub mod code_pages;
pub mod commands;
pub mod config;
pub mod danger_policy;
pub mod engine;
pub mod error;
pub mod events;
#[cfg(any(fuzzing, test))]
pub mod fuzz;
pub mod home;
pub mod hooks;
pub mod instructions;
pub mod llm;
pub mod mcp_client;
pub mod mcp_server;
pub mod memory;
pub mod plan;
pub mod process_group;
pub mod prompt;
pub mod protocol;
pub mod random;
pub mod redact;
pub mod release;
pub mod runtime;
pub mod sandbox;
pub mod schedule;
pub mod serve;
pub mod session;
pub mod skills;
pub mod subagent;
pub mod telegram;
pub mod text;
pub mod tools;
pub mod transcript;
pub mod untrusted;
pub mod usage;
pub mod util;
