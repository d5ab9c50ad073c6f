//! `/api/memory…` and `/api/search`: the facts (list, add, edit, delete, accept a pending
//! write) and the session search, under the same token, read limit and JSON errors as the
//! rest of the API.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::StatusCode;
use serde::Deserialize;

use super::AppState;
use super::error::{ApiError, JsonBody};
use crate::memory::facts::{FactFilter, WriteContext};
use crate::memory::{Memory, MemoryError, SOURCE_USER, WriteOutcome};
use crate::protocol::api::{
    FactStatus, MemoryDeleted, MemoryFact, MemoryList, MemoryStoreUse, MemoryTarget, SearchResults,
};

/// Sessions `GET /api/search` lists unless `limit` says otherwise, and at most.
const SEARCH_LIMIT: (usize, usize) = (10, 50);

/// The body of `POST /api/memory`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NewFact {
    /// `user` or `project`.
    target: MemoryTarget,
    /// The fact.
    content: String,
}

/// The body of `POST /api/memory/{id}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EditedFact {
    /// The new text.
    content: String,
}

/// The database for one request of `peer`, counted against its read limit.
fn memory(app: &AppState, peer: SocketAddr) -> Result<Arc<Memory>, ApiError> {
    app.limits.read(peer.ip())?;
    app.base.memory().cloned().ok_or_else(|| {
        ApiError::not_found("memory is off on this server (memory.enabled is false, or odek.db could not be opened: see its log)")
    })
}

fn api_error(e: MemoryError) -> ApiError {
    match e {
        MemoryError::NotFound(m) => ApiError::not_found(m),
        MemoryError::Refused(m) => ApiError::conflict(m),
        other => ApiError::internal_logged("the memory database failed", &other),
    }
}

async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, MemoryError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .map_err(api_error)
}

/// `GET /api/memory?status=active|pending&all=1`: the user's facts and the server
/// project's (every project's with `all`).
pub async fn list(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<MemoryList>, ApiError> {
    let m = memory(&app, peer)?;
    let status = match params.get("status").map(String::as_str) {
        None | Some("") => None,
        Some("active") => Some(FactStatus::Active),
        Some("pending") => Some(FactStatus::Pending),
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "status must be active or pending, got {other:?}"
            )));
        }
    };
    let all = params
        .get("all")
        .is_some_and(|v| matches!(v.as_str(), "1" | "true"));
    let project = app.base.project_key().to_string();
    let budgets = app.base.memory_budgets();
    let key = project.clone();
    let facts = blocking(move || {
        m.list_facts(FactFilter {
            project: (!all).then_some(key.as_str()),
            status,
            ..FactFilter::default()
        })
    })
    .await?;
    let used = |t: MemoryTarget| {
        facts
            .iter()
            .filter(|f| f.target == t && f.status == FactStatus::Active)
            .filter(|f| t == MemoryTarget::User || f.project == project)
            .map(|f| f.content.chars().count())
            .sum()
    };
    let stores = [MemoryTarget::User, MemoryTarget::Project]
        .into_iter()
        .map(|target| MemoryStoreUse {
            target,
            used: used(target),
            budget: budgets.of(target),
        })
        .collect();
    Ok(Json(MemoryList {
        pending: facts
            .iter()
            .filter(|f| f.status == FactStatus::Pending)
            .count(),
        stores,
        project,
        facts,
    }))
}

/// `POST /api/memory {target, content}` (201): a fact from a person, active at once
/// (redacted like everything stored).
pub async fn add(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    JsonBody(body): JsonBody<NewFact>,
) -> Result<(StatusCode, Json<MemoryFact>), ApiError> {
    let m = memory(&app, peer)?;
    let content = app.redactor.redact(&body.content).into_owned();
    let (project, budgets) = (
        app.base.project_key().to_string(),
        app.base.memory_budgets(),
    );
    let fact = blocking(move || {
        let w = WriteContext {
            project: &project,
            pending: false,
            session_id: None,
            source: SOURCE_USER,
            budgets,
        };
        let id = match m.add_fact(&w, body.target, &content)? {
            WriteOutcome::Saved { id, .. } | WriteOutcome::Pending { id } => id,
        };
        m.fact(id)?
            .ok_or_else(|| MemoryError::NotFound(format!("no memory fact #{id}")))
    })
    .await?;
    Ok((StatusCode::CREATED, Json(MemoryFact { fact })))
}

