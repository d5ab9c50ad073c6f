//! The chosen provider applied to the resolved configuration: its endpoint, key and model
//! where no layer set them (each with the source `provider <id>`), and the wire format and
//! headers the client asks [`Config::wire`] for.

use std::collections::BTreeMap;

use super::error::ConfigError;
use super::providers::{BUILT_IN, built_in};
use super::source::Source;
use super::values::Config;
use crate::llm::{FORMAT_NAMES, Format};

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

/// Where another provider than the configured one would send a request: what a parent
/// resolves for a sub-agent whose named agent chooses that provider (the key stays out of
/// the child's environment: the parent hands it over).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderTarget {
    /// Its endpoint.
    pub base_url: String,
    /// Its key, when it has one here (the entry's `api_key`, else its built-in variable).
    pub api_key: Option<String>,
    /// Its default model, when it has one.
    pub model: Option<String>,
}

impl Config {
    /// The endpoint, key and default model of the provider `id`, resolved from this
    /// configuration's `providers` entries and `env` as the configured provider's are. An
    /// unknown provider, or one without an endpoint of its own (`local`), is an error.
    pub fn provider_target(
        &self,
        id: &str,
        env: &BTreeMap<String, String>,
    ) -> Result<ProviderTarget, ConfigError> {
        let sources = BTreeMap::new();
        let chosen = choose(self, &sources, id, env)?;
        let base_url = chosen.base_url.ok_or_else(|| {
            invalid(
                &sources,
                "provider",
                format!("the provider {id:?} has no endpoint of its own: name one with a providers.{id} entry's base_url"),
            )
        })?;
        Ok(ProviderTarget {
            base_url,
            api_key: chosen.key.map(|(key, _)| key),
            model: chosen.model,
        })
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
    provider_from_model(config, sources);
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

/// A `model` written `PROVIDER:MODEL` (a built-in provider or a `providers` entry, as
/// `/model` and `fallback_models` write it) chooses that provider where no layer named
/// another; the model keeps only its own name.
fn provider_from_model(config: &mut Config, sources: &mut BTreeMap<String, Source>) {
    let Ok(named) = super::ModelRef::parse(&config.model, config) else {
        return;
    };
    let Some(provider) = named.provider else {
        return;
    };
    let named_another = sources
        .get("provider")
        .is_some_and(|s| *s != Source::Default)
        && config.provider.as_deref() != Some(provider.as_str());
    if named_another {
        return;
    }
    if let Some(source) = sources.get("model").cloned() {
        sources.insert("provider".into(), source);
    }
    config.provider = Some(provider);
    config.model = named.model;
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
