//! Providers: a name for a wire format, an endpoint, a key and a default model. The built-in
//! ones are rows of [`BUILT_IN`]; `providers.<id>` in the global file adds custom ones or
//! changes a built-in one's fields. Resolving the configuration turns the chosen provider
//! into the `base_url`, `api_key` and `model` every part of odek already reads — each with
//! the source `provider <id>` where the provider decided it — and the client asks
//! [`Config::wire`] for the format and the headers.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Config, ConfigError, Source};
use crate::llm::{FORMAT_NAMES, Format};

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
        base_url: Some(super::DEFAULT_BASE_URL),
        key_env: Some("DEEPSEEK_API_KEY"),
        model: Some(super::DEFAULT_MODEL),
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

/// The chosen provider, as resolution needs it.
struct Chosen<'a> {
    id: &'a str,
    base_url: Option<String>,
    key: Option<(String, Source)>,
    model: Option<String>,
}

impl Config {
    /// The wire format and the extra headers of the configured provider (`chat` and none
    /// when no provider is named).
    pub fn wire(&self) -> (Format, Vec<(String, String)>) {
        let Some(id) = self.provider.as_deref() else {
            return (Format::Chat, Vec::new());
        };
        let entry = self.providers.get(id);
        let format = entry
            .and_then(|e| e.format.as_deref())
            .and_then(Format::parse)
            .or_else(|| built_in(id).map(|b| b.format))
            .unwrap_or_default();
        let headers = entry
            .map(|e| e.headers.clone().into_iter().collect())
            .unwrap_or_default();
        (format, headers)
    }
}

/// Applies the named provider (when one is) to `config`: its endpoint where no layer set
/// `base_url`, its key before the generic `api_key`, its model where no layer set `model`.
/// Without a provider, the key falls back to `DEEPSEEK_API_KEY`, then `OPENAI_API_KEY`, as
/// it always did.
pub(super) fn apply(
    config: &mut Config,
    sources: &mut BTreeMap<String, Source>,
    env: &BTreeMap<String, String>,
) -> Result<(), ConfigError> {
    let Some(id) = config.provider.clone() else {
        apply_legacy_key(config, sources, env);
        return Ok(());
    };
    let chosen = choose(config, sources, &id, env)?;
    let set_by_layer = |sources: &BTreeMap<String, Source>, key: &str| {
        sources.get(key).is_some_and(|s| *s != Source::Default)
    };
    let by_provider = Source::Provider(chosen.id.to_string());
    if !set_by_layer(sources, "base_url") {
        let Some(url) = chosen.base_url else {
            return Err(invalid(
                sources,
                "provider",
                format!(
                    "the provider {id:?} has no endpoint of its own: give one with --base-url (or base_url)"
                ),
            ));
        };
        config.base_url = url;
        sources.insert("base_url".into(), by_provider.clone());
    }
    if let Some((key, source)) = chosen.key {
        config.api_key = Some(key);
        sources.insert("api_key".into(), source);
    }
    if !set_by_layer(sources, "model")
        && let Some(model) = chosen.model
    {
        config.model = model;
        sources.insert("model".into(), by_provider);
    }
    Ok(())
}

fn choose<'a>(
    config: &Config,
    sources: &BTreeMap<String, Source>,
    id: &'a str,
    env: &BTreeMap<String, String>,
) -> Result<Chosen<'a>, ConfigError> {
    let builtin = built_in(id);
    let entry = config.providers.get(id);
    if builtin.is_none() && entry.is_none() {
        let known: Vec<&str> = BUILT_IN.iter().map(|p| p.id).collect();
        return Err(invalid(
            sources,
            "provider",
            format!(
                "unknown provider {id:?} (built in: {}; or add providers.{id} to the global file)",
                known.join(", ")
            ),
        ));
    }
    let entry = entry.cloned().unwrap_or_default();
    if let Some(name) = entry.format.as_deref()
        && Format::parse(name).is_none()
    {
        return Err(invalid(
            sources,
            &format!("providers.{id}"),
            format!(
                "unknown format {name:?} (expected {})",
                FORMAT_NAMES.join(", ")
            ),
        ));
    }
    let entry_source = sources
        .get(&format!("providers.{id}"))
        .or_else(|| sources.get("providers"))
        .cloned()
        .unwrap_or(Source::Default);
    let key = entry
        .api_key
        .filter(|k| !k.trim().is_empty())
        .map(|k| (k, entry_source))
        .or_else(|| {
            let var = builtin?.key_env?;
            let value = env.get(var).filter(|v| !v.is_empty())?;
            Some((value.clone(), Source::Env(var.to_string())))
        });
    Ok(Chosen {
        id,
        base_url: entry
            .base_url
            .or_else(|| builtin.and_then(|b| b.base_url).map(str::to_string)),
        key,
        model: entry
            .model
            .or_else(|| builtin.and_then(|b| b.model).map(str::to_string)),
    })
}

/// When no layer set an API key: `DEEPSEEK_API_KEY`, then `OPENAI_API_KEY`.
fn apply_legacy_key(
    config: &mut Config,
    sources: &mut BTreeMap<String, Source>,
    env: &BTreeMap<String, String>,
) {
    if config.api_key.is_some() {
        return;
    }
    for var in ["DEEPSEEK_API_KEY", "OPENAI_API_KEY"] {
        if let Some(v) = env.get(var).filter(|v| !v.is_empty()) {
            config.api_key = Some(v.clone());
            sources.insert("api_key".into(), Source::Env(var.into()));
            return;
        }
    }
}

fn invalid(sources: &BTreeMap<String, Source>, key: &str, message: String) -> ConfigError {
    ConfigError::InvalidValue {
        origin: sources
            .get(key)
            .or_else(|| sources.get("provider"))
            .cloned()
            .unwrap_or(Source::Default)
            .to_string(),
        key: key.to_string(),
        message,
    }
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
