//! The token page, health, prompts and runs, approvals, events (ring and live stream),
//! usage, configuration and tools.

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::{Stream, StreamExt, stream};
use serde::Deserialize;
use serde_json::{Value, json};

use super::AppState;
use super::error::{ApiError, JsonBody};
use super::hub::{FrameFilter, RING_CAPACITY};
use super::sessions::number;
use crate::protocol::ApprovalAction;
use crate::protocol::api::{
    ApprovalAnswered, ApprovalList, CancelAccepted, EventPage, Health, PromptAccepted,
    QuestionAnswered, QuestionList, QuestionStatus, RunList, RunStatus, RunView, ToolList,
    ToolView,
};

/// Longest model id a prompt may name.
const MAX_MODEL_CHARS: usize = 128;
/// Events `GET /api/events` returns without `limit`.
const DEFAULT_EVENTS: usize = 100;
/// `GET /api/health`.
pub async fn health(State(app): State<Arc<AppState>>) -> Json<Health> {
    Json(Health {
        status: "ok".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        uptime_seconds: app.started.elapsed().as_secs(),
        model: app.base.config().model.clone(),
        planning: app.base.planning_enabled(),
        runs_running: app.supervisor.running(),
    })
}

/// `POST /api/prompt` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Prompt {
    content: String,
    session_id: Option<String>,
    model: Option<String>,
    /// Text files attached in the web UI.
    #[serde(default)]
    attachments: Vec<Attachment>,
    /// While the session runs a turn: queue the prompt as a next turn instead of steering
    /// the running one.
    #[serde(default)]
    queue: bool,
}

/// A file attached to a prompt: a text file (`text`) or, when the model takes images, an
/// image (`image`, its bytes in base64).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    name: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    image: Option<String>,
}

use crate::prompt::MAX_ATTACHED_FILES as MAX_ATTACHMENTS;
/// Largest prompt text (the body may be larger: images in base64).
const MAX_CONTENT_BYTES: usize = 1024 * 1024;
/// At most this much text all the attachments of one prompt hold.
const MAX_ATTACHMENTS_TOTAL: usize = 1024 * 1024;

/// What a prompt's attachments bring: files to wrap and images to send.
#[derive(Debug, Default)]
struct Attached {
    files: Vec<crate::prompt::ContextFile>,
    images: Vec<(String, crate::llm::ImagePart)>,
}

/// The attachments as files to wrap and image parts, or why they are refused (each file
/// one `--ctx` would take: ≤ 256 KiB of text; each image a PNG, JPEG, GIF or WebP, only
/// when the model takes images; a short name without control characters).
fn attached(attachments: Vec<Attachment>, images_taken: bool) -> Result<Attached, ApiError> {
    if attachments.len() > MAX_ATTACHMENTS {
        return Err(ApiError::bad_request(format!(
            "at most {MAX_ATTACHMENTS} attachments, not {}",
            attachments.len()
        )));
    }
    let total: usize = attachments
        .iter()
        .map(|a| a.text.as_ref().map_or(0, String::len))
        .sum();
    if total > MAX_ATTACHMENTS_TOTAL {
        return Err(ApiError::bad_request(format!(
            "the attachments hold {total} bytes together, over the {MAX_ATTACHMENTS_TOTAL}-byte limit"
        )));
    }
    let mut out = Attached::default();
    // The images' caps are every surface's (the body is capped at
    // [`super::error::PROMPT_BODY_LIMIT`]; base64 takes a third more).
    let mut budget = crate::prompt::ImageBudget::default();
    for a in attachments {
        let name = a.name.trim().to_string();
        if name.is_empty() || name.chars().count() > 200 || name.chars().any(char::is_control) {
            return Err(ApiError::bad_request(
                "an attachment's name must be 1 to 200 characters without control characters",
            ));
        }
        match (a.text, a.image) {
            (Some(text), None) => out.files.push(attached_text(name, text)?),
            (None, Some(image)) => {
                if !images_taken {
                    return Err(ApiError::bad_request(format!(
                        "attachment {name} is an image, and the model does not take images (setting `images`)"
                    )));
                }
                let bytes = base64_bytes(&image).ok_or_else(|| {
                    ApiError::bad_request(format!(
                        "attachment {name}: image must be the file's bytes in standard base64 (no data: prefix)"
                    ))
                })?;
                let part = budget
                    .part(&name, &bytes)
                    .map_err(|e| ApiError::bad_request(e.to_string()))?;
                out.images.push((name, part));
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "attachment {name} must have text or image (one of them, not both)"
                )));
            }
        }
    }
    Ok(out)
}

