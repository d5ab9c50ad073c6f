//! The models a runtime asks besides its configured one: a custom command's model, a
//! session's model after `/model` (docs/MODELS.md), another provider's model (its own
//! endpoint, key, wire and headers). Each is built once per `[PROVIDER:]MODEL` and kept.

use std::sync::Arc;

use super::{Retarget, Runtime, RuntimeError, SessionHandle, TurnScope};
use crate::config::{Config, ModelRef};
use crate::llm::ChatModel;

impl Runtime {
    /// The client of `wanted`: the configured model itself, another model of the same
    /// provider, or a model of another provider (through `Config::provider_target`: its
    /// endpoint, its key, its wire format and headers). Built once and kept. Refused with a
    /// typed error for an unknown provider, one without an endpoint, a missing key, or any
    /// other model than the configured one when answers are replayed or recorded.
    pub fn chat_model_for(&self, wanted: &ModelRef) -> Result<Arc<dyn ChatModel>, RuntimeError> {
        let wanted = wanted.normalized(&self.config);
        if wanted.is_configured(&self.config) {
            return Ok(self.model.clone());
        }
        let Some(models) = &self.scoped_models else {
            return Err(RuntimeError::ModelFixed {
                model: wanted.to_string(),
            });
        };
        let key = wanted.to_string();
        let mut built = models
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(model) = built.get(&key) {
            return Ok(model.clone());
        }
        let config = self.config_of(&wanted)?;
        let model: Arc<dyn ChatModel> = Arc::new(super::http_model(&config, &self.global_config)?);
        built.insert(key, model.clone());
        Ok(model)
    }

    /// This configuration moved to `wanted` (normalized): its provider's endpoint and key
    /// when it names another provider, its model.
    pub(super) fn config_of(&self, wanted: &ModelRef) -> Result<Config, RuntimeError> {
        let mut config = self.config.clone();
        if let Some(id) = &wanted.provider {
            let env = std::env::vars().collect();
            let target =
                config
                    .provider_target(id, &env)
                    .map_err(|source| RuntimeError::Provider {
                        model: wanted.to_string(),
                        source,
                    })?;
            config.provider = Some(id.clone());
            config.base_url = target.base_url;
            config.api_key = target.api_key;
        }
        config.model = wanted.model.clone();
        Ok(config)
    }

    /// The model a saved session goes on with when this runtime opens it: the one it was
    /// saved with, when that is not this runtime's own and can be asked here (its provider
    /// is this one, a built-in one or a `providers` entry with an endpoint); else `None`,
    /// this runtime's model.
    pub(super) fn saved_model(&self, saved: &crate::session::Session) -> Option<ModelRef> {
        let wanted = ModelRef {
            provider: saved.provider.clone(),
            model: saved.model.clone(),
        }
        .normalized(&self.config);
        if wanted.model.is_empty() || wanted.is_configured(&self.config) {
            return None;
        }
        self.config_of(&wanted).ok().map(|_| wanted)
    }

    /// The model the next turn of `session` asks (the configured one when it never
    /// switched, or without a session).
    pub fn session_model(&self, session: Option<&SessionHandle>) -> ModelRef {
        session
            .and_then(SessionHandle::current_model)
            .unwrap_or_else(|| ModelRef::bare(&self.config.model))
    }

