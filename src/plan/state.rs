//! The plan's data model: step statuses, steps, the whole state and its caps.

use serde::{Deserialize, Serialize};

/// Hard ceiling on `max_steps`, whatever the configuration says; also the cap read-only
/// surfaces (`extract_plan`) parse with.
pub const ABSOLUTE_MAX_STEPS: usize = 50;
/// Default `create` size cap.
pub const DEFAULT_MAX_STEPS: usize = 12;
/// Default cap on the rendered plan message, in bytes.
pub const DEFAULT_MAX_RENDER_CHARS: usize = 2000;
/// Smallest `max_render_chars` the configuration may set.
pub const MIN_RENDER_CHARS: usize = 200;
/// Largest `max_render_chars` the configuration may set.
pub const MAX_RENDER_CHARS: usize = 8000;
/// Longest step id, in bytes.
pub const MAX_ID_BYTES: usize = 32;
/// Longest step title after normalisation, in bytes.
pub const MAX_TITLE_BYTES: usize = 200;

/// Where one step stands. Any transition between statuses is allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepStatus {
    /// Not started yet (every step starts here).
    Pending,
    /// Being worked on.
    InProgress,
    /// Finished and verified.
    Done,
    /// Stuck; the note says why.
    Blocked,
}

impl StepStatus {
    /// All statuses, in display order.
    pub const ALL: [StepStatus; 4] = [
        StepStatus::Pending,
        StepStatus::InProgress,
        StepStatus::Done,
        StepStatus::Blocked,
    ];

    /// The token used in the tool schema and in rendered step lines.
    pub fn as_str(self) -> &'static str {
        match self {
            StepStatus::Pending => "pending",
            StepStatus::InProgress => "in_progress",
            StepStatus::Done => "done",
            StepStatus::Blocked => "blocked",
        }
    }

    /// Reads an exact status token (no trimming, no case folding).
    pub fn parse(token: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.as_str() == token)
    }
}

impl std::fmt::Display for StepStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One step of the plan.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// Short model-chosen token such as `s1`: at most 32 bytes, no whitespace or brackets.
    pub id: String,
    /// One-line title, at most 200 bytes after normalisation.
    pub title: String,
    /// Current status.
    pub status: StepStatus,
    /// Optional one-line note (empty when absent); no length cap.
    pub note: String,
}

/// The whole plan: an ordered list of steps and a version that bumps on every effective
/// mutation (0 = never created).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanState {
    /// Bumped by one on every effective mutation; 1 after the first `create`.
    pub version: u64,
    /// Steps in plan order (oldest first).
    pub steps: Vec<PlanStep>,
}

/// How many steps are in each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PlanCounts {
    /// Steps marked done.
    pub done: usize,
    /// Steps in progress.
    pub in_progress: usize,
    /// Blocked steps.
    pub blocked: usize,
    /// Steps not started.
    pub pending: usize,
}

impl PlanState {
    /// Per-status step counts over the whole plan.
    pub fn counts(&self) -> PlanCounts {
        let mut counts = PlanCounts::default();
        for step in &self.steps {
            match step.status {
                StepStatus::Done => counts.done += 1,
                StepStatus::InProgress => counts.in_progress += 1,
                StepStatus::Blocked => counts.blocked += 1,
                StepStatus::Pending => counts.pending += 1,
            }
        }
        counts
    }

    /// The first step in progress (the current step), and the next pending step: the first
    /// pending one after the current step, else the first pending one at all.
    pub fn position(&self) -> (Option<&PlanStep>, Option<&PlanStep>) {
        let current = self
            .steps
            .iter()
            .position(|s| s.status == StepStatus::InProgress);
        let pending = |s: &&PlanStep| s.status == StepStatus::Pending;
        let after = current.map_or(0, |i| i + 1);
        let next = self.steps[after..]
            .iter()
            .find(pending)
            .or_else(|| self.steps.iter().find(pending));
        (current.map(|i| &self.steps[i]), next)
    }

    /// True when the plan has steps and every one of them is done (the collapsed render).
    pub fn is_complete(&self) -> bool {
        !self.steps.is_empty() && self.steps.iter().all(|s| s.status == StepStatus::Done)
    }
}

