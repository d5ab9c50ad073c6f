//! A model named by the user: `[PROVIDER:]MODEL` (`/model`, `continue --model`, the web UI's
//! picker, `fallback_models`). Model names may hold `:` themselves (Ollama's `llama3:8b`), so
//! the part before the first `:` is a provider only when it names a built-in provider or a
//! `providers` entry of the configuration.

use std::fmt;

use super::providers::built_in;
use super::values::Config;

/// A model, on a provider or on the configured one (`provider: None`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ModelRef {
    /// The provider's id; `None` = the configured provider (its endpoint, key and wire).
    pub provider: Option<String>,
    /// The model's name as the provider knows it.
    pub model: String,
}

/// Why a `[PROVIDER:]MODEL` reference was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelRefError {
    /// Nothing, or blanks, where a model's name belongs.
    #[error("no model named in {0:?}: give MODEL or PROVIDER:MODEL")]
    Empty(String),
}

impl crate::error::Classified for ModelRefError {
    fn kind(&self) -> crate::error::ErrorKind {
        crate::error::ErrorKind::Usage
    }
}

impl ModelRef {
    /// A model of the configured provider.
    pub fn bare(model: &str) -> ModelRef {
        ModelRef {
            provider: None,
            model: model.to_string(),
        }
    }

    /// Reads `[PROVIDER:]MODEL` against `config`: the prefix is a provider only when it is a
    /// built-in id or a `providers` entry (`ollama:llama3:8b` is Ollama's `llama3:8b`,
    /// `llama3:8b` the configured provider's). Blanks around the text are ignored.
    pub fn parse(text: &str, config: &Config) -> Result<ModelRef, ModelRefError> {
        let text = text.trim();
        let empty = || ModelRefError::Empty(text.to_string());
        if let Some((prefix, model)) = text.split_once(':')
            && (built_in(prefix).is_some() || config.providers.contains_key(prefix))
        {
            let model = model.trim();
            if model.is_empty() {
                return Err(empty());
            }
            return Ok(ModelRef {
                provider: Some(prefix.to_string()),
                model: model.to_string(),
            });
        }
        if text.is_empty() {
            return Err(empty());
        }
        Ok(ModelRef::bare(text))
    }

    /// The same model with the provider left out when it is `config`'s own (one name for
    /// one model, whichever way it was written).
    pub fn normalized(&self, config: &Config) -> ModelRef {
        let provider = self
            .provider
            .clone()
            .filter(|p| config.provider.as_deref() != Some(p.as_str()));
        ModelRef {
            provider,
            model: self.model.clone(),
        }
    }

    /// True when it is `config`'s own model on `config`'s own provider.
    pub fn is_configured(&self, config: &Config) -> bool {
        self.normalized(config).provider.is_none() && self.model == config.model
    }
}

impl fmt::Display for ModelRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.provider {
            Some(p) => write!(f, "{p}:{}", self.model),
            None => f.write_str(&self.model),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        let mut c = Config::default();
        c.providers.insert("gw".into(), Default::default());
        c
    }

    #[test]
    fn a_prefix_is_a_provider_only_when_one_is_known() {
        let c = config();
        let parse = |t: &str| ModelRef::parse(t, &c).map(|r| (r.provider, r.model));
        assert_eq!(parse("gpt-4o"), Ok((None, "gpt-4o".into())));
        assert_eq!(parse("llama3:8b"), Ok((None, "llama3:8b".into())));
        assert_eq!(
            parse("ollama:llama3:8b"),
            Ok((Some("ollama".into()), "llama3:8b".into()))
        );
        assert_eq!(parse(" gw:m "), Ok((Some("gw".into()), "m".into())));
        assert_eq!(
            parse("openrouter:openai/gpt-4o"),
            Ok((Some("openrouter".into()), "openai/gpt-4o".into()))
        );
        assert!(parse("").is_err());
        assert!(parse("anthropic:").is_err());
    }

    #[test]
    fn display_and_normalized_name_one_model_once() {
        let mut c = config();
        c.provider = Some("gw".into());
        let r = ModelRef::parse("gw:m", &c).unwrap();
        assert_eq!(r.to_string(), "gw:m");
        assert_eq!(r.normalized(&c).to_string(), "m");
        c.model = "m".into();
        assert!(r.is_configured(&c));
        assert!(!ModelRef::parse("ollama:m", &c).unwrap().is_configured(&c));
    }
}
