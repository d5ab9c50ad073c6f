//! The fallback chain of a turn (`fallback_models`, docs/FALLBACK.md): the turn's model
//! first, then each fallback through [`Runtime::chat_model_for`] (its own provider, key and
//! wire), built afresh for every turn so that each turn starts from its own model again.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::{Runtime, SessionHandle};
use crate::config::ModelRef;
use crate::engine::{EngineEvent, Observer};
use crate::llm::{ChatModel, FallbackChain, FallbackLink};

/// A fallback's client, or why it has none.
type ModelOrWhyNot = Result<Arc<dyn ChatModel>, super::RuntimeError>;

impl Runtime {
    /// The fallbacks this runtime can ask, in order: each `fallback_models` entry that
    /// parses and is not the model `first` itself, with its client or why it has none.
    fn fallbacks(&self, first: &ModelRef) -> Vec<(ModelRef, ModelOrWhyNot)> {
        let first = first.normalized(&self.config);
        self.config
            .fallback_models
            .iter()
            .filter_map(|entry| ModelRef::parse(entry, &self.config).ok())
            .filter(|wanted| wanted.normalized(&self.config) != first)
            .map(|wanted| {
                let model = self.chat_model_for(&wanted);
                (wanted, model)
            })
            .collect()
    }

    /// A warning for each fallback that cannot be asked (no key, no endpoint), shown when
    /// the process starts; none when answers are replayed or recorded (no fallback runs).
    pub(super) fn fallback_warnings(&self) -> Vec<String> {
        if self.scoped_models.is_none() {
            return Vec::new();
        }
        let first = ModelRef::bare(&self.config.model);
        self.fallbacks(&first)
            .into_iter()
            .filter_map(|(wanted, model)| {
                let e = model.err()?;
                Some(format!(
                    "odek: warning: fallback_models: {wanted} is left out: {e}"
                ))
            })
            .collect()
    }

    /// `model`, the model of a turn of `session`, followed by the fallbacks, each move told
    /// to `observer` (the terminal's line, the `model_fallback` event); `model` itself when
    /// there are none, or when answers are replayed or recorded.
    pub(super) fn with_fallbacks(
        &self,
        model: Arc<dyn ChatModel>,
        session: Option<&SessionHandle>,
        observer: &Arc<dyn Observer>,
    ) -> Arc<dyn ChatModel> {
        if self.config.fallback_models.is_empty() || self.scoped_models.is_none() {
            return model;
        }
        let first = self.session_model(session);
        let home = first
            .provider
            .clone()
            .or_else(|| self.config.provider.clone());
        let mut links = vec![FallbackLink {
            label: model.model_name().to_string(),
            model,
            origin: None,
        }];
        for (wanted, built) in self.fallbacks(&first) {
            let Ok(model) = built else { continue };
            links.push(FallbackLink {
                model,
                label: wanted.to_string(),
                origin: wanted.provider.filter(|p| Some(p) != home.as_ref()),
            });
        }
        if links.len() == 1 {
            return links.swap_remove(0).model;
        }
        let observer = observer.clone();
        Arc::new(FallbackChain::new(
            links,
            Box::new(move |n| {
                observer.on_event(&EngineEvent::ModelFallback {
                    from: &n.from,
                    to: &n.to,
                    reason: &n.reason,
                })
            }),
        ))
    }

    /// The keys of the fallbacks' providers other than this runtime's, by provider id: what
    /// a sub-agent is handed (its environment holds no key) so that it can fall back too.
    pub(super) fn fallback_keys(&self) -> BTreeMap<String, String> {
        let env = std::env::vars().collect();
        self.config
            .fallback_models
            .iter()
            .filter_map(|entry| ModelRef::parse(entry, &self.config).ok()?.provider)
            .filter(|id| self.config.provider.as_deref() != Some(id.as_str()))
            .filter_map(|id| {
                let key = self.config.provider_target(&id, &env).ok()?.api_key?;
                Some((id, key))
            })
            .collect()
    }
}