/// What the model did with its plan since the store was made (one turn): the facts'
/// `plans_created`, `plans_updated` and `plans_blocked`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanActivity {
    /// `create` calls (each replaces the plan).
    pub plans_created: u64,
    /// Other version-bumping mutations (`update`, `complete`).
    pub plans_updated: u64,
    /// Transitions of a step to `blocked`.
    pub plans_blocked: u64,
    /// Times the blocked-step streak fired (see [`BLOCKED_STREAK`]).
    pub blocked_streaks: u64,
}

/// Transitions to `blocked` with no transition to `done` or `in_progress` and no `create`
/// in between that fire the blocked-step streak (a `plan_blocked` event and one
/// decompose-or-reorder hint), after which it starts over.
pub const BLOCKED_STREAK: u64 = 3;

/// The store's caps, taken from the resolved configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlanLimits {
    /// Most steps one `create` may carry.
    pub max_steps: usize,
    /// Longest rendered plan message, in bytes.
    pub max_render_chars: usize,
}

impl Default for PlanLimits {
    fn default() -> Self {
        PlanLimits {
            max_steps: DEFAULT_MAX_STEPS,
            max_render_chars: DEFAULT_MAX_RENDER_CHARS,
        }
    }
}

impl PlanLimits {
    /// Limits clamped into the configurable ranges (`max_steps` 1..=50,
    /// `max_render_chars` 200..=8000), for callers holding raw configuration values.
    pub fn clamped(max_steps: usize, max_render_chars: usize) -> Self {
        PlanLimits {
            max_steps: max_steps.clamp(1, ABSOLUTE_MAX_STEPS),
            max_render_chars: max_render_chars.clamp(MIN_RENDER_CHARS, MAX_RENDER_CHARS),
        }
    }
}

/// Where a request to the model carries the current plan message. The saved transcript
/// keeps the seed's layout (the plan right after the protected head) either way.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum PlanPlacement {
    /// Last message of every request: between two plan changes each request extends the
    /// previous one byte for byte, so providers' prompt caches keep hitting.
    #[default]
    Tail,
    /// Where the transcript keeps it, right after the head (the seed's request layout).
    Head,
}

impl PlanPlacement {
    /// The config value: `tail` or `head`.
    pub fn as_str(self) -> &'static str {
        match self {
            PlanPlacement::Tail => "tail",
            PlanPlacement::Head => "head",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_tokens_round_trip() {
        for status in StepStatus::ALL {
            assert_eq!(StepStatus::parse(status.as_str()), Some(status));
            let json = serde_json::to_string(&status).unwrap();
            assert_eq!(json, format!("\"{}\"", status.as_str()));
        }
        assert_eq!(StepStatus::parse("Done"), None);
        assert_eq!(StepStatus::parse(" done"), None);
        assert_eq!(StepStatus::parse("in-progress"), None);
    }

    #[test]
    fn counts_cover_every_status() {
        let step = |status| PlanStep {
            id: "x".into(),
            title: "t".into(),
            status,
            note: String::new(),
        };
        let state = PlanState {
            version: 1,
            steps: vec![
                step(StepStatus::Done),
                step(StepStatus::Done),
                step(StepStatus::InProgress),
                step(StepStatus::Blocked),
                step(StepStatus::Pending),
            ],
        };
        let c = state.counts();
        assert_eq!((c.done, c.in_progress, c.blocked, c.pending), (2, 1, 1, 1));
        assert!(!state.is_complete());
        assert!(!PlanState::default().is_complete());
    }

    #[test]
    fn limits_default_and_clamp() {
        assert_eq!(
            PlanLimits::default(),
            PlanLimits {
                max_steps: 12,
                max_render_chars: 2000
            }
        );
        assert_eq!(PlanLimits::clamped(0, 10), PlanLimits::clamped(1, 200));
        assert_eq!(
            PlanLimits::clamped(99, 99_999),
            PlanLimits {
                max_steps: 50,
                max_render_chars: 8000
            }
        );
    }
}
