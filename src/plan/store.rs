//! The mutex-serialised plan store and the `plan` tool's entry point.

use std::sync::{Mutex, MutexGuard, PoisonError};

use super::args::{NewStep, StepUpdate, decode_args};
use super::events::PlanEvent;
use super::render::{NO_ACTIVE_PLAN, render};
use super::state::{BLOCKED_STREAK, PlanActivity, PlanLimits, PlanState, PlanStep, StepStatus};
use super::validate::{PlanError, apply_complete, apply_updates, validate_create};

/// Receives one event per effective mutation. It runs under the store's lock (so calls
/// arrive in version order) and must not call back into the store.
pub type ChangeCallback = Box<dyn Fn(&PlanEvent) + Send + Sync>;

/// The plan state shared by the `plan` tool and the engine. One mutex serialises every
/// mutation, because plan calls can arrive concurrently inside a parallel tool batch.
pub struct PlanStore {
    limits: PlanLimits,
    inner: Mutex<StoreInner>,
}

struct StoreInner {
    state: PlanState,
    on_change: Option<ChangeCallback>,
    activity: PlanActivity,
    /// Transitions to blocked since the last progress (see [`BLOCKED_STREAK`]).
    blocked_streak: u64,
    /// The streak fired and the engine has not taken its hint yet.
    streak_fired: bool,
}

/// What an update did to the steps' statuses: whether any step moved to `done` or
/// `in_progress` (progress, which ends a blocked streak), and how many moved to `blocked`.
/// Progress is counted first, so an update that starts one step and blocks another leaves a
/// streak of one. Updates never add, remove or reorder steps.
fn transitions(before: &[PlanStep], after: &[PlanStep]) -> (bool, u64) {
    let changed = before
        .iter()
        .zip(after)
        .filter(|(b, a)| b.status != a.status)
        .map(|(_, a)| a.status);
    let mut progressed = false;
    let mut blocked = 0;
    for status in changed {
        match status {
            StepStatus::Done | StepStatus::InProgress => progressed = true,
            StepStatus::Blocked => blocked += 1,
            StepStatus::Pending => {}
        }
    }
    (progressed, blocked)
}

impl Default for PlanStore {
    fn default() -> Self {
        PlanStore::new(PlanLimits::default())
    }
}

impl std::fmt::Debug for PlanStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PlanStore")
            .field("limits", &self.limits)
            .field("state", &self.snapshot())
            .finish()
    }
}

impl PlanStore {
    /// An empty store (version 0) with the given, already clamped, caps.
    pub fn new(limits: PlanLimits) -> Self {
        PlanStore {
            limits,
            inner: Mutex::new(StoreInner {
                state: PlanState::default(),
                on_change: None,
                activity: PlanActivity::default(),
                blocked_streak: 0,
                streak_fired: false,
            }),
        }
    }

    /// The caps this store enforces.
    pub fn limits(&self) -> PlanLimits {
        self.limits
    }

    /// Installs (or replaces) the change callback.
    pub fn set_on_change(&self, callback: ChangeCallback) {
        self.lock().on_change = Some(callback);
    }

    /// Runs the `plan` tool: decodes `args_json`, dispatches the verb and returns the
    /// current render (or `No active plan.`), or the typed error for the model.
    pub fn call(&self, args_json: &str) -> Result<String, PlanError> {
        let args = decode_args(args_json).map_err(|e| PlanError::ParseArgs(e.to_string()))?;
        let verb = args.verb.unwrap_or_default();
        match verb.as_str() {
            "create" => self.apply_create(&args.steps.unwrap_or_default()),
            "update" => self.apply_update(&args.updates.unwrap_or_default()),
            "complete" => self.apply_complete(args.step_id.as_deref().unwrap_or_default()),
            "get" => Ok(self.current_render()),
            _ => Err(PlanError::UnknownVerb(verb)),
        }
    }

