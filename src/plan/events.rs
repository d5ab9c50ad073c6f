//! The events a plan mutation produces: counts and version only, never titles or notes
//! (the type has no room for text). `events` turns them into `plan_created`,
//! `plan_updated` and `plan_blocked` of the protocol.

use super::state::PlanState;

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

    /// The version the mutation produced.
    pub fn version(&self) -> u64 {
        match self {
            PlanEvent::Created { version, .. }
            | PlanEvent::Updated { version, .. }
            | PlanEvent::Blocked { version, .. } => *version,
        }
    }
}
