//! Every integration test in one binary (one link instead of one per file): each module
//! drives the real `odek` binary — against the scripted OpenAI-protocol server, `odek
//! serve` over real HTTP, real MCP servers, a fake Bot API, headless Chromium.

// A test fails loudly: its helpers may unwrap and expect.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

mod acp;
mod agents;
mod agents_delegate;
mod background;
mod browser_actions;
mod browser_images;
mod browser_lifecycle;
mod browser_safety;
mod browser_wiring;
mod cli_audit;
mod cli_completions;
mod cli_config;
mod cli_events;
mod cli_images_and_modes;
mod cli_markdown;
mod cli_mcp;
mod cli_memory;
mod cli_overflow;
mod cli_plan;
mod cli_plan_cache_hints_and_limits;
mod cli_redaction;
mod cli_reliability;
mod cli_repl;
mod cli_rewind;
mod cli_run;
mod cli_safety;
mod cli_schedule;
mod cli_session_writers;
mod cli_sessions;
mod cli_skills;
mod cli_tls;
mod cli_tools_files_web_and_clarify;
mod commands;
mod commands_surfaces;
mod compaction;
mod error_types;
mod fallback;
mod hooks;
mod install;
mod instructions;
mod layering;
mod mcp_serve;
mod model_switch;
mod providers;
mod sandbox_required;
mod serve_api;
mod serve_rewind;
mod serve_security;
mod smoke;
mod steering;
mod subagent_child;
mod subagent_delegate;
mod telegram_bot;
mod trusted_programs;
mod upgrade;
mod web_ui;