    /// `create`: replaces the whole plan (all steps pending); always bumps the version.
    pub fn apply_create(&self, steps: &[Option<NewStep>]) -> Result<String, PlanError> {
        let validated = validate_create(steps, self.limits.max_steps)?;
        let mut inner = self.lock();
        inner.activity.plans_created += 1;
        inner.blocked_streak = 0;
        Ok(self.commit(&mut inner, validated, PlanEvent::created))
    }

    /// `update`: applies status/note changes atomically, in order; no bump when nothing
    /// changed.
    pub fn apply_update(&self, updates: &[Option<StepUpdate>]) -> Result<String, PlanError> {
        let mut inner = self.lock();
        let updated = apply_updates(&inner.state.steps, updates)?;
        Ok(self.commit_if_changed(&mut inner, updated))
    }

    /// `complete`: marks one step done; completing a done step changes nothing.
    pub fn apply_complete(&self, step_id: &str) -> Result<String, PlanError> {
        let mut inner = self.lock();
        let updated = apply_complete(&inner.state.steps, step_id)?;
        Ok(self.commit_if_changed(&mut inner, updated))
    }

    /// `get`: the current render, or `No active plan.`; never bumps.
    pub fn current_render(&self) -> String {
        self.render_state(&self.lock().state)
    }

    /// A copy of the current state.
    pub fn snapshot(&self) -> PlanState {
        self.lock().state.clone()
    }

    /// The current version (0 before the first `create`).
    pub fn version(&self) -> u64 {
        self.lock().state.version
    }

    /// What the model did with the plan since this store was made.
    pub fn activity(&self) -> PlanActivity {
        self.lock().activity
    }

    /// True once after each time the blocked-step streak fired (the engine then adds its
    /// decompose-or-reorder hint).
    pub fn take_blocked_streak(&self) -> bool {
        std::mem::take(&mut self.lock().streak_fired)
    }

    /// Replaces the state wholesale (restart resume); never fires the callback.
    pub fn restore(&self, state: PlanState) {
        self.lock().state = state;
    }

    /// Back to the empty state at version 0; never fires the callback.
    pub fn reset(&self) {
        self.lock().state = PlanState::default();
    }

    fn commit_if_changed(&self, inner: &mut StoreInner, steps: Vec<PlanStep>) -> String {
        if steps == inner.state.steps {
            return self.render_state(&inner.state);
        }
        inner.activity.plans_updated += 1;
        let (progressed, blocked) = transitions(&inner.state.steps, &steps);
        inner.activity.plans_blocked += blocked;
        if progressed {
            inner.blocked_streak = 0;
        }
        inner.blocked_streak += blocked;
        let render = self.commit(inner, steps, PlanEvent::updated);
        if inner.blocked_streak >= BLOCKED_STREAK {
            inner.blocked_streak = 0;
            inner.streak_fired = true;
            inner.activity.blocked_streaks += 1;
            if let Some(callback) = &inner.on_change {
                callback(&PlanEvent::blocked(&inner.state));
            }
        }
        render
    }

    /// Installs `steps`, bumps the version and fires the callback, all under the lock.
    fn commit(
        &self,
        inner: &mut StoreInner,
        steps: Vec<PlanStep>,
        event_for: fn(&PlanState) -> PlanEvent,
    ) -> String {
        inner.state.steps = steps;
        inner.state.version = inner.state.version.saturating_add(1);
        if let Some(callback) = &inner.on_change {
            callback(&event_for(&inner.state));
        }
        self.render_state(&inner.state)
    }

    fn render_state(&self, state: &PlanState) -> String {
        render(state, self.limits.max_render_chars).unwrap_or_else(|| NO_ACTIVE_PLAN.to_owned())
    }

    /// The state lock; a poisoned lock (a panicking callback) still yields the data, which
    /// is always consistent because it is only written after validation succeeds.
    fn lock(&self) -> MutexGuard<'_, StoreInner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