    /// The models a surface offers for a switch without asking the endpoint: the
    /// session's model first, then the `models` setting; each once.
    pub fn offered_models(&self, session: Option<&SessionHandle>) -> Vec<String> {
        let mut names = vec![self.session_model(session).to_string()];
        for name in &self.config.models {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
        names
    }

    /// [`Runtime::offered_models`], then what the session's endpoint lists (`GET /models`,
    /// when it answers; named `PROVIDER:MODEL` when the session is on another provider).
    pub async fn model_choices(&self, session: Option<&SessionHandle>) -> Vec<String> {
        let current = self.session_model(session);
        let listed = match self.chat_model_for(&current) {
            Ok(model) => model.listed_models().await.unwrap_or_default(),
            Err(_) => Vec::new(),
        };
        let prefix = current
            .provider
            .as_ref()
            .map_or_else(String::new, |p| format!("{p}:"));
        let mut names = self.offered_models(session);
        for name in listed.into_iter().map(|name| format!("{prefix}{name}")) {
            if !names.contains(&name) {
                names.push(name);
            }
        }
        names
    }

    /// Moves `session` to `wanted` between turns (`/model`, `session/set_model`, the web
    /// UI's picker): its next turns ask that model, and the session, saved at once, names
    /// it. A move to another provider drops what the old one kept for itself in the
    /// messages (as `continue --provider` does). Returns the note that tells the user
    /// (`None` when nothing changed); the model is built first, so a refusal changes nothing.
    pub fn switch_model(
        &self,
        session: &SessionHandle,
        wanted: &ModelRef,
    ) -> Result<Option<String>, RuntimeError> {
        let wanted = wanted.normalized(&self.config);
        let config = self.config_of(&wanted)?;
        self.chat_model_for(&wanted)?;
        if !session.start_turn() {
            return Err(RuntimeError::TurnInProgress(session.id().to_string()));
        }
        let moved = move_session(session, &config);
        if moved.is_ok() {
            session.set_model((!wanted.is_configured(&self.config)).then_some(wanted));
        }
        session.end_turn();
        Ok(moved?.note(config.provider.as_deref(), &config.model))
    }

    /// The model a turn of `scope` on `session` asks: a custom command's model on the same
    /// provider, else the session's model, else the configured one.
    pub(super) fn model_for(
        &self,
        scope: &TurnScope,
        session: Option<&SessionHandle>,
    ) -> Result<Arc<dyn ChatModel>, RuntimeError> {
        if let Some(name) = scope.model.as_deref() {
            if self.scoped_models.is_none() && name != self.config.model {
                return Err(RuntimeError::Command(
                    crate::commands::CommandError::ModelNeedsEndpoint {
                        name: String::new(),
                        model: name.to_string(),
                    },
                ));
            }
            return self.chat_model_for(&ModelRef::bare(name));
        }
        match session.and_then(SessionHandle::current_model) {
            Some(wanted) => self.chat_model_for(&wanted),
            None => Ok(self.model.clone()),
        }
    }
}

/// Retargets the session's writer to `config`'s provider, model and endpoint, drops the old
/// provider's state from the live messages too, and saves the session when it is on disk.
fn move_session(session: &SessionHandle, config: &Config) -> Result<Retarget, RuntimeError> {
    let mut writer = session.writer();
    let before = writer.session();
    let mut retarget = Retarget {
        provider: before.provider.clone(),
        model: before.model.clone(),
        dropped: 0,
    };
    let other_provider = before.provider != config.provider;
    retarget.dropped = writer.retarget(config.provider.as_deref(), &config.model, &config.base_url);
    writer.save_now()?;
    drop(writer);
    if other_provider {
        for message in &mut session.live().messages {
            message.provider_state = None;
        }
    }
    Ok(retarget)
}

impl Retarget {
    /// What the user is told when a session moves to `provider`'s `model`: from what to
    /// what, and that the old provider's own state is gone. `None` when nothing changed.
    pub fn note(&self, provider: Option<&str>, model: &str) -> Option<String> {
        let name = |provider: Option<&str>, model: &str| match provider {
            Some(p) => format!("{p} ({model})"),
            None => format!("{model} (no provider)"),
        };
        let was = name(self.provider.as_deref(), &self.model);
        let now = name(provider, model);
        if was == now {
            return None;
        }
        let mut note = format!("this session moves from {was} to {now}");
        if self.dropped > 0 {
            note.push_str(&format!(
                "; what the previous provider kept for itself in {} message(s) (thinking signatures, encrypted reasoning) is dropped",
                self.dropped
            ));
        }
        Some(note)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::llm::Message;
    use crate::redact::Redactor;

    fn runtime(home: &std::path::Path, source: super::super::ModelSource) -> Runtime {
        let mut config = Config {
            base_url: "http://127.0.0.1:9/v1".into(),
            ..Config::default()
        };
        let gw = crate::config::providers::ProviderConfig {
            base_url: Some("http://127.0.0.1:8/v1".into()),
            format: Some("anthropic".into()),
            ..Default::default()
        };
        config.providers.insert("gw".into(), gw);
        let opts = super::super::RuntimeOptions {
            home: home.to_path_buf(),
            cwd: home.to_path_buf(),
            model_source: source,
            record: None,
            events: None,
            redactor: Arc::new(Redactor::new()),
        };
        Runtime::build(config, opts).expect("runtime")
    }

    #[test]
    fn each_model_is_built_once_and_an_unknown_provider_is_a_typed_error() {
        let home = tempfile::tempdir().expect("tempdir");
        let rt = runtime(home.path(), super::super::ModelSource::Http);
        let same = ModelRef::bare(&rt.config.model);
        assert!(Arc::ptr_eq(
            &rt.chat_model_for(&same).expect("own"),
            &rt.model
        ));
        let gw = ModelRef::parse("gw:small", &rt.config).expect("ref");
        let first = rt.chat_model_for(&gw).expect("gw");
        assert!(Arc::ptr_eq(&first, &rt.chat_model_for(&gw).expect("again")));
        assert_eq!(first.model_name(), "small");
        let unknown = ModelRef {
            provider: Some("nowhere".into()),
            model: "m".into(),
        };
        assert!(matches!(
            rt.chat_model_for(&unknown),
            Err(RuntimeError::Provider { .. })
        ));
    }

    #[test]
    fn a_switch_names_the_new_model_and_drops_only_another_providers_state() {
        let home = tempfile::tempdir().expect("tempdir");
        let rt = runtime(home.path(), super::super::ModelSource::Http);
        let mut answer = Message::assistant("hi");
        answer.provider_state = Some(Box::new(crate::llm::ProviderState {
            wire: "anthropic".into(),
            items: Vec::new(),
            origin: None,
        }));
        let session = rt
            .new_session("t", vec![Message::system("s"), answer], "cli", "odek test")
            .expect("session");
        let note = rt
            .switch_model(&session, &ModelRef::bare("other"))
            .expect("switch");
        assert_eq!(
            note.as_deref(),
            Some("this session moves from deepseek-v4-flash (no provider) to other (no provider)")
        );
        assert!(session.live().messages[1].provider_state.is_some());
        let note = rt
            .switch_model(
                &session,
                &ModelRef::parse("gw:big", &rt.config).expect("ref"),
            )
            .expect("switch");
        assert!(note.is_some_and(|n| {
            n.ends_with("in 1 message(s) (thinking signatures, encrypted reasoning) is dropped")
        }));
        assert!(session.live().messages[1].provider_state.is_none());
        assert_eq!(rt.session_model(Some(&session)).to_string(), "gw:big");
        assert_eq!(session.saved().provider.as_deref(), Some("gw"));
    }

    #[test]
    fn a_replayed_run_asks_only_its_own_model() {
        let home = tempfile::tempdir().expect("tempdir");
        let replay = home.path().join("r.jsonl");
        let line = r#"{"choices":[{"message":{"role":"assistant","content":"ok"}}]}"#;
        std::fs::write(&replay, line).expect("replay file");
        let rt = runtime(home.path(), super::super::ModelSource::Replay(replay));
        assert!(matches!(
            rt.chat_model_for(&ModelRef::bare("other")),
            Err(RuntimeError::ModelFixed { .. })
        ));
    }
}
