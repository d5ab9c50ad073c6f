//! Saving what a run changed: the edits since the previous save and the plan state when its
//! version moved, through the caller's [`PersistFn`], called in place.

use std::sync::Arc;

use super::observer::EngineEvent;
use super::parts::{Engine, RunState};
use crate::transcript::TranscriptDelta;

/// Saves what changed: called at the start of a run when there is anything unsaved, after
/// every tool batch, and after the final answer, with the edits made since the previous call
/// (never the whole history). Called in place, on the run's own thread: a save is meant to
/// cost the batch (the session writer appends one journal line, tens of microseconds), less
/// than handing it to another thread and back; the rare save that rewrites a session file
/// blocks as the end of a turn does. An error is reported and the run goes on.
pub type PersistFn = Arc<dyn Fn(TranscriptDelta) -> Result<(), PersistError> + Send + Sync>;

/// Why a save failed (the session store's error; the engine only reports it).
pub type PersistError = Box<dyn std::error::Error + Send + Sync>;

impl Engine {
    /// Saves what changed since the previous save (the edits and, when its version moved,
    /// the plan state) and reports it, even when nothing changed, so every batch shows up in
    /// the event stream.
    pub(super) async fn persist(&self, persist: Option<&PersistFn>, state: &mut RunState) {
        self.save_changes(persist, state, true).await;
    }

    /// Like [`Self::persist`] at the start of a run: only when there is something unsaved
    /// (the new input, a plan restored from the transcript), and unreported when it works.
    pub(super) async fn persist_if_changed(
        &self,
        persist: Option<&PersistFn>,
        state: &mut RunState,
    ) {
        self.save_changes(persist, state, false).await;
    }

    async fn save_changes(
        &self,
        persist: Option<&PersistFn>,
        state: &mut RunState,
        report_success: bool,
    ) {
        let Some(persist) = persist else {
            return;
        };
        let delta = self.take_delta(state);
        if delta.is_empty() && !report_success {
            return;
        }
        let count = delta.len;
        match persist(delta) {
            Ok(()) if report_success => self.observer.on_event(&EngineEvent::SessionSaved {
                message_count: count,
            }),
            Ok(()) => {}
            Err(error) => self.observer.on_event(&EngineEvent::SessionSaveFailed {
                error: &error.to_string(),
            }),
        }
    }

    fn take_delta(&self, state: &mut RunState) -> TranscriptDelta {
        let plan = self
            .plan
            .as_ref()
            .map(|store| store.snapshot())
            .filter(|p| state.saved_plan_version != Some(p.version) && p.version > 0);
        if let Some(p) = &plan {
            state.saved_plan_version = Some(p.version);
        }
        TranscriptDelta {
            edits: state.ctx.take_edits(),
            len: state.ctx.len(),
            plan,
        }
    }
}