/// Decodes `data` as each body this file's routes take, as they do (attachments included).
#[cfg(any(fuzzing, test))]
pub(super) fn fuzz_bodies(data: &[u8]) {
    use super::error::decode_json;
    if let Ok(prompt) = decode_json::<Prompt>(data) {
        let _ = attached(prompt.attachments, true);
    }
    let _ = decode_json::<Answer>(data);
    let _ = decode_json::<Reply>(data);
}

fn base64_bytes(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(text.trim())
        .ok()
}

fn attached_text(name: String, text: String) -> Result<crate::prompt::ContextFile, ApiError> {
    if text.len() as u64 > crate::prompt::MAX_CONTEXT_FILE_BYTES {
        return Err(ApiError::bad_request(format!(
            "attachment {name} is {} bytes, over the {}-byte limit",
            text.len(),
            crate::prompt::MAX_CONTEXT_FILE_BYTES
        )));
    }
    if text.contains('\0') {
        return Err(ApiError::bad_request(format!(
            "attachment {name} is not text (it holds NUL bytes)"
        )));
    }
    Ok(crate::prompt::ContextFile { name, text })
}

/// `POST /api/prompt`: starts a run (202 `{run_id, session_id, status}`); 409 while the
/// session runs a turn here or is held by another process.
pub async fn prompt(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    JsonBody(body): JsonBody<Prompt, { super::error::PROMPT_BODY_LIMIT }>,
) -> Result<(StatusCode, Json<PromptAccepted>), ApiError> {
    app.limits.prompt(peer.ip())?;
    if body.content.trim().is_empty() {
        return Err(ApiError::bad_request("content must not be empty"));
    }
    if body.content.len() > MAX_CONTENT_BYTES {
        return Err(ApiError::bad_request(format!(
            "content is {} bytes, over the {MAX_CONTENT_BYTES}-byte limit",
            body.content.len()
        )));
    }
    if let Some(model) = &body.model {
        check_model(model)?;
        if body.session_id.is_some() {
            return Err(ApiError::bad_request(
                "model cannot be given with session_id: switch a session's model with POST /api/sessions/{id}/model",
            ));
        }
    }
    if let Some(id) = &body.session_id
        && let Some(accepted) =
            app.deliver(id, &body.content, body.queue, !body.attachments.is_empty())?
    {
        return Ok((StatusCode::ACCEPTED, Json(accepted)));
    }
    let attached = attached(body.attachments, app.base.config().images)?;
    let started = app
        .start_run(
            body.content,
            body.session_id,
            body.model,
            attached.files,
            attached.images,
        )
        .await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(PromptAccepted {
            run_id: started.run_id,
            session_id: started.session_id,
            status: RunStatus::Running,
            command: started.command,
            warnings: started.warnings,
            delivered: None,
            position: None,
        }),
    ))
}

/// `POST /api/sessions/{id}/messages`: `POST /api/prompt` for session `id` — a turn, or
/// while one runs, a steer (or with `queue`, a next turn).
pub async fn message(
    state: State<Arc<AppState>>,
    peer: ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
    JsonBody(mut body): JsonBody<Prompt, { super::error::PROMPT_BODY_LIMIT }>,
) -> Result<(StatusCode, Json<PromptAccepted>), ApiError> {
    if body.session_id.as_ref().is_some_and(|given| *given != id) {
        return Err(ApiError::bad_request(
            "session_id, when given, must be the session of the path",
        ));
    }
    body.session_id = Some(id);
    prompt(state, peer, JsonBody(body)).await
}

