//! `POST /api/sessions/{id}/compact`: a saved session's conversation summarised by the model
//! (the web UI's `/compact`; docs/COMPACTION.md).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};
use tokio_util::sync::CancellationToken;

use super::error::{ApiError, JsonBody};
use super::{AppState, runs, sessions};
use crate::protocol::api::SessionCompacted;
use crate::runtime::RuntimeError;

/// `POST /api/sessions/{id}/compact` body.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Compact {
    /// What the summary must keep.
    #[serde(default)]
    keep: Option<String>,
}

/// `POST /api/sessions/{id}/compact` `{keep?}`: the turns before the last
/// `compaction.keep_turns` summarised, saved at once. 400 when there is nothing to compact,
/// 409 while a turn or another process holds the session, 502 when the model could not
/// summarise.
pub async fn compact(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Compact>,
) -> Result<Json<SessionCompacted>, ApiError> {
    app.limits.prompt(peer.ip())?;
    sessions::standard_id(&id)?;
    sessions::refuse_while_running(&app, &id)?;
    let saved = app.base.sessions().load(&id)?;
    let runtime = app.session_runtime(&saved)?;
    let session = runtime.open_session(&id, runs::HOLDER)?;
    let focus = body.keep.as_deref();
    let outcome = runtime
        .compact(&session, focus, &CancellationToken::new())
        .await
        .map_err(refused)?;
    Ok(Json(SessionCompacted {
        session_id: id,
        mode: outcome.mode.as_str(),
        before_tokens: outcome.before_tokens,
        after_tokens: outcome.after_tokens,
        removed_messages: outcome.removed,
        line: outcome.line(),
        backup: outcome.backup,
    }))
}

/// A compaction's refusal: nothing to compact is a 400, a model that could not summarise
/// a 502; the rest as any runtime error.
fn refused(e: RuntimeError) -> ApiError {
    use crate::engine::compaction::CompactError;
    match e {
        RuntimeError::Compact(CompactError::NothingToCompact { .. }) => {
            ApiError::bad_request(e.to_string())
        }
        RuntimeError::Compact(_) => {
            ApiError::new(axum::http::StatusCode::BAD_GATEWAY, e.to_string())
        }
        other => other.into(),
    }
}
