//! `GET /api/models`: what the web UI's model picker offers — the configured `model`, the
//! `models` list, and what the endpoint's `GET /models` lists when it answers (5 s at most);
//! `POST /api/sessions/{id}/model`: a session switched to another model (docs/MODELS.md).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};

use super::error::{ApiError, JsonBody};
use super::{AppState, sessions};
use crate::config::ModelRef;
use crate::protocol::api::{ModelEntry, ModelList, ModelSwitched};

/// `GET /api/models`.
pub async fn list(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Result<Json<ModelList>, ApiError> {
    app.limits.read(peer.ip())?;
    let config = app.base.config();
    let listed = app.base.chat_model().listed_models().await;
    let mut list = model_list(&config.model, &config.models, listed);
    list.images = config.images;
    list.provider.clone_from(&config.provider);
    Ok(Json(list))
}

/// `POST /api/sessions/{id}/model` body.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Switch {
    model: String,
}

/// `POST /api/sessions/{id}/model` `{model}`: switches the session to `[PROVIDER:]MODEL`,
/// saved at once; its next turns ask that model. 400 for a model that cannot be asked (an
/// unknown provider, no key), 409 while a turn or another process holds the session.
pub async fn switch(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Switch>,
) -> Result<Json<ModelSwitched>, ApiError> {
    app.limits.prompt(peer.ip())?;
    sessions::standard_id(&id)?;
    if !super::api::model_name_ok(&body.model) {
        return Err(ApiError::bad_request(format!(
            "model {:?} is not a model name",
            body.model
        )));
    }
    sessions::refuse_while_running(&app, &id)?;
    let app = app.clone();
    tokio::task::spawn_blocking(move || app.switch_model(&id, &body.model))
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map(Json)
}

impl AppState {
    /// Opens the saved session `id` on its runtime, switches it to `model`, lets it go.
    fn switch_model(&self, id: &str, model: &str) -> Result<ModelSwitched, ApiError> {
        let saved = self.base.sessions().load(id)?;
        let runtime = self.session_runtime(&saved)?;
        let wanted = ModelRef::parse(model, runtime.config())
            .map_err(|e| ApiError::bad_request(e.to_string()))?;
        let session = runtime.open_session(id, super::runs::HOLDER)?;
        let switched = runtime.switch_model(&session, &wanted);
        let note = switched.map_err(super::error::model_refused)?;
        let now = session.saved();
        let on_other = now.provider.is_some() && now.provider != self.base.config().provider;
        Ok(ModelSwitched {
            session_id: id.to_string(),
            model: match now.provider.filter(|_| on_other) {
                Some(p) => format!("{p}:{}", now.model),
                None => now.model,
            },
            note,
        })
    }
}

/// The default first, then the `models` setting, then the endpoint's; each name once, with
/// every place it comes from.
pub fn model_list(default: &str, configured: &[String], listed: Option<Vec<String>>) -> ModelList {
    let mut models: Vec<ModelEntry> = Vec::new();
    let mut add = |name: &str, from: &'static str| {
        // Only names a prompt may then ask for.
        if !super::api::model_name_ok(name) {
            return;
        }
        match models.iter_mut().find(|m| m.name == name) {
            Some(m) if !m.from.contains(&from) => m.from.push(from),
            Some(_) => {}
            None => models.push(ModelEntry {
                name: name.to_string(),
                from: vec![from],
            }),
        }
    };
    add(default, "model");
    for name in configured {
        add(name, "models");
    }
    let endpoint_listed = listed.is_some();
    for name in listed.unwrap_or_default() {
        add(&name, "endpoint");
    }
    ModelList {
        default: default.to_string(),
        models,
        endpoint_listed,
        images: false,
        provider: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_first_then_the_list_then_the_endpoint_each_once() {
        let list = model_list(
            "deepseek-chat",
            &["gpt-4o".into(), "deepseek-chat".into()],
            Some(vec!["gpt-4o".into(), "local".into(), "llama3 8b".into()]),
        );
        let names: Vec<(&str, Vec<&str>)> = list
            .models
            .iter()
            .map(|m| (m.name.as_str(), m.from.clone()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("deepseek-chat", vec!["model", "models"]),
                ("gpt-4o", vec!["models", "endpoint"]),
                ("local", vec!["endpoint"]),
            ]
        );
        assert!(list.endpoint_listed);
        assert!(!model_list("m", &[], None).endpoint_listed);
    }
}