/// True for a name `POST /api/prompt` takes as `model`.
pub fn model_name_ok(model: &str) -> bool {
    check_model(model).is_ok()
}

fn check_model(model: &str) -> Result<(), ApiError> {
    let allowed = |c: char| c.is_ascii_alphanumeric() || "_.:/@-".contains(c);
    if model.is_empty() || model.len() > MAX_MODEL_CHARS || !model.chars().all(allowed) {
        return Err(ApiError::bad_request(format!(
            "model must be 1 to {MAX_MODEL_CHARS} characters of A-Z a-z 0-9 _ . : / @ -"
        )));
    }
    Ok(())
}

/// `GET /api/runs`: the running runs and the last ended ones, newest first.
pub async fn runs(State(app): State<Arc<AppState>>) -> Json<RunList> {
    let runs = app.supervisor.views();
    Json(RunList {
        count: runs.len(),
        runs,
    })
}

/// `GET /api/runs/{id}`.
pub async fn run(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<RunView>, ApiError> {
    Ok(Json(app.supervisor.run(&id)?.view()))
}

/// `POST /api/runs/{id}/cancel`: 202 while it stops; 409 when it has ended.
pub async fn cancel(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<CancelAccepted>), ApiError> {
    if !app.supervisor.cancel(&id)? {
        return Err(ApiError::conflict(format!("run {id} has already ended")));
    }
    Ok((
        StatusCode::ACCEPTED,
        Json(CancelAccepted {
            run_id: id,
            status: "cancelling".into(),
        }),
    ))
}

/// `GET /api/runs/{id}/approvals`.
pub async fn approvals(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<ApprovalList>, ApiError> {
    let approvals = app.supervisor.run(&id)?.approval_views();
    Ok(Json(ApprovalList {
        run_id: id,
        approvals,
    }))
}

/// `POST /api/runs/{id}/approvals/{aid}` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Answer {
    action: String,
}

/// `POST /api/runs/{id}/approvals/{aid}` `{action: approve|deny}`.
pub async fn answer(
    State(app): State<Arc<AppState>>,
    Path((id, approval_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<Answer>,
) -> Result<Json<ApprovalAnswered>, ApiError> {
    let action = match body.action.as_str() {
        "approve" => ApprovalAction::Approve,
        "deny" => ApprovalAction::Deny,
        other => {
            return Err(ApiError::bad_request(format!(
                "action must be approve or deny, got {other:?}"
            )));
        }
    };
    app.supervisor
        .run(&id)?
        .answer(&approval_id, action == ApprovalAction::Approve)?;
    Ok(Json(ApprovalAnswered {
        run_id: id,
        approval_id,
        action,
    }))
}

/// `GET /api/runs/{id}/questions`.
pub async fn questions(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
) -> Result<Json<QuestionList>, ApiError> {
    let questions = app.supervisor.run(&id)?.question_views();
    Ok(Json(QuestionList {
        run_id: id,
        questions,
    }))
}

/// `POST /api/runs/{id}/questions/{qid}` body.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reply {
    answer: String,
}

/// Longest answer to a question, in characters.
const MAX_REPLY_CHARS: usize = 4000;

/// `POST /api/runs/{id}/questions/{qid}` `{answer}`: the user's answer to a `clarify`
/// question (an option's text, or their own words).
pub async fn reply(
    State(app): State<Arc<AppState>>,
    Path((id, question_id)): Path<(String, String)>,
    JsonBody(body): JsonBody<Reply>,
) -> Result<Json<QuestionAnswered>, ApiError> {
    let answer = body.answer.trim();
    if answer.is_empty() {
        return Err(ApiError::bad_request("answer is empty"));
    }
    if answer.chars().count() > MAX_REPLY_CHARS {
        return Err(ApiError::bad_request(format!(
            "answer is longer than {MAX_REPLY_CHARS} characters"
        )));
    }
    app.supervisor
        .run(&id)?
        .answer_question(&question_id, answer)?;
    Ok(Json(QuestionAnswered {
        run_id: id,
        question_id,
        status: QuestionStatus::Answered,
    }))
}

fn filter_of(params: &HashMap<String, String>) -> FrameFilter {
    FrameFilter {
        run_id: params.get("run_id").filter(|v| !v.is_empty()).cloned(),
        session_id: params.get("session_id").filter(|v| !v.is_empty()).cloned(),
    }
}

/// `GET /api/events?run_id=&session_id=&limit=`: the newest events of the ring (at most
/// 500), oldest first.
pub async fn events(
    State(app): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<EventPage>, ApiError> {
    let limit = number(&params, "limit", DEFAULT_EVENTS)?.clamp(1, RING_CAPACITY);
    let frames = app.hub.recent(&filter_of(&params), limit);
    let events: Vec<Value> = frames
        .iter()
        .map(|f| {
            let mut event: Value = serde_json::from_str(&f.data).unwrap_or(Value::Null);
            event["event_id"] = json!(f.id);
            event
        })
        .collect();
    Ok(Json(EventPage {
        count: events.len(),
        events,
    }))
}

/// `GET /api/events/stream?run_id=&session_id=`: the events as Server-Sent Events (`id`,
/// `event` = type, `data` = the JSON line), plus the browser-only frames; `Last-Event-ID`
/// replays what the ring still holds after that id. Ends when the server stops.
pub async fn stream(
    State(app): State<Arc<AppState>>,
    headers: HeaderMap,
    Query(params): Query<HashMap<String, String>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let last_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let filter = filter_of(&params);
    let (replay, receiver) = app.hub.subscribe(last_id);
    let live = stream::unfold(receiver, |mut rx| async move {
        loop {
            match rx.recv().await {
                Ok(frame) => return Some((frame, rx)),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return None,
            }
        }
    });
    let frames = stream::iter(replay)
        .chain(live)
        .filter(move |f| std::future::ready(f.matches(&filter)))
        .map(|f| {
            Ok(Event::default()
                .id(f.id.to_string())
                .event(f.kind.as_str())
                .data(f.data.as_str()))
        })
        .take_until(app.shutdown.clone().cancelled_owned());
    Sse::new(frames).keep_alive(KeepAlive::default())
}

/// `GET /api/usage?since=DAYS`: the body of `odek usage --json`.
pub async fn usage(
    State(app): State<Arc<AppState>>,
    Query(params): Query<HashMap<String, String>>,
) -> Result<Json<Value>, ApiError> {
    let since = match params.get("since").map(|v| v.trim()) {
        None | Some("") => None,
        Some(v) => Some(v.parse::<u64>().map_err(|_| {
            ApiError::bad_request(format!("since must be a number of days, got {v:?}"))
        })?),
    };
    let store_app = app.clone();
    let report = tokio::task::spawn_blocking(move || {
        let now = crate::util::timestamp::now_unix_seconds();
        crate::usage::rollup(store_app.base.sessions(), since, now)
    })
    .await
    .map_err(|e| ApiError::internal(e.to_string()))??
    .0;
    Ok(Json(serde_json::to_value(report).unwrap_or(Value::Null)))
}

/// `GET /api/config`: the resolved configuration, the API key masked.
pub async fn config(State(app): State<Arc<AppState>>) -> Json<Value> {
    Json(crate::config::masked_json(app.base.config()))
}

/// `GET /api/tools`: the tools a run offers the model.
pub async fn tools(State(app): State<Arc<AppState>>) -> Json<ToolList> {
    let tools: Vec<ToolView> = app
        .base
        .tool_defs()
        .into_iter()
        .map(|t| ToolView {
            name: t.name,
            description: t.description,
            parameters: t.parameters,
        })
        .collect();
    Json(ToolList {
        count: tools.len(),
        tools,
    })
}