/// `GET /api/memory/{id}`.
pub async fn detail(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
) -> Result<Json<MemoryFact>, ApiError> {
    let id = fact_id(&id)?;
    let m = memory(&app, peer)?;
    let fact = blocking(move || {
        m.fact(id)?
            .ok_or_else(|| MemoryError::NotFound(format!("no memory fact #{id}")))
    })
    .await?;
    Ok(Json(MemoryFact { fact }))
}

/// `POST /api/memory/{id} {content}`: a person edits a fact (or a pending write).
pub async fn edit(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<EditedFact>,
) -> Result<Json<MemoryFact>, ApiError> {
    let id = fact_id(&id)?;
    let m = memory(&app, peer)?;
    let content = app.redactor.redact(&body.content).into_owned();
    let budgets = app.base.memory_budgets();
    let fact = blocking(move || m.edit_fact(id, &content, budgets)).await?;
    Ok(Json(MemoryFact { fact }))
}

/// `DELETE /api/memory/{id}`: a fact or a pending write (rejecting it).
pub async fn delete(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
) -> Result<Json<MemoryDeleted>, ApiError> {
    let id = fact_id(&id)?;
    let m = memory(&app, peer)?;
    if !blocking(move || m.delete_fact(id)).await? {
        return Err(ApiError::not_found(format!("no memory fact #{id}")));
    }
    Ok(Json(MemoryDeleted { deleted: id }))
}

/// `POST /api/memory/{id}/accept`: applies a pending write (409 when it no longer fits its
/// store or repeats a fact).
pub async fn accept(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
) -> Result<Json<MemoryFact>, ApiError> {
    let id = fact_id(&id)?;
    let m = memory(&app, peer)?;
    let budgets = app.base.memory_budgets();
    let fact = blocking(move || {
        let accepted = m.accept(id, budgets)?;
        Ok(m.fact(id)?.unwrap_or(accepted))
    })
    .await?;
    Ok(Json(MemoryFact { fact }))
}

/// `GET /api/search?q=&limit=`: sessions by what was said in them (the index is rebuilt
/// first when missing).
pub async fn search(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<SearchResults>, ApiError> {
    let m = memory(&app, peer)?;
    let query = params
        .get("q")
        .map(|q| q.trim().to_string())
        .unwrap_or_default();
    if query.is_empty() {
        return Err(ApiError::bad_request(
            "q is required: the words to look for",
        ));
    }
    let limit = super::sessions::number(&params, "limit", SEARCH_LIMIT.0)?.clamp(1, SEARCH_LIMIT.1);
    let searcher = crate::memory::search_tool::Searcher {
        memory: &m,
        sessions: app.base.sessions(),
        embedder: app.base.embedder(),
        redactor: &app.redactor,
    };
    let sessions = crate::memory::search_tool::search(&searcher, &query, limit, None)
        .await
        .map_err(api_error)?;
    Ok(Json(SearchResults { query, sessions }))
}

/// A fact's id from the path: a number, or a JSON 400 that says so (never the framework's
/// plain-text rejection).
fn fact_id(text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>()
        .ok()
        .filter(|id| *id > 0)
        .ok_or_else(|| ApiError::bad_request(format!("{text:?} is not a memory fact's id")))
}

/// Decodes `data` as each body this file's routes take.
#[cfg(any(fuzzing, test))]
pub(super) fn fuzz_bodies(data: &[u8]) {
    let _ = super::error::decode_json::<NewFact>(data);
    let _ = super::error::decode_json::<EditedFact>(data);
}
