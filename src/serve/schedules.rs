//! `GET /api/schedules`: the home's scheduled jobs, their next run and last outcome; `POST
//! /api/schedules/{name}/run|enable|disable` — under the same token, limits and JSON errors as
//! the rest of the API.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use axum::http::StatusCode;

use super::AppState;
use super::error::ApiError;
use crate::protocol::api::ScheduleList;

/// `GET /api/schedules`.
pub async fn list(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Result<Json<ScheduleList>, ApiError> {
    app.limits.read(peer.ip())?;
    let config = app.base.config().clone();
    let home = app.base.home().to_path_buf();
    let views = tokio::task::spawn_blocking(move || {
        crate::schedule::views(&config, &home, jiff::Timestamp::now())
    })
    .await
    .map_err(|e| ApiError::internal_logged("listing the schedules failed", &e))?
    .map_err(|e| ApiError::internal_logged("the schedule files could not be read", &e))?;
    Ok(Json(ScheduleList { schedules: views }))
}

/// `POST /api/schedules/{name}/run`: 202 — the job's turn runs now, in this server's
/// supervisor, outside its schedule (delivered and recorded as a scheduled run is).
pub async fn run(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<serde_json::Value>), ApiError> {
    app.limits.prompt(peer.ip())?;
    let store = crate::schedule::store::Store::new(app.base.home());
    let known = store
        .jobs()
        .map_err(|e| ApiError::internal_logged("the schedule files could not be read", &e))?
        .iter()
        .any(|j| j.name == name);
    if !known {
        return Err(ApiError::not_found(
            crate::schedule::ScheduleError::NoSuchJob(name).to_string(),
        ));
    }
    let exec = crate::schedule::exec::TurnExecutor::new(
        app.base.config().clone(),
        app.base.home().to_path_buf(),
        app.supervisor.clone(),
        None,
        app.chat.clone(),
    );
    let job = name.clone();
    tokio::spawn(async move {
        if let Err(e) = crate::schedule::run_now(&exec, &store, &job).await {
            tracing::warn!("running {job} now failed: {e}");
        }
    });
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::json!({"name": name, "status": "started"})),
    ))
}

/// `POST /api/schedules/{name}/enable`.
pub async fn enable(
    state: State<Arc<AppState>>,
    peer: ConnectInfo<SocketAddr>,
    name: Path<String>,
) -> Result<Json<ScheduleList>, ApiError> {
    switch(state, peer, name, true).await
}

/// `POST /api/schedules/{name}/disable`.
pub async fn disable(
    state: State<Arc<AppState>>,
    peer: ConnectInfo<SocketAddr>,
    name: Path<String>,
) -> Result<Json<ScheduleList>, ApiError> {
    switch(state, peer, name, false).await
}

/// Switches the job and answers the list as it now stands.
async fn switch(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(name): Path<String>,
    on: bool,
) -> Result<Json<ScheduleList>, ApiError> {
    let home = app.base.home().to_path_buf();
    let changed = tokio::task::spawn_blocking(move || {
        crate::schedule::set_enabled(&crate::schedule::store::Store::new(&home), &name, on)
    })
    .await
    .map_err(|e| ApiError::internal_logged("changing the job failed", &e))?;
    if let Err(e) = changed {
        return Err(ApiError::of_kind(
            &e,
            "the schedule files could not be written",
        ));
    }
    list(State(app), ConnectInfo(peer)).await
}
