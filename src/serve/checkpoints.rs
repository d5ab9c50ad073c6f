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
        let history = read_history(&store.checkpoints(&id, session.turns).history())?;
        Ok(Json(CheckpointList {
            session_id: id,
            interrupted_rewind_to: history.interrupted_rewind().and_then(|c| c.rewound_to),
            checkpoints: history.checkpoints.iter().map(item).collect(),
        }))
    })
    .await
}

fn read_history(history: &std::io::Result<History>) -> Result<History, ApiError> {
    history
        .as_ref()
        .map(Clone::clone)
        .map_err(|e| ApiError::internal_logged("the session's checkpoints could not be read", e))
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
            .map(|f| CheckpointFile {
                path: f.path.display().to_string(),
                change: f.kind().to_string(),
            })
            .collect(),
        not_covered: c.not_covered.clone(),
    }
}

/// `POST /api/sessions/{id}/rewind` `{"to": N | "turn": T, "force"?, "dry_run"?}`: the plan
/// (a dry run), or the rewind done. 409 while a turn runs, or when files changed outside
/// odek since and `force` is not set (nothing is written then); 400 for a checkpoint or turn
/// the session does not have.
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
    if !body.dry_run {
        refuse_while_running(&app, &id)?;
    }
    let store_app = app.clone();
    let session_id = id.clone();
    let (result, forced) = blocking(move || {
        let store = store_app.base.sessions();
        let session = store.load(&session_id)?;
        let checkpoints = store.checkpoints(&session_id, session.turns);
        let history = read_history(&checkpoints.history())?;
        let to = target(&history, &body)?;
        let plan = plan_rewind(&history, to).map_err(|e| match e {
            RewindError::Io(e) => ApiError::internal_logged("the files could not be read", &e),
            other => ApiError::bad_request(other.to_string()),
        })?;
        let mut result = planned(&plan);
        if body.dry_run || plan.restores.is_empty() {
            return Ok((result, false));
        }
        // Held as a writer: no turn of the session starts while its files go back.
        let _held = store.open(&session_id, &Holder::this_process("odek serve rewind"))?;
        match checkpoints.rewind(&plan, body.force) {
            Ok(done) => {
                result.done = true;
                result.checkpoint = Some(done.checkpoint);
                Ok((result, !plan.conflicts.is_empty()))
            }
            Err(e @ RewindError::Conflicts(_)) => Err(ApiError::conflict(e.to_string())),
            Err(e) => Err(ApiError::internal_logged("the rewind failed", &e)),
        }
    })
    .await?;
    if result.done {
        publish_rewound(&app, &id, &result, forced);
    }
    Ok(Json(result))
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

fn planned(plan: &RewindPlan) -> RewindResult {
    RewindResult {
        to: plan.to,
        done: false,
        checkpoint: None,
        files: plan
            .restores
            .iter()
            .map(|r| CheckpointFile {
                path: r.path.display().to_string(),
                change: r.action().to_string(),
            })
            .collect(),
        conflicts: plan
            .conflicts
            .iter()
            .map(|c| c.path.display().to_string())
            .collect(),
        not_covered: plan.not_covered.clone(),
    }
}

/// The `rewound` event on the live stream (and the ring), stamped with a run id of its own.
fn publish_rewound(app: &AppState, session_id: &str, result: &RewindResult, forced: bool) {
    let event = Event::Rewound(Rewound {
        to: result.to,
        checkpoint: result.checkpoint.unwrap_or_default(),
        files: result.files.clone(),
        forced,
        not_covered: result.not_covered.clone(),
    });
    let run_id = crate::random::hex_id::<8>();
    let timestamp = crate::session::now_rfc3339();
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
