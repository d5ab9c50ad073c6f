//! odek: an autonomous agent for any OpenAI-compatible chat model.
//!
//! The crate is organised as `docs/ARCHITECTURE.md` describes: `cli` is a thin edge over
//! `runtime`, which builds the model client, the tool registry (with the shared plan store)
//! and the engine for every entry point. `plan` and `llm` are leaves.

pub mod llm;
pub mod redact;
pub mod tools;
pub mod untrusted;
