//! `GET /api/models`: what the web UI's model picker offers — the configured `model`, the
//! `models` list, and what the endpoint's `GET /models` lists when it answers (5 s at most).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, State};

use super::AppState;
use super::error::ApiError;
use crate::protocol::api::{ModelEntry, ModelList};

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
    Ok(Json(list))
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
