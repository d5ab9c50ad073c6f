//! The events a plan mutation produces: counts and version only, never titles or notes.

use serde_json::{Value, json};

use super::state::PlanState;

/// Event type of a `create` (including a wholesale replace).
pub const PLAN_CREATED: &str = "plan_created";
/// Event type of every other version-bumping mutation.
pub const PLAN_UPDATED: &str = "plan_updated";
/// Event type of the blocked-step streak (after the `plan_updated` that completed it).
pub const PLAN_BLOCKED: &str = "plan_blocked";

/// One effective plan mutation, as reported to the change callback.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PlanEvent {
    /// A `create` replaced the plan.
    Created {
        /// Steps in the new plan.
        steps: usize,
        /// Version after the mutation.
        version: u64,
    },
    /// An `update` or `complete` changed the plan (a note-only change included).
    Updated {
        /// Steps in the plan.
        steps: usize,
        /// Steps done.
        done: usize,
        /// Steps in progress.
        in_progress: usize,
        /// Steps blocked.
        blocked: usize,
        /// Steps pending.
        pending: usize,
        /// Version after the mutation.
        version: u64,
    },
    /// The blocked-step streak fired: [`super::BLOCKED_STREAK`] transitions to blocked
    /// without progress in between.
    Blocked {
        /// Steps in the plan.
        steps: usize,
        /// Steps blocked now.
        blocked: usize,
        /// Version of the mutation that completed the streak.
        version: u64,
    },
}

impl PlanEvent {
    /// The `Created` event for `state`.
    pub fn created(state: &PlanState) -> Self {
        PlanEvent::Created {
            steps: state.steps.len(),
            version: state.version,
        }
    }

    /// The `Updated` event for `state`.
    pub fn updated(state: &PlanState) -> Self {
        let counts = state.counts();
        PlanEvent::Updated {
            steps: state.steps.len(),
            done: counts.done,
            in_progress: counts.in_progress,
            blocked: counts.blocked,
            pending: counts.pending,
            version: state.version,
        }
    }

    /// The `Blocked` event for `state`.
    pub fn blocked(state: &PlanState) -> Self {
        PlanEvent::Blocked {
            steps: state.steps.len(),
            blocked: state.counts().blocked,
            version: state.version,
        }
    }

    /// The `odek.event/v1` type: `plan_created`, `plan_updated` or `plan_blocked`.
    pub fn kind(&self) -> &'static str {
        match self {
            PlanEvent::Created { .. } => PLAN_CREATED,
            PlanEvent::Updated { .. } => PLAN_UPDATED,
            PlanEvent::Blocked { .. } => PLAN_BLOCKED,
        }
    }

    /// The version the mutation produced.
    pub fn version(&self) -> u64 {
        match self {
            PlanEvent::Created { version, .. }
            | PlanEvent::Updated { version, .. }
            | PlanEvent::Blocked { version, .. } => *version,
        }
    }

    /// The event's `data` object: exactly the documented numeric fields.
    pub fn payload(&self) -> Value {
        match *self {
            PlanEvent::Created { steps, version } => json!({ "steps": steps, "version": version }),
            PlanEvent::Updated {
                steps,
                done,
                in_progress,
                blocked,
                pending,
                version,
            } => json!({
                "steps": steps,
                "done": done,
                "in_progress": in_progress,
                "blocked": blocked,
                "pending": pending,
                "version": version,
            }),
            PlanEvent::Blocked {
                steps,
                blocked,
                version,
            } => json!({ "steps": steps, "blocked": blocked, "version": version }),
        }
    }
}
