//! `GET /api/skills` and `POST /api/skills/{name}/trust`: the skills the server's turns find
//! (home, project, `skills.dirs`) and the user's trust in a project's skill, as `odek skill
//! list` and `odek skill trust` — under the same token, limits and JSON errors.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};

use super::AppState;
use super::error::ApiError;
use crate::protocol::api::{BrokenSkill, SkillList, SkillView};
use crate::skills::Catalog;

async fn catalog(app: &AppState) -> Result<Catalog, ApiError> {
    let places = app.base.skill_places();
    let home = app.base.home().to_path_buf();
    tokio::task::spawn_blocking(move || Catalog::discover(&places, &home))
        .await
        .map_err(|e| ApiError::internal_logged("reading the skills failed", &e))
}

/// `GET /api/skills`.
pub async fn list(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Result<Json<SkillList>, ApiError> {
    app.limits.read(peer.ip())?;
    let catalog = catalog(&app).await?;
    Ok(Json(SkillList {
        skills: catalog.skills.iter().map(|s| s.view()).collect(),
        broken: catalog
            .broken
            .iter()
            .map(|b| BrokenSkill {
                file: b.file.display().to_string(),
                rule: b.rule.clone(),
            })
            .collect(),
    }))
}

/// `POST /api/skills/{name}/trust`: records the folder's hash now (a later change withdraws
/// it); answers the skill as it stands.
pub async fn trust(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
) -> Result<Json<SkillView>, ApiError> {
    app.limits.read(peer.ip())?;
    let catalog = catalog(&app).await?;
    let skill = catalog
        .get(&name)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("no skill named \"{name}\"")))?;
    let home = app.base.home().to_path_buf();
    let trusted = skill.clone();
    tokio::task::spawn_blocking(move || trusted.trust_now(&home))
        .await
        .map_err(|e| ApiError::internal_logged("trusting the skill failed", &e))?
        .map_err(|e| ApiError::conflict(format!("cannot trust {name}: {e}")))?;
    let after = catalog_view(&app, &name).await?;
    Ok(Json(after.unwrap_or_else(|| skill.view())))
}

async fn catalog_view(app: &AppState, name: &str) -> Result<Option<SkillView>, ApiError> {
    Ok(catalog(app).await?.get(name).map(|s| s.view()))
}
