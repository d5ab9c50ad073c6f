//! `/api/sessions/{id}/checkpoints` and `/api/sessions/{id}/rewind`: a session's checkpoints,
//! and putting its files back as they were before one of them (see docs/UNDO.md). A rewind
//! holds the session as its writer (refused while a turn runs) and is published on the live
//! stream as a `rewound` event.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Json;
use axum::extract::{ConnectInfo, Path, State};

use super::AppState;
use super::error::{ApiError, JsonBody};
use super::sessions::{blocking, refuse_while_running, standard_id};
use crate::checkpoint::{History, RewindError, RewindPlan, plan_rewind};
use crate::protocol::api::{CheckpointItem, CheckpointList, RewindRequest, RewindResult};
use crate::protocol::{CheckpointFile, Event, Rewound, Stamp, envelope};
use crate::session::Holder;

/// `GET /api/sessions/{id}/checkpoints`: every checkpoint, oldest first (404 for an
/// unknown session; none yet: an empty list).
pub async fn list(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    Path(id): Path<String>,
) -> Result<Json<CheckpointList>, ApiError> {
    app.limits.read(peer.ip())?;
    standard_id(&id)?;
    let store_app = app.clone();
    blocking(move || {
        let store = store_app.base.sessions();
        let session = store.load(&id)?;
        let history = read_history(store.checkpoints(&id, session.turns).history())?;
        Ok(Json(CheckpointList {
            session_id: id,
            interrupted_rewind_to: history.interrupted_rewind().and_then(|c| c.rewound_to),
            checkpoints: history.checkpoints.iter().map(item).collect(),
        }))
    })
    .await
}

fn read_history(history: std::io::Result<History>) -> Result<History, ApiError> {
    history
        .map_err(|e| ApiError::internal_logged("the session's checkpoints could not be read", &e))
}

fn item(c: &crate::checkpoint::Checkpoint) -> CheckpointItem {
    CheckpointItem {
        number: c.n,
        turn: c.turn,
        at: c.at.clone(),
        tool: c.tool.clone(),
        rewound_to: c.rewound_to,
        files: c
            .files
            .iter()
            .map(|f| CheckpointFile::new(&f.path, f.kind()))
            .collect(),
        not_covered: c.not_covered.clone(),
    }
}

/// `POST /api/sessions/{id}/rewind` `{"to": N | "turn": T, "force"?, "dry_run"?, "files"?,
/// "conversation"?}`: the plan (a dry run), or the rewind done — the files put back, the
/// conversation forked before that turn, or both. 409 while a turn runs, or when files
/// changed outside odek since and `force` is not set (nothing is written then); 400 for a
/// checkpoint or turn the session does not have.
pub async fn rewind(
    State(app): State<Arc<AppState>>,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<RewindRequest>,
) -> Result<Json<RewindResult>, ApiError> {
    standard_id(&id)?;
    if body.to.is_some() == body.turn.is_some() {
        return Err(ApiError::bad_request(
            "give either \"to\" (a checkpoint number) or \"turn\"",
        ));
    }
    if !body.files.unwrap_or(true) && !body.conversation {
        return Err(ApiError::bad_request(
            "nothing to do: \"files\" is false and \"conversation\" is not set",
        ));
    }
    if !body.dry_run {
        refuse_while_running(&app, &id)?;
    }
    let store_app = app.clone();
    let session_id = id.clone();
    let (result, forced) =
        blocking(move || rewind_blocking(&store_app, &session_id, &body)).await?;
    if result.done && result.to.is_some() {
        publish_rewound(&app, &id, &result, forced);
    }
    Ok(Json(result))
}

