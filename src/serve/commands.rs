//! Custom slash commands over HTTP (see docs/COMMANDS.md): `GET /api/commands` lists what
//! `odek commands list --json` lists for the server's directory, and a `POST /api/prompt`
//! whose content starts with `/NAME` runs that command (`runs.rs`), so every client of the
//! API gets them, the web UI among them.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, State};
use axum::http::StatusCode;

use super::AppState;
use super::error::ApiError;
use crate::commands::CommandError;
use crate::error::{Classified, ErrorKind};
use crate::protocol::api::CommandList;

/// `GET /api/commands`: the commands of the server's directory, read now.
pub async fn list(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
) -> Result<Json<CommandList>, ApiError> {
    app.limits.read(peer.ip())?;
    let runtime = app.base.clone();
    let list = tokio::task::spawn_blocking(move || runtime.commands().list())
        .await
        .map_err(|e| ApiError::internal_logged("reading the commands failed", &e))?;
    Ok(Json(list))
}

/// The answer to a prompt whose command cannot run: 404 for an unknown name, 409 for a
/// project command not trusted as it is now, 400 for one this server cannot run; the
/// message says what to do.
pub(super) fn refused(e: &CommandError) -> ApiError {
    let message = match e.hint() {
        Some(hint) => format!("{e}; hint: {hint}"),
        None => e.to_string(),
    };
    let status = match e {
        CommandError::NotTrusted { .. } => StatusCode::CONFLICT,
        _ => match e.kind() {
            ErrorKind::NotFound => StatusCode::NOT_FOUND,
            ErrorKind::Usage | ErrorKind::CommandLine | ErrorKind::Config => {
                StatusCode::BAD_REQUEST
            }
            _ => return ApiError::internal_logged("the command could not be read", e),
        },
    };
    ApiError::new(status, message)
}
