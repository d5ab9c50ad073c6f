//! `GET /api/schedules`: the home's scheduled jobs, their next run and last outcome, under
//! the same token, read limit and JSON errors as the rest of the API.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, State};

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
