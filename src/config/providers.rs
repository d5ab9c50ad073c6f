//! Providers: a name for a wire format, an endpoint, a key and a default model. The built-in
//! ones are rows of [`BUILT_IN`]; `providers.<id>` in the global file adds custom ones or
//! changes a built-in one's fields. Resolving the configuration turns the chosen provider
//! into the `base_url`, `api_key` and `model` every part of odek already reads — each with
//! the source `provider <id>` where the provider decided it — and the client asks
//! `Config::wire` (`provider_choice.rs`) for the format and the headers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::llm::Format;

/// Default model name.
pub const DEFAULT_MODEL: &str = "deepseek-v4-flash";
/// Default endpoint.
pub const DEFAULT_BASE_URL: &str = "https://api.deepseek.com/v1";

/// A built-in provider.
#[derive(Debug, Clone, Copy)]
pub struct BuiltIn {
    /// The id `--provider` takes.
    pub id: &'static str,
    /// Its wire format.
    pub format: Format,
    /// Its endpoint; `None` = the one `--base-url` names (`local`).
    pub base_url: Option<&'static str>,
    /// The environment variable its key is read from (`None` = no key needed).
    pub key_env: Option<&'static str>,
    /// The model used when no layer names one.
    pub model: Option<&'static str>,
    /// For `docs/PROVIDERS.md` and `odek config`.
    pub about: &'static str,
}

/// The built-in providers (a test keeps `docs/PROVIDERS.md`'s table equal to it).
pub const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        id: "deepseek",
        format: Format::Chat,
        base_url: Some(DEFAULT_BASE_URL),
        key_env: Some("DEEPSEEK_API_KEY"),
        model: Some(DEFAULT_MODEL),
        about: "DeepSeek (the default when no provider is named)",
    },
    BuiltIn {
        id: "anthropic",
        format: Format::Anthropic,
        base_url: Some("https://api.anthropic.com/v1"),
        key_env: Some("ANTHROPIC_API_KEY"),
        model: Some("claude-sonnet-4-5"),
        about: "Claude over Anthropic's Messages API",
    },
    BuiltIn {
        id: "openai",
        format: Format::Responses,
        base_url: Some("https://api.openai.com/v1"),
        key_env: Some("OPENAI_API_KEY"),
        model: Some("gpt-5-mini"),
        about: "OpenAI over the Responses API (reasoning kept across tool calls)",
    },
    BuiltIn {
        id: "openrouter",
        format: Format::Chat,
        base_url: Some("https://openrouter.ai/api/v1"),
        key_env: Some("OPENROUTER_API_KEY"),
        model: Some("openrouter/auto"),
        about: "OpenRouter's gateway",
    },
    BuiltIn {
        id: "gemini",
        format: Format::Chat,
        base_url: Some("https://generativelanguage.googleapis.com/v1beta/openai"),
        key_env: Some("GEMINI_API_KEY"),
        model: Some("gemini-2.5-flash"),
        about: "Google's OpenAI-compatible endpoint",
    },
    BuiltIn {
        id: "ollama",
        format: Format::Chat,
        base_url: Some("http://127.0.0.1:11434/v1"),
        key_env: None,
        model: None,
        about: "a local Ollama (name the model with --model)",
    },
    BuiltIn {
        id: "local",
        format: Format::Chat,
        base_url: None,
        key_env: None,
        model: None,
        about: "any Chat Completions server at --base-url",
    },
];

/// One entry of `providers` in the global file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// `chat`, `anthropic`, `responses`; a built-in id's own when omitted, else `chat`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// The endpoint (`https://…/v1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_url: Option<String>,
    /// The key, or `${VAR}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_key: Option<String>,
    /// The model used when no layer names one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// More headers sent with every request.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
}

/// The built-in provider `id`.
pub fn built_in(id: &str) -> Option<&'static BuiltIn> {
    BUILT_IN.iter().find(|p| p.id == id)
}

/// The table of built-in providers as `docs/PROVIDERS.md` shows it.
pub fn doc_table() -> String {
    let mut out = String::from(
        "| id | format | endpoint | key variable | default model | |\n|---|---|---|---|---|---|\n",
    );
    for p in BUILT_IN {
        let code = |v: Option<&str>, none: &str| v.map_or(none.to_string(), |v| format!("`{v}`"));
        out.push_str(&format!(
            "| `{}` | `{}` | {} | {} | {} | {} |\n",
            p.id,
            p.format.as_str(),
            code(p.base_url, "`--base-url`"),
            code(p.key_env, "none"),
            code(p.model, "`--model`"),
            p.about
        ));
    }
    out
}
