//! `/api/sessions…`: list, detail, rename, delete, the plan view and export. Reads count
//! against the per-client read limit; reads and writes of files run off the async threads.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::Value;

use super::AppState;
use super::error::{ApiError, JsonBody};
use crate::plan::PlanState;
use crate::protocol::api::{Deleted, PlanStepView, PlanView, SessionItem, SessionList};
use crate::session::{MAX_TITLE_CHARS, Session, SessionSummary, is_standard_id};

/// Default page size of the list.
const DEFAULT_LIMIT: usize = 50;
/// Largest page size of the list.
const MAX_LIMIT: usize = 200;

type Params = Query<HashMap<String, String>>;

/// Runs blocking session-store work off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
}

/// A non-negative number parameter, `default` when absent.
pub(super) fn number(
    params: &HashMap<String, String>,
    name: &str,
    default: usize,
) -> Result<usize, ApiError> {
    match params.get(name).map(|v| v.trim()) {
        None | Some("") => Ok(default),
        Some(v) => v.parse().map_err(|_| {
            ApiError::bad_request(format!("{name} must be a non-negative integer, got {v:?}"))
        }),
    }
}

/// `id` when it is a standard session id (`YYYYMMDD-<32 hex>`), the only names sessions
/// have; anything else (`index`, the Go original's `vectors_meta`, a traversal attempt) is
/// 404 without the disk being touched.
pub(super) fn standard_id(id: &str) -> Result<&str, ApiError> {
    if is_standard_id(id) {
        return Ok(id);
    }
    let shown = crate::text::truncate(id, 64);
    Err(ApiError::not_found(format!(
        "no session {shown:?}: session ids look like YYYYMMDD-<32 hex digits>"
    )))
}

/// One session read by `peer`: counted against its read limit, then session `id` loaded
/// (the snapshot and its journal: a running session shows its latest saved batch).
async fn read_session(
    app: &Arc<AppState>,
    peer: SocketAddr,
    id: String,
) -> Result<Session, ApiError> {
    app.limits.read(peer.ip())?;
    standard_id(&id)?;
    let app = app.clone();
    blocking(move || Ok(app.base.sessions().load(&id)?)).await
}

/// `GET /api/sessions?q=&limit=&offset=`: newest first, from the index.
pub async fn list(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Query(params): Params,
) -> Result<Json<SessionList>, ApiError> {
    app.limits.read(peer.ip())?;
    let limit = number(&params, "limit", DEFAULT_LIMIT)?.clamp(1, MAX_LIMIT);
    let offset = number(&params, "offset", 0)?;
    let query = params
        .get("q")
        .map(|q| q.trim().to_string())
        .unwrap_or_default();
    let store_app = app.clone();
    let listed = blocking(move || Ok(store_app.base.sessions().list()?)).await?;
    let needle = query.to_lowercase();
    // Sub-agents' sessions are listed only when asked for (`all=1`): their parent's names them.
    let all = params
        .get("all")
        .is_some_and(|v| matches!(v.as_str(), "1" | "true"));
    let matching: Vec<&SessionSummary> = listed
        .sessions
        .iter()
        .filter(|s| all || s.origin.as_deref() != Some(crate::subagent::ORIGIN_SUBAGENT))
        .filter(|s| needle.is_empty() || matches_query(s, &needle))
        .collect();
    let page: Vec<SessionItem> = matching
        .iter()
        .skip(offset)
        .take(limit)
        .map(|s| session_item(&app, s))
        .collect();
    Ok(Json(SessionList {
        sessions: page,
        offset,
        limit,
        count: matching.len(),
        query,
    }))
}

fn matches_query(s: &SessionSummary, needle: &str) -> bool {
    [&s.title, &s.id, &s.model]
        .iter()
        .any(|field| field.to_lowercase().contains(needle))
}

fn session_item(app: &AppState, s: &SessionSummary) -> SessionItem {
    SessionItem {
        id: s.id.clone(),
        title: s.title.clone(),
        created_at: s.created_at.clone(),
        updated_at: s.updated_at.clone(),
        turns: s.turns,
        model: s.model.clone(),
        origin: s
            .origin
            .clone()
            .unwrap_or_else(|| crate::session::ORIGIN_CLI.to_string()),
        running: app.supervisor.running_in(&s.id).is_some(),
    }
}

/// `GET /api/sessions/{id}`: the session as saved (redacted), with `running` and `run_id`.
pub async fn detail(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let session = read_session(&app, peer, id).await?;
    let run_id = app.supervisor.running_in(&session.id);
    let mut value =
        serde_json::to_value(&session).map_err(|e| ApiError::internal(e.to_string()))?;
    value["title"] = Value::String(session.summary().title);
    value["running"] = Value::Bool(run_id.is_some());
    value["run_id"] = run_id.map_or(Value::Null, Value::String);
    Ok(Json(value))
}

/// `POST /api/sessions/{id}` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rename {
    name: String,
}