/// The rewind of [`rewind`], off the async threads: what was (or would be) done, and
/// whether files changed since were overwritten.
fn rewind_blocking(
    app: &AppState,
    id: &str,
    body: &RewindRequest,
) -> Result<(RewindResult, bool), ApiError> {
    let store = app.base.sessions();
    let session = store.load(id)?;
    let checkpoints = store.checkpoints(id, session.turns);
    let history = read_history(checkpoints.history())?;
    let mut result = RewindResult {
        to: None,
        done: false,
        checkpoint: None,
        files: Vec::new(),
        conflicts: Vec::new(),
        not_covered: Vec::new(),
        fork_at: None,
        forked: None,
    };
    let mut plan = None;
    if body.files.unwrap_or(true) {
        let to = target(&history, body)?;
        let planned = plan_rewind(&history, to).map_err(|e| match e {
            RewindError::Io(e) => ApiError::internal_logged("the files could not be read", &e),
            other => ApiError::bad_request(other.to_string()),
        })?;
        result = RewindResult {
            fork_at: None,
            forked: None,
            ..described(&planned)
        };
        plan = Some(planned);
    }
    if body.conversation {
        let turn = match (body.turn, body.to) {
            (Some(turn), _) => turn,
            (None, Some(to)) => history
                .checkpoints
                .iter()
                .find(|c| c.n == to)
                .map(|c| c.turn)
                .ok_or_else(|| ApiError::bad_request(format!("no checkpoint {to}")))?,
            (None, None) => 0,
        };
        if turn == 0 || turn > session.turns {
            return Err(ApiError::bad_request(format!(
                "session {id} has {} turn(s); there is no turn {turn} to go back before",
                session.turns
            )));
        }
        result.fork_at = Some(turn - 1);
    }
    if body.dry_run {
        return Ok((result, false));
    }
    // Held as a writer: no turn of the session starts while its files go back.
    let _held = store.open(id, &Holder::this_process("odek serve rewind"))?;
    let mut forced = false;
    if let Some(plan) = plan.filter(|p| !p.restores.is_empty()) {
        match checkpoints.rewind(&plan, body.force) {
            Ok(done) => {
                result.done = true;
                result.checkpoint = Some(done.checkpoint);
                // What was done: files a link made meanwhile put out of reach are left.
                result.files = done
                    .restored
                    .iter()
                    .map(|r| CheckpointFile::new(&r.path, r.action()))
                    .collect();
                result.not_covered.extend(done.not_covered);
                forced = !plan.conflicts.is_empty();
            }
            Err(e @ RewindError::Conflicts(_)) => return Err(ApiError::conflict(e.to_string())),
            Err(e) => return Err(ApiError::internal_logged("the rewind failed", &e)),
        }
    }
    if let Some(keep) = result.fork_at {
        let forked = store.fork(id, keep)?;
        result.forked = Some(forked.session.id);
        result.done = true;
    }
    Ok((result, forced))
}

/// The checkpoint a request names: `to`, or the first one taken in `turn` or later.
fn target(history: &History, body: &RewindRequest) -> Result<u32, ApiError> {
    if let Some(to) = body.to {
        return Ok(to);
    }
    let turn = body.turn.unwrap_or_default();
    history
        .checkpoints
        .iter()
        .find(|c| c.turn >= turn)
        .map(|c| c.n)
        .ok_or_else(|| {
            ApiError::bad_request(format!(
                "turn {turn} and the turns after it changed no files: nothing to rewind"
            ))
        })
}

fn described(plan: &RewindPlan) -> RewindResult {
    RewindResult {
        to: Some(plan.to),
        done: false,
        checkpoint: None,
        files: plan
            .restores
            .iter()
            .map(|r| CheckpointFile::new(&r.path, r.action()))
            .collect(),
        conflicts: plan
            .conflicts
            .iter()
            .map(|c| c.path.display().to_string())
            .collect(),
        not_covered: plan.not_covered.clone(),
        fork_at: None,
        forked: None,
    }
}

/// The `rewound` event on the live stream (and the ring), stamped with a run id of its own.
fn publish_rewound(app: &AppState, session_id: &str, result: &RewindResult, forced: bool) {
    let event = Event::Rewound(Rewound {
        to: result.to.unwrap_or_default(),
        checkpoint: result.checkpoint.unwrap_or_default(),
        files: result.files.clone(),
        forced,
        not_covered: result.not_covered.clone(),
    });
    let run_id = crate::random::hex_id::<8>();
    let timestamp = crate::util::timestamp::now_rfc3339();
    let stamp = Stamp {
        run_id: &run_id,
        session_id: Some(session_id),
        iteration: None,
        tool: None,
        timestamp: &timestamp,
    };
    let mut data = event.data();
    app.redactor.redact_json(&mut data);
    app.hub
        .publish_event(&envelope(event.kind(), &stamp, data).to_string());
}