/// `POST /api/sessions/{id}` `{name}`: renames, as the session's writer (409 while a turn
/// or another process holds it).
pub async fn rename(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<Rename>,
) -> Result<Json<SessionItem>, ApiError> {
    standard_id(&id)?;
    let name = body.name.trim().to_string();
    if name.is_empty()
        || name.chars().count() > MAX_TITLE_CHARS
        || name.chars().any(char::is_control)
    {
        return Err(ApiError::bad_request(format!(
            "name must be 1 to {MAX_TITLE_CHARS} characters without control characters"
        )));
    }
    refuse_while_running(&app, &id)?;
    let store_app = app.clone();
    let summary = blocking(move || Ok(store_app.base.sessions().rename(&id, &name)?)).await?;
    Ok(Json(session_item(&app, &summary)))
}

/// `DELETE /api/sessions/{id}`: deletes the file, its journal and its index entry (409
/// while held, 404 when there is no such session).
pub async fn delete(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<Deleted>, ApiError> {
    standard_id(&id)?;
    refuse_while_running(&app, &id)?;
    let store_app = app.clone();
    let target = id.clone();
    let existed = blocking(move || {
        let existed = store_app.base.sessions().delete(&target)?;
        if let Some(Err(e)) = store_app.base.memory().map(|m| m.forget_session(&target)) {
            eprintln!("odek serve: warning: session {target} stays in the search index: {e}");
        }
        Ok(existed)
    })
    .await?;
    if !existed {
        return Err(ApiError::not_found(format!("no session {id}")));
    }
    Ok(Json(Deleted { deleted: id }))
}

pub(super) fn refuse_while_running(app: &AppState, id: &str) -> Result<(), ApiError> {
    match app.supervisor.running_in(id) {
        Some(run) => Err(ApiError::conflict(format!(
            "session {id} is running a turn (run {run})"
        ))),
        None => Ok(()),
    }
}

/// `GET /api/sessions/{id}/plan`: the seed's read-only plan view. `found:false` (200) when
/// the session has no plan; 404 for an unknown session; `steps` is never null and a step's
/// `note` is left out when empty.
pub async fn plan(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
) -> Result<Json<PlanView>, ApiError> {
    let session = read_session(&app, peer, id).await?;
    Ok(Json(plan_view(
        &session.id,
        session.current_plan().as_ref(),
    )))
}

/// The body of the plan endpoint.
pub(super) fn plan_view(session_id: &str, plan: Option<&PlanState>) -> PlanView {
    let steps = plan
        .map(|p| p.steps.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|s| PlanStepView {
            id: s.id.clone(),
            title: s.title.clone(),
            status: s.status.as_str().to_string(),
            note: (!s.note.is_empty()).then(|| s.note.clone()),
        })
        .collect();
    PlanView {
        session_id: session_id.to_string(),
        version: plan.map_or(0, |p| p.version),
        steps,
        found: plan.is_some(),
    }
}

/// `GET /api/sessions/{id}/export?format=md|json` (default json), as a download.
pub async fn export(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    Query(params): Params,
) -> Result<Response, ApiError> {
    let format = params.get("format").map_or("json", String::as_str);
    if !matches!(format, "md" | "json") {
        return Err(ApiError::bad_request(format!(
            "format must be md or json, got {format:?}"
        )));
    }
    let format = format.to_string();
    let session = read_session(&app, peer, id).await?;
    let (body, content_type, extension) = if format == "md" {
        (
            super::export::markdown(&session),
            "text/markdown; charset=utf-8",
            "md",
        )
    } else {
        let text = serde_json::to_string_pretty(&session)
            .map_err(|e| ApiError::internal(e.to_string()))?;
        (text, "application/json", "json")
    };
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"{}.{extension}\"",
        session.id
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(response)
}

/// Decodes `data` as the body this file's route takes.
#[cfg(any(fuzzing, test))]
pub(super) fn fuzz_bodies(data: &[u8]) {
    let _ = super::error::decode_json::<Rename>(data);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{PlanStep, StepStatus};
    use serde_json::json;

    #[test]
    fn the_plan_view_has_the_seed_shape() {
        let json = |view: PlanView| serde_json::to_value(view).expect("json");
        let none = json(plan_view("s", None));
        assert_eq!(
            none,
            json!({"session_id": "s", "version": 0, "steps": [], "found": false})
        );
        let plan = PlanState {
            version: 3,
            steps: vec![
                PlanStep {
                    id: "s1".into(),
                    title: "Scaffold".into(),
                    status: StepStatus::Done,
                    note: String::new(),
                },
                PlanStep {
                    id: "s2".into(),
                    title: "Wire flags".into(),
                    status: StepStatus::InProgress,
                    note: "half".into(),
                },
            ],
        };
        assert_eq!(
            json(plan_view("s", Some(&plan))),
            json!({"session_id": "s", "version": 3, "found": true, "steps": [
                {"id": "s1", "title": "Scaffold", "status": "done"},
                {"id": "s2", "title": "Wire flags", "status": "in_progress", "note": "half"}
            ]})
        );
        let collapsed = PlanState {
            version: 4,
            steps: Vec::new(),
        };
        assert_eq!(json(plan_view("s", Some(&collapsed)))["steps"], json!([]));
    }
}
